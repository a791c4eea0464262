//! I/O events of traced programs, and their binary stream format.
//!
//! An [`IoEvent`] is one call an application made (POSIX, stdio, MPI-IO) or one request a
//! device served, whichever layer the trace comes from. Events name files through a path table
//! of the trace ([`PathTable`]), so a record stays fixed-size.
//!
//! # Stream layout (little-endian)
//!
//! A stream starts with an 8-byte magic, `IOLEVT02` (or `IOLEVT01`, the first version, which
//! has no block or compact frames and is still read), then frames, each starting with a tag byte:
//!
//! - `1` — an event, 64 bytes follow: pid u32, tid u32, file u32 (`NO_FILE` = none), op u8,
//!   layer u8, flags u16, offset u64 (`UNKNOWN_OFFSET` = unknown), requested u64, result i64
//!   (bytes, or −errno), start_ns u64, end_ns u64, 8 reserved bytes;
//! - `2` — a path: id u32, length u16, then that many UTF-8 bytes. A path frame precedes the
//!   first event that uses its id;
//! - `3` — a drop count: u64 events the writer could not record (reported, never silent);
//! - `4` — excluded calls: reason u8 ([`Excluded`]), calls u64, bytes u64: reads and writes on
//!   descriptors that are not files (pipes, terminals, `/dev/zero`), counted, not recorded;
//! - `5` — events lost: count u64, errno u32 of the last failed write (0 = none). The preload
//!   writes one right after the magic when it opens a stream and rewrites it in place when
//!   writes fail: on a full disk no frame can be appended, but the bytes of this one are
//!   already there;
//! - `6` — a block header (version 2): pid u32, tid u32, and the clock segment of the block,
//!   tick0 u64, ns0 u64, tick1 u64, ns1 u64. The compact events up to the next block header
//!   are calls of that thread, timed in ticks (the TSC, or nanoseconds when tick and ns
//!   distances are equal) that map to nanoseconds along the line through (tick0, ns0) and
//!   (tick1, ns1). A writer starts each block where its previous one ended, so one thread's
//!   blocks form one continuous increasing line and its calls stay in order;
//! - `0x80 | F << 6 | layer << 4 | op` — a compact event (version 2): 3 bytes of 4-bit lengths
//!   (bits 4k..4k+4 for field k, 0 to 8 bytes), then the six fields, little-endian, each in
//!   that many bytes: file XOR the block's previous file; zigzag(offset − the predicted offset:
//!   previous offset + bytes it moved, unknown stays unknown); requested XOR the previous
//!   requested; zigzag(result − requested); zigzag(start − previous end); zigzag(end − start);
//!   then, if bit F is set, flags u16. "Previous" values start as file 0, requested 0, offset
//!   unknown, end tick0 at each block header;
//! - `0x40 | layer << 4 | op` — a short compact event (version 2): the call that continues the
//!   previous one of the block (same file and request size, at the predicted offset, moved all
//!   it asked for, no flags), started less than 2^16 ticks after it ended and lasting less
//!   than 2^16 ticks: start − previous end u16, end − start u16. A sequential 512 B read takes
//!   5 bytes instead of 65: the bytes written per call are most of what tracing costs.
//!
//! Markers are event frames with op `Other`, no data, and a flag: [`FLAG_PROCESS_START`] (the
//! first event of each stream: file = the executable, offset = the parent's pid),
//! [`FLAG_PROCESS_END`], [`FLAG_SECURE_EXEC`], [`FLAG_MPI_RANK`], [`FLAG_AIO_UNCOLLECTED`],
//! [`FLAG_STATIC_EXEC`], [`FLAG_NATIVE_AIO`], [`FLAG_GO_PROGRAM`].
//!
//! An MPI process (one that called `MPI_Init`) also leaves `<pid>.<start ns>.mpi` beside its
//! stream `<pid>.<start ns>.evt`: its rank and the offsets of its clock from rank 0's, measured
//! at `MPI_Init` and `MPI_Finalize` (format in `iolens_import`'s `mpi_clock` module).
//!
//! One process (or one thread) writes one stream; a trace is a set of streams whose path ids
//! are local to each stream (readers map them through the stream's own table).

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

/// The magic of the stream version writers produce.
pub const EVENT_MAGIC: &[u8; 8] = b"IOLEVT02";
/// The magic of version 1 streams (no blocks, no compact events), still read.
pub const EVENT_MAGIC_V1: &[u8; 8] = b"IOLEVT01";
/// What every version's magic starts with: a stream of an unknown version is told apart from
/// a file that is no event stream at all.
pub const EVENT_MAGIC_PREFIX: &[u8; 6] = b"IOLEVT";
pub const NO_FILE: u32 = u32::MAX;
pub const UNKNOWN_OFFSET: u64 = u64::MAX;
pub const EVENT_FRAME_LEN: usize = 65;

const TAG_EVENT: u8 = 1;
const TAG_PATH: u8 = 2;
const TAG_DROPPED: u8 = 3;
const TAG_EXCLUDED: u8 = 4;
const TAG_LOST: u8 = 5;
const TAG_BLOCK: u8 = 6;
/// Tags with this bit set are compact events; the other bits carry flags, layer and op.
const TAG_COMPACT: u8 = 0x80;
/// Tags from this one to 0x7f are short compact events; the other bits carry layer and op.
const TAG_SHORT: u8 = 0x40;
/// Length of a short compact event, its tag included.
pub const SHORT_EVENT_LEN: usize = 5;
/// Length of a block header, its tag included.
pub const BLOCK_HEADER_LEN: usize = 41;
/// The most bytes a compact event takes (tag, 3 bytes of lengths, 6 fields, flags). The
/// encoder writes each field as 8 bytes and keeps the ones that count, so it needs this much
/// room whatever the event.
pub const COMPACT_EVENT_MAX_LEN: usize = 4 + 8 * COMPACT_FIELDS + 2;
/// Fields of a compact event, flags aside.
const COMPACT_FIELDS: usize = 6;
/// Tag bit of a compact event: flags follow its fields.
const COMPACT_FLAGGED: u8 = 0x40;
/// Length of an excluded-calls frame, its tag included.
pub const EXCLUDED_FRAME_LEN: usize = 18;
/// Length of a lost-events frame, its tag included.
pub const LOST_FRAME_LEN: usize = 13;

/// Encodes a lost-events frame: `count` events, lost by a write that failed with `errno`.
pub fn encode_lost(count: u64, errno: u32) -> [u8; LOST_FRAME_LEN] {
    let mut out = [0u8; LOST_FRAME_LEN];
    out[0] = TAG_LOST;
    out[1..9].copy_from_slice(&count.to_le_bytes());
    out[9..13].copy_from_slice(&errno.to_le_bytes());
    out
}

/// Why calls are not recorded as I/O: what the descriptor refers to (as Darshan leaves such
/// calls out), or that the calls were never made as calls (character macros the compiler
/// inlined, seen only when they refill or flush their stream's buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Excluded {
    /// Pipes, sockets and FIFOs: communication, not storage.
    PipeOrSocket = 0,
    /// Character devices: terminals, `/dev/zero`, `/dev/null`, `/dev/urandom`.
    CharDevice = 1,
    /// Block devices, read or written raw.
    BlockDevice = 2,
    /// Anything else that is not a regular file (directories, eventfds, …).
    Other = 3,
    /// Refills of a file stream's buffer by `__uflow`, which glibc's inlined `getc_unlocked`
    /// (and `fread_unlocked` of a constant small size) call when the buffer runs dry: calls =
    /// refills, bytes = what they brought into the buffer.
    InlinedStdioRead = 4,
    /// Flushes of a file stream's buffer by `__overflow`, which inlined `putc_unlocked` calls
    /// when the buffer is full: calls = flushes, bytes = what the buffer held (with the bytes
    /// of counted calls that shared it).
    InlinedStdioWrite = 5,
    /// Calls a signal handler made while the tracer was recording the call it interrupted
    /// (whose buffer may be half-written then): calls, and the bytes of their reads and writes.
    InterruptedRecording = 6,
}

impl Excluded {
    pub const ALL: [Excluded; 7] = [
        Excluded::PipeOrSocket,
        Excluded::CharDevice,
        Excluded::BlockDevice,
        Excluded::Other,
        Excluded::InlinedStdioRead,
        Excluded::InlinedStdioWrite,
        Excluded::InterruptedRecording,
    ];

    pub fn from_u8(v: u8) -> Option<Excluded> {
        Excluded::ALL.get(v as usize).copied()
    }

    /// Whether calls are left out for what their descriptor is (not a file).
    pub fn is_not_a_file(self) -> bool {
        !matches!(
            self,
            Excluded::InlinedStdioRead | Excluded::InlinedStdioWrite | Excluded::InterruptedRecording
        )
    }

    pub fn description(self) -> &'static str {
        match self {
            Excluded::PipeOrSocket => "pipes and sockets",
            Excluded::CharDevice => "character devices (terminals, /dev/zero, /dev/null)",
            Excluded::BlockDevice => "raw block devices",
            Excluded::Other => "other non-files",
            Excluded::InlinedStdioRead => "buffer refills (reads)",
            Excluded::InlinedStdioWrite => "buffer flushes (writes)",
            Excluded::InterruptedRecording => "calls of signal handlers that interrupted the recorder",
        }
    }
}

/// Calls and bytes left out, per [`Excluded`] reason.
pub type ExcludedCounts = [(u64, u64); Excluded::ALL.len()];

/// Encodes an excluded-calls frame.
pub fn encode_excluded(reason: Excluded, calls: u64, bytes: u64) -> [u8; EXCLUDED_FRAME_LEN] {
    let mut out = [0u8; EXCLUDED_FRAME_LEN];
    out[0] = TAG_EXCLUDED;
    out[1] = reason as u8;
    out[2..10].copy_from_slice(&calls.to_le_bytes());
    out[10..18].copy_from_slice(&bytes.to_le_bytes());
    out
}

/// Event flag: a marker (op `Other`, no file) that the process had an io_uring instance, whose
/// requests bypass libc and so every hook.
pub const FLAG_IO_URING_SEEN: u16 = 1;
/// Event flag: the read half of an in-kernel copy (copy_file_range, sendfile, splice), recorded
/// beside the write half over the same interval. Its bytes and call count; its time is the
/// write half's, so it adds no busy time and no second call in flight.
pub const FLAG_COPY_SOURCE: u16 = 2;
/// Event flag: a half of a clone (`ioctl` FICLONE or FICLONERANGE, which `cp` tries before
/// copying): the file system shared the source's extents with the destination. Recorded as a
/// copy is, a read of the source and a write of the destination of the bytes cloned, because
/// that is what the program asked for and now reads back; no data moved.
pub const FLAG_CLONE: u16 = 1024;
/// Marker flag: a process image started (first event of its stream). `file` is its executable,
/// `offset` its parent's pid, `start_ns` when the preload loaded.
pub const FLAG_PROCESS_START: u16 = 4;
/// Marker flag: a process image ended (exit, `_exit` or exec) at `end_ns`.
pub const FLAG_PROCESS_END: u16 = 8;
/// Marker flag: the process exec'd `file` in secure-execution mode (setuid or setgid for this
/// user, or file capabilities): the loader ignores `LD_PRELOAD` there, so nothing of it is
/// traced.
pub const FLAG_SECURE_EXEC: u16 = 16;
/// Marker flag: the process is an MPI rank, from its `MPI_Init` on: `offset` is its rank in
/// `MPI_COMM_WORLD`, `requested` the size of that communicator.
pub const FLAG_MPI_RANK: u16 = 32;
/// Marker flag: POSIX aio requests the process submitted and never collected with
/// `aio_return` before its image ended: `requested` is their number, `offset` the bytes they
/// asked for. Nothing tells what they moved, so they are not recorded as calls.
pub const FLAG_AIO_UNCOLLECTED: u16 = 64;
/// Marker flag: the process exec'd or spawned `file`, a statically linked program: the loader
/// is not involved, so `LD_PRELOAD` is not applied and nothing of that image is traced (the
/// dynamically linked programs it starts are, as the environment passes on).
pub const FLAG_STATIC_EXEC: u16 = 128;
/// Marker flag: read and write requests the process submitted through Linux native AIO
/// (libaio's `io_submit`) and no hook saw reaped (libaio's `io_getevents` records those it
/// reaps): `requested` is their number, `offset` the bytes they asked for.
pub const FLAG_NATIVE_AIO: u16 = 256;
/// Flag of a process-start marker: the process runs a Go program (see
/// [`elf_is_go`](crate::program::elf_is_go)), whose system calls bypass libc and every hook,
/// and which exits without the end marker.
pub const FLAG_GO_PROGRAM: u16 = 512;
/// All marker flags: such events are facts about processes, not I/O.
pub const MARKER_FLAGS: u16 = FLAG_IO_URING_SEEN
    | FLAG_PROCESS_START
    | FLAG_PROCESS_END
    | FLAG_SECURE_EXEC
    | FLAG_MPI_RANK
    | FLAG_AIO_UNCOLLECTED
    | FLAG_STATIC_EXEC
    | FLAG_NATIVE_AIO
    | FLAG_GO_PROGRAM;

/// What a call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum IoOp {
    Open = 0,
    Close = 1,
    Read = 2,
    Write = 3,
    Fsync = 4,
    Fdatasync = 5,
    SyncRange = 6,
    Seek = 7,
    /// copy_file_range / sendfile: bytes moved between two files inside the kernel.
    Copy = 8,
    Flush = 9,
    /// A mapping of a traced file: later accesses through memory are invisible.
    Mmap = 10,
    Other = 11,
    /// syncfs: every dirty page of the file system the descriptor's file is on written out. The
    /// tracer records sync, which does so for every file system, as a syncfs of "/".
    SyncFs = 12,
}

impl IoOp {
    pub fn from_u8(v: u8) -> Option<IoOp> {
        use IoOp::*;
        [Open, Close, Read, Write, Fsync, Fdatasync, SyncRange, Seek, Copy, Flush, Mmap, Other, SyncFs]
            .get(v as usize)
            .copied()
    }

    /// Calls that make written data durable, the program waiting for the device.
    pub fn is_sync(self) -> bool {
        matches!(self, IoOp::Fsync | IoOp::Fdatasync | IoOp::SyncRange | IoOp::SyncFs)
    }

    /// Reads and writes move data; everything else is metadata or synchronization.
    pub fn is_data(self) -> bool {
        matches!(self, IoOp::Read | IoOp::Write | IoOp::Copy)
    }

    pub fn name(self) -> &'static str {
        match self {
            IoOp::Open => "open",
            IoOp::Close => "close",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Fsync => "fsync",
            IoOp::Fdatasync => "fdatasync",
            IoOp::SyncRange => "sync_file_range",
            IoOp::Seek => "seek",
            IoOp::Copy => "copy",
            IoOp::Flush => "flush",
            IoOp::Mmap => "mmap",
            IoOp::Other => "other",
            IoOp::SyncFs => "syncfs",
        }
    }
}

/// Which layer observed the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Layer {
    /// POSIX system-call wrappers (read, pwrite, …).
    Posix = 0,
    /// C stdio (fread, fwrite, …).
    Stdio = 1,
    /// MPI-IO.
    MpiIo = 2,
    /// The block layer (blktrace): device requests.
    Block = 3,
}

impl Layer {
    /// Every layer, in the order of their numbers.
    pub const ALL: [Layer; 4] = [Layer::Posix, Layer::Stdio, Layer::MpiIo, Layer::Block];

    pub fn from_u8(v: u8) -> Option<Layer> {
        Layer::ALL.get(v as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Layer::Posix => "posix",
            Layer::Stdio => "stdio",
            Layer::MpiIo => "mpiio",
            Layer::Block => "block",
        }
    }
}

/// One traced call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoEvent {
    /// Process id (the rank, for MPI traces).
    pub pid: u32,
    pub tid: u32,
    /// Index into the trace's path table, or [`NO_FILE`].
    pub file: u32,
    pub op: IoOp,
    pub layer: Layer,
    pub flags: u16,
    /// File offset, or [`UNKNOWN_OFFSET`].
    pub offset: u64,
    /// Bytes the application asked for.
    pub requested: u64,
    /// Bytes moved, or a negative errno.
    pub result: i64,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl IoEvent {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    pub fn failed(&self) -> bool {
        self.result < 0
    }

    #[inline]
    fn encode(&self, out: &mut [u8; EVENT_FRAME_LEN]) {
        out[0] = TAG_EVENT;
        out[1..5].copy_from_slice(&self.pid.to_le_bytes());
        out[5..9].copy_from_slice(&self.tid.to_le_bytes());
        out[9..13].copy_from_slice(&self.file.to_le_bytes());
        out[13] = self.op as u8;
        out[14] = self.layer as u8;
        out[15..17].copy_from_slice(&self.flags.to_le_bytes());
        out[17..25].copy_from_slice(&self.offset.to_le_bytes());
        out[25..33].copy_from_slice(&self.requested.to_le_bytes());
        out[33..41].copy_from_slice(&self.result.to_le_bytes());
        out[41..49].copy_from_slice(&self.start_ns.to_le_bytes());
        out[49..57].copy_from_slice(&self.end_ns.to_le_bytes());
        out[57..65].fill(0);
    }

    /// Decodes the body of the event frame that starts at byte `offset` (for error messages).
    fn decode(b: &[u8; EVENT_FRAME_LEN - 1], offset: u64) -> Result<IoEvent, EventError> {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(v)
        };
        let corrupt = |what: &str, value: u8| EventError::Corrupt {
            offset,
            message: format!("invalid {what} {value}"),
        };
        Ok(IoEvent {
            pid: u32_at(0),
            tid: u32_at(4),
            file: u32_at(8),
            op: IoOp::from_u8(b[12]).ok_or_else(|| corrupt("operation", b[12]))?,
            layer: Layer::from_u8(b[13]).ok_or_else(|| corrupt("layer", b[13]))?,
            flags: u16::from_le_bytes([b[14], b[15]]),
            offset: u64_at(16),
            requested: u64_at(24),
            result: u64_at(32) as i64,
            start_ns: u64_at(40),
            end_ns: u64_at(48),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not an iolens event stream (bad magic)")]
    BadMagic,
    #[error(
        "event stream version {0} is not one this iolens reads (versions 01 and 02): the stream \
         was written by another iolens release; analyze it with that release"
    )]
    UnsupportedVersion(String),
    #[error("corrupt event stream at offset {offset}: {message}")]
    Corrupt { offset: u64, message: String },
    #[error("event stream ends inside the frame at offset {offset}: the writer was cut off")]
    Truncated { offset: u64 },
}

/// Paths by id, as a trace defines them. Ids come from the file, so they are keys, not
/// indexes: a stray id near `u32::MAX` must not size a table.
#[derive(Debug, Clone, Default)]
pub struct PathTable {
    paths: HashMap<u32, String>,
    next: u32,
}

impl PathTable {
    pub fn insert(&mut self, id: u32, path: String) {
        self.next = self.next.max(id.saturating_add(1));
        self.paths.insert(id, path);
    }

    /// Adds a path with the next free id.
    pub fn push(&mut self, path: String) -> u32 {
        let id = self.next;
        self.insert(id, path);
        id
    }

    pub fn get(&self, id: u32) -> Option<&str> {
        self.paths.get(&id).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.paths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// Writes an event stream.
pub struct EventWriter<W: Write> {
    out: W,
}

impl<W: Write> EventWriter<W> {
    pub fn new(mut out: W) -> io::Result<EventWriter<W>> {
        out.write_all(EVENT_MAGIC)?;
        Ok(EventWriter { out })
    }

    pub fn path(&mut self, id: u32, path: &str) -> io::Result<()> {
        let bytes = &path.as_bytes()[..path.len().min(u16::MAX as usize)];
        self.out.write_all(&[TAG_PATH])?;
        self.out.write_all(&id.to_le_bytes())?;
        self.out.write_all(&(bytes.len() as u16).to_le_bytes())?;
        self.out.write_all(bytes)
    }

    pub fn event(&mut self, e: &IoEvent) -> io::Result<()> {
        let mut buf = [0u8; EVENT_FRAME_LEN];
        e.encode(&mut buf);
        self.out.write_all(&buf)
    }

    pub fn dropped(&mut self, count: u64) -> io::Result<()> {
        self.out.write_all(&[TAG_DROPPED])?;
        self.out.write_all(&count.to_le_bytes())
    }

    pub fn excluded(&mut self, reason: Excluded, calls: u64, bytes: u64) -> io::Result<()> {
        self.out.write_all(&encode_excluded(reason, calls, bytes))
    }

    /// Starts a block of compact events (see the stream layout).
    pub fn block(&mut self, pid: u32, tid: u32, from: (u64, u64), to: (u64, u64)) -> io::Result<Predictor> {
        self.out.write_all(&encode_block_header(pid, tid, from, to))?;
        Ok(Predictor::new(from.0))
    }

    /// Writes `e`, timed in ticks of the block `predictor` was returned for, as a compact event.
    pub fn compact_event(&mut self, e: &IoEvent, predictor: &mut Predictor) -> io::Result<()> {
        let mut buf = [0u8; COMPACT_EVENT_MAX_LEN];
        let len = encode_compact(e, predictor, &mut buf);
        self.out.write_all(&buf[..len])
    }

    pub fn lost(&mut self, count: u64, errno: u32) -> io::Result<()> {
        self.out.write_all(&encode_lost(count, errno))
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Encodes one event frame into `out` (for writers that manage their own buffers).
#[inline]
pub fn encode_event(e: &IoEvent, out: &mut [u8; EVENT_FRAME_LEN]) {
    e.encode(out);
}

/// A block's clock segment: ticks to nanoseconds along the line through two calibration points,
/// `(tick, ns)`, taken when the block's writer started and ended it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickLine {
    tick0: u64,
    ns0: u64,
    /// `None`: ticks are nanoseconds already (tick and ns distances equal), mapped exactly.
    ns_per_tick: Option<f64>,
}

impl TickLine {
    /// The segment from `(tick0, ns0)` to `(tick1, ns1)`.
    pub fn between((tick0, ns0): (u64, u64), (tick1, ns1): (u64, u64)) -> TickLine {
        let ticks = tick1.wrapping_sub(tick0);
        let ns = ns1.wrapping_sub(ns0);
        let ns_per_tick = (ticks != ns).then(|| ns1.saturating_sub(ns0) as f64 / ticks.max(1) as f64);
        TickLine { tick0, ns0, ns_per_tick }
    }

    /// Nanoseconds at `tick` (on the line's extension outside the segment).
    #[inline]
    pub fn ns(&self, tick: u64) -> u64 {
        let since = tick.wrapping_sub(self.tick0);
        match self.ns_per_tick {
            None => self.ns0.wrapping_add(since),
            Some(slope) => self.ns0.wrapping_add(((since as i64) as f64 * slope) as i64 as u64),
        }
    }
}

/// Encodes a block header: the compact events that follow are thread `tid` of process `pid`,
/// timed in ticks mapped by the segment from `from` to `to` (`(tick, ns)` points).
pub fn encode_block_header(pid: u32, tid: u32, from: (u64, u64), to: (u64, u64)) -> [u8; BLOCK_HEADER_LEN] {
    let mut out = [0u8; BLOCK_HEADER_LEN];
    out[0] = TAG_BLOCK;
    out[1..5].copy_from_slice(&pid.to_le_bytes());
    out[5..9].copy_from_slice(&tid.to_le_bytes());
    out[9..17].copy_from_slice(&from.0.to_le_bytes());
    out[17..25].copy_from_slice(&from.1.to_le_bytes());
    out[25..33].copy_from_slice(&to.0.to_le_bytes());
    out[33..41].copy_from_slice(&to.1.to_le_bytes());
    out
}

/// What compact events are coded against: values of the block's previous event. Writer and
/// reader keep one each, in step, starting anew at each block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predictor {
    file: u32,
    requested: u64,
    next_offset: u64,
    last_end: u64,
}

impl Predictor {
    /// The state at the start of a block whose segment starts at `tick0`.
    pub const fn new(tick0: u64) -> Predictor {
        Predictor { file: 0, requested: 0, next_offset: UNKNOWN_OFFSET, last_end: tick0 }
    }

    #[inline(always)]
    fn advance(&mut self, file: u32, offset: u64, requested: u64, result: i64, end: u64) {
        self.file = file;
        self.requested = requested;
        self.next_offset =
            if offset == UNKNOWN_OFFSET { UNKNOWN_OFFSET } else { offset.wrapping_add(result.max(0) as u64) };
        self.last_end = end;
    }
}

#[inline(always)]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline(always)]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Encodes `e` as a compact event into `out`; its length. `e`'s timestamps are ticks of the
/// block `predictor` belongs to; its pid and tid are the block's and are not written.
///
/// No branch depends on the values: each field is stored as 8 bytes, and the next one starts
/// where the value's significant bytes end.
#[inline(always)]
pub fn encode_compact(
    e: &IoEvent,
    predictor: &mut Predictor,
    out: &mut [u8; COMPACT_EVENT_MAX_LEN],
) -> usize {
    let values: [u64; COMPACT_FIELDS] = [
        (e.file ^ predictor.file) as u64,
        zigzag(e.offset.wrapping_sub(predictor.next_offset) as i64),
        e.requested ^ predictor.requested,
        zigzag(e.result.wrapping_sub(e.requested as i64)),
        zigzag(e.start_ns.wrapping_sub(predictor.last_end) as i64),
        zigzag(e.end_ns.wrapping_sub(e.start_ns) as i64),
    ];
    let gap = e.start_ns.wrapping_sub(predictor.last_end);
    let duration = e.end_ns.wrapping_sub(e.start_ns);
    let continues = (e.file ^ predictor.file) as u64
        | (e.offset ^ predictor.next_offset)
        | (e.requested ^ predictor.requested)
        | (e.result as u64 ^ e.requested)
        | e.flags as u64
        | (gap | duration) >> 16;
    predictor.advance(e.file, e.offset, e.requested, e.result, e.end_ns);
    if continues == 0 {
        let head =
            [TAG_SHORT | (e.layer as u8) << 4 | e.op as u8, gap as u8, (gap >> 8) as u8, duration as u8];
        out[..4].copy_from_slice(&head);
        out[4] = (duration >> 8) as u8;
        return SHORT_EVENT_LEN;
    }
    let flagged = e.flags != 0;
    out[0] = TAG_COMPACT | (flagged as u8) << 6 | (e.layer as u8) << 4 | e.op as u8;
    let mut lens = 0u32;
    let mut at = 4;
    for (k, v) in values.into_iter().enumerate() {
        let len = (u64::BITS - v.leading_zeros()).div_ceil(8);
        // SAFETY: field k starts at most at 4 + 8k, so its 8 bytes end by 4 + 8 * 6, inside
        // `out`.
        unsafe { out.as_mut_ptr().add(at).cast::<[u8; 8]>().write_unaligned(v.to_le_bytes()) };
        at += len as usize;
        lens |= len << (4 * k);
    }
    // SAFETY: at most 4 + 8 * 6 here: the flags' 2 bytes end by COMPACT_EVENT_MAX_LEN.
    unsafe { out.as_mut_ptr().add(at).cast::<[u8; 2]>().write_unaligned(e.flags.to_le_bytes()) };
    at += 2 * flagged as usize;
    out[1..4].copy_from_slice(&lens.to_le_bytes()[..3]);
    at
}

/// Reads an event stream: events in stream order, with the path table filled as it goes.
pub struct EventReader<R: BufRead> {
    input: R,
    pub paths: PathTable,
    /// Events the writer reported it could not record.
    pub dropped: u64,
    /// Calls the writer left out, and their bytes, by reason.
    pub excluded: ExcludedCounts,
    /// Why the writer lost events: the errno of its last failed write, if one failed.
    pub lost_errno: Option<u32>,
    /// Byte offset of the next frame, for error messages.
    offset: u64,
    /// Set after an error: a reader does not resynchronize inside a corrupt stream.
    failed: bool,
    /// The stream's format version (1 or 2).
    version: u8,
    /// The block the compact events read now belong to (version 2).
    block: Option<Block>,
}

/// A block of compact events: whose they are, their clock, and the decoder's predictor.
#[derive(Debug, Clone, Copy)]
struct Block {
    pid: u32,
    tid: u32,
    line: TickLine,
    predictor: Predictor,
}

impl<R: BufRead> EventReader<R> {
    pub fn new(mut input: R) -> Result<EventReader<R>, EventError> {
        let mut magic = [0u8; 8];
        input.read_exact(&mut magic).map_err(|_| EventError::BadMagic)?;
        let version = match &magic {
            m if m == EVENT_MAGIC => 2,
            m if m == EVENT_MAGIC_V1 => 1,
            m if m.starts_with(EVENT_MAGIC_PREFIX) => {
                return Err(EventError::UnsupportedVersion(String::from_utf8_lossy(&m[6..]).into_owned()))
            }
            _ => return Err(EventError::BadMagic),
        };
        Ok(EventReader {
            version,
            block: None,
            input,
            paths: PathTable::default(),
            dropped: 0,
            excluded: Default::default(),
            lost_errno: None,
            offset: 8,
            failed: false,
        })
    }

    /// Byte offset of the next frame.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Fills `buf` with the rest of the frame that starts at `frame`.
    fn fill(&mut self, buf: &mut [u8], frame: u64) -> Result<(), EventError> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => EventError::Truncated { offset: frame },
            _ => EventError::Io(e),
        })?;
        self.offset = self.offset.saturating_add(buf.len() as u64);
        Ok(())
    }

    /// The next event, `None` at the end of the stream (or after an error).
    pub fn next_event(&mut self) -> Result<Option<IoEvent>, EventError> {
        if self.failed {
            return Ok(None);
        }
        let r = self.read_event();
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn read_event(&mut self) -> Result<Option<IoEvent>, EventError> {
        loop {
            if let Some(event) = self.buffered_event() {
                return event.map(Some);
            }
            let frame = self.offset;
            let mut tag = [0u8; 1];
            match self.input.read(&mut tag) {
                Ok(0) => return Ok(None),
                Ok(_) => self.offset = self.offset.saturating_add(1),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
            match tag[0] {
                TAG_EVENT => {
                    let mut b = [0u8; EVENT_FRAME_LEN - 1];
                    self.fill(&mut b, frame)?;
                    return IoEvent::decode(&b, frame).map(Some);
                }
                TAG_PATH => {
                    let mut head = [0u8; 6];
                    self.fill(&mut head, frame)?;
                    let id = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
                    // A u16 length: at most 64 KiB, whatever the file says.
                    let len = u16::from_le_bytes([head[4], head[5]]) as usize;
                    let mut name = vec![0u8; len];
                    self.fill(&mut name, frame)?;
                    self.paths.insert(id, String::from_utf8_lossy(&name).into_owned());
                }
                TAG_DROPPED => {
                    let mut b = [0u8; 8];
                    self.fill(&mut b, frame)?;
                    self.dropped = self.dropped.saturating_add(u64::from_le_bytes(b));
                }
                TAG_LOST => {
                    let mut b = [0u8; LOST_FRAME_LEN - 1];
                    self.fill(&mut b, frame)?;
                    self.dropped =
                        self.dropped.saturating_add(u64::from_le_bytes(b[..8].try_into().unwrap()));
                    let errno = u32::from_le_bytes(b[8..].try_into().unwrap());
                    if errno != 0 {
                        self.lost_errno = Some(errno);
                    }
                }
                TAG_BLOCK if self.version >= 2 => {
                    let mut b = [0u8; BLOCK_HEADER_LEN - 1];
                    self.fill(&mut b, frame)?;
                    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
                    let (from, to) = ((u64_at(8), u64_at(16)), (u64_at(24), u64_at(32)));
                    self.block = Some(Block {
                        pid: u32::from_le_bytes(b[0..4].try_into().unwrap()),
                        tid: u32::from_le_bytes(b[4..8].try_into().unwrap()),
                        line: TickLine::between(from, to),
                        predictor: Predictor::new(from.0),
                    });
                }
                tag if tag & TAG_COMPACT != 0 && self.version >= 2 => {
                    return self.read_compact(tag, frame).map(Some);
                }
                tag if tag & TAG_SHORT != 0 && self.version >= 2 => {
                    return self.read_short(tag, frame).map(Some);
                }
                TAG_EXCLUDED => {
                    let mut b = [0u8; EXCLUDED_FRAME_LEN - 1];
                    self.fill(&mut b, frame)?;
                    let reason = Excluded::from_u8(b[0]).ok_or_else(|| EventError::Corrupt {
                        offset: frame,
                        message: format!("invalid exclusion reason {}", b[0]),
                    })?;
                    let counts = &mut self.excluded[reason as usize];
                    counts.0 = counts.0.saturating_add(u64::from_le_bytes(b[1..9].try_into().unwrap()));
                    counts.1 = counts.1.saturating_add(u64::from_le_bytes(b[9..17].try_into().unwrap()));
                }
                other => {
                    return Err(EventError::Corrupt {
                        offset: frame,
                        message: format!("invalid frame tag {other}"),
                    })
                }
            }
        }
    }
}

impl<R: BufRead> EventReader<R> {
    /// The compact or short event that starts the buffered input, decoded in place, when the
    /// whole frame (and the slack its decoding reads) is in the buffer: most frames are, and
    /// this spares the copies of reading them piece by piece.
    #[inline]
    fn buffered_event(&mut self) -> Option<Result<IoEvent, EventError>> {
        let buf = self.input.fill_buf().ok()?;
        let (&tag, _) = buf.split_first()?;
        if self.version < 2 || buf.len() < COMPACT_EVENT_MAX_LEN + DECODE_SLACK {
            return None;
        }
        let frame = self.offset;
        let decoded = if tag & TAG_COMPACT != 0 {
            decode_compact(self.block.as_mut(), &buf[..COMPACT_EVENT_MAX_LEN + DECODE_SLACK], frame)
        } else if tag & TAG_SHORT != 0 {
            decode_short(self.block.as_mut(), tag, buf[1..SHORT_EVENT_LEN].try_into().unwrap(), frame)
                .map(|e| (e, SHORT_EVENT_LEN))
        } else {
            return None;
        };
        Some(decoded.map(|(e, len)| {
            self.input.consume(len);
            self.offset = self.offset.saturating_add(len as u64);
            e
        }))
    }

    /// Reads the rest of the short compact event whose tag byte `tag` was at `frame`.
    fn read_short(&mut self, tag: u8, frame: u64) -> Result<IoEvent, EventError> {
        op_of(tag, frame)?;
        let mut b = [0u8; SHORT_EVENT_LEN - 1];
        self.fill(&mut b, frame)?;
        decode_short(self.block.as_mut(), tag, &b, frame)
    }

    /// Reads the rest of the compact event whose tag byte `tag` was at `frame`.
    fn read_compact(&mut self, tag: u8, frame: u64) -> Result<IoEvent, EventError> {
        op_of(tag, frame)?;
        // The frame again, as `decode_compact` takes it: tag, lengths, fields, slack.
        let mut bytes = [0u8; COMPACT_EVENT_MAX_LEN + DECODE_SLACK];
        bytes[0] = tag;
        self.fill(&mut bytes[1..4], frame)?;
        let lens = compact_lens(&bytes, frame)?;
        let flags_len = if tag & COMPACT_FLAGGED != 0 { 2 } else { 0 };
        let body_len = lens.iter().sum::<usize>() + flags_len;
        self.fill(&mut bytes[4..4 + body_len], frame)?;
        decode_compact(self.block.as_mut(), &bytes, frame).map(|(e, _)| e)
    }
}

/// Bytes past a compact frame's end that decoding it may read: each field is read as 8 bytes
/// and masked to its length.
const DECODE_SLACK: usize = 8;

/// The operation and layer a compact or short event's tag names.
fn op_of(tag: u8, frame: u64) -> Result<(IoOp, Layer), EventError> {
    let op = IoOp::from_u8(tag & 0x0f).ok_or_else(|| EventError::Corrupt {
        offset: frame,
        message: format!("invalid operation {}", tag & 0x0f),
    })?;
    Ok((op, Layer::from_u8(tag >> 4 & 0x03).expect("two bits name a layer")))
}

/// The field lengths of the compact frame `bytes` (tag first).
fn compact_lens(bytes: &[u8], frame: u64) -> Result<[usize; COMPACT_FIELDS], EventError> {
    let lens_word = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], 0]);
    let lens: [usize; COMPACT_FIELDS] = std::array::from_fn(|k| (lens_word >> (4 * k) & 0xf) as usize);
    match lens.iter().find(|&&n| n > 8) {
        Some(bad) => {
            Err(EventError::Corrupt { offset: frame, message: format!("invalid field length {bad}") })
        }
        None => Ok(lens),
    }
}

fn no_block(frame: u64) -> EventError {
    EventError::Corrupt { offset: frame, message: "compact event before any block header".into() }
}

/// Decodes the short event of `block` whose tag is `tag` and whose other bytes are `b`.
#[inline(always)]
fn decode_short(block: Option<&mut Block>, tag: u8, b: &[u8; 4], frame: u64) -> Result<IoEvent, EventError> {
    let (op, layer) = op_of(tag, frame)?;
    let block = block.ok_or_else(|| no_block(frame))?;
    let p = &mut block.predictor;
    let (file, offset, requested) = (p.file, p.next_offset, p.requested);
    let start = p.last_end.wrapping_add(u16::from_le_bytes([b[0], b[1]]) as u64);
    let end = start.wrapping_add(u16::from_le_bytes([b[2], b[3]]) as u64);
    p.advance(file, offset, requested, requested as i64, end);
    Ok(IoEvent {
        pid: block.pid,
        tid: block.tid,
        file,
        op,
        layer,
        flags: 0,
        offset,
        requested,
        result: requested as i64,
        start_ns: block.line.ns(start),
        end_ns: block.line.ns(end),
    })
}

/// Decodes the compact event of `block` that `bytes` starts with (its tag first, then
/// [`DECODE_SLACK`] bytes or more past its end); the event and the frame's length.
#[inline(always)]
fn decode_compact(
    block: Option<&mut Block>,
    bytes: &[u8],
    frame: u64,
) -> Result<(IoEvent, usize), EventError> {
    let tag = bytes[0];
    let (op, layer) = op_of(tag, frame)?;
    let lens = compact_lens(bytes, frame)?;
    let mut at = 4;
    let values: [u64; COMPACT_FIELDS] = std::array::from_fn(|k| {
        let word = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let v = if lens[k] == 8 { word } else { word & ((1u64 << (8 * lens[k])) - 1) };
        at += lens[k];
        v
    });
    let flags = if tag & COMPACT_FLAGGED != 0 {
        at += 2;
        u16::from_le_bytes([bytes[at - 2], bytes[at - 1]])
    } else {
        0
    };
    let block = block.ok_or_else(|| no_block(frame))?;
    let p = &mut block.predictor;
    let file = values[0] as u32 ^ p.file;
    if values[0] > u32::MAX as u64 {
        return Err(EventError::Corrupt {
            offset: frame,
            message: format!("invalid file id delta {}", values[0]),
        });
    }
    let offset = p.next_offset.wrapping_add(unzigzag(values[1]) as u64);
    let requested = values[2] ^ p.requested;
    let result = (requested as i64).wrapping_add(unzigzag(values[3]));
    let start = p.last_end.wrapping_add(unzigzag(values[4]) as u64);
    let end = start.wrapping_add(unzigzag(values[5]) as u64);
    p.advance(file, offset, requested, result, end);
    let event = IoEvent {
        pid: block.pid,
        tid: block.tid,
        file,
        op,
        layer,
        flags,
        offset,
        requested,
        result,
        start_ns: block.line.ns(start),
        end_ns: block.line.ns(end),
    };
    Ok((event, at))
}

impl<R: BufRead> Iterator for EventReader<R> {
    type Item = Result<IoEvent, EventError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(i: u64) -> IoEvent {
        IoEvent {
            pid: 100,
            tid: 101 + (i % 2) as u32,
            file: (i % 3) as u32,
            op: if i % 2 == 0 { IoOp::Read } else { IoOp::Write },
            layer: Layer::Posix,
            flags: 0,
            offset: i * 512,
            requested: 512,
            result: if i == 5 { -28 } else { 512 },
            start_ns: i * 1000,
            end_ns: i * 1000 + 300,
        }
    }

    #[test]
    fn round_trip_with_paths_and_drops() {
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.path(0, "/a").unwrap();
        w.path(1, "/b/ü").unwrap();
        w.path(2, "").unwrap();
        for i in 0..10 {
            w.event(&ev(i)).unwrap();
        }
        w.dropped(3).unwrap();
        let bytes = w.into_inner();
        let mut r = EventReader::new(&bytes[..]).unwrap();
        let events: Vec<IoEvent> = r.by_ref().map(|e| e.unwrap()).collect();
        assert_eq!(events, (0..10).map(ev).collect::<Vec<_>>());
        assert_eq!(r.paths.get(1), Some("/b/ü"));
        assert_eq!(r.dropped, 3);
        assert!(events[5].failed());
    }

    #[test]
    fn lost_frames_add_to_the_drops_and_keep_the_reason() {
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.lost(0, 0).unwrap();
        w.event(&ev(1)).unwrap();
        w.lost(40, 28).unwrap();
        w.dropped(2).unwrap();
        let bytes = w.into_inner();
        let mut r = EventReader::new(&bytes[..]).unwrap();
        assert_eq!(r.by_ref().count(), 1);
        assert_eq!(r.dropped, 42);
        assert_eq!(r.lost_errno, Some(28));
        let cut = &bytes[..bytes.len() - 9 - 3];
        let err = EventReader::new(cut).unwrap().find_map(Result::err).unwrap();
        assert!(matches!(err, EventError::Truncated { .. }), "{err}");
    }

    #[test]
    fn excluded_counts_add_up_per_reason() {
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.excluded(Excluded::CharDevice, 3, 300).unwrap();
        w.event(&ev(1)).unwrap();
        w.excluded(Excluded::CharDevice, 1, 50).unwrap();
        w.excluded(Excluded::PipeOrSocket, 2, 7).unwrap();
        let mut bytes = w.into_inner();
        let mut r = EventReader::new(&bytes[..]).unwrap();
        assert_eq!(r.by_ref().count(), 1);
        assert_eq!(r.excluded, [(2, 7), (4, 350), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0)]);
        let last = bytes.len() - EXCLUDED_FRAME_LEN;
        bytes[last + 1] = Excluded::ALL.len() as u8;
        let err = EventReader::new(&bytes[..]).unwrap().find_map(Result::err);
        assert_eq!(
            err.unwrap().to_string(),
            format!(
                "corrupt event stream at offset {last}: invalid exclusion reason {}",
                Excluded::ALL.len()
            )
        );
    }

    #[test]
    fn truncation_and_garbage_are_errors() {
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.event(&ev(1)).unwrap();
        let bytes = w.into_inner();
        let mut r = EventReader::new(&bytes[..bytes.len() - 3]).unwrap();
        let err = r.next_event().unwrap_err();
        assert!(matches!(err, EventError::Truncated { offset: 8 }), "{err}");
        assert_eq!(err.to_string(), "event stream ends inside the frame at offset 8: the writer was cut off");
        assert!(matches!(EventReader::new(&b"IOLTRACE"[..]), Err(EventError::BadMagic)));
        let mut bad = EVENT_MAGIC.to_vec();
        bad.push(9);
        let err = EventReader::new(&bad[..]).unwrap().next_event().unwrap_err();
        assert_eq!(err.to_string(), "corrupt event stream at offset 8: invalid frame tag 9");
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.path(0, "/a").unwrap();
        w.event(&ev(1)).unwrap();
        let mut bytes = w.into_inner();
        bytes[8 + 9 + 13] = 77;
        let mut r = EventReader::new(&bytes[..]).unwrap();
        let err = r.next_event().unwrap_err();
        assert_eq!(err.to_string(), "corrupt event stream at offset 17: invalid operation 77");
        assert!(r.next_event().unwrap().is_none(), "no resynchronization after corruption");
    }

    #[test]
    fn huge_path_ids_cost_no_memory() {
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.path(u32::MAX - 1, "/far").unwrap();
        w.event(&IoEvent { file: u32::MAX - 1, ..ev(1) }).unwrap();
        let bytes = w.into_inner();
        let mut r = EventReader::new(&bytes[..]).unwrap();
        let e = r.next_event().unwrap().unwrap();
        assert_eq!(r.paths.get(e.file), Some("/far"));
    }

    /// Events of every shape the preload writes: unknown offsets, failures, short reads, flags,
    /// the two halves of a copy (the second starting before the first ended), huge values.
    fn varied_events() -> Vec<IoEvent> {
        let base = IoEvent { pid: 7, tid: 8, start_ns: 1_000_000, end_ns: 1_000_500, ..ev(0) };
        vec![
            base,
            IoEvent { offset: 512, start_ns: 1_000_600, end_ns: 1_001_000, ..base },
            IoEvent { offset: 1024, result: 100, start_ns: 1_001_100, end_ns: 1_001_200, ..base },
            IoEvent { op: IoOp::Open, offset: UNKNOWN_OFFSET, requested: 0, result: 3, file: 9, ..base },
            IoEvent {
                layer: Layer::Stdio,
                offset: UNKNOWN_OFFSET,
                result: -28,
                start_ns: 1_002_000,
                end_ns: 1_002_001,
                ..base
            },
            IoEvent {
                flags: FLAG_COPY_SOURCE,
                offset: u64::MAX - 1,
                requested: u64::MAX,
                result: i64::MIN,
                start_ns: 1_003_000,
                end_ns: 1_009_000,
                ..base
            },
            IoEvent { op: IoOp::Write, start_ns: 1_003_000, end_ns: 1_009_000, file: NO_FILE, ..base },
            IoEvent {
                op: IoOp::Other,
                layer: Layer::MpiIo,
                flags: FLAG_PROCESS_END,
                start_ns: 900_000,
                end_ns: 899_000,
                ..base
            },
        ]
    }

    #[test]
    fn compact_events_round_trip_with_their_blocks_thread() {
        let events = varied_events();
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.path(0, "/a").unwrap();
        // Ticks are nanoseconds here (equal distances): the mapping is exact.
        let mut p = w.block(7, 8, (500_000, 500_000), (2_000_000, 2_000_000)).unwrap();
        for e in &events[..4] {
            w.compact_event(e, &mut p).unwrap();
        }
        w.event(&ev(3)).unwrap();
        let mut p = w.block(7, 8, (2_000_000, 2_000_000), (3_000_000, 3_000_000)).unwrap();
        for e in &events[4..] {
            w.compact_event(e, &mut p).unwrap();
        }
        let bytes = w.into_inner();
        let read: Vec<IoEvent> = EventReader::new(&bytes[..]).unwrap().map(|e| e.unwrap()).collect();
        let mut expected = events[..4].to_vec();
        expected.push(ev(3));
        expected.extend_from_slice(&events[4..]);
        assert_eq!(read, expected);
        // Read through buffers of every size: frames decoded in the buffer and frames read
        // piece by piece (those the buffer does not hold whole) give the same events.
        for capacity in 1..=bytes.len() {
            let input = std::io::BufReader::with_capacity(capacity, &bytes[..]);
            let read: Vec<IoEvent> = EventReader::new(input).unwrap().map(|e| e.unwrap()).collect();
            assert_eq!(read, expected, "buffer of {capacity} bytes");
        }
    }

    #[test]
    fn a_sequential_call_takes_few_bytes() {
        let mut p = Predictor::new(0);
        let mut out = [0u8; COMPACT_EVENT_MAX_LEN];
        let call = |i: u64| IoEvent {
            offset: i * 512,
            requested: 512,
            result: 512,
            start_ns: i * 900 + 100,
            end_ns: i * 900 + 700,
            ..ev(0)
        };
        encode_compact(&call(0), &mut p, &mut out);
        let len = encode_compact(&call(1), &mut p, &mut out);
        // The tag, then the start and duration in two bytes each.
        assert_eq!(len, SHORT_EVENT_LEN);
    }

    #[test]
    fn ticks_map_to_nanoseconds_along_the_blocks_segment() {
        let line = TickLine::between((1_000, 5_000), (3_001_000, 1_005_000));
        assert_eq!(line.ns(1_000), 5_000);
        assert_eq!(line.ns(1_501_000), 505_000);
        assert_eq!(line.ns(3_001_000), 1_005_000);
        let mut w = EventWriter::new(Vec::new()).unwrap();
        let mut p = w.block(1, 2, (1_000, 5_000), (3_001_000, 1_005_000)).unwrap();
        w.compact_event(&IoEvent { start_ns: 301_000, end_ns: 331_000, ..ev(0) }, &mut p).unwrap();
        let e = EventReader::new(&w.into_inner()[..]).unwrap().next_event().unwrap().unwrap();
        assert_eq!((e.pid, e.tid, e.start_ns, e.end_ns), (1, 2, 105_000, 115_000));
    }

    #[test]
    fn consecutive_segments_keep_a_thread_in_order() {
        // Calibration points with the noise of a VM's clock: the second reads 300 ns late.
        let points = [(0u64, 0u64), (3_000_000, 1_000_300), (6_000_000, 2_000_000)];
        let first = TickLine::between(points[0], points[1]);
        let second = TickLine::between(points[1], points[2]);
        // A call ending just before the flush point, in one block, and one starting just after
        // it, in the next.
        let (end, next_start) = (points[1].0 - 30, points[1].0 + 30);
        assert!(first.ns(end) <= second.ns(next_start), "{} > {}", first.ns(end), second.ns(next_start));
        assert_eq!(first.ns(points[1].0), second.ns(points[1].0), "the segments meet");
    }

    #[test]
    fn version_1_streams_are_read_and_unknown_versions_refused() {
        let mut v1 = EVENT_MAGIC_V1.to_vec();
        let mut frame = [0u8; EVENT_FRAME_LEN];
        encode_event(&ev(2), &mut frame);
        v1.extend_from_slice(&frame);
        let read: Vec<IoEvent> = EventReader::new(&v1[..]).unwrap().map(|e| e.unwrap()).collect();
        assert_eq!(read, vec![ev(2)]);
        // Version 1 has no blocks.
        v1.extend_from_slice(&encode_block_header(1, 2, (0, 0), (1, 1)));
        let err = EventReader::new(&v1[..]).unwrap().find_map(Result::err).unwrap();
        assert_eq!(
            err.to_string(),
            format!("corrupt event stream at offset {}: invalid frame tag 6", 8 + EVENT_FRAME_LEN)
        );
        let err = EventReader::new(&b"IOLEVT09"[..]).err().unwrap();
        assert!(matches!(err, EventError::UnsupportedVersion(ref v) if v == "09"), "{err}");
        assert!(err.to_string().contains("version 09"), "{err}");
    }

    #[test]
    fn bad_compact_frames_are_errors() {
        let mut p = Predictor::new(0);
        let mut out = [0u8; COMPACT_EVENT_MAX_LEN];
        let len = encode_compact(&ev(1), &mut p, &mut out);
        let mut orphan = EVENT_MAGIC.to_vec();
        orphan.extend_from_slice(&out[..len]);
        let err = EventReader::new(&orphan[..]).unwrap().next_event().unwrap_err();
        assert_eq!(
            err.to_string(),
            "corrupt event stream at offset 8: compact event before any block header"
        );
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.block(1, 2, (0, 0), (1, 1)).unwrap();
        let mut bytes = w.into_inner();
        let at = bytes.len();
        bytes.extend_from_slice(&out[..len]);
        let mut cut = bytes.clone();
        cut.truncate(bytes.len() - 1);
        let err = EventReader::new(&cut[..]).unwrap().next_event().unwrap_err();
        assert!(matches!(err, EventError::Truncated { offset } if offset == at as u64), "{err}");
        bytes[at] = TAG_COMPACT | 13;
        let err = EventReader::new(&bytes[..]).unwrap().next_event().unwrap_err();
        assert_eq!(err.to_string(), format!("corrupt event stream at offset {at}: invalid operation 13"));
        bytes[at] = TAG_COMPACT;
        bytes[at + 3] = 0x90;
        let err = EventReader::new(&bytes[..]).unwrap().next_event().unwrap_err();
        assert_eq!(err.to_string(), format!("corrupt event stream at offset {at}: invalid field length 9"));
    }

    proptest::proptest! {
        #[test]
        fn compact_events_round_trip(
            fields in proptest::collection::vec(
                (proptest::num::u32::ANY, proptest::num::u64::ANY, proptest::num::u64::ANY, proptest::num::i64::ANY,
                 proptest::num::u64::ANY, proptest::num::u64::ANY, proptest::num::u16::ANY, 0u8..13, 0u8..4),
                1..20,
            )
        ) {
            let events: Vec<IoEvent> = fields
                .iter()
                .map(|&(file, offset, requested, result, start, end, flags, op, layer)| IoEvent {
                    pid: 3,
                    tid: 4,
                    file,
                    op: IoOp::from_u8(op).unwrap(),
                    layer: Layer::from_u8(layer).unwrap(),
                    flags,
                    offset,
                    requested,
                    result,
                    start_ns: start,
                    end_ns: end,
                })
                .collect();
            let mut w = EventWriter::new(Vec::new()).unwrap();
            let mut p = w.block(3, 4, (10, 10), (20, 20)).unwrap();
            for e in &events {
                w.compact_event(e, &mut p).unwrap();
            }
            let bytes = w.into_inner();
            let read: Vec<IoEvent> = EventReader::new(&bytes[..]).unwrap().map(|e| e.unwrap()).collect();
            proptest::prop_assert_eq!(read, events);
        }
        #[test]
        fn calls_continuing_their_predecessor_round_trip(
            steps in proptest::collection::vec(
                (0u64..70_000, 0u64..70_000, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY, 0u8..3),
                1..40,
            )
        ) {
            // Mostly short events, with now and then a change that needs the general form.
            let mut events = Vec::new();
            let (mut at, mut end, mut requested) = (0u64, 1_000u64, 512u64);
            for (gap, duration, seek, resize, short_read, op) in steps {
                if seek { at = at.wrapping_mul(3).wrapping_add(4096); }
                if resize { requested += 512; }
                let result = if short_read { requested as i64 - 1 } else { requested as i64 };
                let start = end + gap;
                end = start + duration;
                let op = [IoOp::Read, IoOp::Write, IoOp::Other][op as usize];
                events.push(IoEvent { pid: 3, tid: 4, file: 1, op, layer: Layer::Posix, flags: 0, offset: at, requested, result, start_ns: start, end_ns: end });
                at += result.max(0) as u64;
            }
            let mut w = EventWriter::new(Vec::new()).unwrap();
            let mut p = w.block(3, 4, (10, 10), (20, 20)).unwrap();
            for e in &events {
                w.compact_event(e, &mut p).unwrap();
            }
            let bytes = w.into_inner();
            let read: Vec<IoEvent> = EventReader::new(&bytes[..]).unwrap().map(|e| e.unwrap()).collect();
            proptest::prop_assert_eq!(read, events);
        }

        #[test]
        fn arbitrary_frames_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let mut bytes = EVENT_MAGIC.to_vec();
            bytes.extend_from_slice(&body);
            let mut r = EventReader::new(&bytes[..]).unwrap();
            while let Ok(Some(_)) = r.next_event() {}
            proptest::prop_assert!(r.offset() <= bytes.len() as u64);
        }
    }
}
