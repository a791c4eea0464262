//! What the hook families share: naming the files descriptors refer to (path frames, and the
//! descriptor table filled as files are opened or first met), the counts of calls left out,
//! and the encoding of events into the thread's buffer.
//!
//! The functions that write into the thread's buffer (`record`, `push`, `count_left_out`, and
//! those that call them) ask one thing of their caller besides valid pointers: the calling
//! thread must be inside the hook guard (`stream::enter_guard`), so that no hook of its own, a
//! signal handler's, writes to the buffer meanwhile.

use std::sync::atomic::Ordering::*;

use iolens_record::event::{
    encode_compact, Excluded, IoEvent, IoOp, Layer, COMPACT_EVENT_MAX_LEN, NO_FILE, UNKNOWN_OFFSET,
};
use libc::{c_char, c_int, iovec};

use crate::base::clock::now_ns;
use crate::base::fd_table::{self, NOT_A_FILE};
use crate::base::raw_syscall::{errno, fd_link, set_errno, stat_of, sys};
use crate::base::thread_state::{me, ThreadState};
use crate::stream::{
    add_interrupted, append_path_frame, enter_slot, flush_slot, leave_slot, next_path_id, slot_of,
    with_my_slot, Slot, DROPPED, SLOT_BYTES, STREAM_FD,
};

/// Registers `fd` as referring to `path`; emits the path frame.
pub(crate) unsafe fn register_path(fd: c_int, path: *const c_char, dirfd: c_int) -> u32 {
    // SAFETY: `path` is null or NUL-terminated (the caller's promise).
    unsafe {
        if !fd_table::tracked(fd) || path.is_null() {
            return NO_FILE;
        }
        let id = define_path(path, dirfd);
        fd_table::set_path(fd, id);
        id
    }
}

/// Gives `path` (relative to `dirfd`) an id of the stream; emits the path frame.
pub(crate) unsafe fn define_path(path: *const c_char, dirfd: c_int) -> u32 {
    // SAFETY: `path` is NUL-terminated (the caller's promise); getcwd writes at most `full.len() -
    // 2` bytes, and the copy fits the room left in `full`.
    unsafe {
        let id = next_path_id();
        let mut full = [0u8; 4096];
        let mut len = 0;
        if *path != b'/' as c_char {
            // Relative: to the working directory, or to the directory `dirfd` refers to.
            if dirfd == libc::AT_FDCWD {
                if !libc::getcwd(full.as_mut_ptr().cast(), full.len() - 2).is_null() {
                    len = libc::strlen(full.as_ptr().cast());
                }
            } else if dirfd >= 0 {
                len = fd_link(dirfd, &mut full).unwrap_or(0);
            }
            if len > 0 && len < full.len() - 1 {
                full[len] = b'/';
                len += 1;
            }
        }
        let name_len = libc::strlen(path).min(full.len() - len);
        std::ptr::copy_nonoverlapping(path.cast::<u8>(), full.as_mut_ptr().add(len), name_len);
        len += name_len;
        let len = len.min(u16::MAX as usize);
        let mut head = [0u8; 7];
        head[0] = 2;
        head[1..5].copy_from_slice(&id.to_le_bytes());
        head[5..7].copy_from_slice(&(len as u16).to_le_bytes());
        append_path_frame(&[&head, &full[..len]]);
        id
    }
}

/// The path id of `fd`, discovering inherited descriptors through /proc/self/fd once.
#[inline]
pub(crate) unsafe fn path_of(fd: c_int) -> u32 {
    // SAFETY: discovery reads only what the kernel says of `fd`.
    unsafe {
        let id = fd_table::path(fd);
        if id != NO_FILE {
            return id;
        }
        discover_path(fd)
    }
}

/// The path id of `fd`, not seen before: found through /proc/self/fd (an inherited
/// descriptor, or one opened by a call we do not hook), or NOT_A_FILE.
#[cold]
#[inline(never)]
unsafe fn discover_path(fd: c_int) -> u32 {
    // SAFETY: `target` is NUL-terminated before it is registered; lseek takes no pointer.
    unsafe {
        let mut target = [0u8; 4096];
        let n = fd_link(fd, &mut target).unwrap_or(0);
        let excluded = match file_kind(fd) {
            libc::S_IFREG if n > 0 && target[0] == b'/' => None,
            kind => Some(exclusion(kind).unwrap_or(Excluded::Other)),
        };
        if let Some(reason) = excluded.or((fd == STREAM_FD.load(Relaxed)).then_some(Excluded::Other)) {
            fd_table::exclude(fd, reason);
            return NOT_A_FILE;
        }
        target[n] = 0;
        // Past the lseek hook: the recorder's own calls are not the program's.
        let offset = sys()(libc::SYS_lseek, fd, 0 as libc::off_t, libc::SEEK_CUR);
        fd_table::set_offset(fd, if offset >= 0 { offset as u64 } else { UNKNOWN_OFFSET });
        register_path(fd, target.as_ptr().cast(), libc::AT_FDCWD)
    }
}

/// The type bits of what `fd` refers to (0 when fstat fails).
unsafe fn file_kind(fd: c_int) -> libc::mode_t {
    stat_of(fd).map_or(0, |st| st.st_mode & libc::S_IFMT)
}

/// Why I/O on a descriptor of this type is not storage I/O; `None` for files and directories.
fn exclusion(kind: libc::mode_t) -> Option<Excluded> {
    match kind {
        libc::S_IFIFO | libc::S_IFSOCK => Some(Excluded::PipeOrSocket),
        libc::S_IFCHR => Some(Excluded::CharDevice),
        libc::S_IFBLK => Some(Excluded::BlockDevice),
        _ => None,
    }
}

/// For a descriptor just opened: why it is left out, if it is a device or a pipe.
pub(crate) unsafe fn not_storage(fd: c_int) -> Option<Excluded> {
    // SAFETY: asks the kernel about `fd` only.
    unsafe { exclusion(file_kind(fd)) }
}

/// Counts a read or write on `fd`, which is not a file, under its reason: `moved` bytes.
pub(crate) unsafe fn count_excluded(fd: c_int, moved: i64) {
    // SAFETY: called inside the hook guard (see the module doc), so the count goes to this
    // thread's buffer with no hook of the thread writing to it meanwhile.
    unsafe {
        if !fd_table::tracked(fd) || fd == STREAM_FD.load(Relaxed) {
            return;
        }
        count_left_out(fd_table::excluded(fd), moved.max(0) as u64);
    }
}

/// Counts a call on `fd` made by a signal handler inside the recorder: `moved` bytes for a read
/// or write, `None` for another call. It reads the descriptor table and asks the kernel, never
/// the thread's buffer.
#[cold]
#[inline(never)]
pub(crate) unsafe fn count_interrupted(fd: c_int, moved: Option<i64>) {
    // SAFETY: asks the kernel about `fd` only, and touches no buffer.
    unsafe {
        let reason = match fd_table::path(fd) {
            // Not a file, or not tracked (then `Other`).
            NOT_A_FILE => fd_table::excluded(fd),
            NO_FILE => match file_kind(fd) {
                libc::S_IFREG => Excluded::InterruptedRecording,
                kind => exclusion(kind).unwrap_or(Excluded::Other),
            },
            _ => Excluded::InterruptedRecording,
        };
        if reason == Excluded::InterruptedRecording || moved.is_some() {
            add_interrupted(reason, 1, moved.unwrap_or(0).max(0) as u64);
        }
    }
}

/// Counts a call that is not recorded as I/O under `reason`, with the bytes it concerns.
pub(crate) unsafe fn count_left_out(reason: Excluded, bytes: u64) {
    // SAFETY: `with_my_slot` hands over the calling thread's slot, marked busy: no other thread
    // touches its counts meanwhile.
    unsafe {
        with_my_slot(|slot| {
            let counts = &mut (*slot.excluded.get())[reason as usize];
            counts.0 += 1;
            counts.1 += bytes;
        });
    }
}

pub(crate) unsafe fn record_flagged(op: IoOp, file: u32, flags: u16, t: u64) {
    // SAFETY: called inside the hook guard (see the module doc).
    unsafe {
        push(&IoEvent { flags, ..event(op, Layer::Posix, file, UNKNOWN_OFFSET, 0, 0, t, t) });
    }
}

/// Records a call of the calling thread: what the hooks (and the MPI-IO layer) call.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn record(
    op: IoOp,
    layer: Layer,
    file: u32,
    offset: u64,
    requested: u64,
    result: i64,
    start: u64,
    end: u64,
) {
    // SAFETY: called inside the hook guard (see the module doc); `me()` is the calling thread's
    // state.
    unsafe {
        record_as(me(), op, layer, file, offset, requested, result, start, end);
    }
}

/// [`record`] for the calling thread, whose state `me` is (looked up once per hook).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn record_as(
    me: &ThreadState,
    op: IoOp,
    layer: Layer,
    file: u32,
    offset: u64,
    requested: u64,
    result: i64,
    start: u64,
    end: u64,
) {
    // SAFETY: `me` is the calling thread's state (the caller's promise).
    unsafe {
        push_as(me, &event(op, layer, file, offset, requested, result, start, end));
    }
}

/// An event without flags. Its pid and tid are left 0: a compact event is the thread's whose
/// block holds it, and the block header names them.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn event(
    op: IoOp,
    layer: Layer,
    file: u32,
    offset: u64,
    requested: u64,
    result: i64,
    start: u64,
    end: u64,
) -> IoEvent {
    IoEvent {
        pid: 0,
        tid: 0,
        file,
        op,
        layer,
        flags: 0,
        offset,
        requested,
        result,
        start_ns: start,
        end_ns: end,
    }
}

/// Encodes `e` into the calling thread's buffer.
#[inline]
pub(crate) unsafe fn push(e: &IoEvent) {
    // SAFETY: called inside the hook guard (see the module doc); `me()` is the calling thread's
    // state.
    unsafe {
        push_as(me(), e);
    }
}

#[inline(always)]
unsafe fn push_as(me: &ThreadState, e: &IoEvent) {
    // SAFETY: `me` is the calling thread's state (the caller's promise), so its slot is its own,
    // marked busy around the push.
    unsafe {
        match slot_of(me) {
            Some(slot) => {
                enter_slot(slot);
                push_to(slot, e);
                leave_slot(slot);
            }
            None => lost_without_a_buffer(),
        }
    }
}

/// Counts an event lost because the pool had no buffer left for its thread.
#[cold]
#[inline(never)]
fn lost_without_a_buffer() {
    DROPPED.fetch_add(1, Relaxed);
}

#[inline(always)]
unsafe fn push_to(slot: &Slot, e: &IoEvent) {
    // SAFETY: `slot` is the calling thread's and marked busy (the caller's promise): no other
    // thread touches its cells.
    unsafe {
        let len = &mut *slot.len.get();
        if *len + COMPACT_EVENT_MAX_LEN > SLOT_BYTES {
            // Only after other frames (a path) filled the buffer: events flush it below.
            flush_slot(slot);
        }
        let data = &mut *slot.data.get();
        let frame: &mut [u8; COMPACT_EVENT_MAX_LEN] =
            (&mut data[*len..*len + COMPACT_EVENT_MAX_LEN]).try_into().expect("room checked above");
        *len += encode_compact(e, &mut *slot.predictor.get(), frame);
        *slot.events.get() += 1;
        // Flushed as soon as it is full, not when the next event comes: every event of a block
        // then ends before the clock point its flush takes (see `flush_slot`).
        if *len + COMPACT_EVENT_MAX_LEN > SLOT_BYTES {
            flush_slot(slot);
        }
    }
}

pub(crate) fn result_of(ret: i64, err: c_int) -> i64 {
    if ret < 0 {
        -(err as i64)
    } else {
        ret
    }
}

/// Wraps a call on `fd`: times it and records it if `fd` is a file. `offset` is the explicit
/// offset, or `None` to use (and advance) the tracked position. With `@asked`, what the call
/// asked for is known only from what it moved (a function of its result).
macro_rules! traced_fd_call {
    ($op:expr, $fd:expr, $offset:expr, $requested:expr, $call:expr) => {
        traced_fd_call!(@asked $op, $fd, $offset, |_moved: i64| $requested as u64, $call)
    };
    (@asked $op:expr, $fd:expr, $offset:expr, $asked:expr, $call:expr) => {{
        match $crate::stream::enter_guard() {
            None => {
                let ret = $call;
                if $crate::base::guard::recording_interrupted() {
                    $crate::record::count_interrupted($fd, $op.is_data().then_some(ret as i64));
                }
                ret
            }
            Some(guard) => {
                let fd: libc::c_int = $fd;
                let file = $crate::record::path_of(fd);
                if file == $crate::base::fd_table::NOT_A_FILE {
                    let ret = guard.lifted(|| $call);
                    if $op.is_data() {
                        $crate::record::count_excluded(fd, ret as i64);
                    }
                    ret
                } else {
                    let t0 = $crate::base::clock::now_ns();
                    let ret = guard.lifted(|| $call);
                    let t1 = $crate::base::clock::now_ns();
                    let ret64 = ret as i64;
                    // Recording keeps errno (a flush restores it), so only a failure's is saved.
                    let err = if ret64 < 0 { $crate::base::raw_syscall::errno() } else { 0 };
                    let offset = $crate::base::fd_table::position(fd, $offset, ret64);
                    $crate::record::record_as(
                        guard.state(),
                        $op,
                        iolens_record::event::Layer::Posix,
                        file,
                        offset,
                        $asked(ret64),
                        $crate::record::result_of(ret64, err),
                        t0,
                        t1,
                    );
                    if ret64 < 0 {
                        $crate::base::raw_syscall::set_errno(err);
                    }
                    ret
                }
            }
        }
    }};
}

pub(crate) use traced_fd_call;

/// The bytes `n` iovecs at `iov` ask for.
pub(crate) fn iov_total(iov: *const iovec, n: c_int) -> u64 {
    if iov.is_null() || n <= 0 {
        return 0;
    }
    // SAFETY: the caller passes `n` iovecs, as the real call requires.
    unsafe { std::slice::from_raw_parts(iov, n as usize) }.iter().map(|v| v.iov_len as u64).sum()
}

/// After an open (by a hook of `layer`, at `t0`) that returned `fd`: the descriptor is named
/// in the table, as `path` (relative to `dirfd`) or as what it turned out not to be, and the
/// open recorded. `flags` are the open's (`O_APPEND`, `O_TMPFILE` matter here). Keeps errno.
pub(crate) unsafe fn opened(
    fd: c_int,
    path: *const c_char,
    dirfd: c_int,
    flags: c_int,
    layer: Layer,
    t0: u64,
) {
    // SAFETY: `path` is null or NUL-terminated (the caller's promise); `unnamed` is NUL-terminated
    // before it is registered.
    unsafe {
        let t1 = now_ns();
        let err = errno();
        if fd_table::tracked(fd) {
            if let Some(reason) = not_storage(fd) {
                // /dev/zero, a terminal, a named pipe: counted as left out, like Darshan does.
                fd_table::exclude(fd, reason);
                set_errno(err);
                return;
            }
            // An O_TMPFILE file has no name of its own (`path` is its directory): it is named as
            // /proc/self/fd shows it, "dir/#inode (deleted)".
            let id = if flags & libc::O_TMPFILE == libc::O_TMPFILE {
                let mut unnamed = [0u8; 4096];
                match fd_link(fd, &mut unnamed) {
                    Some(len) => {
                        unnamed[len.min(unnamed.len() - 1)] = 0;
                        register_path(fd, unnamed.as_ptr().cast(), libc::AT_FDCWD)
                    }
                    None => register_path(fd, path, dirfd),
                }
            } else {
                register_path(fd, path, dirfd)
            };
            let start = if flags & libc::O_APPEND != 0 { UNKNOWN_OFFSET } else { 0 };
            fd_table::set_offset(fd, start);
            record(IoOp::Open, layer, id, UNKNOWN_OFFSET, 0, fd as i64, t0, t1);
        }
        set_errno(err);
    }
}
