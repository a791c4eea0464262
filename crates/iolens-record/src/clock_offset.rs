//! The offset between two machines' clocks, as NTP and Cristian's algorithm estimate it: the one
//! estimator of iolens, used by `mpirun … iolens run` (between ranks, `iolens-mpi`) and by the
//! preload inside a traced MPI job (its clock files, read back by the importer).
//!
//! One side sends a ping at `sent` (its clock), the other answers with its clock reading
//! `remote`, the answer arrives at `received`. If the reply was read halfway through the round
//! trip, the other clock is ahead by `remote − (sent + received) / 2`; the reading lies somewhere
//! inside the round trip, so the estimate is wrong by at most half of it. Of many rounds the one
//! with the smallest round trip is kept: it had the least queueing, so its midpoint assumption is
//! the tightest.
//!
//! Between two such estimates a clock's offset is a line ([`OffsetLine`]): clocks drift apart at
//! a steady rate over a job. The importer (the preload's clock files) and `iolens-mpi` (rank 0's
//! ping rounds) both move timestamps to the reference clock along it. Nothing here allocates:
//! the preload calls it inside someone else's program.

/// One ping-pong round: this side's send and receive times, and the other side's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingSample {
    pub sent: u64,
    pub remote: u64,
    pub received: u64,
}

impl PingSample {
    /// The round trip.
    pub fn rtt(&self) -> u64 {
        self.received.saturating_sub(self.sent)
    }

    /// This side's time at the middle of the round trip.
    pub fn midpoint(&self) -> u64 {
        ((self.sent as u128 + self.received as u128) / 2) as u64
    }

    /// The other clock minus this one, assuming the reading was taken mid-round-trip.
    pub fn offset(&self) -> i64 {
        let mid = (self.sent as i128 + self.received as i128) / 2;
        (self.remote as i128 - mid) as i64
    }
}

/// The sample with the smallest round trip (the first of equals); `None` without samples.
pub fn best_sample(samples: &[PingSample]) -> Option<&PingSample> {
    samples.iter().min_by_key(|s| s.rtt())
}

/// A clock's offset from a reference clock over time: the line through two measurements
/// `(at_ns, offset_ns)`, interpolated between them and extrapolated beyond, where `at_ns` is
/// this clock's time and the reference time is `at_ns + offset_ns`. With one measurement the
/// offset is constant, with none zero.
///
/// The arithmetic is exact integer math (products in 128 bits), the interpolated offset
/// truncated toward zero and saturated at `i64`: any `u64` time and `i64` offset give a result,
/// and the same inputs the same nanosecond on every machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OffsetLine {
    /// The first measurement.
    start: (u64, i64),
    /// The second, strictly later than `start`; equal to `start` for a constant offset.
    end: (u64, i64),
}

impl OffsetLine {
    /// The same offset at every time.
    pub fn constant(offset_ns: i64) -> OffsetLine {
        OffsetLine { start: (0, offset_ns), end: (0, offset_ns) }
    }

    /// The line through two measurements. A second one not later than the first gives no rate:
    /// the first offset holds at every time.
    pub fn through(first: (u64, i64), second: (u64, i64)) -> OffsetLine {
        if second.0 > first.0 {
            OffsetLine { start: first, end: second }
        } else {
            OffsetLine { start: first, end: first }
        }
    }

    /// The line through the first two of `measurements`, in time order; constant with one,
    /// zero with none.
    pub fn through_all(measurements: &[(u64, i64)]) -> OffsetLine {
        match *measurements {
            [] => OffsetLine::default(),
            [(_, offset)] => OffsetLine::constant(offset),
            [first, second, ..] => OffsetLine::through(first, second),
        }
    }

    /// The offset at this clock's time `t`, in ns.
    pub fn offset_at(&self, t: u64) -> i64 {
        let (at, offset) = self.start;
        let span = self.end.0 - at;
        if span == 0 {
            return offset;
        }
        let change = self.end.1 as i128 - offset as i128;
        let since = t as i128 - at as i128;
        // Both factors are below 2^64 in magnitude, so their product fits in u128: exact.
        let magnitude = change.unsigned_abs() * since.unsigned_abs() / span as u128;
        // A move of 2^64 or more saturates any i64 offset already.
        let magnitude = magnitude.min(1 << 64) as i128;
        let moved = if (change < 0) == (since < 0) { magnitude } else { -magnitude };
        (offset as i128 + moved).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// This clock's time `t` on the reference clock (saturated at 0 and `u64::MAX`). Monotone in
    /// `t` while |drift| < 1: the offset then changes by at most 1 ns per ns, so sorted
    /// timestamps stay sorted.
    pub fn to_reference(&self, t: u64) -> u64 {
        (t as i128 + self.offset_at(t) as i128).clamp(0, u64::MAX as i128) as u64
    }

    /// How fast this clock runs ahead of the reference, per ns of its time: 1e-6 for a clock
    /// 1 ppm fast (the offset falls at that rate); 0 for a constant offset. For reports only:
    /// [`OffsetLine::offset_at`] does not round through it.
    pub fn drift(&self) -> f64 {
        let span = self.end.0 - self.start.0;
        if span == 0 {
            return 0.0;
        }
        (self.start.1 as f64 - self.end.1 as f64) / span as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_wins_and_its_midpoint_gives_the_offset() {
        let skew = 5_000_000u64;
        let samples = [
            PingSample { sent: 1_000, remote: 1_000 + 30_000 + skew, received: 41_000 },
            PingSample { sent: 100_000, remote: 100_000 + 5_000 + skew, received: 110_000 },
            PingSample { sent: 200_000, remote: 200_000 + 10_000 + skew, received: 290_000 },
        ];
        let best = best_sample(&samples).unwrap();
        assert_eq!((best.rtt(), best.midpoint(), best.offset()), (10_000, 105_000, skew as i64));
        assert_eq!(best_sample(&[]), None);
        // Odd ends: the midpoint is exact, not the sum of two halves rounded down.
        let odd = PingSample { sent: 1, remote: 10, received: 3 };
        assert_eq!((odd.midpoint(), odd.offset()), (2, 8));
        let huge = PingSample { sent: u64::MAX - 1, remote: 0, received: u64::MAX };
        assert_eq!(huge.midpoint(), u64::MAX - 1);
    }

    /// One second, in ns.
    const S: i64 = 1_000_000_000;

    #[test]
    fn between_two_measurements_the_offset_is_interpolated() {
        let line = OffsetLine::through((1000, 500), (3000, -500));
        assert_eq!([1000, 1500, 2000, 3000].map(|t| line.offset_at(t)), [500, 250, 0, -500]);
        assert_eq!((line.to_reference(1000), line.to_reference(3000)), (1500, 2500));
        // Truncated toward zero, on either side of the first measurement and for either sign.
        let up = OffsetLine::through((10, 0), (13, 1));
        assert_eq!([8, 9, 10, 11, 12, 13].map(|t| up.offset_at(t)), [0, 0, 0, 0, 0, 1]);
        let down = OffsetLine::through((10, 0), (13, -1));
        assert_eq!([7, 8, 12, 13].map(|t| down.offset_at(t)), [1, 0, 0, -1]);
    }

    #[test]
    fn beyond_the_measurements_the_offset_is_extrapolated() {
        let line = OffsetLine::through((1000, 500), (3000, -500));
        assert_eq!((line.offset_at(4000), line.offset_at(0)), (-1000, 1000));
        assert_eq!(line.to_reference(0), 1000);
    }

    #[test]
    fn one_measurement_is_a_constant_offset_and_none_is_zero() {
        let one = OffsetLine::through_all(&[(10, -7)]);
        assert_eq!(one, OffsetLine::constant(-7));
        assert_eq!([0, 10, u64::MAX].map(|t| one.offset_at(t)), [-7; 3]);
        assert_eq!((one.to_reference(1_000_000), one.to_reference(3)), (999_993, 0));
        // A second measurement not later than the first gives no rate: the first holds.
        for second in [(5, 9), (4, 9)] {
            assert_eq!(OffsetLine::through((5, 3), second).offset_at(100), 3);
        }
        let none = OffsetLine::through_all(&[]);
        assert_eq!((none.offset_at(42), none.to_reference(42), none.drift()), (0, 42, 0.0));
        assert_eq!(OffsetLine::through_all(&[(1000, 500), (3000, -500), (0, 0)]).offset_at(2000), 0);
    }

    #[test]
    fn the_drift_is_how_fast_the_clock_runs_ahead() {
        // The offset (reference − local) falls by 2 µs over 2 s: the clock runs 1 ppm fast.
        let line = OffsetLine::through((1_000_000, -1_000), (2_001_000_000, -3_000));
        assert!((line.drift() - 1e-6).abs() < 1e-12, "{}", line.drift());
        assert_eq!(OffsetLine::constant(5).drift(), 0.0);
        assert!(OffsetLine::through((0, 0), (10, 0)).drift().is_sign_positive());
    }

    #[test]
    fn extreme_times_and_offsets_neither_overflow_nor_lose_precision() {
        // ±1000 s over the whole u64 range: exact where the result is representable.
        let whole = OffsetLine::through((0, 1000 * S), (u64::MAX, -1000 * S));
        assert_eq!(whole.offset_at(u64::MAX), -1000 * S);
        assert_eq!(whole.to_reference(u64::MAX), u64::MAX - 1000 * S as u64);
        // 2e12 · (2^63 − 1) / (2^64 − 1) is just below 1e12.
        assert_eq!(whole.offset_at(u64::MAX / 2), 1);
        assert_eq!(whole.to_reference(0), 1000 * S as u64);
        // Near the end of time, 1000 s fast: saturated at the top, exact below it.
        let late = OffsetLine::through((u64::MAX - 1000 * S as u64, 1000 * S), (u64::MAX, -1000 * S));
        assert_eq!(late.to_reference(u64::MAX - 1000 * S as u64), u64::MAX);
        assert_eq!(late.to_reference(u64::MAX), u64::MAX - 1000 * S as u64);
        assert_eq!(late.offset_at(0), i64::MAX, "a move far past i64 saturates");
        for offset in [1000 * S, -1000 * S] {
            let constant = OffsetLine::constant(offset);
            assert_eq!(
                constant.to_reference(u64::MAX),
                (u64::MAX as i128 + offset as i128).min(u64::MAX as i128) as u64
            );
            assert_eq!(constant.to_reference(5), (5 + offset).max(0) as u64);
        }
        // The widest change over the widest span: a product near 2^128, still exact.
        let widest = OffsetLine::through((0, i64::MIN), (u64::MAX, i64::MAX));
        assert_eq!(widest.offset_at(u64::MAX), i64::MAX);
        assert_eq!(widest.offset_at(1 << 63), 0);
        let steep = OffsetLine::through((0, i64::MIN), (1, i64::MAX));
        assert_eq!((steep.to_reference(u64::MAX), steep.to_reference(0)), (u64::MAX, 0));
    }

    proptest::proptest! {
        #[test]
        fn the_offset_is_the_exact_quotient(
            at in 0u64..1 << 62,
            span in 1u64..1 << 40,
            offset in -(1i64 << 40)..1 << 40,
            change in -(1i64 << 40)..1 << 40,
            t in 0u64..1 << 63,
        ) {
            let line = OffsetLine::through((at, offset), (at + span, offset + change));
            // Small enough for plain i128 arithmetic, whose division truncates toward zero too.
            let expected = (offset as i128 + change as i128 * (t as i128 - at as i128) / span as i128)
                .clamp(i64::MIN as i128, i64::MAX as i128);
            proptest::prop_assert_eq!(line.offset_at(t) as i128, expected);
        }

        #[test]
        fn under_a_drift_below_one_the_order_of_times_is_kept(
            at in proptest::num::u64::ANY,
            span in 1u64..=u64::MAX,
            offset in -1000 * S..=1000 * S,
            rate in -0.999_999f64..0.999_999,
            t in proptest::num::u64::ANY,
            step in 0u64..1 << 40,
            near in -1000i64..1000,
        ) {
            let at = at.min(u64::MAX - span);
            let change = (rate * span as f64) as i128;
            let end = (offset as i128 + change).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
            let line = OffsetLine::through((at, offset), (at + span, end));
            let later = t.saturating_add(step);
            proptest::prop_assert!(line.to_reference(t) <= line.to_reference(later), "{line:?} at {t} and {later}");
            // Around the first measurement, where truncation toward zero changes direction.
            let t = at.saturating_add_signed(near);
            proptest::prop_assert!(line.to_reference(t) <= line.to_reference(t.saturating_add(1)), "{line:?} at {t}");
        }
    }
}
