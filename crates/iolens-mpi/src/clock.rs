//! Clock offsets between ranks: rank 0 pings each rank, and the estimator of
//! [`iolens_record::clock_offset`] (the preload's too) turns the rounds into an offset whose
//! uncertainty is half the round trip of the round kept.
//!
//! Offsets measured before and after the run give the drift (the two clocks' rate difference);
//! a rank's timestamp `t` becomes rank 0's time as `t − offset(t)`, the offset interpolated
//! linearly between the two estimates along the [`OffsetLine`] the importer uses too.

use iolens_record::clock_offset::OffsetLine;
pub use iolens_record::clock_offset::PingSample;
use serde::Serialize;

/// The estimate of one rank's offset at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OffsetEstimate {
    /// The rank's clock minus rank 0's.
    pub offset_ns: i64,
    /// Half the round trip of the sample used: the estimate is within this of the truth.
    pub uncertainty_ns: u64,
    pub rtt_ns: u64,
    /// Rank 0's time at the sample's midpoint.
    pub at_ns: u64,
}

/// The minimum-round-trip sample's estimate; `None` without samples.
pub fn estimate(samples: &[PingSample]) -> Option<OffsetEstimate> {
    let best = iolens_record::clock_offset::best_sample(samples)?;
    Some(OffsetEstimate {
        offset_ns: best.offset(),
        uncertainty_ns: best.rtt().div_ceil(2),
        rtt_ns: best.rtt(),
        at_ns: best.sent + best.rtt() / 2,
    })
}

/// A rank's clock relative to rank 0's over the run: estimates before and after, and the drift.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ClockCorrection {
    pub before: OffsetEstimate,
    pub after: OffsetEstimate,
    /// Change of the offset per nanosecond of rank 0's time (after − before over elapsed):
    /// the rate difference of the two clocks, e.g. 1e-6 for 1 ppm. 0 when the change is within
    /// the two estimates' uncertainties: then it is noise, not a measured drift, and `drift_bound`
    /// says how large a drift could hide in it.
    pub drift: f64,
    /// The largest drift the two estimates cannot tell from none: their uncertainties summed over
    /// the time between them (0 with a single estimate).
    pub drift_bound: f64,
    /// The offset over the rank's time that [`ClockCorrection::to_root`] applies, made once from
    /// the two estimates (see [`ClockCorrection::line_through`]) rather than for every timestamp.
    #[serde(skip)]
    line: OffsetLine,
}

impl ClockCorrection {
    /// The clock of rank 0 itself: no offset, no uncertainty.
    pub fn identity() -> ClockCorrection {
        ClockCorrection::default()
    }

    pub fn new(before: OffsetEstimate, after: OffsetEstimate) -> ClockCorrection {
        let elapsed = after.at_ns.saturating_sub(before.at_ns);
        let noise = before.uncertainty_ns.saturating_add(after.uncertainty_ns);
        let drift_bound = if elapsed > 0 { noise as f64 / elapsed as f64 } else { 0.0 };
        let line = ClockCorrection::line_through(&before, &after);
        ClockCorrection { before, after, drift: line.drift(), drift_bound, line }
    }

    /// Whether the offset changed by more than the two estimates can be wrong by: only then is
    /// the change a drift of the clocks rather than the noise of the round trips.
    fn drift_measured(before: &OffsetEstimate, after: &OffsetEstimate) -> bool {
        let change = (after.offset_ns as i128 - before.offset_ns as i128).unsigned_abs();
        change > before.uncertainty_ns as u128 + after.uncertainty_ns as u128
    }

    /// The offset over the rank's time, as rank 0's time minus the rank's (the line's sign).
    ///
    /// The estimates are stamped with rank 0's time; a rank's time `t` is put on rank 0's axis
    /// as `t − before.offset`, so both estimates are shifted onto the rank's axis by the
    /// *before* offset. That is exact at the first estimate (where it is the rank's own reading)
    /// and off by the change of the offset at the second, which moves a correction by the drift
    /// times that change (1 ppm over 10 minutes: 0.6 ns). It is the placement iolens has always
    /// used, kept so that results stay comparable with earlier runs. The shifts stay within u64
    /// for any estimate of [`estimate`]: `at + offset` is the rank's own reading in that round.
    fn line_through(before: &OffsetEstimate, after: &OffsetEstimate) -> OffsetLine {
        if !ClockCorrection::drift_measured(before, after) {
            // No drift to tell: the best constant is the mean of the two estimates.
            return OffsetLine::constant(mean_offset(before, after).saturating_neg());
        }
        let on_rank_axis = |e: &OffsetEstimate| {
            (e.at_ns.saturating_add_signed(before.offset_ns), e.offset_ns.saturating_neg())
        };
        OffsetLine::through(on_rank_axis(before), on_rank_axis(after))
    }

    /// The offset (reported): the mean of the two estimates.
    pub fn offset_ns(&self) -> i64 {
        mean_offset(&self.before, &self.after)
    }

    /// The larger of the two estimates' uncertainties.
    pub fn uncertainty_ns(&self) -> u64 {
        self.before.uncertainty_ns.max(self.after.uncertainty_ns)
    }

    /// The rank's timestamp `t` in rank 0's time. Monotone in `t` (|drift| < 1), so sorted
    /// periods stay sorted. 0 is no time at all (an unset window start): it stays 0.
    pub fn to_root(&self, t: u64) -> u64 {
        if t == 0 {
            return 0;
        }
        self.line.to_reference(t)
    }
}

/// The mean of two estimates' offsets.
fn mean_offset(before: &OffsetEstimate, after: &OffsetEstimate) -> i64 {
    ((before.offset_ns as i128 + after.offset_ns as i128) / 2) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_rtt_sample_wins_and_recovers_the_offset() {
        // The rank is 5 ms ahead; round trips of 40, 10 and 90 µs, replies not always mid-way.
        let skew = 5_000_000u64;
        let samples = [
            PingSample { sent: 1_000, remote: 1_000 + 30_000 + skew, received: 41_000 },
            PingSample { sent: 100_000, remote: 100_000 + 5_000 + skew, received: 110_000 },
            PingSample { sent: 200_000, remote: 200_000 + 10_000 + skew, received: 290_000 },
        ];
        let e = estimate(&samples).unwrap();
        assert_eq!(e.rtt_ns, 10_000);
        assert_eq!(e.uncertainty_ns, 5_000);
        assert_eq!(e.offset_ns, skew as i64);
        assert_eq!(e.at_ns, 105_000);
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn a_reading_anywhere_in_the_round_trip_is_within_the_uncertainty() {
        for at in [0u64, 3_000, 10_000] {
            let s = PingSample { sent: 50, remote: 50 + at + 777, received: 10_050 };
            let e = estimate(&[s]).unwrap();
            assert!((e.offset_ns - 777).unsigned_abs() <= e.uncertainty_ns, "{e:?}");
        }
    }

    #[test]
    fn drift_is_interpolated_and_corrections_keep_order() {
        let before = OffsetEstimate { offset_ns: 1_000, uncertainty_ns: 10, rtt_ns: 20, at_ns: 1_000_000 };
        let after = OffsetEstimate { offset_ns: 3_000, uncertainty_ns: 30, rtt_ns: 60, at_ns: 2_001_000_000 };
        let c = ClockCorrection::new(before, after);
        assert!((c.drift - 1e-6).abs() < 1e-12);
        assert_eq!(c.uncertainty_ns(), 30);
        assert_eq!(c.offset_ns(), 2_000);
        // Halfway (rank 0 time 1.001 s) the offset is halfway.
        let t = 1_001_000_000 + 2_000;
        assert_eq!(c.to_root(t), 1_001_000_000);
        let mut last = 0;
        for t in (1_000_000u64..3_000_000_000).step_by(7_777_777) {
            let r = c.to_root(t);
            assert!(r >= last);
            last = r;
        }
    }

    /// Issue 25, defect 7: a change of the offset smaller than the estimates' own uncertainty
    /// is no drift. It was reported as one (−1.59e-4 from noise) and applied to every time.
    #[test]
    fn a_change_within_the_uncertainty_is_no_drift() {
        let before =
            OffsetEstimate { offset_ns: 1_000, uncertainty_ns: 500, rtt_ns: 1_000, at_ns: 1_000_000 };
        let after =
            OffsetEstimate { offset_ns: 1_600, uncertainty_ns: 500, rtt_ns: 1_000, at_ns: 1_001_000_000 };
        let c = ClockCorrection::new(before, after);
        assert_eq!(c.drift, 0.0);
        assert!((c.drift_bound - 1e-6).abs() < 1e-15, "{}", c.drift_bound);
        // The constant offset is the mean of the two: 1300 ns at either end.
        assert_eq!(c.to_root(1_000_000 + 1_300), 1_000_000);
        assert_eq!(c.to_root(1_001_000_000 + 1_300), 1_001_000_000);
        // Beyond the noise it is a drift again.
        let after = OffsetEstimate { offset_ns: 2_001, ..after };
        assert!(ClockCorrection::new(before, after).drift > 0.0);
    }

    #[test]
    fn negative_offsets_and_rank_zero() {
        let e = estimate(&[PingSample { sent: 10_000, remote: 4_000, received: 12_000 }]).unwrap();
        assert_eq!(e.offset_ns, -7_000);
        let c = ClockCorrection::new(e, e);
        assert_eq!(c.to_root(4_000), 11_000);
        assert_eq!(ClockCorrection::identity().to_root(123), 123);
    }
}
