//! Copies between two descriptors inside the kernel: copy_file_range, sendfile, splice, and
//! clones (`ioctl` FICLONE and FICLONERANGE).
//!
//! Each is recorded as what it did to each file: a read of the source and a write of the
//! destination, of the bytes it returned. The length argument is only a cap (coreutils' `cat`
//! passes nearly `SSIZE_MAX`), so it is not what the program asked to move. A clone returns
//! no length: its bytes are the range it shared, to the source's end when the range says so.

use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_CLONE, FLAG_COPY_SOURCE};
use libc::{c_int, c_uint, c_ulong, c_void, loff_t, off64_t, off_t, size_t, ssize_t};

use crate::base::clock::now_ns;
use crate::base::fd_table::{position, NOT_A_FILE};
use crate::base::raw_syscall::{errno, real, set_errno, stat_of};
use crate::record::{event, path_of, push, result_of};
use crate::stream::enter_guard;

/// One end of a copy: its descriptor and the explicit offset, if the caller passed one.
#[derive(Clone, Copy)]
struct End {
    fd: c_int,
    offset: Option<u64>,
}

impl End {
    /// `fd` with the offset `at` points to (read before the call, which updates it).
    unsafe fn new<T: Copy + Into<i64>>(fd: c_int, at: *const T) -> End {
        // SAFETY: `at` is null or points to the offset the program passes to the copy (the caller's
        // promise).
        unsafe { End { fd, offset: if at.is_null() { None } else { Some((*at).into() as u64) } } }
    }
}

/// Runs `call` (a copy from `source` to `destination`) and records both ends that are files,
/// marked with `flags`, as having moved what `moved` makes of its result (negative: failed).
unsafe fn traced_copy<R: Copy>(
    source: End,
    destination: End,
    flags: u16,
    call: impl FnOnce() -> R,
    moved: impl FnOnce(R) -> i64,
) -> R {
    // SAFETY: `call` is the program's call, made as it asked; recording reads the descriptor table
    // and the kernel's view of the two descriptors only.
    unsafe {
        let Some(guard) = enter_guard() else { return call() };
        let (from, to) = (path_of(source.fd), path_of(destination.fd));
        if from == NOT_A_FILE && to == NOT_A_FILE {
            return guard.lifted(call);
        }
        let t0 = now_ns();
        let ret = guard.lifted(call);
        let t1 = now_ns();
        let err = errno();
        let moved = moved(ret);
        let bytes = moved.max(0) as u64;
        let result = result_of(moved, err);
        if from != NOT_A_FILE {
            let at = position(source.fd, source.offset, moved);
            let read = event(IoOp::Read, Layer::Posix, from, at, bytes, result, t0, t1);
            // With both ends files, the write half carries the call's time.
            let source_flag = if to != NOT_A_FILE { FLAG_COPY_SOURCE } else { 0 };
            push(&IoEvent { flags: flags | source_flag, ..read });
        }
        if to != NOT_A_FILE {
            let at = position(destination.fd, destination.offset, moved);
            let write = event(IoOp::Write, Layer::Posix, to, at, bytes, result, t0, t1);
            push(&IoEvent { flags, ..write });
        }
        set_errno(err);
        ret
    }
}

/// [`traced_copy`] of a call returning the bytes it moved.
unsafe fn traced_move(source: End, destination: End, call: impl FnOnce() -> ssize_t) -> ssize_t {
    // SAFETY: as in `traced_copy`.
    unsafe { traced_copy(source, destination, 0, call, |ret| ret as i64) }
}

/// `ioctl` requests that clone (linux/fs.h): FICLONE's argument is the source descriptor,
/// FICLONERANGE's a [`FileCloneRange`].
const FICLONE: c_ulong = 0x4004_9409;
const FICLONERANGE: c_ulong = 0x4020_940d;

/// linux/fs.h's `struct file_clone_range`; a length of 0 reaches the source's end.
#[repr(C)]
struct FileCloneRange {
    src_fd: i64,
    src_offset: u64,
    src_length: u64,
    dest_offset: u64,
}

/// The size of the file `fd` refers to, 0 when unknown.
unsafe fn size_of_file(fd: c_int) -> u64 {
    stat_of(fd).map_or(0, |st| st.st_size.max(0) as u64)
}

/// Every `ioctl` passes here; only the clones are recorded. The request's argument is read as
/// the one pointer-sized argument every request takes (the call is variadic in C).
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("ioctl" as unsafe extern "C" fn(c_int, c_ulong, *mut c_void) -> c_int);
        let call = || real(fd, request, arg);
        match request {
            FICLONE => {
                let source = arg as usize as c_int;
                let (from, to) = (End { fd: source, offset: Some(0) }, End { fd, offset: Some(0) });
                traced_copy(from, to, FLAG_CLONE, call, |ret| {
                    if ret < 0 {
                        -1
                    } else {
                        size_of_file(source) as i64
                    }
                })
            }
            FICLONERANGE if !arg.is_null() => {
                // Read before the call: the kernel only reads it, but the program may share it.
                let range = std::ptr::read(arg as *const FileCloneRange);
                let source = range.src_fd as c_int;
                let from = End { fd: source, offset: Some(range.src_offset) };
                let to = End { fd, offset: Some(range.dest_offset) };
                traced_copy(from, to, FLAG_CLONE, call, |ret| match (ret, range.src_length) {
                    (..0, _) => -1,
                    (_, 0) => {
                        size_of_file(source).saturating_sub(range.src_offset).min(i64::MAX as u64) as i64
                    }
                    (_, length) => length.min(i64::MAX as u64) as i64,
                })
            }
            _ => call(),
        }
    }
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
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!(
            "copy_file_range"
                as unsafe extern "C" fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, c_uint) -> ssize_t
        );
        traced_move(End::new(fd_in, off_in), End::new(fd_out, off_out), || {
            real(fd_in, off_in, fd_out, off_out, len, flags)
        })
    }
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
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, c_int, *mut $off, size_t) -> ssize_t);
                // The offset, when given, is the source's; the destination's position advances.
                traced_move(End::new(in_fd, offset), End { fd: out_fd, offset: None }, || {
                    real(out_fd, in_fd, offset, count)
                })
            }
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
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!(
            "splice"
                as unsafe extern "C" fn(c_int, *mut loff_t, c_int, *mut loff_t, size_t, c_uint) -> ssize_t
        );
        // One end is a pipe, which is not a file: only the file end is recorded.
        traced_move(End::new(fd_in, off_in), End::new(fd_out, off_out), || {
            real(fd_in, off_in, fd_out, off_out, len, flags)
        })
    }
}
