//! When each process was busy, in bounded memory: the time axis is cut into buckets of 2^level
//! nanoseconds (aligned to multiples of their width), and a process's busy buckets are kept as
//! sorted runs. When more than [`MAX_BUSY_BUCKETS`] buckets are busy the level rises (buckets
//! double), so a long trace keeps at most that many periods per process, each exact to one
//! bucket. The number of busy buckets only grows as calls are added, so the level reached is
//! the smallest whose busy buckets fit — the same whether the trace is read in one pass or in
//! chunks merged afterwards.

use iolens_record::Interval;

/// Busy buckets kept per process at most: about a pixel each on a page-wide chart.
pub const MAX_BUSY_BUCKETS: u64 = 1024;

/// The busy periods of one process.
#[derive(Debug, Default, Clone)]
pub struct BusyTimeline {
    /// Bucket width is 2^level ns.
    level: u32,
    /// Sorted, disjoint, non-touching runs of busy buckets `[first, end)`.
    runs: Vec<(u64, u64)>,
    /// Buckets the runs cover.
    busy: u64,
    /// Where the last call before the last run went: the next such call, of the same file in a
    /// trace written file by file (DXT), goes there or a little after it. Only a hint.
    hint: usize,
}

/// Timelines are equal when their periods are (the hint is no part of them).
impl PartialEq for BusyTimeline {
    fn eq(&self, o: &BusyTimeline) -> bool {
        (self.level, &self.runs, self.busy) == (o.level, &o.runs, o.busy)
    }
}

impl BusyTimeline {
    /// Marks `iv` busy; a call of no duration marks the bucket it falls in.
    #[inline]
    pub fn push(&mut self, iv: Interval) {
        let first = iv.start >> self.level;
        let end = (iv.end.max(iv.start.saturating_add(1)) - 1) >> self.level;
        let end = end.saturating_add(1);
        match self.runs.last_mut() {
            // Calls come mostly in time order: extend the last run.
            Some(last) if first >= last.0 && first <= last.1 => {
                if end > last.1 {
                    self.busy += end - last.1;
                    last.1 = end;
                }
            }
            Some(last) if first > last.1 => {
                self.runs.push((first, end));
                self.busy += end - first;
            }
            None => {
                // Room for every run there can be, so pushing never reallocates.
                self.runs.reserve_exact(MAX_BUSY_BUCKETS as usize + 1);
                self.runs.push((first, end));
                self.busy += end - first;
            }
            Some(_) => self.insert_out_of_order(first, end),
        }
        while self.busy > MAX_BUSY_BUCKETS {
            self.coarsen();
        }
    }

    /// A call before the last run: joined with the runs it overlaps or touches, in place (one
    /// move of the runs after it), so a trace whose calls come file by file (DXT) costs no
    /// pass over every run per call.
    fn insert_out_of_order(&mut self, first: u64, end: u64) {
        let lo = self.first_reaching(first);
        // Runs before `lo` end before `first`, so start before `end`: `hi` is at least `lo`.
        let hi = lo + self.runs[lo..].partition_point(|r| r.0 <= end);
        self.hint = lo;
        if lo == hi {
            self.runs.insert(lo, (first, end));
            self.busy += end - first;
            return;
        }
        let joined = (first.min(self.runs[lo].0), end.max(self.runs[hi - 1].1));
        let covered: u64 = self.runs[lo..hi].iter().map(|r| r.1 - r.0).sum();
        self.runs[lo] = joined;
        self.runs.drain(lo + 1..hi);
        self.busy = self.busy - covered + (joined.1 - joined.0);
    }

    /// The first run ending at or after `first` (`runs.partition_point(|r| r.1 < first)`),
    /// searched from the hint forward in doubling steps when the runs before the hint all end
    /// before `first`, else among those runs.
    #[inline]
    fn first_reaching(&self, first: u64) -> usize {
        let runs = &self.runs;
        let hint = self.hint.min(runs.len());
        if hint > 0 && runs[hint - 1].1 >= first {
            return runs[..hint].partition_point(|r| r.1 < first);
        }
        // runs[..lo] end before `first`; the answer is in lo..=min(lo + step, len).
        let (mut lo, mut step) = (hint, 1);
        while lo + step <= runs.len() && runs[lo + step - 1].1 < first {
            lo += step;
            step *= 2;
        }
        let upto = (lo + step).min(runs.len());
        lo + runs[lo..upto].partition_point(|r| r.1 < first)
    }

    /// Buckets twice as wide: each run covers the wider buckets its narrow ones fall in.
    fn coarsen(&mut self) {
        self.level += 1;
        for r in &mut self.runs {
            *r = (r.0 >> 1, (r.1 >> 1) + (r.1 & 1));
        }
        merge_touching(&mut self.runs);
        self.busy = self.runs.iter().map(|r| r.1 - r.0).sum();
    }

    /// Adds the periods of the calls after this timeline's (or of any other part of the trace).
    pub fn absorb(&mut self, mut later: BusyTimeline) {
        while self.level < later.level {
            self.coarsen();
        }
        while later.level < self.level {
            later.coarsen();
        }
        self.runs.extend(later.runs);
        self.runs.sort_unstable();
        merge_touching(&mut self.runs);
        self.busy = self.runs.iter().map(|r| r.1 - r.0).sum();
        while self.busy > MAX_BUSY_BUCKETS {
            self.coarsen();
        }
    }

    /// Width of a bucket in ns: the periods are exact to it.
    pub fn resolution_ns(&self) -> u64 {
        1u64.checked_shl(self.level).unwrap_or(u64::MAX)
    }

    /// The busy periods `[start, end)` in ns (the last may end at u64::MAX).
    pub fn periods(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let ns = |bucket: u64| u64::try_from((bucket as u128) << self.level).unwrap_or(u64::MAX);
        self.runs.iter().map(move |r| (ns(r.0), ns(r.1)))
    }
}

/// Joins runs that overlap or touch, in a list sorted by start (but for one run inserted before
/// a run it overlaps).
fn merge_touching(runs: &mut Vec<(u64, u64)>) {
    let mut kept = 0;
    for i in 0..runs.len() {
        let r = runs[i];
        if kept > 0 && r.0 <= runs[kept - 1].1 {
            // A run inserted just before one it overlaps may start after it.
            let last = &mut runs[kept - 1];
            *last = (last.0.min(r.0), last.1.max(r.1));
        } else {
            runs[kept] = r;
            kept += 1;
        }
    }
    runs.truncate(kept);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn few_calls_are_kept_exactly() {
        let mut t = BusyTimeline::default();
        for (s, e) in [(10, 20), (15, 30), (50, 60), (40, 45)] {
            t.push(Interval::new(s, e));
        }
        assert_eq!(t.resolution_ns(), 1);
        assert_eq!(t.periods().collect::<Vec<_>>(), [(10, 30), (40, 45), (50, 60)]);
    }

    #[test]
    fn many_calls_are_bounded_and_covered() {
        let mut t = BusyTimeline::default();
        let calls: Vec<Interval> = (0..100_000u64).map(|i| Interval::new(i * 1000, i * 1000 + 10)).collect();
        for iv in &calls {
            t.push(*iv);
        }
        let periods: Vec<(u64, u64)> = t.periods().collect();
        assert!(t.busy <= MAX_BUSY_BUCKETS && periods.len() as u64 <= MAX_BUSY_BUCKETS, "{}", periods.len());
        assert!(t.resolution_ns() > 1000, "coarser than the gaps: {}", t.resolution_ns());
        for iv in &calls {
            assert!(periods.iter().any(|p| p.0 <= iv.start && iv.end <= p.1), "{iv:?} is covered");
        }
        assert!(t.runs.capacity() <= MAX_BUSY_BUCKETS as usize + 1, "no growth past the reserve");
    }

    /// The busy buckets of `calls` at `level`, one by one (a reference for small traces).
    fn buckets_of(calls: &[Interval], level: u32) -> Vec<(u64, u64)> {
        let mut busy = std::collections::BTreeSet::new();
        for iv in calls {
            let first = iv.start >> level;
            let end = ((iv.end.max(iv.start + 1) - 1) >> level) + 1;
            busy.extend(first..end);
        }
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for b in busy {
            match runs.last_mut() {
                Some(last) if last.1 == b => last.1 = b + 1,
                _ => runs.push((b, b + 1)),
            }
        }
        runs
    }

    /// `calls` pushed in their order give the runs of their busy buckets at the level reached.
    fn pushed_give_their_busy_buckets(calls: &[Interval]) -> Result<(), TestCaseError> {
        let mut t = BusyTimeline::default();
        calls.iter().for_each(|iv| t.push(*iv));
        let expected = buckets_of(calls, t.level);
        prop_assert_eq!(t.busy, expected.iter().map(|r| r.1 - r.0).sum::<u64>());
        prop_assert_eq!(t.runs, expected);
        Ok(())
    }

    proptest! {
        /// Calls in any order give the runs of their busy buckets at the level reached.
        #[test]
        fn calls_in_any_order_give_their_busy_buckets(
            calls in prop::collection::vec((0u64..1u64 << 16, 0u64..1u64 << 8), 1..400),
        ) {
            let calls: Vec<Interval> = calls.iter().map(|&(s, d)| Interval::new(s, s + d)).collect();
            pushed_give_their_busy_buckets(&calls)?;
        }
    }

    proptest! {
        /// Calls file by file, each file's in time order (as DXT writes them): the runs of
        /// their busy buckets, as in any order.
        #[test]
        fn calls_file_by_file_give_their_busy_buckets(
            files in prop::collection::vec(prop::collection::vec((0u64..1u64 << 10, 0u64..1u64 << 9), 0..300), 1..8),
        ) {
            let mut calls = Vec::new();
            for steps in &files {
                let mut t = 0;
                for &(gap, len) in steps {
                    t += gap;
                    calls.push(Interval::new(t, t + len));
                }
            }
            pushed_give_their_busy_buckets(&calls)?;
        }
    }

    proptest! {
        /// However a trace is cut into chunks, the merged timeline is the one-pass timeline.
        #[test]
        fn chunks_merged_equal_one_pass(
            calls in prop::collection::vec((0u64..1u64 << 40, 0u64..1u64 << 30), 1..3000),
            cut in 0usize..3000,
        ) {
            let calls: Vec<Interval> = calls.iter().map(|&(s, d)| Interval::new(s, s + d)).collect();
            let cut = cut.min(calls.len());
            let mut whole = BusyTimeline::default();
            calls.iter().for_each(|iv| whole.push(*iv));
            let (mut a, mut b) = (BusyTimeline::default(), BusyTimeline::default());
            calls[..cut].iter().for_each(|iv| a.push(*iv));
            calls[cut..].iter().for_each(|iv| b.push(*iv));
            a.absorb(b);
            prop_assert_eq!(a.level, whole.level);
            prop_assert_eq!(a.runs, whole.runs);
        }
    }
}
