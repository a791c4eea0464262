//! Event timestamps: the TSC where the kernel itself trusts it (one instruction, a third of the
//! cost of `clock_gettime` on a VM), converted to `CLOCK_MONOTONIC` nanoseconds when a buffer is
//! written, by the line through the calibration point taken at start-up and a fresh one taken
//! then. With the kernel on another clock source, `CLOCK_MONOTONIC` is read directly.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use iolens_record::event::EVENT_FRAME_LEN;
use libc::c_int;

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

/// A TSC reading and the monotonic time (ns) taken beside it.
pub(crate) type Calibration = (u64, u64);

/// The calibration point taken at start-up.
pub(crate) fn start_point() -> Calibration {
    (CAL_TSC.load(Relaxed), CAL_NS.load(Relaxed))
}

/// Maps TSC ticks to monotonic nanoseconds along the segment between two calibration points.
///
/// A thread's buffers are converted along consecutive segments that share their end points
/// (see `flush_slot`), so the mapping is one continuous increasing line: the calls of one
/// thread stay in order. A line through the start-up point and each flush's fresh point
/// instead would jump by that point's noise at each flush, by up to microseconds, and make
/// consecutive calls overlap.
pub(crate) struct TscLine {
    tsc0: u64,
    ns0: u64,
    ns_per_tick: f64,
}

impl TscLine {
    /// The segment from `from` to a point taken now, and that point; `None` when timestamps
    /// are nanoseconds already.
    pub(crate) fn since(from: Calibration) -> Option<(TscLine, Calibration)> {
        if !USE_TSC.load(Relaxed) {
            return None;
        }
        let now = tsc_and_ns();
        Some((TscLine::between(from, now), now))
    }

    /// The segment from one calibration point to a later one.
    fn between((tsc0, ns0): Calibration, (tsc1, ns1): Calibration) -> TscLine {
        let ticks = tsc1.saturating_sub(tsc0).max(1);
        TscLine { tsc0, ns0, ns_per_tick: ns1.saturating_sub(ns0) as f64 / ticks as f64 }
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
///
/// Run on every event at each flush: one bounds check per frame, none per field.
pub(crate) fn convert_timestamps(data: &mut [u8], line: &TscLine) {
    let mut rest = data;
    while let Some(&tag) = rest.first() {
        let len = match tag {
            1 => {
                let Some(frame) = rest.first_chunk_mut::<EVENT_FRAME_LEN>() else { break };
                let (_, times) = frame.split_at_mut(41);
                let (start, times) = times.split_first_chunk_mut::<8>().expect("65 > 49");
                let end = times.first_chunk_mut::<8>().expect("65 > 57");
                *start = line.ns(u64::from_le_bytes(*start)).to_le_bytes();
                *end = line.ns(u64::from_le_bytes(*end)).to_le_bytes();
                EVENT_FRAME_LEN
            }
            2 => match rest.get(5..7) {
                Some(n) => 7 + u16::from_le_bytes([n[0], n[1]]) as usize,
                None => break,
            },
            _ => 9,
        };
        rest = rest.get_mut(len..).unwrap_or_default();
    }
}

/// Chooses the clock at start-up, and takes the TSC's first calibration point.
pub(crate) unsafe fn calibrate() {
    if cfg!(target_arch = "x86_64") && kernel_uses_tsc() {
        let (tsc, ns) = tsc_and_ns();
        CAL_TSC.store(tsc, Relaxed);
        CAL_NS.store(ns, Relaxed);
        USE_TSC.store(true, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_segments_keep_a_thread_in_order() {
        // Calibration points with the noise of a VM's clock: the second reads 300 ns late.
        let points = [(0u64, 0u64), (3_000_000, 1_000_300), (6_000_000, 2_000_000)];
        let first = TscLine::between(points[0], points[1]);
        let second = TscLine::between(points[1], points[2]);
        // A call ending just before the flush point, in one buffer, and one starting just after
        // it, in the next.
        let (end, next_start) = (points[1].0 - 30, points[1].0 + 30);
        assert!(first.ns(end) <= second.ns(next_start), "{} > {}", first.ns(end), second.ns(next_start));
        assert_eq!(first.ns(points[1].0), second.ns(points[1].0), "the segments meet");
    }
}
