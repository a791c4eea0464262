//! Where MPI leaves the status of a call, C or Fortran, one or an array: whether the program
//! ignores it, what a read moved by it, and statuses of ours that stand in for ignored ones
//! while a read is awaited (only its status tells what a short read moved).

use libc::{c_int, c_void};

use crate::mpi::abi::{abi, exported_pointer, mpi_byte, pmpi, Abi, Handle, MPI_SUCCESS, MPI_UNDEFINED};
use std::sync::atomic::AtomicUsize;

/// Whether the Fortran status `status` is the library's `MPI_STATUS_IGNORE` (or, `array`, the
/// statuses `MPI_STATUSES_IGNORE`): that of `mpif.h` and `use mpi` (the C `MPI_F_STATUS_IGNORE`,
/// `MPI_F_STATUSES_IGNORE`, in every library) or that of `use mpi_f08` (`MPI_F08_STATUS_IGNORE`,
/// `MPI_F08_STATUSES_IGNORE`: MPICH's are objects of their own; Open MPI exports none, its
/// `mpi_f08` passing the same as `mpif.h`). `MPI_Status_f2c` of one is an error, which Open MPI
/// hands to the error handler of `MPI_COMM_WORLD` (fatal by default).
unsafe fn fortran_ignored(status: *const c_int, array: bool) -> bool {
    // SAFETY: a non-null address `exported_pointer` gives is the library's pointer variable; only
    // its value is compared.
    unsafe {
        static F: [AtomicUsize; 2] = [AtomicUsize::new(1), AtomicUsize::new(1)];
        static F08: [AtomicUsize; 2] = [AtomicUsize::new(1), AtomicUsize::new(1)];
        if status.is_null() {
            return true;
        }
        let (f, f08) = if array {
            (
                exported_pointer(&F[1], c"MPI_F_STATUSES_IGNORE"),
                exported_pointer(&F08[1], c"MPI_F08_STATUSES_IGNORE"),
            )
        } else {
            (
                exported_pointer(&F[0], c"MPI_F_STATUS_IGNORE"),
                exported_pointer(&F08[0], c"MPI_F08_STATUS_IGNORE"),
            )
        };
        status == f || status == f08
    }
}

/// Whether `status` is `MPI_STATUS_IGNORE`, or an array of statuses `MPI_STATUSES_IGNORE`
/// (Open MPI: null; MPICH: 1, both).
fn status_ignored(status: *mut c_void) -> bool {
    match abi() {
        Abi::OpenMpi => status.is_null(),
        Abi::Mpich => status as usize <= 1,
    }
}

/// Where a blocking call leaves its status.
#[derive(Clone, Copy)]
pub(crate) enum Status {
    /// A C `MPI_Status`.
    C(*mut c_void),
    /// A Fortran status: an array of `MPI_STATUS_SIZE` integers (or `TYPE(MPI_Status)`, laid
    /// out the same), decoded by the library's `MPI_Status_f2c`.
    Fortran(*mut c_int),
}

/// Room for any library's status, C or Fortran (Open MPI: 24 bytes; MPICH: 20), aligned.
pub(crate) type StatusSpace = [u64; 8];

impl Status {
    /// Whether the program passed `MPI_STATUS_IGNORE`.
    unsafe fn ignored(self) -> bool {
        // SAFETY: the pointer is the program's status (or statuses) argument, compared, not read.
        unsafe {
            match self {
                Status::C(status) => status_ignored(status),
                Status::Fortran(status) => fortran_ignored(status, false),
            }
        }
    }

    /// The status to give the library: this one, or one of ours of the same kind in `space`
    /// when the program ignores it and `read()` says the call is a read (only its status tells
    /// what a short read moved; the program never sees ours).
    pub(crate) unsafe fn for_read(self, read: impl FnOnce() -> bool, space: &mut StatusSpace) -> Status {
        // SAFETY: `self` is the program's status argument (the caller's promise).
        unsafe {
            if !self.ignored() || !read() {
                return self;
            }
            match self {
                Status::C(_) => Status::C(space.as_mut_ptr().cast()),
                Status::Fortran(_) => Status::Fortran(space.as_mut_ptr().cast()),
            }
        }
    }

    /// The status as the call takes it.
    pub(crate) fn as_ptr(self) -> *mut c_void {
        match self {
            Status::C(status) => status,
            Status::Fortran(status) => status.cast(),
        }
    }

    /// Bytes the completed read moved (`None` when not told).
    pub(crate) unsafe fn bytes(self) -> Option<u64> {
        // SAFETY: `self` is a status the library filled (the caller's promise): PMPI_Status_f2c
        // converts a Fortran one into a local C status.
        unsafe {
            if self.ignored() {
                return None;
            }
            match self {
                Status::C(status) => c_status_bytes(status),
                Status::Fortran(status) => {
                    let f2c =
                        pmpi!("PMPI_Status_f2c" as unsafe extern "C" fn(*const c_int, *mut c_void) -> c_int);
                    let mut c_status: StatusSpace = [0; 8];
                    if f2c(status, c_status.as_mut_ptr().cast()) != MPI_SUCCESS {
                        return None;
                    }
                    c_status_bytes(c_status.as_mut_ptr().cast())
                }
            }
        }
    }
}

/// Where a call completing many requests (`MPI_Waitall`, `MPI_Testsome`, …) leaves their
/// statuses: an array, C or Fortran, of the library's statuses, indexed by position.
#[derive(Clone, Copy)]
pub(crate) enum Statuses {
    /// `MPI_Status[]`.
    C(*mut c_void),
    /// `INTEGER(MPI_STATUS_SIZE, *)` (or `TYPE(MPI_Status)(*)`, laid out the same).
    Fortran(*mut c_int),
}

/// How many statuses the array of ours that stands in for `MPI_STATUSES_IGNORE` while a read is
/// awaited holds on the stack, so that a completion call of that many requests or fewer does not
/// allocate. A call of more requests has its array on the heap.
pub(crate) const STATUSES_ROOM: usize = 64;
/// The bytes of a status, C or Fortran, in any library: 24 at most (Open MPI).
const STATUS_BYTES_MAX: usize = 24;
const STATUSES_WORDS: usize = STATUSES_ROOM * STATUS_BYTES_MAX / 8;
/// The most statuses an array of ours holds (24 MiB): a count past it is more likely a
/// program's mistake than requests it awaits.
const STATUSES_HEAP_MAX: usize = 1 << 20;

/// Room for the statuses of any library, C or Fortran, aligned: [`STATUSES_ROOM`] on the stack,
/// more on the heap.
pub(crate) struct StatusesSpace {
    stack: [u64; STATUSES_WORDS],
    heap: Vec<u64>,
}

impl StatusesSpace {
    pub(crate) fn new() -> StatusesSpace {
        StatusesSpace { stack: [0; STATUSES_WORDS], heap: Vec::new() }
    }

    /// Room for `count` statuses; None past [`STATUSES_HEAP_MAX`] or when the heap has no room
    /// (the call then keeps `MPI_STATUSES_IGNORE` and its reads record the bytes they asked).
    fn room(&mut self, count: usize) -> Option<*mut u64> {
        if count <= STATUSES_ROOM {
            return Some(self.stack.as_mut_ptr());
        }
        if count > STATUSES_HEAP_MAX {
            return None;
        }
        let words = count * STATUS_BYTES_MAX / 8;
        self.heap.try_reserve_exact(words).ok()?;
        self.heap.resize(words, 0);
        Some(self.heap.as_mut_ptr())
    }
}

/// The bytes from one status to the next in an array of them. C: `sizeof(MPI_Status)`, 24 in
/// Open MPI (3 public ints, `_cancelled`, a `size_t` count) and 20 in MPICH (5 ints). Fortran:
/// `MPI_STATUS_SIZE` integers (4 bytes: `MPI_Fint`), 6 in Open MPI and 5 in MPICH; a
/// compile-time constant of `mpif.h` and the modules (MPI 4's C `MPI_F_STATUS_SIZE` is a macro),
/// which no library exports as a symbol, so it is known here per ABI. Both are the same bytes.
fn status_stride() -> usize {
    const OMPI: usize = 24;
    const MPICH: usize = 20;
    const _: () =
        assert!(OMPI == 6 * 4 && MPICH == 5 * 4 && OMPI <= STATUS_BYTES_MAX && MPICH <= STATUS_BYTES_MAX);
    match abi() {
        Abi::OpenMpi => OMPI,
        Abi::Mpich => MPICH,
    }
}

impl Statuses {
    /// Whether the program passed `MPI_STATUSES_IGNORE`.
    unsafe fn ignored(self) -> bool {
        // SAFETY: the pointer is the program's status (or statuses) argument, compared, not read.
        unsafe {
            match self {
                Statuses::C(statuses) => status_ignored(statuses),
                Statuses::Fortran(statuses) => fortran_ignored(statuses, true),
            }
        }
    }

    /// The statuses a call completing `count` requests is to be given: these, or an array of
    /// ours in `space` when the program ignores them and `read` says a read is among the
    /// requests.
    pub(crate) unsafe fn for_reads(self, read: bool, count: c_int, space: &mut StatusesSpace) -> Statuses {
        // SAFETY: `self` is the program's statuses argument (the caller's promise).
        unsafe {
            if read && count > 0 && self.ignored() {
                self.in_space(count as usize, space)
            } else {
                self
            }
        }
    }

    /// The same kind of array, of `count` statuses, in `space` (itself if there is no room).
    fn in_space(self, count: usize, space: &mut StatusesSpace) -> Statuses {
        let Some(room) = space.room(count) else { return self };
        match self {
            Statuses::C(_) => Statuses::C(room.cast()),
            Statuses::Fortran(_) => Statuses::Fortran(room.cast()),
        }
    }

    /// The array as the call takes it.
    pub(crate) fn as_ptr(self) -> *mut c_void {
        match self {
            Statuses::C(statuses) => statuses,
            Statuses::Fortran(statuses) => statuses.cast(),
        }
    }

    /// The status at `position` (`None` when the statuses are ignored).
    pub(crate) unsafe fn at(self, position: usize) -> Option<Status> {
        // SAFETY: `self` is an array of statuses of the library's stride, `position` within it (the
        // caller's promise).
        unsafe {
            if self.ignored() {
                return None;
            }
            let offset = position * status_stride();
            Some(match self {
                Statuses::C(statuses) => Status::C(statuses.byte_add(offset)),
                Statuses::Fortran(statuses) => Status::Fortran(statuses.byte_add(offset)),
            })
        }
    }
}

/// Bytes a completed read moved, from its C status (not `MPI_STATUS_IGNORE`).
unsafe fn c_status_bytes(status: *mut c_void) -> Option<u64> {
    // SAFETY: `status` is a C status the library filled (the caller's promise).
    unsafe {
        let get_count =
            pmpi!("PMPI_Get_count" as unsafe extern "C" fn(*mut c_void, Handle, *mut c_int) -> c_int);
        let mut n: c_int = 0;
        (get_count(status, mpi_byte(), &mut n) == MPI_SUCCESS && n >= 0 && n != MPI_UNDEFINED)
            .then_some(n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi::abi::assume;

    #[test]
    fn statuses_lie_at_the_stride_of_the_librarys_status_and_ours_stand_in_for_few_enough() {
        let mut space = StatusesSpace::new();
        let base: *mut c_void = space.room(STATUSES_ROOM).unwrap().cast();
        assert!(std::mem::size_of_val(&space.stack) >= STATUSES_ROOM * 24, "room for Open MPI's");
        // SAFETY: positions inside `space`; the ABI is set by hand (no MPI library here).
        unsafe {
            for (abi, stride) in [(1, 24), (2, 20)] {
                assume(abi);
                let Some(Status::C(c)) = Statuses::C(base).at(3) else { panic!("a C status") };
                assert_eq!(c, base.byte_add(3 * stride));
                let Some(Status::Fortran(f)) = Statuses::Fortran(base.cast()).at(3) else {
                    panic!("Fortran")
                };
                assert_eq!(f.cast::<c_void>(), base.byte_add(3 * stride));
            }
            assume(1);
            assert!(Statuses::C(std::ptr::null_mut()).at(0).is_none(), "Open MPI's MPI_STATUSES_IGNORE");
            assume(2);
            let ignored = Statuses::C(std::ptr::without_provenance_mut(1)); // MPICH: (MPI_Status *)1
            assert!(ignored.at(0).is_none(), "MPICH's MPI_STATUSES_IGNORE");
            assert!(Statuses::Fortran(std::ptr::null_mut()).at(0).is_none());
            let given = ignored.for_reads(true, STATUSES_ROOM as c_int, &mut space);
            assert!(given.as_ptr() == space.stack.as_mut_ptr().cast(), "ours, on the stack, stand in");
            let mut space = StatusesSpace::new();
            let many = 3 * STATUSES_ROOM;
            let given = ignored.for_reads(true, many as c_int, &mut space);
            assert!(given.as_ptr() == space.heap.as_mut_ptr().cast(), "more: ours on the heap");
            assert!(space.heap.len() * 8 >= many * 24, "room for Open MPI's");
            let mut space = StatusesSpace::new();
            let given = ignored.for_reads(true, c_int::MAX, &mut space);
            assert!(given.as_ptr() == ignored.as_ptr(), "no room: ignored, the bytes asked recorded");
            let given = ignored.for_reads(false, 2, &mut space);
            assert!(given.as_ptr() == ignored.as_ptr(), "no read: nothing to learn");
            assume(0);
        }
    }
}
