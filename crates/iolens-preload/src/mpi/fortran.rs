//! The Fortran bindings of the MPI-IO functions `mpi::hooks` records.
//!
//! Open MPI's Fortran wrappers (`libmpi_mpifh`: `mpif.h` and `use mpi`; `libmpi_usempif08`:
//! `use mpi_f08`, through `ompi_*_f`) call the `PMPI_` functions directly, so a program written
//! in Fortran never reaches the C hooks: its open, close, sync, reads and writes (blocking,
//! nonblocking and split collective) and the completions of nonblocking ones (`MPI_WAIT`,
//! `MPI_TEST` and their `ALL`/`ANY`/`SOME` forms, `MPI_REQUEST_FREE`) are hooked here under
//! every name the libraries export (`mpi_x_`, `mpi_x__`, `mpi_x`, `MPI_X`, Open MPI's `ompi_x_f`). MPICH's wrappers (`libmpichfort`) call the C functions, whose hooks
//! see that a Fortran hook is already recording (the MPI-IO nesting mark) and stay out, except
//! its `use mpi_f08` open, close, sync and completions (`mpi_file_x_f08_`, `mpi_wait_f08_`, …),
//! which call `PMPI_` and are hooked (Open MPI's `MPI_Test` in `mpi_f08` calls `pmpi_test_`).
//!
//! `MPI_Init`, `MPI_Init_thread` and `MPI_Finalize` are hooked in Fortran too (MPICH's
//! `use mpi_f08` ones, `mpi_x_f08_`, call `PMPI_` as well): they mark the rank's stream and
//! measure its clock (`mpi::clock`), once however the bindings nest.
//!
//! The completions of nonblocking calls are in [`fortran_completion`](super::fortran_completion).
//!
//! A Fortran hook forwards to the library's function of the same name and converts the
//! handles (`MPI_File_f2c`, `MPI_Type_f2c`) only to measure the call. A read's Fortran status
//! (a blocking read's, that of the completion of a nonblocking one, `MPI_WAIT` … `MPI_TESTSOME`,
//! or of a split collective's `_END`) is converted (`MPI_Status_f2c`) to tell the bytes it
//! moved, as in C (one of ours, or an array of them, stands in for `MPI_STATUS(ES)_IGNORE`).

use libc::{c_char, c_int, c_void};

use crate::base::clock::now_ns;
use crate::base::guard::ENABLED;
use crate::mpi::abi::{abi, pmpi, Abi, Handle, MpiOffset};
use crate::mpi::clock::{after_init, before_finalize};
use crate::mpi::pending::{blocking, closed, opened, posted, split_begin, split_end, synced, At, MpiNest};
use crate::mpi::status::Status;
use iolens_record::event::IoOp;

/// A Fortran `INTEGER` as MPI passes it (`MPI_Fint`).
pub(super) type Fint = c_int;

/// `MPI_FILE_OPEN(comm, filename, amode, info, fh, ierror)` and the filename's hidden length.
type OpenFn =
    unsafe extern "C" fn(*const Fint, *const c_char, *const Fint, *const Fint, *mut Fint, *mut Fint, usize);
/// `(fh, buf, count, datatype, status or request, ierror)`: reads and writes at a file pointer.
type IoFn = unsafe extern "C" fn(*mut Fint, *mut c_void, *const Fint, *const Fint, *mut Fint, *mut Fint);
/// `(fh, offset, buf, count, datatype, status or request, ierror)`: reads and writes at an offset.
type IoAtFn = unsafe extern "C" fn(
    *mut Fint,
    *const MpiOffset,
    *mut c_void,
    *const Fint,
    *const Fint,
    *mut Fint,
    *mut Fint,
);
/// `(fh, buf, count, datatype, ierror)`: split collectives begun at a file pointer.
type BeginFn = unsafe extern "C" fn(*mut Fint, *mut c_void, *const Fint, *const Fint, *mut Fint);
/// `(fh, offset, buf, count, datatype, ierror)`: split collectives begun at an offset.
type BeginAtFn =
    unsafe extern "C" fn(*mut Fint, *const MpiOffset, *mut c_void, *const Fint, *const Fint, *mut Fint);
/// `(fh, buf, status, ierror)`: split collectives ended.
type EndFn = unsafe extern "C" fn(*mut Fint, *mut c_void, *mut Fint, *mut Fint);

/// The library's Fortran function `$name`, resolved once and cached.
macro_rules! fortran_real {
    ($name:ident as $ty:ty) => {{
        static PTR: std::sync::atomic::AtomicPtr<libc::c_void> =
            std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
        let mut p = PTR.load(std::sync::atomic::Ordering::Relaxed);
        if p.is_null() {
            p = crate::mpi::abi::pmpi_symbol(concat!(stringify!($name), "\0"));
            PTR.store(p, std::sync::atomic::Ordering::Relaxed);
        }
        std::mem::transmute::<*mut libc::c_void, $ty>(p)
    }};
}

pub(super) use fortran_real;

/// The C handle of a Fortran file handle.
unsafe fn c_file(fh: *const Fint) -> Handle {
    // SAFETY: `fh` is null or the program's Fortran file handle; PMPI_File_f2c takes it by value.
    unsafe {
        if fh.is_null() {
            return 0;
        }
        let f2c = pmpi!("PMPI_File_f2c" as unsafe extern "C" fn(Fint) -> Handle);
        f2c(*fh)
    }
}

/// The C handle of a Fortran datatype.
unsafe fn c_datatype(datatype: *const Fint) -> Handle {
    // SAFETY: `datatype` is null or the program's Fortran datatype; PMPI_Type_f2c takes it by
    // value.
    unsafe {
        if datatype.is_null() {
            return 0;
        }
        match abi() {
            Abi::OpenMpi => {
                let f2c = pmpi!("PMPI_Type_f2c" as unsafe extern "C" fn(Fint) -> Handle);
                f2c(*datatype)
            }
            // MPICH's datatypes are integers, the same in C and Fortran (its MPI_Type_f2c is a cast).
            Abi::Mpich => *datatype as u32 as Handle,
        }
    }
}

/// The C handle of a Fortran request, as the pending table keys it.
pub(super) unsafe fn c_request(request: *const Fint) -> u64 {
    // SAFETY: `request` is null or the program's Fortran request; PMPI_Request_f2c takes it by
    // value.
    unsafe {
        if request.is_null() {
            return 0;
        }
        match abi() {
            Abi::OpenMpi => {
                let f2c = pmpi!("PMPI_Request_f2c" as unsafe extern "C" fn(Fint) -> Handle);
                f2c(*request) as u64
            }
            // MPICH's requests are integers, the same in C and Fortran.
            Abi::Mpich => *request as u32 as u64,
        }
    }
}

/// The error code a Fortran call returned in its last argument.
pub(super) unsafe fn ierror(ierr: *const Fint) -> c_int {
    // SAFETY: `ierr` is null or the program's error argument.
    unsafe {
        if ierr.is_null() {
            0
        } else {
            *ierr
        }
    }
}

pub(super) unsafe fn value(p: *const Fint) -> i64 {
    // SAFETY: `p` is null or a Fortran integer argument of the program's.
    unsafe {
        if p.is_null() {
            0
        } else {
            i64::from(*p)
        }
    }
}

/// A Fortran string (`len` bytes, blank-padded, no NUL) as a NUL-terminated C string in `out`,
/// cut to fit.
unsafe fn c_string(s: *const c_char, len: usize, out: &mut [c_char; 4096]) {
    // SAFETY: `s` holds `len` bytes (the Fortran binding's hidden length) unless null; the copy
    // fits `out`, which keeps room for the NUL.
    unsafe {
        // The hidden length is a size_t from gfortran 8 on, an int before: only its low half counts.
        let mut n = (len as u32 as usize).min(out.len() - 1);
        if s.is_null() {
            n = 0;
        }
        while n > 0 && *s.add(n - 1) == b' ' as c_char {
            n -= 1;
        }
        std::ptr::copy_nonoverlapping(s, out.as_mut_ptr(), n);
        out[n] = 0;
    }
}

macro_rules! fortran_init {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(ierr: *mut Fint) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as unsafe extern "C" fn(*mut Fint));
                real(ierr);
                if ierror(ierr) == 0 {
                    after_init();
                }
            }
        }
    )+};
}

macro_rules! fortran_init_thread {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(required: *const Fint, provided: *mut Fint, ierr: *mut Fint) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint));
                real(required, provided, ierr);
                if ierror(ierr) == 0 {
                    after_init();
                }
            }
        }
    )+};
}

macro_rules! fortran_finalize {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(ierr: *mut Fint) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as unsafe extern "C" fn(*mut Fint));
                before_finalize();
                real(ierr)
            }
        }
    )+};
}

macro_rules! fortran_open {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            comm: *const Fint,
            filename: *const c_char,
            amode: *const Fint,
            info: *const Fint,
            fh: *mut Fint,
            ierr: *mut Fint,
            filename_len: usize,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as OpenFn
                );
                let Some(_nest) = MpiNest::enter() else {
                    return real(comm, filename, amode, info, fh, ierr, filename_len);
                };
                let t0 = now_ns();
                real(comm, filename, amode, info, fh, ierr, filename_len);
                let t1 = now_ns();
                if filename.is_null() || fh.is_null() {
                    return;
                }
                let mut name = [0 as c_char; 4096];
                c_string(filename, filename_len, &mut name);
                // A failed open leaves the handle undefined: it is not converted.
                let ret = ierror(ierr);
                opened(name.as_ptr(), ret, if ret == 0 { c_file(fh) } else { 0 }, t0, t1);
            }
        }
    )+};
}

macro_rules! fortran_close {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: *mut Fint, ierr: *mut Fint) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as unsafe extern "C" fn(*mut Fint, *mut Fint));
                let Some(_nest) = MpiNest::enter() else { return real(fh, ierr) };
                closed(c_file(fh), || {
                    real(fh, ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

macro_rules! fortran_sync {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: *mut Fint, ierr: *mut Fint) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as unsafe extern "C" fn(*mut Fint, *mut Fint));
                let Some(_nest) = MpiNest::enter() else { return real(fh, ierr) };
                synced(c_file(fh), || {
                    real(fh, ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

macro_rules! fortran_blocking {
    ($op:expr, $at:expr; $($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: *mut Fint,
            buf: *mut c_void,
            count: *const Fint,
            datatype: *const Fint,
            status: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as IoFn
                );
                if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) {
                    return real(fh, buf, count, datatype, status, ierr);
                }
                blocking($op, c_file(fh), $at, value(count), c_datatype(datatype), Status::Fortran(status), |status| {
                    real(fh, buf, count, datatype, status.cast(), ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

macro_rules! fortran_blocking_at {
    ($op:expr; $($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: *mut Fint,
            offset: *const MpiOffset,
            buf: *mut c_void,
            count: *const Fint,
            datatype: *const Fint,
            status: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as IoAtFn
                );
                if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) || offset.is_null() {
                    return real(fh, offset, buf, count, datatype, status, ierr);
                }
                let at = At::Explicit(*offset);
                blocking($op, c_file(fh), at, value(count), c_datatype(datatype), Status::Fortran(status), |status| {
                    real(fh, offset, buf, count, datatype, status.cast(), ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

macro_rules! fortran_posted {
    ($op:expr, $at:expr; $($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: *mut Fint,
            buf: *mut c_void,
            count: *const Fint,
            datatype: *const Fint,
            request: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as IoFn
                );
                if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) {
                    return real(fh, buf, count, datatype, request, ierr);
                }
                posted($op, c_file(fh), $at, value(count), c_datatype(datatype), || c_request(request), || {
                    real(fh, buf, count, datatype, request, ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

macro_rules! fortran_posted_at {
    ($op:expr; $($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: *mut Fint,
            offset: *const MpiOffset,
            buf: *mut c_void,
            count: *const Fint,
            datatype: *const Fint,
            request: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as IoAtFn
                );
                if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) || offset.is_null() {
                    return real(fh, offset, buf, count, datatype, request, ierr);
                }
                let at = At::Explicit(*offset);
                posted($op, c_file(fh), at, value(count), c_datatype(datatype), || c_request(request), || {
                    real(fh, offset, buf, count, datatype, request, ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

macro_rules! fortran_split_begin {
    ($op:expr, $at:expr; $($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: *mut Fint,
            buf: *mut c_void,
            count: *const Fint,
            datatype: *const Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as BeginFn
                );
                if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) {
                    return real(fh, buf, count, datatype, ierr);
                }
                split_begin($op, c_file(fh), $at, value(count), c_datatype(datatype), || {
                    real(fh, buf, count, datatype, ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

macro_rules! fortran_split_begin_at {
    ($op:expr; $($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: *mut Fint,
            offset: *const MpiOffset,
            buf: *mut c_void,
            count: *const Fint,
            datatype: *const Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as BeginAtFn
                );
                if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) || offset.is_null() {
                    return real(fh, offset, buf, count, datatype, ierr);
                }
                let at = At::Explicit(*offset);
                split_begin($op, c_file(fh), at, value(count), c_datatype(datatype), || {
                    real(fh, offset, buf, count, datatype, ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

macro_rules! fortran_split_end {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: *mut Fint, buf: *mut c_void, status: *mut Fint, ierr: *mut Fint) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as EndFn);
                if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) {
                    return real(fh, buf, status, ierr);
                }
                split_end(c_file(fh), Status::Fortran(status), |status| {
                    real(fh, buf, status.cast(), ierr);
                    ierror(ierr)
                });
            }
        }
    )+};
}

fortran_init!(mpi_init_, mpi_init__, mpi_init, MPI_INIT, ompi_init_f, mpi_init_f08_);
fortran_init_thread!(
    mpi_init_thread_,
    mpi_init_thread__,
    mpi_init_thread,
    MPI_INIT_THREAD,
    ompi_init_thread_f,
    mpi_init_thread_f08_
);
fortran_finalize!(
    mpi_finalize_,
    mpi_finalize__,
    mpi_finalize,
    MPI_FINALIZE,
    ompi_finalize_f,
    mpi_finalize_f08_
);
fortran_open!(
    mpi_file_open_,
    mpi_file_open__,
    mpi_file_open,
    MPI_FILE_OPEN,
    ompi_file_open_f,
    mpi_file_open_f08_
);
fortran_close!(
    mpi_file_close_,
    mpi_file_close__,
    mpi_file_close,
    MPI_FILE_CLOSE,
    ompi_file_close_f,
    mpi_file_close_f08_
);
fortran_sync!(
    mpi_file_sync_,
    mpi_file_sync__,
    mpi_file_sync,
    MPI_FILE_SYNC,
    ompi_file_sync_f,
    mpi_file_sync_f08_
);
fortran_blocking!(
    IoOp::Read, At::Individual;
    mpi_file_read_, mpi_file_read__, mpi_file_read, MPI_FILE_READ, ompi_file_read_f
);
fortran_blocking!(
    IoOp::Read, At::Individual;
    mpi_file_read_all_, mpi_file_read_all__, mpi_file_read_all, MPI_FILE_READ_ALL, ompi_file_read_all_f
);
fortran_blocking!(
    IoOp::Write, At::Individual;
    mpi_file_write_, mpi_file_write__, mpi_file_write, MPI_FILE_WRITE, ompi_file_write_f
);
fortran_blocking!(
    IoOp::Write, At::Individual;
    mpi_file_write_all_, mpi_file_write_all__, mpi_file_write_all, MPI_FILE_WRITE_ALL, ompi_file_write_all_f
);
fortran_blocking!(
    IoOp::Read, At::Shared;
    mpi_file_read_shared_, mpi_file_read_shared__, mpi_file_read_shared,
    MPI_FILE_READ_SHARED, ompi_file_read_shared_f
);
fortran_blocking!(
    IoOp::Write, At::Shared;
    mpi_file_write_shared_, mpi_file_write_shared__, mpi_file_write_shared,
    MPI_FILE_WRITE_SHARED, ompi_file_write_shared_f
);
fortran_blocking!(
    IoOp::Read, At::Shared;
    mpi_file_read_ordered_, mpi_file_read_ordered__, mpi_file_read_ordered,
    MPI_FILE_READ_ORDERED, ompi_file_read_ordered_f
);
fortran_blocking!(
    IoOp::Write, At::Shared;
    mpi_file_write_ordered_, mpi_file_write_ordered__, mpi_file_write_ordered,
    MPI_FILE_WRITE_ORDERED, ompi_file_write_ordered_f
);
fortran_blocking_at!(
    IoOp::Read;
    mpi_file_read_at_, mpi_file_read_at__, mpi_file_read_at, MPI_FILE_READ_AT, ompi_file_read_at_f
);
fortran_blocking_at!(
    IoOp::Read;
    mpi_file_read_at_all_, mpi_file_read_at_all__, mpi_file_read_at_all,
    MPI_FILE_READ_AT_ALL, ompi_file_read_at_all_f
);
fortran_blocking_at!(
    IoOp::Write;
    mpi_file_write_at_, mpi_file_write_at__, mpi_file_write_at, MPI_FILE_WRITE_AT, ompi_file_write_at_f
);
fortran_blocking_at!(
    IoOp::Write;
    mpi_file_write_at_all_, mpi_file_write_at_all__, mpi_file_write_at_all,
    MPI_FILE_WRITE_AT_ALL, ompi_file_write_at_all_f
);
fortran_posted!(
    IoOp::Read, At::Individual;
    mpi_file_iread_, mpi_file_iread__, mpi_file_iread, MPI_FILE_IREAD, ompi_file_iread_f
);
fortran_posted!(
    IoOp::Read, At::Individual;
    mpi_file_iread_all_, mpi_file_iread_all__, mpi_file_iread_all, MPI_FILE_IREAD_ALL,
    ompi_file_iread_all_f
);
fortran_posted!(
    IoOp::Write, At::Individual;
    mpi_file_iwrite_, mpi_file_iwrite__, mpi_file_iwrite, MPI_FILE_IWRITE, ompi_file_iwrite_f
);
fortran_posted!(
    IoOp::Write, At::Individual;
    mpi_file_iwrite_all_, mpi_file_iwrite_all__, mpi_file_iwrite_all, MPI_FILE_IWRITE_ALL,
    ompi_file_iwrite_all_f
);
fortran_posted!(
    IoOp::Read, At::Shared;
    mpi_file_iread_shared_, mpi_file_iread_shared__, mpi_file_iread_shared, MPI_FILE_IREAD_SHARED,
    ompi_file_iread_shared_f
);
fortran_posted!(
    IoOp::Write, At::Shared;
    mpi_file_iwrite_shared_, mpi_file_iwrite_shared__, mpi_file_iwrite_shared, MPI_FILE_IWRITE_SHARED,
    ompi_file_iwrite_shared_f
);
fortran_posted_at!(
    IoOp::Read;
    mpi_file_iread_at_, mpi_file_iread_at__, mpi_file_iread_at, MPI_FILE_IREAD_AT, ompi_file_iread_at_f
);
fortran_posted_at!(
    IoOp::Read;
    mpi_file_iread_at_all_, mpi_file_iread_at_all__, mpi_file_iread_at_all, MPI_FILE_IREAD_AT_ALL,
    ompi_file_iread_at_all_f
);
fortran_posted_at!(
    IoOp::Write;
    mpi_file_iwrite_at_, mpi_file_iwrite_at__, mpi_file_iwrite_at, MPI_FILE_IWRITE_AT,
    ompi_file_iwrite_at_f
);
fortran_posted_at!(
    IoOp::Write;
    mpi_file_iwrite_at_all_, mpi_file_iwrite_at_all__, mpi_file_iwrite_at_all, MPI_FILE_IWRITE_AT_ALL,
    ompi_file_iwrite_at_all_f
);
fortran_split_begin!(
    IoOp::Read, At::Individual;
    mpi_file_read_all_begin_, mpi_file_read_all_begin__, mpi_file_read_all_begin, MPI_FILE_READ_ALL_BEGIN,
    ompi_file_read_all_begin_f
);
fortran_split_begin!(
    IoOp::Write, At::Individual;
    mpi_file_write_all_begin_, mpi_file_write_all_begin__, mpi_file_write_all_begin,
    MPI_FILE_WRITE_ALL_BEGIN, ompi_file_write_all_begin_f
);
fortran_split_begin!(
    IoOp::Read, At::Shared;
    mpi_file_read_ordered_begin_, mpi_file_read_ordered_begin__, mpi_file_read_ordered_begin,
    MPI_FILE_READ_ORDERED_BEGIN, ompi_file_read_ordered_begin_f
);
fortran_split_begin!(
    IoOp::Write, At::Shared;
    mpi_file_write_ordered_begin_, mpi_file_write_ordered_begin__, mpi_file_write_ordered_begin,
    MPI_FILE_WRITE_ORDERED_BEGIN, ompi_file_write_ordered_begin_f
);
fortran_split_begin_at!(
    IoOp::Read;
    mpi_file_read_at_all_begin_, mpi_file_read_at_all_begin__, mpi_file_read_at_all_begin,
    MPI_FILE_READ_AT_ALL_BEGIN, ompi_file_read_at_all_begin_f
);
fortran_split_begin_at!(
    IoOp::Write;
    mpi_file_write_at_all_begin_, mpi_file_write_at_all_begin__, mpi_file_write_at_all_begin,
    MPI_FILE_WRITE_AT_ALL_BEGIN, ompi_file_write_at_all_begin_f
);
fortran_split_end!(
    mpi_file_read_all_end_,
    mpi_file_read_all_end__,
    mpi_file_read_all_end,
    MPI_FILE_READ_ALL_END,
    ompi_file_read_all_end_f
);
fortran_split_end!(
    mpi_file_write_all_end_,
    mpi_file_write_all_end__,
    mpi_file_write_all_end,
    MPI_FILE_WRITE_ALL_END,
    ompi_file_write_all_end_f
);
fortran_split_end!(
    mpi_file_read_at_all_end_,
    mpi_file_read_at_all_end__,
    mpi_file_read_at_all_end,
    MPI_FILE_READ_AT_ALL_END,
    ompi_file_read_at_all_end_f
);
fortran_split_end!(
    mpi_file_write_at_all_end_,
    mpi_file_write_at_all_end__,
    mpi_file_write_at_all_end,
    MPI_FILE_WRITE_AT_ALL_END,
    ompi_file_write_at_all_end_f
);
fortran_split_end!(
    mpi_file_read_ordered_end_,
    mpi_file_read_ordered_end__,
    mpi_file_read_ordered_end,
    MPI_FILE_READ_ORDERED_END,
    ompi_file_read_ordered_end_f
);
fortran_split_end!(
    mpi_file_write_ordered_end_,
    mpi_file_write_ordered_end__,
    mpi_file_write_ordered_end,
    MPI_FILE_WRITE_ORDERED_END,
    ompi_file_write_ordered_end_f
);
#[cfg(test)]
mod tests {
    use super::*;

    fn converted(s: &[u8], len: usize) -> String {
        let mut out = [0 as c_char; 4096];
        // SAFETY: `s` holds at least `len` bytes wherever `len` is read in full.
        unsafe { c_string(s.as_ptr().cast(), len, &mut out) };
        // SAFETY: c_string NUL-terminates `out`.
        unsafe { std::ffi::CStr::from_ptr(out.as_ptr()) }.to_str().unwrap().to_string()
    }

    #[test]
    fn fortran_strings_lose_their_padding_and_fit_the_buffer() {
        assert_eq!(converted(b"/tmp/a.dat     ", 15), "/tmp/a.dat");
        assert_eq!(converted(b"/tmp/a.datXYZ", 10), "/tmp/a.dat", "the length, not a NUL, ends it");
        assert_eq!(converted(b"    ", 4), "");
        let long = vec![b'x'; 5000];
        assert_eq!(converted(&long, long.len()).len(), 4095, "cut to the buffer");
        // gfortran before 8 passed the length as an int: the upper half of the word is noise.
        assert_eq!(converted(b"/f  ", 0xdead_beef_0000_0004), "/f");
    }
}
