//! The stream file: where it goes (the trace directory), its name (the process's identity),
//! its head (magic, lost-events frame, process-start marker), and opening and writing it.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering::*};

use iolens_record::event::{
    encode_event, encode_lost, IoEvent, IoOp, Layer, EVENT_FRAME_LEN, EVENT_MAGIC, FLAG_GO_PROGRAM,
    FLAG_PROCESS_START, LOST_FRAME_LEN,
};
use iolens_record::program::{elf_is_go, ELF_PROBE_BYTES};
use libc::{c_char, c_int};

use crate::base::raw_syscall::{errno, proc_fd_path, program_head, push_decimal, stat_of, sys};
use crate::stream::{next_path_id, tid, DROPPED};

/// The process the stream is of, and when it started: the stream's name.
static PID: AtomicU32 = AtomicU32::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);

/// The stream's descriptor: -1 not open yet, -2 being opened, else the fd.
pub(crate) static STREAM_FD: AtomicI32 = AtomicI32::new(-1);
static STREAM_INO: AtomicU64 = AtomicU64::new(0);

/// The trace directory, NUL-terminated, copied from the environment at load time.
struct DirBuf(UnsafeCell<[u8; 3072]>);
// SAFETY: written once by `set_trace_dir` at start-up, before any hook records, read-only
// afterwards.
unsafe impl Sync for DirBuf {}
static TRACE_DIR: DirBuf = DirBuf(UnsafeCell::new([0; 3072]));

/// Takes the trace directory `dir` (NUL-terminated, from the environment) at start-up, and the
/// process's identity; false when there is none to trace into (unset, empty or too long).
///
/// # Safety
/// `dir` is null or NUL-terminated; called once, before any thread records.
pub(crate) unsafe fn set_up(dir: *const c_char) -> bool {
    if dir.is_null() {
        return false;
    }
    // SAFETY: `dir` is NUL-terminated (the caller's promise), and no thread reads TRACE_DIR yet.
    unsafe {
        let len = libc::strlen(dir);
        let buf = &mut *TRACE_DIR.0.get();
        if len == 0 || len >= buf.len() - 1 {
            return false;
        }
        std::ptr::copy_nonoverlapping(dir.cast::<u8>(), buf.as_mut_ptr(), len);
        buf[len] = 0;
    }
    PID.store(std::process::id(), Relaxed);
    START_NS.store(iolens_record::clock::now_ns(), Relaxed);
    true
}

/// The id of the process whose stream this is.
pub(crate) fn pid() -> u32 {
    PID.load(Relaxed)
}

pub(crate) unsafe fn raw_write_all(fd: c_int, buf: &[u8]) -> bool {
    // SAFETY: writing from a live slice asks nothing more.
    unsafe { write_whole(fd, buf).is_ok() }
}

/// Appends all of `buf` or, as far as it can, nothing: a write cut short (a full disk) is cut
/// off the file again, so the stream stays whole frames, readable past that point. The errno
/// of the failure.
pub(super) unsafe fn write_whole(fd: c_int, buf: &[u8]) -> Result<(), c_int> {
    // SAFETY: each write reads at most what is left of `buf`; lseek and ftruncate take no pointer.
    unsafe {
        let mut done = 0;
        while done < buf.len() {
            let n = sys()(libc::SYS_write, fd, buf[done..].as_ptr(), buf.len() - done);
            if n < 0 {
                let why = errno();
                if why == libc::EINTR {
                    continue;
                }
                if done > 0 {
                    let end = sys()(libc::SYS_lseek, fd, 0, libc::SEEK_CUR);
                    if end >= done as i64 {
                        sys()(libc::SYS_ftruncate, fd, end - done as i64);
                    }
                }
                return Err(why);
            }
            done += n as usize;
        }
        Ok(())
    }
}

/// Why events were last lost (errno of the failed write; 0 for a full buffer pool).
pub(crate) static LOST_ERRNO: AtomicU32 = AtomicU32::new(0);
/// Where the stream's lost-events frame sits: right after the magic.
const LOST_FRAME_AT: i64 = EVENT_MAGIC.len() as i64;

/// Rewrites the stream's lost-events frame in place with the total lost so far. Its bytes
/// exist since the stream was opened, so this works on a full disk, where appending a frame
/// would not. The append descriptor cannot write at an offset: the file is opened again
/// through /proc for it.
pub(super) unsafe fn write_lost_frame(fd: c_int) {
    // SAFETY: `link` is NUL-terminated; the frame is written from a live array; the descriptor
    // opened here is closed here.
    unsafe {
        let mut link = [0u8; 40];
        proc_fd_path(fd, &mut link);
        let header = sys()(libc::SYS_openat, libc::AT_FDCWD, link.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if header < 0 {
            return;
        }
        let frame = encode_lost(DROPPED.load(Relaxed), LOST_ERRNO.load(Relaxed));
        sys()(libc::SYS_pwrite64, header, frame.as_ptr(), frame.len(), LOST_FRAME_AT);
        sys()(libc::SYS_close, header);
    }
}

/// Writes the path frame of the executable and the process-start marker into `out` (at least
/// 7 + 4096 + EVENT_FRAME_LEN bytes); their length. Written straight into the stream's head,
/// never through a buffer: it must come first, and its timestamp is in nanoseconds already.
unsafe fn start_marker(out: &mut [u8]) -> usize {
    // SAFETY: readlinkat writes at most `exe.len() - 1` bytes into `exe`; getppid takes no
    // argument.
    unsafe {
        let mut exe = [0u8; 4096];
        let n = sys()(
            libc::SYS_readlinkat,
            libc::AT_FDCWD,
            c"/proc/self/exe".as_ptr(),
            exe.as_mut_ptr(),
            exe.len() - 1,
        );
        let n = n.max(0) as usize;
        let id = next_path_id();
        out[0] = 2;
        out[1..5].copy_from_slice(&id.to_le_bytes());
        out[5..7].copy_from_slice(&(n as u16).to_le_bytes());
        out[7..7 + n].copy_from_slice(&exe[..n]);
        let t = START_NS.load(Relaxed);
        let go = if runs_go() { FLAG_GO_PROGRAM } else { 0 };
        let marker = IoEvent {
            pid: PID.load(Relaxed),
            tid: tid(),
            file: id,
            op: IoOp::Other,
            layer: Layer::Posix,
            flags: FLAG_PROCESS_START | go,
            offset: libc::getppid() as u64,
            requested: 0,
            result: 0,
            start_ns: t,
            end_ns: t,
        };
        let frame: &mut [u8; EVENT_FRAME_LEN] =
            (&mut out[7 + n..7 + n + EVENT_FRAME_LEN]).try_into().unwrap();
        encode_event(&marker, frame);
        7 + n + EVENT_FRAME_LEN
    }
}

/// Whether this process runs a Go program, whose I/O no hook sees: judged by the head of
/// `/proc/self/exe`.
unsafe fn runs_go() -> bool {
    // SAFETY: a NUL-terminated path.
    unsafe {
        let mut head = [0u8; ELF_PROBE_BYTES];
        let len = program_head(c"/proc/self/exe".as_ptr(), &mut head);
        elf_is_go(&head[..len]) == Some(true)
    }
}

/// Writes `<dir>[/uid-<uid>]` into `out`; its length.
pub(crate) unsafe fn trace_dir_path(out: &mut [u8; 3200], uid: Option<u32>) -> usize {
    // SAFETY: TRACE_DIR is written only at start-up, before any thread reads it.
    unsafe {
        let dir = &*TRACE_DIR.0.get();
        let dir_len = dir.iter().position(|b| *b == 0).unwrap_or(0);
        out[..dir_len].copy_from_slice(&dir[..dir_len]);
        let mut at = dir_len;
        if let Some(uid) = uid {
            out[at..at + 5].copy_from_slice(b"/uid-");
            at += 5;
            push_decimal(out, &mut at, uid as u64);
        }
        at
    }
}

/// Opens this process's stream file: `<dir>/<pid>.<start ns>.evt`, high in the fd table.
/// A process that gave up root for another user cannot create files in the directory of the
/// user running iolens: its streams go to `<dir>/uid-<uid>/`, made for it when it changed user
/// (see `process::before_user_change`).
unsafe fn open_stream() -> c_int {
    // SAFETY: `path` is NUL-terminated (`.evt\0`) within its array; the other calls take
    // descriptors and integers.
    unsafe {
        let mut fd = -1;
        for uid in [None, Some(libc::geteuid())] {
            let mut path = [0u8; 3200];
            let mut at = trace_dir_path(&mut path, uid);
            path[at] = b'/';
            at += 1;
            push_decimal(&mut path, &mut at, PID.load(Relaxed) as u64);
            path[at] = b'.';
            at += 1;
            push_decimal(&mut path, &mut at, START_NS.load(Relaxed));
            path[at..at + 5].copy_from_slice(b".evt\0");
            fd = sys()(
                libc::SYS_openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
                0o644,
            ) as c_int;
            if fd >= 0 || !matches!(errno(), libc::EACCES | libc::EPERM) {
                break;
            }
        }
        if fd < 0 {
            return -1;
        }
        // Readable by iolens whatever the program's umask (`umask 777` would make it mode 000).
        sys()(libc::SYS_fchmod, fd, 0o600);
        let high = sys()(libc::SYS_fcntl, fd, libc::F_DUPFD_CLOEXEC, 900) as c_int;
        let fd = if high >= 0 {
            sys()(libc::SYS_close, fd);
            high
        } else {
            fd
        };
        let (ino, size) = stat_of(fd).map_or((0, 0), |st| (st.st_ino, st.st_size));
        STREAM_INO.store(ino, Relaxed);
        // The head: magic, lost-events frame, and the process-start marker naming the executable.
        let mut head = [0u8; EVENT_MAGIC.len() + LOST_FRAME_LEN + 7 + 4096 + EVENT_FRAME_LEN];
        head[..EVENT_MAGIC.len()].copy_from_slice(EVENT_MAGIC);
        let mut len = EVENT_MAGIC.len();
        head[len..len + LOST_FRAME_LEN].copy_from_slice(&encode_lost(0, 0));
        len += LOST_FRAME_LEN;
        len += start_marker(&mut head[len..]);
        if size == 0 && !raw_write_all(fd, &head[..len]) {
            sys()(libc::SYS_close, fd);
            return -1;
        }
        fd
    }
}

/// The stream descriptor, opening (or reopening, if the program closed or replaced it) it.
pub(crate) unsafe fn stream_fd() -> c_int {
    // SAFETY: opening the stream asks nothing of the caller; only the thread that swapped -1 for -2
    // opens it.
    unsafe {
        loop {
            match STREAM_FD.load(Acquire) {
                -2 => std::hint::spin_loop(),
                -1 => {
                    if STREAM_FD.compare_exchange(-1, -2, AcqRel, Relaxed).is_ok() {
                        let fd = open_stream();
                        STREAM_FD.store(fd.max(-1), Release);
                        return fd;
                    }
                }
                fd => {
                    if stat_of(fd).is_some_and(|st| st.st_ino == STREAM_INO.load(Relaxed)) {
                        return fd;
                    }
                    // Closed behind our back (close_range, closefrom) or the number reused: reopen.
                    if STREAM_FD.compare_exchange(fd, -1, AcqRel, Relaxed).is_err() {
                        continue;
                    }
                }
            }
        }
    }
}

/// In a forked child: the process is another, with a stream of its own (opened by
/// [`stream_fd`] once every layer has forgotten the parent's state); the parent's descriptor,
/// inherited, is closed.
pub(super) fn restart_after_fork() {
    PID.store(std::process::id(), Relaxed);
    START_NS.store(iolens_record::clock::now_ns(), Relaxed);
    let fd = STREAM_FD.swap(-1, AcqRel);
    if fd >= 0 {
        // SAFETY: closes the parent's stream descriptor, which the child inherited.
        unsafe { sys()(libc::SYS_close, fd) };
    }
}
