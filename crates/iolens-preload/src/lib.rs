//! `libiolens_preload.so`: loaded with `LD_PRELOAD` by `iolens trace`, it records the POSIX and
//! stdio I/O calls of an unmodified program as [`IoEvent`]s.
//!
//! Each process writes one event stream (`<pid>.<start ns>.evt`) into `$IOLENS_TRACE_DIR`;
//! children inherit the preload through the environment, so forks and execs are followed, and
//! `iolens trace` gathers the streams at the end.
//!
//! Rules the hooks keep, because they run inside someone else's program:
//! - no allocation and no locks: events go into per-thread buffers taken from a static pool
//!   and reach the file in whole-buffer `write`s on an `O_APPEND` descriptor;
//! - no recursion: a thread-local guard makes nested calls (from our own recording, or a hook
//!   reached from inside another) pass straight through;
//! - no change of behaviour: the real function's result and `errno` are returned untouched,
//!   our descriptor lives high in the table with `FD_CLOEXEC`, and a program that closes it is
//!   told it succeeded while we keep it;
//! - nothing lost silently: events that cannot be buffered or written are counted and the
//!   count is written into the stream (a drop frame) for the summary to report.
//!
//! Only descriptors that refer to files (opened while traced, or found to be regular files
//! through `/proc/self/fd`) are recorded; pipes, sockets and terminals are not.

#![allow(clippy::missing_safety_doc)]

use std::cell::{Cell, UnsafeCell};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering::*};

use iolens_record::event::{
    encode_event, IoEvent, IoOp, Layer, EVENT_FRAME_LEN, EVENT_MAGIC, NO_FILE, UNKNOWN_OFFSET,
};
use libc::{c_char, c_int, c_void, iovec, mode_t, off64_t, off_t, size_t, ssize_t, FILE};

// ---------------------------------------------------------------------------------------------
// The real functions, resolved once with dlsym(RTLD_NEXT).

const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

macro_rules! real {
    ($name:literal as $ty:ty) => {{
        static PTR: AtomicPtr<c_void> = AtomicPtr::new(null_mut());
        let mut p = PTR.load(Relaxed);
        if p.is_null() {
            p = libc::dlsym(RTLD_NEXT, concat!($name, "\0").as_ptr().cast());
            PTR.store(p, Relaxed);
        }
        std::mem::transmute::<*mut c_void, $ty>(p)
    }};
}

extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
    fn fileno_unlocked(stream: *mut FILE) -> c_int;
    fn vfprintf(stream: *mut FILE, format: *const c_char, ap: *mut c_void) -> c_int;
}

// ---------------------------------------------------------------------------------------------
// Process-wide state.

static ENABLED: AtomicBool = AtomicBool::new(false);
static PID: AtomicU32 = AtomicU32::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static NEXT_PATH: AtomicU32 = AtomicU32::new(0);
/// The stream's descriptor: -1 not open yet, -2 being opened, else the fd.
static STREAM_FD: AtomicI32 = AtomicI32::new(-1);
static STREAM_INO: AtomicU64 = AtomicU64::new(0);
static THREAD_KEY: AtomicU32 = AtomicU32::new(u32::MAX);

/// The trace directory, NUL-terminated, copied from the environment at load time.
struct DirBuf(UnsafeCell<[u8; 3072]>);
// SAFETY: written once in `init` before any hook records, read-only afterwards.
unsafe impl Sync for DirBuf {}
static TRACE_DIR: DirBuf = DirBuf(UnsafeCell::new([0; 3072]));

const MAX_FDS: usize = 65536;
/// Path id of each descriptor: NO_FILE = unknown yet, NOT_A_FILE = checked, not a file.
static FD_PATH: [AtomicU32; MAX_FDS] = [const { AtomicU32::new(NO_FILE) }; MAX_FDS];
/// Our own idea of each descriptor's file position, for read/write without an offset.
static FD_OFFSET: [AtomicU64; MAX_FDS] = [const { AtomicU64::new(UNKNOWN_OFFSET) }; MAX_FDS];
const NOT_A_FILE: u32 = NO_FILE - 1;

// ---------------------------------------------------------------------------------------------
// Per-thread buffers from a static pool.

const SLOTS: usize = 256;
const SLOT_BYTES: usize = 64 * 1024;
const NO_SLOT: u32 = u32::MAX;

struct Slot {
    claimed: AtomicBool,
    len: UnsafeCell<usize>,
    events: UnsafeCell<u64>,
    data: UnsafeCell<[u8; SLOT_BYTES]>,
}

// SAFETY: a slot's buffer is touched only by the thread that claimed it (or, at exit and
// exec, by the one thread left running).
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_SLOT: Slot = Slot {
    claimed: AtomicBool::new(false),
    len: UnsafeCell::new(0),
    events: UnsafeCell::new(0),
    data: UnsafeCell::new([0; SLOT_BYTES]),
};
static POOL: [Slot; SLOTS] = [EMPTY_SLOT; SLOTS];

thread_local! {
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
    static MY_SLOT: Cell<u32> = const { Cell::new(NO_SLOT) };
    static MY_TID: Cell<u32> = const { Cell::new(0) };
}

/// Marks the thread as inside a hook; nested hooks pass through.
struct Guard;

impl Guard {
    #[inline]
    fn enter() -> Option<Guard> {
        if !ENABLED.load(Relaxed) || IN_HOOK.with(|h| h.replace(true)) {
            return None;
        }
        Some(Guard)
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        IN_HOOK.with(|h| h.set(false));
    }
}

/// Timestamps: the TSC where the kernel itself trusts it (one instruction, a third of the cost of
/// `clock_gettime` on a VM), converted to `CLOCK_MONOTONIC` nanoseconds when a buffer is written,
/// by the line through the calibration point taken at start-up and a fresh one taken then. With
/// the kernel on another clock source, `CLOCK_MONOTONIC` is read directly.
static USE_TSC: AtomicBool = AtomicBool::new(false);
static CAL_TSC: AtomicU64 = AtomicU64::new(0);
static CAL_NS: AtomicU64 = AtomicU64::new(0);

#[inline]
fn now_ns() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if USE_TSC.load(Relaxed) {
        // SAFETY: rdtsc has no preconditions.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    iolens_record::clock::now_ns()
}

/// Whether the kernel's clock source is the TSC (so it is invariant and synchronized).
unsafe fn kernel_uses_tsc() -> bool {
    let path = c"/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let fd = libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC)
        as c_int;
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 16];
    let n = libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len());
    libc::syscall(libc::SYS_close, fd);
    n >= 3 && &buf[..4.min(n as usize)] == b"tsc\n"
}

/// Maps TSC ticks to monotonic nanoseconds through the start-up point and (tsc, ns) now.
struct TscLine {
    tsc0: u64,
    ns0: u64,
    ns_per_tick: f64,
}

impl TscLine {
    fn now() -> Option<TscLine> {
        if !USE_TSC.load(Relaxed) {
            return None;
        }
        let (tsc0, ns0) = (CAL_TSC.load(Relaxed), CAL_NS.load(Relaxed));
        let (tsc1, ns1) = tsc_and_ns();
        let ticks = tsc1.saturating_sub(tsc0).max(1);
        Some(TscLine { tsc0, ns0, ns_per_tick: ns1.saturating_sub(ns0) as f64 / ticks as f64 })
    }

    #[inline]
    fn ns(&self, tsc: u64) -> u64 {
        self.ns0.wrapping_add(((tsc.wrapping_sub(self.tsc0) as i64) as f64 * self.ns_per_tick) as i64 as u64)
    }
}

/// A TSC reading and the monotonic time taken right beside it.
fn tsc_and_ns() -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions.
        let a = unsafe { core::arch::x86_64::_rdtsc() };
        let ns = iolens_record::clock::now_ns();
        let b = unsafe { core::arch::x86_64::_rdtsc() };
        (a / 2 + b / 2, ns)
    }
    #[cfg(not(target_arch = "x86_64"))]
    (0, iolens_record::clock::now_ns())
}

/// Rewrites the raw TSC timestamps of the event frames in `data` as nanoseconds.
fn convert_timestamps(data: &mut [u8], line: &TscLine) {
    let mut at = 0;
    while at < data.len() {
        match data[at] {
            1 => {
                for field in [at + 41, at + 49] {
                    let raw = u64::from_le_bytes(data[field..field + 8].try_into().unwrap());
                    data[field..field + 8].copy_from_slice(&line.ns(raw).to_le_bytes());
                }
                at += EVENT_FRAME_LEN;
            }
            2 => at += 7 + u16::from_le_bytes([data[at + 5], data[at + 6]]) as usize,
            _ => at += 9,
        }
    }
}

#[inline]
unsafe fn errno() -> c_int {
    *libc::__errno_location()
}

#[inline]
unsafe fn set_errno(e: c_int) {
    *libc::__errno_location() = e;
}

fn tid() -> u32 {
    MY_TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no arguments and cannot fail.
            t.set(unsafe { libc::syscall(libc::SYS_gettid) } as u32);
        }
        t.get()
    })
}

/// This thread's slot, claiming one on first use. `None` when the pool is exhausted.
unsafe fn my_slot() -> Option<&'static Slot> {
    let mut idx = MY_SLOT.with(|s| s.get());
    if idx == NO_SLOT {
        idx = (0..SLOTS as u32)
            .find(|&i| POOL[i as usize].claimed.compare_exchange(false, true, AcqRel, Relaxed).is_ok())?;
        *POOL[idx as usize].len.get() = 0;
        *POOL[idx as usize].events.get() = 0;
        MY_SLOT.with(|s| s.set(idx));
        let key = THREAD_KEY.load(Relaxed);
        if key != u32::MAX {
            // Its destructor flushes and releases the slot when the thread ends.
            libc::pthread_setspecific(key, (idx as usize + 1) as *const c_void);
        }
    }
    Some(&POOL[idx as usize])
}

/// Appends frames to the thread's buffer, flushing it first when they do not fit.
unsafe fn append(frames: &[&[u8]], events: u64) {
    let Some(slot) = my_slot() else {
        DROPPED.fetch_add(events, Relaxed);
        return;
    };
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
    *slot.events.get() += events;
}

unsafe fn raw_write_all(fd: c_int, mut buf: &[u8]) -> bool {
    while !buf.is_empty() {
        let n = libc::syscall(libc::SYS_write, fd, buf.as_ptr(), buf.len());
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        buf = &buf[n as usize..];
    }
    true
}

fn push_decimal(out: &mut [u8], at: &mut usize, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in (0..n).rev() {
        out[*at] = digits[i];
        *at += 1;
    }
}

/// Opens this process's stream file: `<dir>/<pid>.<start ns>.evt`, high in the fd table.
unsafe fn open_stream() -> c_int {
    let dir = &*TRACE_DIR.0.get();
    let dir_len = dir.iter().position(|b| *b == 0).unwrap_or(0);
    let mut path = [0u8; 3200];
    path[..dir_len].copy_from_slice(&dir[..dir_len]);
    let mut at = dir_len;
    path[at] = b'/';
    at += 1;
    push_decimal(&mut path, &mut at, PID.load(Relaxed) as u64);
    path[at] = b'.';
    at += 1;
    push_decimal(&mut path, &mut at, START_NS.load(Relaxed));
    path[at..at + 5].copy_from_slice(b".evt\0");
    let fd = libc::syscall(
        libc::SYS_openat,
        libc::AT_FDCWD,
        path.as_ptr(),
        libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
        0o644,
    ) as c_int;
    if fd < 0 {
        return -1;
    }
    let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 900);
    let fd = if high >= 0 {
        libc::syscall(libc::SYS_close, fd);
        high
    } else {
        fd
    };
    let mut st: libc::stat = std::mem::zeroed();
    libc::fstat(fd, &mut st);
    STREAM_INO.store(st.st_ino, Relaxed);
    if st.st_size == 0 && !raw_write_all(fd, EVENT_MAGIC) {
        libc::syscall(libc::SYS_close, fd);
        return -1;
    }
    fd
}

/// The stream descriptor, opening (or reopening, if the program closed or replaced it) it.
unsafe fn stream_fd() -> c_int {
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
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstat(fd, &mut st) == 0 && st.st_ino == STREAM_INO.load(Relaxed) {
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

unsafe fn flush_slot(slot: &Slot) {
    let len = &mut *slot.len.get();
    let events = &mut *slot.events.get();
    if *len == 0 {
        return;
    }
    let saved = errno();
    let fd = stream_fd();
    let data = &mut (&mut *slot.data.get())[..*len];
    if let Some(line) = TscLine::now() {
        convert_timestamps(data, &line);
    }
    if fd < 0 || !raw_write_all(fd, data) {
        DROPPED.fetch_add(*events, Relaxed);
    }
    *len = 0;
    *events = 0;
    set_errno(saved);
}

/// Flushes every buffer and writes the drop count: at exit, exec, and _exit.
unsafe fn flush_all() {
    if !ENABLED.load(Relaxed) {
        return;
    }
    for slot in &POOL {
        if slot.claimed.load(Acquire) {
            flush_slot(slot);
        }
    }
    let dropped = DROPPED.swap(0, Relaxed);
    if dropped > 0 {
        let fd = stream_fd();
        let mut frame = [0u8; 9];
        frame[0] = 3;
        frame[1..].copy_from_slice(&dropped.to_le_bytes());
        if fd < 0 || !raw_write_all(fd, &frame) {
            DROPPED.fetch_add(dropped, Relaxed);
        }
    }
}

unsafe extern "C" fn thread_exit(value: *mut c_void) {
    let idx = value as usize;
    if idx == 0 || idx > SLOTS {
        return;
    }
    let slot = &POOL[idx - 1];
    flush_slot(slot);
    slot.claimed.store(false, Release);
}

unsafe extern "C" fn after_fork_in_child() {
    PID.store(libc::getpid() as u32, Relaxed);
    START_NS.store(iolens_record::clock::now_ns(), Relaxed);
    MY_TID.with(|t| t.set(0));
    let fd = STREAM_FD.swap(-1, AcqRel);
    if fd >= 0 {
        libc::syscall(libc::SYS_close, fd);
    }
    // The parent's buffered events are the parent's to write; the child starts empty and keeps
    // only the slot of the thread that forked (the only thread the child has).
    let mine = MY_SLOT.with(|s| s.get());
    for (i, slot) in POOL.iter().enumerate() {
        *slot.len.get() = 0;
        *slot.events.get() = 0;
        if i as u32 != mine {
            slot.claimed.store(false, Relaxed);
        }
    }
    DROPPED.store(0, Relaxed);
    // Path ids are defined per stream: the child rediscovers inherited descriptors itself.
    for slot in &FD_PATH {
        slot.store(NO_FILE, Relaxed);
    }
}

unsafe extern "C" fn init() {
    let dir = libc::getenv(c"IOLENS_TRACE_DIR".as_ptr());
    if dir.is_null() {
        return;
    }
    let len = libc::strlen(dir);
    let buf = &mut *TRACE_DIR.0.get();
    if len == 0 || len >= buf.len() - 1 {
        return;
    }
    std::ptr::copy_nonoverlapping(dir.cast::<u8>(), buf.as_mut_ptr(), len);
    buf[len] = 0;
    PID.store(libc::getpid() as u32, Relaxed);
    START_NS.store(iolens_record::clock::now_ns(), Relaxed);
    if cfg!(target_arch = "x86_64") && kernel_uses_tsc() {
        let (tsc, ns) = tsc_and_ns();
        CAL_TSC.store(tsc, Relaxed);
        CAL_NS.store(ns, Relaxed);
        USE_TSC.store(true, Relaxed);
    }
    let mut key: libc::pthread_key_t = 0;
    if libc::pthread_key_create(&mut key, Some(thread_exit)) == 0 {
        THREAD_KEY.store(key, Relaxed);
    }
    pthread_atfork(None, None, Some(after_fork_in_child));
    ENABLED.store(true, Release);
}

/// Event flag: the process had an io_uring instance, whose I/O bypasses every hook.
pub const FLAG_IO_URING_SEEN: u16 = 1;

/// Looks for io_uring instances among the process's descriptors (their requests never pass
/// through libc, so the summary must say they were missed).
unsafe fn note_io_uring() {
    let dir = libc::syscall(
        libc::SYS_openat,
        libc::AT_FDCWD,
        c"/proc/self/fd".as_ptr(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    ) as c_int;
    if dir < 0 {
        return;
    }
    let mut buf = [0u8; 8192];
    let mut seen = false;
    'scan: loop {
        let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
        if n <= 0 {
            break;
        }
        let mut at = 0usize;
        while at < n as usize {
            let reclen = u16::from_le_bytes([buf[at + 16], buf[at + 17]]) as usize;
            let name = &buf[at + 19..at + reclen];
            let fd =
                name.iter().take_while(|b| b.is_ascii_digit()).fold(0i64, |v, b| v * 10 + (b - b'0') as i64);
            let mut target = [0u8; 4096];
            if name.first().is_some_and(u8::is_ascii_digit) {
                if let Some(len) = fd_link(fd as c_int, &mut target) {
                    if target[..len].starts_with(b"anon_inode:[io_uring]") {
                        seen = true;
                        break 'scan;
                    }
                }
            }
            at += reclen.max(1);
        }
    }
    libc::syscall(libc::SYS_close, dir);
    if seen {
        let t = now_ns();
        record_flagged(IoOp::Other, NO_FILE, FLAG_IO_URING_SEEN, t);
    }
}

unsafe extern "C" fn fini() {
    if let Some(_g) = Guard::enter() {
        note_io_uring();
    }
    flush_all();
}

#[used]
#[link_section = ".init_array"]
static INIT: unsafe extern "C" fn() = init;

#[used]
#[link_section = ".fini_array"]
static FINI: unsafe extern "C" fn() = fini;

// ---------------------------------------------------------------------------------------------
// Recording.

/// Registers `fd` as referring to `path`; emits the path frame.
unsafe fn register_path(fd: c_int, path: *const c_char, dirfd: c_int) -> u32 {
    if fd < 0 || fd as usize >= MAX_FDS || path.is_null() {
        return NO_FILE;
    }
    let id = NEXT_PATH.fetch_add(1, Relaxed);
    let mut full = [0u8; 4096];
    let mut len = 0;
    if *path != b'/' as c_char {
        // Relative: to the working directory, or to the directory `dirfd` refers to.
        if dirfd == libc::AT_FDCWD {
            if !libc::getcwd(full.as_mut_ptr().cast(), full.len() - 2).is_null() {
                len = libc::strlen(full.as_ptr().cast());
            }
        } else if dirfd >= 0 {
            len = fd_link(dirfd, &mut full).unwrap_or(0);
        }
        if len > 0 && len < full.len() - 1 {
            full[len] = b'/';
            len += 1;
        }
    }
    let name_len = libc::strlen(path).min(full.len() - len);
    std::ptr::copy_nonoverlapping(path.cast::<u8>(), full.as_mut_ptr().add(len), name_len);
    len += name_len;
    let len = len.min(u16::MAX as usize);
    let mut head = [0u8; 7];
    head[0] = 2;
    head[1..5].copy_from_slice(&id.to_le_bytes());
    head[5..7].copy_from_slice(&(len as u16).to_le_bytes());
    append(&[&head, &full[..len]], 0);
    FD_PATH[fd as usize].store(id, Relaxed);
    id
}

/// What `/proc/self/fd/<fd>` points to, written into `out` (not NUL-terminated); its length.
unsafe fn fd_link(fd: c_int, out: &mut [u8; 4096]) -> Option<usize> {
    let mut link = [0u8; 40];
    let mut at = 0;
    for b in b"/proc/self/fd/" {
        link[at] = *b;
        at += 1;
    }
    push_decimal(&mut link, &mut at, fd as u64);
    let n =
        libc::syscall(libc::SYS_readlinkat, libc::AT_FDCWD, link.as_ptr(), out.as_mut_ptr(), out.len() - 1);
    (n > 0).then_some(n as usize)
}

/// The path id of `fd`, discovering inherited descriptors through /proc/self/fd once.
unsafe fn path_of(fd: c_int) -> u32 {
    if fd < 0 || fd as usize >= MAX_FDS {
        return NOT_A_FILE;
    }
    let id = FD_PATH[fd as usize].load(Relaxed);
    if id != NO_FILE {
        return id;
    }
    let mut target = [0u8; 4096];
    let n = fd_link(fd, &mut target).unwrap_or(0);
    let mut st: libc::stat = std::mem::zeroed();
    let is_file = n > 0
        && target[0] == b'/'
        && libc::fstat(fd, &mut st) == 0
        && (st.st_mode & libc::S_IFMT) == libc::S_IFREG;
    if !is_file || fd == STREAM_FD.load(Relaxed) {
        FD_PATH[fd as usize].store(NOT_A_FILE, Relaxed);
        return NOT_A_FILE;
    }
    target[n] = 0;
    let offset = libc::lseek(fd, 0, libc::SEEK_CUR);
    FD_OFFSET[fd as usize].store(if offset >= 0 { offset as u64 } else { UNKNOWN_OFFSET }, Relaxed);
    register_path(fd, target.as_ptr().cast(), libc::AT_FDCWD)
}

unsafe fn record_flagged(op: IoOp, file: u32, flags: u16, t: u64) {
    let e = IoEvent {
        pid: PID.load(Relaxed),
        tid: tid(),
        file,
        op,
        layer: Layer::Posix,
        flags,
        offset: UNKNOWN_OFFSET,
        requested: 0,
        result: 0,
        start_ns: t,
        end_ns: t,
    };
    let mut frame = [0u8; EVENT_FRAME_LEN];
    encode_event(&e, &mut frame);
    append(&[&frame], 1);
}

#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn record(
    op: IoOp,
    layer: Layer,
    file: u32,
    offset: u64,
    requested: u64,
    result: i64,
    start: u64,
    end: u64,
) {
    let e = IoEvent {
        pid: PID.load(Relaxed),
        tid: tid(),
        file,
        op,
        layer,
        flags: 0,
        offset,
        requested,
        result,
        start_ns: start,
        end_ns: end,
    };
    let Some(slot) = my_slot() else {
        DROPPED.fetch_add(1, Relaxed);
        return;
    };
    let len = &mut *slot.len.get();
    if *len + EVENT_FRAME_LEN > SLOT_BYTES {
        flush_slot(slot);
    }
    let data = &mut *slot.data.get();
    let frame: &mut [u8; EVENT_FRAME_LEN] = (&mut data[*len..*len + EVENT_FRAME_LEN]).try_into().unwrap();
    encode_event(&e, frame);
    *len += EVENT_FRAME_LEN;
    *slot.events.get() += 1;
}

fn result_of(ret: i64, err: c_int) -> i64 {
    if ret < 0 {
        -(err as i64)
    } else {
        ret
    }
}

/// Wraps a call on `fd`: times it and records it if `fd` is a file. `offset` is the explicit
/// offset, or `None` to use (and advance) the tracked position.
macro_rules! traced_fd_call {
    ($op:expr, $fd:expr, $offset:expr, $requested:expr, $call:expr) => {{
        match Guard::enter() {
            None => $call,
            Some(_g) => {
                let fd: c_int = $fd;
                let file = path_of(fd);
                if file == NOT_A_FILE {
                    $call
                } else {
                    let t0 = now_ns();
                    let ret = $call;
                    let t1 = now_ns();
                    let err = errno();
                    let explicit: Option<u64> = $offset;
                    let ret64 = ret as i64;
                    let offset = match explicit {
                        Some(o) => o,
                        None => {
                            let slot = &FD_OFFSET[fd as usize];
                            let at = slot.load(Relaxed);
                            if ret64 > 0 && at != UNKNOWN_OFFSET {
                                slot.store(at + ret64 as u64, Relaxed);
                            }
                            at
                        }
                    };
                    record($op, Layer::Posix, file, offset, $requested as u64, result_of(ret64, err), t0, t1);
                    set_errno(err);
                    ret
                }
            }
        }
    }};
}

fn iov_total(iov: *const iovec, n: c_int) -> u64 {
    if iov.is_null() || n <= 0 {
        return 0;
    }
    // SAFETY: the caller passes `n` iovecs, as the real call requires.
    unsafe { std::slice::from_raw_parts(iov, n as usize) }.iter().map(|v| v.iov_len as u64).sum()
}

// ---------------------------------------------------------------------------------------------
// POSIX hooks.

unsafe fn opened(fd: c_int, path: *const c_char, dirfd: c_int, flags: c_int, layer: Layer, t0: u64) {
    let t1 = now_ns();
    let err = errno();
    if fd >= 0 && (fd as usize) < MAX_FDS {
        let id = register_path(fd, path, dirfd);
        let start = if flags & libc::O_APPEND != 0 { UNKNOWN_OFFSET } else { 0 };
        FD_OFFSET[fd as usize].store(start, Relaxed);
        record(IoOp::Open, layer, id, UNKNOWN_OFFSET, 0, fd as i64, t0, t1);
    }
    set_errno(err);
}

macro_rules! open_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
            let real = real!($real as unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int);
            let Some(_g) = Guard::enter() else { return real(path, flags, mode) };
            let t0 = now_ns();
            let fd = real(path, flags, mode);
            opened(fd, path, libc::AT_FDCWD, flags, Layer::Posix, t0);
            fd
        }
    };
}
open_hook!(open, "open");
open_hook!(open64, "open64");

macro_rules! openat_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dirfd: c_int,
            path: *const c_char,
            flags: c_int,
            mode: mode_t,
        ) -> c_int {
            let real = real!($real as unsafe extern "C" fn(c_int, *const c_char, c_int, mode_t) -> c_int);
            let Some(_g) = Guard::enter() else { return real(dirfd, path, flags, mode) };
            let t0 = now_ns();
            let fd = real(dirfd, path, flags, mode);
            opened(fd, path, dirfd, flags, Layer::Posix, t0);
            fd
        }
    };
}
openat_hook!(openat, "openat");
openat_hook!(openat64, "openat64");

macro_rules! creat_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: mode_t) -> c_int {
            let real = real!($real as unsafe extern "C" fn(*const c_char, mode_t) -> c_int);
            let Some(_g) = Guard::enter() else { return real(path, mode) };
            let t0 = now_ns();
            let fd = real(path, mode);
            opened(fd, path, libc::AT_FDCWD, 0, Layer::Posix, t0);
            fd
        }
    };
}
creat_hook!(creat, "creat");
creat_hook!(creat64, "creat64");

#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let real = real!("close" as unsafe extern "C" fn(c_int) -> c_int);
    if fd >= 0 && fd == STREAM_FD.load(Relaxed) {
        return 0; // our stream: the program may believe it closed it
    }
    let Some(_g) = Guard::enter() else { return real(fd) };
    let file =
        if fd >= 0 && (fd as usize) < MAX_FDS { FD_PATH[fd as usize].load(Relaxed) } else { NOT_A_FILE };
    let t0 = now_ns();
    let ret = real(fd);
    let t1 = now_ns();
    let err = errno();
    if file != NOT_A_FILE && file != NO_FILE {
        record(IoOp::Close, Layer::Posix, file, UNKNOWN_OFFSET, 0, result_of(ret as i64, err), t0, t1);
    }
    if fd >= 0 && (fd as usize) < MAX_FDS {
        FD_PATH[fd as usize].store(NO_FILE, Relaxed);
        FD_OFFSET[fd as usize].store(UNKNOWN_OFFSET, Relaxed);
    }
    set_errno(err);
    ret
}

#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: size_t) -> ssize_t {
    let real = real!("read" as unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t);
    traced_fd_call!(IoOp::Read, fd, None, count, real(fd, buf, count))
}

#[no_mangle]
pub unsafe extern "C" fn __read_chk(fd: c_int, buf: *mut c_void, count: size_t, buflen: size_t) -> ssize_t {
    let real = real!("__read_chk" as unsafe extern "C" fn(c_int, *mut c_void, size_t, size_t) -> ssize_t);
    traced_fd_call!(IoOp::Read, fd, None, count, real(fd, buf, count, buflen))
}

#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t {
    let real = real!("write" as unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t);
    traced_fd_call!(IoOp::Write, fd, None, count, real(fd, buf, count))
}

macro_rules! pread_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, buf: *mut c_void, count: size_t, offset: $off) -> ssize_t {
            let real = real!($real as unsafe extern "C" fn(c_int, *mut c_void, size_t, $off) -> ssize_t);
            traced_fd_call!(IoOp::Read, fd, Some(offset as u64), count, real(fd, buf, count, offset))
        }
    };
}
pread_hook!(pread, "pread", off_t);
pread_hook!(pread64, "pread64", off64_t);

macro_rules! pread_chk_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            buf: *mut c_void,
            count: size_t,
            offset: $off,
            buflen: size_t,
        ) -> ssize_t {
            let real =
                real!($real as unsafe extern "C" fn(c_int, *mut c_void, size_t, $off, size_t) -> ssize_t);
            traced_fd_call!(IoOp::Read, fd, Some(offset as u64), count, real(fd, buf, count, offset, buflen))
        }
    };
}
pread_chk_hook!(__pread_chk, "__pread_chk", off_t);
pread_chk_hook!(__pread64_chk, "__pread64_chk", off64_t);

macro_rules! pwrite_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            buf: *const c_void,
            count: size_t,
            offset: $off,
        ) -> ssize_t {
            let real = real!($real as unsafe extern "C" fn(c_int, *const c_void, size_t, $off) -> ssize_t);
            traced_fd_call!(IoOp::Write, fd, Some(offset as u64), count, real(fd, buf, count, offset))
        }
    };
}
pwrite_hook!(pwrite, "pwrite", off_t);
pwrite_hook!(pwrite64, "pwrite64", off64_t);

#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    let real = real!("readv" as unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t);
    traced_fd_call!(IoOp::Read, fd, None, iov_total(iov, n), real(fd, iov, n))
}

#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, n: c_int) -> ssize_t {
    let real = real!("writev" as unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t);
    traced_fd_call!(IoOp::Write, fd, None, iov_total(iov, n), real(fd, iov, n))
}

macro_rules! preadv_hook {
    ($name:ident, $real:literal, $op:expr, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, iov: *const iovec, n: c_int, offset: $off) -> ssize_t {
            let real = real!($real as unsafe extern "C" fn(c_int, *const iovec, c_int, $off) -> ssize_t);
            traced_fd_call!($op, fd, Some(offset as u64), iov_total(iov, n), real(fd, iov, n, offset))
        }
    };
}
preadv_hook!(preadv, "preadv", IoOp::Read, off_t);
preadv_hook!(preadv64, "preadv64", IoOp::Read, off64_t);
preadv_hook!(pwritev, "pwritev", IoOp::Write, off_t);
preadv_hook!(pwritev64, "pwritev64", IoOp::Write, off64_t);

macro_rules! preadv2_hook {
    ($name:ident, $real:literal, $op:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            iov: *const iovec,
            n: c_int,
            offset: off_t,
            flags: c_int,
        ) -> ssize_t {
            let real =
                real!($real as unsafe extern "C" fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t);
            // offset -1 means "the current position", like readv.
            let explicit = if offset == -1 { None } else { Some(offset as u64) };
            traced_fd_call!($op, fd, explicit, iov_total(iov, n), real(fd, iov, n, offset, flags))
        }
    };
}
preadv2_hook!(preadv2, "preadv2", IoOp::Read);
preadv2_hook!(pwritev2, "pwritev2", IoOp::Write);

#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    let real = real!("fsync" as unsafe extern "C" fn(c_int) -> c_int);
    traced_fd_call!(IoOp::Fsync, fd, Some(UNKNOWN_OFFSET), 0u64, real(fd))
}

#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    let real = real!("fdatasync" as unsafe extern "C" fn(c_int) -> c_int);
    traced_fd_call!(IoOp::Fdatasync, fd, Some(UNKNOWN_OFFSET), 0u64, real(fd))
}

#[no_mangle]
pub unsafe extern "C" fn sync_file_range(fd: c_int, offset: off64_t, nbytes: off64_t, flags: u32) -> c_int {
    let real = real!("sync_file_range" as unsafe extern "C" fn(c_int, off64_t, off64_t, u32) -> c_int);
    traced_fd_call!(IoOp::SyncRange, fd, Some(offset as u64), nbytes, real(fd, offset, nbytes, flags))
}

macro_rules! lseek_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, offset: $off, whence: c_int) -> $off {
            let real = real!($real as unsafe extern "C" fn(c_int, $off, c_int) -> $off);
            let ret = traced_fd_call!(IoOp::Seek, fd, Some(offset as u64), 0u64, real(fd, offset, whence));
            if fd >= 0 && (fd as usize) < MAX_FDS {
                FD_OFFSET[fd as usize].store(if ret >= 0 { ret as u64 } else { UNKNOWN_OFFSET }, Relaxed);
            }
            ret
        }
    };
}
lseek_hook!(lseek, "lseek", off_t);
lseek_hook!(lseek64, "lseek64", off64_t);

#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut off64_t,
    fd_out: c_int,
    off_out: *mut off64_t,
    len: size_t,
    flags: u32,
) -> ssize_t {
    let real = real!(
        "copy_file_range"
            as unsafe extern "C" fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, u32) -> ssize_t
    );
    let offset = if off_out.is_null() { None } else { Some(*off_out as u64) };
    traced_fd_call!(IoOp::Copy, fd_out, offset, len, real(fd_in, off_in, fd_out, off_out, len, flags))
}

macro_rules! sendfile_hook {
    ($name:ident, $real:literal, $off:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            out_fd: c_int,
            in_fd: c_int,
            offset: *mut $off,
            count: size_t,
        ) -> ssize_t {
            let real = real!($real as unsafe extern "C" fn(c_int, c_int, *mut $off, size_t) -> ssize_t);
            traced_fd_call!(IoOp::Copy, out_fd, None, count, real(out_fd, in_fd, offset, count))
        }
    };
}
sendfile_hook!(sendfile, "sendfile", off_t);
sendfile_hook!(sendfile64, "sendfile64", off64_t);

#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: off_t,
) -> *mut c_void {
    let real =
        real!("mmap" as unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void);
    if fd < 0 {
        return real(addr, len, prot, flags, fd, off);
    }
    traced_fd_call!(IoOp::Mmap, fd, Some(off as u64), len, real(addr, len, prot, flags, fd, off))
}

// ---------------------------------------------------------------------------------------------
// Exec and exit: write what is buffered before the process image goes away.

#[no_mangle]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let real = real!(
        "execve" as unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int
    );
    flush_all();
    real(path, argv, envp)
}

#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    let real = real!("execv" as unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int);
    flush_all();
    real(path, argv)
}

#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    let real = real!("execvp" as unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int);
    flush_all();
    real(file, argv)
}

#[no_mangle]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    let real = real!(
        "execvpe" as unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int
    );
    flush_all();
    real(file, argv, envp)
}

#[no_mangle]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    let real = real!("_exit" as unsafe extern "C" fn(c_int) -> !);
    flush_all();
    real(status)
}

#[no_mangle]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    let real = real!("_Exit" as unsafe extern "C" fn(c_int) -> !);
    flush_all();
    real(status)
}

// ---------------------------------------------------------------------------------------------
// stdio: glibc's stdio calls the kernel through internal aliases, not through the exported
// read/write, so its traffic is recorded here, at the application's calls.

unsafe fn stream_file(stream: *mut FILE) -> (c_int, u32) {
    if stream.is_null() {
        return (-1, NOT_A_FILE);
    }
    let fd = fileno_unlocked(stream);
    (fd, path_of(fd))
}

macro_rules! traced_stdio_call {
    ($op:expr, $stream:expr, $requested:expr, $call:expr, $moved:expr) => {{
        match Guard::enter() {
            None => $call,
            Some(_g) => {
                let (_, file) = stream_file($stream);
                if file == NOT_A_FILE {
                    $call
                } else {
                    let t0 = now_ns();
                    let ret = $call;
                    let t1 = now_ns();
                    let err = errno();
                    let moved: i64 = $moved(&ret);
                    record($op, Layer::Stdio, file, UNKNOWN_OFFSET, $requested as u64, moved, t0, t1);
                    set_errno(err);
                    ret
                }
            }
        }
    }};
}

macro_rules! fopen_hook {
    ($name:ident, $real:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char) -> *mut FILE {
            let real = real!($real as unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE);
            let Some(_g) = Guard::enter() else { return real(path, mode) };
            let t0 = now_ns();
            let f = real(path, mode);
            if !f.is_null() {
                let append = !mode.is_null() && *mode == b'a' as c_char;
                opened(
                    fileno_unlocked(f),
                    path,
                    libc::AT_FDCWD,
                    if append { libc::O_APPEND } else { 0 },
                    Layer::Stdio,
                    t0,
                );
            }
            f
        }
    };
}
fopen_hook!(fopen, "fopen");
fopen_hook!(fopen64, "fopen64");

#[no_mangle]
pub unsafe extern "C" fn fread(ptr: *mut c_void, size: size_t, n: size_t, stream: *mut FILE) -> size_t {
    let real = real!("fread" as unsafe extern "C" fn(*mut c_void, size_t, size_t, *mut FILE) -> size_t);
    traced_stdio_call!(
        IoOp::Read,
        stream,
        size.saturating_mul(n),
        real(ptr, size, n, stream),
        |r: &size_t| (*r * size) as i64
    )
}

#[no_mangle]
pub unsafe extern "C" fn fwrite(ptr: *const c_void, size: size_t, n: size_t, stream: *mut FILE) -> size_t {
    let real = real!("fwrite" as unsafe extern "C" fn(*const c_void, size_t, size_t, *mut FILE) -> size_t);
    traced_stdio_call!(
        IoOp::Write,
        stream,
        size.saturating_mul(n),
        real(ptr, size, n, stream),
        |r: &size_t| (*r * size) as i64
    )
}

#[no_mangle]
pub unsafe extern "C" fn fgets(s: *mut c_char, n: c_int, stream: *mut FILE) -> *mut c_char {
    let real = real!("fgets" as unsafe extern "C" fn(*mut c_char, c_int, *mut FILE) -> *mut c_char);
    traced_stdio_call!(IoOp::Read, stream, n.max(1) - 1, real(s, n, stream), |r: &*mut c_char| if r.is_null()
    {
        0
    } else {
        libc::strlen(*r) as i64
    })
}

#[no_mangle]
pub unsafe extern "C" fn fputs(s: *const c_char, stream: *mut FILE) -> c_int {
    let real = real!("fputs" as unsafe extern "C" fn(*const c_char, *mut FILE) -> c_int);
    let len = if s.is_null() { 0 } else { libc::strlen(s) };
    traced_stdio_call!(IoOp::Write, stream, len, real(s, stream), |r: &c_int| if *r < 0 {
        -(libc::EIO as i64)
    } else {
        len as i64
    })
}

/// Called by the C shim's fprintf with the caller's va_list.
#[no_mangle]
pub unsafe extern "C" fn iolens_hook_vfprintf(
    stream: *mut FILE,
    format: *const c_char,
    ap: *mut c_void,
) -> c_int {
    let Some(_g) = Guard::enter() else { return vfprintf(stream, format, ap) };
    let (_, file) = stream_file(stream);
    if file == NOT_A_FILE {
        return vfprintf(stream, format, ap);
    }
    let t0 = now_ns();
    let ret = vfprintf(stream, format, ap);
    let t1 = now_ns();
    let err = errno();
    // The length is known only afterwards: what was formatted is what was asked for.
    let moved = result_of(ret as i64, err);
    record(IoOp::Write, Layer::Stdio, file, UNKNOWN_OFFSET, moved.max(0) as u64, moved, t0, t1);
    set_errno(err);
    ret
}

#[no_mangle]
pub unsafe extern "C" fn fflush(stream: *mut FILE) -> c_int {
    let real = real!("fflush" as unsafe extern "C" fn(*mut FILE) -> c_int);
    traced_stdio_call!(IoOp::Flush, stream, 0u64, real(stream), |r: &c_int| *r as i64)
}

#[no_mangle]
pub unsafe extern "C" fn fclose(stream: *mut FILE) -> c_int {
    let real = real!("fclose" as unsafe extern "C" fn(*mut FILE) -> c_int);
    let Some(_g) = Guard::enter() else { return real(stream) };
    let (fd, file) = stream_file(stream);
    let t0 = now_ns();
    let ret = real(stream);
    let t1 = now_ns();
    let err = errno();
    if file != NOT_A_FILE {
        record(IoOp::Close, Layer::Stdio, file, UNKNOWN_OFFSET, 0, result_of(ret as i64, err), t0, t1);
    }
    if fd >= 0 && (fd as usize) < MAX_FDS {
        FD_PATH[fd as usize].store(NO_FILE, Relaxed);
        FD_OFFSET[fd as usize].store(UNKNOWN_OFFSET, Relaxed);
    }
    set_errno(err);
    ret
}
