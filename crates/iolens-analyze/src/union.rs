//! The busy-time union of intervals that arrive in any order, with bounded memory: a buffer that
//! is sorted and compacted when full, and spilled as a sorted run to a file when compaction does
//! not free enough; the runs are merged at the end.

use std::path::{Path, PathBuf};

use iolens_record::busy::{
    merge_sorted_streams, read_period_log, union_of, Interval, PeriodLogWriter, UnionTotals,
};

pub struct ExternalUnion {
    buffer: Vec<Interval>,
    capacity: usize,
    /// Where the private spill directory is made, on the first spill.
    spill_base: PathBuf,
    /// A random 0700 directory holding the sorted runs; removed with everything in it on drop,
    /// so no name in the shared base is ever guessed, followed or removed.
    spill_dir: Option<tempfile::TempDir>,
    runs: Vec<PathBuf>,
    /// Spill directories of merged unions whose runs are in `runs`.
    adopted_dirs: Vec<tempfile::TempDir>,
    /// Whether the buffer still holds every interval as given (nothing merged or spilled), so
    /// concurrency can be computed exactly.
    pristine: bool,
}

fn compact(v: &mut Vec<Interval>) {
    v.sort_unstable_by_key(|iv| iv.start);
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
            Some(dir) => dir.path(),
            None => self
                .spill_dir
                .insert(
                    tempfile::Builder::new()
                        .prefix("iolens-union.")
                        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                        .tempdir_in(&self.spill_base)?,
                )
                .path(),
        };
        let path = dir.join(format!("run-{}.busy", self.runs.len()));
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

    /// Peak number of overlapping intervals, when every interval is still held.
    pub fn peak_overlap(&self) -> Option<u64> {
        if !self.pristine {
            return None;
        }
        let mut edges: Vec<(u64, i8)> =
            self.buffer.iter().flat_map(|iv| [(iv.start, 1i8), (iv.end, -1i8)]).collect();
        // Ends before starts at the same instant: touching operations do not overlap.
        edges.sort_unstable();
        let (mut cur, mut peak) = (0i64, 0i64);
        for (_, d) in edges {
            cur += d as i64;
            peak = peak.max(cur);
        }
        Some(peak as u64)
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
