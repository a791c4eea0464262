//! Descriptor duplication and the closes besides close(): dup, dup2, dup3, fcntl(F_DUPFD*),
//! close_range, closefrom, closedir (and, through the `syscall` hook, the same calls made through
//! syscall()). A duplicate refers to the same file as its original, so it takes over the
//! original's path id and position; a replaced or closed number forgets its file. A close no
//! hook saw would leave its number naming the old file, and the next open no hook sees either
//! (mkstemp, opendir, socket, inside libc) would be counted under that name.
//!
//! The two numbers of a duplicated pair share one position in the kernel, but are tracked
//! each on its own here: offsets are exact while the program uses one of them (the usual
//! `dup2(log, 1); close(log)`), and may drift when it interleaves both.

use std::sync::atomic::Ordering::*;

use libc::{c_int, c_uint, c_ulong};

use crate::base::fd_table;
use crate::base::raw_syscall::real;
use crate::stream::STREAM_FD;

/// Our stream's number was taken over by the program: the stream is reopened at its next
/// write, elsewhere.
fn lost_stream(fd: c_int) {
    let _ = STREAM_FD.compare_exchange(fd, -1, AcqRel, Relaxed);
}

/// After a successful duplication of `old` onto `new`: `new` refers to `old`'s file.
fn duplicated(old: c_int, new: c_int) {
    if new == STREAM_FD.load(Relaxed) {
        lost_stream(new);
    }
    fd_table::duplicate(old, new);
}

// The table is updated whatever the hook guard says: a nested call changes the descriptors
// all the same, and nothing here records or allocates.

#[no_mangle]
pub unsafe extern "C" fn dup(old: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("dup" as unsafe extern "C" fn(c_int) -> c_int);
        let new = real(old);
        if new >= 0 {
            duplicated(old, new);
        }
        new
    }
}

#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("dup2" as unsafe extern "C" fn(c_int, c_int) -> c_int);
        let ret = real(old, new);
        if ret >= 0 {
            duplicated(old, new);
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("dup3" as unsafe extern "C" fn(c_int, c_int, c_int) -> c_int);
        let ret = real(old, new, flags);
        if ret >= 0 {
            duplicated(old, new);
        }
        ret
    }
}

// fcntl is variadic; its one optional argument is an int, a long or a pointer, which the
// x86-64 and AArch64 calling conventions pass in the same register as a fixed argument.
macro_rules! fcntl_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, c_int, ...) -> c_int);
                let ret = real(fd, cmd, arg);
                if ret >= 0 && (cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC) {
                    duplicated(fd, ret);
                }
                ret
            }
        }
    };
}
fcntl_hook!(fcntl, "fcntl");
fcntl_hook!(fcntl64, "fcntl64");

/// close_range on `first..=last`, sparing our stream's descriptor (a program closing every
/// descriptor, as daemons do, would otherwise take the stream, which a process that has
/// dropped its rights cannot open again).
unsafe fn close_range_sparing_stream(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    // SAFETY: close_range takes integers only; the real function is libc's, of this type.
    unsafe {
        let real = real!("close_range" as unsafe extern "C" fn(c_uint, c_uint, c_int) -> c_int);
        let stream = STREAM_FD.load(Relaxed);
        if stream < 0 || (stream as c_uint) < first || (stream as c_uint) > last {
            return real(first, last, flags);
        }
        let stream = stream as c_uint;
        let below = if stream > first { real(first, stream - 1, flags) } else { 0 };
        if below != 0 {
            return below;
        }
        if stream < last {
            real(stream + 1, last, flags)
        } else {
            0
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn close_range(first: c_uint, last: c_uint, flags: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let ret = close_range_sparing_stream(first, last, flags);
        // With CLOSE_RANGE_CLOEXEC the descriptors stay open (until an exec).
        if ret == 0 && flags & libc::CLOSE_RANGE_CLOEXEC as c_int == 0 {
            fd_table::forget_range(first, last);
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn closefrom(first: c_int) {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("closefrom" as unsafe extern "C" fn(c_int));
        let stream = STREAM_FD.load(Relaxed);
        if stream >= first.max(0) && close_range_sparing_stream(first.max(0) as c_uint, c_uint::MAX, 0) == 0 {
            fd_table::forget_range(first.max(0) as c_uint, c_uint::MAX);
            return;
        }
        real(first);
        fd_table::forget_range(first.max(0) as c_uint, c_uint::MAX);
    }
}

/// closedir closes the directory's descriptor inside libc; `fdopendir` may have been given
/// one the open hook named.
#[no_mangle]
pub unsafe extern "C" fn closedir(dir: *mut libc::DIR) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("closedir" as unsafe extern "C" fn(*mut libc::DIR) -> c_int);
        let fd = if dir.is_null() { -1 } else { libc::dirfd(dir) };
        let ret = real(dir);
        fd_table::forget(fd);
        ret
    }
}
