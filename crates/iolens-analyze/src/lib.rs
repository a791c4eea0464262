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

mod accumulate;
mod analyzer;
pub mod export;
mod filter;
mod finish;
mod merge;
mod reorder;
mod rows;
pub mod timeline;
pub mod trace_summary;
mod union;
mod workload;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use analyzer::Analyzer;
pub use filter::{FilterError, FilterReport, PathFilter};
pub use rows::{
    Concurrency, ExecutableRow, FileRow, LayerRow, ProcessRow, ProcessTreeRow, SizeBucket, SlowOp,
    TraceSummary,
};
pub use union::{set_spill_dir_maker, SpillDir, SpillDirMaker};
pub use workload::emit_workload;

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
    pub per_op_parquet: Option<(PathBuf, export::OpFileOpener)>,
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

#[cfg(test)]
mod tests;
