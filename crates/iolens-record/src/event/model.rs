//! What an event stream holds: one traced call ([`IoEvent`]) with its operation, layer and
//! flags, the calls left out ([`Excluded`]), and the path table events name files through.

use std::collections::HashMap;
use std::io;

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
