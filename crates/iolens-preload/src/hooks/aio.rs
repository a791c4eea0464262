//! POSIX asynchronous I/O: `aio_read`/`aio_write` (and their `64` names). glibc carries each
//! request out in a helper thread through its internal `pread`/`pwrite`, which no hook sees,
//! and MPI-IO libraries use them for nonblocking calls (MPICH's ROMIO, Open MPI's ompio): without
//! these hooks the POSIX layer beneath an `MPI_File_iwrite` would show nothing.
//!
//! A request is recorded from its submission to the completion the program observes (the first
//! `aio_error` that no longer says `EINPROGRESS`, else the `aio_return` that collects its
//! result), with the bytes it moved (`aio_return`'s answer); until then it waits in a lock-free
//! table keyed by the address of its control block. `lio_listio` submits a list of
//! them at once. Requests still waiting when the process image ends (never collected: nothing
//! tells what they moved, and their control blocks may be gone) are counted in a marker, which
//! the summary turns into a note.

use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_AIO_UNCOLLECTED, NO_FILE, UNKNOWN_OFFSET};
use libc::{aiocb, c_int, sigevent, ssize_t};

use crate::base::clock::now_ns;
use crate::base::fd_table::NOT_A_FILE;
use crate::base::handle_table::{HandleTable, WORDS};
use crate::base::raw_syscall::{errno, real, set_errno};
use crate::record::{count_excluded, event, path_of, push, record};
use crate::stream::enter_guard;

/// Requests submitted and not yet collected: control block address → submission.
static SUBMITTED: HandleTable = HandleTable::new();

/// Notes a request just submitted by `call`.
unsafe fn submitted(op: IoOp, cb: *mut aiocb, call: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: `cb` is the program's control block, which `call` submits; it is read only once the
    // submission succeeded.
    unsafe {
        let Some(guard) = enter_guard() else { return call() };
        let start = now_ns();
        let ret = guard.lifted(call);
        if ret == 0 {
            wait_for(op, cb, start);
        }
        ret
    }
}

/// Keeps the request `cb`, submitted at `start`, until its result is collected.
unsafe fn wait_for(op: IoOp, cb: *mut aiocb, start: u64) {
    // SAFETY: `cb` is null or a control block the program just submitted, valid until it collects
    // it.
    unsafe {
        if cb.is_null() {
            return;
        }
        let c = &*cb;
        let words = request_words(start, c.aio_fildes, op, c.aio_nbytes as u64, c.aio_offset as u64);
        if !SUBMITTED.insert(cb as u64, words) {
            // No room to wait for its completion: recorded now, over its submission, so never lost.
            collected(words, words[2] as i64, now_ns());
        }
    }
}

/// The words a request submitted at `start` is kept as until collected: start, descriptor and
/// op, bytes asked, offset, the time it was seen done (0: not yet). A sync asks for no bytes at
/// no offset. Also for Linux native AIO.
pub(crate) fn request_words(start: u64, fd: c_int, op: IoOp, bytes: u64, offset: u64) -> [u64; WORDS] {
    let (bytes, offset) = if op.is_data() { (bytes, offset) } else { (0, UNKNOWN_OFFSET) };
    [start, fd as u32 as u64 | (op as u64) << 32, bytes, offset, 0, 0]
}

/// Where the time the program saw a request done is kept among its words (0: not yet).
const SEEN_DONE: usize = 4;

/// Records a request submitted as `words` (see [`request_words`]) whose `result` (bytes moved,
/// or a negative errno) was collected at `end`. Also for Linux native AIO.
pub(crate) unsafe fn collected(words: [u64; WORDS], result: i64, end: u64) {
    // SAFETY: recording reads the descriptor table and the kernel's view of `fd` only.
    unsafe {
        let end = if words[SEEN_DONE] != 0 { words[SEEN_DONE] } else { end };
        let fd = words[1] as u32 as c_int;
        let op = IoOp::from_u8((words[1] >> 32) as u8).unwrap_or(IoOp::Write);
        let file = path_of(fd);
        if file == NOT_A_FILE {
            count_excluded(fd, result);
            return;
        }
        record(op, Layer::Posix, file, words[3], words[2], result, words[0], end);
    }
}

macro_rules! submit_hook {
    ($name:ident, $real:literal, $op:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(cb: *mut aiocb) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*mut aiocb) -> c_int);
                submitted($op, cb, || real(cb))
            }
        }
    };
}
submit_hook!(aio_read, "aio_read", IoOp::Read);
submit_hook!(aio_read64, "aio_read64", IoOp::Read);
submit_hook!(aio_write, "aio_write", IoOp::Write);
submit_hook!(aio_write64, "aio_write64", IoOp::Write);

/// aio_fsync: a request to make the file's written data durable (`O_SYNC`: as fsync does,
/// `O_DSYNC`: as fdatasync does), recorded when collected, as the reads and writes are.
macro_rules! fsync_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(mode: c_int, cb: *mut aiocb) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, *mut aiocb) -> c_int);
                let op = if mode == libc::O_DSYNC { IoOp::Fdatasync } else { IoOp::Fsync };
                submitted(op, cb, || real(mode, cb))
            }
        }
    };
}
fsync_hook!(aio_fsync, "aio_fsync");
fsync_hook!(aio_fsync64, "aio_fsync64");

macro_rules! list_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            mode: c_int,
            list: *const *mut aiocb,
            count: c_int,
            sig: *mut sigevent,
        ) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!(
                    $real as unsafe extern "C" fn(c_int, *const *mut aiocb, c_int, *mut sigevent) -> c_int
                );
                let Some(guard) = enter_guard() else { return real(mode, list, count, sig) };
                let start = now_ns();
                let ret = guard.lifted(|| real(mode, list, count, sig));
                // On failure some requests may have been queued all the same, and are collected
                // by aio_return like any other.
                if !list.is_null() {
                    for i in 0..count.max(0) as usize {
                        let cb = *list.add(i);
                        if cb.is_null() || (ret != 0 && !was_queued(cb)) {
                            continue;
                        }
                        match (*cb).aio_lio_opcode {
                            libc::LIO_READ => wait_for(IoOp::Read, cb, start),
                            libc::LIO_WRITE => wait_for(IoOp::Write, cb, start),
                            _ => {}
                        }
                    }
                }
                ret
            }
        }
    };
}
list_hook!(lio_listio, "lio_listio");
list_hook!(lio_listio64, "lio_listio64");

/// Whether a request of a failed `lio_listio` was queued all the same: in flight, or done
/// (a request refused has an error status of its own, EAGAIN or EINVAL).
unsafe fn was_queued(cb: *mut aiocb) -> bool {
    // SAFETY: `cb` is a control block the program passed to `lio_listio`.
    unsafe { matches!(libc::aio_error(cb), 0 | libc::EINPROGRESS) }
}

macro_rules! error_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(cb: *const aiocb) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*const aiocb) -> c_int);
                let ret = real(cb);
                if ret != libc::EINPROGRESS && !SUBMITTED.is_empty() {
                    SUBMITTED.set_once(cb as u64, SEEN_DONE, now_ns());
                }
                ret
            }
        }
    };
}
error_hook!(aio_error, "aio_error");
error_hook!(aio_error64, "aio_error64");

macro_rules! return_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(cb: *mut aiocb) -> ssize_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*mut aiocb) -> ssize_t);
                if SUBMITTED.is_empty() {
                    return real(cb);
                }
                let Some(guard) = enter_guard() else { return real(cb) };
                let ret = guard.lifted(|| real(cb));
                let end = now_ns();
                if let Some(words) = SUBMITTED.take(cb as u64) {
                    let err = errno();
                    // aio_return says -1; what failed is aio_error's to tell, and not asked here.
                    collected(words, if ret < 0 { -(libc::EIO as i64) } else { ret as i64 }, end);
                    set_errno(err);
                }
                ret
            }
        }
    };
}
return_hook!(aio_return, "aio_return");
return_hook!(aio_return64, "aio_return64");

/// At the end of the process image (exit, `_exit`, exec), inside the hook guard: marks the
/// requests never collected by `aio_return`, their number and the bytes they asked for, so that
/// the summary says so.
pub(crate) unsafe fn at_image_end() {
    // SAFETY: called inside the hook guard (the caller's promise): the events go to this thread's
    // buffer.
    unsafe {
        let (mut requests, mut asked) = (0u64, 0u64);
        SUBMITTED.drain(|words| {
            requests += 1;
            asked = asked.saturating_add(words[2]);
        });
        mark_requests(FLAG_AIO_UNCOLLECTED, requests, asked);
    }
}

/// Marks `requests` requests asking for `asked` bytes that the calls recorded leave out, under
/// the marker `flag` (none when there are none). Also for Linux native AIO.
pub(crate) unsafe fn mark_requests(flag: u16, requests: u64, asked: u64) {
    // SAFETY: called inside the hook guard (the caller's promise): the event goes to this thread's
    // buffer.
    unsafe {
        if requests > 0 {
            let t = now_ns();
            push(&IoEvent {
                flags: flag,
                ..event(IoOp::Other, Layer::Posix, NO_FILE, asked, requests, 0, t, t)
            });
        }
    }
}

/// In a forked child: the requests waiting are the parent's to collect.
pub(crate) fn after_fork() {
    SUBMITTED.drain(|_| {});
}
