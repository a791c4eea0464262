//! Standard experiments, each a series of core runs (`iolens_engine::run_job`) with its own
//! table, JSON and findings:
//!
//! - [`sweep`]: the `iops` program's experiment — block size doubling at fixed concurrency, with
//!   the knee of the IOPS curve and the size that reaches 90% of peak bandwidth;
//! - [`saturate`]: concurrency doubling until throughput stops growing, and the saturation point;
//! - [`write_modes`]: the same random writes measured naively, with the final fsync timed, and
//!   with O_DIRECT, to show why the naive figure is not a storage figure.

pub mod beff_io;
pub mod doe;
pub mod repeat;
pub mod saturate;
pub mod sweep;
pub mod validate;
pub mod write_modes;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{run_job, EngineError, LocalBarrier, RunObserver, RunOptions, TargetPolicy};
use iolens_metrics::RunResult;
use iolens_workload::{FlagWorkload, JobError};

/// How a suite runs its points.
pub struct SuiteContext<'a> {
    pub stop: Arc<AtomicBool>,
    pub observer: &'a dyn RunObserver,
    pub policy: TargetPolicy,
    /// Keep the files the suite created.
    pub keep: bool,
    pub command: String,
}

impl SuiteContext<'_> {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{0}")]
    Job(#[from] JobError),
    #[error("{0}")]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Config(String),
}

/// Where a suite's points run: a given file or device, or a file of the suite's own in a
/// directory (shared by all points, so it is laid out once, and removed at the end).
pub struct SuiteTarget {
    pub path: PathBuf,
    /// The suite creates this file (it did not exist before): remove it at the end.
    created: bool,
    keep: bool,
}

impl SuiteTarget {
    pub fn new(target: &Path, name: &str, keep: bool) -> SuiteTarget {
        let path =
            if target.is_dir() { target.join(format!("iolens-{name}.dat")) } else { target.to_path_buf() };
        // Anything at all at the path — a dangling link, a FIFO — is not the suite's to remove.
        let nothing_there =
            std::fs::symlink_metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        SuiteTarget { created: nothing_there, path, keep }
    }
}

impl Drop for SuiteTarget {
    fn drop(&mut self) {
        if self.created && !self.keep {
            // Only the regular file the registry says iolens made; never a link or another file.
            let _ = iolens_engine::ownership::remove_owned_file(&self.path);
        }
    }
}

/// Runs one point of a suite. Files stay between points (the suite removes its own at the end).
pub fn run_point(flags: &FlagWorkload, ctx: &SuiteContext) -> Result<RunResult, SuiteError> {
    let job = flags.to_job()?;
    let opts = RunOptions {
        policy: ctx.policy,
        keep: true,
        scratch: !ctx.keep,
        stop: Arc::clone(&ctx.stop),
        command: ctx.command.clone(),
        ..RunOptions::default()
    };
    Ok(run_job(&job, &opts, ctx.observer, &LocalBarrier)?)
}

/// Share of `peak` at which a curve counts as having reached it.
pub const REACHED: f64 = 0.9;
