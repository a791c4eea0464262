//! Linux native AIO (libaio's `io_submit`): libaio makes its system calls by instructions of its
//! own, past every hook, and the requests complete in `io_getevents`. They are not recorded as
//! calls; the read and write requests a process submits, and the bytes they ask for, are
//! counted and marked at the end of its image, so that the summary says what it misses.

use std::sync::atomic::{AtomicU64, Ordering::*};

use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_NATIVE_AIO, NO_FILE};
use libc::{c_int, c_long, c_void, iovec};

use crate::clock::now_ns;
use crate::record::{event, iov_total, push};

static REQUESTS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

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

const IO_CMD_PREAD: u16 = 0;
const IO_CMD_PWRITE: u16 = 1;
const IO_CMD_PREADV: u16 = 7;
const IO_CMD_PWRITEV: u16 = 8;

/// The bytes a request asks for, if it reads or writes.
unsafe fn asked(cb: &Iocb) -> Option<u64> {
    match cb.opcode {
        IO_CMD_PREAD | IO_CMD_PWRITE => Some(cb.nbytes),
        IO_CMD_PREADV | IO_CMD_PWRITEV => {
            Some(iov_total(cb.buf as *const iovec, cb.nbytes.min(c_int::MAX as u64) as c_int))
        }
        _ => None,
    }
}

#[no_mangle]
pub unsafe extern "C" fn io_submit(context: *mut c_void, count: c_long, iocbs: *mut *mut c_void) -> c_int {
    type Submit = unsafe extern "C" fn(*mut c_void, c_long, *mut *mut c_void) -> c_int;
    let real = real!("io_submit" as Option<Submit>);
    // Without libaio loaded there is nothing to call; libaio returns -errno.
    let Some(real) = real else { return -libc::ENOSYS };
    let ret = real(context, count, iocbs);
    if ret > 0 && !iocbs.is_null() {
        // The first `ret` were submitted.
        for i in 0..ret as usize {
            let cb = (*iocbs.add(i)).cast::<Iocb>();
            if let Some(bytes) = cb.as_ref().and_then(|cb| asked(cb)) {
                REQUESTS.fetch_add(1, Relaxed);
                BYTES.fetch_add(bytes, Relaxed);
            }
        }
    }
    ret
}

/// At the end of the process image (exit, `_exit`, exec), inside the hook guard: marks the
/// requests submitted, their number and the bytes they asked for.
pub(crate) unsafe fn note_submitted() {
    let requests = REQUESTS.swap(0, Relaxed);
    let bytes = BYTES.swap(0, Relaxed);
    if requests > 0 {
        let t = now_ns();
        push(&IoEvent {
            flags: FLAG_NATIVE_AIO,
            ..event(IoOp::Other, Layer::Posix, NO_FILE, bytes, requests, 0, t, t)
        });
    }
}

/// In a forked child: the requests counted are the parent's.
pub(crate) fn forget_after_fork() {
    REQUESTS.store(0, Relaxed);
    BYTES.store(0, Relaxed);
}
