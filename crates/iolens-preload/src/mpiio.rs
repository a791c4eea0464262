//! MPI-IO hooks: `MPI_File_open/close/sync`, the blocking reads and writes in all their forms
//! (explicit offset `_at`, collective `_all`, shared and ordered file pointers), the
//! nonblocking `MPI_File_iread*/iwrite*`, and split collectives (`_begin`/`_end`), each also in
//! MPI 4's large-count form (`_c`, an `MPI_Count` count; MPICH 4 exports them, Open MPI 4.1
//! does not), recorded at layer `mpiio` with bytes = count × datatype size and offsets in bytes.
//! The Fortran bindings are in [`crate::mpiio_fortran`].
//!
//! The library is not linked against MPI, so it loads into any program: the real functions are
//! reached through the profiling interface (`PMPI_*`), looked up when first needed. MPI handles
//! are opaque words here: Open MPI's are pointers, MPICH's (and its derivatives') are ints,
//! which the x86-64 and AArch64 conventions pass in a full register either way; only where a
//! handle is read from memory (requests) or made up (`MPI_COMM_WORLD`, `MPI_BYTE`) does the
//! library's ABI matter, and it is told by Open MPI's exported `ompi_mpi_comm_world`.
//!
//! A nonblocking call is recorded from its post to the completion the program observes (the
//! `MPI_Wait`/`MPI_Test` family); until then it waits in a lock-free table keyed by its
//! request. One whose completion the program did not show (through `PMPI_Wait`) ends when the
//! library reuses its request handle, or at `MPI_Finalize`. A read records the bytes its status
//! says it moved, whichever call completes it: the status of `MPI_Wait`/`MPI_Test`/`…any`, the
//! one at its position in the statuses of `…all`/`…some`, or the status of a split collective's
//! `_end`; where the program ignores them, a status or an array of ours (on the stack, room for
//! [`STATUSES_ROOM`], more on the heap) stands in while a read is awaited. The POSIX calls the
//! middleware makes beneath (data sieving, collective buffering; nonblocking calls through POSIX
//! aio, see [`crate::aio`]) are recorded by the POSIX hooks as usual: an MPI-IO hook does not hold
//! the recursion guard while the real function runs.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::*};

use iolens_record::event::{IoOp, Layer, NO_FILE, UNKNOWN_OFFSET};
use libc::{c_char, c_int, c_void};

use crate::clock::now_ns;
use crate::record::{define_path, record};
use crate::{Guard, ENABLED};

/// An MPI handle (communicator, datatype, file, info, request) as passed by value.
pub(crate) type Handle = usize;
/// `MPI_Offset`: a 64-bit signed integer in every implementation.
pub(crate) type MpiOffset = i64;
/// `MPI_Count`, the count of MPI 4's large-count (`_c`) functions: 64-bit signed as well.
pub(crate) type MpiCount = i64;

const MPI_SUCCESS: c_int = 0;
const MPI_UNDEFINED: c_int = -32766;

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
    match abi() {
        Abi::OpenMpi => find_object(c"ompi_mpi_comm_world".as_ptr()) as Handle,
        Abi::Mpich => 0x4400_0000,
    }
}

/// `MPI_BYTE` of the library's ABI, looked up once: it is asked for on every read (dlsym
/// takes the loader's lock).
pub(crate) unsafe fn mpi_byte() -> Handle {
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

/// What the library's exported pointer variable `name` (`MPI_F_STATUS_IGNORE`, …) points to;
/// null if the library has none. The variable is looked up once (`variable` caches its address),
/// its value read each time: MPICH sets its Fortran ones only when its Fortran binding starts.
unsafe fn exported_pointer(variable: &AtomicUsize, name: &std::ffi::CStr) -> *const c_int {
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

/// Whether the Fortran status `status` is the library's `MPI_STATUS_IGNORE` (or, `array`, the
/// statuses `MPI_STATUSES_IGNORE`): that of `mpif.h` and `use mpi` (the C `MPI_F_STATUS_IGNORE`,
/// `MPI_F_STATUSES_IGNORE`, in every library) or that of `use mpi_f08` (`MPI_F08_STATUS_IGNORE`,
/// `MPI_F08_STATUSES_IGNORE`: MPICH's are objects of their own; Open MPI exports none, its
/// `mpi_f08` passing the same as `mpif.h`). `MPI_Status_f2c` of one is an error, which Open MPI
/// hands to the error handler of `MPI_COMM_WORLD` (fatal by default).
unsafe fn fortran_ignored(status: *const c_int, array: bool) -> bool {
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
        (exported_pointer(&F[0], c"MPI_F_STATUS_IGNORE"), exported_pointer(&F08[0], c"MPI_F08_STATUS_IGNORE"))
    };
    status == f || status == f08
}

/// Whether `status` is `MPI_STATUS_IGNORE`, or an array of statuses `MPI_STATUSES_IGNORE`
/// (Open MPI: null; MPICH: 1, both).
fn status_ignored(status: *mut c_void) -> bool {
    match abi() {
        Abi::OpenMpi => status.is_null(),
        Abi::Mpich => status as usize <= 1,
    }
}

/// Request `i` of an array of requests: 8-byte pointers in Open MPI, 4-byte ints in MPICH.
unsafe fn request_at(requests: *const c_void, i: usize) -> u64 {
    if requests.is_null() {
        return 0;
    }
    match abi() {
        Abi::OpenMpi => *requests.cast::<u64>().add(i),
        Abi::Mpich => *requests.cast::<u32>().add(i) as u64,
    }
}

/// Shared objects that may hold the MPI library when a program loaded it privately
/// (`RTLD_LOCAL`, as Python modules do), where neither RTLD_NEXT nor the global scope finds it.
const MPI_SONAMES: [&std::ffi::CStr; 5] =
    [c"libmpi.so.40", c"libmpi.so.12", c"libmpich.so.12", c"libmpi.so", c"libmpich.so"];

/// The MPI library's definition of the function `name`: after ours, in the global scope, or
/// in an MPI library loaded privately; null when there is none.
pub(crate) unsafe fn find_symbol(name: *const c_char) -> *mut c_void {
    let p = libc::dlsym(crate::RTLD_NEXT, name);
    if !p.is_null() {
        return p;
    }
    find_object(name)
}

/// The object `name` (Open MPI's predefined handles) as the program uses it: first in the
/// global scope, since a program referring to it may hold the copy everyone uses (a copy
/// relocation), the library's own then being left unused; else in a private MPI library.
unsafe fn find_object(name: *const c_char) -> *mut c_void {
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

/// The profiling entry point `name` (NUL-terminated), which the hook of the same MPI function
/// must forward to. A program that calls an MPI function has the library loaded, so it is
/// there; if it is not, going on would call address 0: the program is stopped with the reason.
pub(crate) unsafe fn pmpi_symbol(name: &'static str) -> *mut c_void {
    let p = find_symbol(name.as_ptr().cast());
    if p.is_null() {
        let msg = b"iolens preload: the MPI library's profiling interface (PMPI_*) cannot be found; run without the iolens preload\n";
        crate::sys()(libc::SYS_write, 2, msg.as_ptr(), msg.len());
        libc::abort();
    }
    p
}

/// The real `PMPI_…` function, resolved once and cached.
macro_rules! pmpi {
    ($name:literal as $ty:ty) => {{
        static PTR: std::sync::atomic::AtomicPtr<libc::c_void> =
            std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
        let mut p = PTR.load(std::sync::atomic::Ordering::Relaxed);
        if p.is_null() {
            p = $crate::mpiio::pmpi_symbol(concat!($name, "\0"));
            PTR.store(p, std::sync::atomic::Ordering::Relaxed);
        }
        std::mem::transmute::<*mut libc::c_void, $ty>(p)
    }};
}
pub(crate) use pmpi;

thread_local! {
    /// Inside an MPI-IO hook: an MPI-IO function the library calls through its public name
    /// is part of the call already recorded.
    static IN_MPI_HOOK: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread as inside an MPI-IO hook (but not inside the POSIX recursion guard, so the
/// POSIX calls beneath are recorded).
pub(crate) struct MpiNest;

impl MpiNest {
    pub(crate) fn enter() -> Option<MpiNest> {
        if !ENABLED.load(Relaxed) || IN_MPI_HOOK.with(|h| h.replace(true)) {
            return None;
        }
        Some(MpiNest)
    }
}

impl Drop for MpiNest {
    fn drop(&mut self) {
        IN_MPI_HOOK.with(|h| h.set(false));
    }
}

/// A lock-free open-addressing table from a handle to a few words, for the files opened and
/// the nonblocking calls in flight. Slots are claimed by compare-exchange on the key; a key is
/// looked up only by the thread that completes what it names, after its post returned.
pub(crate) struct HandleTable {
    keys: [AtomicU64; TABLE_SLOTS],
    words: [[AtomicU64; WORDS]; TABLE_SLOTS],
    /// Entries in use: lookups are skipped while it is 0 (the program's own communication).
    live: AtomicU64,
}

const TABLE_SLOTS: usize = 4096;
pub(crate) const WORDS: usize = 6;
/// How far from its home slot an entry may lie: bounds every lookup of a missing key.
const PROBES: usize = 64;
const EMPTY: u64 = 0;
const FREED: u64 = u64::MAX;

impl HandleTable {
    pub(crate) const fn new() -> HandleTable {
        HandleTable {
            keys: [const { AtomicU64::new(EMPTY) }; TABLE_SLOTS],
            words: [const { [const { AtomicU64::new(0) }; WORDS] }; TABLE_SLOTS],
            live: AtomicU64::new(0),
        }
    }

    fn home(key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize % TABLE_SLOTS
    }

    fn slots(key: u64) -> impl Iterator<Item = usize> {
        let home = Self::home(key);
        (0..PROBES).map(move |i| (home + i) % TABLE_SLOTS)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.live.load(Relaxed) == 0
    }

    /// Stores `words` under `key`, replacing a stale entry of the same key (a request whose
    /// completion was never seen, its handle now reused). False when the neighbourhood is full.
    pub(crate) fn insert(&self, key: u64, words: [u64; WORDS]) -> bool {
        if key == EMPTY || key == FREED {
            return false;
        }
        let found = Self::slots(key).find(|&s| self.keys[s].load(Acquire) == key);
        let slot = found.or_else(|| {
            Self::slots(key).find(|&s| {
                let k = self.keys[s].load(Relaxed);
                (k == EMPTY || k == FREED) && self.keys[s].compare_exchange(k, key, AcqRel, Relaxed).is_ok()
            })
        });
        let Some(s) = slot else { return false };
        for (w, v) in self.words[s].iter().zip(words) {
            w.store(v, Relaxed);
        }
        if found.is_none() {
            self.live.fetch_add(1, Relaxed);
        }
        true
    }

    fn find(&self, key: u64) -> Option<usize> {
        if key == EMPTY || key == FREED {
            return None;
        }
        for s in Self::slots(key) {
            match self.keys[s].load(Acquire) {
                k if k == key => return Some(s),
                EMPTY => return None,
                _ => {}
            }
        }
        None
    }

    fn words_of(&self, slot: usize) -> [u64; WORDS] {
        std::array::from_fn(|i| self.words[slot][i].load(Relaxed))
    }

    /// Removes every entry, handing its words to `each`.
    pub(crate) fn drain(&self, mut each: impl FnMut([u64; WORDS])) {
        if self.is_empty() {
            return;
        }
        for slot in 0..TABLE_SLOTS {
            let key = self.keys[slot].load(Acquire);
            if key == EMPTY || key == FREED {
                continue;
            }
            if let Some(words) = self.take_slot(slot, key) {
                each(words);
            }
        }
    }

    /// Removes the entry in `slot` if it still holds `key`; its words.
    fn take_slot(&self, slot: usize, key: u64) -> Option<[u64; WORDS]> {
        let words = self.words_of(slot);
        self.keys[slot].compare_exchange(key, FREED, AcqRel, Relaxed).ok()?;
        self.live.fetch_sub(1, Relaxed);
        Some(words)
    }

    pub(crate) fn take(&self, key: u64) -> Option<[u64; WORDS]> {
        self.take_slot(self.find(key)?, key)
    }

    /// Sets word `i` of `key`'s entry to `value` unless it was set already (non-zero).
    pub(crate) fn set_once(&self, key: u64, i: usize, value: u64) {
        if let Some(s) = self.find(key) {
            let _ = self.words[s][i].compare_exchange(0, value, Relaxed, Relaxed);
        }
    }

    fn get(&self, key: u64) -> Option<[u64; WORDS]> {
        self.find(key).map(|s| self.words_of(s))
    }
}

/// Files the program opened through MPI-IO: file handle → path id.
static FILES: HandleTable = HandleTable::new();
/// Nonblocking calls posted and not yet seen complete: request → [`Posted`].
static PENDING: HandleTable = HandleTable::new();
/// Split collectives begun and not yet ended: file handle → [`Posted`] (one per file at a
/// time, as MPI allows).
static SPLIT: HandleTable = HandleTable::new();
/// Tags the requests one `MPI_Waitall`/`Testall`/`…any`/`…some` call looks at.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// A call posted, waiting for its completion, as the table's words: start, path id and op,
/// bytes, byte offset, and the (token, position) of the completion call looking at it.
struct Posted {
    start: u64,
    file: u32,
    op: IoOp,
    bytes: u64,
    offset: u64,
}

impl Posted {
    fn words(&self) -> [u64; WORDS] {
        [self.start, self.file as u64 | (self.op as u64) << 32, self.bytes, self.offset, 0, 0]
    }

    fn from_words(w: [u64; WORDS]) -> Posted {
        Posted {
            start: w[0],
            file: w[1] as u32,
            op: IoOp::from_u8((w[1] >> 32) as u8).unwrap_or(IoOp::Other),
            bytes: w[2],
            offset: w[3],
        }
    }

    unsafe fn completed(&self, end: u64) {
        self.completed_moving(end, None);
    }

    /// Completed at `end`, having moved `moved` bytes if told.
    unsafe fn completed_moving(&self, end: u64, moved: Option<u64>) {
        emit(
            self.op,
            self.file,
            self.offset,
            self.bytes,
            result_of(MPI_SUCCESS, self.bytes, moved),
            self.start,
            end,
        );
    }
}

/// Records one MPI-IO event, unless the thread is inside another hook's recording.
unsafe fn emit(op: IoOp, file: u32, offset: u64, bytes: u64, result: i64, start: u64, end: u64) {
    if let Some(_g) = Guard::enter() {
        record(op, Layer::MpiIo, file, offset, bytes, result, start, end);
    }
}

/// The path id of an open MPI file.
fn file_of(fh: Handle) -> u32 {
    FILES.get(fh as u64).map_or(NO_FILE, |w| w[0] as u32)
}

/// count × the datatype's size, in bytes (0 when the datatype is invalid). The count is an
/// `int`, or an `MPI_Count` in the large-count (`_c`) forms of MPI 4.
pub(crate) unsafe fn bytes_of(count: i64, datatype: Handle) -> u64 {
    let type_size = pmpi!("PMPI_Type_size_x" as unsafe extern "C" fn(Handle, *mut i64) -> c_int);
    let mut size: i64 = 0;
    if count <= 0 || type_size(datatype, &mut size) != MPI_SUCCESS || size <= 0 {
        return 0;
    }
    (count as u64).saturating_mul(size as u64)
}

/// Where a call reads or writes.
#[derive(Clone, Copy)]
pub(crate) enum At {
    /// An explicit offset, in etypes of the view (`_at` forms).
    Explicit(MpiOffset),
    /// The individual file pointer.
    Individual,
    /// The shared file pointer (`_shared`, `_ordered`): finding it costs a collective or a
    /// lock in the library, so its offset is left unknown.
    Shared,
}

/// The absolute byte offset of the first byte a call at `at` touches, from the file's view.
unsafe fn byte_offset(fh: Handle, at: At) -> u64 {
    let get_position =
        pmpi!("PMPI_File_get_position" as unsafe extern "C" fn(Handle, *mut MpiOffset) -> c_int);
    let get_byte_offset = pmpi!(
        "PMPI_File_get_byte_offset" as unsafe extern "C" fn(Handle, MpiOffset, *mut MpiOffset) -> c_int
    );
    let etypes = match at {
        At::Explicit(offset) => offset,
        At::Individual => {
            let mut position: MpiOffset = 0;
            if get_position(fh, &mut position) != MPI_SUCCESS {
                return UNKNOWN_OFFSET;
            }
            position
        }
        At::Shared => return UNKNOWN_OFFSET,
    };
    let mut bytes: MpiOffset = 0;
    if etypes < 0 || get_byte_offset(fh, etypes, &mut bytes) != MPI_SUCCESS || bytes < 0 {
        return UNKNOWN_OFFSET;
    }
    bytes as u64
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
        match self {
            Status::C(status) => status_ignored(status),
            Status::Fortran(status) => fortran_ignored(status, false),
        }
    }

    /// The status to give the library: this one, or one of ours of the same kind in `space`
    /// when the program ignores it and `read()` says the call is a read (only its status tells
    /// what a short read moved; the program never sees ours).
    pub(crate) unsafe fn for_read(self, read: impl FnOnce() -> bool, space: &mut StatusSpace) -> Status {
        if !self.ignored() || !read() {
            return self;
        }
        match self {
            Status::C(_) => Status::C(space.as_mut_ptr().cast()),
            Status::Fortran(_) => Status::Fortran(space.as_mut_ptr().cast()),
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
    unsafe fn bytes(self) -> Option<u64> {
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
        match self {
            Statuses::C(statuses) => status_ignored(statuses),
            Statuses::Fortran(statuses) => fortran_ignored(statuses, true),
        }
    }

    /// The same kind of array, of `count` statuses, in `space` (itself if there is no room).
    pub(crate) fn in_space(self, count: usize, space: &mut StatusesSpace) -> Statuses {
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
    unsafe fn at(self, position: usize) -> Option<Status> {
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

/// Bytes a completed read moved, from its C status (not `MPI_STATUS_IGNORE`).
unsafe fn c_status_bytes(status: *mut c_void) -> Option<u64> {
    let get_count = pmpi!("PMPI_Get_count" as unsafe extern "C" fn(*mut c_void, Handle, *mut c_int) -> c_int);
    let mut n: c_int = 0;
    (get_count(status, mpi_byte(), &mut n) == MPI_SUCCESS && n >= 0 && n != MPI_UNDEFINED).then_some(n as u64)
}

/// The result recorded for a call that returned `ret` asking for `bytes`.
fn result_of(ret: c_int, bytes: u64, moved: Option<u64>) -> i64 {
    if ret != MPI_SUCCESS {
        -(libc::EIO as i64)
    } else {
        moved.unwrap_or(bytes).min(i64::MAX as u64) as i64
    }
}

/// A blocking read or write: timed and recorded.
pub(crate) unsafe fn blocking(
    op: IoOp,
    fh: Handle,
    at: At,
    count: i64,
    datatype: Handle,
    status: Status,
    call: impl FnOnce(*mut c_void) -> c_int,
) -> c_int {
    let Some(_nest) = MpiNest::enter() else { return call(status.as_ptr()) };
    let bytes = bytes_of(count, datatype);
    let offset = byte_offset(fh, at);
    let mut space: StatusSpace = [0; 8];
    let status = status.for_read(|| op == IoOp::Read, &mut space);
    let t0 = now_ns();
    let ret = call(status.as_ptr());
    let t1 = now_ns();
    let moved = if op == IoOp::Read && ret == MPI_SUCCESS { status.bytes() } else { None };
    emit(op, file_of(fh), offset, bytes, result_of(ret, bytes, moved), t0, t1);
    ret
}

/// A nonblocking read or write: its post time kept under its request (`request_key()`, read
/// once the call has set it) until it completes.
pub(crate) unsafe fn posted(
    op: IoOp,
    fh: Handle,
    at: At,
    count: i64,
    datatype: Handle,
    request_key: impl FnOnce() -> u64,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let Some(_nest) = MpiNest::enter() else { return call() };
    let bytes = bytes_of(count, datatype);
    let offset = byte_offset(fh, at);
    let file = file_of(fh);
    let start = now_ns();
    let ret = call();
    if ret != MPI_SUCCESS {
        emit(op, file, offset, bytes, result_of(ret, bytes, None), start, now_ns());
        return ret;
    }
    let posted = Posted { start, file, op, bytes, offset };
    let key = request_key();
    if let Some(stale) = PENDING.take(key) {
        // The library reused the handle of a call whose completion we did not see (the program
        // called `PMPI_Wait` itself): that call was done before this one was posted.
        Posted::from_words(stale).completed(start);
    }
    if !PENDING.insert(key, posted.words()) {
        // No room to wait for its completion: recorded now, over its post, so never lost.
        posted.completed(now_ns());
    }
    ret
}

/// Whether no nonblocking call waits for its completion (the common case, one relaxed load).
pub(crate) fn nothing_pending() -> bool {
    PENDING.is_empty()
}

/// The nonblocking call behind `request` completed (now).
pub(crate) unsafe fn complete(request: u64) {
    if let Some(words) = PENDING.take(request) {
        Posted::from_words(words).completed(now_ns());
    }
}

/// The status a completion call of the single request `request` is to be given
/// ([`Status::for_read`]: the request is a read in flight).
pub(crate) unsafe fn status_for(request: u64, status: Status, space: &mut StatusSpace) -> Status {
    status.for_read(
        || {
            PENDING
                .find(request)
                .is_some_and(|slot| Posted::from_words(PENDING.words_of(slot)).op == IoOp::Read)
        },
        space,
    )
}

/// The nonblocking call behind `request` completed (now), with `status`: what a read moved.
pub(crate) unsafe fn complete_with_status(request: u64, status: Status) {
    if let Some(words) = PENDING.take(request) {
        let posted = Posted::from_words(words);
        let moved = if posted.op == IoOp::Read { status.bytes() } else { None };
        posted.completed_moving(now_ns(), moved);
    }
}

/// At `MPI_Finalize`: the nonblocking calls and split collectives whose completion the program
/// did not show us (it called `PMPI_Wait` itself, or a binding not hooked) are done by now, as
/// MPI requires; recorded as ending here rather than lost (their time is then an upper bound).
pub(crate) unsafe fn complete_unseen() {
    for table in [&PENDING, &SPLIT] {
        let end = now_ns();
        table.drain(|words| Posted::from_words(words).completed(end));
    }
}

/// The pending calls among the requests one call completing many (`MPI_Waitall`, `…any`,
/// `…some`) looks at, tagged with a fresh token and their positions.
#[derive(Clone, Copy)]
pub(crate) struct Tagged {
    /// 0 when none of the requests is an MPI-IO call.
    token: u64,
    /// Whether one of them is a read: only a status tells what a read moved.
    read: bool,
}

/// Tags the pending calls among `count` requests.
unsafe fn tag_requests(count: c_int, requests: *const c_void) -> Tagged {
    tag_keys(count, |i| request_at(requests, i))
}

/// [`tag_requests`] of the requests `key_at(0..count)`.
pub(crate) unsafe fn tag_keys(count: c_int, key_at: impl Fn(usize) -> u64) -> Tagged {
    let mut tagged = Tagged { token: 0, read: false };
    if PENDING.is_empty() || count <= 0 {
        return tagged;
    }
    let token = NEXT_TOKEN.fetch_add(1, Relaxed);
    for i in 0..count as usize {
        if let Some(slot) = PENDING.find(key_at(i)) {
            PENDING.words[slot][4].store(token, Relaxed);
            PENDING.words[slot][5].store(i as u64, Relaxed);
            tagged.token = token;
            tagged.read |= Posted::from_words(PENDING.words_of(slot)).op == IoOp::Read;
        }
    }
    tagged
}

impl Tagged {
    /// The status a call completing one of the requests (`…any`) is to be given
    /// ([`Status::for_read`]: a read is among them).
    pub(crate) unsafe fn status(self, status: Status, space: &mut StatusSpace) -> Status {
        status.for_read(|| self.read, space)
    }

    /// The statuses a call completing `count` requests (`…all`, `…some`) is to be given: the
    /// program's, or an array of ours in `space` when it ignores them and a read is among the
    /// requests.
    pub(crate) unsafe fn statuses(
        self,
        count: c_int,
        statuses: Statuses,
        space: &mut StatusesSpace,
    ) -> Statuses {
        if self.read && count > 0 && statuses.ignored() {
            statuses.in_space(count as usize, space)
        } else {
            statuses
        }
    }

    /// All the requests completed (`…all`): request `i`'s status is `statuses[i]`.
    pub(crate) unsafe fn complete_all(self, statuses: Statuses) {
        complete_tagged(self.token, None, |i| statuses.at(i));
    }

    /// The request at `position` completed (`…any`), with `status`.
    pub(crate) unsafe fn complete_one(self, position: usize, status: Status) {
        complete_tagged(self.token, Some(position), |_| Some(status));
    }

    /// The requests at the positions `indices[..outcount]`, counted from `first` (0 in C, 1 in
    /// Fortran), completed (`…some`): `indices[j]`'s status is `statuses[j]`.
    pub(crate) unsafe fn complete_some(
        self,
        outcount: *const c_int,
        indices: *const c_int,
        first: c_int,
        statuses: Statuses,
    ) {
        if self.token == 0 || outcount.is_null() || indices.is_null() || *outcount == MPI_UNDEFINED {
            return;
        }
        for j in 0..(*outcount).max(0) as usize {
            if let Some(i) = (*indices.add(j)).checked_sub(first).filter(|i| *i >= 0) {
                complete_tagged(self.token, Some(i as usize), |_| statuses.at(j));
            }
        }
    }
}

/// Completes the pending calls tagged with `token` (at `position` only, if given), a read with
/// what the status `status_at(its position)` says it moved.
unsafe fn complete_tagged(token: u64, position: Option<usize>, status_at: impl Fn(usize) -> Option<Status>) {
    if token == 0 {
        return;
    }
    let end = now_ns();
    for slot in 0..TABLE_SLOTS {
        let key = PENDING.keys[slot].load(Acquire);
        if key == EMPTY || key == FREED || PENDING.words[slot][4].load(Relaxed) != token {
            continue;
        }
        let at = PENDING.words[slot][5].load(Relaxed) as usize;
        if position.is_some_and(|p| at != p) {
            continue;
        }
        if let Some(words) = PENDING.take_slot(slot, key) {
            let posted = Posted::from_words(words);
            let moved = if posted.op == IoOp::Read { status_at(at).and_then(|s| s.bytes()) } else { None };
            posted.completed_moving(end, moved);
        }
    }
}

// ---- open, close, sync ----

/// ROMIO accepts a file-system prefix (`ufs:`, `nfs:`, `lustre:`…) before the path.
unsafe fn without_fs_prefix(name: *const c_char) -> *const c_char {
    let colon = libc::strchr(name, b':' as c_int);
    let slash = libc::strchr(name, b'/' as c_int);
    if !colon.is_null() && colon.offset_from(name) >= 2 && (slash.is_null() || colon < slash) {
        colon.add(1)
    } else {
        name
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_open(
    comm: Handle,
    filename: *const c_char,
    amode: c_int,
    info: Handle,
    fh: *mut Handle,
) -> c_int {
    let real = pmpi!(
        "PMPI_File_open" as unsafe extern "C" fn(Handle, *const c_char, c_int, Handle, *mut Handle) -> c_int
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

/// Records an open of `filename` (NUL-terminated) that returned `ret` and the handle `fh`.
pub(crate) unsafe fn opened(filename: *const c_char, ret: c_int, fh: Handle, t0: u64, t1: u64) {
    if filename.is_null() {
        return;
    }
    if let Some(_g) = Guard::enter() {
        let id = define_path(without_fs_prefix(filename), libc::AT_FDCWD);
        if ret == MPI_SUCCESS && !FILES.insert(fh as u64, [id as u64, 0, 0, 0, 0, 0]) {
            // More files open at once than the table holds: their calls count under no path.
        }
        record(IoOp::Open, Layer::MpiIo, id, UNKNOWN_OFFSET, 0, result_of(ret, 0, None), t0, t1);
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_close(fh: *mut Handle) -> c_int {
    let real = pmpi!("PMPI_File_close" as unsafe extern "C" fn(*mut Handle) -> c_int);
    let Some(_nest) = MpiNest::enter() else { return real(fh) };
    let handle = if fh.is_null() { 0 } else { *fh };
    closed(handle, || real(fh))
}

/// Closes the file `fh` by `call`, recording the close.
pub(crate) unsafe fn closed(fh: Handle, call: impl FnOnce() -> c_int) -> c_int {
    let t0 = now_ns();
    let ret = call();
    let t1 = now_ns();
    let file = FILES.take(fh as u64).map_or(NO_FILE, |w| w[0] as u32);
    if file != NO_FILE {
        emit(IoOp::Close, file, UNKNOWN_OFFSET, 0, result_of(ret, 0, None), t0, t1);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn MPI_File_sync(fh: Handle) -> c_int {
    let real = pmpi!("PMPI_File_sync" as unsafe extern "C" fn(Handle) -> c_int);
    let Some(_nest) = MpiNest::enter() else { return real(fh) };
    synced(fh, || real(fh))
}

/// Syncs the file `fh` by `call`, recording the sync.
pub(crate) unsafe fn synced(fh: Handle, call: impl FnOnce() -> c_int) -> c_int {
    let t0 = now_ns();
    let ret = call();
    let t1 = now_ns();
    emit(IoOp::Fsync, file_of(fh), UNKNOWN_OFFSET, 0, result_of(ret, 0, None), t0, t1);
    ret
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
            let real = pmpi!(
                $real as unsafe extern "C" fn(Handle, *mut c_void, $count, Handle, *mut c_void) -> c_int
            );
            blocking($op, fh, $at, i64::from(count), datatype, Status::C(status), |status| {
                real(fh, buf, count, datatype, status)
            })
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
            blocking($op, fh, At::Explicit(offset), i64::from(count), datatype, Status::C(status), |status| {
                real(fh, offset, buf, count, datatype, status)
            })
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

pub(crate) unsafe fn split_begin(
    op: IoOp,
    fh: Handle,
    at: At,
    count: i64,
    datatype: Handle,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let Some(_nest) = MpiNest::enter() else { return call() };
    let bytes = bytes_of(count, datatype);
    let offset = byte_offset(fh, at);
    let file = file_of(fh);
    let start = now_ns();
    let ret = call();
    let begun = Posted { start, file, op, bytes, offset };
    if ret != MPI_SUCCESS {
        emit(op, file, offset, bytes, result_of(ret, bytes, None), start, now_ns());
    } else if !SPLIT.insert(fh as u64, begun.words()) {
        begun.completed(now_ns());
    }
    ret
}

/// Ends the split collective begun on `fh` by `call`, given the status to leave (the program's
/// `status`, or one of ours when it ignores it and a read was begun: only the status tells what
/// a read moved).
pub(crate) unsafe fn split_end(fh: Handle, status: Status, call: impl FnOnce(*mut c_void) -> c_int) -> c_int {
    let Some(_nest) = MpiNest::enter() else { return call(status.as_ptr()) };
    let mut space: StatusSpace = [0; 8];
    let status = status.for_read(
        || SPLIT.get(fh as u64).is_some_and(|words| Posted::from_words(words).op == IoOp::Read),
        &mut space,
    );
    let ret = call(status.as_ptr());
    if let Some(words) = SPLIT.take(fh as u64) {
        let begun = Posted::from_words(words);
        let end = now_ns();
        let moved = if begun.op == IoOp::Read && ret == MPI_SUCCESS { status.bytes() } else { None };
        emit(
            begun.op,
            begun.file,
            begun.offset,
            begun.bytes,
            result_of(ret, begun.bytes, moved),
            begun.start,
            end,
        );
    }
    ret
}

macro_rules! split_begin_hook {
    ($name:ident, $real:literal, $op:expr, $at:expr, $count:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fh: Handle,
            buf: *mut c_void,
            count: $count,
            datatype: Handle,
        ) -> c_int {
            let real = pmpi!($real as unsafe extern "C" fn(Handle, *mut c_void, $count, Handle) -> c_int);
            split_begin($op, fh, $at, i64::from(count), datatype, || real(fh, buf, count, datatype))
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
            let real =
                pmpi!($real as unsafe extern "C" fn(Handle, MpiOffset, *mut c_void, $count, Handle) -> c_int);
            split_begin($op, fh, At::Explicit(offset), i64::from(count), datatype, || {
                real(fh, offset, buf, count, datatype)
            })
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
            let real = pmpi!($real as unsafe extern "C" fn(Handle, *mut c_void, *mut c_void) -> c_int);
            split_end(fh, Status::C(status), |status| real(fh, buf, status))
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
    let real = pmpi!("PMPI_Wait" as unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int);
    if PENDING.is_empty() {
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(request: *mut c_void, flag: *mut c_int, status: *mut c_void) -> c_int {
    let real = pmpi!("PMPI_Test" as unsafe extern "C" fn(*mut c_void, *mut c_int, *mut c_void) -> c_int);
    if PENDING.is_empty() {
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(count: c_int, requests: *mut c_void, statuses: *mut c_void) -> c_int {
    let real = pmpi!("PMPI_Waitall" as unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int);
    if PENDING.is_empty() {
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    requests: *mut c_void,
    flag: *mut c_int,
    statuses: *mut c_void,
) -> c_int {
    let real =
        pmpi!("PMPI_Testall" as unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_void) -> c_int);
    if PENDING.is_empty() {
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    requests: *mut c_void,
    index: *mut c_int,
    status: *mut c_void,
) -> c_int {
    let real =
        pmpi!("PMPI_Waitany" as unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_void) -> c_int);
    if PENDING.is_empty() {
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    requests: *mut c_void,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut c_void,
) -> c_int {
    let real = pmpi!(
        "PMPI_Testany"
            as unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_int, *mut c_void) -> c_int
    );
    if PENDING.is_empty() {
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
            let real = pmpi!(
                $real
                    as unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, *mut c_int, *mut c_void) -> c_int
            );
            if PENDING.is_empty() {
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
    };
}
some_hook!(MPI_Waitsome, "PMPI_Waitsome");
some_hook!(MPI_Testsome, "PMPI_Testsome");

/// A request freed before it was seen complete: the call is recorded from its post to the
/// free (it completes some time after, unobserved), rather than left out.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut c_void) -> c_int {
    let real = pmpi!("PMPI_Request_free" as unsafe extern "C" fn(*mut c_void) -> c_int);
    if PENDING.is_empty() {
        return real(request);
    }
    let key = request_at(request, 0);
    let ret = real(request);
    if ret == MPI_SUCCESS {
        complete(key);
    }
    ret
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_keeps_entries_apart_and_replaces_a_stale_key() {
        let t = Box::new(HandleTable::new());
        // Keys that share a home slot probe on.
        let keys: Vec<u64> = (1..200u64).map(|i| i * 0x1000).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(t.insert(*k, [i as u64, 0, 0, 0, 0, 0]));
        }
        assert!(t.insert(keys[3], [77, 0, 0, 0, 0, 0]), "a reused handle replaces its stale entry");
        assert_eq!(t.live.load(Relaxed), keys.len() as u64);
        assert_eq!(t.take(keys[3]).unwrap()[0], 77);
        assert_eq!(t.take(keys[3]), None, "taken once");
        for (i, k) in keys.iter().enumerate().filter(|(i, _)| *i != 3) {
            assert_eq!(t.take(*k).unwrap()[0], i as u64);
        }
        assert!(t.is_empty());
        assert_eq!(t.take(0x5555), None);
        assert!(!t.insert(EMPTY, [0; WORDS]) && !t.insert(FREED, [0; WORDS]), "reserved keys");
    }

    #[test]
    fn a_full_neighbourhood_refuses_instead_of_probing_on() {
        let t = Box::new(HandleTable::new());
        let home = HandleTable::home(1);
        let same_home: Vec<u64> =
            (1..u64::MAX).filter(|k| HandleTable::home(*k) == home).take(PROBES + 1).collect();
        for k in &same_home[..PROBES] {
            assert!(t.insert(*k, [0; WORDS]));
        }
        assert!(!t.insert(same_home[PROBES], [0; WORDS]));
        assert!(t.take(same_home[0]).is_some());
        assert!(t.insert(same_home[PROBES], [5; WORDS]), "a freed slot is reused");
        assert_eq!(t.get(same_home[PROBES]).unwrap()[0], 5);
    }

    #[test]
    fn statuses_lie_at_the_stride_of_the_librarys_status_and_ours_stand_in_for_few_enough() {
        let mut space = StatusesSpace::new();
        let base: *mut c_void = space.room(STATUSES_ROOM).unwrap().cast();
        assert!(std::mem::size_of_val(&space.stack) >= STATUSES_ROOM * 24, "room for Open MPI's");
        // SAFETY: positions inside `space`; the ABI is set by hand (no MPI library here).
        unsafe {
            for (abi, stride) in [(1, 24), (2, 20)] {
                ABI.store(abi, Relaxed);
                let Some(Status::C(c)) = Statuses::C(base).at(3) else { panic!("a C status") };
                assert_eq!(c, base.byte_add(3 * stride));
                let Some(Status::Fortran(f)) = Statuses::Fortran(base.cast()).at(3) else {
                    panic!("Fortran")
                };
                assert_eq!(f.cast::<c_void>(), base.byte_add(3 * stride));
            }
            ABI.store(1, Relaxed);
            assert!(Statuses::C(std::ptr::null_mut()).at(0).is_none(), "Open MPI's MPI_STATUSES_IGNORE");
            ABI.store(2, Relaxed);
            let ignored = Statuses::C(std::ptr::without_provenance_mut(1)); // MPICH: (MPI_Status *)1
            assert!(ignored.at(0).is_none(), "MPICH's MPI_STATUSES_IGNORE");
            assert!(Statuses::Fortran(std::ptr::null_mut()).at(0).is_none());
            let read = Tagged { token: 1, read: true };
            let given = read.statuses(STATUSES_ROOM as c_int, ignored, &mut space);
            assert!(given.as_ptr() == space.stack.as_mut_ptr().cast(), "ours, on the stack, stand in");
            let mut space = StatusesSpace::new();
            let many = 3 * STATUSES_ROOM;
            let given = read.statuses(many as c_int, ignored, &mut space);
            assert!(given.as_ptr() == space.heap.as_mut_ptr().cast(), "more: ours on the heap");
            assert!(space.heap.len() * 8 >= many * 24, "room for Open MPI's");
            let mut space = StatusesSpace::new();
            let given = read.statuses(c_int::MAX, ignored, &mut space);
            assert!(given.as_ptr() == ignored.as_ptr(), "no room: ignored, the bytes asked recorded");
            let given = Tagged { token: 1, read: false }.statuses(2, ignored, &mut space);
            assert!(given.as_ptr() == ignored.as_ptr(), "no read: nothing to learn");
            ABI.store(0, Relaxed);
        }
    }

    #[test]
    fn fs_prefixes_are_stripped_but_not_paths_with_colons() {
        let cases: [(&std::ffi::CStr, &str); 5] = [
            (c"ufs:/tmp/x", "/tmp/x"),
            (c"lustre:/scratch/f", "/scratch/f"),
            (c"/tmp/a:b", "/tmp/a:b"),
            (c"c:x", "c:x"),
            (c"rel/file", "rel/file"),
        ];
        for (input, expected) in cases {
            // SAFETY: NUL-terminated literals.
            let out = unsafe { std::ffi::CStr::from_ptr(without_fs_prefix(input.as_ptr())) };
            assert_eq!(out.to_str().unwrap(), expected);
        }
    }
}
