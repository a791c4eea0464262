//! `libiolens_preload.so`: loaded with `LD_PRELOAD` by `iolens trace`, it records the POSIX,
//! stdio and MPI-IO calls of an unmodified program as [`IoEvent`]s (MPI through the profiling
//! interface, found at run time: the library does not link MPI and loads into any program).
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

use std::cell::Cell;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU32, AtomicU64, Ordering::*};

use libc::{c_int, c_void, FILE};

use crate::io_uring::note_io_uring;
use crate::process::{after_fork_in_child, note_process_end};
use crate::stream::{flush_all, register_membarrier, stream_fd, thread_exit, THREAD_KEY, TRACE_DIR};

/// `dlsym(RTLD_NEXT)`: the next definition after ours, i.e. the real function.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

/// The real function `$name`, resolved once with dlsym(RTLD_NEXT) and cached.
macro_rules! real {
    ($name:literal as $ty:ty) => {{
        static PTR: std::sync::atomic::AtomicPtr<libc::c_void> =
            std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
        let mut p = PTR.load(std::sync::atomic::Ordering::Relaxed);
        if p.is_null() {
            p = libc::dlsym($crate::RTLD_NEXT, concat!($name, "\0").as_ptr().cast());
            PTR.store(p, std::sync::atomic::Ordering::Relaxed);
        }
        std::mem::transmute::<*mut libc::c_void, $ty>(p)
    }};
}

/// libc's `syscall`, past this library's own hook of that name (which hands file calls to the
/// hooks): the recorder's own system calls must not be recorded, nor re-enter the hooks.
#[inline]
pub(crate) fn sys() -> unsafe extern "C" fn(libc::c_long, ...) -> libc::c_long {
    // SAFETY: dlsym(RTLD_NEXT, "syscall") is libc's syscall, of this type.
    unsafe { real!("syscall" as unsafe extern "C" fn(libc::c_long, ...) -> libc::c_long) }
}

mod clock;
#[macro_use]
mod record;
mod aio;
mod copy;
mod dup;
mod io_uring;
mod mmap;
mod mpi_clock;
mod mpiio;
mod mpiio_fortran;
mod native_aio;
mod posix;
mod process;
mod raw_syscall;
mod stdio;
mod stream;

extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
    fn fileno_unlocked(stream: *mut FILE) -> c_int;
    fn at_quick_exit(handler: unsafe extern "C" fn()) -> c_int;
}

// Process-wide state.
static ENABLED: AtomicBool = AtomicBool::new(false);
static PID: AtomicU32 = AtomicU32::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);

/// The calling thread's recorder state (defined in thread_state.c, initial-exec TLS).
#[repr(C)]
pub(crate) struct ThreadState {
    /// Non-zero inside a hook: nested hooks pass through.
    in_hook: Cell<u32>,
    /// Index of the thread's buffer in the pool, or `NO_SLOT`.
    pub(crate) slot: Cell<u32>,
    /// The thread's id, 0 until first asked.
    pub(crate) tid: Cell<u32>,
}

extern "C" {
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    fn iolens_thread_state() -> *const ThreadState;
    /// The thread-local block itself (thread_state.c), addressed by the x86-64 `me`.
    #[cfg(target_arch = "x86_64")]
    static iolens_state: ThreadState;
}

/// The calling thread's state.
///
/// On x86-64, the initial-exec access the C compiler would emit, inline: the block's offset
/// from the thread pointer (a GOT entry the loader fills) added to `%fs:0`. Two instructions
/// where a call into C costs a call through the GOT and a return on every hook.
#[inline(always)]
pub(crate) fn me() -> &'static ThreadState {
    #[cfg(target_arch = "x86_64")]
    {
        let state: *const ThreadState;
        // SAFETY: reads the thread pointer and a GOT entry, writes one register. The address is
        // this thread's TLS block, valid for as long as the thread runs, touched by no other
        // thread.
        unsafe {
            std::arch::asm!(
                "mov {state}, qword ptr fs:[0]",
                "add {state}, qword ptr [rip + {block}@GOTTPOFF]",
                state = out(reg) state,
                block = sym iolens_state,
                options(pure, readonly, nostack),
            );
            &*state
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the C side returns the address of this thread's TLS block, valid for as long as
    // the thread runs, and touched by no other thread.
    unsafe {
        &*iolens_thread_state()
    }
}

/// Marks the thread as inside a hook's recording; hooks reached meanwhile pass through.
///
/// The recorder itself calls no hook, so a hook reached inside the recording is a signal
/// handler's, which interrupted it. The handler's call is recorded like any other unless the
/// thread's buffer is half-written (or being claimed) at that moment: then it passes through,
/// counted (see [`recording_interrupted`]).
struct Guard {
    state: &'static ThreadState,
    /// The guard's value before: 1 in a signal handler's hook inside another's recording.
    outer: u32,
}

impl Guard {
    #[inline(always)]
    fn enter() -> Option<Guard> {
        if !ENABLED.load(Relaxed) {
            return None;
        }
        let state = me();
        let outer = state.in_hook.replace(1);
        if outer != 0 && !stream::may_interrupt(state) {
            return None;
        }
        Some(Guard { state, outer })
    }
}

impl Guard {
    /// The calling thread's state, looked up when the guard was entered.
    #[inline(always)]
    fn state(&self) -> &'static ThreadState {
        self.state
    }

    /// Runs the real call with the guard lifted. What runs inside it on this thread is the
    /// program's own I/O, to be recorded: a signal handler's, or a callback's (the functions of
    /// a `fopencookie` stream). And a handler that leaves with `siglongjmp` leaves the thread
    /// outside every hook, as it is; a guard still held would silence the thread for good.
    #[inline(always)]
    fn lifted<R>(&self, call: impl FnOnce() -> R) -> R {
        self.state.in_hook.set(0);
        // A signal handler on this thread must see the guard as it is in the program's order.
        compiler_fence(SeqCst);
        let ret = call();
        compiler_fence(SeqCst);
        self.state.in_hook.set(1);
        ret
    }
}

/// Whether a hook the calling thread reached without its guard comes from a signal handler
/// that interrupted a recording (not from a disabled recorder).
#[inline]
fn recording_interrupted() -> bool {
    ENABLED.load(Relaxed) && me().in_hook.get() != 0
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        self.state.in_hook.set(self.outer);
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
    clock::calibrate();
    let mut key: libc::pthread_key_t = 0;
    if libc::pthread_key_create(&mut key, Some(thread_exit)) == 0 {
        THREAD_KEY.store(key, Relaxed);
    }
    pthread_atfork(None, None, Some(after_fork_in_child));
    // quick_exit runs neither exit handlers nor library destructors, only these, the earliest
    // registered last: after the program's own, whose I/O is then written out too.
    at_quick_exit(before_quick_exit);
    register_membarrier();
    ENABLED.store(true, Release);
    // Opened now, while the program has the rights it started with: it keeps the descriptor
    // through a later setuid or umask.
    stream_fd();
}

unsafe extern "C" fn before_quick_exit() {
    crate::process::before_exit();
}

unsafe extern "C" fn fini() {
    if let Some(_g) = Guard::enter() {
        note_io_uring();
    }
    note_process_end();
    flush_all();
}

#[used]
#[link_section = ".init_array"]
static INIT: unsafe extern "C" fn() = init;

#[used]
#[link_section = ".fini_array"]
static FINI: unsafe extern "C" fn() = fini;
