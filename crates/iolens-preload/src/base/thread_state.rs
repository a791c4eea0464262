//! The calling thread's recorder state: whether it is inside a hook, its buffer's slot in the
//! pool, its thread id. It lives in C (thread_state.c) for its initial-exec TLS model.

use std::cell::Cell;

/// The calling thread's recorder state (defined in thread_state.c, initial-exec TLS).
#[repr(C)]
pub(crate) struct ThreadState {
    /// Non-zero inside a hook: nested hooks pass through.
    in_hook: Cell<u32>,
    /// Index of the thread's buffer in the pool, or `stream::NO_SLOT`.
    pub(crate) slot: Cell<u32>,
    /// The thread's id, 0 until first asked.
    pub(crate) tid: Cell<u32>,
}

impl ThreadState {
    /// Marks the thread as inside a hook; what it was before (0: outside every hook).
    #[inline(always)]
    pub(crate) fn enter_hook(&self) -> u32 {
        self.in_hook.replace(1)
    }

    /// Sets the thread's hook mark back to `outer` (a value [`enter_hook`](Self::enter_hook)
    /// returned), or to 0 to lift it.
    #[inline(always)]
    pub(crate) fn set_in_hook(&self, outer: u32) {
        self.in_hook.set(outer);
    }

    /// Whether the thread is inside a hook.
    #[inline(always)]
    pub(crate) fn in_hook(&self) -> bool {
        self.in_hook.get() != 0
    }
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
