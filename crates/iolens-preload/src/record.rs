//! What the hooks share: the descriptor table (which file, which position), and the encoding
//! of events into the thread's buffer.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::*};

use iolens_record::event::{
    encode_compact, Excluded, IoEvent, IoOp, Layer, COMPACT_EVENT_MAX_LEN, NO_FILE, UNKNOWN_OFFSET,
};
use libc::{c_char, c_int, iovec};

use crate::stream::{
    append_path_frame, enter_slot, flush_slot, leave_slot, push_decimal, slot_of, with_my_slot, Slot,
    DROPPED, SLOT_BYTES, STREAM_FD,
};
use crate::ThreadState;

static NEXT_PATH: AtomicU32 = AtomicU32::new(0);
pub(crate) const MAX_FDS: usize = 65536;
/// Path id of each descriptor: NO_FILE = unknown yet, NOT_A_FILE = checked, not a file.
pub(crate) static FD_PATH: [AtomicU32; MAX_FDS] = [const { AtomicU32::new(NO_FILE) }; MAX_FDS];
/// Our own idea of each descriptor's file position, for read/write without an offset.
pub(crate) static FD_OFFSET: [AtomicU64; MAX_FDS] = [const { AtomicU64::new(UNKNOWN_OFFSET) }; MAX_FDS];
pub(crate) const NOT_A_FILE: u32 = NO_FILE - 1;
/// For a descriptor that is NOT_A_FILE: why ([`Excluded`] as u8).
pub(crate) static FD_EXCLUDED: [AtomicU8; MAX_FDS] =
    [const { AtomicU8::new(Excluded::Other as u8) }; MAX_FDS];

/// Registers `fd` as referring to `path`; emits the path frame.
pub(crate) unsafe fn register_path(fd: c_int, path: *const c_char, dirfd: c_int) -> u32 {
    if fd < 0 || fd as usize >= MAX_FDS || path.is_null() {
        return NO_FILE;
    }
    let id = define_path(path, dirfd);
    FD_PATH[fd as usize].store(id, Relaxed);
    id
}

/// A fresh path id of this stream.
pub(crate) fn next_path_id() -> u32 {
    NEXT_PATH.fetch_add(1, Relaxed)
}

/// Gives `path` (relative to `dirfd`) an id of the stream; emits the path frame.
pub(crate) unsafe fn define_path(path: *const c_char, dirfd: c_int) -> u32 {
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

/// What `/proc/self/fd/<fd>` points to, written into `out` (not NUL-terminated); its length.
pub(crate) unsafe fn fd_link(fd: c_int, out: &mut [u8; 4096]) -> Option<usize> {
    let mut link = [0u8; 40];
    let mut at = 0;
    for b in b"/proc/self/fd/" {
        link[at] = *b;
        at += 1;
    }
    push_decimal(&mut link, &mut at, fd as u64);
    let n =
        crate::sys()(libc::SYS_readlinkat, libc::AT_FDCWD, link.as_ptr(), out.as_mut_ptr(), out.len() - 1);
    (n > 0).then_some(n as usize)
}

/// The path id of `fd`, discovering inherited descriptors through /proc/self/fd once.
#[inline]
pub(crate) unsafe fn path_of(fd: c_int) -> u32 {
    if fd < 0 || fd as usize >= MAX_FDS {
        return NOT_A_FILE;
    }
    let id = FD_PATH[fd as usize].load(Relaxed);
    if id != NO_FILE {
        return id;
    }
    discover_path(fd)
}

/// The path id of `fd`, not seen before: found through /proc/self/fd (an inherited
/// descriptor, or one opened by a call we do not hook), or NOT_A_FILE.
#[cold]
#[inline(never)]
unsafe fn discover_path(fd: c_int) -> u32 {
    let mut target = [0u8; 4096];
    let n = fd_link(fd, &mut target).unwrap_or(0);
    let excluded = match file_kind(fd) {
        libc::S_IFREG if n > 0 && target[0] == b'/' => None,
        kind => Some(exclusion(kind).unwrap_or(Excluded::Other)),
    };
    if let Some(reason) = excluded.or((fd == STREAM_FD.load(Relaxed)).then_some(Excluded::Other)) {
        FD_EXCLUDED[fd as usize].store(reason as u8, Relaxed);
        FD_PATH[fd as usize].store(NOT_A_FILE, Relaxed);
        return NOT_A_FILE;
    }
    target[n] = 0;
    // Past the lseek hook: the recorder's own calls are not the program's.
    let offset = crate::sys()(libc::SYS_lseek, fd, 0 as libc::off_t, libc::SEEK_CUR);
    FD_OFFSET[fd as usize].store(if offset >= 0 { offset as u64 } else { UNKNOWN_OFFSET }, Relaxed);
    register_path(fd, target.as_ptr().cast(), libc::AT_FDCWD)
}

/// What the kernel says of what `fd` refers to (fstat has no hook); `None` when it fails.
pub(crate) unsafe fn stat_of(fd: c_int) -> Option<libc::stat> {
    let mut st: libc::stat = std::mem::zeroed();
    (libc::fstat(fd, &mut st) == 0).then_some(st)
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
    exclusion(file_kind(fd))
}

/// Counts a read or write on `fd`, which is not a file, under its reason: `moved` bytes.
pub(crate) unsafe fn count_excluded(fd: c_int, moved: i64) {
    if fd < 0 || fd as usize >= MAX_FDS || fd == STREAM_FD.load(Relaxed) {
        return;
    }
    let reason = Excluded::from_u8(FD_EXCLUDED[fd as usize].load(Relaxed)).unwrap_or(Excluded::Other);
    count_left_out(reason, moved.max(0) as u64);
}

/// Calls (and the bytes of their reads and writes) that signal handlers made while this
/// process's recorder was writing down the call they interrupted, by [`Excluded`] reason: the
/// thread's buffer may be half-written then, so they are counted here, with atomics, and
/// written out at the end. Calls on files count under `InterruptedRecording`, the others under
/// what their descriptor is, as if they had been seen.
static INTERRUPTED: [[AtomicU64; 2]; Excluded::ALL.len()] =
    [const { [AtomicU64::new(0), AtomicU64::new(0)] }; Excluded::ALL.len()];

/// Counts a call on `fd` made by a signal handler inside the recorder: `moved` bytes for a read
/// or write, `None` for another call. It reads the descriptor table and asks the kernel, never
/// the thread's buffer.
#[cold]
#[inline(never)]
pub(crate) unsafe fn count_interrupted(fd: c_int, moved: Option<i64>) {
    let known =
        if fd >= 0 && (fd as usize) < MAX_FDS { FD_PATH[fd as usize].load(Relaxed) } else { NOT_A_FILE };
    let reason = match known {
        NOT_A_FILE if fd >= 0 && (fd as usize) < MAX_FDS => {
            Excluded::from_u8(FD_EXCLUDED[fd as usize].load(Relaxed)).unwrap_or(Excluded::Other)
        }
        NOT_A_FILE => Excluded::Other,
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

pub(crate) fn add_interrupted(reason: Excluded, calls: u64, bytes: u64) {
    INTERRUPTED[reason as usize][0].fetch_add(calls, Relaxed);
    INTERRUPTED[reason as usize][1].fetch_add(bytes, Relaxed);
}

/// The calls counted by [`count_interrupted`] and their bytes, by reason, taken (counting
/// starts over).
pub(crate) fn take_interrupted() -> [(u64, u64); Excluded::ALL.len()] {
    std::array::from_fn(|r| (INTERRUPTED[r][0].swap(0, Relaxed), INTERRUPTED[r][1].swap(0, Relaxed)))
}

/// Counts a call that is not recorded as I/O under `reason`, with the bytes it concerns.
pub(crate) unsafe fn count_left_out(reason: Excluded, bytes: u64) {
    with_my_slot(|slot| {
        let counts = &mut (*slot.excluded.get())[reason as usize];
        counts.0 += 1;
        counts.1 += bytes;
    });
}

pub(crate) unsafe fn record_flagged(op: IoOp, file: u32, flags: u16, t: u64) {
    push(&IoEvent { flags, ..event(op, Layer::Posix, file, UNKNOWN_OFFSET, 0, 0, t, t) });
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
    record_as(crate::me(), op, layer, file, offset, requested, result, start, end);
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
    push_as(me, &event(op, layer, file, offset, requested, result, start, end));
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
    push_as(crate::me(), e);
}

#[inline(always)]
unsafe fn push_as(me: &ThreadState, e: &IoEvent) {
    match slot_of(me) {
        Some(slot) => {
            enter_slot(slot);
            push_to(slot, e);
            leave_slot(slot);
        }
        None => lost_without_a_buffer(),
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

/// The offset a call on `fd` worked at: `explicit`, or the tracked position, which a call
/// that moved `moved` bytes without an explicit offset advances.
#[inline]
pub(crate) fn position(fd: c_int, explicit: Option<u64>, moved: i64) -> u64 {
    if let Some(at) = explicit {
        return at;
    }
    if fd < 0 || fd as usize >= MAX_FDS {
        return UNKNOWN_OFFSET;
    }
    let slot = &FD_OFFSET[fd as usize];
    let at = slot.load(Relaxed);
    if moved > 0 && at != UNKNOWN_OFFSET {
        slot.store(at + moved as u64, Relaxed);
    }
    at
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
        match $crate::Guard::enter() {
            None => {
                let ret = $call;
                if $crate::recording_interrupted() {
                    $crate::record::count_interrupted($fd, $op.is_data().then_some(ret as i64));
                }
                ret
            }
            Some(guard) => {
                let fd: libc::c_int = $fd;
                let file = $crate::record::path_of(fd);
                if file == $crate::record::NOT_A_FILE {
                    let ret = guard.lifted(|| $call);
                    if $op.is_data() {
                        $crate::record::count_excluded(fd, ret as i64);
                    }
                    ret
                } else {
                    let t0 = $crate::clock::now_ns();
                    let ret = guard.lifted(|| $call);
                    let t1 = $crate::clock::now_ns();
                    let ret64 = ret as i64;
                    // Recording keeps errno (a flush restores it), so only a failure's is saved.
                    let err = if ret64 < 0 { $crate::errno() } else { 0 };
                    let offset = $crate::record::position(fd, $offset, ret64);
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
                        $crate::set_errno(err);
                    }
                    ret
                }
            }
        }
    }};
}

pub(crate) fn iov_total(iov: *const iovec, n: c_int) -> u64 {
    if iov.is_null() || n <= 0 {
        return 0;
    }
    // SAFETY: the caller passes `n` iovecs, as the real call requires.
    unsafe { std::slice::from_raw_parts(iov, n as usize) }.iter().map(|v| v.iov_len as u64).sum()
}
