//! Standard experiments, each a series of core runs (`iolens_engine::run_job`) with its own
//! result (its JSON) and findings; their terminal tables are `iolens_report::text`'s, which
//! depends on this crate, not the other way round:
//!
//! - [`sweep`]: the `iops` program's experiment — block size doubling at fixed concurrency, with
//!   the knee of the IOPS curve and the size that reaches 90% of peak bandwidth;
//! - [`saturate`]: concurrency doubling until throughput stops growing, and the saturation point;
//! - [`write_modes`]: the same random writes measured naively, with the final fsync timed, and
//!   with O_DIRECT, to show why the naive figure is not a storage figure;
//! - [`beff_io`] and [`beff`]: the b_eff_io and b_eff benchmarks' definitions and results (their
//!   MPI measurements are `iolens_mpi`'s).
//!
//! A suite runs its points through a [`PointRunner`]: in this process ([`LocalRunner`]), or,
//! under `mpirun`, on every rank at once with one combined result per point (the runner lives
//! in the binary, which owns MPI). Every process then sees the same [`PointFigures`], so all of
//! them take the same decisions (next size, flat curve, stop) and stay in step.

pub mod beff;
pub mod beff_io;
pub mod doe;
pub mod quick;
pub mod repeat;
pub mod saturate;
pub mod sweep;
pub mod validate;
pub mod write_modes;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{run_job, EngineError, LocalBarrier, RunObserver, RunOptions, TargetPolicy};
use iolens_metrics::{LatencySummary, RunResult};
use iolens_workload::{FlagWorkload, Job, JobError};
use serde::{Deserialize, Serialize};

/// How a suite runs its points.
pub struct SuiteContext<'a> {
    pub stop: Arc<AtomicBool>,
    pub observer: &'a dyn RunObserver,
    pub policy: TargetPolicy,
    /// Keep the files the suite created.
    pub keep: bool,
    pub command: String,
    pub runner: &'a dyn PointRunner,
}

impl<'a> SuiteContext<'a> {
    /// How a suite runs its points: whether it may write over files it did not create, and
    /// whether it keeps the files it made. Every point starts from the device: the cache of a
    /// file found is dropped too (advice only; its data is read as it is).
    pub fn new(
        allow_overwrite: bool,
        keep: bool,
        stop: &Arc<AtomicBool>,
        observer: &'a dyn RunObserver,
        command: &str,
        runner: &'a dyn PointRunner,
    ) -> SuiteContext<'a> {
        SuiteContext {
            stop: Arc::clone(stop),
            observer,
            policy: TargetPolicy { allow_overwrite, keep_cache: false, drop_cache: true, sparse: false },
            keep,
            command: command.to_string(),
            runner,
        }
    }

    /// Whether the suite was asked to stop. Under MPI a stop on any rank counts for all (and
    /// every rank asks at the same place), so no rank runs a point the others skip.
    pub fn stopped(&self) -> bool {
        self.runner.any_stopped(self.stop.load(Ordering::SeqCst))
    }

    /// The processes behind every point, for the result: `None` alone.
    pub fn processes(&self) -> Option<Processes> {
        Processes::of(self.runner)
    }
}

/// Where a suite's points run. Alone: [`LocalRunner`]. Under MPI every rank calls
/// [`PointRunner::run`] for the same point at the same time, and every rank gets the combined
/// figures of all of them.
pub trait PointRunner {
    /// Runs one point (this process's part of it) and returns the point's figures: alone this
    /// process's, under MPI the aggregate over every rank, the same on every rank.
    fn run(
        &self,
        job: &Job,
        opts: &RunOptions,
        observer: &dyn RunObserver,
    ) -> Result<PointFigures, SuiteError>;
    /// This process's rank (0 alone).
    fn rank(&self) -> usize {
        0
    }
    /// The processes running each point (1 alone).
    fn ranks(&self) -> usize {
        1
    }
    /// The host of every rank, in rank order.
    fn hosts(&self) -> Vec<String> {
        Vec::new()
    }
    /// Replaces `values` on every process with rank 0's (a broadcast). Collective under MPI.
    fn share(&self, _values: &mut [u64]) {}
    /// Whether any process saw a stop request (`here`: this one did). Collective under MPI.
    fn any_stopped(&self, here: bool) -> bool {
        here
    }
    /// An error only this process hit (its own directory, its own file): under MPI the others
    /// would wait for it forever, so the runner ends them all (after saying why); alone it is
    /// just the suite's error.
    fn failed_alone(&self, message: String) -> SuiteError {
        SuiteError::Config(message)
    }
    /// b_eff_io of everything running the suite: alone its thread version; under MPI over
    /// MPI-IO across all ranks (collective), the result on rank 0, `None` on the others.
    fn beff_io(
        &self,
        cfg: &beff_io::BeffIoConfig,
        stop: &AtomicBool,
        observer: &dyn RunObserver,
    ) -> Result<Option<beff_io::BeffIoResult>, SuiteError> {
        beff_io::run(cfg, stop, &|s| s.show(observer)).map(Some)
    }
}

/// The runner of a suite in one process: each point is one `run_job`.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalRunner;

impl PointRunner for LocalRunner {
    fn run(
        &self,
        job: &Job,
        opts: &RunOptions,
        observer: &dyn RunObserver,
    ) -> Result<PointFigures, SuiteError> {
        Ok(PointFigures::of(&run_job(job, opts, observer, &LocalBarrier)?))
    }
}

/// The ranks of a suite run under MPI, for its JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Processes {
    pub ranks: usize,
    /// Distinct hosts, in rank order of first appearance.
    pub hosts: Vec<String>,
}

impl Processes {
    /// The processes behind `runner`'s points: `None` alone.
    pub fn of(runner: &dyn PointRunner) -> Option<Processes> {
        (runner.ranks() > 1).then(|| {
            let mut hosts: Vec<String> = Vec::new();
            for h in runner.hosts() {
                if !hosts.contains(&h) {
                    hosts.push(h);
                }
            }
            Processes { ranks: runner.ranks(), hosts }
        })
    }

    /// The line under a suite's table: who ran each point.
    pub fn line(&self, each: &str) -> String {
        format!(
            "ranks: {} on {} host(s) ({}); {each}; figures are the aggregate over all ranks, \
             each rank's part is in the JSON (per_rank)\n",
            self.ranks,
            self.hosts.len(),
            self.hosts.join(", ")
        )
    }
}

/// One rank's part of a point under MPI.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankShare {
    pub rank: usize,
    pub host: String,
    pub files: Vec<String>,
    pub ops: u64,
    pub bytes: u64,
    /// The rank's own ops per second of its own window.
    pub iops: f64,
    pub bw_bytes_s: f64,
    /// The union of the rank's own agents' in-flight intervals.
    pub busy_s: f64,
}

/// What a suite reads of one point's result: the aggregate figures (over every rank under
/// MPI), the device's, the warnings and the error. It crosses processes, so every rank of a
/// suite decides on the same numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PointFigures {
    pub ops: u64,
    pub bytes: u64,
    pub moved_bytes: u64,
    pub wall_s: f64,
    pub iops: f64,
    pub bw_bytes_s: f64,
    pub bps: f64,
    pub arpt_s: f64,
    pub fsync_s: f64,
    pub close_s: f64,
    pub lat_ns: LatencySummary,
    pub device_util: Option<f64>,
    pub device_write_bytes: Option<u64>,
    /// The run's warnings, each code once (ranks and agents repeat them; the first message is
    /// kept).
    pub warnings: Vec<PointWarning>,
    pub error: Option<String>,
    pub interrupted: bool,
    /// Each rank's part under MPI (empty alone); their ops and bytes add up to the aggregate's.
    pub per_rank: Vec<RankShare>,
}

impl PointFigures {
    /// The figures of one run (alone), or of the combined run of all ranks (with `per_rank`
    /// added by the MPI runner).
    pub fn of(r: &RunResult) -> PointFigures {
        let f = &r.aggregate;
        PointFigures {
            ops: f.ops,
            bytes: f.bytes,
            moved_bytes: f.moved_bytes,
            wall_s: f.wall_s,
            iops: f.iops,
            bw_bytes_s: f.bw_bytes_s,
            bps: f.bps,
            arpt_s: f.arpt_s,
            fsync_s: f.fsync_s,
            close_s: f.close_s,
            lat_ns: f.lat_ns.summary,
            device_util: r.device.as_ref().map(|d| d.util),
            device_write_bytes: r.device.as_ref().map(|d| d.write_bytes),
            warnings: r.warnings.iter().fold(Vec::new(), |mut kept: Vec<PointWarning>, w| {
                if !kept.iter().any(|k| k.code == w.code.as_str()) {
                    kept.push(PointWarning::new(w.code.as_str(), &w.message));
                }
                kept
            }),
            error: r.error.clone(),
            interrupted: r.interrupted,
            per_rank: Vec::new(),
        }
    }
}

/// A warning of one point of a suite: its code and the run's own message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointWarning {
    pub code: String,
    pub message: String,
}

impl PointWarning {
    /// A warning with `message`, or, when that is empty, the code's description.
    pub fn new(code: &str, message: &str) -> PointWarning {
        let message = match (message.trim(), iolens_metrics::WarningCode::from_code(code)) {
            ("", Some(known)) => known.describe(),
            ("", None) => code.to_string(),
            (given, _) => given.to_string(),
        };
        PointWarning { code: code.to_string(), message }
    }

    /// The warning as an envelope holds it, its message prefixed by where it arose (`at`, e.g.
    /// "sweep 1 MiB").
    pub fn notice(&self, at: &str) -> iolens_output::contract::Notice {
        iolens_output::contract::Notice::new(&self.code, format!("{at}: {}", self.message))
    }
}

/// A point's warnings as the JSON of the point lists them: their codes (the messages are in the
/// envelope's `warnings`, named by the point).
pub fn warning_codes<S: serde::Serializer>(warnings: &[PointWarning], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(warnings.iter().map(|w| &w.code))
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
    /// The suite's file `iolens-NAME.dat` in a directory target, or the target itself. Under
    /// MPI each rank has its own file, `iolens-NAME-rRANK.dat` (file per process), and a target
    /// that is not a directory is refused: every rank would use the same file as its own.
    pub fn new(target: &Path, name: &str, ctx: &SuiteContext) -> Result<SuiteTarget, SuiteError> {
        let (rank, ranks) = (ctx.runner.rank(), ctx.runner.ranks());
        // A mistyped path is not made into a new file to measure.
        if std::fs::metadata(target).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
            return Err(ctx.runner.failed_alone(format!(
                "{} does not exist: a suite's target must be an existing directory, file or block device",
                target.display()
            )));
        }
        let path = match (target.is_dir(), ranks > 1) {
            (true, false) => target.join(format!("iolens-{name}.dat")),
            (true, true) => target.join(format!("iolens-{name}-r{rank}.dat")),
            (false, false) => target.to_path_buf(),
            (false, true) => {
                return Err(ctx.runner.failed_alone(format!(
                    "{} is not a directory, so all {ranks} ranks would use it as their own file; \
                     give a directory (each rank gets its own file in it)",
                    target.display()
                )))
            }
        };
        // Anything at all at the path — a dangling link, a FIFO — is not the suite's to remove.
        let nothing_there =
            std::fs::symlink_metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        Ok(SuiteTarget { created: nothing_there, path, keep: ctx.keep })
    }
}

impl Drop for SuiteTarget {
    fn drop(&mut self) {
        if self.created && !self.keep {
            // Only the regular file the registry says iolens made; never a link or another file.
            let _ = iolens_ownership::remove_owned_file(&self.path);
        }
    }
}

/// Runs one point of a suite through the context's runner. Files stay between points (the
/// suite removes its own at the end).
pub fn run_point(flags: &FlagWorkload, ctx: &SuiteContext) -> Result<PointFigures, SuiteError> {
    let job = flags.to_job()?;
    let opts = RunOptions {
        policy: ctx.policy,
        keep: true,
        scratch: !ctx.keep,
        stop: Arc::clone(&ctx.stop),
        command: ctx.command.clone(),
        ..RunOptions::default()
    };
    ctx.runner.run(&job, &opts, ctx.observer)
}

/// Share of `peak` at which a curve counts as having reached it.
pub const REACHED: f64 = 0.9;

/// What a suite's target may be, for the message when it is missing.
pub const SUITE_TARGET: &str =
    "a suite's target must be an existing directory (the suite makes its own file in it), file or block device";
/// What a suite that works in a directory of its own needs.
pub const SUITE_DIR: &str = "this suite works in a directory of its own inside an existing directory";

/// A suite's target must exist: a mistyped path is not made into a new file to measure (nor a
/// directory). `what`: what the target may be. The message names the path, with a hint.
pub fn existing_target(flag: &str, path: &Path, what: &str) -> Result<(), String> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "{flag}{} does not exist: {what}\n  hint: check the path; to measure a new directory, create it first \
             (mkdir -p {})",
            path.display(),
            path.display()
        )),
        Err(e) => Err(format!("{flag}{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::saturate::{saturate, SaturateConfig};

    /// Rank 1 of 4 on two hosts, without MPI: each point's aggregate IO/s follows a device model
    /// that saturates at 16 requests in flight over all ranks (1000 IO/s per request).
    struct ModelledRanks {
        points: RefCell<Vec<(std::path::PathBuf, u32)>>,
    }

    impl PointRunner for ModelledRanks {
        fn run(&self, job: &Job, _: &RunOptions, _: &dyn RunObserver) -> Result<PointFigures, SuiteError> {
            let in_flight: u32 = job.agents.iter().map(|a| a.queue_depth).sum();
            self.points.borrow_mut().push((job.agents[0].target.clone(), in_flight));
            let total = in_flight * self.ranks() as u32;
            let iops = 1000.0 * f64::from(total.min(16));
            let per_rank = (0..self.ranks())
                .map(|rank| RankShare {
                    rank,
                    ops: 10,
                    bytes: 40960,
                    iops: iops / 4.0,
                    ..RankShare::default()
                })
                .collect();
            let warnings = vec![PointWarning::new("few_ops", "only 40 operations")];
            Ok(PointFigures {
                iops,
                ops: 40,
                bytes: 4 * 40960,
                per_rank,
                warnings,
                ..PointFigures::default()
            })
        }
        fn rank(&self) -> usize {
            1
        }
        fn ranks(&self) -> usize {
            4
        }
        fn hosts(&self) -> Vec<String> {
            ["a", "a", "b", "b"].map(String::from).to_vec()
        }
    }

    fn context<'a>(runner: &'a dyn PointRunner) -> SuiteContext<'a> {
        SuiteContext {
            stop: Arc::default(),
            observer: &(),
            policy: TargetPolicy::default(),
            keep: false,
            command: "test".into(),
            runner,
        }
    }

    #[test]
    fn saturate_over_ranks_grows_ranks_times_requests_and_counts_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let runner = ModelledRanks { points: RefCell::default() };
        let mut cfg = SaturateConfig::new(dir.path().to_path_buf());
        cfg.loads = vec!["randread".into()];
        cfg.max_concurrency = 256;
        cfg.cores_per_node = Some(6);
        let r = saturate(&cfg, &context(&runner)).unwrap();
        let ran = runner.points.borrow();
        // This rank's own file carries its rank; every point asks it for c requests in flight.
        assert!(ran.iter().all(|(t, _)| t == &dir.path().join("iolens-saturate-r1.dat")), "{ran:?}");
        assert_eq!(ran.iter().map(|(_, c)| *c).collect::<Vec<_>>(), vec![1, 2, 4, 8, 16]);
        let curve = &r.curves[0];
        let totals: Vec<u32> = curve.points.iter().map(|p| p.concurrency).collect();
        assert_eq!(totals, vec![4, 8, 16, 32, 64], "ranks × per rank");
        assert_eq!(curve.points[1].per_rank_concurrency, Some(2));
        assert_eq!(curve.points[1].per_rank.len(), 4);
        assert_eq!(curve.saturation_concurrency, Some(16));
        assert_eq!(curve.nodes_to_saturate, Some(3), "16 in flight on 6-core nodes");
        let p = r.processes.as_ref().unwrap();
        assert_eq!((p.ranks, p.hosts.clone()), (4, vec!["a".to_string(), "b".to_string()]));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["ranks"], 4);
        assert_eq!(json["curves"][0]["nodes_to_saturate"], 3);
        assert_eq!(
            r.cores_per_node,
            Some(6),
            "the terminal says: 3 node(s) of 6 cores (iolens_report::text::saturate)"
        );
        assert_eq!(json["curves"][0]["points"][1]["warning_codes"], serde_json::json!(["few_ops"]));
        use iolens_output::contract::Body;
        let told = r.warnings();
        assert_eq!(told.len(), 5, "one per point: {told:?}");
        assert_eq!(
            told[1],
            iolens_output::contract::Notice::new("few_ops", "randread at 8 in flight: only 40 operations")
        );
    }

    #[test]
    fn every_suite_says_what_it_ran_with_its_defaults() {
        let d = std::path::PathBuf::from("/d");
        let jobs = [
            crate::sweep::SweepConfig::new(d.clone()).job(),
            SaturateConfig::new(d.clone()).job(),
            crate::write_modes::WriteModesConfig::new(d.clone()).job(),
            crate::beff_io::BeffIoConfig::new(d.clone(), 1 << 30).job(),
            crate::validate::ValidateConfig::new(d.clone()).job(),
        ];
        for (job, suite) in jobs.iter().zip(["sweep", "saturate", "write-modes", "beff-io", "validate"]) {
            assert_eq!(job["suite"], suite, "{job}");
            for key in job.as_object().unwrap().keys() {
                assert!(!key.contains('.'), "{job}");
            }
        }
        assert_eq!(jobs[0]["max_bs_bytes"], 16 << 20);
        assert_eq!(jobs[0]["time_per_point_s"], 2.0);
        assert_eq!(jobs[1]["rw"], serde_json::json!(["randread", "randwrite"]));
        assert_eq!(jobs[1]["concurrency_by"], "io_uring");
        assert_eq!(jobs[2]["modes"], serde_json::json!(["naive", "fsync", "direct"]));
        assert_eq!(jobs[3]["time_s"], 900.0);
        assert_eq!(jobs[3]["mpart_bytes"], crate::beff_io::BeffIoConfig::new(d, 1 << 30).mpart);
        assert_eq!(jobs[4]["sets"], serde_json::json!([1, 2, 3, 4]));
    }

    #[test]
    fn a_point_keeps_each_warning_once_with_the_runs_own_message() {
        use iolens_metrics::{Warning, WarningCode};
        let run = RunResult {
            warnings: vec![
                Warning::new(
                    WarningCode::FewOps,
                    "only 12 operations: percentiles above p99 are not meaningful",
                ),
                Warning::new(WarningCode::FewOps, "only 3 operations (rank 1)"),
                Warning::new(WarningCode::ShortRun, ""),
            ],
            ..RunResult::default()
        };
        let f = PointFigures::of(&run);
        assert_eq!(
            f.warnings,
            vec![
                PointWarning {
                    code: "few_ops".into(),
                    message: "only 12 operations: percentiles above p99 are not meaningful".into()
                },
                PointWarning { code: "short_run".into(), message: WarningCode::ShortRun.describe() },
            ]
        );
        // Rank 0 sends the figures to every rank: the messages cross too.
        let back: PointFigures = serde_json::from_slice(&serde_json::to_vec(&f).unwrap()).unwrap();
        assert_eq!(back, f);
        assert_eq!(
            f.warnings[0].notice("sweep 1 MiB").message,
            "sweep 1 MiB: only 12 operations: percentiles above p99 are not meaningful"
        );
    }

    #[test]
    fn the_cap_is_on_the_total_concurrency() {
        let dir = tempfile::tempdir().unwrap();
        let runner = ModelledRanks { points: RefCell::default() };
        let mut cfg = SaturateConfig::new(dir.path().to_path_buf());
        cfg.loads = vec!["randread".into()];
        cfg.max_concurrency = 8;
        let r = saturate(&cfg, &context(&runner)).unwrap();
        let totals: Vec<u32> = r.curves[0].points.iter().map(|p| p.concurrency).collect();
        assert_eq!(totals, vec![4, 8]);
        cfg.max_concurrency = 2;
        let r = saturate(&cfg, &context(&runner)).unwrap();
        assert_eq!(r.curves[0].points.len(), 1, "the first point runs whatever the cap");
    }

    #[test]
    fn under_mpi_a_file_target_is_refused_and_a_directory_gets_a_file_per_rank() {
        let dir = tempfile::tempdir().unwrap();
        let runner = ModelledRanks { points: RefCell::default() };
        let ctx = context(&runner);
        let t = SuiteTarget::new(dir.path(), "sweep", &ctx).unwrap();
        assert_eq!(t.path, dir.path().join("iolens-sweep-r1.dat"));
        let file = dir.path().join("data");
        std::fs::write(&file, b"x").unwrap();
        let e = SuiteTarget::new(&file, "sweep", &ctx).err().unwrap().to_string();
        assert!(e.contains("is not a directory") && e.contains("4 ranks"), "{e}");
        // Alone, a file target is the suite's target.
        let alone = context(&LocalRunner);
        assert_eq!(SuiteTarget::new(&file, "sweep", &alone).unwrap().path, file);
    }
}
