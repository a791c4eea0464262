//! io_uring: its requests never pass through libc, so the hooks cannot see them; the process
//! is noted instead, for the summary to say what it missed.

use libc::c_int;

use crate::clock::now_ns;
use crate::record::{fd_link, record_flagged};
use iolens_record::event::{IoOp, FLAG_IO_URING_SEEN, NO_FILE};

/// Looks for io_uring instances among the process's descriptors (their requests never pass
/// through libc, so the summary must say they were missed).
pub(crate) unsafe fn note_io_uring() {
    let dir = libc::syscall(
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
        let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
        if n <= 0 {
            break;
        }
        let mut at = 0usize;
        while at < n as usize {
            let reclen = u16::from_le_bytes([buf[at + 16], buf[at + 17]]) as usize;
            let name = &buf[at + 19..at + reclen];
            let fd =
                name.iter().take_while(|b| b.is_ascii_digit()).fold(0i64, |v, b| v * 10 + (b - b'0') as i64);
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
    libc::syscall(libc::SYS_close, dir);
    if seen {
        let t = now_ns();
        record_flagged(IoOp::Other, NO_FILE, FLAG_IO_URING_SEEN, t);
    }
}
