//! The summary of a trace ([`TraceSummary`]) and its tables' rows, as they are serialized.

use iolens_metrics::Figures;
use serde::Serialize;

use crate::FilterReport;

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
