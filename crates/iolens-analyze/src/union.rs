//! The busy-time union of intervals that arrive in any order, with bounded memory: a buffer that
//! is sorted and compacted when full, and spilled as a sorted run to a file when compaction does
//! not free enough; the runs are merged at the end. Intervals known to arrive in start order
//! take a [`SweepUnion`] instead, which stores none of them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use iolens_record::busy::{
    merge_sorted_streams, read_period_log, union_of, Interval, PeriodLogWriter, UnionTotals,
};

/// A private directory the union spills sorted runs into, removed (with the runs) when dropped.
pub struct SpillDir {
    pub path: PathBuf,
    /// Whatever removes the directory on drop.
    pub guard: Box<dyn Send + Sync>,
}

/// Makes a spill directory under a base: set once by the program ([`set_spill_dir_maker`]) so
/// that the directory is recorded where a killed process's leftovers are found (iolens's
/// ownership registry); otherwise a plain temporary directory.
pub type SpillDirMaker = fn(&Path) -> std::io::Result<SpillDir>;

static SPILL_DIR_MAKER: std::sync::OnceLock<SpillDirMaker> = std::sync::OnceLock::new();

/// Sets how every union of this process makes its spill directory (the first call wins).
pub fn set_spill_dir_maker(maker: SpillDirMaker) {
    let _ = SPILL_DIR_MAKER.set(maker);
}

fn make_spill_dir(base: &Path) -> std::io::Result<SpillDir> {
    if let Some(maker) = SPILL_DIR_MAKER.get() {
        return maker(base);
    }
    let dir = tempfile::Builder::new()
        .prefix("iolens-union.")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(base)?;
    Ok(SpillDir { path: dir.path().to_path_buf(), guard: Box::new(dir) })
}

pub struct ExternalUnion {
    buffer: Vec<Interval>,
    capacity: usize,
    /// Where the private spill directory is made, on the first spill.
    spill_base: PathBuf,
    /// A random 0700 directory holding the sorted runs; removed with the runs on drop, so no
    /// name in the shared base is ever guessed, followed or removed.
    spill_dir: Option<SpillDir>,
    runs: Vec<PathBuf>,
    /// Spill directories of merged unions whose runs are in `runs`.
    adopted_dirs: Vec<SpillDir>,
    /// Whether the buffer still holds every interval as given (nothing merged or spilled), so
    /// concurrency can be computed exactly.
    pristine: bool,
}

/// The peak number of `intervals` (sorted by start, each ending at or after its start) in
/// flight at once, swept as [`SweepUnion`] sweeps calls arriving in start order.
fn peak_of_sorted(intervals: &[Interval]) -> u64 {
    let mut tracker = PeakTracker::new(usize::MAX);
    intervals.iter().for_each(|iv| tracker.sweep(*iv));
    tracker.peak
}

fn compact(v: &mut Vec<Interval>) {
    // Stable, for its run detection: what is compacted is a sorted prefix (the last compaction)
    // and calls appended since, which come in runs in start order (one file's or one thread's
    // calls), so the sort merges a few runs instead of sorting from scratch. The order of
    // equal starts does not change the union.
    v.sort_by_key(|iv| iv.start);
    let mut out = 0;
    for i in 0..v.len() {
        let iv = v[i];
        if out > 0 && iv.start <= v[out - 1].end {
            v[out - 1].end = v[out - 1].end.max(iv.end);
        } else {
            v[out] = iv;
            out += 1;
        }
    }
    v.truncate(out);
}

impl ExternalUnion {
    pub fn new(capacity: usize, spill_dir: &Path) -> ExternalUnion {
        ExternalUnion {
            buffer: Vec::new(),
            capacity: capacity.max(2),
            spill_base: spill_dir.to_path_buf(),
            spill_dir: None,
            runs: Vec::new(),
            adopted_dirs: Vec::new(),
            pristine: true,
        }
    }

    #[inline]
    pub fn push(&mut self, iv: Interval) -> std::io::Result<()> {
        // A call that starts as the previous one ends extends it: the union is the same and
        // no overlap is lost (touching calls do not overlap), and back-to-back calls of one
        // thread take no room. Once intervals are merged anyway, any overlap with the last one
        // extends it.
        if let Some(last) = self.buffer.last_mut() {
            if iv.start == last.end || (!self.pristine && iv.start >= last.start && iv.start <= last.end) {
                last.end = last.end.max(iv.end);
                return Ok(());
            }
        }
        self.buffer.push(iv);
        if self.buffer.len() >= self.capacity {
            self.pristine = false;
            compact(&mut self.buffer);
            if self.buffer.len() > self.capacity / 2 {
                self.spill()?;
            }
        }
        Ok(())
    }

    fn spill(&mut self) -> std::io::Result<()> {
        let dir = match &self.spill_dir {
            Some(dir) => &dir.path,
            None => &self.spill_dir.insert(make_spill_dir(&self.spill_base)?).path,
        };
        let path = dir.join(format!("iolens-run-{}.busy", self.runs.len()));
        let mut w = PeriodLogWriter::create(&path)?;
        w.write(&self.buffer)?;
        w.finish()?;
        self.runs.push(path);
        self.buffer.clear();
        Ok(())
    }

    /// Adds the intervals of a union of later calls (the busy time of both is their union).
    pub fn absorb(&mut self, mut later: ExternalUnion) -> std::io::Result<()> {
        self.pristine &= later.pristine;
        if !later.runs.is_empty() {
            // Its sorted runs stay where they are, in its directory, which this union keeps.
            compact(&mut later.buffer);
            later.spill()?;
            self.pristine = false;
            self.runs.append(&mut later.runs);
            self.adopted_dirs.extend(later.spill_dir.take());
            self.adopted_dirs.append(&mut later.adopted_dirs);
            return Ok(());
        }
        for iv in later.buffer.drain(..) {
            self.push(iv)?;
        }
        Ok(())
    }

    /// Peak number of overlapping intervals, when every interval is still held. Sorts the held
    /// intervals by start in place (as [`ExternalUnion::finish`] does anyway, so its sort then
    /// finds them sorted) and sweeps them with the ends of those in flight in a min-heap:
    /// memory for the peak, not for two edges per interval.
    pub fn peak_overlap(&mut self) -> Option<u64> {
        if !self.pristine {
            return None;
        }
        self.buffer.sort_by_key(|iv| iv.start);
        Some(peak_of_sorted(&self.buffer))
    }

    pub fn finish(mut self) -> std::io::Result<UnionTotals> {
        if self.runs.is_empty() {
            return Ok(union_of(&mut self.buffer));
        }
        compact(&mut self.buffer);
        self.spill()?;
        let streams = self.runs.iter().map(|p| read_period_log(p)).collect::<Result<Vec<_>, _>>()?;
        let totals = merge_sorted_streams(streams);
        Ok(totals)
    }
}

/// Disjoint intervals a [`CompactUnion`] holds in memory before it moves them to an
/// [`ExternalUnion`] spilling to the temporary directory (4 MiB; small in tests, to exercise it).
const COMPACT_CAP: usize = if cfg!(test) { 64 } else { 1 << 18 };

/// A union kept in memory, compacted as it doubles (per file, per process); past
/// [`COMPACT_CAP`] disjoint intervals it spills, so its memory stays bounded.
#[derive(Default)]
pub struct CompactUnion {
    intervals: Vec<Interval>,
    compacted: usize,
    overflow: Option<Box<ExternalUnion>>,
    /// The first failure to spill: reported by [`CompactUnion::busy_ns`].
    error: Option<std::io::Error>,
}

impl CompactUnion {
    #[inline]
    pub fn push(&mut self, iv: Interval) {
        // Calls arrive mostly in time order: one that starts inside or at the end of the last
        // interval extends it, and a run of back-to-back calls takes one slot.
        if let Some(last) = self.intervals.last_mut() {
            if iv.start >= last.start && iv.start <= last.end {
                last.end = last.end.max(iv.end);
                return;
            }
        }
        self.intervals.push(iv);
        if self.intervals.len() >= 2 * self.compacted.max(COMPACT_CAP.min(512)) {
            compact(&mut self.intervals);
            self.compacted = self.intervals.len();
            if self.compacted > COMPACT_CAP {
                self.move_to_overflow();
            }
        }
    }

    fn move_to_overflow(&mut self) {
        let overflow = self
            .overflow
            .get_or_insert_with(|| Box::new(ExternalUnion::new(COMPACT_CAP, &std::env::temp_dir())));
        for iv in self.intervals.drain(..) {
            if let Err(err) = overflow.push(iv) {
                self.error.get_or_insert(err);
            }
        }
        self.compacted = 0;
    }

    pub fn absorb(&mut self, mut later: CompactUnion) {
        self.intervals.append(&mut later.intervals);
        compact(&mut self.intervals);
        self.compacted = self.intervals.len();
        if let Some(err) = later.error {
            self.error.get_or_insert(err);
        }
        if let Some(theirs) = later.overflow {
            self.move_to_overflow();
            let mine = self.overflow.as_mut().expect("made by move_to_overflow");
            if let Err(err) = mine.absorb(*theirs) {
                self.error.get_or_insert(err);
            }
        } else if self.compacted > COMPACT_CAP {
            self.move_to_overflow();
        }
    }

    pub fn busy_ns(&mut self) -> std::io::Result<u64> {
        if let Some(err) = self.error.take() {
            return Err(err);
        }
        if self.overflow.is_some() {
            self.move_to_overflow();
            if let Some(err) = self.error.take() {
                return Err(err);
            }
            let overflow = self.overflow.take().expect("checked above");
            return Ok(overflow.finish()?.busy_ns);
        }
        compact(&mut self.intervals);
        Ok(self.intervals.iter().map(|iv| iv.len()).sum())
    }
}

/// The busy-time union of intervals that arrive in start order (one thread's calls, or a trace
/// sorted by time): a running period and the totals of the closed ones, nothing stored, so a
/// trace of any length costs a few words. An interval starting before the previous one breaks
/// the order: the union then cannot be exact, and [`SweepUnion::ordered`] says so, for the caller
/// to read the trace again with a [`ExternalUnion`] or [`CompactUnion`], which take any order.
#[derive(Debug, Default)]
pub struct SweepUnion {
    /// Lengths and number of the closed periods (disjoint, all before `current`).
    closed_ns: u64,
    closed_periods: u64,
    first_start: u64,
    /// The open period: its end is the latest end seen.
    current: Option<Interval>,
    last_start: u64,
    out_of_order: bool,
    /// Counted only for the aggregate union, which reports the peak in flight.
    peak: Option<PeakTracker>,
}

/// The peak in flight of intervals in start order, as [`ExternalUnion::peak_overlap`] gives it
/// for the same intervals while it holds them all: ends of the calls still in flight in a heap,
/// and how many intervals the stored union would hold (calls starting as the previous one ends
/// extend it), so the peak is reported exactly when the stored union would report it.
#[derive(Debug)]
struct PeakTracker {
    in_flight: BinaryHeap<Reverse<u64>>,
    /// The latest end in `in_flight`: when a call starts after it, none is in flight.
    latest_end: u64,
    peak: u64,
    /// The interval the stored union would hold last, and how many it would hold.
    held_last_end: Option<u64>,
    held: usize,
    capacity: usize,
}

impl PeakTracker {
    /// A tracker for a stored union bounded at `capacity` intervals (at least 2).
    fn new(capacity: usize) -> PeakTracker {
        PeakTracker {
            in_flight: BinaryHeap::new(),
            latest_end: 0,
            peak: 0,
            held_last_end: None,
            held: 0,
            capacity: capacity.max(2),
        }
    }

    /// Counts what the stored union would hold, in arrival order; whether the peak is still known.
    #[inline]
    fn arrive(&mut self, iv: Interval) -> bool {
        match self.held_last_end {
            Some(end) if iv.start == end => self.held_last_end = Some(end.max(iv.end)),
            _ => {
                self.held_last_end = Some(iv.end);
                self.held = self.held.saturating_add(1);
            }
        }
        self.known()
    }

    /// Counts the calls in flight as `iv` starts; intervals come in start order.
    #[inline]
    fn sweep(&mut self, iv: Interval) {
        if iv.is_empty() {
            // Its end comes before its start at the same instant: never in flight.
            return;
        }
        // Ends before starts at the same instant: touching calls do not overlap.
        if self.latest_end <= iv.start {
            self.in_flight.clear();
        } else {
            while self.in_flight.peek().is_some_and(|Reverse(end)| *end <= iv.start) {
                self.in_flight.pop();
            }
        }
        self.in_flight.push(Reverse(iv.end));
        self.latest_end = self.latest_end.max(iv.end);
        self.peak = self.peak.max(self.in_flight.len() as u64);
    }

    fn known(&self) -> bool {
        self.held < self.capacity
    }
}

impl SweepUnion {
    /// A union that also counts the peak in flight while fewer than `capacity` intervals would
    /// be held (the bound of the [`ExternalUnion`] it stands for).
    pub fn with_peak(capacity: usize) -> SweepUnion {
        SweepUnion { peak: Some(PeakTracker::new(capacity)), ..SweepUnion::default() }
    }

    #[inline(always)]
    pub fn push(&mut self, iv: Interval) {
        self.arrive(iv);
        self.sweep(iv);
    }

    /// Counts `iv`'s arrival for the peak, for a caller that sweeps it later, put in start order
    /// ([`SweepUnion::sweep`]): the peak is known only while the stored union, which
    /// takes intervals as they arrive, would not merge any.
    #[inline(always)]
    pub fn arrive(&mut self, iv: Interval) {
        if let Some(peak) = &mut self.peak {
            if !peak.arrive(iv) {
                // The stored union would have merged intervals: it has no peak, and neither
                // has this one, whatever comes later.
                self.peak = None;
            }
        }
    }

    /// [`SweepUnion::push`] for a union made without a peak count.
    #[inline(always)]
    pub fn push_plain(&mut self, iv: Interval) {
        debug_assert!(self.peak.is_none());
        self.sweep(iv);
    }

    /// Sweeps `iv` (its arrival counted by [`SweepUnion::arrive`] when the union has a peak).
    #[inline(always)]
    pub fn sweep(&mut self, iv: Interval) {
        match &mut self.current {
            Some(cur) => {
                if iv.start < self.last_start {
                    self.out_of_order = true;
                    return;
                }
                if iv.start <= cur.end {
                    cur.end = cur.end.max(iv.end);
                } else {
                    self.closed_ns += cur.len();
                    self.closed_periods += 1;
                    *cur = iv;
                }
            }
            None => {
                self.first_start = iv.start;
                self.current = Some(iv);
            }
        }
        self.last_start = iv.start;
        if let Some(peak) = &mut self.peak {
            peak.sweep(iv);
        }
    }

    /// Whether every interval came in start order, so the totals are exact.
    pub fn ordered(&self) -> bool {
        !self.out_of_order
    }

    /// The end of the open period (None before the first interval): a later interval starting
    /// after it cannot join any period swept so far.
    pub fn open_end(&self) -> Option<u64> {
        self.current.map(|c| c.end)
    }

    /// Whether no interval has been swept (one out of order is only ever met after one was).
    pub fn is_empty(&self) -> bool {
        self.current.is_none()
    }

    /// A copy of a union without a peak count (one with it is not copied cheaply, and has no
    /// need to be).
    pub fn copy_plain(&self) -> SweepUnion {
        debug_assert!(self.peak.is_none());
        SweepUnion { peak: None, ..*self }
    }

    /// Adds a union of later intervals. Exact when the later ones start after every interval of
    /// this one has ended (touching is fine); otherwise the result is marked out of order.
    pub fn absorb(&mut self, later: SweepUnion) {
        self.out_of_order |= later.out_of_order;
        let Some(theirs) = later.current else { return };
        let Some(mine) = self.current else {
            let out_of_order = self.out_of_order;
            *self = later;
            self.out_of_order |= out_of_order;
            return;
        };
        if later.first_start < mine.end {
            self.out_of_order = true;
            return;
        }
        self.closed_ns += mine.len() + later.closed_ns;
        self.closed_periods += 1 + later.closed_periods;
        if later.first_start == mine.end {
            // The last period of this union and the first of the later one are one period.
            self.closed_periods -= 1;
        }
        self.current = Some(theirs);
        self.last_start = later.last_start;
        if later.peak.is_none() {
            self.peak = None;
        }
        if let (Some(mine), Some(theirs)) = (&mut self.peak, later.peak) {
            let touching = mine.held_last_end == Some(later.first_start);
            mine.held = mine.held.saturating_add(theirs.held).saturating_sub(touching as usize);
            mine.held_last_end = match (touching, theirs.held) {
                (true, 1) => mine.held_last_end.max(theirs.held_last_end),
                _ => theirs.held_last_end,
            };
            mine.peak = mine.peak.max(theirs.peak);
            mine.in_flight = theirs.in_flight;
            mine.latest_end = theirs.latest_end;
            if !mine.known() {
                self.peak = None;
            }
        }
    }

    pub fn totals(&mut self) -> UnionTotals {
        match self.current {
            Some(cur) => UnionTotals {
                busy_ns: self.closed_ns + cur.len(),
                periods: self.closed_periods + 1,
                first_start: self.first_start,
                last_end: cur.end,
            },
            None => UnionTotals::default(),
        }
    }

    /// The peak in flight, when the stored union would know it (see [`PeakTracker`]).
    pub fn peak_overlap(&mut self) -> Option<u64> {
        self.peak.as_ref().filter(|p| p.known()).map(|p| p.peak)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn spilling_union_equals_in_memory_union(
            ivs in prop::collection::vec((0u64..10_000, 0u64..300), 0..400),
            capacity in 2usize..40,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let intervals: Vec<Interval> = ivs.iter().map(|&(s, d)| Interval::new(s, s + d)).collect();
            let mut ext = ExternalUnion::new(capacity, dir.path());
            let mut small = CompactUnion::default();
            for iv in &intervals {
                ext.push(*iv).unwrap();
                small.push(*iv);
            }
            let mut reference = intervals.clone();
            let expected = union_of(&mut reference);
            prop_assert_eq!(ext.finish().unwrap(), expected);
            prop_assert_eq!(small.busy_ns().unwrap(), expected.busy_ns);
            prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "runs are removed");
        }
    }

    /// Intervals in start order: random gaps (zero gives touching and equal starts) and lengths.
    fn ordered(steps: &[(u64, u64)]) -> Vec<Interval> {
        let mut t = 0;
        steps
            .iter()
            .map(|&(gap, len)| {
                t += gap;
                Interval::new(t, t + len)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn the_sweep_of_ordered_intervals_equals_the_stored_union(
            steps in prop::collection::vec((0u64..60, 0u64..200), 0..400),
            capacity in 2usize..500,
            cut in 0usize..400,
        ) {
            let intervals = ordered(&steps);
            let dir = tempfile::tempdir().unwrap();
            let mut stored = ExternalUnion::new(capacity, dir.path());
            let mut swept = SweepUnion::with_peak(capacity);
            for iv in &intervals {
                stored.push(*iv).unwrap();
                swept.push(*iv);
            }
            prop_assert!(swept.ordered());
            prop_assert_eq!(swept.peak_overlap(), stored.peak_overlap());
            let expected = stored.finish().unwrap();
            prop_assert_eq!(swept.totals(), expected);

            // The same intervals cut in two (as by a chunk edge) and merged: exact when the
            // later part starts after the earlier one has ended, and said to be unknown if not.
            let cut = cut.min(intervals.len());
            let (mut earlier, mut later) = (SweepUnion::with_peak(capacity), SweepUnion::with_peak(capacity));
            intervals[..cut].iter().for_each(|iv| earlier.push(*iv));
            intervals[cut..].iter().for_each(|iv| later.push(*iv));
            let spans_the_cut = cut > 0
                && cut < intervals.len()
                && intervals[cut].start < intervals[..cut].iter().map(|iv| iv.end).max().unwrap();
            earlier.absorb(later);
            prop_assert_eq!(earlier.ordered(), !spans_the_cut);
            if !spans_the_cut {
                prop_assert_eq!(earlier.totals(), expected);
                let dir = tempfile::tempdir().unwrap();
                let mut stored = ExternalUnion::new(capacity, dir.path());
                intervals.iter().for_each(|iv| stored.push(*iv).unwrap());
                prop_assert_eq!(earlier.peak_overlap(), stored.peak_overlap());
            }
        }

        #[test]
        fn interleaved_blocks_of_ordered_streams_sweep_exactly_or_say_they_could_not(
            streams in prop::collection::vec(prop::collection::vec((0u64..60, 0u64..200), 0..150), 1..5),
            block in 1usize..40,
            window in 1usize..300,
            capacity in 2usize..700,
        ) {
            // Each stream's intervals in order, written block by block, streams in turn.
            let streams: Vec<Vec<Interval>> = streams.iter().map(|s| ordered(s)).collect();
            let mut arrival = Vec::new();
            for round in 0.. {
                let before = arrival.len();
                for s in &streams {
                    arrival.extend(s.iter().skip(round * block).take(block));
                }
                if arrival.len() == before {
                    break;
                }
            }
            let dir = tempfile::tempdir().unwrap();
            let mut stored = ExternalUnion::new(capacity, dir.path());
            // As the analyzer does: arrivals counted as they come, swept as the stage releases.
            let mut swept = SweepUnion::with_peak(capacity);
            let mut stage = crate::reorder::StartOrder::new(window);
            let mut released = Vec::new();
            let mut ordered = true;
            for iv in &arrival {
                stored.push(*iv).unwrap();
                swept.arrive(*iv);
                ordered &= stage.push(*iv);
                if stage.full() {
                    stage.release(stage.window(), &mut released);
                }
            }
            stage.release(usize::MAX, &mut released);
            released.iter().for_each(|iv| swept.sweep(*iv));
            prop_assert_eq!(ordered, stage.ordered());
            let peak = stored.peak_overlap();
            let expected = stored.finish().unwrap();
            // A window holding every interval always sweeps. A smaller one may not: a stream
            // lagging behind the others in time can fall below what was already swept (one
            // stream of 21 calls at t=0 beside one at t=1, blocks of 1, window 2). The sweep
            // then says so instead of guessing, and the reader falls back to the stored union.
            if window >= arrival.len() {
                prop_assert!(stage.ordered());
            }
            prop_assert!(swept.ordered(), "a stage releases in start order");
            if stage.ordered() {
                prop_assert_eq!(swept.peak_overlap(), peak);
                prop_assert_eq!(swept.totals(), expected);
            }
        }

        #[test]
        fn intervals_out_of_start_order_are_never_summed_as_if_ordered(
            steps in prop::collection::vec((0u64..60, 0u64..200), 2..200),
            swap in 0usize..200,
        ) {
            let mut intervals = ordered(&steps);
            let i = swap % (intervals.len() - 1);
            prop_assume!(intervals[i].start < intervals[i + 1].start);
            intervals.swap(i, i + 1);
            let mut swept = SweepUnion::default();
            intervals.iter().for_each(|iv| swept.push(*iv));
            prop_assert!(!swept.ordered(), "a later call starting earlier is seen");
        }
    }

    #[test]
    fn spilled_runs_live_in_a_private_directory_and_planted_names_are_untouched() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // The names an earlier version used: pid and a counter, guessable by anyone.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        for n in 0..4 {
            let planted = dir.path().join(format!("iolens-union-{}-{n}.busy", std::process::id()));
            std::os::unix::fs::symlink(&victim, planted).unwrap();
        }
        let before = std::fs::read_dir(dir.path()).unwrap().count();
        let mut ext = ExternalUnion::new(4, dir.path());
        for i in 0..40u64 {
            ext.push(Interval::new(i * 10, i * 10 + 5)).unwrap();
        }
        let private: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().starts_with("iolens-union."))
            .collect();
        assert_eq!(private.len(), 1, "one private spill directory");
        let meta = std::fs::symlink_metadata(private[0].path()).unwrap();
        assert!(meta.is_dir() && meta.permissions().mode() & 0o777 == 0o700);
        assert_eq!(ext.finish().unwrap().busy_ns, 40 * 5);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), before, "the spill directory is removed");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        for n in 0..4 {
            let planted = dir.path().join(format!("iolens-union-{}-{n}.busy", std::process::id()));
            assert!(std::fs::symlink_metadata(planted).unwrap().file_type().is_symlink());
        }
    }

    /// The peak as the edges of the intervals give it: every start and end sorted, ends first
    /// at the same instant.
    fn peak_by_edges(intervals: &[Interval]) -> u64 {
        let mut edges: Vec<(u64, i8)> =
            intervals.iter().flat_map(|iv| [(iv.start, 1i8), (iv.end, -1i8)]).collect();
        edges.sort_unstable();
        let (mut cur, mut peak) = (0i64, 0i64);
        for (_, d) in edges {
            cur += d as i64;
            peak = peak.max(cur);
        }
        peak as u64
    }

    proptest! {
        #[test]
        fn the_heap_sweep_peak_equals_the_edge_count(
            ivs in prop::collection::vec((0u64..300, 0u64..40), 0..300),
        ) {
            let intervals: Vec<Interval> = ivs.iter().map(|&(s, d)| Interval::new(s, s + d)).collect();
            let dir = tempfile::tempdir().unwrap();
            let mut u = ExternalUnion::new(1 << 20, dir.path());
            // Pushed in any order, as stored; touching ones merged on arrival by push, as before.
            let mut stored: Vec<Interval> = Vec::new();
            for iv in &intervals {
                u.push(*iv).unwrap();
                match stored.last_mut() {
                    Some(last) if iv.start == last.end => {
                        *last = Interval::new(last.start, last.end.max(iv.end));
                    }
                    _ => stored.push(*iv),
                }
            }
            prop_assert_eq!(u.peak_overlap(), Some(peak_by_edges(&stored)));
            let mut reference = intervals.clone();
            prop_assert_eq!(u.finish().unwrap(), union_of(&mut reference));
        }
    }

    #[test]
    fn peak_overlap() {
        let dir = tempfile::tempdir().unwrap();
        let mut u = ExternalUnion::new(100, dir.path());
        for (s, e) in [(0, 10), (5, 15), (8, 9), (10, 20), (30, 40)] {
            u.push(Interval::new(s, e)).unwrap();
        }
        assert_eq!(u.peak_overlap(), Some(3), "at 8..9 three are in flight; 10 touches, not overlaps");
    }
}
