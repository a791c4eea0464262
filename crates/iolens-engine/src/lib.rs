//! The engine runs a [`Job`](iolens_workload::Job): it prepares targets safely, starts one
//! thread per agent on its I/O backend, timestamps every operation, and returns mergeable raw
//! measurements with the busy-time union already computed.
//!
//! Data flow of a run ([`run_job`]): targets are resolved and laid out ([`target`]); each agent
//! thread drives its backend ([`backend`]) through the generic agent loop, recording per-op
//! latency into its own histogram and its busy periods into a lock-free ring; a collector
//! thread merges the rings into the global busy time and samples the device once a second.
//! Nothing on the per-op path allocates, locks, or touches memory shared with another agent.

pub mod backend;
pub mod barrier;
pub mod buffers;
pub mod offsets;
pub mod pacing;
pub mod placement;
pub mod target;
pub mod verify;

mod agent;
mod collector;
mod run;

use std::path::PathBuf;

pub use barrier::{LocalBarrier, PhaseBarrier};
pub use placement::{Layout, OffsetMap, Placement};
pub use run::{
    parse_log_interval, run_job, run_job_detailed, Progress, RunDetail, RunObserver, RunOptions,
    MIN_LOG_INTERVAL,
};
pub use target::{TargetPolicy, Targets};

/// Why a run could not start, or ended early.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("refusing to write {path}: it {reason}\n  hint: {hint}")]
    Refused { path: PathBuf, reason: String, hint: String },
    #[error("target {path} {reason}")]
    BadTarget { path: PathBuf, reason: String },
    #[error("O_DIRECT is not supported by the {filesystem} file system holding {path}\n  hint: drop --direct (direct = false in the job) to use buffered I/O on this file system")]
    DirectUnsupported { path: PathBuf, filesystem: String },
    #[error("no space left for {path}: need {need} bytes, {free} free\n  hint: use a smaller --size or another directory")]
    NoSpace { path: PathBuf, need: u64, free: u64 },
    #[error("cannot {action} {path}: {source}")]
    Io { path: PathBuf, action: &'static str, source: std::io::Error },
    #[error("io_uring is unavailable: {0}\n  hint: use --engine sync, or allow io_uring (sysctl kernel.io_uring_disabled=0)")]
    UringUnavailable(std::io::Error),
    #[error("interrupted")]
    Interrupted,
}
