//! Linux native AIO (libaio): libaio makes its system calls by instructions of its own, past
//! every hook, but programs submit requests through its `io_submit` and reap them through its
//! `io_getevents` (or `io_pgetevents`), which are hooked here. A read, write or sync request is
//! recorded when reaped, from its submission to the return of the call that reaped it, with
//! what it moved. Requests no hook saw reaped (taken from the completion ring in user space, as
//! fio's `userspace_reap` does, or never reaped) are counted, with the bytes they asked for,
//! and marked at the end of the image, so that the summary says what it misses.

use std::sync::atomic::{AtomicU64, Ordering::*};

use iolens_record::event::{IoOp, FLAG_NATIVE_AIO};
use libc::{c_int, c_long, c_void, iovec, timespec};

use crate::base::clock::now_ns;
use crate::base::handle_table::{HandleTable, WORDS};
use crate::base::raw_syscall::real;
use crate::hooks::aio::{collected, mark_requests, request_words};
use crate::record::iov_total;
use crate::stream::enter_guard;

/// Requests submitted and not yet reaped: control block address → submission.
static SUBMITTED: HandleTable = HandleTable::new();
/// Requests no hook saw reaped, and the bytes they asked for: found when their control block
/// was submitted again (it must have completed by then), and at the end of the image.
static UNSEEN: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Counts a request submitted as `words` that no hook saw reaped.
fn unseen(words: [u64; WORDS]) {
    UNSEEN[0].fetch_add(1, Relaxed);
    UNSEEN[1].fetch_add(words[2], Relaxed);
}

/// The head of libaio's `struct iocb` on a 64-bit little-endian target (`libaio.h`): what a
/// request is and how much it asks for.
#[repr(C)]
struct Iocb {
    data: u64,
    key: u32,
    rw_flags: u32,
    opcode: u16,
    request_priority: i16,
    fd: u32,
    /// The buffer, or the iovec array of a vectored request.
    buf: u64,
    /// The bytes, or the iovec count of a vectored request.
    nbytes: u64,
    offset: i64,
}

/// libaio's `struct io_event` on a 64-bit target: the request done and its result (bytes moved,
/// or a negative errno).
#[repr(C)]
pub struct IoEventAio {
    data: u64,
    obj: u64,
    res: u64,
    res2: u64,
}

const IO_CMD_PREAD: u16 = 0;
const IO_CMD_PWRITE: u16 = 1;
const IO_CMD_FSYNC: u16 = 2;
const IO_CMD_FDSYNC: u16 = 3;
const IO_CMD_PREADV: u16 = 7;
const IO_CMD_PWRITEV: u16 = 8;

/// What a request does and the bytes it asks for, if it reads, writes or syncs.
unsafe fn asked(cb: &Iocb) -> Option<(IoOp, u64)> {
    let vectored = || iov_total(cb.buf as *const iovec, cb.nbytes.min(c_int::MAX as u64) as c_int);
    match cb.opcode {
        IO_CMD_PREAD => Some((IoOp::Read, cb.nbytes)),
        IO_CMD_PWRITE => Some((IoOp::Write, cb.nbytes)),
        IO_CMD_PREADV => Some((IoOp::Read, vectored())),
        IO_CMD_PWRITEV => Some((IoOp::Write, vectored())),
        IO_CMD_FSYNC => Some((IoOp::Fsync, 0)),
        IO_CMD_FDSYNC => Some((IoOp::Fdatasync, 0)),
        _ => None,
    }
}

/// The reads, writes and syncs among the control blocks `from..count` at `iocbs`, with their
/// addresses.
unsafe fn requests(
    from: usize,
    count: usize,
    iocbs: *mut *mut c_void,
) -> impl Iterator<Item = (u64, &'static Iocb, IoOp, u64)> {
    // SAFETY: `iocbs` is null or holds `count` control block pointers, each null or valid (the
    // caller's promise, libaio's contract).
    unsafe {
        (from..if iocbs.is_null() { 0 } else { count }).filter_map(move |i| {
            let cb = (*iocbs.add(i)).cast::<Iocb>().as_ref()?;
            let (op, bytes) = asked(cb)?;
            Some((cb as *const Iocb as u64, cb, op, bytes))
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn io_submit(context: *mut c_void, count: c_long, iocbs: *mut *mut c_void) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        type Submit = unsafe extern "C" fn(*mut c_void, c_long, *mut *mut c_void) -> c_int;
        let real = real!("io_submit" as Option<Submit>);
        // Without libaio loaded there is nothing to call; libaio returns -errno.
        let Some(real) = real else { return -libc::ENOSYS };
        let Some(guard) = enter_guard() else { return real(context, count, iocbs) };
        let count = count.max(0) as usize;
        // Kept before the submission: another thread may reap a request before this call returns.
        let start = now_ns();
        for (key, cb, op, bytes) in requests(0, count, iocbs) {
            let words = request_words(start, cb.fd as c_int, op, bytes, cb.offset as u64);
            if let Some(earlier) = SUBMITTED.take(key) {
                unseen(earlier);
            }
            if !SUBMITTED.insert(key, words) {
                // No room to wait for its completion: recorded now, over its submission.
                collected(words, bytes as i64, start);
            }
        }
        let ret = guard.lifted(|| real(context, count as c_long, iocbs));
        // The blocks after the first `ret` (all of them on failure) were not submitted: counted as
        // blocks, polls and no-ops among them.
        for (key, ..) in requests(ret.max(0) as usize, count, iocbs) {
            SUBMITTED.take(key);
        }
        ret
    }
}

/// Runs `reap` (a call that fills `events` and returns how many it filled) and records the
/// requests among them, reaped when it returned.
unsafe fn reaping(events: *const IoEventAio, reap: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: `events` holds the `n` events `reap` just filled.
    unsafe {
        let Some(guard) = enter_guard() else { return reap() };
        let n = guard.lifted(reap);
        if n <= 0 || events.is_null() || SUBMITTED.is_empty() {
            return n;
        }
        let end = now_ns();
        for e in std::slice::from_raw_parts(events, n as usize) {
            if let Some(words) = SUBMITTED.take(e.obj) {
                collected(words, e.res as i64, end);
            }
        }
        n
    }
}

#[no_mangle]
pub unsafe extern "C" fn io_getevents(
    context: *mut c_void,
    min_nr: c_long,
    nr: c_long,
    events: *mut IoEventAio,
    timeout: *mut timespec,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        type Reap =
            unsafe extern "C" fn(*mut c_void, c_long, c_long, *mut IoEventAio, *mut timespec) -> c_int;
        let Some(real) = real!("io_getevents" as Option<Reap>) else { return -libc::ENOSYS };
        reaping(events, || real(context, min_nr, nr, events, timeout))
    }
}

#[no_mangle]
pub unsafe extern "C" fn io_pgetevents(
    context: *mut c_void,
    min_nr: c_long,
    nr: c_long,
    events: *mut IoEventAio,
    timeout: *mut timespec,
    sigmask: *mut libc::sigset_t,
) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        type Reap = unsafe extern "C" fn(
            *mut c_void,
            c_long,
            c_long,
            *mut IoEventAio,
            *mut timespec,
            *mut libc::sigset_t,
        ) -> c_int;
        let Some(real) = real!("io_pgetevents" as Option<Reap>) else { return -libc::ENOSYS };
        reaping(events, || real(context, min_nr, nr, events, timeout, sigmask))
    }
}

/// At the end of the process image (exit, `_exit`, exec), inside the hook guard: marks the
/// requests submitted and never seen reaped, their number and the bytes they asked for.
pub(crate) unsafe fn at_image_end() {
    // SAFETY: called inside the hook guard (the caller's promise): the marker goes to this thread's
    // buffer.
    unsafe {
        SUBMITTED.drain(unseen);
        mark_requests(FLAG_NATIVE_AIO, UNSEEN[0].swap(0, Relaxed), UNSEEN[1].swap(0, Relaxed));
    }
}

/// In a forked child: the requests in flight are the parent's to reap.
pub(crate) fn after_fork() {
    SUBMITTED.drain(|_| {});
    UNSEEN[0].store(0, Relaxed);
    UNSEEN[1].store(0, Relaxed);
}
