//! The event stream of the process: per-thread buffers taken from a static pool, written in
//! whole-buffer `write`s to `<dir>/<pid>.<start ns>.evt` on an `O_APPEND` descriptor kept high
//! in the descriptor table. The stream also hands out its path ids, keeps the counts of calls
//! signal handlers made inside the recorder, and is where hooks enter the recursion guard
//! ([`enter_guard`]): only the stream knows whether a thread's buffer is half-written.

use std::cell::UnsafeCell;
use std::sync::atomic::{
    compiler_fence, fence, AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering::*,
};

use iolens_record::event::{
    encode_block_header, encode_event, encode_excluded, encode_lost, Excluded, ExcludedCounts, IoEvent, IoOp,
    Layer, Predictor, BLOCK_HEADER_LEN, EVENT_FRAME_LEN, EVENT_MAGIC, EXCLUDED_FRAME_LEN, FLAG_GO_PROGRAM,
    FLAG_PROCESS_START, LOST_FRAME_LEN,
};
use iolens_record::program::{elf_is_go, ELF_PROBE_BYTES};
use libc::{c_char, c_int, c_void};

use crate::base::clock::{calibration_point, start_point, Calibration};
use crate::base::guard::{Guard, ENABLED};
use crate::base::raw_syscall::{errno, proc_fd_path, program_head, push_decimal, set_errno, stat_of, sys};
use crate::base::thread_state::{me, ThreadState};

/// The process the stream is of, and when it started: the stream's name.
static PID: AtomicU32 = AtomicU32::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);

/// Events of this stream lost so far (pool exhausted, writes failed): the total, written into
/// the stream's lost-events frame.
pub(crate) static DROPPED: AtomicU64 = AtomicU64::new(0);
/// The stream's descriptor: -1 not open yet, -2 being opened, else the fd.
pub(crate) static STREAM_FD: AtomicI32 = AtomicI32::new(-1);
static STREAM_INO: AtomicU64 = AtomicU64::new(0);
static THREAD_KEY: AtomicU32 = AtomicU32::new(u32::MAX);

/// The trace directory, NUL-terminated, copied from the environment at load time.
struct DirBuf(UnsafeCell<[u8; 3072]>);
// SAFETY: written once by `set_trace_dir` at start-up, before any hook records, read-only
// afterwards.
unsafe impl Sync for DirBuf {}
static TRACE_DIR: DirBuf = DirBuf(UnsafeCell::new([0; 3072]));

/// Takes the trace directory `dir` (NUL-terminated, from the environment) at start-up, and the
/// process's identity; false when there is none to trace into (unset, empty or too long).
///
/// # Safety
/// `dir` is null or NUL-terminated; called once, before any thread records.
pub(crate) unsafe fn set_up(dir: *const c_char) -> bool {
    if dir.is_null() {
        return false;
    }
    // SAFETY: `dir` is NUL-terminated (the caller's promise), and no thread reads TRACE_DIR yet.
    unsafe {
        let len = libc::strlen(dir);
        let buf = &mut *TRACE_DIR.0.get();
        if len == 0 || len >= buf.len() - 1 {
            return false;
        }
        std::ptr::copy_nonoverlapping(dir.cast::<u8>(), buf.as_mut_ptr(), len);
        buf[len] = 0;
    }
    PID.store(std::process::id(), Relaxed);
    START_NS.store(iolens_record::clock::now_ns(), Relaxed);
    true
}

/// Makes every thread's buffer written out when the thread ends (see [`thread_exit`]).
pub(crate) fn flush_at_thread_exit() {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `thread_exit` takes the value this library sets for the key (a slot index + 1).
    if unsafe { libc::pthread_key_create(&mut key, Some(thread_exit)) } == 0 {
        THREAD_KEY.store(key, Relaxed);
    }
}

/// The id of the process whose stream this is.
pub(crate) fn pid() -> u32 {
    PID.load(Relaxed)
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

pub(crate) unsafe fn raw_write_all(fd: c_int, buf: &[u8]) -> bool {
    // SAFETY: writing from a live slice asks nothing more.
    unsafe { write_whole(fd, buf).is_ok() }
}

/// Appends all of `buf` or, as far as it can, nothing: a write cut short (a full disk) is cut
/// off the file again, so the stream stays whole frames, readable past that point. The errno
/// of the failure.
unsafe fn write_whole(fd: c_int, buf: &[u8]) -> Result<(), c_int> {
    // SAFETY: each write reads at most what is left of `buf`; lseek and ftruncate take no pointer.
    unsafe {
        let mut done = 0;
        while done < buf.len() {
            let n = sys()(libc::SYS_write, fd, buf[done..].as_ptr(), buf.len() - done);
            if n < 0 {
                let why = errno();
                if why == libc::EINTR {
                    continue;
                }
                if done > 0 {
                    let end = sys()(libc::SYS_lseek, fd, 0, libc::SEEK_CUR);
                    if end >= done as i64 {
                        sys()(libc::SYS_ftruncate, fd, end - done as i64);
                    }
                }
                return Err(why);
            }
            done += n as usize;
        }
        Ok(())
    }
}

/// Why events were last lost (errno of the failed write; 0 for a full buffer pool).
pub(crate) static LOST_ERRNO: AtomicU32 = AtomicU32::new(0);
/// Where the stream's lost-events frame sits: right after the magic.
const LOST_FRAME_AT: i64 = EVENT_MAGIC.len() as i64;

/// Rewrites the stream's lost-events frame in place with the total lost so far. Its bytes
/// exist since the stream was opened, so this works on a full disk, where appending a frame
/// would not. The append descriptor cannot write at an offset: the file is opened again
/// through /proc for it.
unsafe fn write_lost_frame(fd: c_int) {
    // SAFETY: `link` is NUL-terminated; the frame is written from a live array; the descriptor
    // opened here is closed here.
    unsafe {
        let mut link = [0u8; 40];
        proc_fd_path(fd, &mut link);
        let header = sys()(libc::SYS_openat, libc::AT_FDCWD, link.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if header < 0 {
            return;
        }
        let frame = encode_lost(DROPPED.load(Relaxed), LOST_ERRNO.load(Relaxed));
        sys()(libc::SYS_pwrite64, header, frame.as_ptr(), frame.len(), LOST_FRAME_AT);
        sys()(libc::SYS_close, header);
    }
}

/// Writes the path frame of the executable and the process-start marker into `out` (at least
/// 7 + 4096 + EVENT_FRAME_LEN bytes); their length. Written straight into the stream's head,
/// never through a buffer: it must come first, and its timestamp is in nanoseconds already.
unsafe fn start_marker(out: &mut [u8]) -> usize {
    // SAFETY: readlinkat writes at most `exe.len() - 1` bytes into `exe`; getppid takes no
    // argument.
    unsafe {
        let mut exe = [0u8; 4096];
        let n = sys()(
            libc::SYS_readlinkat,
            libc::AT_FDCWD,
            c"/proc/self/exe".as_ptr(),
            exe.as_mut_ptr(),
            exe.len() - 1,
        );
        let n = n.max(0) as usize;
        let id = next_path_id();
        out[0] = 2;
        out[1..5].copy_from_slice(&id.to_le_bytes());
        out[5..7].copy_from_slice(&(n as u16).to_le_bytes());
        out[7..7 + n].copy_from_slice(&exe[..n]);
        let t = START_NS.load(Relaxed);
        let go = if runs_go() { FLAG_GO_PROGRAM } else { 0 };
        let marker = IoEvent {
            pid: PID.load(Relaxed),
            tid: tid(),
            file: id,
            op: IoOp::Other,
            layer: Layer::Posix,
            flags: FLAG_PROCESS_START | go,
            offset: libc::getppid() as u64,
            requested: 0,
            result: 0,
            start_ns: t,
            end_ns: t,
        };
        let frame: &mut [u8; EVENT_FRAME_LEN] =
            (&mut out[7 + n..7 + n + EVENT_FRAME_LEN]).try_into().unwrap();
        encode_event(&marker, frame);
        7 + n + EVENT_FRAME_LEN
    }
}

/// Whether this process runs a Go program, whose I/O no hook sees: judged by the head of
/// `/proc/self/exe`.
unsafe fn runs_go() -> bool {
    // SAFETY: a NUL-terminated path.
    unsafe {
        let mut head = [0u8; ELF_PROBE_BYTES];
        let len = program_head(c"/proc/self/exe".as_ptr(), &mut head);
        elf_is_go(&head[..len]) == Some(true)
    }
}

/// Writes `<dir>[/uid-<uid>]` into `out`; its length.
pub(crate) unsafe fn trace_dir_path(out: &mut [u8; 3200], uid: Option<u32>) -> usize {
    // SAFETY: TRACE_DIR is written only at start-up, before any thread reads it.
    unsafe {
        let dir = &*TRACE_DIR.0.get();
        let dir_len = dir.iter().position(|b| *b == 0).unwrap_or(0);
        out[..dir_len].copy_from_slice(&dir[..dir_len]);
        let mut at = dir_len;
        if let Some(uid) = uid {
            out[at..at + 5].copy_from_slice(b"/uid-");
            at += 5;
            push_decimal(out, &mut at, uid as u64);
        }
        at
    }
}

/// Opens this process's stream file: `<dir>/<pid>.<start ns>.evt`, high in the fd table.
/// A process that gave up root for another user cannot create files in the directory of the
/// user running iolens: its streams go to `<dir>/uid-<uid>/`, made for it when it changed user
/// (see `process::before_user_change`).
unsafe fn open_stream() -> c_int {
    // SAFETY: `path` is NUL-terminated (`.evt\0`) within its array; the other calls take
    // descriptors and integers.
    unsafe {
        let mut fd = -1;
        for uid in [None, Some(libc::geteuid())] {
            let mut path = [0u8; 3200];
            let mut at = trace_dir_path(&mut path, uid);
            path[at] = b'/';
            at += 1;
            push_decimal(&mut path, &mut at, PID.load(Relaxed) as u64);
            path[at] = b'.';
            at += 1;
            push_decimal(&mut path, &mut at, START_NS.load(Relaxed));
            path[at..at + 5].copy_from_slice(b".evt\0");
            fd = sys()(
                libc::SYS_openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
                0o644,
            ) as c_int;
            if fd >= 0 || !matches!(errno(), libc::EACCES | libc::EPERM) {
                break;
            }
        }
        if fd < 0 {
            return -1;
        }
        // Readable by iolens whatever the program's umask (`umask 777` would make it mode 000).
        sys()(libc::SYS_fchmod, fd, 0o600);
        let high = sys()(libc::SYS_fcntl, fd, libc::F_DUPFD_CLOEXEC, 900) as c_int;
        let fd = if high >= 0 {
            sys()(libc::SYS_close, fd);
            high
        } else {
            fd
        };
        let (ino, size) = stat_of(fd).map_or((0, 0), |st| (st.st_ino, st.st_size));
        STREAM_INO.store(ino, Relaxed);
        // The head: magic, lost-events frame, and the process-start marker naming the executable.
        let mut head = [0u8; EVENT_MAGIC.len() + LOST_FRAME_LEN + 7 + 4096 + EVENT_FRAME_LEN];
        head[..EVENT_MAGIC.len()].copy_from_slice(EVENT_MAGIC);
        let mut len = EVENT_MAGIC.len();
        head[len..len + LOST_FRAME_LEN].copy_from_slice(&encode_lost(0, 0));
        len += LOST_FRAME_LEN;
        len += start_marker(&mut head[len..]);
        if size == 0 && !raw_write_all(fd, &head[..len]) {
            sys()(libc::SYS_close, fd);
            return -1;
        }
        fd
    }
}

/// The stream descriptor, opening (or reopening, if the program closed or replaced it) it.
pub(crate) unsafe fn stream_fd() -> c_int {
    // SAFETY: opening the stream asks nothing of the caller; only the thread that swapped -1 for -2
    // opens it.
    unsafe {
        loop {
            match STREAM_FD.load(Acquire) {
                -2 => std::hint::spin_loop(),
                -1 => {
                    if STREAM_FD.compare_exchange(-1, -2, AcqRel, Relaxed).is_ok() {
                        let fd = open_stream();
                        STREAM_FD.store(fd.max(-1), Release);
                        return fd;
                    }
                }
                fd => {
                    if stat_of(fd).is_some_and(|st| st.st_ino == STREAM_INO.load(Relaxed)) {
                        return fd;
                    }
                    // Closed behind our back (close_range, closefrom) or the number reused: reopen.
                    if STREAM_FD.compare_exchange(fd, -1, AcqRel, Relaxed).is_err() {
                        continue;
                    }
                }
            }
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
            PID.load(Relaxed),
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
    PID.store(std::process::id(), Relaxed);
    START_NS.store(iolens_record::clock::now_ns(), Relaxed);
    me().tid.set(0);
    let fd = STREAM_FD.swap(-1, AcqRel);
    if fd >= 0 {
        // SAFETY: closes the parent's stream descriptor, which the child inherited.
        unsafe { sys()(libc::SYS_close, fd) };
    }
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
