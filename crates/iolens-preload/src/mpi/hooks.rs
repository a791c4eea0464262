//! The C MPI-IO hooks: `MPI_File_open/close/sync`, the blocking reads and writes in all their
//! forms (explicit offset `_at`, collective `_all`, shared and ordered file pointers), the
//! nonblocking `MPI_File_iread*/iwrite*`, split collectives (`_begin`/`_end`), each also in
//! MPI 4's large-count form (`_c`, an `MPI_Count` count; MPICH 4 exports them, Open MPI 4.1
//! does not), and the completions of nonblocking calls (`MPI_Wait`, `MPI_Test` and their
//! `all`/`any`/`some` forms, `MPI_Request_free`). How each is recorded is `mpi::pending`'s.

use iolens_record::event::IoOp;
use libc::{c_char, c_int, c_void};

use crate::base::clock::now_ns;
use crate::mpi::abi::{pmpi, request_at, Handle, MpiCount, MpiOffset, MPI_SUCCESS};
use crate::mpi::pending::{
    blocking, closed, complete, complete_with_status, nothing_pending, opened, posted, split_begin,
    split_end, status_for, synced, tag_requests, At, MpiNest,
};
use crate::mpi::status::{Status, StatusSpace, Statuses, StatusesSpace};

// ---- open, close, sync ----

#[no_mangle]
pub unsafe extern "C" fn MPI_File_open(
    comm: Handle,
    filename: *const c_char,
    amode: c_int,
    info: Handle,
    fh: *mut Handle,
) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!(
            "PMPI_File_open"
                as unsafe extern "C" fn(Handle, *const c_char, c_int, Handle, *mut Handle) -> c_int
        );
        let Some(_nest) = MpiNest::enter() else { return real(comm, filename, amode, info, fh) };
        let t0 = now_ns();
        let ret = real(comm, filename, amode, info, fh);
        let t1 = now_ns();
        if !fh.is_null() {
            opened(filename, ret, *fh, t0, t1);
        }
        ret
    }
}
#[no_mangle]
pub unsafe extern "C" fn MPI_File_close(fh: *mut Handle) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!("PMPI_File_close" as unsafe extern "C" fn(*mut Handle) -> c_int);
        let Some(_nest) = MpiNest::enter() else { return real(fh) };
        let handle = if fh.is_null() { 0 } else { *fh };
        closed(handle, || real(fh))
    }
}
#[no_mangle]
pub unsafe extern "C" fn MPI_File_sync(fh: Handle) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!("PMPI_File_sync" as unsafe extern "C" fn(Handle) -> c_int);
        let Some(_nest) = MpiNest::enter() else { return real(fh) };
        synced(fh, || real(fh))
    }
}
// ---- blocking reads and writes ----

macro_rules! blocking_hook {
    ($name:ident, $real:literal, $op:expr, $at:expr, $count:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: Handle,
            buf: *mut c_void,
            count: $count,
            datatype: Handle,
            status: *mut c_void,
        ) -> c_int {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
            unsafe {
                let real = pmpi!(
                    $real as unsafe extern "C" fn(Handle, *mut c_void, $count, Handle, *mut c_void) -> c_int
                );
                blocking($op, fh, $at, i64::from(count), datatype, Status::C(status), |status| {
                    real(fh, buf, count, datatype, status)
                })
            }
        }
    };
}
blocking_hook!(MPI_File_read, "PMPI_File_read", IoOp::Read, At::Individual, c_int);
blocking_hook!(MPI_File_read_c, "PMPI_File_read_c", IoOp::Read, At::Individual, MpiCount);
blocking_hook!(MPI_File_read_all, "PMPI_File_read_all", IoOp::Read, At::Individual, c_int);
blocking_hook!(MPI_File_read_all_c, "PMPI_File_read_all_c", IoOp::Read, At::Individual, MpiCount);
blocking_hook!(MPI_File_write, "PMPI_File_write", IoOp::Write, At::Individual, c_int);
blocking_hook!(MPI_File_write_c, "PMPI_File_write_c", IoOp::Write, At::Individual, MpiCount);
blocking_hook!(MPI_File_write_all, "PMPI_File_write_all", IoOp::Write, At::Individual, c_int);
blocking_hook!(MPI_File_write_all_c, "PMPI_File_write_all_c", IoOp::Write, At::Individual, MpiCount);
blocking_hook!(MPI_File_read_shared, "PMPI_File_read_shared", IoOp::Read, At::Shared, c_int);
blocking_hook!(MPI_File_read_shared_c, "PMPI_File_read_shared_c", IoOp::Read, At::Shared, MpiCount);
blocking_hook!(MPI_File_write_shared, "PMPI_File_write_shared", IoOp::Write, At::Shared, c_int);
blocking_hook!(MPI_File_write_shared_c, "PMPI_File_write_shared_c", IoOp::Write, At::Shared, MpiCount);
blocking_hook!(MPI_File_read_ordered, "PMPI_File_read_ordered", IoOp::Read, At::Shared, c_int);
blocking_hook!(MPI_File_read_ordered_c, "PMPI_File_read_ordered_c", IoOp::Read, At::Shared, MpiCount);
blocking_hook!(MPI_File_write_ordered, "PMPI_File_write_ordered", IoOp::Write, At::Shared, c_int);
blocking_hook!(MPI_File_write_ordered_c, "PMPI_File_write_ordered_c", IoOp::Write, At::Shared, MpiCount);

macro_rules! blocking_at_hook {
    ($name:ident, $real:literal, $op:expr, $count:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: Handle,
            offset: MpiOffset,
            buf: *mut c_void,
            count: $count,
            datatype: Handle,
            status: *mut c_void,
        ) -> c_int {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
            unsafe {
                let real = pmpi!(
                    $real
                        as unsafe extern "C" fn(
                            Handle,
                            MpiOffset,
                            *mut c_void,
                            $count,
                            Handle,
                            *mut c_void,
                        ) -> c_int
                );
                blocking(
                    $op,
                    fh,
                    At::Explicit(offset),
                    i64::from(count),
                    datatype,
                    Status::C(status),
                    |status| real(fh, offset, buf, count, datatype, status),
                )
            }
        }
    };
}
blocking_at_hook!(MPI_File_read_at, "PMPI_File_read_at", IoOp::Read, c_int);
blocking_at_hook!(MPI_File_read_at_c, "PMPI_File_read_at_c", IoOp::Read, MpiCount);
blocking_at_hook!(MPI_File_read_at_all, "PMPI_File_read_at_all", IoOp::Read, c_int);
blocking_at_hook!(MPI_File_read_at_all_c, "PMPI_File_read_at_all_c", IoOp::Read, MpiCount);
blocking_at_hook!(MPI_File_write_at, "PMPI_File_write_at", IoOp::Write, c_int);
blocking_at_hook!(MPI_File_write_at_c, "PMPI_File_write_at_c", IoOp::Write, MpiCount);
blocking_at_hook!(MPI_File_write_at_all, "PMPI_File_write_at_all", IoOp::Write, c_int);
blocking_at_hook!(MPI_File_write_at_all_c, "PMPI_File_write_at_all_c", IoOp::Write, MpiCount);

// ---- nonblocking reads and writes ----

macro_rules! posted_hook {
    ($name:ident, $real:literal, $op:expr, $at:expr, $count:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: Handle,
            buf: *mut c_void,
            count: $count,
            datatype: Handle,
            request: *mut c_void,
        ) -> c_int {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
            unsafe {
                let real = pmpi!(
                    $real as unsafe extern "C" fn(Handle, *mut c_void, $count, Handle, *mut c_void) -> c_int
                );
                posted(
                    $op,
                    fh,
                    $at,
                    i64::from(count),
                    datatype,
                    || request_at(request, 0),
                    || real(fh, buf, count, datatype, request),
                )
            }
        }
    };
}
posted_hook!(MPI_File_iread, "PMPI_File_iread", IoOp::Read, At::Individual, c_int);
posted_hook!(MPI_File_iread_c, "PMPI_File_iread_c", IoOp::Read, At::Individual, MpiCount);
posted_hook!(MPI_File_iread_all, "PMPI_File_iread_all", IoOp::Read, At::Individual, c_int);
posted_hook!(MPI_File_iread_all_c, "PMPI_File_iread_all_c", IoOp::Read, At::Individual, MpiCount);
posted_hook!(MPI_File_iwrite, "PMPI_File_iwrite", IoOp::Write, At::Individual, c_int);
posted_hook!(MPI_File_iwrite_c, "PMPI_File_iwrite_c", IoOp::Write, At::Individual, MpiCount);
posted_hook!(MPI_File_iwrite_all, "PMPI_File_iwrite_all", IoOp::Write, At::Individual, c_int);
posted_hook!(MPI_File_iwrite_all_c, "PMPI_File_iwrite_all_c", IoOp::Write, At::Individual, MpiCount);
posted_hook!(MPI_File_iread_shared, "PMPI_File_iread_shared", IoOp::Read, At::Shared, c_int);
posted_hook!(MPI_File_iread_shared_c, "PMPI_File_iread_shared_c", IoOp::Read, At::Shared, MpiCount);
posted_hook!(MPI_File_iwrite_shared, "PMPI_File_iwrite_shared", IoOp::Write, At::Shared, c_int);
posted_hook!(MPI_File_iwrite_shared_c, "PMPI_File_iwrite_shared_c", IoOp::Write, At::Shared, MpiCount);

macro_rules! posted_at_hook {
    ($name:ident, $real:literal, $op:expr, $count:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: Handle,
            offset: MpiOffset,
            buf: *mut c_void,
            count: $count,
            datatype: Handle,
            request: *mut c_void,
        ) -> c_int {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
            unsafe {
                let real = pmpi!(
                    $real
                        as unsafe extern "C" fn(
                            Handle,
                            MpiOffset,
                            *mut c_void,
                            $count,
                            Handle,
                            *mut c_void,
                        ) -> c_int
                );
                posted(
                    $op,
                    fh,
                    At::Explicit(offset),
                    i64::from(count),
                    datatype,
                    || request_at(request, 0),
                    || real(fh, offset, buf, count, datatype, request),
                )
            }
        }
    };
}
posted_at_hook!(MPI_File_iread_at, "PMPI_File_iread_at", IoOp::Read, c_int);
posted_at_hook!(MPI_File_iread_at_c, "PMPI_File_iread_at_c", IoOp::Read, MpiCount);
posted_at_hook!(MPI_File_iread_at_all, "PMPI_File_iread_at_all", IoOp::Read, c_int);
posted_at_hook!(MPI_File_iread_at_all_c, "PMPI_File_iread_at_all_c", IoOp::Read, MpiCount);
posted_at_hook!(MPI_File_iwrite_at, "PMPI_File_iwrite_at", IoOp::Write, c_int);
posted_at_hook!(MPI_File_iwrite_at_c, "PMPI_File_iwrite_at_c", IoOp::Write, MpiCount);
posted_at_hook!(MPI_File_iwrite_at_all, "PMPI_File_iwrite_at_all", IoOp::Write, c_int);
posted_at_hook!(MPI_File_iwrite_at_all_c, "PMPI_File_iwrite_at_all_c", IoOp::Write, MpiCount);
// ---- split collectives: from _begin to _end ----

macro_rules! split_begin_hook {
    ($name:ident, $real:literal, $op:expr, $at:expr, $count:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: Handle,
            buf: *mut c_void,
            count: $count,
            datatype: Handle,
        ) -> c_int {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
            unsafe {
                let real = pmpi!($real as unsafe extern "C" fn(Handle, *mut c_void, $count, Handle) -> c_int);
                split_begin($op, fh, $at, i64::from(count), datatype, || real(fh, buf, count, datatype))
            }
        }
    };
}
split_begin_hook!(MPI_File_read_all_begin, "PMPI_File_read_all_begin", IoOp::Read, At::Individual, c_int);
split_begin_hook!(
    MPI_File_read_all_begin_c,
    "PMPI_File_read_all_begin_c",
    IoOp::Read,
    At::Individual,
    MpiCount
);
split_begin_hook!(MPI_File_write_all_begin, "PMPI_File_write_all_begin", IoOp::Write, At::Individual, c_int);
split_begin_hook!(
    MPI_File_write_all_begin_c,
    "PMPI_File_write_all_begin_c",
    IoOp::Write,
    At::Individual,
    MpiCount
);
split_begin_hook!(MPI_File_read_ordered_begin, "PMPI_File_read_ordered_begin", IoOp::Read, At::Shared, c_int);
split_begin_hook!(
    MPI_File_read_ordered_begin_c,
    "PMPI_File_read_ordered_begin_c",
    IoOp::Read,
    At::Shared,
    MpiCount
);
split_begin_hook!(
    MPI_File_write_ordered_begin,
    "PMPI_File_write_ordered_begin",
    IoOp::Write,
    At::Shared,
    c_int
);
split_begin_hook!(
    MPI_File_write_ordered_begin_c,
    "PMPI_File_write_ordered_begin_c",
    IoOp::Write,
    At::Shared,
    MpiCount
);

macro_rules! split_begin_at_hook {
    ($name:ident, $real:literal, $op:expr, $count:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: Handle,
            offset: MpiOffset,
            buf: *mut c_void,
            count: $count,
            datatype: Handle,
        ) -> c_int {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
            unsafe {
                let real = pmpi!(
                    $real as unsafe extern "C" fn(Handle, MpiOffset, *mut c_void, $count, Handle) -> c_int
                );
                split_begin($op, fh, At::Explicit(offset), i64::from(count), datatype, || {
                    real(fh, offset, buf, count, datatype)
                })
            }
        }
    };
}
split_begin_at_hook!(MPI_File_read_at_all_begin, "PMPI_File_read_at_all_begin", IoOp::Read, c_int);
split_begin_at_hook!(MPI_File_read_at_all_begin_c, "PMPI_File_read_at_all_begin_c", IoOp::Read, MpiCount);
split_begin_at_hook!(MPI_File_write_at_all_begin, "PMPI_File_write_at_all_begin", IoOp::Write, c_int);
split_begin_at_hook!(MPI_File_write_at_all_begin_c, "PMPI_File_write_at_all_begin_c", IoOp::Write, MpiCount);

macro_rules! split_end_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fh: Handle, buf: *mut c_void, status: *mut c_void) -> c_int {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
            unsafe {
                let real = pmpi!($real as unsafe extern "C" fn(Handle, *mut c_void, *mut c_void) -> c_int);
                split_end(fh, Status::C(status), |status| real(fh, buf, status))
            }
        }
    };
}
split_end_hook!(MPI_File_read_all_end, "PMPI_File_read_all_end");
split_end_hook!(MPI_File_write_all_end, "PMPI_File_write_all_end");
split_end_hook!(MPI_File_read_at_all_end, "PMPI_File_read_at_all_end");
split_end_hook!(MPI_File_write_at_all_end, "PMPI_File_write_at_all_end");
split_end_hook!(MPI_File_read_ordered_end, "PMPI_File_read_ordered_end");
split_end_hook!(MPI_File_write_ordered_end, "PMPI_File_write_ordered_end");

// ---- completions of nonblocking calls ----
//
// Called for every request the program completes, its messages included: with no MPI-IO call
// in flight they cost one relaxed load.

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut c_void, status: *mut c_void) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!("PMPI_Wait" as unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int);
        if nothing_pending() {
            return real(request, status);
        }
        let key = request_at(request, 0);
        let mut space: StatusSpace = [0; 8];
        let status = status_for(key, Status::C(status), &mut space);
        let ret = real(request, status.as_ptr());
        if ret == MPI_SUCCESS {
            complete_with_status(key, status);
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(request: *mut c_void, flag: *mut c_int, status: *mut c_void) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!("PMPI_Test" as unsafe extern "C" fn(*mut c_void, *mut c_int, *mut c_void) -> c_int);
        if nothing_pending() {
            return real(request, flag, status);
        }
        let key = request_at(request, 0);
        let mut space: StatusSpace = [0; 8];
        let status = status_for(key, Status::C(status), &mut space);
        let ret = real(request, flag, status.as_ptr());
        if ret == MPI_SUCCESS && !flag.is_null() && *flag != 0 {
            complete_with_status(key, status);
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(count: c_int, requests: *mut c_void, statuses: *mut c_void) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!("PMPI_Waitall" as unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int);
        if nothing_pending() {
            return real(count, requests, statuses);
        }
        let tagged = tag_requests(count, requests);
        let mut space = StatusesSpace::new();
        let statuses = tagged.statuses(count, Statuses::C(statuses), &mut space);
        let ret = real(count, requests, statuses.as_ptr());
        if ret == MPI_SUCCESS {
            tagged.complete_all(statuses);
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    requests: *mut c_void,
    flag: *mut c_int,
    statuses: *mut c_void,
) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!(
            "PMPI_Testall" as unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_void) -> c_int
        );
        if nothing_pending() {
            return real(count, requests, flag, statuses);
        }
        let tagged = tag_requests(count, requests);
        let mut space = StatusesSpace::new();
        let statuses = tagged.statuses(count, Statuses::C(statuses), &mut space);
        let ret = real(count, requests, flag, statuses.as_ptr());
        // Not all complete (flag false), the statuses are undefined and nothing is completed.
        if ret == MPI_SUCCESS && !flag.is_null() && *flag != 0 {
            tagged.complete_all(statuses);
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    requests: *mut c_void,
    index: *mut c_int,
    status: *mut c_void,
) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!(
            "PMPI_Waitany" as unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_void) -> c_int
        );
        if nothing_pending() {
            return real(count, requests, index, status);
        }
        let tagged = tag_requests(count, requests);
        let mut space: StatusSpace = [0; 8];
        let status = tagged.status(Status::C(status), &mut space);
        let ret = real(count, requests, index, status.as_ptr());
        if ret == MPI_SUCCESS && !index.is_null() && *index >= 0 {
            tagged.complete_one(*index as usize, status);
        }
        ret
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    requests: *mut c_void,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut c_void,
) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!(
            "PMPI_Testany"
                as unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_int, *mut c_void) -> c_int
        );
        if nothing_pending() {
            return real(count, requests, index, flag, status);
        }
        let tagged = tag_requests(count, requests);
        let mut space: StatusSpace = [0; 8];
        let status = tagged.status(Status::C(status), &mut space);
        let ret = real(count, requests, index, flag, status.as_ptr());
        if ret == MPI_SUCCESS && !flag.is_null() && *flag != 0 && !index.is_null() && *index >= 0 {
            tagged.complete_one(*index as usize, status);
        }
        ret
    }
}

macro_rules! some_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            incount: c_int,
            requests: *mut c_void,
            outcount: *mut c_int,
            indices: *mut c_int,
            statuses: *mut c_void,
        ) -> c_int {
            // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
            unsafe {
                let real = pmpi!(
                    $real
                        as unsafe extern "C" fn(
                            c_int,
                            *mut c_void,
                            *mut c_int,
                            *mut c_int,
                            *mut c_void,
                        ) -> c_int
                );
                if nothing_pending() {
                    return real(incount, requests, outcount, indices, statuses);
                }
                let tagged = tag_requests(incount, requests);
                let mut space = StatusesSpace::new();
                let statuses = tagged.statuses(incount, Statuses::C(statuses), &mut space);
                let ret = real(incount, requests, outcount, indices, statuses.as_ptr());
                if ret == MPI_SUCCESS {
                    tagged.complete_some(outcount, indices, 0, statuses);
                }
                ret
            }
        }
    };
}
some_hook!(MPI_Waitsome, "PMPI_Waitsome");
some_hook!(MPI_Testsome, "PMPI_Testsome");

/// A request freed before it was seen complete: the call is recorded from its post to the
/// free (it completes some time after, unobserved), rather than left out.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut c_void) -> c_int {
    // SAFETY: a hook's contract (mpi/mod.rs): the program's arguments, passed on unchanged.
    unsafe {
        let real = pmpi!("PMPI_Request_free" as unsafe extern "C" fn(*mut c_void) -> c_int);
        if nothing_pending() {
            return real(request);
        }
        let key = request_at(request, 0);
        let ret = real(request);
        if ret == MPI_SUCCESS {
            complete(key);
        }
        ret
    }
}
