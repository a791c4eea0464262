//! Copies between two descriptors inside the kernel: copy_file_range, sendfile, splice.
//!
//! Each is recorded as what it did to each file: a read of the source and a write of the
//! destination, of the bytes it returned. The length argument is only a cap (coreutils' `cat`
//! passes nearly `SSIZE_MAX`), so it is not what the program asked to move.

use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_COPY_SOURCE};
use libc::{c_int, c_uint, loff_t, off64_t, off_t, size_t, ssize_t};

use crate::clock::now_ns;
use crate::record::{event, path_of, position, push, result_of, NOT_A_FILE};
use crate::{errno, set_errno, Guard};

/// One end of a copy: its descriptor and the explicit offset, if the caller passed one.
#[derive(Clone, Copy)]
struct End {
    fd: c_int,
    offset: Option<u64>,
}

impl End {
    /// `fd` with the offset `at` points to (read before the call, which updates it).
    unsafe fn new<T: Copy + Into<i64>>(fd: c_int, at: *const T) -> End {
        End { fd, offset: if at.is_null() { None } else { Some((*at).into() as u64) } }
    }
}

/// Runs `call` (a copy from `source` to `destination`) and records both ends that are files.
unsafe fn traced_copy(source: End, destination: End, call: impl FnOnce() -> ssize_t) -> ssize_t {
    let Some(guard) = Guard::enter() else { return call() };
    let (from, to) = (path_of(source.fd), path_of(destination.fd));
    if from == NOT_A_FILE && to == NOT_A_FILE {
        return guard.lifted(call);
    }
    let t0 = now_ns();
    let ret = guard.lifted(call);
    let t1 = now_ns();
    let err = errno();
    let moved = ret as i64;
    let bytes = moved.max(0) as u64;
    let result = result_of(moved, err);
    if from != NOT_A_FILE {
        let at = position(source.fd, source.offset, moved);
        let read = event(IoOp::Read, Layer::Posix, from, at, bytes, result, t0, t1);
        // With both ends files, the write half carries the call's time.
        let flags = if to != NOT_A_FILE { FLAG_COPY_SOURCE } else { 0 };
        push(&IoEvent { flags, ..read });
    }
    if to != NOT_A_FILE {
        let at = position(destination.fd, destination.offset, moved);
        push(&event(IoOp::Write, Layer::Posix, to, at, bytes, result, t0, t1));
    }
    set_errno(err);
    ret
}

#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut off64_t,
    fd_out: c_int,
    off_out: *mut off64_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let real = real!(
        "copy_file_range"
            as unsafe extern "C" fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, c_uint) -> ssize_t
    );
    traced_copy(End::new(fd_in, off_in), End::new(fd_out, off_out), || {
        real(fd_in, off_in, fd_out, off_out, len, flags)
    })
}

macro_rules! sendfile_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            out_fd: c_int,
            in_fd: c_int,
            offset: *mut $off,
            count: size_t,
        ) -> ssize_t {
            let real = real!($real as unsafe extern "C" fn(c_int, c_int, *mut $off, size_t) -> ssize_t);
            // The offset, when given, is the source's; the destination's position advances.
            traced_copy(End::new(in_fd, offset), End { fd: out_fd, offset: None }, || {
                real(out_fd, in_fd, offset, count)
            })
        }
    };
}
sendfile_hook!(sendfile, "sendfile", off_t);
sendfile_hook!(sendfile64, "sendfile64", off64_t);

#[no_mangle]
pub unsafe extern "C" fn splice(
    fd_in: c_int,
    off_in: *mut loff_t,
    fd_out: c_int,
    off_out: *mut loff_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let real = real!(
        "splice" as unsafe extern "C" fn(c_int, *mut loff_t, c_int, *mut loff_t, size_t, c_uint) -> ssize_t
    );
    // One end is a pipe, which is not a file: only the file end is recorded.
    traced_copy(End::new(fd_in, off_in), End::new(fd_out, off_out), || {
        real(fd_in, off_in, fd_out, off_out, len, flags)
    })
}
