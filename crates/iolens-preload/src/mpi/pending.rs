//! What the C and Fortran MPI-IO hooks share: the files open, the calls in flight and how
//! each kind of call is recorded, at layer `mpiio` with bytes = count × datatype size and
//! offsets in bytes.
//!
//! A nonblocking call is recorded from its post to the completion the program observes (the
//! `MPI_Wait`/`MPI_Test` family); until then it waits in a lock-free table keyed by its
//! request. One whose completion the program did not show (through `PMPI_Wait`) ends when the
//! library reuses its request handle, or at `MPI_Finalize`. A read records the bytes its status
//! says it moved, whichever call completes it: the status of `MPI_Wait`/`MPI_Test`/`…any`, the
//! one at its position in the statuses of `…all`/`…some`, or the status of a split collective's
//! `_end`; where the program ignores them, a status or an array of ours stands in while a read
//! is awaited (see `mpi::status`). The POSIX calls the middleware makes beneath (data sieving,
//! collective buffering; nonblocking calls through POSIX aio) are recorded by the POSIX hooks
//! as usual: an MPI-IO hook does not hold the recursion guard while the real function runs.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::*};

use iolens_record::event::{IoOp, Layer, NO_FILE, UNKNOWN_OFFSET};
use libc::{c_char, c_int, c_void};

use crate::base::clock::now_ns;
use crate::base::guard::ENABLED;
use crate::base::handle_table::{HandleTable, WORDS};
use crate::mpi::abi::{pmpi, request_at, Handle, MpiOffset, MPI_SUCCESS, MPI_UNDEFINED};
use crate::mpi::status::{Status, StatusSpace, Statuses, StatusesSpace};
use crate::record::{define_path, record};
use crate::stream::enter_guard;

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

/// Files the program opened through MPI-IO: file handle → path id.
static FILES: HandleTable = HandleTable::new();
/// Nonblocking calls posted and not yet seen complete: request → [`Posted`].
static PENDING: HandleTable = HandleTable::new();
/// Split collectives begun and not yet ended: file handle → [`Posted`] (one per file at a
/// time, as MPI allows).
static SPLIT: HandleTable = HandleTable::new();
/// Tags the requests one `MPI_Waitall`/`Testall`/`…any`/`…some` call looks at.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);
/// Where a pending call's words keep the token of the completion call looking at it, and its
/// position among that call's requests.
const TOKEN: usize = 4;
const POSITION: usize = 5;

/// A call posted, waiting for its completion, as the table's words: start, path id and op,
/// bytes, byte offset, and the (token, position) of the completion call looking at it
/// ([`TOKEN`], [`POSITION`]).
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
        // SAFETY: `emit` records only inside the hook guard, which it enters itself.
        unsafe {
            self.completed_moving(end, None);
        }
    }

    /// Completed at `end`, having moved `moved` bytes if told.
    unsafe fn completed_moving(&self, end: u64, moved: Option<u64>) {
        // SAFETY: `emit` records only inside the hook guard, which it enters itself.
        unsafe {
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
}

/// Records one MPI-IO event, unless the thread is inside another hook's recording.
unsafe fn emit(op: IoOp, file: u32, offset: u64, bytes: u64, result: i64, start: u64, end: u64) {
    // SAFETY: inside the guard the event goes to this thread's buffer.
    unsafe {
        if let Some(_g) = enter_guard() {
            record(op, Layer::MpiIo, file, offset, bytes, result, start, end);
        }
    }
}

/// The path id of an open MPI file.
fn file_of(fh: Handle) -> u32 {
    FILES.get(fh as u64).map_or(NO_FILE, |w| w[0] as u32)
}

/// count × the datatype's size, in bytes (0 when the datatype is invalid). The count is an
/// `int`, or an `MPI_Count` in the large-count (`_c`) forms of MPI 4.
pub(crate) unsafe fn bytes_of(count: i64, datatype: Handle) -> u64 {
    // SAFETY: PMPI_Type_size_x takes a datatype handle of the program's call and a local
    // out-argument.
    unsafe {
        let type_size = pmpi!("PMPI_Type_size_x" as unsafe extern "C" fn(Handle, *mut i64) -> c_int);
        let mut size: i64 = 0;
        if count <= 0 || type_size(datatype, &mut size) != MPI_SUCCESS || size <= 0 {
            return 0;
        }
        (count as u64).saturating_mul(size as u64)
    }
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
    // SAFETY: the PMPI calls take the program's file handle and local out-arguments.
    unsafe {
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
    // SAFETY: `call` is the program's call, given a status of the kind it takes (its own, or one of
    // ours in `space`).
    unsafe {
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
    // SAFETY: `call` is the program's call; `request_key` reads the request it set.
    unsafe {
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
}

/// Whether no nonblocking call waits for its completion (the common case, one relaxed load).
pub(crate) fn nothing_pending() -> bool {
    PENDING.is_empty()
}

/// The nonblocking call behind `request` completed (now).
pub(crate) unsafe fn complete(request: u64) {
    // SAFETY: `emit` records only inside the hook guard, which it enters itself.
    unsafe {
        if let Some(words) = PENDING.take(request) {
            Posted::from_words(words).completed(now_ns());
        }
    }
}

/// The status a completion call of the single request `request` is to be given
/// ([`Status::for_read`]: the request is a read in flight).
pub(crate) unsafe fn status_for(request: u64, status: Status, space: &mut StatusSpace) -> Status {
    // SAFETY: `status` is the program's status argument, of the kind it says (the caller's
    // promise).
    unsafe {
        status.for_read(
            || PENDING.get(request).is_some_and(|words| Posted::from_words(words).op == IoOp::Read),
            space,
        )
    }
}

/// The nonblocking call behind `request` completed (now), with `status`: what a read moved.
pub(crate) unsafe fn complete_with_status(request: u64, status: Status) {
    // SAFETY: `status` is the status the completion call just filled, of the kind it says (the
    // caller's promise).
    unsafe {
        if let Some(words) = PENDING.take(request) {
            let posted = Posted::from_words(words);
            let moved = if posted.op == IoOp::Read { status.bytes() } else { None };
            posted.completed_moving(now_ns(), moved);
        }
    }
}

/// At `MPI_Finalize`: the nonblocking calls and split collectives whose completion the program
/// did not show us (it called `PMPI_Wait` itself, or a binding not hooked) are done by now, as
/// MPI requires; recorded as ending here rather than lost (their time is then an upper bound).
pub(crate) unsafe fn complete_unseen() {
    // SAFETY: `emit` records only inside the hook guard, which it enters itself.
    unsafe {
        for table in [&PENDING, &SPLIT] {
            let end = now_ns();
            table.drain(|words| Posted::from_words(words).completed(end));
        }
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
pub(crate) unsafe fn tag_requests(count: c_int, requests: *const c_void) -> Tagged {
    // SAFETY: `requests` holds `count` requests (the caller's promise).
    unsafe { tag_keys(count, |i| request_at(requests, i)) }
}

/// [`tag_requests`] of the requests `key_at(0..count)`.
pub(crate) unsafe fn tag_keys(count: c_int, key_at: impl Fn(usize) -> u64) -> Tagged {
    let mut tagged = Tagged { token: 0, read: false };
    if PENDING.is_empty() || count <= 0 {
        return tagged;
    }
    let token = NEXT_TOKEN.fetch_add(1, Relaxed);
    for i in 0..count as usize {
        if let Some(words) = PENDING.set_words(key_at(i), TOKEN, &[token, i as u64]) {
            tagged.token = token;
            tagged.read |= Posted::from_words(words).op == IoOp::Read;
        }
    }
    tagged
}

impl Tagged {
    /// The status a call completing one of the requests (`…any`) is to be given
    /// ([`Status::for_read`]: a read is among them).
    pub(crate) unsafe fn status(self, status: Status, space: &mut StatusSpace) -> Status {
        // SAFETY: `status` is the program's status argument (the caller's promise).
        unsafe { status.for_read(|| self.read, space) }
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
        // SAFETY: `statuses` is the program's statuses argument for `count` requests (the caller's
        // promise).
        unsafe { statuses.for_reads(self.read, count, space) }
    }

    /// All the requests completed (`…all`): request `i`'s status is `statuses[i]`.
    pub(crate) unsafe fn complete_all(self, statuses: Statuses) {
        // SAFETY: `statuses` were just filled by the completion call (the caller's promise).
        unsafe {
            complete_tagged(self.token, None, |i| statuses.at(i));
        }
    }

    /// The request at `position` completed (`…any`), with `status`.
    pub(crate) unsafe fn complete_one(self, position: usize, status: Status) {
        // SAFETY: `status` was just filled by the completion call (the caller's promise).
        unsafe {
            complete_tagged(self.token, Some(position), |_| Some(status));
        }
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
        // SAFETY: `outcount`, `indices` and `statuses` were just filled by the completion call (the
        // caller's promise): `indices` and `statuses` hold `*outcount` entries.
        unsafe {
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
}

/// Completes the pending calls tagged with `token` (at `position` only, if given), a read with
/// what the status `status_at(its position)` says it moved.
unsafe fn complete_tagged(token: u64, position: Option<usize>, status_at: impl Fn(usize) -> Option<Status>) {
    // SAFETY: each status `status_at` gives was filled by the completion call.
    unsafe {
        if token == 0 {
            return;
        }
        let end = now_ns();
        let looked_at = |words: &[u64; WORDS]| {
            words[TOKEN] == token && position.is_none_or(|p| words[POSITION] as usize == p)
        };
        PENDING.drain_matching(looked_at, |words| {
            let posted = Posted::from_words(words);
            let at = words[POSITION] as usize;
            let moved = if posted.op == IoOp::Read { status_at(at).and_then(|s| s.bytes()) } else { None };
            posted.completed_moving(end, moved);
        });
    }
}

// ---- open, close, sync ----

/// ROMIO accepts a file-system prefix (`ufs:`, `nfs:`, `lustre:`…) before the path.
unsafe fn without_fs_prefix(name: *const c_char) -> *const c_char {
    // SAFETY: `name` is NUL-terminated (the caller's promise); a colon found in it lies before its
    // end.
    unsafe {
        let colon = libc::strchr(name, b':' as c_int);
        let slash = libc::strchr(name, b'/' as c_int);
        if !colon.is_null() && colon.offset_from(name) >= 2 && (slash.is_null() || colon < slash) {
            colon.add(1)
        } else {
            name
        }
    }
}
/// Records an open of `filename` (NUL-terminated) that returned `ret` and the handle `fh`.
pub(crate) unsafe fn opened(filename: *const c_char, ret: c_int, fh: Handle, t0: u64, t1: u64) {
    // SAFETY: `filename` is null or NUL-terminated (the caller's promise).
    unsafe {
        if filename.is_null() {
            return;
        }
        if let Some(_g) = enter_guard() {
            let id = define_path(without_fs_prefix(filename), libc::AT_FDCWD);
            if ret == MPI_SUCCESS && !FILES.insert(fh as u64, [id as u64, 0, 0, 0, 0, 0]) {
                // More files open at once than the table holds: their calls count under no path.
            }
            record(IoOp::Open, Layer::MpiIo, id, UNKNOWN_OFFSET, 0, result_of(ret, 0, None), t0, t1);
        }
    }
}
/// Closes the file `fh` by `call`, recording the close.
pub(crate) unsafe fn closed(fh: Handle, call: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: `call` is the program's close; `emit` enters the hook guard itself.
    unsafe {
        let t0 = now_ns();
        let ret = call();
        let t1 = now_ns();
        let file = FILES.take(fh as u64).map_or(NO_FILE, |w| w[0] as u32);
        if file != NO_FILE {
            emit(IoOp::Close, file, UNKNOWN_OFFSET, 0, result_of(ret, 0, None), t0, t1);
        }
        ret
    }
}
/// Syncs the file `fh` by `call`, recording the sync.
pub(crate) unsafe fn synced(fh: Handle, call: impl FnOnce() -> c_int) -> c_int {
    // SAFETY: `call` is the program's sync; `emit` enters the hook guard itself.
    unsafe {
        let t0 = now_ns();
        let ret = call();
        let t1 = now_ns();
        emit(IoOp::Fsync, file_of(fh), UNKNOWN_OFFSET, 0, result_of(ret, 0, None), t0, t1);
        ret
    }
}
// ---- split collectives: from _begin to _end ----

pub(crate) unsafe fn split_begin(
    op: IoOp,
    fh: Handle,
    at: At,
    count: i64,
    datatype: Handle,
    call: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: `call` is the program's call; the PMPI calls take its file handle and datatype.
    unsafe {
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
}

/// Ends the split collective begun on `fh` by `call`, given the status to leave (the program's
/// `status`, or one of ours when it ignores it and a read was begun: only the status tells what
/// a read moved).
pub(crate) unsafe fn split_end(fh: Handle, status: Status, call: impl FnOnce(*mut c_void) -> c_int) -> c_int {
    // SAFETY: `call` is the program's call, given a status of the kind it takes (its own, or one of
    // ours in `space`).
    unsafe {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
