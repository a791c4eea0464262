//! The event stream of the process: per-thread buffers taken from a static pool, written in
//! whole-buffer `write`s to `<dir>/<pid>.<start ns>.evt` on an `O_APPEND` descriptor kept high
//! in the descriptor table. The stream also hands out its path ids, keeps the counts of calls
//! signal handlers made inside the recorder, and is where hooks enter the recursion guard
//! ([`enter_guard`]): only the stream knows whether a thread's buffer is half-written. The
//! file itself is `file`'s.

use std::cell::UnsafeCell;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::*};

use iolens_record::event::{
    encode_block_header, encode_excluded, Excluded, ExcludedCounts, Predictor, BLOCK_HEADER_LEN,
    EXCLUDED_FRAME_LEN,
};
use libc::{c_int, c_void};

use crate::base::clock::{calibration_point, start_point, Calibration};
use crate::base::guard::{Guard, ENABLED};
use crate::base::raw_syscall::{errno, set_errno, sys};
use crate::base::thread_state::{me, ThreadState};

mod file;

pub(crate) use file::{pid, raw_write_all, set_up, stream_fd, trace_dir_path, LOST_ERRNO, STREAM_FD};
use file::{write_lost_frame, write_whole};

/// Events of this stream lost so far (pool exhausted, writes failed): the total, written into
/// the stream's lost-events frame.
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);
static THREAD_KEY: AtomicU32 = AtomicU32::new(u32::MAX);

/// Makes every thread's buffer written out when the thread ends (see [`thread_exit`]).
pub(crate) fn flush_at_thread_exit() {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `thread_exit` takes the value this library sets for the key (a slot index + 1).
    if unsafe { libc::pthread_key_create(&mut key, Some(thread_exit)) } == 0 {
        THREAD_KEY.store(key, Relaxed);
    }
}

/// Path ids given out so far: each names a path in this stream's path frames.
static NEXT_PATH: AtomicU32 = AtomicU32::new(0);

/// A fresh path id of this stream.
pub(crate) fn next_path_id() -> u32 {
    NEXT_PATH.fetch_add(1, Relaxed)
}

/// Enters the hook guard (see [`Guard`]): not while the recorder is off, nor in a signal
/// handler's hook while the thread's buffer is half-written.
#[inline(always)]
pub(crate) fn enter_guard() -> Option<Guard> {
    Guard::enter(may_interrupt)
}

pub(crate) const SLOTS: usize = 256;
pub(crate) const SLOT_BYTES: usize = 64 * 1024;
/// A thread without a slot yet (thread_state.c starts every thread so).
pub(crate) const NO_SLOT: u32 = u32::MAX;
// `slot_of` tells "no slot" apart by its being out of the pool's range.
const _: () = assert!(NO_SLOT as usize >= SLOTS);

/// A slot's owner is not touching it.
const IDLE: u8 = 0;
/// Its owner is appending to it or flushing it.
const WRITING: u8 = 1;
/// A thread about to exec is writing it out: the owner waits (the exec replaces the process,
/// or fails and thaws the slot). Set this way only without membarrier (see [`ASYMMETRIC`]).
const FROZEN: u8 = 2;

/// Whether the process is registered for `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`. The
/// owner of a slot then marks it busy with a plain store, and the rare freezer (exec, exit)
/// pays for the ordering with one membarrier call, where a compare-exchange per event would
/// cost every call about 9 ns. Without it, owners and freezers compare-exchange the state.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: c_int = 1 << 4;

/// Registers the process for expedited membarriers: at start-up, and in a forked child (the
/// registration belongs to the address space, which the child has anew). Only while one
/// thread runs, as switching protocols under a running owner would not be safe.
pub(crate) fn register_membarrier() {
    let saved = errno();
    // SAFETY: membarrier takes no pointer.
    let registered =
        unsafe { sys()(libc::SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) } == 0;
    ASYMMETRIC.store(registered, Relaxed);
    set_errno(saved);
}

pub(crate) struct Slot {
    pub(crate) claimed: AtomicBool,
    /// IDLE, WRITING or FROZEN: lets an exec write out the buffers of the other threads, which
    /// the exec is about to end, without tearing a frame they are appending.
    state: AtomicU8,
    /// Set by a thread about to exec on every slot but its own: owners keep off it.
    frozen: AtomicBool,
    /// Bytes in `data`: the block header's room, then frames. At least [`BLOCK_HEADER_LEN`]
    /// while the slot is claimed.
    pub(crate) len: UnsafeCell<usize>,
    pub(crate) events: UnsafeCell<u64>,
    /// The owner's thread id, for the block header (another thread may flush the slot).
    pub(crate) tid: UnsafeCell<u32>,
    /// What the block's next compact event is coded against.
    pub(crate) predictor: UnsafeCell<Predictor>,
    /// Calls on descriptors that are not files, and their bytes, by reason, since the last
    /// write of them.
    pub(crate) excluded: UnsafeCell<ExcludedCounts>,
    /// Where the clock segment of the buffer's next flush starts.
    pub(crate) calibration: UnsafeCell<Calibration>,
    /// One block: its header (written at the flush, when its segment's end is known), then
    /// frames.
    pub(crate) data: UnsafeCell<[u8; SLOT_BYTES]>,
}

impl Slot {
    /// Idle and not frozen: in a forked child, the only thread left, whatever the parent's
    /// threads were doing at the fork.
    pub(crate) fn reset_owner_state(&self) {
        self.state.store(IDLE, Relaxed);
        self.frozen.store(false, Relaxed);
    }

    /// Empties the buffer for a new block, whose segment starts at the slot's calibration
    /// point. Only by the owner, or with the owner stopped.
    pub(crate) unsafe fn start_block(&self) {
        // SAFETY: only the owner, or a thread with the owner stopped, touches the slot's cells (the
        // caller's promise).
        unsafe {
            *self.len.get() = BLOCK_HEADER_LEN;
            *self.events.get() = 0;
            *self.predictor.get() = Predictor::new((*self.calibration.get()).0);
        }
    }
}

// SAFETY: a slot's buffer is touched only by the thread that claimed it (or, at exit and
// exec, by the one thread left running).
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    claimed: AtomicBool::new(false),
    state: AtomicU8::new(IDLE),
    frozen: AtomicBool::new(false),
    len: UnsafeCell::new(0),
    events: UnsafeCell::new(0),
    tid: UnsafeCell::new(0),
    predictor: UnsafeCell::new(Predictor::new(0)),
    excluded: UnsafeCell::new([(0, 0); Excluded::ALL.len()]),
    calibration: UnsafeCell::new((0, 0)),
    data: UnsafeCell::new([0; SLOT_BYTES]),
};
pub(crate) static POOL: [Slot; SLOTS] = [EMPTY_SLOT; SLOTS];
#[inline]
pub(crate) fn tid() -> u32 {
    tid_of(me())
}

/// The id of the thread whose state `me` is.
#[inline]
pub(crate) fn tid_of(me: &ThreadState) -> u32 {
    let t = &me.tid;
    if t.get() == 0 {
        // SAFETY: gettid has no arguments and cannot fail.
        t.set(unsafe { sys()(libc::SYS_gettid) } as u32);
    }
    t.get()
}

/// The slot of the thread whose state `me` is (the calling thread's), claiming one on first
/// use. `None` when the pool is exhausted.
#[inline(always)]
pub(crate) unsafe fn slot_of(me: &ThreadState) -> Option<&'static Slot> {
    // SAFETY: `me` is the calling thread's state (the caller's promise): a slot claimed here is the
    // calling thread's.
    unsafe {
        // NO_SLOT is out of range too: one comparison for both.
        match POOL.get(me.slot.get() as usize) {
            Some(slot) => Some(slot),
            None => claim_slot(),
        }
    }
}

/// Claims a free slot of the pool for this thread (its first event).
#[cold]
#[inline(never)]
unsafe fn claim_slot() -> Option<&'static Slot> {
    // SAFETY: the slot was just claimed by this thread (the compare-exchange), so no other thread
    // touches its cells; the key's value is what `thread_exit` expects.
    unsafe {
        let idx = (0..SLOTS as u32)
            .find(|&i| POOL[i as usize].claimed.compare_exchange(false, true, AcqRel, Relaxed).is_ok())?;
        let slot = &POOL[idx as usize];
        *slot.calibration.get() = start_point();
        slot.start_block();
        *slot.excluded.get() = Default::default();
        *slot.tid.get() = tid();
        me().slot.set(idx);
        let key = THREAD_KEY.load(Relaxed);
        if key != u32::MAX {
            // Its destructor flushes and releases the slot when the thread ends.
            libc::pthread_setspecific(key, (idx as usize + 1) as *const c_void);
        }
        Some(&POOL[idx as usize])
    }
}

/// Runs `f` on this thread's slot, marked as being written so that an exec in another thread
/// waits for the frame to be whole. `None` when the pool is exhausted.
///
/// Uncontended but for the moment of an exec: two plain stores per event (with membarrier), no
/// shared lock.
#[inline]
pub(crate) unsafe fn with_my_slot<R>(f: impl FnOnce(&'static Slot) -> R) -> Option<R> {
    // SAFETY: `me()` is the calling thread's state.
    unsafe { with_slot_of(me(), f) }
}

/// [`with_my_slot`] for the calling thread, whose state `me` is.
#[inline(always)]
pub(crate) unsafe fn with_slot_of<R>(me: &ThreadState, f: impl FnOnce(&'static Slot) -> R) -> Option<R> {
    // SAFETY: `me` is the calling thread's state (the caller's promise): the slot is its own, and
    // marked busy around `f`.
    unsafe {
        let slot = slot_of(me)?;
        enter_slot(slot);
        let r = f(slot);
        leave_slot(slot);
        Some(r)
    }
}

/// Whether a signal handler that interrupted the recording of the thread whose state is `me`
/// may record: not while its buffer is half-written, nor while it is being claimed.
#[cold]
#[inline(never)]
fn may_interrupt(me: &ThreadState) -> bool {
    POOL.get(me.slot.get() as usize).is_some_and(|slot| slot.state.load(Relaxed) != WRITING)
}

/// Marks the caller's `slot` as no longer being written.
#[inline(always)]
pub(crate) fn leave_slot(slot: &Slot) {
    slot.state.store(IDLE, Release);
}

/// Marks `slot` as being written by its owner, once no exec is writing it out.
#[inline(always)]
pub(crate) unsafe fn enter_slot(slot: &Slot) {
    // SAFETY: sched_yield has no preconditions.
    unsafe {
        if ASYMMETRIC.load(Relaxed) {
            loop {
                slot.state.store(WRITING, Relaxed);
                // Keeps the store before the load below in the program; the freezer's membarrier
                // orders them in the hardware (see `freeze_and_flush_all`).
                compiler_fence(SeqCst);
                if !slot.frozen.load(Acquire) {
                    return;
                }
                slot.state.store(IDLE, Release);
                while slot.frozen.load(Acquire) {
                    libc::sched_yield();
                }
            }
        }
        while slot.state.compare_exchange(IDLE, WRITING, Acquire, Relaxed).is_err() {
            libc::sched_yield();
        }
    }
}

/// Appends a path frame and writes the calling thread's buffer out: the reader names a file
/// from the frame before the calls on it, and another thread's calls on the descriptor (opened
/// here, used there) may reach the stream long before this thread's buffer fills.
pub(crate) unsafe fn append_path_frame(frames: &[&[u8]]) {
    // SAFETY: `with_my_slot` hands over the calling thread's slot, marked busy.
    unsafe {
        with_my_slot(|slot| {
            append_to(slot, frames);
            flush_slot(slot);
        });
    }
}

/// Appends frames that are not events to `slot`, flushing it first when they do not fit.
unsafe fn append_to(slot: &Slot, frames: &[&[u8]]) {
    // SAFETY: `slot` is the calling thread's and marked busy (the caller's promise): no other
    // thread touches its cells.
    unsafe {
        let total: usize = frames.iter().map(|f| f.len()).sum();
        let len = &mut *slot.len.get();
        if *len + total > SLOT_BYTES {
            flush_slot(slot);
        }
        let data = &mut *slot.data.get();
        for f in frames {
            data[*len..*len + f.len()].copy_from_slice(f);
            *len += f.len();
        }
    }
}

/// Writes the slot's block out and starts the next one. The block's clock segment ends at a
/// point taken now, after every event in it ended (buffers are flushed as soon as they fill).
#[cold]
#[inline(never)]
pub(crate) unsafe fn flush_slot(slot: &Slot) {
    // SAFETY: `slot` is the calling thread's and marked busy, or its owner is held off (the
    // caller's promise): no other thread touches its cells.
    unsafe {
        let len = *slot.len.get();
        if len <= BLOCK_HEADER_LEN {
            return;
        }
        let saved = errno();
        let fd = stream_fd();
        let data = &mut (&mut *slot.data.get())[..len];
        let calibration = &mut *slot.calibration.get();
        let now = calibration_point();
        data[..BLOCK_HEADER_LEN].copy_from_slice(&encode_block_header(
            pid(),
            *slot.tid.get(),
            *calibration,
            now,
        ));
        *calibration = now;
        let written = if fd < 0 { Err(errno()) } else { write_whole(fd, data) };
        if let Err(why) = written {
            DROPPED.fetch_add(*slot.events.get(), Relaxed);
            LOST_ERRNO.store(why as u32, Relaxed);
            if fd >= 0 {
                write_lost_frame(fd);
            }
        }
        slot.start_block();
        set_errno(saved);
    }
}

/// Flushes every buffer and writes the drop count: at exit, exec, and _exit.
pub(crate) unsafe fn flush_all() {
    // SAFETY: freezing waits until every owner has left its slot before writing it.
    unsafe {
        freeze_and_flush_all();
        thaw_all();
    }
}

/// Writes out every thread's buffer, and leaves the slots frozen: their threads wait until
/// [`thaw_all`]. Before an exec, which ends every other thread: what they buffered is written
/// whole, and nothing they do meanwhile tears a frame.
pub(crate) unsafe fn freeze_and_flush_all() {
    // SAFETY: this thread's own slot is marked busy while it is written out; every other slot is
    // written only once its owner has left it, and is held off meanwhile (frozen).
    unsafe {
        if !ENABLED.load(Relaxed) {
            return;
        }
        // A signal handler's hook on this thread records as one inside a hook would: not while our
        // own buffer is written out below (see `Guard`).
        let me = me();
        let outer = me.enter_hook();
        let mine = me.slot.get();
        let others = || POOL.iter().enumerate().filter(move |(i, _)| *i as u32 != mine).map(|(_, slot)| slot);
        for slot in others() {
            slot.frozen.store(true, Relaxed);
        }
        // A thread claiming a slot from now on (a locked instruction, so a full barrier) sees it
        // frozen; the threads that hold one already are the only ones to order with.
        fence(SeqCst);
        let others_hold_slots = others().any(|slot| slot.claimed.load(Acquire));
        let asymmetric = ASYMMETRIC.load(Relaxed);
        if asymmetric && others_hold_slots {
            // Every thread now sees its slot frozen, or had marked it busy before (Dekker's
            // handshake, with this call as the other side's barrier). Only here, with other
            // threads about: a single-threaded process (a sandboxed child, say, whose seccomp
            // filter may not allow membarrier) never makes the call.
            let saved = errno();
            sys()(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
            set_errno(saved);
        }
        for (i, slot) in POOL.iter().enumerate() {
            if !slot.claimed.load(Acquire) {
                continue;
            }
            if i as u32 == mine {
                // Marked busy only while it is written out, against this thread's signal handlers:
                // never while waiting for the others, one of which may be waiting for it (two
                // threads exiting and exec'ing at once).
                let before = slot.state.swap(WRITING, Relaxed);
                compiler_fence(SeqCst);
                flush_slot(slot);
                write_excluded(slot);
                compiler_fence(SeqCst);
                slot.state.store(before, Release);
                continue;
            }
            if asymmetric {
                while slot.state.load(Acquire) != IDLE {
                    libc::sched_yield();
                }
            } else {
                while slot.state.compare_exchange(IDLE, FROZEN, Acquire, Relaxed).is_err() {
                    libc::sched_yield();
                }
            }
            flush_slot(slot);
            write_excluded(slot);
        }
        write_interrupted();
        if DROPPED.load(Relaxed) > 0 {
            let fd = stream_fd();
            if fd >= 0 {
                write_lost_frame(fd);
            }
        }
        me.set_in_hook(outer);
    }
}

/// Lets the threads frozen by [`freeze_and_flush_all`] go on (the exec failed).
pub(crate) unsafe fn thaw_all() {
    for slot in &POOL {
        let _ = slot.state.compare_exchange(FROZEN, IDLE, Release, Relaxed);
        slot.frozen.store(false, Release);
    }
}

pub(crate) unsafe extern "C" fn thread_exit(value: *mut c_void) {
    // SAFETY: `value` is the slot index + 1 this thread set in `claim_slot`: the exiting thread's
    // own slot.
    unsafe {
        let idx = value as usize;
        if idx == 0 || idx > SLOTS {
            return;
        }
        let slot = &POOL[idx - 1];
        // A signal handler's hook meanwhile passes through (see `Guard`) instead of waiting for
        // the buffer this thread holds.
        let me = me();
        let outer = me.enter_hook();
        enter_slot(slot);
        flush_slot(slot);
        write_excluded(slot);
        slot.state.store(IDLE, Release);
        slot.claimed.store(false, Release);
        // I/O of a later destructor of this thread claims a slot anew, not this released one.
        me.slot.set(NO_SLOT);
        me.set_in_hook(outer);
    }
}

/// Calls (and the bytes of their reads and writes) that signal handlers made while this
/// process's recorder was writing down the call they interrupted, by [`Excluded`] reason: the
/// thread's buffer may be half-written then, so they are counted here, with atomics, and
/// written out at the end (`record::count_interrupted` says under which reason).
static INTERRUPTED: [[AtomicU64; 2]; Excluded::ALL.len()] =
    [const { [AtomicU64::new(0), AtomicU64::new(0)] }; Excluded::ALL.len()];

/// Counts `calls` calls made by signal handlers inside the recorder, concerning `bytes`.
pub(crate) fn add_interrupted(reason: Excluded, calls: u64, bytes: u64) {
    INTERRUPTED[reason as usize][0].fetch_add(calls, Relaxed);
    INTERRUPTED[reason as usize][1].fetch_add(bytes, Relaxed);
}

/// The calls counted by [`add_interrupted`] and their bytes, by reason, taken (counting
/// starts over).
fn take_interrupted() -> [(u64, u64); Excluded::ALL.len()] {
    std::array::from_fn(|r| (INTERRUPTED[r][0].swap(0, Relaxed), INTERRUPTED[r][1].swap(0, Relaxed)))
}

/// Writes the counts of calls made by signal handlers inside the recorder, and starts them
/// over.
unsafe fn write_interrupted() {
    // SAFETY: writes from a local array.
    unsafe {
        let counts = take_interrupted();
        if !write_excluded_counts(&counts) {
            // Kept for the next try (a later exit or exec of this process).
            for (reason, (calls, bytes)) in Excluded::ALL.iter().zip(counts) {
                add_interrupted(*reason, calls, bytes);
            }
        }
    }
}

/// Writes the slot's counts of excluded calls, at the end of its thread or process (they are
/// totals, not events: nothing is lost by keeping them until then).
unsafe fn write_excluded(slot: &Slot) {
    // SAFETY: the slot's owner is this thread, or held off (the caller's promise).
    unsafe {
        let counts = &mut *slot.excluded.get();
        if write_excluded_counts(counts) {
            *counts = Default::default();
        }
    }
}

/// Writes a frame for each reason with calls in `counts`; whether they reached the stream (or
/// there were none).
unsafe fn write_excluded_counts(counts: &ExcludedCounts) -> bool {
    // SAFETY: writes from a local array.
    unsafe {
        let mut frames = [0u8; EXCLUDED_FRAME_LEN * Excluded::ALL.len()];
        let mut len = 0;
        for (reason, (calls, bytes)) in Excluded::ALL.iter().zip(counts.iter()) {
            if *calls > 0 {
                frames[len..len + EXCLUDED_FRAME_LEN]
                    .copy_from_slice(&encode_excluded(*reason, *calls, *bytes));
                len += EXCLUDED_FRAME_LEN;
            }
        }
        if len == 0 {
            return true;
        }
        let saved = errno();
        let fd = stream_fd();
        let written = fd >= 0 && raw_write_all(fd, &frames[..len]);
        set_errno(saved);
        written
    }
}

/// In a forked child: a stream of its own. The parent's buffered events are the parent's to
/// write; the child starts empty and keeps only the slot of the thread that forked (the only
/// thread the child has). Its stream is opened by [`stream_fd`], once the other layers have
/// forgotten the parent's state.
pub(crate) fn after_fork() {
    file::restart_after_fork();
    me().tid.set(0);
    let mine = me().slot.get();
    for (i, slot) in POOL.iter().enumerate() {
        slot.reset_owner_state();
        // SAFETY: the child's only thread is this one, so no owner touches the slot.
        unsafe {
            slot.start_block();
            *slot.excluded.get() = Default::default();
            if i as u32 == mine {
                *slot.tid.get() = tid();
            } else {
                slot.claimed.store(false, Relaxed);
            }
        }
    }
    DROPPED.store(0, Relaxed);
    take_interrupted();
    LOST_ERRNO.store(0, Relaxed);
    register_membarrier();
}
