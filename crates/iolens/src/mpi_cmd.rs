//! `mpirun -np N iolens run …`: one job over N ranks, one result (feature `mpi`); and the
//! suites (`sweep`, `saturate`, `write-modes`, `quick`), each of whose points is such a job.
//!
//! Order of the collective steps of one job ([`run_across`]), the same on every rank: clock
//! ping-pong, the run (its phases separated by MPI barriers), clock ping-pong again, every
//! rank's report to rank 0, every rank's busy periods to rank 0 in chunks. Rank 0 prints the one
//! table and writes the one JSON; the other ranks print nothing to stdout and write no result.
//! An error on any rank before the results are combined ends the whole job (`MPI_Abort`),
//! naming the rank and its host. In a suite, rank 0 also sends each point's combined figures to
//! every rank, so all ranks take the same next step.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{
    run_job_detailed, Layout, PhaseBarrier, Placement, RunObserver, RunOptions, TargetPolicy,
};
use iolens_mpi::clock::ClockCorrection;
use iolens_mpi::combine::{combine, Gathered, MpiRunResult};
use iolens_mpi::wire::{RankReport, RawTotals};
use iolens_mpi::world::World;
use iolens_record::busy::read_period_log;
use iolens_record::Interval;
use iolens_suites::{PointFigures, PointRunner, RankShare, SuiteError};
use iolens_workload::{load_job, Job};

use crate::cli::{OutputArgs, RunArgs};
use crate::output::{check_write, fail, write_json_or_warn, ProgressLine, EXIT_FAILED, EXIT_USAGE};
use crate::run_cmd::job_from_flags;

/// `path` with `.rN` before its extension: each rank's own trace or busy log.
fn rank_path(path: &Path, rank: usize) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.r{rank}.{}", ext.to_string_lossy()),
        None => format!("{stem}.r{rank}"),
    };
    path.with_file_name(name)
}

struct Rank<'a> {
    world: &'a World,
    out: &'a OutputArgs,
    command: &'a str,
}

impl Rank<'_> {
    /// Reports an error of this rank and ends every rank of the job. Rank 0 also writes the
    /// error as the JSON result when one was asked for; alone, nothing needs aborting.
    fn fatal(&self, message: &str, interrupted: bool, code: u8) -> u8 {
        let w = self.world;
        let message = format!("rank {} on {}: {message}", w.rank(), w.host());
        if w.rank() == 0 {
            fail(self.out, self.command, &message, interrupted, code);
        } else {
            errln!("iolens: error: {message}");
        }
        if w.size() > 1 {
            errln!("iolens: rank {} on {} stops all {} ranks (MPI_Abort)", w.rank(), w.host(), w.size());
            w.abort(code as i32);
        }
        code
    }
}

pub fn run(a: RunArgs, stop: &Arc<AtomicBool>, command: String) -> Result<(), u8> {
    let world =
        World::init().map_err(|e| fail(&a.output, &command, &format!("MPI: {e}"), false, EXIT_FAILED))?;
    let me = Rank { world: &world, out: &a.output, command: &command };
    let (rank, size) = (world.rank(), world.size());
    if rank != 0 {
        // Nothing of a non-zero rank goes to stdout: rank 0 speaks for the job.
        crate::output::text_to_stderr();
    }
    let layout =
        Layout::parse(&a.layout).map_err(|e| me.fatal(&format!("--layout: {e}"), false, EXIT_USAGE))?;
    if a.repeat != 1 {
        return Err(me.fatal(
            "--repeat is not supported under MPI yet; run mpirun once per repetition",
            false,
            EXIT_USAGE,
        ));
    }
    let job = match &a.job {
        Some(path) => load_job(path).map_err(|e| e.to_string()),
        None => job_from_flags(&a),
    };
    let job = job.map_err(|e| me.fatal(&e, false, EXIT_USAGE))?;

    let scratch = tempfile::Builder::new().prefix("iolens-mpi-").tempdir().map_err(|e| {
        me.fatal(&format!("cannot create a directory for the busy-period log: {e}"), false, EXIT_FAILED)
    })?;
    let busy_log = a.busy_log.as_ref().map_or_else(|| scratch.path().join("busy"), |p| rank_path(p, rank));
    let opts = RunOptions {
        policy: TargetPolicy { allow_overwrite: a.allow_overwrite, keep_cache: a.keep_cache, sparse: false },
        keep: a.output.keep,
        scratch: false,
        trace: a.trace.as_ref().map(|p| rank_path(p, rank)),
        busy_log: Some(busy_log.clone()),
        stop: Arc::clone(stop),
        command: command.clone(),
        placement: Some(Placement { rank, ranks: size, shared_file: a.shared_file, layout }),
    };

    let progress = ProgressLine::new(a.output.quiet || rank != 0, &job.name);
    let layout_name =
        if a.shared_file { format!("shared-{}", layout.name()) } else { "file-per-process".into() };
    let outcome = run_across(&world, &job, &opts, &progress, layout_name);
    progress.finish();
    let outcome = outcome.map_err(|(message, interrupted)| me.fatal(&message, interrupted, EXIT_FAILED))?;
    let Some(combined) = outcome.combined else {
        // A non-zero rank: its part is with rank 0.
        return match outcome.own_error {
            Some(_) => Err(EXIT_FAILED),
            None => Ok(()),
        };
    };
    say!("{}", iolens_report::render_run(&combined.run));
    sayln!(
        "ranks: {} on {} host(s) ({}); layout {}; clock offsets within ±{:.1} µs; {}",
        combined.ranks,
        combined.hosts.len(),
        combined.hosts.join(", "),
        combined.layout,
        combined.clock_uncertainty_ns as f64 / 1e3,
        combined.mpi_library
    );
    if let Some(path) = &a.output.json {
        write_json_or_warn(path, &combined);
    }
    if let Some(path) = &a.output.csv {
        check_write(path, iolens_report::write_csv(path, &combined.run));
    }
    drop(scratch);
    match &combined.run.error {
        Some(e) => {
            errln!("iolens: error: {e}");
            Err(EXIT_FAILED)
        }
        None => Ok(()),
    }
}

/// What one rank has after [`run_across`].
struct RankOutcome {
    /// Rank 0: the combined result of all ranks; the others `None`.
    combined: Option<MpiRunResult>,
    /// This rank's own error during the measured phase.
    own_error: Option<String>,
}

/// One job run by every rank at once as one measurement. Collective: every rank calls it with
/// the same job, `opts.busy_log` set to a file of its own. An error of this rank before the
/// results are combined comes back as (message, interrupted): the caller ends every rank.
fn run_across(
    world: &World,
    job: &Job,
    opts: &RunOptions,
    observer: &dyn RunObserver,
    layout: String,
) -> Result<RankOutcome, (String, bool)> {
    let rank = world.rank();
    let busy_log = opts.busy_log.clone().expect("every rank logs its busy periods");
    let before = world.clock_offsets();
    let detail = run_job_detailed(job, opts, observer, world)
        .map_err(|e| (e.to_string(), opts.stop.load(Ordering::SeqCst)))?;
    let after = world.clock_offsets();

    let own_error = detail.result.error.clone();
    let report = RankReport {
        rank,
        host: world.host().to_string(),
        raw: RawTotals::from_raw(&detail.total),
        files: detail.files.iter().map(|p| p.display().to_string()).collect(),
        result: serde_json::to_value(&detail.result).expect("a result always serializes"),
    };
    let reports = world.gather_reports(&report).map_err(|e| (e, false))?;
    let periods: Box<dyn Iterator<Item = Interval>> = match read_period_log(&busy_log) {
        Ok(p) => Box::new(p),
        Err(e) => {
            // Still take part in the merge (with nothing), or every rank would wait forever.
            errln!("iolens: warning: rank {rank}: cannot read its busy periods {}: {e}", busy_log.display());
            Box::new(std::iter::empty())
        }
    };
    let clocks: Vec<ClockCorrection> = before
        .iter()
        .zip(&after)
        .enumerate()
        .map(|(r, (b, a))| if r == 0 { ClockCorrection::identity() } else { ClockCorrection::new(*b, *a) })
        .collect();
    let corrections: Vec<Box<dyn Fn(u64) -> u64 + '_>> =
        clocks.iter().map(|c| Box::new(move |t| c.to_root(t)) as Box<dyn Fn(u64) -> u64>).collect();
    let refs: Vec<&dyn Fn(u64) -> u64> = corrections.iter().map(|f| f.as_ref()).collect();
    let union = world.busy_union(periods, &refs);

    let (Some(reports), Some(union)) = (reports, union) else {
        return Ok(RankOutcome { combined: None, own_error });
    };
    let combined = combine(Gathered {
        base: detail.result,
        reports: &reports,
        clocks: &clocks,
        union,
        block_unit: job.block_unit,
        layout,
        mpi_library: world.library(),
    })
    .map_err(|e| (e, false))?;
    Ok(RankOutcome { combined: Some(combined), own_error })
}

/// A suite's figures of one point from the combined result: the aggregate, and each rank's part.
fn point_figures(combined: &MpiRunResult) -> PointFigures {
    let mut f = PointFigures::of(&combined.run);
    f.per_rank = combined
        .per_rank
        .iter()
        .map(|r| RankShare {
            rank: r.rank,
            host: r.host.clone(),
            files: r.files.clone(),
            ops: r.figures.ops,
            bytes: r.figures.bytes,
            iops: r.figures.iops,
            mib_s: r.figures.bw_bytes_s / (1u64 << 20) as f64,
            busy_s: r.figures.busy_s,
        })
        .collect();
    f
}

/// Runs a suite's points across all ranks: each point is one [`run_across`], its figures sent
/// from rank 0 to every rank. The suite gives every rank its own files (file per process).
struct MpiRunner<'a> {
    me: &'a Rank<'a>,
    hosts: Vec<String>,
    /// Where this rank's busy-period log of each point goes.
    scratch: tempfile::TempDir,
}

impl MpiRunner<'_> {
    /// An error of this rank alone: every rank ends (after rank 0 wrote the JSON error).
    fn end_all(&self, message: &str, interrupted: bool) -> SuiteError {
        if self.me.world.size() > 1 {
            self.me.fatal(message, interrupted, EXIT_FAILED);
        }
        SuiteError::Config(message.to_string())
    }
}

impl PointRunner for MpiRunner<'_> {
    fn run(
        &self,
        job: &Job,
        opts: &RunOptions,
        observer: &dyn RunObserver,
    ) -> Result<PointFigures, SuiteError> {
        let world = self.me.world;
        let opts = RunOptions {
            busy_log: Some(self.scratch.path().join("busy")),
            // The suite's targets already carry the rank.
            placement: None,
            ..opts.clone()
        };
        let outcome = run_across(world, job, &opts, observer, "file-per-process".into())
            .map_err(|(message, interrupted)| self.end_all(&message, interrupted))?;
        let mut bytes = match &outcome.combined {
            Some(c) => serde_json::to_vec(&point_figures(c)).expect("figures serialize"),
            None => Vec::new(),
        };
        world.broadcast_bytes(&mut bytes);
        serde_json::from_slice(&bytes)
            .map_err(|e| self.end_all(&format!("rank 0's figures of the point are unreadable: {e}"), false))
    }
    fn rank(&self) -> usize {
        self.me.world.rank()
    }
    fn ranks(&self) -> usize {
        self.me.world.size()
    }
    fn hosts(&self) -> Vec<String> {
        self.hosts.clone()
    }
    fn share(&self, values: &mut [u64]) {
        PhaseBarrier::share(self.me.world, values);
    }
    fn any_stopped(&self, here: bool) -> bool {
        self.me.world.any(here)
    }
    fn failed_alone(&self, message: String) -> SuiteError {
        self.end_all(&message, false)
    }
}

/// `mpirun -np N iolens SUITE …`: the suite runs on every rank, each point across all ranks
/// (`body` gets the runner). Only rank 0 prints and writes results (`json`: its error report).
pub fn suite(
    json: Option<PathBuf>,
    command: &str,
    body: impl FnOnce(&dyn PointRunner) -> Result<(), u8>,
) -> Result<(), u8> {
    let out = OutputArgs { json, csv: None, keep: false, quiet: true };
    let world = World::init().map_err(|e| fail(&out, command, &format!("MPI: {e}"), false, EXIT_FAILED))?;
    if world.rank() != 0 {
        crate::output::text_to_stderr();
    }
    let me = Rank { world: &world, out: &out, command };
    let hosts = world.hosts().map_err(|e| me.fatal(&e, false, EXIT_FAILED))?;
    let scratch = tempfile::Builder::new().prefix("iolens-mpi-").tempdir().map_err(|e| {
        me.fatal(&format!("cannot create a directory for the busy-period log: {e}"), false, EXIT_FAILED)
    })?;
    let runner = MpiRunner { me: &me, hosts, scratch };
    body(&runner)
}
