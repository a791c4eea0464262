//! The MPI library as this one meets it without linking it: the real functions, reached
//! through the profiling interface (`PMPI_*`) and looked up when first needed, and the ABI.
//! MPI handles are opaque words here: Open MPI's are pointers, MPICH's (and its derivatives')
//! are ints, which the x86-64 and AArch64 conventions pass in a full register either way; only
//! where a handle is read from memory (requests) or made up (`MPI_COMM_WORLD`, `MPI_BYTE`)
//! does the library's ABI matter, and it is told by Open MPI's exported `ompi_mpi_comm_world`.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::*};

use libc::{c_char, c_int, c_void};

use crate::base::raw_syscall::{sys, RTLD_NEXT};

/// An MPI handle (communicator, datatype, file, info, request) as passed by value.
pub(crate) type Handle = usize;
/// `MPI_Offset`: a 64-bit signed integer in every implementation.
pub(crate) type MpiOffset = i64;
/// `MPI_Count`, the count of MPI 4's large-count (`_c`) functions: 64-bit signed as well.
pub(crate) type MpiCount = i64;

pub(crate) const MPI_SUCCESS: c_int = 0;
pub(crate) const MPI_UNDEFINED: c_int = -32766;

/// The MPI library's ABI: 0 = not known yet, 1 = Open MPI, 2 = MPICH and its derivatives.
static ABI: AtomicU8 = AtomicU8::new(0);

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Abi {
    OpenMpi,
    Mpich,
}

pub(crate) fn abi() -> Abi {
    match ABI.load(Relaxed) {
        1 => Abi::OpenMpi,
        2 => Abi::Mpich,
        _ => {
            // SAFETY: a lookup by a NUL-terminated name.
            let ompi = unsafe { !find_object(c"ompi_mpi_comm_world".as_ptr()).is_null() };
            ABI.store(if ompi { 1 } else { 2 }, Relaxed);
            if ompi {
                Abi::OpenMpi
            } else {
                Abi::Mpich
            }
        }
    }
}

/// `MPI_COMM_WORLD` of the library's ABI.
pub(crate) unsafe fn comm_world() -> Handle {
    // SAFETY: a lookup by a NUL-terminated name.
    unsafe {
        match abi() {
            Abi::OpenMpi => find_object(c"ompi_mpi_comm_world".as_ptr()) as Handle,
            Abi::Mpich => 0x4400_0000,
        }
    }
}

/// `MPI_BYTE` of the library's ABI, looked up once: it is asked for on every read (dlsym
/// takes the loader's lock).
pub(crate) unsafe fn mpi_byte() -> Handle {
    // SAFETY: a lookup by a NUL-terminated name.
    unsafe {
        static OMPI_BYTE: AtomicUsize = AtomicUsize::new(0);
        match abi() {
            Abi::OpenMpi => {
                let mut byte = OMPI_BYTE.load(Relaxed);
                if byte == 0 {
                    byte = find_object(c"ompi_mpi_byte".as_ptr()) as Handle;
                    OMPI_BYTE.store(byte, Relaxed);
                }
                byte
            }
            Abi::Mpich => 0x4c00_010d,
        }
    }
}

/// What the library's exported pointer variable `name` (`MPI_F_STATUS_IGNORE`, …) points to;
/// null if the library has none. The variable is looked up once (`variable` caches its address),
/// its value read each time: MPICH sets its Fortran ones only when its Fortran binding starts.
pub(crate) unsafe fn exported_pointer(variable: &AtomicUsize, name: &std::ffi::CStr) -> *const c_int {
    // SAFETY: a lookup by a NUL-terminated name; a non-null address is the library's exported
    // pointer variable of that name.
    unsafe {
        const NOT_LOOKED_UP: usize = 1;
        let mut address = variable.load(Relaxed);
        if address == NOT_LOOKED_UP {
            address = find_object(name.as_ptr()) as usize;
            variable.store(address, Relaxed);
        }
        if address == 0 {
            std::ptr::null()
        } else {
            *(address as *const *const c_int)
        }
    }
}

/// Request `i` of an array of requests: 8-byte pointers in Open MPI, 4-byte ints in MPICH.
pub(crate) unsafe fn request_at(requests: *const c_void, i: usize) -> u64 {
    // SAFETY: `requests` is null or an array of at least `i + 1` of the library's requests (the
    // caller's promise).
    unsafe {
        if requests.is_null() {
            return 0;
        }
        match abi() {
            Abi::OpenMpi => *requests.cast::<u64>().add(i),
            Abi::Mpich => *requests.cast::<u32>().add(i) as u64,
        }
    }
}

/// Shared objects that may hold the MPI library when a program loaded it privately
/// (`RTLD_LOCAL`, as Python modules do), where neither RTLD_NEXT nor the global scope finds it.
const MPI_SONAMES: [&std::ffi::CStr; 5] =
    [c"libmpi.so.40", c"libmpi.so.12", c"libmpich.so.12", c"libmpi.so", c"libmpich.so"];

/// The MPI library's definition of the function `name`: after ours, in the global scope, or
/// in an MPI library loaded privately; null when there is none.
pub(crate) unsafe fn find_symbol(name: *const c_char) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated (the caller's promise).
    unsafe {
        let p = libc::dlsym(RTLD_NEXT, name);
        if !p.is_null() {
            return p;
        }
        find_object(name)
    }
}

/// The object `name` (Open MPI's predefined handles) as the program uses it: first in the
/// global scope, since a program referring to it may hold the copy everyone uses (a copy
/// relocation), the library's own then being left unused; else in a private MPI library.
unsafe fn find_object(name: *const c_char) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated (the caller's promise); each library handle is released
    // after its one lookup.
    unsafe {
        let p = libc::dlsym(libc::RTLD_DEFAULT, name);
        if !p.is_null() {
            return p;
        }
        for soname in MPI_SONAMES {
            let lib = libc::dlopen(soname.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
            if !lib.is_null() {
                let p = libc::dlsym(lib, name);
                libc::dlclose(lib);
                if !p.is_null() {
                    return p;
                }
            }
        }
        std::ptr::null_mut()
    }
}

/// The profiling entry point `name` (NUL-terminated), which the hook of the same MPI function
/// must forward to. A program that calls an MPI function has the library loaded, so it is
/// there; if it is not, going on would call address 0: the program is stopped with the reason.
pub(crate) unsafe fn pmpi_symbol(name: &'static str) -> *mut c_void {
    // SAFETY: `name` ends with a NUL (the `pmpi!` macro adds it); the message is written from a
    // static string.
    unsafe {
        let p = find_symbol(name.as_ptr().cast());
        if p.is_null() {
            let msg = b"iolens preload: the MPI library's profiling interface (PMPI_*) cannot be found; run without the iolens preload\n";
            sys()(libc::SYS_write, 2, msg.as_ptr(), msg.len());
            libc::abort();
        }
        p
    }
}

/// The real `PMPI_…` function, resolved once and cached.
macro_rules! pmpi {
    ($name:literal as $ty:ty) => {{
        static PTR: std::sync::atomic::AtomicPtr<libc::c_void> =
            std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
        let mut p = PTR.load(std::sync::atomic::Ordering::Relaxed);
        if p.is_null() {
            p = $crate::mpi::abi::pmpi_symbol(concat!($name, "\0"));
            PTR.store(p, std::sync::atomic::Ordering::Relaxed);
        }
        std::mem::transmute::<*mut libc::c_void, $ty>(p)
    }};
}
pub(crate) use pmpi;

/// Takes the library's ABI to be `abi` (1 = Open MPI, 2 = MPICH, 0 = not known yet): for tests,
/// which run without an MPI library.
#[cfg(test)]
pub(crate) fn assume(abi: u8) {
    ABI.store(abi, Relaxed);
}
