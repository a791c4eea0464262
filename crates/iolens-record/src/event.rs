//! I/O events of traced programs, and their binary stream format.
//!
//! An [`IoEvent`] is one call an application made (POSIX, stdio, MPI-IO) or one request a
//! device served, whichever layer the trace comes from. Events name files through a path table
//! of the trace ([`PathTable`]), so a record stays fixed-size.
//!
//! # Stream layout (`IOLEVT01`, little-endian)
//!
//! A stream starts with the 8-byte magic `IOLEVT01`, then frames, each starting with a tag byte:
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
//!   already there.
//!
//! Markers are event frames with op `Other`, no data, and a flag: [`FLAG_PROCESS_START`] (the
//! first event of each stream: file = the executable, offset = the parent's pid),
//! [`FLAG_PROCESS_END`], [`FLAG_SECURE_EXEC`], [`FLAG_MPI_RANK`].
//!
//! An MPI process (one that called `MPI_Init`) also leaves `<pid>.<start ns>.mpi` beside its
//! stream `<pid>.<start ns>.evt`: its rank and the offsets of its clock from rank 0's, measured
//! at `MPI_Init` and `MPI_Finalize` (format in `iolens_import`'s `mpi_clock` module).
//!
//! One process (or one thread) writes one stream; a trace is a set of streams whose path ids
//! are local to each stream (readers map them through the stream's own table).

use std::collections::HashMap;
use std::io::{self, Read, Write};

pub const EVENT_MAGIC: &[u8; 8] = b"IOLEVT01";
pub const NO_FILE: u32 = u32::MAX;
pub const UNKNOWN_OFFSET: u64 = u64::MAX;
pub const EVENT_FRAME_LEN: usize = 65;

const TAG_EVENT: u8 = 1;
const TAG_PATH: u8 = 2;
const TAG_DROPPED: u8 = 3;
const TAG_EXCLUDED: u8 = 4;
const TAG_LOST: u8 = 5;
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

/// Why calls on a descriptor are not recorded as I/O (as Darshan leaves them out): what the
/// descriptor refers to.
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
}

impl Excluded {
    pub const ALL: [Excluded; 4] =
        [Excluded::PipeOrSocket, Excluded::CharDevice, Excluded::BlockDevice, Excluded::Other];

    pub fn from_u8(v: u8) -> Option<Excluded> {
        Excluded::ALL.get(v as usize).copied()
    }

    pub fn description(self) -> &'static str {
        match self {
            Excluded::PipeOrSocket => "pipes and sockets",
            Excluded::CharDevice => "character devices (terminals, /dev/zero, /dev/null)",
            Excluded::BlockDevice => "raw block devices",
            Excluded::Other => "other non-files",
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
/// All marker flags: such events are facts about processes, not I/O.
pub const MARKER_FLAGS: u16 =
    FLAG_IO_URING_SEEN | FLAG_PROCESS_START | FLAG_PROCESS_END | FLAG_SECURE_EXEC | FLAG_MPI_RANK;

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
}

impl IoOp {
    pub fn from_u8(v: u8) -> Option<IoOp> {
        use IoOp::*;
        [Open, Close, Read, Write, Fsync, Fdatasync, SyncRange, Seek, Copy, Flush, Mmap, Other]
            .get(v as usize)
            .copied()
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
    pub fn from_u8(v: u8) -> Option<Layer> {
        [Layer::Posix, Layer::Stdio, Layer::MpiIo, Layer::Block].get(v as usize).copied()
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

/// Reads an event stream: events in stream order, with the path table filled as it goes.
pub struct EventReader<R: Read> {
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
}

impl<R: Read> EventReader<R> {
    pub fn new(mut input: R) -> Result<EventReader<R>, EventError> {
        let mut magic = [0u8; 8];
        input.read_exact(&mut magic).map_err(|_| EventError::BadMagic)?;
        if &magic != EVENT_MAGIC {
            return Err(EventError::BadMagic);
        }
        Ok(EventReader {
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

impl<R: Read> Iterator for EventReader<R> {
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
        assert_eq!(r.excluded, [(2, 7), (4, 350), (0, 0), (0, 0)]);
        let last = bytes.len() - EXCLUDED_FRAME_LEN;
        bytes[last + 1] = 4;
        let err = EventReader::new(&bytes[..]).unwrap().find_map(Result::err);
        assert_eq!(
            err.unwrap().to_string(),
            format!("corrupt event stream at offset {last}: invalid exclusion reason 4")
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

    proptest::proptest! {
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
