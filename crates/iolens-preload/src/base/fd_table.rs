//! The descriptor table: for each descriptor number, the file it refers to (a path id of the
//! stream), the position our own bookkeeping gives it, and, for one that is not a file, why.
//! Every hook family that opens, closes, duplicates or moves a descriptor updates it here;
//! numbers past [`MAX_FDS`] are not tracked (they read as not files).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::*};

use iolens_record::event::{Excluded, NO_FILE, UNKNOWN_OFFSET};
use libc::{c_int, c_uint};

/// Descriptor numbers below this are tracked.
pub(crate) const MAX_FDS: usize = 65536;
/// The path id of a descriptor checked and found not to be a file (or not tracked).
pub(crate) const NOT_A_FILE: u32 = NO_FILE - 1;

/// Path id of each descriptor: NO_FILE = unknown yet, NOT_A_FILE = checked, not a file.
static PATH: [AtomicU32; MAX_FDS] = [const { AtomicU32::new(NO_FILE) }; MAX_FDS];
/// Our own idea of each descriptor's file position, for read/write without an offset.
static OFFSET: [AtomicU64; MAX_FDS] = [const { AtomicU64::new(UNKNOWN_OFFSET) }; MAX_FDS];
/// For a descriptor that is NOT_A_FILE: why ([`Excluded`] as u8).
static EXCLUDED: [AtomicU8; MAX_FDS] = [const { AtomicU8::new(Excluded::Other as u8) }; MAX_FDS];

/// Whether `fd` is a number the table tracks.
#[inline]
pub(crate) fn tracked(fd: c_int) -> bool {
    fd >= 0 && (fd as usize) < MAX_FDS
}

/// The path id of `fd`: NO_FILE when not known yet, NOT_A_FILE when not a file or not tracked.
#[inline]
pub(crate) fn path(fd: c_int) -> u32 {
    if tracked(fd) {
        PATH[fd as usize].load(Relaxed)
    } else {
        NOT_A_FILE
    }
}

/// Records that `fd` refers to the file `id`.
#[inline]
pub(crate) fn set_path(fd: c_int, id: u32) {
    if tracked(fd) {
        PATH[fd as usize].store(id, Relaxed);
    }
}

/// Sets the tracked position of `fd` (UNKNOWN_OFFSET: not known).
#[inline]
pub(crate) fn set_offset(fd: c_int, offset: u64) {
    if tracked(fd) {
        OFFSET[fd as usize].store(offset, Relaxed);
    }
}

/// Records that `fd` is not a file, for `reason`.
pub(crate) fn exclude(fd: c_int, reason: Excluded) {
    if tracked(fd) {
        EXCLUDED[fd as usize].store(reason as u8, Relaxed);
        PATH[fd as usize].store(NOT_A_FILE, Relaxed);
    }
}

/// Why `fd`, not a file, was left out (`Other` when not tracked).
pub(crate) fn excluded(fd: c_int) -> Excluded {
    if !tracked(fd) {
        return Excluded::Other;
    }
    Excluded::from_u8(EXCLUDED[fd as usize].load(Relaxed)).unwrap_or(Excluded::Other)
}

/// The offset a call on `fd` worked at: `explicit`, or the tracked position, which a call
/// that moved `moved` bytes without an explicit offset advances.
#[inline]
pub(crate) fn position(fd: c_int, explicit: Option<u64>, moved: i64) -> u64 {
    if let Some(at) = explicit {
        return at;
    }
    if !tracked(fd) {
        return UNKNOWN_OFFSET;
    }
    let slot = &OFFSET[fd as usize];
    let at = slot.load(Relaxed);
    if moved > 0 && at != UNKNOWN_OFFSET {
        slot.store(at + moved as u64, Relaxed);
    }
    at
}

/// After a successful duplication of `old` onto `new`: `new` refers to `old`'s file, at its
/// position.
pub(crate) fn duplicate(old: c_int, new: c_int) {
    if !tracked(new) || new == old {
        return;
    }
    let (path, offset) = if tracked(old) {
        EXCLUDED[new as usize].store(EXCLUDED[old as usize].load(Relaxed), Relaxed);
        (PATH[old as usize].load(Relaxed), OFFSET[old as usize].load(Relaxed))
    } else {
        (NO_FILE, UNKNOWN_OFFSET)
    };
    PATH[new as usize].store(path, Relaxed);
    OFFSET[new as usize].store(offset, Relaxed);
}

/// After `fd` was closed: it refers to no file any more.
pub(crate) fn forget(fd: c_int) {
    if tracked(fd) {
        PATH[fd as usize].store(NO_FILE, Relaxed);
        OFFSET[fd as usize].store(UNKNOWN_OFFSET, Relaxed);
    }
}

/// After the numbers `first..=last` were closed.
pub(crate) fn forget_range(first: c_uint, last: c_uint) {
    let last = (last as usize).min(MAX_FDS - 1);
    for fd in first as usize..=last {
        forget(fd as c_int);
    }
}

/// In a forked child: path ids are defined per stream, so the child rediscovers inherited
/// descriptors itself.
pub(crate) fn after_fork() {
    for slot in &PATH {
        slot.store(NO_FILE, Relaxed);
    }
}
