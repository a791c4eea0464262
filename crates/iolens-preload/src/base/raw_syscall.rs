//! The recorder's own calls into libc and the kernel: the real functions behind the hooks
//! (`real!`), system calls that pass no hook (`sys`), `errno`, and the few file reads the
//! recorder makes for itself (`stat_of`, `fd_link`, `program_head`). None of them is recorded,
//! and none re-enters a hook.

use iolens_record::program::ELF_PROBE_BYTES;
use libc::{c_char, c_int, c_void};

/// `dlsym(RTLD_NEXT)`: the next definition after ours, i.e. the real function.
pub(crate) const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

/// The real function `$name`, resolved once with dlsym(RTLD_NEXT) and cached. Unsafe to use:
/// the caller vouches that `$ty` is the C type of `$name`.
macro_rules! real {
    ($name:literal as $ty:ty) => {{
        static PTR: std::sync::atomic::AtomicPtr<libc::c_void> =
            std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
        let mut p = PTR.load(std::sync::atomic::Ordering::Relaxed);
        if p.is_null() {
            p = libc::dlsym($crate::base::raw_syscall::RTLD_NEXT, concat!($name, "\0").as_ptr().cast());
            PTR.store(p, std::sync::atomic::Ordering::Relaxed);
        }
        std::mem::transmute::<*mut libc::c_void, $ty>(p)
    }};
}
pub(crate) use real;

/// libc's `syscall`, past this library's own hook of that name (which hands file calls to the
/// hooks): the recorder's own system calls must not be recorded, nor re-enter the hooks.
#[inline]
pub(crate) fn sys() -> unsafe extern "C" fn(libc::c_long, ...) -> libc::c_long {
    // SAFETY: dlsym(RTLD_NEXT, "syscall") is libc's syscall, of this type.
    unsafe { real!("syscall" as unsafe extern "C" fn(libc::c_long, ...) -> libc::c_long) }
}

#[inline]
pub(crate) fn errno() -> c_int {
    // SAFETY: __errno_location returns the calling thread's errno, valid while it runs.
    unsafe { *libc::__errno_location() }
}

#[inline]
pub(crate) fn set_errno(e: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = e }
}

/// What the kernel says of what `fd` refers to (fstat has no hook); `None` when it fails.
pub(crate) fn stat_of(fd: c_int) -> Option<libc::stat> {
    // SAFETY: fstat writes a `struct stat`, for which all zeroes is a valid value.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some(st)
    }
}

/// Writes `v` in decimal at `out[*at..]`, advancing `at`.
pub(crate) fn push_decimal(out: &mut [u8], at: &mut usize, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in (0..n).rev() {
        out[*at] = digits[i];
        *at += 1;
    }
}

/// `/proc/self/fd/<fd>`, NUL-terminated, in `out`.
pub(crate) fn proc_fd_path(fd: c_int, out: &mut [u8; 40]) {
    let mut at = 0;
    for b in b"/proc/self/fd/" {
        out[at] = *b;
        at += 1;
    }
    push_decimal(out, &mut at, fd as u64);
}

/// What `/proc/self/fd/<fd>` points to, written into `out` (not NUL-terminated); its length.
pub(crate) fn fd_link(fd: c_int, out: &mut [u8; 4096]) -> Option<usize> {
    let mut link = [0u8; 40];
    proc_fd_path(fd, &mut link);
    // SAFETY: `link` is NUL-terminated, and readlinkat writes at most `out.len() - 1` bytes.
    let n = unsafe {
        sys()(libc::SYS_readlinkat, libc::AT_FDCWD, link.as_ptr(), out.as_mut_ptr(), out.len() - 1)
    };
    (n > 0).then_some(n as usize)
}

/// Reads the first bytes of the program `path` into `head`: of a regular file, read without
/// blocking (a FIFO named as the program must not hang an exec); their number.
///
/// # Safety
/// `path` is a NUL-terminated string.
pub(crate) unsafe fn program_head(path: *const c_char, head: &mut [u8; ELF_PROBE_BYTES]) -> usize {
    // SAFETY: `path` is NUL-terminated (the caller's promise).
    let fd = unsafe {
        sys()(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY,
        )
    } as c_int;
    if fd < 0 {
        return 0;
    }
    let mut len = 0;
    if stat_of(fd).is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG) {
        while len < head.len() {
            // SAFETY: reads at most the room left in `head`.
            let n = unsafe { sys()(libc::SYS_pread64, fd, head[len..].as_mut_ptr(), head.len() - len, len) };
            if n <= 0 {
                break;
            }
            len += n as usize;
        }
    }
    // SAFETY: closes the descriptor opened above.
    unsafe { sys()(libc::SYS_close, fd) };
    len
}
