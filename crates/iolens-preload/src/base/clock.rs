//! Event timestamps: the TSC where the kernel itself trusts it (one instruction, a third of the
//! cost of `clock_gettime` on a VM), written raw. Each buffer goes out as a block whose header
//! holds two calibration points (TSC beside `CLOCK_MONOTONIC`): the one its previous buffer
//! ended with and one taken at the flush. The reader maps ticks to nanoseconds along that
//! segment (`iolens_record::event::TickLine`); the segments of one thread share their end
//! points, so its calls stay in order. With the kernel on another clock source,
//! `CLOCK_MONOTONIC` is read directly and the points are (ns, ns).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use libc::c_int;

use crate::base::raw_syscall::sys;

static USE_TSC: AtomicBool = AtomicBool::new(false);
static CAL_TSC: AtomicU64 = AtomicU64::new(0);
static CAL_NS: AtomicU64 = AtomicU64::new(0);

#[inline]
pub(crate) fn now_ns() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if USE_TSC.load(Relaxed) {
        // SAFETY: rdtsc has no preconditions.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    iolens_record::clock::now_ns()
}

/// Whether the kernel's clock source is the TSC (so it is invariant and synchronized).
fn kernel_uses_tsc() -> bool {
    let path = c"/sys/devices/system/clocksource/clocksource0/current_clocksource";
    // SAFETY: a NUL-terminated path.
    let fd =
        unsafe { sys()(libc::SYS_openat, libc::AT_FDCWD, path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }
            as c_int;
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 16];
    // SAFETY: reads at most `buf.len()` bytes into `buf`, then closes the descriptor opened above.
    let n = unsafe {
        let n = sys()(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len());
        sys()(libc::SYS_close, fd);
        n
    };
    n >= 3 && &buf[..4.min(n as usize)] == b"tsc\n"
}

/// A TSC reading and the monotonic time (ns) taken beside it.
pub(crate) type Calibration = (u64, u64);

/// The calibration point taken at start-up.
pub(crate) fn start_point() -> Calibration {
    (CAL_TSC.load(Relaxed), CAL_NS.load(Relaxed))
}

/// A calibration point taken now: the TSC and the monotonic time beside it, or the monotonic
/// time twice when timestamps are nanoseconds.
pub(crate) fn calibration_point() -> Calibration {
    if USE_TSC.load(Relaxed) {
        return tsc_and_ns();
    }
    let ns = iolens_record::clock::now_ns();
    (ns, ns)
}

/// A TSC reading and the monotonic time taken right beside it.
fn tsc_and_ns() -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions.
        let a = unsafe { core::arch::x86_64::_rdtsc() };
        let ns = iolens_record::clock::now_ns();
        // SAFETY: as above.
        let b = unsafe { core::arch::x86_64::_rdtsc() };
        (a / 2 + b / 2, ns)
    }
    #[cfg(not(target_arch = "x86_64"))]
    (0, iolens_record::clock::now_ns())
}

/// Chooses the clock at start-up, and takes the TSC's first calibration point.
pub(crate) fn calibrate() {
    if cfg!(target_arch = "x86_64") && kernel_uses_tsc() {
        let (tsc, ns) = tsc_and_ns();
        CAL_TSC.store(tsc, Relaxed);
        CAL_NS.store(ns, Relaxed);
        USE_TSC.store(true, Relaxed);
    }
}
