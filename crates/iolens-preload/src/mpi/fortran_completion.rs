//! The Fortran bindings of the completions of nonblocking MPI-IO calls: `MPI_WAIT`,
//! `MPI_TEST` and their `ALL`/`ANY`/`SOME` forms, `MPI_REQUEST_FREE`, under every name the
//! libraries export (see [`fortran`](super::fortran)). A read's Fortran status is converted
//! (`MPI_Status_f2c`) to tell the bytes it moved, as in C.

use crate::mpi::fortran::{c_request, fortran_real, ierror, value, Fint};
use crate::mpi::pending::{complete, complete_with_status, nothing_pending, status_for, tag_keys, Tagged};
use crate::mpi::status::{Status, StatusSpace, Statuses, StatusesSpace};

/// `MPI_TEST(request, flag, status, ierror)`.
type TestFn = unsafe extern "C" fn(*mut Fint, *mut Fint, *mut Fint, *mut Fint);
/// `MPI_WAITALL(count, requests, statuses, ierror)`.
type WaitallFn = unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint);
/// `MPI_TESTALL(count, requests, flag, statuses, ierror)`,
/// `MPI_WAITANY(count, requests, index, status, ierror)`.
type CountFlagFn = unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint);
/// `MPI_TESTANY(count, requests, index, flag, status, ierror)`,
/// `MPI_WAITSOME`/`MPI_TESTSOME(incount, requests, outcount, indices, statuses, ierror)`.
type CountIndexFn = unsafe extern "C" fn(*const Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint, *mut Fint);

// Completions: called for every request the program completes, its messages included; with no
// MPI-IO call in flight they cost one relaxed load. The request is read before the call, which
// sets it to MPI_REQUEST_NULL.

macro_rules! fortran_wait {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(request: *mut Fint, status: *mut Fint, ierr: *mut Fint) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as unsafe extern "C" fn(*mut Fint, *mut Fint, *mut Fint));
                if nothing_pending() {
                    return real(request, status, ierr);
                }
                let key = c_request(request);
                let mut space: StatusSpace = [0; 8];
                let status = status_for(key, Status::Fortran(status), &mut space);
                real(request, status.as_ptr().cast(), ierr);
                if ierror(ierr) == 0 {
                    complete_with_status(key, status);
                }
            }
        }
    )+};
}

macro_rules! fortran_test {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            request: *mut Fint,
            flag: *mut Fint,
            status: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as TestFn);
                if nothing_pending() {
                    return real(request, flag, status, ierr);
                }
                let key = c_request(request);
                let mut space: StatusSpace = [0; 8];
                let status = status_for(key, Status::Fortran(status), &mut space);
                real(request, flag, status.as_ptr().cast(), ierr);
                if ierror(ierr) == 0 && !flag.is_null() && *flag != 0 {
                    complete_with_status(key, status);
                }
            }
        }
    )+};
}

macro_rules! fortran_request_free {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(request: *mut Fint, ierr: *mut Fint) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as unsafe extern "C" fn(*mut Fint, *mut Fint));
                if nothing_pending() {
                    return real(request, ierr);
                }
                let key = c_request(request);
                real(request, ierr);
                if ierror(ierr) == 0 {
                    complete(key);
                }
            }
        }
    )+};
}

/// Tags the pending calls among the Fortran requests `requests[..*count]`.
unsafe fn tag_fortran(count: *const Fint, requests: *const Fint) -> Tagged {
    // SAFETY: `requests` holds `*count` Fortran requests (the program's, as the call it passes them
    // to requires).
    unsafe {
        let count = if count.is_null() || requests.is_null() { 0 } else { *count };
        tag_keys(count, |i| c_request(requests.add(i)))
    }
}

// The calls completing many requests: as in C (a status of ours, or an array of them, stands in
// for MPI_STATUS(ES)_IGNORE while a read is awaited), the positions counted from 1.

macro_rules! fortran_waitall {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            count: *const Fint,
            requests: *mut Fint,
            statuses: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as WaitallFn);
                if nothing_pending() {
                    return real(count, requests, statuses, ierr);
                }
                let tagged = tag_fortran(count, requests);
                let mut space = StatusesSpace::new();
                let statuses = tagged.statuses(value(count) as Fint, Statuses::Fortran(statuses), &mut space);
                real(count, requests, statuses.as_ptr().cast(), ierr);
                if ierror(ierr) == 0 {
                    tagged.complete_all(statuses);
                }
            }
        }
    )+};
}

macro_rules! fortran_testall {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            count: *const Fint,
            requests: *mut Fint,
            flag: *mut Fint,
            statuses: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as CountFlagFn);
                if nothing_pending() {
                    return real(count, requests, flag, statuses, ierr);
                }
                let tagged = tag_fortran(count, requests);
                let mut space = StatusesSpace::new();
                let statuses = tagged.statuses(value(count) as Fint, Statuses::Fortran(statuses), &mut space);
                real(count, requests, flag, statuses.as_ptr().cast(), ierr);
                // Not all complete (flag false), the statuses are undefined and nothing is completed.
                if ierror(ierr) == 0 && !flag.is_null() && *flag != 0 {
                    tagged.complete_all(statuses);
                }
            }
        }
    )+};
}

macro_rules! fortran_waitany {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            count: *const Fint,
            requests: *mut Fint,
            index: *mut Fint,
            status: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!($name as CountFlagFn);
                if nothing_pending() {
                    return real(count, requests, index, status, ierr);
                }
                let tagged = tag_fortran(count, requests);
                let mut space: StatusSpace = [0; 8];
                let status = tagged.status(Status::Fortran(status), &mut space);
                real(count, requests, index, status.as_ptr().cast(), ierr);
                if ierror(ierr) == 0 && !index.is_null() && *index >= 1 {
                    tagged.complete_one(*index as usize - 1, status);
                }
            }
        }
    )+};
}

macro_rules! fortran_testany {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            count: *const Fint,
            requests: *mut Fint,
            index: *mut Fint,
            flag: *mut Fint,
            status: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as CountIndexFn
                );
                if nothing_pending() {
                    return real(count, requests, index, flag, status, ierr);
                }
                let tagged = tag_fortran(count, requests);
                let mut space: StatusSpace = [0; 8];
                let status = tagged.status(Status::Fortran(status), &mut space);
                real(count, requests, index, flag, status.as_ptr().cast(), ierr);
                let done = !flag.is_null() && *flag != 0;
                if ierror(ierr) == 0 && done && !index.is_null() && *index >= 1 {
                    tagged.complete_one(*index as usize - 1, status);
                }
            }
        }
    )+};
}

macro_rules! fortran_some {
    ($($name:ident),+) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            incount: *const Fint,
            requests: *mut Fint,
            outcount: *mut Fint,
            indices: *mut Fint,
            statuses: *mut Fint,
            ierr: *mut Fint,
        ) {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, by reference, passed
            // on unchanged.
            unsafe {
                let real = fortran_real!(
                    $name as CountIndexFn
                );
                if nothing_pending() {
                    return real(incount, requests, outcount, indices, statuses, ierr);
                }
                let tagged = tag_fortran(incount, requests);
                let mut space = StatusesSpace::new();
                let statuses = tagged.statuses(value(incount) as Fint, Statuses::Fortran(statuses), &mut space);
                real(incount, requests, outcount, indices, statuses.as_ptr().cast(), ierr);
                if ierror(ierr) == 0 {
                    tagged.complete_some(outcount, indices, 1, statuses);
                }
            }
        }
    )+};
}

fortran_wait!(mpi_wait_, mpi_wait__, mpi_wait, MPI_WAIT, ompi_wait_f, mpi_wait_f08_);
fortran_test!(mpi_test_, mpi_test__, mpi_test, MPI_TEST, ompi_test_f, mpi_test_f08_);
fortran_request_free!(
    mpi_request_free_,
    mpi_request_free__,
    mpi_request_free,
    MPI_REQUEST_FREE,
    ompi_request_free_f,
    mpi_request_free_f08_
);
fortran_waitall!(mpi_waitall_, mpi_waitall__, mpi_waitall, MPI_WAITALL, ompi_waitall_f, mpi_waitall_f08_);
fortran_testall!(mpi_testall_, mpi_testall__, mpi_testall, MPI_TESTALL, ompi_testall_f, mpi_testall_f08_);
fortran_waitany!(mpi_waitany_, mpi_waitany__, mpi_waitany, MPI_WAITANY, ompi_waitany_f, mpi_waitany_f08_);
fortran_testany!(mpi_testany_, mpi_testany__, mpi_testany, MPI_TESTANY, ompi_testany_f, mpi_testany_f08_);
fortran_some!(mpi_waitsome_, mpi_waitsome__, mpi_waitsome, MPI_WAITSOME, ompi_waitsome_f, mpi_waitsome_f08_);
fortran_some!(mpi_testsome_, mpi_testsome__, mpi_testsome, MPI_TESTSOME, ompi_testsome_f, mpi_testsome_f08_);
