//! Timestamps in nanoseconds of `CLOCK_MONOTONIC`: one clock shared by all threads and all
//! processes of a machine, so records from different agents and processes can be merged.

//!
//! For tests of cross-process clock alignment (MPI runs), [`apply_test_skew_from_env`] adds the
//! fixed offset `IOLENS_CLOCK_SKEW_NS` (signed nanoseconds) to every reading of this process, as
//! if its clock were another machine's.

use std::sync::atomic::{AtomicU64, Ordering};

/// The test-only offset added to every reading (two's complement of a signed value); 0 normally.
static SKEW_NS: AtomicU64 = AtomicU64::new(0);

/// The environment variable holding a test-only clock offset.
pub const SKEW_ENV: &str = "IOLENS_CLOCK_SKEW_NS";

/// Nanoseconds since an arbitrary, machine-wide origin (boot).
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64).wrapping_add(SKEW_NS.load(Ordering::Relaxed))
}

/// Reads `IOLENS_CLOCK_SKEW_NS` once, at startup, before any reading is taken; returns the
/// offset applied, or an error for a value that is not a signed integer. Unset means none.
pub fn apply_test_skew_from_env() -> Result<i64, String> {
    let Some(v) = std::env::var_os(SKEW_ENV) else { return Ok(0) };
    let v = v.to_string_lossy();
    let ns: i64 = v.trim().parse().map_err(|_| format!("{SKEW_ENV}={v}: give signed nanoseconds"))?;
    SKEW_NS.store(ns as u64, Ordering::Relaxed);
    Ok(ns)
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock_is_monotonic_and_in_nanoseconds() {
        let a = super::now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = super::now_ns();
        assert!(b > a);
        assert!(b - a >= 2_000_000, "slept 2 ms but clock advanced {} ns", b - a);
        assert!(b - a < 2_000_000_000);
    }
}
