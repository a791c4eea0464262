/* The recorder's per-thread state, in initial-exec TLS: one %fs-relative access, where Rust's
 * thread_local! in a shared object costs a call to __tls_get_addr on every hook (stable Rust
 * cannot choose the TLS model). The preload is loaded at start-up (LD_PRELOAD), so its TLS is
 * in the static block, as initial-exec requires. */
#include <stdint.h>

struct iolens_thread_state {
    uint32_t in_hook; /* inside a hook: nested calls pass through */
    uint32_t slot;    /* index of the thread's buffer in the pool, UINT32_MAX = none yet */
    uint32_t tid;     /* gettid(), 0 = not asked yet */
};

/* Global (hidden) so that the Rust side can reach it in one instruction on x86-64 (base/thread_state.rs, `me`);
 * other targets call iolens_thread_state. */
__attribute__((visibility("hidden"))) __thread struct iolens_thread_state iolens_state
    __attribute__((tls_model("initial-exec"))) = {0, UINT32_MAX, 0};

__attribute__((visibility("hidden"))) struct iolens_thread_state *iolens_thread_state(void) {
    return &iolens_state;
}
