//! Copies between two descriptors inside the kernel: copy_file_range, sendfile.

use iolens_record::event::IoOp;
use libc::{c_int, off64_t, off_t, size_t, ssize_t};

#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut off64_t,
    fd_out: c_int,
    off_out: *mut off64_t,
    len: size_t,
    flags: u32,
) -> ssize_t {
    let real = real!(
        "copy_file_range"
            as unsafe extern "C" fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, u32) -> ssize_t
    );
    let offset = if off_out.is_null() { None } else { Some(*off_out as u64) };
    traced_fd_call!(IoOp::Copy, fd_out, offset, len, real(fd_in, off_in, fd_out, off_out, len, flags))
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
            traced_fd_call!(IoOp::Copy, out_fd, None, count, real(out_fd, in_fd, offset, count))
        }
    };
}
sendfile_hook!(sendfile, "sendfile", off_t);
sendfile_hook!(sendfile64, "sendfile64", off64_t);
