//! The hook of `syscall()`. File calls made through it instead of their libc wrappers are each
//! handed to the hook of its wrapper, which makes the same system call with the same result and errno
//! convention (-1 and errno set), so it is recorded as the wrapper's call would be.
//!
//! Calls made by inline system-call instructions (static binaries, Go, liburing's own
//! wrappers) never pass through libc and stay unseen; rings are noted (`io_uring`), static
//! programs are named when they are started (`process`), Go programs by their start marker
//! (`stream`). A raw `exit_group` writes out the buffers first, as `_exit` does (`process`), and
//! rings made or given files through `syscall()` are noted (`io_uring`).

use libc::{c_char, c_int, c_long, c_uint, c_ulong, c_void, iovec, loff_t, mode_t, off64_t, off_t, size_t};

use crate::base::raw_syscall::real;
use crate::hooks::{copy, dup, io_uring, posix, process};

// syscall is variadic; its arguments are longs or pointers, which the x86-64 and AArch64
// calling conventions pass as they would fixed arguments, so all six are forwarded (as glibc's
// own syscall reads all six).
#[no_mangle]
pub unsafe extern "C" fn syscall(
    number: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
    a6: c_long,
) -> c_long {
    // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = real!("syscall" as unsafe extern "C" fn(c_long, ...) -> c_long);
        if number == libc::SYS_exit_group {
            // No exit handler runs after it: what is buffered is written out first, as _exit does.
            process::before_exit();
        }
        if let Some(ret) = file_call(number, [a1, a2, a3, a4, a5, a6]) {
            return ret;
        }
        let ret = real(number, a1, a2, a3, a4, a5, a6);
        io_uring::after_syscall(number, ret, a2, a3, a4);
        ret
    }
}

/// Makes the call `number` with arguments `a` through its wrapper's hook; `None` when it is not
/// a file call.
unsafe fn file_call(number: c_long, a: [c_long; 6]) -> Option<c_long> {
    // SAFETY: the arguments are the program's `syscall` arguments for `number` (the caller's
    // promise), handed to the wrapper's hook with that call's types.
    unsafe {
        let fd = a[0] as c_int;
        let ret = match number {
            libc::SYS_read => posix::read(fd, a[1] as *mut c_void, a[2] as size_t) as c_long,
            libc::SYS_write => posix::write(fd, a[1] as *const c_void, a[2] as size_t) as c_long,
            libc::SYS_pread64 => {
                posix::pread64(fd, a[1] as *mut c_void, a[2] as size_t, a[3] as off64_t) as c_long
            }
            libc::SYS_pwrite64 => {
                posix::pwrite64(fd, a[1] as *const c_void, a[2] as size_t, a[3] as off64_t) as c_long
            }
            libc::SYS_readv => posix::readv(fd, a[1] as *const iovec, a[2] as c_int) as c_long,
            libc::SYS_writev => posix::writev(fd, a[1] as *const iovec, a[2] as c_int) as c_long,
            // The offset's low and high halves: on 64-bit targets the low one holds all of it.
            libc::SYS_preadv => {
                posix::preadv64(fd, a[1] as *const iovec, a[2] as c_int, a[3] as off64_t) as c_long
            }
            libc::SYS_pwritev => {
                posix::pwritev64(fd, a[1] as *const iovec, a[2] as c_int, a[3] as off64_t) as c_long
            }
            libc::SYS_preadv2 => {
                posix::preadv2(fd, a[1] as *const iovec, a[2] as c_int, a[3] as off_t, a[5] as c_int)
                    as c_long
            }
            libc::SYS_pwritev2 => {
                posix::pwritev2(fd, a[1] as *const iovec, a[2] as c_int, a[3] as off_t, a[5] as c_int)
                    as c_long
            }
            libc::SYS_openat => {
                posix::openat(fd, a[1] as *const c_char, a[2] as c_int, a[3] as mode_t) as c_long
            }
            #[cfg(target_arch = "x86_64")]
            libc::SYS_open => posix::open(a[0] as *const c_char, a[1] as c_int, a[2] as mode_t) as c_long,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_creat => posix::creat(a[0] as *const c_char, a[1] as mode_t) as c_long,
            libc::SYS_lseek => posix::lseek64(fd, a[1] as off64_t, a[2] as c_int) as c_long,
            // The descriptor table forgets what they close; our stream is spared, as in the wrappers.
            libc::SYS_close => posix::close(fd) as c_long,
            libc::SYS_close_range => {
                dup::close_range(a[0] as c_uint, a[1] as c_uint, a[2] as c_int) as c_long
            }
            libc::SYS_fsync => posix::fsync(fd) as c_long,
            libc::SYS_fdatasync => posix::fdatasync(fd) as c_long,
            libc::SYS_sync_file_range => {
                posix::sync_file_range(fd, a[1] as off64_t, a[2] as off64_t, a[3] as c_uint) as c_long
            }
            libc::SYS_syncfs => posix::syncfs(fd) as c_long,
            libc::SYS_sync => {
                posix::sync();
                0
            }
            libc::SYS_dup => dup::dup(fd) as c_long,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_dup2 => dup::dup2(fd, a[1] as c_int) as c_long,
            libc::SYS_dup3 => dup::dup3(fd, a[1] as c_int, a[2] as c_int) as c_long,
            libc::SYS_copy_file_range => copy::copy_file_range(
                fd,
                a[1] as *mut off64_t,
                a[2] as c_int,
                a[3] as *mut off64_t,
                a[4] as size_t,
                a[5] as c_uint,
            ) as c_long,
            libc::SYS_sendfile => {
                copy::sendfile64(fd, a[1] as c_int, a[2] as *mut off64_t, a[3] as size_t) as c_long
            }
            libc::SYS_splice => copy::splice(
                fd,
                a[1] as *mut loff_t,
                a[2] as c_int,
                a[3] as *mut loff_t,
                a[4] as size_t,
                a[5] as c_uint,
            ) as c_long,
            libc::SYS_ioctl => copy::ioctl(fd, a[1] as c_ulong, a[2] as *mut c_void) as c_long,
            _ => return None,
        };
        Some(ret)
    }
}
