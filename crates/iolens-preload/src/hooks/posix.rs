//! POSIX hooks: open, close, read and write in all their forms, sync and seek.

use std::sync::atomic::{AtomicU32, Ordering::*};

use iolens_record::event::{IoOp, Layer, NO_FILE, UNKNOWN_OFFSET};
use libc::{c_char, c_int, c_void, iovec, mode_t, off64_t, off_t, size_t, ssize_t};

use crate::base::clock::now_ns;
use crate::base::fd_table::{self, NOT_A_FILE};
use crate::base::raw_syscall::{errno, real, set_errno};
use crate::record::{define_path, iov_total, opened, record, result_of, traced_fd_call};
use crate::stream::{enter_guard, STREAM_FD};

macro_rules! open_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int);
                let Some(guard) = enter_guard() else { return real(path, flags, mode) };
                let t0 = now_ns();
                let fd = guard.lifted(|| real(path, flags, mode));
                opened(fd, path, libc::AT_FDCWD, flags, Layer::Posix, t0);
                fd
            }
        }
    };
}
open_hook!(open, "open");
open_hook!(open64, "open64");

macro_rules! openat_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dirfd: c_int,
            path: *const c_char,
            flags: c_int,
            mode: mode_t,
        ) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, *const c_char, c_int, mode_t) -> c_int);
                let Some(guard) = enter_guard() else { return real(dirfd, path, flags, mode) };
                let t0 = now_ns();
                let fd = guard.lifted(|| real(dirfd, path, flags, mode));
                opened(fd, path, dirfd, flags, Layer::Posix, t0);
                fd
            }
        }
    };
}
openat_hook!(openat, "openat");
openat_hook!(openat64, "openat64");

macro_rules! creat_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: mode_t) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*const c_char, mode_t) -> c_int);
                let Some(guard) = enter_guard() else { return real(path, mode) };
                let t0 = now_ns();
                let fd = guard.lifted(|| real(path, mode));
                opened(fd, path, libc::AT_FDCWD, 0, Layer::Posix, t0);
                fd
            }
        }
    };
}
creat_hook!(creat, "creat");
creat_hook!(creat64, "creat64");

// _FORTIFY_SOURCE builds call these instead of open/openat when the flags are not constant
// (Debian's tar, for one): without them such programs' opens would go unseen.
macro_rules! fortified_open_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*const c_char, c_int) -> c_int);
                let Some(guard) = enter_guard() else { return real(path, flags) };
                let t0 = now_ns();
                let fd = guard.lifted(|| real(path, flags));
                opened(fd, path, libc::AT_FDCWD, flags, Layer::Posix, t0);
                fd
            }
        }
    };
}
fortified_open_hook!(__open_2, "__open_2");
fortified_open_hook!(__open64_2, "__open64_2");

macro_rules! fortified_openat_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int);
                let Some(guard) = enter_guard() else { return real(dirfd, path, flags) };
                let t0 = now_ns();
                let fd = guard.lifted(|| real(dirfd, path, flags));
                opened(fd, path, dirfd, flags, Layer::Posix, t0);
                fd
            }
        }
    };
}
fortified_openat_hook!(__openat_2, "__openat_2");
fortified_openat_hook!(__openat64_2, "__openat64_2");

// The temporary-file makers open inside libc, where no open hook sees it; the template they
// were given holds the name they chose.
macro_rules! mkstemp_hook {
    ($name:ident, $real:literal $(, $arg:ident)*) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(template: *mut c_char $(, $arg: c_int)*) -> c_int {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(*mut c_char $(, mkstemp_hook!(@int $arg))*) -> c_int);
                let Some(guard) = enter_guard() else { return real(template $(, $arg)*) };
                let t0 = now_ns();
                let fd = guard.lifted(|| real(template $(, $arg)*));
                opened(fd, template, libc::AT_FDCWD, 0, Layer::Posix, t0);
                fd
            }
        }
    };
    (@int $arg:ident) => { c_int };
}
mkstemp_hook!(mkstemp, "mkstemp");
mkstemp_hook!(mkstemp64, "mkstemp64");
mkstemp_hook!(mkostemp, "mkostemp", flags);
mkstemp_hook!(mkostemp64, "mkostemp64", flags);
mkstemp_hook!(mkstemps, "mkstemps", suffix_len);
mkstemp_hook!(mkstemps64, "mkstemps64", suffix_len);
mkstemp_hook!(mkostemps, "mkostemps", suffix_len, flags);
mkstemp_hook!(mkostemps64, "mkostemps64", suffix_len, flags);

#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("close" as unsafe extern "C" fn(c_int) -> c_int);
        if fd >= 0 && fd == STREAM_FD.load(Relaxed) {
            return 0; // our stream: the program may believe it closed it
        }
        let Some(guard) = enter_guard() else {
            // A nested close is not recorded, but the number forgets its file all the same.
            let ret = real(fd);
            fd_table::forget(fd);
            return ret;
        };
        let file = fd_table::path(fd);
        let t0 = now_ns();
        let ret = guard.lifted(|| real(fd));
        let t1 = now_ns();
        let err = errno();
        if file != NOT_A_FILE && file != NO_FILE {
            record(IoOp::Close, Layer::Posix, file, UNKNOWN_OFFSET, 0, result_of(ret as i64, err), t0, t1);
        }
        fd_table::forget(fd);
        set_errno(err);
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: size_t) -> ssize_t {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("read" as unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t);
        traced_fd_call!(IoOp::Read, fd, None, count, real(fd, buf, count))
    }
}

#[no_mangle]
pub unsafe extern "C" fn __read_chk(fd: c_int, buf: *mut c_void, count: size_t, buflen: size_t) -> ssize_t {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("__read_chk" as unsafe extern "C" fn(c_int, *mut c_void, size_t, size_t) -> ssize_t);
        traced_fd_call!(IoOp::Read, fd, None, count, real(fd, buf, count, buflen))
    }
}

#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("write" as unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t);
        traced_fd_call!(IoOp::Write, fd, None, count, real(fd, buf, count))
    }
}

macro_rules! pread_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, buf: *mut c_void, count: size_t, offset: $off) -> ssize_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, *mut c_void, size_t, $off) -> ssize_t);
                traced_fd_call!(IoOp::Read, fd, Some(offset as u64), count, real(fd, buf, count, offset))
            }
        }
    };
}
pread_hook!(pread, "pread", off_t);
pread_hook!(pread64, "pread64", off64_t);

macro_rules! pread_chk_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            buf: *mut c_void,
            count: size_t,
            offset: $off,
            buflen: size_t,
        ) -> ssize_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real =
                    real!($real as unsafe extern "C" fn(c_int, *mut c_void, size_t, $off, size_t) -> ssize_t);
                traced_fd_call!(
                    IoOp::Read,
                    fd,
                    Some(offset as u64),
                    count,
                    real(fd, buf, count, offset, buflen)
                )
            }
        }
    };
}
pread_chk_hook!(__pread_chk, "__pread_chk", off_t);
pread_chk_hook!(__pread64_chk, "__pread64_chk", off64_t);

macro_rules! pwrite_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            buf: *const c_void,
            count: size_t,
            offset: $off,
        ) -> ssize_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real =
                    real!($real as unsafe extern "C" fn(c_int, *const c_void, size_t, $off) -> ssize_t);
                traced_fd_call!(IoOp::Write, fd, Some(offset as u64), count, real(fd, buf, count, offset))
            }
        }
    };
}
pwrite_hook!(pwrite, "pwrite", off_t);
pwrite_hook!(pwrite64, "pwrite64", off64_t);

#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("readv" as unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t);
        traced_fd_call!(IoOp::Read, fd, None, iov_total(iov, n), real(fd, iov, n))
    }
}

#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("writev" as unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t);
        traced_fd_call!(IoOp::Write, fd, None, iov_total(iov, n), real(fd, iov, n))
    }
}

macro_rules! preadv_hook {
    ($name:ident, $real:literal, $op:expr, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, iov: *const iovec, n: c_int, offset: $off) -> ssize_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, *const iovec, c_int, $off) -> ssize_t);
                traced_fd_call!($op, fd, Some(offset as u64), iov_total(iov, n), real(fd, iov, n, offset))
            }
        }
    };
}
preadv_hook!(preadv, "preadv", IoOp::Read, off_t);
preadv_hook!(preadv64, "preadv64", IoOp::Read, off64_t);
preadv_hook!(pwritev, "pwritev", IoOp::Write, off_t);
preadv_hook!(pwritev64, "pwritev64", IoOp::Write, off64_t);

macro_rules! preadv2_hook {
    ($name:ident, $real:literal, $op:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            iov: *const iovec,
            n: c_int,
            offset: off_t,
            flags: c_int,
        ) -> ssize_t {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real =
                    real!($real as unsafe extern "C" fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t);
                // offset -1 means "the current position", like readv.
                let explicit = if offset == -1 { None } else { Some(offset as u64) };
                traced_fd_call!($op, fd, explicit, iov_total(iov, n), real(fd, iov, n, offset, flags))
            }
        }
    };
}
preadv2_hook!(preadv2, "preadv2", IoOp::Read);
preadv2_hook!(pwritev2, "pwritev2", IoOp::Write);

#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("fsync" as unsafe extern "C" fn(c_int) -> c_int);
        traced_fd_call!(IoOp::Fsync, fd, Some(UNKNOWN_OFFSET), 0u64, real(fd))
    }
}

#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("fdatasync" as unsafe extern "C" fn(c_int) -> c_int);
        traced_fd_call!(IoOp::Fdatasync, fd, Some(UNKNOWN_OFFSET), 0u64, real(fd))
    }
}

#[no_mangle]
pub unsafe extern "C" fn sync_file_range(fd: c_int, offset: off64_t, nbytes: off64_t, flags: u32) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("sync_file_range" as unsafe extern "C" fn(c_int, off64_t, off64_t, u32) -> c_int);
        traced_fd_call!(IoOp::SyncRange, fd, Some(offset as u64), nbytes, real(fd, offset, nbytes, flags))
    }
}

#[no_mangle]
pub unsafe extern "C" fn syncfs(fd: c_int) -> c_int {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("syncfs" as unsafe extern "C" fn(c_int) -> c_int);
        traced_fd_call!(IoOp::SyncFs, fd, Some(UNKNOWN_OFFSET), 0u64, real(fd))
    }
}

/// The path id of "/", which `sync` is recorded on (defined once per stream).
static ROOT_PATH: AtomicU32 = AtomicU32::new(NO_FILE);

/// sync names no file: it writes out every file system, and is recorded as a syncfs of "/".
#[no_mangle]
pub unsafe extern "C" fn sync() {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("sync" as unsafe extern "C" fn());
        let Some(guard) = enter_guard() else { return real() };
        let mut root = ROOT_PATH.load(Relaxed);
        if root == NO_FILE {
            root = define_path(c"/".as_ptr(), libc::AT_FDCWD);
            ROOT_PATH.store(root, Relaxed);
        }
        let t0 = now_ns();
        guard.lifted(|| real());
        let t1 = now_ns();
        record(IoOp::SyncFs, Layer::Posix, root, UNKNOWN_OFFSET, 0, 0, t0, t1);
    }
}

/// In a forked child, which defines its own paths: "/" among them.
pub(crate) fn after_fork() {
    ROOT_PATH.store(NO_FILE, Relaxed);
}

macro_rules! lseek_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, offset: $off, whence: c_int) -> $off {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!($real as unsafe extern "C" fn(c_int, $off, c_int) -> $off);
                let ret =
                    traced_fd_call!(IoOp::Seek, fd, Some(offset as u64), 0u64, real(fd, offset, whence));
                fd_table::set_offset(fd, if ret >= 0 { ret as u64 } else { UNKNOWN_OFFSET });
                ret
            }
        }
    };
}
lseek_hook!(lseek, "lseek", off_t);
lseek_hook!(lseek64, "lseek64", off64_t);
