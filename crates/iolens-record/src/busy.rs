//! Overlapped busy time: the measure of the union of in-flight intervals.
//!
//! The BPS paper (Fig. 3) sorts every record by start time and sweeps. Holding every record
//! does not scale to long runs, so the work is split in three streaming stages, each with
//! bounded state:
//!
//! 1. [`InFlightTracker`], inside an agent: the agent's in-flight count goes 0→1 at a
//!    submission and 1→0 at a completion; those instants bound the agent's busy periods, which
//!    are therefore disjoint and ordered. A period open longer than a split limit is cut into
//!    pieces so the collector hears from a busy agent regularly.
//! 2. [`StreamingUnion`], in a collector: periods from many agents arrive in per-agent order but
//!    interleaved arbitrarily. Every source's *watermark* (no future period of it starts before
//!    it) bounds what can still arrive; periods starting below the minimum watermark are swept
//!    ([`UnionSweep`]) and dropped, the rest wait, compacted into disjoint runs.
//! 3. [`merge_sorted_streams`]: finished, sorted period streams (for example one per process)
//!    merged into one total.
//!
//! Touching intervals (one ends exactly when the next starts) belong to one busy period, as in
//! the paper's sweep, which separates records only when `end < next.start`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A half-open time interval `[start, end)` in nanoseconds; `end >= start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Interval {
    pub start: u64,
    pub end: u64,
}

impl Interval {
    pub fn new(start: u64, end: u64) -> Self {
        debug_assert!(end >= start, "interval ends before it starts");
        Interval { start, end }
    }
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// Totals of a union: its measure and how many disjoint busy periods it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnionTotals {
    pub busy_ns: u64,
    /// Disjoint busy periods (maximal runs of overlapping or touching intervals).
    pub periods: u64,
    /// Start of the first and end of the last period (0 when empty).
    pub first_start: u64,
    pub last_end: u64,
}

/// The paper's sweep over intervals fed in non-decreasing start order.
#[derive(Debug, Clone, Default)]
pub struct UnionSweep {
    current: Option<Interval>,
    totals: UnionTotals,
}

impl UnionSweep {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an interval; `iv.start` must not be below the start of any interval pushed before.
    /// Returns the busy period this interval closed, if it starts after an idle gap.
    #[inline]
    pub fn push(&mut self, iv: Interval) -> Option<Interval> {
        match &mut self.current {
            Some(cur) if iv.start <= cur.end => {
                debug_assert!(iv.start >= cur.start, "sweep input not sorted by start");
                cur.end = cur.end.max(iv.end);
                None
            }
            Some(cur) => {
                let done = *cur;
                self.close(done);
                self.current = Some(iv);
                Some(done)
            }
            None => {
                self.current = Some(iv);
                None
            }
        }
    }

    fn close(&mut self, done: Interval) {
        if self.totals.periods == 0 {
            self.totals.first_start = done.start;
        }
        self.totals.busy_ns += done.len();
        self.totals.periods += 1;
        self.totals.last_end = done.end;
    }

    /// Totals including the still-open period.
    pub fn totals(&self) -> UnionTotals {
        let mut t = self.clone();
        t.finish_in_place();
        t.totals
    }

    fn finish_in_place(&mut self) {
        if let Some(cur) = self.current.take() {
            self.close(cur);
        }
    }

    pub fn finish(mut self) -> UnionTotals {
        self.finish_in_place();
        self.totals
    }

    /// The end of the current open period, if any (everything before it is settled).
    pub fn current(&self) -> Option<Interval> {
        self.current
    }
}

/// The union of arbitrary intervals, by sorting them: the Fig. 3 algorithm, used as the reference
/// and for traces small enough to hold.
pub fn union_of(intervals: &mut [Interval]) -> UnionTotals {
    intervals.sort_unstable_by_key(|iv| iv.start);
    let mut sweep = UnionSweep::new();
    for iv in intervals.iter() {
        sweep.push(*iv);
    }
    sweep.finish()
}

/// Turns one agent's submissions and completions into its disjoint busy periods.
///
/// Events must be fed in the order the agent observed them, with non-decreasing timestamps.
#[derive(Debug, Clone)]
pub struct InFlightTracker {
    in_flight: u32,
    open_since: u64,
    split_after_ns: u64,
}

impl InFlightTracker {
    /// `split_after_ns`: an open period longer than this is emitted in pieces.
    pub fn new(split_after_ns: u64) -> Self {
        InFlightTracker { in_flight: 0, open_since: 0, split_after_ns: split_after_ns.max(1) }
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// A request was submitted at `t`. Returns a finished piece when an open period is split.
    #[inline]
    pub fn submit(&mut self, t: u64) -> Option<Interval> {
        let piece = self.split_if_long(t);
        if self.in_flight == 0 {
            self.open_since = t;
        }
        self.in_flight += 1;
        piece
    }

    /// A request completed at `t`. Returns the period (or last piece of it) that ended, if the
    /// agent became idle, or a piece when a long period is split.
    #[inline]
    pub fn complete(&mut self, t: u64) -> Option<Interval> {
        debug_assert!(self.in_flight > 0, "completion without submission");
        self.in_flight -= 1;
        if self.in_flight == 0 {
            Some(Interval::new(self.open_since, t.max(self.open_since)))
        } else {
            self.split_if_long(t)
        }
    }

    /// Emits the open part of a period up to `t` when it is long, so the collector can advance.
    #[inline]
    pub fn split_if_long(&mut self, t: u64) -> Option<Interval> {
        if self.in_flight > 0 && t.saturating_sub(self.open_since) >= self.split_after_ns {
            let piece = Interval::new(self.open_since, t);
            self.open_since = t;
            Some(piece)
        } else {
            None
        }
    }
}

/// Merges per-source sorted period streams that arrive interleaved, behind a watermark.
///
/// Each source pushes periods in non-decreasing start order. A source's watermark is the end of
/// its last period (or a later time it declares with [`StreamingUnion::advance`]): the source
/// promises that none of its future periods starts earlier. Periods that start below the lowest
/// watermark of all open sources are final and swept; the others wait in a buffer that is
/// compacted into disjoint runs, so it never holds more than the number of gaps in the unsettled
/// window.
#[derive(Debug, Clone)]
pub struct StreamingUnion {
    watermarks: Vec<u64>,
    open: Vec<bool>,
    pending: Vec<Interval>,
    pending_compacted: usize,
    sweep: UnionSweep,
    peak_pending: usize,
    /// Closed busy periods not yet taken, when the caller asked to keep them.
    closed: Option<Vec<Interval>>,
}

impl StreamingUnion {
    pub fn new(sources: usize) -> Self {
        StreamingUnion {
            watermarks: vec![0; sources],
            open: vec![true; sources],
            pending: Vec::new(),
            pending_compacted: 0,
            sweep: UnionSweep::new(),
            peak_pending: 0,
            closed: None,
        }
    }

    /// Also hands out the final busy periods ([`StreamingUnion::take_closed`]), so they can be
    /// logged and merged with other processes' periods later.
    pub fn keeping_periods(mut self) -> Self {
        self.closed = Some(Vec::new());
        self
    }

    /// Busy periods closed since the last call (sorted, disjoint); empty unless
    /// [`keeping_periods`](StreamingUnion::keeping_periods) was asked for.
    pub fn take_closed(&mut self) -> Vec<Interval> {
        self.closed.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Adds a period of `source`; an empty interval only advances the source's watermark.
    pub fn push(&mut self, source: usize, iv: Interval) {
        debug_assert!(self.open[source], "push to a closed source");
        debug_assert!(iv.start >= self.watermarks[source], "source pushed out of order");
        self.watermarks[source] = self.watermarks[source].max(iv.end);
        if !iv.is_empty() {
            self.pending.push(iv);
            if self.pending.len() >= 2 * self.pending_compacted.max(1024) {
                self.compact();
            }
        }
    }

    /// Declares that `source` will not start a period before `t`.
    pub fn advance(&mut self, source: usize, t: u64) {
        self.watermarks[source] = self.watermarks[source].max(t);
    }

    /// The source has no more periods.
    pub fn close(&mut self, source: usize) {
        self.open[source] = false;
    }

    fn low_watermark(&self) -> u64 {
        self.watermarks
            .iter()
            .zip(&self.open)
            .filter(|(_, open)| **open)
            .map(|(w, _)| *w)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Sorts and merges the pending periods into disjoint runs; the union is unchanged.
    fn compact(&mut self) {
        self.pending.sort_unstable_by_key(|iv| iv.start);
        let mut merged = 0;
        for i in 0..self.pending.len() {
            let iv = self.pending[i];
            if merged > 0 && iv.start <= self.pending[merged - 1].end {
                let last = &mut self.pending[merged - 1];
                last.end = last.end.max(iv.end);
            } else {
                self.pending[merged] = iv;
                merged += 1;
            }
        }
        self.pending.truncate(merged);
        self.pending_compacted = merged;
        self.peak_pending = self.peak_pending.max(merged);
    }

    /// Sweeps every period that can no longer be overtaken by a future one.
    pub fn settle(&mut self) {
        let low = self.low_watermark();
        self.compact();
        let ready = self.pending.partition_point(|iv| iv.start < low);
        for iv in self.pending.drain(..ready) {
            if let (Some(done), Some(closed)) = (self.sweep.push(iv), &mut self.closed) {
                closed.push(done);
            }
        }
        self.pending_compacted = self.pending.len();
    }

    /// Periods waiting behind the watermark (after the last compaction).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The most disjoint runs ever waiting at once: the memory the union needed.
    pub fn peak_pending(&self) -> usize {
        self.peak_pending.max(self.pending.len())
    }

    /// Busy time settled so far (a lower bound of the final total).
    pub fn settled(&self) -> UnionTotals {
        self.sweep.totals()
    }

    /// Closes every source and returns the union of everything pushed, with the periods not
    /// yet taken (when kept).
    pub fn finish(mut self) -> (UnionTotals, Vec<Interval>) {
        self.open.iter_mut().for_each(|o| *o = false);
        self.settle();
        let mut rest = self.take_closed();
        if let (Some(last), true) = (self.sweep.current(), self.closed.is_some()) {
            rest.push(last);
        }
        (self.sweep.finish(), rest)
    }
}

/// Merges streams that are each sorted by start (for example the busy periods of several
/// processes) into the totals of their union, holding one interval per stream.
pub fn merge_sorted_streams<I>(streams: Vec<I>) -> UnionTotals
where
    I: Iterator<Item = Interval>,
{
    let groups = vec![0; streams.len()];
    merge_sorted_streams_grouped(streams, &groups).0
}

/// [`merge_sorted_streams`], and beside the union of all the union of each group of streams
/// (`group_of[i]`: stream `i`'s group, from 0): the busy time of each node of a job whose
/// streams are its ranks'. One pass: the periods leave the merge in start order, so each
/// group's are in start order too and feed a sweep of their own.
pub fn merge_sorted_streams_grouped<I>(streams: Vec<I>, group_of: &[usize]) -> (UnionTotals, Vec<UnionTotals>)
where
    I: Iterator<Item = Interval>,
{
    assert_eq!(group_of.len(), streams.len(), "one group per stream");
    let groups = group_of.iter().max().map_or(0, |g| g + 1);
    let mut group_sweeps = vec![UnionSweep::new(); groups];
    let mut streams = streams;
    let mut heap = BinaryHeap::with_capacity(streams.len());
    for (i, s) in streams.iter_mut().enumerate() {
        if let Some(iv) = s.next() {
            heap.push(Reverse((iv.start, iv.end, i)));
        }
    }
    let mut sweep = UnionSweep::new();
    while let Some(Reverse((start, end, i))) = heap.pop() {
        sweep.push(Interval::new(start, end));
        group_sweeps[group_of[i]].push(Interval::new(start, end));
        if let Some(iv) = streams[i].next() {
            debug_assert!(iv.start >= start, "stream {i} not sorted by start");
            heap.push(Reverse((iv.start, iv.end, i)));
        }
    }
    (sweep.finish(), group_sweeps.into_iter().map(UnionSweep::finish).collect())
}

/// A file of busy periods (16 bytes each: start and end, little-endian u64 ns), sorted and
/// disjoint: what one process contributes when unions are merged across processes.
pub struct PeriodLogWriter {
    out: std::io::BufWriter<iolens_output::OutputFile>,
}

impl PeriodLogWriter {
    /// Through [`iolens_output`]: the file appears complete at `finish`, symlinks and devices
    /// handled as for every result file.
    pub fn create(path: &std::path::Path) -> std::io::Result<PeriodLogWriter> {
        Ok(PeriodLogWriter { out: std::io::BufWriter::new(iolens_output::OutputFile::create(path)?) })
    }

    pub fn write(&mut self, periods: &[Interval]) -> std::io::Result<()> {
        use std::io::Write;
        for p in periods {
            self.out.write_all(&p.start.to_le_bytes())?;
            self.out.write_all(&p.end.to_le_bytes())?;
        }
        Ok(())
    }

    pub fn finish(self) -> std::io::Result<()> {
        self.out.into_inner().map_err(|e| e.into_error())?.commit()
    }
}

/// Reads a period log as a stream for [`merge_sorted_streams`].
pub fn read_period_log(path: &std::path::Path) -> std::io::Result<impl Iterator<Item = Interval>> {
    use std::io::Read;
    let mut input = std::io::BufReader::new(std::fs::File::open(path)?);
    Ok(std::iter::from_fn(move || {
        let mut b = [0u8; 16];
        input.read_exact(&mut b).ok()?;
        let start = u64::from_le_bytes(b[..8].try_into().unwrap());
        let end = u64::from_le_bytes(b[8..].try_into().unwrap());
        Some(Interval::new(start, end.max(start)))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The measure of a union by marking every nanosecond: slow, obviously right.
    fn brute_force(intervals: &[Interval]) -> (u64, u64) {
        let max = intervals.iter().map(|iv| iv.end).max().unwrap_or(0) as usize;
        let mut covered = vec![false; max + 1];
        for iv in intervals {
            for t in iv.start..iv.end {
                covered[t as usize] = true;
            }
        }
        let busy = covered.iter().filter(|c| **c).count() as u64;
        // Periods: maximal runs of closed intervals [start, end] that touch, ignoring empty ones;
        // doubled coordinates keep [0,1] and [2,3] apart while [0,1] and [1,2] touch.
        let mut closed = vec![false; 2 * max + 2];
        for iv in intervals.iter().filter(|iv| !iv.is_empty()) {
            for t in 2 * iv.start..=2 * iv.end {
                closed[t as usize] = true;
            }
        }
        let periods = closed.windows(2).filter(|w| !w[0] && w[1]).count() as u64
            + u64::from(closed.first() == Some(&true));
        (busy, periods)
    }

    #[test]
    fn paper_figure_2_example() {
        // R1..R3 overlap partially, R4 stands alone after an idle gap: T = Δt1 + Δt2.
        let mut ivs =
            vec![Interval::new(1, 4), Interval::new(2, 6), Interval::new(3, 5), Interval::new(7, 8)];
        let t = union_of(&mut ivs);
        assert_eq!(t.busy_ns, (6 - 1) + (8 - 7));
        assert_eq!(t.periods, 2);
        assert_eq!((t.first_start, t.last_end), (1, 8));
    }

    #[test]
    fn nested_and_touching_intervals() {
        let mut ivs = vec![Interval::new(0, 10), Interval::new(2, 3), Interval::new(10, 12)];
        let t = union_of(&mut ivs);
        assert_eq!(t.busy_ns, 12);
        assert_eq!(t.periods, 1, "touching intervals form one busy period");
    }

    #[test]
    fn tracker_sync_agent_emits_each_op() {
        let mut tr = InFlightTracker::new(u64::MAX);
        assert_eq!(tr.submit(10), None);
        assert_eq!(tr.complete(15), Some(Interval::new(10, 15)));
        assert_eq!(tr.submit(20), None);
        assert_eq!(tr.complete(22), Some(Interval::new(20, 22)));
    }

    #[test]
    fn tracker_splits_long_periods_without_changing_the_union() {
        let mut tr = InFlightTracker::new(100);
        let mut out = vec![];
        out.extend(tr.submit(0));
        out.extend(tr.submit(50));
        out.extend(tr.complete(120)); // open 120 >= 100: split
        out.extend(tr.submit(130));
        out.extend(tr.complete(300));
        out.extend(tr.complete(310));
        assert_eq!(out, vec![Interval::new(0, 120), Interval::new(120, 300), Interval::new(300, 310)]);
        assert_eq!(union_of(&mut out).busy_ns, 310);
    }

    /// Operations of several agents: per agent a list of (start, end) with up to `qd` in flight.
    fn agent_ops(max_agents: usize) -> impl Strategy<Value = Vec<Vec<(u64, u64)>>> {
        prop::collection::vec(
            prop::collection::vec((0u64..400, 0u64..40), 0..40).prop_map(|mut v| {
                v.sort();
                v.into_iter().map(|(s, d)| (s, s + d)).collect::<Vec<_>>()
            }),
            1..=max_agents,
        )
    }

    /// Replays one agent's ops as the agent observes them: events in time order, submissions
    /// before completions at equal times (so touching ops merge as in the sweep).
    fn replay(ops: &[(u64, u64)], split: u64) -> Vec<Interval> {
        let mut events: Vec<(u64, u8)> = vec![];
        for &(s, e) in ops {
            events.push((s, 0));
            events.push((e, 1));
        }
        events.sort();
        let mut tr = InFlightTracker::new(split);
        let mut out = vec![];
        for (t, kind) in events {
            let piece = if kind == 0 { tr.submit(t) } else { tr.complete(t) };
            out.extend(piece);
        }
        assert_eq!(tr.in_flight(), 0);
        out
    }

    proptest! {
        #[test]
        fn sweep_matches_brute_force(ivs in prop::collection::vec((0u64..300, 0u64..50), 0..60)) {
            let mut ivs: Vec<Interval> = ivs.into_iter().map(|(s, d)| Interval::new(s, s + d)).collect();
            let (busy, _) = brute_force(&ivs);
            prop_assert_eq!(union_of(&mut ivs).busy_ns, busy);
        }

        #[test]
        fn periods_match_brute_force(ivs in prop::collection::vec((0u64..300, 1u64..50), 0..60)) {
            let mut ivs: Vec<Interval> = ivs.into_iter().map(|(s, d)| Interval::new(s, s + d)).collect();
            let (_, periods) = brute_force(&ivs);
            prop_assert_eq!(union_of(&mut ivs).periods, periods);
        }

        #[test]
        fn agent_periods_are_sorted_disjoint_and_exact(agents in agent_ops(1), split in 1u64..200) {
            let ops = &agents[0];
            let periods = replay(ops, split);
            for w in periods.windows(2) {
                prop_assert!(w[0].end <= w[1].start);
            }
            let ivs: Vec<Interval> = ops.iter().map(|&(s, e)| Interval::new(s, e)).collect();
            prop_assert_eq!(periods.iter().map(|p| p.len()).sum::<u64>(), brute_force(&ivs).0);
        }

        /// Agents' period streams interleaved in a random order, with random settles and
        /// watermark advances, give the brute-force union over all agents' ops.
        #[test]
        fn streaming_union_across_agents(
            agents in agent_ops(6),
            split in 1u64..500,
            order in prop::collection::vec(0usize..6, 0..400),
            settle_every in 1usize..20,
        ) {
            let streams: Vec<Vec<Interval>> = agents.iter().map(|ops| replay(ops, split)).collect();
            let mut union = StreamingUnion::new(streams.len());
            let mut next = vec![0usize; streams.len()];
            let mut step = 0;
            let feed = |union: &mut StreamingUnion, a: usize, next: &mut Vec<usize>| {
                if next[a] < streams[a].len() {
                    union.push(a, streams[a][next[a]]);
                    next[a] += 1;
                    if next[a] == streams[a].len() {
                        union.close(a);
                    }
                }
            };
            for a in order {
                let a = a % streams.len();
                feed(&mut union, a, &mut next);
                step += 1;
                if step % settle_every == 0 {
                    union.settle();
                }
            }
            for a in 0..streams.len() {
                while next[a] < streams[a].len() {
                    feed(&mut union, a, &mut next);
                }
            }
            let all: Vec<Interval> = agents.iter().flatten().map(|&(s, e)| Interval::new(s, e)).collect();
            let (busy, _) = brute_force(&all);
            let settled = union.settled().busy_ns;
            prop_assert!(settled <= busy);
            prop_assert_eq!(union.finish().0.busy_ns, busy);
        }

        #[test]
        fn merged_streams_equal_union_of_all(agents in agent_ops(5)) {
            let streams: Vec<Vec<Interval>> = agents.iter().map(|ops| replay(ops, 1000)).collect();
            let all: Vec<Interval> = agents.iter().flatten().map(|&(s, e)| Interval::new(s, e)).collect();
            let merged = merge_sorted_streams(streams.into_iter().map(|s| s.into_iter()).collect());
            prop_assert_eq!(merged.busy_ns, brute_force(&all).0);
        }
    }

    #[test]
    fn settled_periods_are_final_and_pending_stays_small() {
        // Two agents doing back-to-back ops that overlap: pending stays bounded by compaction.
        let mut union = StreamingUnion::new(2);
        for i in 0..100_000u64 {
            union.push(0, Interval::new(i * 10, i * 10 + 9));
            union.push(1, Interval::new(i * 10 + 5, i * 10 + 12));
            if i % 1000 == 0 {
                union.settle();
            }
        }
        assert!(union.peak_pending() < 5000, "peak pending {}", union.peak_pending());
        let t = union.finish().0;
        assert_eq!(t.busy_ns, 100_000 * 10 + 2);
        assert_eq!(t.periods, 1);
    }

    /// Issue 25, item 8: each node's busy time is the union of its own ranks' periods, from the
    /// same pass that gives the job's union.
    #[test]
    fn each_group_of_streams_gets_its_own_union() {
        let streams = vec![
            vec![Interval::new(0, 10), Interval::new(50, 60)],
            vec![Interval::new(5, 20)],
            vec![Interval::new(15, 30)],
        ];
        let (all, groups) =
            merge_sorted_streams_grouped(streams.into_iter().map(Vec::into_iter).collect(), &[0, 0, 1]);
        assert_eq!((all.busy_ns, all.periods), (40, 2), "[0, 30) and [50, 60)");
        assert_eq!(groups.len(), 2);
        assert_eq!((groups[0].busy_ns, groups[0].periods), (30, 2), "[0, 20) and [50, 60)");
        assert_eq!((groups[1].busy_ns, groups[1].periods), (15, 1), "[15, 30)");
    }

    #[test]
    fn processes_merge_through_period_logs() {
        // Two "processes", each with two agents; each logs its own union's periods.
        let dir = tempfile::tempdir().unwrap();
        let procs: [Vec<Vec<(u64, u64)>>; 2] = [
            vec![vec![(0, 10), (20, 30)], vec![(5, 12), (40, 45)]],
            vec![vec![(11, 15), (29, 41)], vec![(100, 110)]],
        ];
        let mut logs = vec![];
        for (p, agents) in procs.iter().enumerate() {
            let mut union = StreamingUnion::new(agents.len()).keeping_periods();
            let mut periods = vec![];
            for (a, ops) in agents.iter().enumerate() {
                for &(s, e) in ops {
                    union.push(a, Interval::new(s, e));
                }
                union.settle();
                periods.extend(union.take_closed());
            }
            let (totals, rest) = union.finish();
            periods.extend(rest);
            assert_eq!(
                periods.iter().map(|p| p.len()).sum::<u64>(),
                totals.busy_ns,
                "log holds the whole union"
            );
            let path = dir.path().join(format!("rank{p}.busy"));
            let mut w = PeriodLogWriter::create(&path).unwrap();
            w.write(&periods).unwrap();
            w.finish().unwrap();
            logs.push(path);
        }
        let streams = logs.iter().map(|p| read_period_log(p).unwrap()).collect();
        let merged = merge_sorted_streams(streams);
        let mut all: Vec<Interval> =
            procs.iter().flatten().flatten().map(|&(s, e)| Interval::new(s, e)).collect();
        assert_eq!(merged.busy_ns, union_of(&mut all).busy_ns);
        assert_eq!(merged.busy_ns, 15 + 25 + 10);
    }

    #[test]
    fn empty_intervals_advance_the_watermark_only() {
        let mut union = StreamingUnion::new(2);
        union.push(0, Interval::new(0, 10));
        union.settle();
        assert_eq!(union.settled().busy_ns, 0, "source 1 may still start at 0");
        union.push(1, Interval::new(50, 50));
        union.settle();
        assert_eq!(union.settled().busy_ns, 10);
        assert_eq!(union.finish().0.busy_ns, 10);
    }
}
