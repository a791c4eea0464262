//! Mappings of traced files: noted, since accesses through memory are invisible.

use iolens_record::event::IoOp;
use libc::{c_int, c_void, off64_t, off_t, size_t};

use crate::base::raw_syscall::real;
use crate::record::traced_fd_call;

macro_rules! mmap_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            addr: *mut c_void,
            len: size_t,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: $off,
        ) -> *mut c_void {
            // SAFETY: a hook's contract (hooks/mod.rs): the program's arguments, passed on
            // unchanged.
            unsafe {
                let real = real!(
                    $real
                        as unsafe extern "C" fn(
                            *mut c_void,
                            size_t,
                            c_int,
                            c_int,
                            c_int,
                            $off,
                        ) -> *mut c_void
                );
                if fd < 0 {
                    return real(addr, len, prot, flags, fd, off);
                }
                traced_fd_call!(IoOp::Mmap, fd, Some(off as u64), len, real(addr, len, prot, flags, fd, off))
            }
        }
    };
}
mmap_hook!(mmap, "mmap", off_t);
// Programs built with 64-bit offsets (_FILE_OFFSET_BITS=64: Python, fio) call this name.
mmap_hook!(mmap64, "mmap64", off64_t);
