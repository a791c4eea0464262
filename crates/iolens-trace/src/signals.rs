//! Ctrl-C, SIGTERM and SIGHUP. The first two signals ask the command to stop: it keeps the
//! results so far, writes its JSON and removes its files (a second Ctrl-C pressed out of
//! impatience must not lose all of that). The third ends iolens at once.
//!
//! While `trace` runs a program, each of the first two signals is also passed on to the
//! program's process group, which no longer shares iolens's terminal signals.
//!
//! The handler only touches atomics and calls `kill`/`_exit`, all async-signal-safe; no
//! thread or pipe is needed.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};
use std::sync::Arc;

/// The stop flag the commands poll (a leaked reference: it lives as long as the process).
static STOP: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());
static COUNT: AtomicU32 = AtomicU32::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);
/// Process group of the traced program, 0 when none runs.
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);

/// Signals that stop a command.
const STOPPING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    LAST.store(sig, Ordering::SeqCst);
    let group = CHILD_GROUP.load(Ordering::SeqCst);
    if n >= 3 {
        if group > 0 {
            // SAFETY: kill is async-signal-safe; the group is our own child's.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        // SAFETY: _exit is async-signal-safe and skips destructors that may hold locks.
        unsafe { libc::_exit(128 + sig) };
    }
    let stop = STOP.load(Ordering::SeqCst);
    if !stop.is_null() {
        // SAFETY: points into an Arc leaked in `install`, never freed.
        unsafe { (*stop).store(true, Ordering::SeqCst) };
    }
    if group > 0 {
        // SAFETY: as above.
        unsafe { libc::kill(-group, sig) };
    }
}

/// Installs the handler; `stop` is set by the first signal.
pub fn install(stop: &Arc<AtomicBool>) {
    STOP.store(Arc::into_raw(Arc::clone(stop)).cast_mut(), Ordering::SeqCst);
    for sig in STOPPING {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask; SA_RESTART keeps
        // the engine's blocking calls from failing with EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The last stopping signal received, if any.
pub fn last() -> Option<i32> {
    Some(LAST.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Signals from now on are also passed to process group `group` (0: to nobody). A signal that
/// came before the group was known is passed on at once, so none is lost in between.
pub fn forward_to(group: i32) {
    CHILD_GROUP.store(group, Ordering::SeqCst);
    if group > 0 {
        if let Some(sig) = last() {
            // SAFETY: signalling our own child's process group.
            unsafe { libc::kill(-group, sig) };
        }
    }
}
