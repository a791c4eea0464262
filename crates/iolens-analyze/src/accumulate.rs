//! What the analyzer accumulates per call: per class of calls (the aggregate), per file, per
//! process, the run of calls in progress, the reorder window's staged calls and the slowest
//! operations. Only [`Analyzer`](crate::Analyzer) updates them; `finish` turns them into rows.

use std::collections::{HashMap, HashSet};

use iolens_metrics::AgentRaw;
use iolens_record::busy::Interval;
use iolens_record::event::{IoEvent, Layer};

use crate::reorder::{StartOrder, Starts};
use crate::timeline;
use crate::union::{CompactUnion, ExternalUnion, SweepUnion};
use crate::AnalyzeOptions;

/// Which calls the aggregate counts (see the crate docs), in the order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    MpiIo = 0,
    Application = 1,
    Block = 2,
}

impl Class {
    /// Every class, in the order of preference (and of their numbers).
    pub(crate) const ALL: [Class; 3] = [Class::MpiIo, Class::Application, Class::Block];
}

pub(crate) const CLASSES: usize = Class::ALL.len();

/// One accumulator per class, indexed by class: a call finds its own without a lookup.
#[derive(Default)]
pub(crate) struct ClassTable(pub(crate) [Option<Box<ClassAcc>>; CLASSES]);

impl ClassTable {
    #[inline]
    pub(crate) fn get_or_insert_with(
        &mut self,
        class: Class,
        make: impl FnOnce() -> ClassAcc,
    ) -> &mut ClassAcc {
        self.0[class as usize].get_or_insert_with(|| Box::new(make()))
    }

    pub(crate) fn contains(&self, class: Class) -> bool {
        self.0[class as usize].is_some()
    }

    pub(crate) fn get_mut(&mut self, class: Class) -> Option<&mut ClassAcc> {
        self.0[class as usize].as_deref_mut()
    }

    pub(crate) fn insert(&mut self, class: Class, acc: ClassAcc) {
        self.0[class as usize] = Some(Box::new(acc));
    }

    pub(crate) fn remove(&mut self, class: Class) -> Option<ClassAcc> {
        self.0[class as usize].take().map(|b| *b)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &ClassAcc> {
        self.0.iter().flatten().map(|b| &**b)
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut ClassAcc> {
        self.0.iter_mut().flatten().map(|b| &mut **b)
    }

    pub(crate) fn into_entries(self) -> impl Iterator<Item = (Class, ClassAcc)> {
        Class::ALL.into_iter().zip(self.0).filter_map(|(class, acc)| acc.map(|a| (class, *a)))
    }
}

pub(crate) fn class_of(layer: Layer) -> Class {
    match layer {
        Layer::MpiIo => Class::MpiIo,
        Layer::Posix | Layer::Stdio => Class::Application,
        Layer::Block => Class::Block,
    }
}

pub(crate) const SIZE_BUCKETS: usize = 64;

/// Latencies below this many nanoseconds are counted by exact value before they reach the
/// HDR histograms (see [`ShortLatencies`]).
pub(crate) const SHORT_LATENCY_NS: usize = 4096;

/// Exact counts of short latencies, by value and direction: one increment per call instead of
/// two histogram records (all and per direction), moved into the histograms in bulk. The
/// histograms hold the same values either way, so every percentile is the same.
pub(crate) struct ShortLatencies(pub(crate) Box<[[u64; 2]; SHORT_LATENCY_NS]>);

impl ShortLatencies {
    pub(crate) fn new() -> ShortLatencies {
        ShortLatencies(vec![[0; 2]; SHORT_LATENCY_NS].into_boxed_slice().try_into().expect("sized above"))
    }

    #[inline]
    pub(crate) fn record(&mut self, raw: &mut AgentRaw, write: bool, ns: u64) {
        match self.0.get_mut(ns as usize) {
            Some(counts) => counts[write as usize] += 1,
            None => raw.record_latency(write, ns),
        }
    }

    /// Moves the counts into `raw`'s histograms (as many `record_latency` calls would).
    pub(crate) fn flush_into(&mut self, raw: &mut AgentRaw) {
        for (ns, counts) in self.0.iter_mut().enumerate() {
            for (direction, count) in counts.iter_mut().enumerate() {
                let n = std::mem::take(count);
                if n == 0 {
                    continue;
                }
                let ns = ns as u64;
                raw.latency.record_n(ns, n);
                if let Some(d) = &mut raw.by_direction {
                    let (hist, sum) = if direction == 1 {
                        (&mut d.write, &mut d.write_sum_ns)
                    } else {
                        (&mut d.read, &mut d.read_sum_ns)
                    };
                    hist.record_n(ns, n);
                    *sum = sum.saturating_add(ns.saturating_mul(n));
                }
            }
        }
    }
}

/// The aggregate of one class of calls.
pub(crate) struct ClassAcc {
    pub(crate) raw: AgentRaw,
    /// Latencies not yet in `raw`'s histograms.
    pub(crate) short_latencies: ShortLatencies,
    pub(crate) union: ExternalUnion,
    /// The union when the calls come in order ([`AnalyzeOptions::in_order`]).
    pub(crate) sweep: SweepUnion,
    /// With a reorder window, the calls waiting to be put in start order for `sweep` and the
    /// layer's, file's and process's sweeps.
    pub(crate) staged: StartOrder<Staged>,
    pub(crate) sizes: [[u64; 2]; SIZE_BUCKETS],
    pub(crate) seq_known: u64,
    pub(crate) seq_hits: u64,
    pub(crate) seq: SeqTracker,
    pub(crate) duration_sum_ns: u128,
    pub(crate) max_extent: u64,
}

impl ClassAcc {
    #[cold]
    #[inline(never)]
    pub(crate) fn new(opts: &AnalyzeOptions) -> ClassAcc {
        ClassAcc {
            raw: AgentRaw::default(),
            union: ExternalUnion::new(
                opts.union_buffer,
                opts.spill_dir.as_deref().unwrap_or(&std::env::temp_dir()),
            ),
            sweep: SweepUnion::with_peak(opts.union_buffer),
            staged: StartOrder::new(opts.reorder_window),
            short_latencies: ShortLatencies::new(),
            sizes: [[0; 2]; SIZE_BUCKETS],
            seq_known: 0,
            seq_hits: 0,
            seq: SeqTracker::default(),
            duration_sum_ns: 0,
            max_extent: 0,
        }
    }
}

/// Where each (pid, file)'s last data operation with a known offset ended, to tell sequential
/// operations. The latest key is held outside the map: runs of calls on one file hash nothing.
#[derive(Default)]
pub(crate) struct SeqTracker {
    pub(crate) ends: HashMap<(u32, u32), u64>,
    pub(crate) current: Option<((u32, u32), u64)>,
    /// The first offset of each key, for a merge to judge the first call of a later chunk.
    pub(crate) first: HashMap<(u32, u32), u64>,
}

impl SeqTracker {
    /// Records a call at `offset` ending at `end`; whether it starts where the last one ended.
    #[inline]
    pub(crate) fn follows(&mut self, key: (u32, u32), offset: u64, end: u64) -> bool {
        let previous = match self.current {
            Some((k, last)) if k == key => Some(last),
            _ => {
                self.flush();
                let previous = self.ends.get(&key).copied();
                if previous.is_none() {
                    self.first.insert(key, offset);
                }
                previous
            }
        };
        self.current = Some((key, end));
        previous == Some(offset)
    }

    pub(crate) fn flush(&mut self) {
        if let Some((k, end)) = self.current.take() {
            self.ends.insert(k, end);
        }
    }

    /// Adds the calls after this tracker's; a later first call that follows on counts in `hits`.
    pub(crate) fn absorb(&mut self, mut later: SeqTracker, hits: &mut u64) {
        self.flush();
        later.flush();
        for (key, offset) in later.first {
            match self.ends.get(&key) {
                Some(&end) => *hits = hits.saturating_add((end == offset) as u64),
                None => {
                    self.first.insert(key, offset);
                }
            }
        }
        self.ends.extend(later.ends);
    }
}

#[derive(Default)]
pub(crate) struct FileAcc {
    pub(crate) ops: u64,
    pub(crate) read_bytes: u64,
    pub(crate) write_bytes: u64,
    pub(crate) latency_sum_ns: u64,
    pub(crate) union: CompactUnion,
    pub(crate) sweep: SweepUnion,
}

/// Ids below this index a dense table; importers number paths from 0.
pub(crate) const DENSE_FILE_IDS: usize = 1 << 20;
pub(crate) const LAYERS: usize = Layer::ALL.len();

/// Per-file accumulators by (file id, layer), dense by id: one index per call, no hashing.
#[derive(Default)]
pub(crate) struct FileTable {
    /// Per id and layer, the accumulator's index in `accs` (u32::MAX: none yet).
    pub(crate) dense: Vec<[u32; LAYERS]>,
    pub(crate) sparse: HashMap<(u32, Layer), usize>,
    pub(crate) accs: Vec<((u32, Layer), FileAcc)>,
}

impl FileTable {
    #[inline]
    pub(crate) fn get_or_default(&mut self, key: (u32, Layer)) -> &mut FileAcc {
        let (id, layer) = (key.0 as usize, key.1 as usize);
        let index = if id < DENSE_FILE_IDS {
            if id >= self.dense.len() {
                self.dense.resize(id + 1, [u32::MAX; LAYERS]);
            }
            let slot = &mut self.dense[id][layer];
            if *slot == u32::MAX {
                *slot = self.accs.len() as u32;
                self.accs.push((key, FileAcc::default()));
            }
            *slot as usize
        } else {
            let next = self.accs.len();
            let index = *self.sparse.entry(key).or_insert(next);
            if index == next {
                self.accs.push((key, FileAcc::default()));
            }
            index
        };
        &mut self.accs[index].1
    }

    pub(crate) fn into_entries(self) -> impl Iterator<Item = ((u32, Layer), FileAcc)> {
        self.accs.into_iter()
    }
}

#[derive(Default)]
pub(crate) struct ProcAcc {
    pub(crate) ops: u64,
    pub(crate) bytes: u64,
    pub(crate) threads: HashSet<u32>,
    /// The thread of the last call, already in `threads`.
    pub(crate) last_tid: Option<u32>,
    pub(crate) union: CompactUnion,
    pub(crate) timeline: timeline::BusyTimeline,
    pub(crate) sweep: SweepUnion,
}

/// A process, a file and a layer: the calls that go to the same three sweeps.
pub(crate) type RunKey = (u32, u32, Layer);

/// A call waiting in a reorder window, with what its sweeps are found by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Staged {
    pub(crate) iv: Interval,
    pub(crate) key: RunKey,
}

impl Starts for Staged {
    #[inline(always)]
    fn start(&self) -> u64 {
        self.iv.start
    }
}

/// Calls released from a reorder window at a time: the buffer they pass through stays small.
pub(crate) const RELEASE_BATCH: usize = 1024;

/// The calls of one process on one file in one layer in a row, counted once for the layer's,
/// the file's and the process's rows and added to theirs when the run ends, instead of three
/// times per call. Their busy time too, when they come in start order without a reorder window:
/// swept once, then added to the three sweeps. Adding is exact only for calls that start after
/// every period the three have open (`horizon`): until one does, calls go to the three directly.
/// Short runs (calls of several files interleaved) never get that far and cost no more than
/// direct sweeps.
#[derive(Default)]
pub(crate) struct KeyRun {
    pub(crate) key: Option<RunKey>,
    pub(crate) totals: RunTotals,
    /// Calls of the run swept directly so far.
    pub(crate) direct: u32,
    /// At least the latest open period's end among the three sweeps, once `direct` reaches
    /// [`KeyRun::DIRECT_CALLS`] (before that, only the run's own calls' ends).
    pub(crate) horizon: u64,
    /// The calls after `horizon`.
    pub(crate) sweep: SweepUnion,
}

/// Data operations of a [`KeyRun`].
#[derive(Default, Clone, Copy)]
pub(crate) struct RunTotals {
    /// Not saturating: it cannot exceed the number of events.
    pub(crate) ops: u64,
    pub(crate) read_bytes: u64,
    pub(crate) write_bytes: u64,
    pub(crate) latency_sum_ns: u64,
}

impl KeyRun {
    /// Calls swept directly before the run looks up where the three sweeps' periods end.
    pub(crate) const DIRECT_CALLS: u32 = 4;
}

/// An operation ranked by duration (ties by arrival) for the slowest-operations table.
pub(crate) struct Slow(pub(crate) u64, pub(crate) u64, pub(crate) IoEvent);

impl PartialEq for Slow {
    fn eq(&self, o: &Slow) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Slow {}
impl PartialOrd for Slow {
    fn partial_cmp(&self, o: &Slow) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Slow {
    fn cmp(&self, o: &Slow) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(o.0, o.1))
    }
}
