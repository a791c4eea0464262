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
//!
//! The modules are layered, each using only those below it (`tests/layering.rs` checks):
//!
//! 1. `base`: the guard and per-thread state, the recorder's own system calls, the clock, the
//!    descriptor table, the handle table;
//! 2. `stream`: the per-thread buffers and the stream file they are written to;
//! 3. `record`: naming files and encoding events, what every hook family shares;
//! 4. the hook families, `hooks::*` and `mpi::*`;
//! 5. this file, the composition root: start-up, and what a fork or the end of the process
//!    image means to each family.
//!
//! [`IoEvent`]: iolens_record::event::IoEvent

#![deny(unsafe_op_in_unsafe_fn)]
#![allow(clippy::missing_safety_doc)]

use std::sync::atomic::Ordering::*;

use iolens_record::event::{IoOp, FLAG_PROCESS_END, NO_FILE};
use libc::c_int;

use crate::base::clock::{self, now_ns};
use crate::base::fd_table;
use crate::base::guard::ENABLED;
use crate::hooks::{aio, io_uring, native_aio, posix, process};
use crate::record::record_flagged;
use crate::stream::enter_guard;

mod base;
mod hooks;
mod mpi;
mod record;
mod stream;

extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
    fn at_quick_exit(handler: unsafe extern "C" fn()) -> c_int;
}

/// Starts the recorder when the library is loaded, if `$IOLENS_TRACE_DIR` names a directory.
unsafe extern "C" fn init() {
    // SAFETY: run once by the loader, before any other code of the library and before the program's
    // threads: getenv's result is null or NUL-terminated, and the handlers registered are this
    // library's.
    unsafe {
        process::on_image_end(image_ends);
        let dir = libc::getenv(c"IOLENS_TRACE_DIR".as_ptr());
        if !stream::set_up(dir) {
            return;
        }
        clock::calibrate();
        stream::flush_at_thread_exit();
        pthread_atfork(None, None, Some(after_fork_in_child));
        // quick_exit runs neither exit handlers nor library destructors, only these, the earliest
        // registered last: after the program's own, whose I/O is then written out too.
        at_quick_exit(before_quick_exit);
        stream::register_membarrier();
        ENABLED.store(true, Release);
        // Opened now, while the program has the rights it started with: it keeps the descriptor
        // through a later setuid or umask.
        stream::stream_fd();
    }
}

/// In a forked child: a stream of its own, and nothing of the parent's that names its files or
/// waits for its requests.
unsafe extern "C" fn after_fork_in_child() {
    // SAFETY: run by pthread_atfork in the child, its only thread.
    unsafe {
        stream::after_fork();
        fd_table::after_fork();
        aio::after_fork();
        native_aio::after_fork();
        posix::after_fork();
        // Its own stream, opened before the child can change its rights.
        stream::stream_fd();
    }
}

/// The process image ends now (exit, `_exit`, exec): the families note what they leave
/// unfinished, and the end itself is recorded.
unsafe fn image_ends() {
    // SAFETY: inside the guard; the families' notes write into this thread's buffer.
    unsafe {
        if let Some(_g) = enter_guard() {
            aio::at_image_end();
            native_aio::at_image_end();
            record_flagged(IoOp::Other, NO_FILE, FLAG_PROCESS_END, now_ns());
        }
    }
}

unsafe extern "C" fn before_quick_exit() {
    // SAFETY: run by quick_exit, on the exiting thread.
    unsafe {
        process::before_exit();
    }
}

unsafe extern "C" fn fini() {
    // SAFETY: run once by the loader at exit; `at_exit` is called inside the guard.
    unsafe {
        if let Some(_g) = enter_guard() {
            io_uring::at_exit();
        }
        image_ends();
        stream::flush_all();
    }
}

#[used]
#[link_section = ".init_array"]
static INIT: unsafe extern "C" fn() = init;

#[used]
#[link_section = ".fini_array"]
static FINI: unsafe extern "C" fn() = fini;
