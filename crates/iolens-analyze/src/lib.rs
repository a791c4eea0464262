//! The summary of traced I/O — from `iolens trace` or an imported strace, blkparse or Darshan
//! DXT trace — with the same figures as `iolens run` (the aggregate is an
//! [`iolens_metrics::Figures`], computed by the same code), plus what a trace tells beyond a
//! synthetic run: the request-size histogram, sequentiality, per-file and per-process tables,
//! the slowest operations, and the load profile as a job file ([`emit_workload`]).
//!
//! Events stream through [`Analyzer::event`]; memory stays bounded by the number of files and
//! processes, not of events (the busy-time union spills sorted runs to disk when large; with
//! [`AnalyzeOptions::in_order`] it is swept as the calls arrive and stores nothing).
//!
//! Definitions: data operations are reads, writes and in-kernel copies; their `bytes` are what
//! the application requested. Busy time is the union of data and sync (fsync, fdatasync,
//! sync_file_range) calls over all processes and threads; open, close, seek and flush are not
//! in it. Layers are kept apart: when MPI-IO events are present the aggregate counts MPI-IO
//! calls (the POSIX calls beneath them would count the same bytes twice); otherwise POSIX and
//! stdio calls (distinct calls: glibc's stdio does not go through the exported read/write); a
//! block-level trace stands alone. CPU is not measured from traces (zeros).
//!
//! Per-operation exports (`--csv`, `--parquet`): one row per call, columns documented in
//! [`export`].

pub mod export;
mod filter;
mod merge;
mod render;
mod reorder;
pub mod timeline;
pub mod trace_summary;
mod union;
mod workload;

pub use union::{set_spill_dir_maker, SpillDir, SpillDirMaker};

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_metrics::{AgentRaw, Figures};
use iolens_record::busy::Interval;
use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_COPY_SOURCE, NO_FILE, UNKNOWN_OFFSET};
use reorder::{StartOrder, Starts};
use serde::Serialize;

pub use filter::{FilterError, FilterReport, PathFilter};
pub use render::render_summary;
pub use workload::emit_workload;

use union::{CompactUnion, ExternalUnion, SweepUnion};

/// How to summarize.
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    pub block_unit: u64,
    /// Rows in the per-file table; 0 skips per-file state altogether (a trace of many files
    /// costs far less without it).
    pub top_files: usize,
    /// Rows in the per-process table.
    pub top_processes: usize,
    /// Operations in the slowest-operations list.
    pub slowest: usize,
    /// The traced program's wall time, when known (otherwise first start to last end).
    pub program_wall_ns: Option<u64>,
    /// Where the union spills sorted runs (default: the system temp directory).
    pub spill_dir: Option<PathBuf>,
    pub per_op_csv: Option<PathBuf>,
    pub per_op_parquet: Option<PathBuf>,
    /// Intervals held in memory before the union compacts or spills.
    pub union_buffer: usize,
    /// Set (by a Ctrl-C handler) to end the analysis early with the summary so far; importers
    /// poll it through [`Analyzer::stop_requested`].
    pub stop: Option<Arc<AtomicBool>>,
    /// `--include`/`--exclude`: calls on the files it rejects are left out of every figure,
    /// table and export (counted in [`TraceSummary::filters`]). Calls naming no file are kept.
    pub filter: PathFilter,
    /// The calls come in start order (a run trace of one stream, one thread's calls): busy
    /// time is swept as they arrive, nothing stored. When they turn out not to be,
    /// [`Analyzer::in_order`] says so and [`Analyzer::finish`] fails with
    /// [`AnalyzeError::OutOfOrder`]: read the trace again without this.
    pub in_order: bool,
    /// With `in_order`: calls may arrive up to about this many out of start order (the
    /// interleaved blocks of several agents' records); each union then holds at most twice
    /// this many intervals. 0: none.
    pub reorder_window: usize,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            block_unit: 512,
            top_files: 10,
            top_processes: 10,
            slowest: 10,
            program_wall_ns: None,
            spill_dir: None,
            per_op_csv: None,
            per_op_parquet: None,
            union_buffer: 4 << 20,
            stop: None,
            filter: PathFilter::default(),
            in_order: false,
            reorder_window: 0,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("cannot write {path}: {source}")]
    Output { path: PathBuf, source: std::io::Error },
    #[error("busy-time union: {0}")]
    Spill(std::io::Error),
    #[error("the calls are not in start order: analyze the trace without `in_order`")]
    OutOfOrder,
}

/// Which calls the aggregate counts (see the crate docs), in the order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    MpiIo = 0,
    Application = 1,
    Block = 2,
}

impl Class {
    /// Every class, in the order of preference (and of their numbers).
    const ALL: [Class; 3] = [Class::MpiIo, Class::Application, Class::Block];
}

const CLASSES: usize = Class::ALL.len();

/// One accumulator per class, indexed by class: a call finds its own without a lookup.
#[derive(Default)]
struct ClassTable([Option<Box<ClassAcc>>; CLASSES]);

impl ClassTable {
    #[inline]
    fn get_or_insert_with(&mut self, class: Class, make: impl FnOnce() -> ClassAcc) -> &mut ClassAcc {
        self.0[class as usize].get_or_insert_with(|| Box::new(make()))
    }

    fn contains(&self, class: Class) -> bool {
        self.0[class as usize].is_some()
    }

    fn get_mut(&mut self, class: Class) -> Option<&mut ClassAcc> {
        self.0[class as usize].as_deref_mut()
    }

    fn insert(&mut self, class: Class, acc: ClassAcc) {
        self.0[class as usize] = Some(Box::new(acc));
    }

    fn remove(&mut self, class: Class) -> Option<ClassAcc> {
        self.0[class as usize].take().map(|b| *b)
    }

    fn values(&self) -> impl Iterator<Item = &ClassAcc> {
        self.0.iter().flatten().map(|b| &**b)
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut ClassAcc> {
        self.0.iter_mut().flatten().map(|b| &mut **b)
    }

    fn into_entries(self) -> impl Iterator<Item = (Class, ClassAcc)> {
        Class::ALL.into_iter().zip(self.0).filter_map(|(class, acc)| acc.map(|a| (class, *a)))
    }
}

fn class_of(layer: Layer) -> Class {
    match layer {
        Layer::MpiIo => Class::MpiIo,
        Layer::Posix | Layer::Stdio => Class::Application,
        Layer::Block => Class::Block,
    }
}

const SIZE_BUCKETS: usize = 64;

/// Latencies below this many nanoseconds are counted by exact value before they reach the
/// HDR histograms (see [`ShortLatencies`]).
const SHORT_LATENCY_NS: usize = 4096;

/// Exact counts of short latencies, by value and direction: one increment per call instead of
/// two histogram records (all and per direction), moved into the histograms in bulk. The
/// histograms hold the same values either way, so every percentile is the same.
struct ShortLatencies(Box<[[u64; 2]; SHORT_LATENCY_NS]>);

impl ShortLatencies {
    fn new() -> ShortLatencies {
        ShortLatencies(vec![[0; 2]; SHORT_LATENCY_NS].into_boxed_slice().try_into().expect("sized above"))
    }

    #[inline]
    fn record(&mut self, raw: &mut AgentRaw, write: bool, ns: u64) {
        match self.0.get_mut(ns as usize) {
            Some(counts) => counts[write as usize] += 1,
            None => raw.record_latency(write, ns),
        }
    }

    /// Moves the counts into `raw`'s histograms (as many `record_latency` calls would).
    fn flush_into(&mut self, raw: &mut AgentRaw) {
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
struct ClassAcc {
    raw: AgentRaw,
    /// Latencies not yet in `raw`'s histograms.
    short_latencies: ShortLatencies,
    union: ExternalUnion,
    /// The union when the calls come in order ([`AnalyzeOptions::in_order`]).
    sweep: SweepUnion,
    /// With a reorder window, the calls waiting to be put in start order for `sweep` and the
    /// layer's, file's and process's sweeps.
    staged: StartOrder<Staged>,
    sizes: [[u64; 2]; SIZE_BUCKETS],
    seq_known: u64,
    seq_hits: u64,
    seq: SeqTracker,
    duration_sum_ns: u128,
    max_extent: u64,
}

impl ClassAcc {
    #[cold]
    #[inline(never)]
    fn new(opts: &AnalyzeOptions) -> ClassAcc {
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
struct SeqTracker {
    ends: HashMap<(u32, u32), u64>,
    current: Option<((u32, u32), u64)>,
    /// The first offset of each key, for a merge to judge the first call of a later chunk.
    first: HashMap<(u32, u32), u64>,
}

impl SeqTracker {
    /// Records a call at `offset` ending at `end`; whether it starts where the last one ended.
    #[inline]
    fn follows(&mut self, key: (u32, u32), offset: u64, end: u64) -> bool {
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

    fn flush(&mut self) {
        if let Some((k, end)) = self.current.take() {
            self.ends.insert(k, end);
        }
    }

    /// Adds the calls after this tracker's; a later first call that follows on counts in `hits`.
    fn absorb(&mut self, mut later: SeqTracker, hits: &mut u64) {
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
struct FileAcc {
    ops: u64,
    read_bytes: u64,
    write_bytes: u64,
    latency_sum_ns: u64,
    union: CompactUnion,
    sweep: SweepUnion,
}

/// Ids below this index a dense table; importers number paths from 0.
const DENSE_FILE_IDS: usize = 1 << 20;
const LAYERS: usize = Layer::ALL.len();

/// Per-file accumulators by (file id, layer), dense by id: one index per call, no hashing.
#[derive(Default)]
struct FileTable {
    /// Per id and layer, the accumulator's index in `accs` (u32::MAX: none yet).
    dense: Vec<[u32; LAYERS]>,
    sparse: HashMap<(u32, Layer), usize>,
    accs: Vec<((u32, Layer), FileAcc)>,
}

impl FileTable {
    #[inline]
    fn get_or_default(&mut self, key: (u32, Layer)) -> &mut FileAcc {
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

    fn into_entries(self) -> impl Iterator<Item = ((u32, Layer), FileAcc)> {
        self.accs.into_iter()
    }
}

#[derive(Default)]
struct ProcAcc {
    ops: u64,
    bytes: u64,
    threads: HashSet<u32>,
    /// The thread of the last call, already in `threads`.
    last_tid: Option<u32>,
    union: CompactUnion,
    timeline: timeline::BusyTimeline,
    sweep: SweepUnion,
}

/// A process, a file and a layer: the calls that go to the same three sweeps.
type RunKey = (u32, u32, Layer);

/// A call waiting in a reorder window, with what its sweeps are found by.
#[derive(Debug, Clone, Copy)]
struct Staged {
    iv: Interval,
    key: RunKey,
}

impl Starts for Staged {
    #[inline(always)]
    fn start(&self) -> u64 {
        self.iv.start
    }
}

/// Calls released from a reorder window at a time: the buffer they pass through stays small.
const RELEASE_BATCH: usize = 1024;

/// The calls of one process on one file in one layer in a row, counted once for the layer's,
/// the file's and the process's rows and added to theirs when the run ends, instead of three
/// times per call. Their busy time too, when they come in start order without a reorder window:
/// swept once, then added to the three sweeps. Adding is exact only for calls that start after
/// every period the three have open (`horizon`): until one does, calls go to the three directly.
/// Short runs (calls of several files interleaved) never get that far and cost no more than
/// direct sweeps.
#[derive(Default)]
struct KeyRun {
    key: Option<RunKey>,
    totals: RunTotals,
    /// Calls of the run swept directly so far.
    direct: u32,
    /// At least the latest open period's end among the three sweeps, once `direct` reaches
    /// [`KeyRun::DIRECT_CALLS`] (before that, only the run's own calls' ends).
    horizon: u64,
    /// The calls after `horizon`.
    sweep: SweepUnion,
}

/// Data operations of a [`KeyRun`].
#[derive(Default, Clone, Copy)]
struct RunTotals {
    /// Not saturating: it cannot exceed the number of events.
    ops: u64,
    read_bytes: u64,
    write_bytes: u64,
    latency_sum_ns: u64,
}

impl KeyRun {
    /// Calls swept directly before the run looks up where the three sweeps' periods end.
    const DIRECT_CALLS: u32 = 4;
}

/// An operation ranked by duration (ties by arrival) for the slowest-operations table.
struct Slow(u64, u64, IoEvent);

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

/// Builds a [`TraceSummary`] from a stream of events.
pub struct Analyzer {
    opts: AnalyzeOptions,
    /// Keyed, not indexed: ids come from trace files and may be sparse.
    paths: HashMap<u32, String>,
    /// Path ids the filter rejects, and whether any call used them.
    filtered_ids: HashMap<u32, bool>,
    filter_report: FilterReport,
    classes: ClassTable,
    /// Indexed by layer.
    layers: [Option<LayerRow>; LAYERS],
    /// Busy time of each layer on its own.
    layer_unions: BTreeMap<Layer, CompactUnion>,
    /// The same, swept, when the calls come in order (indexed by layer).
    layer_sweeps: [SweepUnion; LAYERS],
    /// Calls released from a reorder window, on their way to their sweeps.
    released: Vec<Staged>,
    /// Per file and per process, each layer on its own: an MPI-IO call and the POSIX calls
    /// beneath it move the same bytes, so adding them would count them twice.
    files: FileTable,
    processes: HashMap<(u32, Layer), ProcAcc>,
    /// The process of the latest call, held outside `processes` (calls come in runs).
    current_process: Option<((u32, Layer), ProcAcc)>,
    run: KeyRun,
    slowest: BinaryHeap<Reverse<Slow>>,
    seen: u64,
    first_start: u64,
    last_end: u64,
    mmaps: u64,
    exports: Vec<export::Export>,
    /// Exports that failed mid-way: the summary goes on, tells them in its notes, and the
    /// exports fail when completed ([`export::OpExports::finish`]).
    export_errors: Vec<(PathBuf, std::io::Error)>,
    /// The first failure to spill the busy-time union: the summary cannot be trusted after it.
    spill_error: Option<std::io::Error>,
    /// The caller's stop flag was seen: the summary covers the events before it.
    interrupted: bool,
}

/// Per-layer totals of data operations.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LayerRow {
    pub layer: String,
    pub ops: u64,
    pub bytes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// The union of this layer's data and sync calls, over all processes and threads.
    pub busy_s: f64,
    /// Blocks (of the block unit) per busy second of this layer: at the MPI-IO layer the
    /// application's view, at the POSIX layer beneath what the middleware moved.
    pub bps: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeBucket {
    /// e.g. "4KiB–8KiB": requests of at least `min_bytes` and less than twice that.
    pub label: String,
    pub min_bytes: u64,
    pub read_ops: u64,
    pub write_ops: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileRow {
    pub path: String,
    /// The layer of the calls counted in this row ("posix", "mpiio", …).
    pub layer: String,
    pub ops: u64,
    pub bytes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub busy_s: f64,
    pub mean_latency_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessRow {
    pub pid: u32,
    pub layer: String,
    pub ops: u64,
    pub bytes: u64,
    pub busy_s: f64,
    pub threads: usize,
    /// When the process was busy: `[start_s, end_s]` since the trace's first call, exact to
    /// `busy_periods_resolution_s` (a bounded number per process, see [`timeline`]).
    pub busy_periods_s: Vec<[f64; 2]>,
    pub busy_periods_resolution_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutableRow {
    /// The executable's path.
    pub exe: String,
    /// Process images that ran it.
    pub processes: u64,
    pub ops: u64,
    pub bytes: u64,
    /// Whether the aggregate counts it (all do, unless `--only-exe` chose some).
    pub counted: bool,
}

/// A process tree of a traced program: a root (a traced process whose parent was not traced,
/// e.g. mpirun) and every process it started, directly or not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessTreeRow {
    pub root_pid: u32,
    /// The executable of the root's first image.
    pub root_exe: String,
    /// The root's parent (not traced: iolens itself, or a shell).
    pub parent_pid: u32,
    pub processes: u64,
    /// Executables run in the tree (file names; "ior ×4": four process images ran it).
    pub executables: Vec<String>,
    /// Data operations of the tree's processes on counted files, and their bytes.
    pub ops: u64,
    pub bytes: u64,
    /// Those the aggregate counts (all, unless `--only-exe` chose some processes).
    pub counted_ops: u64,
    /// The processes whose calls the aggregate counts.
    pub counted_pids: Vec<u32>,
    /// First process start to last process end in the tree.
    pub wall_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowOp {
    pub pid: u32,
    pub tid: u32,
    pub path: String,
    pub op: String,
    pub layer: String,
    pub offset: Option<u64>,
    pub bytes: u64,
    /// Seconds after the first traced call.
    pub start_s: f64,
    pub duration_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Concurrency {
    /// Sum of call durations / busy time: requests in flight on average while busy.
    pub mean_in_flight: f64,
    /// Most calls in flight at once (None when the trace was too large to keep every interval).
    pub peak_in_flight: Option<u64>,
}

/// The summary of a trace. The aggregate keys are those of `iolens run`.
#[derive(Debug, Clone, Serialize)]
pub struct TraceSummary {
    #[serde(flatten)]
    pub figures: Figures,
    /// Which calls the aggregate counts: "mpiio", "posix+stdio" or "block".
    pub aggregate_layer: String,
    pub first_start_ns: u64,
    /// Data operations per second of wall time.
    pub rate_ops_s: f64,
    /// Share of data operations starting where the previous one of the same process on the same
    /// file ended (operations with unknown offsets left out).
    pub sequential_fraction: Option<f64>,
    pub concurrency: Concurrency,
    /// Largest offset + length seen: the region the program addressed.
    pub max_extent_bytes: u64,
    pub layers: Vec<LayerRow>,
    pub size_histogram: Vec<SizeBucket>,
    pub files: Vec<FileRow>,
    pub processes: Vec<ProcessRow>,
    /// Data operations per executable (traces that name them: `iolens trace`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub executables: Vec<ExecutableRow>,
    /// Process trees (traces with process start markers: `iolens trace`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub process_trees: Vec<ProcessTreeRow>,
    pub slowest: Vec<SlowOp>,
    /// The path filters given, and what they left out (None without filters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<FilterReport>,
    pub notes: Vec<String>,
    /// The analysis was stopped (Ctrl-C) before the end of the trace: the figures cover the
    /// events read until then. Told to the envelope of the JSON result, not written here.
    #[serde(skip)]
    pub interrupted: bool,
}

impl Analyzer {
    pub fn new(opts: AnalyzeOptions) -> Result<Analyzer, AnalyzeError> {
        let exports = export::open_exports(opts.per_op_csv.as_ref(), opts.per_op_parquet.as_ref())
            .map_err(|(path, source)| AnalyzeError::Output { path, source })?;
        Ok(Analyzer {
            opts,
            paths: HashMap::new(),
            filtered_ids: HashMap::new(),
            filter_report: FilterReport::default(),
            classes: ClassTable::default(),
            layers: Default::default(),
            layer_unions: BTreeMap::new(),
            layer_sweeps: Default::default(),
            released: Vec::new(),
            files: FileTable::default(),
            processes: HashMap::new(),
            current_process: None,
            run: KeyRun::default(),
            slowest: BinaryHeap::new(),
            seen: 0,
            first_start: u64::MAX,
            last_end: 0,
            mmaps: 0,
            exports,
            export_errors: Vec::new(),
            spill_error: None,
            interrupted: false,
        })
    }

    /// Whether the caller's stop flag is set; once it is, the summary reports `interrupted`.
    pub fn stop_requested(&mut self) -> bool {
        if !self.interrupted {
            self.interrupted = self.opts.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
        }
        self.interrupted
    }

    pub fn path(&mut self, id: u32, path: &str) {
        if self.opts.filter.admits(path) {
            self.filtered_ids.remove(&id);
        } else {
            self.filtered_ids.insert(id, false);
        }
        self.paths.insert(id, path.to_string());
    }

    /// Whether calls on file `id` count (the path filter admits it, or it names no path).
    pub fn counts_file(&self, id: u32) -> bool {
        self.filtered_ids.is_empty() || !self.filtered_ids.contains_key(&id)
    }

    /// Counts a call on a file the filter rejects; true when `e` is one.
    fn filtered_out(&mut self, e: &IoEvent) -> bool {
        if self.filtered_ids.is_empty() {
            return false;
        }
        let Some(used) = self.filtered_ids.get_mut(&e.file) else { return false };
        *used = true;
        let r = &mut self.filter_report;
        if e.op.is_data() {
            r.ops_out = r.ops_out.saturating_add(1);
            r.bytes_out = r.bytes_out.saturating_add(e.requested);
        } else if e.op.is_sync() {
            r.syncs_out = r.syncs_out.saturating_add(1);
        }
        true
    }

    /// The wall time of what was counted, when known only once the trace is read (the
    /// lifetimes of the selected processes, or a Darshan log's job runtime).
    pub fn set_program_wall_ns(&mut self, wall_ns: u64) {
        self.opts.program_wall_ns = Some(wall_ns);
    }

    /// The path defined for `id`, for notes about events the analysis does not count.
    pub fn path_name(&self, id: u32) -> Option<&str> {
        self.paths.get(&id).map(String::as_str)
    }

    fn export(&mut self, e: &IoEvent) {
        if self.exports.is_empty() {
            return;
        }
        let path = self.paths.get(&e.file).map_or("", String::as_str);
        let mut failed = None;
        for (i, (file, writer)) in self.exports.iter_mut().enumerate() {
            if let Err(err) = writer.op(e, path) {
                self.export_errors.push((file.clone(), err));
                failed = Some(i);
            }
        }
        if let Some(i) = failed {
            self.exports.remove(i);
        }
    }

    pub fn event(&mut self, e: &IoEvent) {
        if self.filtered_out(e) {
            return;
        }
        self.export(e);
        if e.op == IoOp::Mmap {
            self.mmaps += 1;
            return;
        }
        let data = e.op.is_data();
        if !data && !e.op.is_sync() {
            return;
        }
        self.seen = self.seen.saturating_add(1);
        self.first_start = self.first_start.min(e.start_ns);
        self.last_end = self.last_end.max(e.end_ns);
        let iv = Interval::new(e.start_ns, e.end_ns.max(e.start_ns));
        // The read half of an in-kernel copy shares the write half's interval: counted once.
        let timed = e.flags & FLAG_COPY_SOURCE == 0;
        let dur = if timed { iv.len() } else { 0 };
        let write = e.op == IoOp::Write || e.op == IoOp::Copy;

        let class = class_of(e.layer);
        let acc = self.classes.get_or_insert_with(class, || ClassAcc::new(&self.opts));
        let in_order = self.opts.in_order;
        let staging = in_order && self.opts.reorder_window > 0;
        if timed {
            if staging {
                // Swept when the window releases it, with its layer's, file's and process's.
                acc.sweep.arrive(iv);
            } else if in_order {
                acc.sweep.push(iv);
            } else if let Err(err) = acc.union.push(iv) {
                self.spill_error.get_or_insert(err);
            }
        }
        acc.duration_sum_ns = acc.duration_sum_ns.saturating_add(dur as u128);
        if data {
            let c = &acc.raw.counters;
            let other_direction_seen = if write { c.read_ops > 0 } else { c.write_ops > 0 };
            if other_direction_seen && acc.raw.by_direction.is_none() {
                // The first call of the second direction: what the histograms hold so far is
                // the first direction's (its counters are not yet touched by this call).
                acc.short_latencies.flush_into(&mut acc.raw);
                acc.raw.split_directions_now();
            }
        }
        if data && timed {
            acc.short_latencies.record(&mut acc.raw, write, dur);
        }
        let c = &mut acc.raw.counters;
        // Traces are input: their sums saturate rather than overflow. Read and write totals are
        // capped together because the figures add them.
        if data {
            c.latency_sum_ns = c.latency_sum_ns.saturating_add(dur);
            c.moved_bytes = c.moved_bytes.saturating_add(e.requested);
            let room = u64::MAX - c.read_bytes.saturating_add(c.write_bytes);
            if write {
                c.write_ops = c.write_ops.saturating_add(1);
                c.write_bytes += e.requested.min(room);
            } else {
                c.read_ops = c.read_ops.saturating_add(1);
                c.read_bytes += e.requested.min(room);
            }
            if e.failed() {
                c.errors = c.errors.saturating_add(1);
            } else if (e.result as u64) < e.requested && !write {
                c.short_ops = c.short_ops.saturating_add(1);
            }
            let bucket = 63 - e.requested.max(1).leading_zeros() as usize;
            let n = &mut acc.sizes[bucket][write as usize];
            *n = n.saturating_add(1);
            if e.offset != UNKNOWN_OFFSET {
                acc.seq_known = acc.seq_known.saturating_add(1);
                let moved = if e.result > 0 { e.result as u64 } else { e.requested };
                if acc.seq.follows((e.pid, e.file), e.offset, e.offset.saturating_add(moved)) {
                    acc.seq_hits = acc.seq_hits.saturating_add(1);
                }
                acc.max_extent = acc.max_extent.max(e.offset.saturating_add(e.requested));
            }
        } else {
            c.fsyncs = c.fsyncs.saturating_add(1);
            c.fsync_ns = c.fsync_ns.saturating_add(dur);
        }

        let key = (e.pid, e.file, e.layer);
        if self.run.key != Some(key) {
            self.end_run();
            self.run.key = Some(key);
        }
        if data {
            let t = &mut self.run.totals;
            t.ops += 1;
            t.latency_sum_ns = t.latency_sum_ns.saturating_add(dur);
            if write {
                t.write_bytes = t.write_bytes.saturating_add(e.requested);
            } else {
                t.read_bytes = t.read_bytes.saturating_add(e.requested);
            }
        }
        let p = self.process_acc((e.pid, e.layer));
        if p.last_tid != Some(e.tid) {
            p.threads.insert(e.tid);
            p.last_tid = Some(e.tid);
        }
        if timed {
            p.timeline.push(iv);
            if !in_order {
                p.union.push(iv);
                self.layer_unions.entry(e.layer).or_default().push(iv);
                if self.opts.top_files > 0 {
                    self.files.get_or_default((e.file, e.layer)).union.push(iv);
                }
            } else if staging {
                self.stage(class, Staged { iv, key });
            } else {
                self.run_push(key, iv);
            }
            self.keep_if_slow(dur, self.seen, *e);
        }
    }

    /// Makes `key` the process held outside the table.
    #[cold]
    #[inline(never)]
    fn switch_process(&mut self, key: (u32, Layer)) {
        if let Some((k, acc)) = self.current_process.take() {
            self.processes.insert(k, acc);
        }
        let acc = self.processes.remove(&key).unwrap_or_default();
        self.current_process = Some((key, acc));
    }

    /// Puts a call in its class's reorder window, and sweeps the window's earlier half when full.
    #[inline]
    fn stage(&mut self, class: Class, call: Staged) {
        let Some(acc) = self.classes.get_mut(class) else { return };
        acc.staged.push(call);
        if acc.staged.full() {
            let window = acc.staged.window();
            self.release_staged(class, window);
        }
    }

    /// Sweeps the `n` earliest calls waiting in `class`'s reorder window, for the class, and
    /// for their layer, file and process.
    #[cold]
    #[inline(never)]
    fn release_staged(&mut self, class: Class, n: usize) {
        let mut released = std::mem::take(&mut self.released);
        let mut left = n;
        while left > 0 {
            let Some(acc) = self.classes.get_mut(class) else { break };
            acc.staged.release(left.min(RELEASE_BATCH), &mut released);
            if released.is_empty() {
                break;
            }
            left -= released.len();
            released.iter().for_each(|call| acc.sweep.sweep(call.iv));
            for call in released.drain(..) {
                self.for_each_sweep_of(call.key, |sweep| sweep.push(call.iv));
            }
        }
        self.released = released;
    }

    /// Sweeps `iv`, of a call of `key`, for its layer, file and process.
    #[inline]
    fn run_push(&mut self, key: RunKey, iv: Interval) {
        if self.run.sweep.is_empty() {
            if self.run.direct == KeyRun::DIRECT_CALLS {
                let open_end = self.open_end_of(key);
                self.run.horizon = self.run.horizon.max(open_end);
            }
            let run = &mut self.run;
            if run.direct <= KeyRun::DIRECT_CALLS || iv.start <= run.horizon {
                run.direct = run.direct.saturating_add(1);
                run.horizon = run.horizon.max(iv.end);
                self.for_each_sweep_of(key, |sweep| sweep.push(iv));
                return;
            }
        }
        self.run.sweep.push_plain(iv);
    }

    /// The latest open period's end among the layer's, file's and process's sweeps of `key`.
    fn open_end_of(&mut self, key: RunKey) -> u64 {
        let mut end = 0;
        self.for_each_sweep_of(key, |sweep| end = end.max(sweep.open_end().unwrap_or(0)));
        end
    }

    /// Calls `f` on the layer's, file's and process's sweeps of `key`.
    fn for_each_sweep_of(&mut self, (pid, file, layer): RunKey, mut f: impl FnMut(&mut SweepUnion)) {
        f(&mut self.layer_sweeps[layer as usize]);
        if self.opts.top_files > 0 {
            f(&mut self.files.get_or_default((file, layer)).sweep);
        }
        f(&mut self.process_acc((pid, layer)).sweep);
    }

    /// The process `key`, made the one held outside the table (calls come in runs).
    #[inline]
    fn process_acc(&mut self, key: (u32, Layer)) -> &mut ProcAcc {
        if self.current_process.as_ref().is_none_or(|(k, _)| *k != key) {
            self.switch_process(key);
        }
        &mut self.current_process.as_mut().expect("switched to above").1
    }

    /// Adds the run's totals and its own sweep to its layer's, file's and process's.
    #[inline(never)]
    fn end_run(&mut self) {
        let run = std::mem::take(&mut self.run);
        let Some(key @ (pid, file, layer)) = run.key else { return };
        let t = run.totals;
        let bytes = t.read_bytes.saturating_add(t.write_bytes);
        if t.ops > 0 {
            let row = self.layers[layer as usize]
                .get_or_insert_with(|| LayerRow { layer: layer.name().into(), ..Default::default() });
            row.ops = row.ops.saturating_add(t.ops);
            row.bytes = row.bytes.saturating_add(bytes);
            row.read_bytes = row.read_bytes.saturating_add(t.read_bytes);
            row.write_bytes = row.write_bytes.saturating_add(t.write_bytes);
        }
        if self.opts.top_files > 0 {
            let f = self.files.get_or_default((file, layer));
            f.ops = f.ops.saturating_add(t.ops);
            f.latency_sum_ns = f.latency_sum_ns.saturating_add(t.latency_sum_ns);
            f.read_bytes = f.read_bytes.saturating_add(t.read_bytes);
            f.write_bytes = f.write_bytes.saturating_add(t.write_bytes);
        }
        let p = self.process_acc((pid, layer));
        p.ops = p.ops.saturating_add(t.ops);
        p.bytes = p.bytes.saturating_add(bytes);
        if !run.sweep.is_empty() {
            self.for_each_sweep_of(key, |sweep| sweep.absorb(run.sweep.copy_plain()));
        }
    }

    /// Keeps the `slowest` longest operations, ties going to the later arrival.
    #[inline]
    fn keep_if_slow(&mut self, dur: u64, arrival: u64, e: IoEvent) {
        let n = self.opts.slowest;
        if n == 0 {
            return;
        }
        if self.slowest.len() >= n
            && self.slowest.peek().is_some_and(|Reverse(min)| (dur, arrival) < (min.0, min.1))
        {
            return;
        }
        self.slowest.push(Reverse(Slow(dur, arrival, e)));
        if self.slowest.len() > n {
            self.slowest.pop();
        }
    }

    /// Puts what is held outside the tables back in.
    fn flush_caches(&mut self) {
        for class in Class::ALL {
            self.release_staged(class, usize::MAX);
        }
        self.end_run();
        if let Some((k, acc)) = self.current_process.take() {
            self.processes.insert(k, acc);
        }
        for acc in self.classes.values_mut() {
            acc.seq.flush();
            acc.short_latencies.flush_into(&mut acc.raw);
        }
    }

    /// Whether each class's calls have come in start order so far (or through its window): a
    /// check cheap enough to poll while reading. A class's layers, files and processes see
    /// parts of its calls in the same order, so they stay in order while it does; the full
    /// check is [`Analyzer::in_order`].
    pub fn in_order_so_far(&self) -> bool {
        !self.opts.in_order || self.classes.values().all(|c| c.sweep.ordered() && c.staged.ordered())
    }

    /// Whether every union saw its calls in start order (always true without
    /// [`AnalyzeOptions::in_order`]): when false, [`Analyzer::finish`] fails.
    pub fn in_order(&self) -> bool {
        if !self.opts.in_order {
            return true;
        }
        self.classes.values().all(|c| c.sweep.ordered() && c.staged.ordered())
            && self.run.sweep.ordered()
            && self.layer_sweeps.iter().all(SweepUnion::ordered)
            && self.files.accs.iter().all(|(_, f)| f.sweep.ordered())
            && self
                .processes
                .values()
                .chain(self.current_process.as_ref().map(|(_, p)| p))
                .all(|p| p.sweep.ordered())
    }

    /// The summary; the per-operation exports are complete, without an envelope.
    pub fn finish(self) -> Result<TraceSummary, AnalyzeError> {
        let (summary, exports) = self.finish_keeping_exports()?;
        exports.finish(None).map_err(|(path, source)| AnalyzeError::Output { path, source })?;
        Ok(summary)
    }

    /// The summary, and the per-operation exports still to complete with the result's envelope
    /// ([`export::OpExports::finish`]).
    pub fn finish_keeping_exports(mut self) -> Result<(TraceSummary, export::OpExports), AnalyzeError> {
        if !self.in_order() {
            return Err(AnalyzeError::OutOfOrder);
        }
        let in_order = self.opts.in_order;
        self.flush_caches();
        let mut notes = Vec::new();
        if let Some(err) = self.spill_error {
            return Err(AnalyzeError::Spill(err));
        }
        notes.extend(
            self.export_errors
                .iter()
                .map(|(file, err)| format!("the per-op export {} is incomplete: {err}", file.display())),
        );
        let exports = export::OpExports { writers: self.exports, failed: self.export_errors };
        let mut classes = self.classes;
        let chosen = Class::ALL.into_iter().find(|c| classes.contains(*c));
        if chosen == Some(Class::MpiIo) && classes.contains(Class::Application) {
            notes.push(
                "the trace has MPI-IO and POSIX calls: the aggregate counts the MPI-IO calls (the POSIX calls beneath them would count the same bytes twice); see `layers`".into(),
            );
        }
        if self.mmaps > 0 {
            notes.push(format!(
                "{} mmap(s) of traced files: accesses through mapped memory are not in these figures",
                self.mmaps
            ));
        }
        let empty = self.seen == 0;
        let first = if empty { 0 } else { self.first_start };
        let wall_ns = self.opts.program_wall_ns.unwrap_or(self.last_end.saturating_sub(first));
        let (mut raw, union_totals, sizes, seq, duration_sum, peak, max_extent) = match chosen
            .and_then(|c| classes.remove(c))
        {
            Some(mut acc) => {
                let (peak, totals) = if in_order {
                    (acc.sweep.peak_overlap(), acc.sweep.totals())
                } else {
                    (acc.union.peak_overlap(), acc.union.finish().map_err(AnalyzeError::Spill)?)
                };
                let seq = (acc.seq_known > 0).then(|| acc.seq_hits as f64 / acc.seq_known as f64);
                (acc.raw, totals, acc.sizes, seq, acc.duration_sum_ns, peak, acc.max_extent)
            }
            None => (AgentRaw::default(), Default::default(), [[0; 2]; SIZE_BUCKETS], None, 0, Some(0), 0),
        };
        raw.busy = union_totals;
        raw.window_start_ns = first;
        raw.window_end_ns = first.saturating_add(wall_ns);
        let figures = raw.figures(self.opts.block_unit);
        let busy_ns = union_totals.busy_ns;

        let size_histogram = sizes
            .iter()
            .enumerate()
            .filter(|(_, c)| c[0] + c[1] > 0)
            .map(|(i, c)| {
                let lo = 1u64 << i;
                SizeBucket {
                    label: format!(
                        "{}–{}",
                        iolens_workload::format_bytes(lo),
                        iolens_workload::format_bytes(lo.saturating_mul(2))
                    ),
                    min_bytes: lo,
                    read_ops: c[0],
                    write_ops: c[1],
                }
            })
            .collect();

        let paths = self.paths;
        let filters = (!self.opts.filter.is_empty()).then(|| {
            let names: HashSet<&str> = self
                .filtered_ids
                .iter()
                .filter(|(_, used)| **used)
                .filter_map(|(id, _)| paths.get(id).map(String::as_str))
                .collect();
            FilterReport {
                include: self.opts.filter.include_patterns(),
                exclude: self.opts.filter.exclude_patterns(),
                files_out: names.len() as u64,
                ..self.filter_report
            }
        });
        let name = |id: u32| -> String {
            if id == NO_FILE {
                return String::new();
            }
            paths.get(&id).cloned().unwrap_or_else(|| "?".into())
        };
        let mut files: Vec<FileRow> = self
            .files
            .into_entries()
            .map(|((id, layer), mut f)| {
                Ok(FileRow {
                    path: name(id),
                    layer: layer.name().into(),
                    ops: f.ops,
                    bytes: f.read_bytes.saturating_add(f.write_bytes),
                    read_bytes: f.read_bytes,
                    write_bytes: f.write_bytes,
                    busy_s: if in_order {
                        f.sweep.totals().busy_ns
                    } else {
                        f.union.busy_ns().map_err(AnalyzeError::Spill)?
                    } as f64
                        / 1e9,
                    mean_latency_s: if f.ops > 0 {
                        f.latency_sum_ns as f64 / f.ops as f64 / 1e9
                    } else {
                        0.0
                    },
                })
            })
            .collect::<Result<_, AnalyzeError>>()?;
        files.sort_by(|a, b| {
            b.busy_s.total_cmp(&a.busy_s).then(a.path.cmp(&b.path)).then(a.layer.cmp(&b.layer))
        });
        files.truncate(self.opts.top_files);
        let mut processes: Vec<ProcessRow> = self
            .processes
            .into_iter()
            .map(|((pid, layer), mut p)| {
                Ok(ProcessRow {
                    pid,
                    layer: layer.name().into(),
                    ops: p.ops,
                    bytes: p.bytes,
                    busy_s: if in_order {
                        p.sweep.totals().busy_ns
                    } else {
                        p.union.busy_ns().map_err(AnalyzeError::Spill)?
                    } as f64
                        / 1e9,
                    threads: p.threads.len(),
                    busy_periods_s: p
                        .timeline
                        .periods()
                        .map(|(start, end)| {
                            let since_first = |ns: u64| ns.saturating_sub(first) as f64 / 1e9;
                            [since_first(start), since_first(end)]
                        })
                        .collect(),
                    busy_periods_resolution_s: p.timeline.resolution_ns() as f64 / 1e9,
                })
            })
            .collect::<Result<_, AnalyzeError>>()?;
        processes.sort_by(|a, b| {
            b.busy_s.total_cmp(&a.busy_s).then(a.pid.cmp(&b.pid)).then(a.layer.cmp(&b.layer))
        });
        processes.truncate(self.opts.top_processes);
        let mut slowest: Vec<SlowOp> = self
            .slowest
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse(Slow(dur, _, e))| SlowOp {
                pid: e.pid,
                tid: e.tid,
                path: name(e.file),
                op: e.op.name().into(),
                layer: e.layer.name().into(),
                offset: (e.offset != UNKNOWN_OFFSET).then_some(e.offset),
                bytes: e.requested,
                start_s: e.start_ns.saturating_sub(first) as f64 / 1e9,
                duration_s: dur as f64 / 1e9,
            })
            .collect();
        slowest.sort_by(|a, b| b.duration_s.total_cmp(&a.duration_s));
        let mut layer_unions = self.layer_unions;
        let block_unit = self.opts.block_unit.max(1) as f64;
        let mut layers = Vec::with_capacity(LAYERS);
        for (layer, row) in Layer::ALL.into_iter().zip(self.layers).filter_map(|(l, r)| Some((l, r?))) {
            let busy_ns = match layer_unions.get_mut(&layer) {
                _ if in_order => self.layer_sweeps[layer as usize].totals().busy_ns,
                Some(union) => union.busy_ns().map_err(AnalyzeError::Spill)?,
                None => 0,
            };
            let busy_s = busy_ns as f64 / 1e9;
            let bps = if busy_s > 0.0 { row.bytes as f64 / block_unit / busy_s } else { 0.0 };
            layers.push(LayerRow { busy_s, bps, ..row });
        }

        let summary = TraceSummary {
            rate_ops_s: if wall_ns > 0 { figures.ops as f64 / (wall_ns as f64 / 1e9) } else { 0.0 },
            figures,
            aggregate_layer: match chosen {
                Some(Class::MpiIo) => "mpiio",
                Some(Class::Block) => "block",
                _ => "posix+stdio",
            }
            .into(),
            first_start_ns: first,
            sequential_fraction: seq,
            concurrency: Concurrency {
                mean_in_flight: if busy_ns > 0 { duration_sum as f64 / busy_ns as f64 } else { 0.0 },
                peak_in_flight: peak,
            },
            max_extent_bytes: max_extent,
            layers,
            size_histogram,
            files,
            processes,
            executables: Vec::new(),
            process_trees: Vec::new(),
            slowest,
            filters,
            notes,
            interrupted: self.interrupted,
        };
        Ok((summary, exports))
    }
}

#[cfg(test)]
mod tests;
