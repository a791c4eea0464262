//! Timestamps in nanoseconds of `CLOCK_MONOTONIC`: one clock shared by all threads and all
//! processes of a machine, so records from different agents and processes can be merged.

/// Nanoseconds since an arbitrary, machine-wide origin (boot).
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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
