//! The recursion guard every hook enters before recording, and the switch that turns the
//! recorder on once it has started.

use std::sync::atomic::{compiler_fence, AtomicBool, Ordering::*};

use crate::base::thread_state::{me, ThreadState};

/// Whether the recorder runs: set once `lib.rs`'s start-up has found the trace directory.
pub(crate) static ENABLED: AtomicBool = AtomicBool::new(false);

/// Marks the thread as inside a hook's recording; hooks reached meanwhile pass through.
///
/// The recorder itself calls no hook, so a hook reached inside the recording is a signal
/// handler's, which interrupted it. The handler's call is recorded like any other unless the
/// thread's buffer is half-written (or being claimed) at that moment: then it passes through,
/// counted (see [`recording_interrupted`]). The buffer is the stream's to judge:
/// `stream::enter_guard` enters this guard with its judgement.
pub(crate) struct Guard {
    state: &'static ThreadState,
    /// The guard's value before: 1 in a signal handler's hook inside another's recording.
    outer: u32,
}

impl Guard {
    /// Enters the guard, unless the recorder is off, or the thread is inside a hook already
    /// and `may_interrupt` says its buffer cannot take a signal handler's events now.
    #[inline(always)]
    pub(crate) fn enter(may_interrupt: impl FnOnce(&ThreadState) -> bool) -> Option<Guard> {
        if !ENABLED.load(Relaxed) {
            return None;
        }
        let state = me();
        let outer = state.enter_hook();
        if outer != 0 && !may_interrupt(state) {
            return None;
        }
        Some(Guard { state, outer })
    }

    /// The calling thread's state, looked up when the guard was entered.
    #[inline(always)]
    pub(crate) fn state(&self) -> &'static ThreadState {
        self.state
    }

    /// Runs the real call with the guard lifted. What runs inside it on this thread is the
    /// program's own I/O, to be recorded: a signal handler's, or a callback's (the functions of
    /// a `fopencookie` stream). And a handler that leaves with `siglongjmp` leaves the thread
    /// outside every hook, as it is; a guard still held would silence the thread for good.
    #[inline(always)]
    pub(crate) fn lifted<R>(&self, call: impl FnOnce() -> R) -> R {
        self.state.set_in_hook(0);
        // A signal handler on this thread must see the guard as it is in the program's order.
        compiler_fence(SeqCst);
        let ret = call();
        compiler_fence(SeqCst);
        self.state.set_in_hook(1);
        ret
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        self.state.set_in_hook(self.outer);
    }
}

/// Whether a hook the calling thread reached without its guard comes from a signal handler
/// that interrupted a recording (not from a disabled recorder).
#[inline]
pub(crate) fn recording_interrupted() -> bool {
    ENABLED.load(Relaxed) && me().in_hook()
}
