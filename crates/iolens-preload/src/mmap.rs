//! Mappings of traced files: noted, since accesses through memory are invisible.

use iolens_record::event::IoOp;
use libc::{c_int, c_void, off_t, size_t};

#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let real =
        real!("mmap" as unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void);
    if fd < 0 {
        return real(addr, len, prot, flags, fd, off);
    }
    traced_fd_call!(IoOp::Mmap, fd, Some(off as u64), len, real(addr, len, prot, flags, fd, off))
}
