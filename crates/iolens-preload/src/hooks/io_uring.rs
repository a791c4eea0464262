//! io_uring: its requests never pass through libc, so the hooks cannot see them; the rings are
//! noted instead, for the summary to say what it missed.
//!
//! A ring is noted when it is made through `syscall(__NR_io_uring_setup)` (the hook of
//! `syscall` is in `hooks::syscall`) (fio, the io-uring
//! crate), with the files later registered to it; rings made by raw system calls (liburing)
//! are found among the descriptors at exit.

use libc::{c_int, c_long};

use iolens_record::event::{IoOp, FLAG_IO_URING_SEEN, NO_FILE};

use crate::base::clock::now_ns;
use crate::base::fd_table::NOT_A_FILE;
use crate::base::raw_syscall::{errno, fd_link, set_errno, sys};
use crate::record::{path_of, record_flagged};
use crate::stream::enter_guard;

/// io_uring_register's opcodes that register files: an array of descriptors, or (FILES2) a
/// `struct io_uring_rsrc_register` pointing to one.
const IORING_REGISTER_FILES: c_long = 2;
const IORING_REGISTER_FILES2: c_long = 13;

/// Registering more files than a process can have open fails: a bound for reading the array.
const MAX_REGISTERED: usize = 1 << 20;

/// After `syscall(number, _, a2, a3, a4, …)` returned `ret`: notes a ring made by
/// `io_uring_setup`, or the files registered to one by `io_uring_register`.
pub(crate) unsafe fn after_syscall(number: c_long, ret: c_long, a2: c_long, a3: c_long, a4: c_long) {
    // SAFETY: for a successful io_uring_register of files, `a3` points to what the kernel just
    // read: an array of `a4` descriptors, or a `struct io_uring_rsrc_register` pointing to one.
    unsafe {
        if ret < 0 || (number != libc::SYS_io_uring_setup && number != libc::SYS_io_uring_register) {
            return;
        }
        let Some(_g) = enter_guard() else { return };
        let err = errno();
        if number == libc::SYS_io_uring_setup {
            record_flagged(IoOp::Other, NO_FILE, FLAG_IO_URING_SEEN, now_ns());
        } else if a2 == IORING_REGISTER_FILES || a2 == IORING_REGISTER_FILES2 {
            let (fds, count) = if a2 == IORING_REGISTER_FILES {
                (a3 as *const c_int, a4 as usize)
            } else {
                // struct io_uring_rsrc_register { u32 nr; u32 flags; u64 resv2; u64 data; u64 tags; }
                let reg = a3 as *const u32;
                (*(reg.add(4) as *const u64) as *const c_int, *reg as usize)
            };
            note_registered(fds, count.min(MAX_REGISTERED));
        }
        set_errno(err);
    }
}

/// Notes the files among descriptors registered to a ring (-1 marks an empty slot).
unsafe fn note_registered(fds: *const c_int, count: usize) {
    // SAFETY: `fds` is null or holds `count` descriptors (the caller's promise).
    unsafe {
        if fds.is_null() {
            return;
        }
        let t = now_ns();
        for i in 0..count {
            let file = path_of(*fds.add(i));
            if file != NOT_A_FILE {
                record_flagged(IoOp::Other, file, FLAG_IO_URING_SEEN, t);
            }
        }
    }
}

/// At exit, inside the hook guard: looks for io_uring instances among the process's descriptors
/// (their requests never pass through libc, so the summary must say they were missed).
pub(crate) unsafe fn at_exit() {
    // SAFETY: called inside the hook guard (the caller's promise); the directory is read into a
    // local buffer, at most its size, and closed.
    unsafe {
        let dir = sys()(
            libc::SYS_openat,
            libc::AT_FDCWD,
            c"/proc/self/fd".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        ) as c_int;
        if dir < 0 {
            return;
        }
        let mut buf = [0u8; 8192];
        let mut seen = false;
        'scan: loop {
            let n = sys()(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at < n as usize {
                let reclen = u16::from_le_bytes([buf[at + 16], buf[at + 17]]) as usize;
                let name = &buf[at + 19..at + reclen];
                let fd = name
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .fold(0i64, |v, b| v * 10 + (b - b'0') as i64);
                let mut target = [0u8; 4096];
                if name.first().is_some_and(u8::is_ascii_digit) {
                    if let Some(len) = fd_link(fd as c_int, &mut target) {
                        if target[..len].starts_with(b"anon_inode:[io_uring]") {
                            seen = true;
                            break 'scan;
                        }
                    }
                }
                at += reclen.max(1);
            }
        }
        sys()(libc::SYS_close, dir);
        if seen {
            let t = now_ns();
            record_flagged(IoOp::Other, NO_FILE, FLAG_IO_URING_SEEN, t);
        }
    }
}
