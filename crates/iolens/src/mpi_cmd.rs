//! `mpirun -np N iolens run …`: one job over N ranks, one result (feature `mpi`); and the
//! suites (`sweep`, `saturate`, `write-modes`, `quick`), each of whose points is such a job.
//!
//! Order of the collective steps of one job ([`run_across`]), the same on every rank: clock
//! ping-pong, the run (its phases separated by MPI barriers), clock ping-pong again, every
//! rank's report to rank 0, every rank's busy periods to rank 0 in chunks. Rank 0 prints the one
//! table and writes the one JSON; the other ranks print nothing to stdout and write no result.
//! An error on any rank before the results are combined ends the whole job (`MPI_Abort`),
//! naming the rank and its host. `run --repeat K` does all of that K times, the ranks agreeing
//! before each repetition whether to go on. In a suite, rank 0 also sends each point's combined
//! figures to every rank, so all ranks take the same next step. Before any of it, the ranks
//! compare what they were given ([`crate::same_job`]): ranks given another job than rank 0 end
//! the launch on every rank, naming them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::ownership::ScratchDir;
use iolens_engine::{
    run_job_detailed, Layout, PhaseBarrier, Placement, RunObserver, RunOptions, TargetPolicy,
};
use iolens_mpi::clock::ClockCorrection;
use iolens_mpi::combine::{combine, Gathered, MpiRunResult};
use iolens_mpi::wire::{JobFingerprint, RankReport, RawTotals};
use iolens_mpi::world::World;
use iolens_record::busy::read_period_log;
use iolens_record::Interval;
use iolens_suites::{PointFigures, PointRunner, RankShare, SuiteError};
use iolens_workload::{load_job, Job, OpMix};

use crate::cli::{OutputArgs, RunArgs};
use crate::output::{check_write, fail, write_result, ProgressLine, EXIT_FAILED, EXIT_USAGE};
use crate::run_cmd::{job_from_flags, publish_repeated, verify_failed, Repetitions};

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
}

impl Rank<'_> {
    /// Collective, before anything runs: refuses on every rank a launch whose ranks were given
    /// different jobs (an MPMD launch of two job files, rank-dependent flags). Rank 0 reports
    /// it (and writes the JSON error); every rank ends with the usage exit code, no abort needed.
    fn same_job(&self, mine: &JobFingerprint) -> Result<(), u8> {
        let Err(message) = self.world.same_job(mine) else { return Ok(()) };
        if self.world.rank() == 0 {
            return Err(fail(self.out, &message, false, EXIT_USAGE));
        }
        Err(EXIT_USAGE)
    }

    /// Reports an error of this rank and ends every rank of the job. Rank 0 also writes the
    /// error as the JSON result when one was asked for; alone, nothing needs aborting.
    fn fatal(&self, message: &str, interrupted: bool, code: u8) -> u8 {
        let w = self.world;
        let message = format!("rank {} on {}: {message}", w.rank(), w.host());
        if w.rank() == 0 {
            fail(self.out, &message, interrupted, code);
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
    let world = World::init().map_err(|e| fail(&a.output, &format!("MPI: {e}"), false, EXIT_FAILED))?;
    let me = Rank { world: &world, out: &a.output };
    let (rank, size) = (world.rank(), world.size());
    if rank != 0 {
        // Nothing of a non-zero rank goes to stdout: rank 0 speaks for the job.
        crate::output::text_to_stderr();
    }
    let layout =
        Layout::parse(&a.layout).map_err(|e| me.fatal(&format!("--layout: {e}"), false, EXIT_USAGE))?;
    if a.repeat == 0 {
        return Err(me.fatal("--repeat: give at least 1", false, EXIT_USAGE));
    }
    if a.log_interval.is_some() || a.parquet.is_some() {
        let flag = if a.parquet.is_some() { "--parquet" } else { "--log-interval" };
        return Err(me.fatal(&format!("{flag}: not under MPI yet; use --json"), false, EXIT_USAGE));
    }
    let job = match &a.job {
        Some(path) => load_job(path).map_err(|e| e.to_string()),
        None => job_from_flags(&a),
    };
    let job = job.map_err(|e| me.fatal(&e, false, EXIT_USAGE))?;
    let reorder = check_reorder(&job, a.reorder_ranks, size).map_err(|e| me.fatal(&e, false, EXIT_USAGE))?;
    me.same_job(&crate::same_job::of_run(&job, &a))?;

    let scratch = ScratchDir::create(&std::env::temp_dir(), "iolens-mpi-", false).map_err(|e| {
        me.fatal(&format!("cannot create a directory for the busy-period log: {e}"), false, EXIT_FAILED)
    })?;
    let busy_log =
        a.busy_log.as_ref().map_or_else(|| scratch.path().join("iolens-busy"), |p| rank_path(p, rank));
    let opts = RunOptions {
        policy: TargetPolicy {
            allow_overwrite: a.allow_overwrite,
            keep_cache: a.keep_cache,
            drop_cache: a.drop_cache,
            sparse: false,
        },
        keep: a.output.keep,
        scratch: false,
        trace: a.trace.as_ref().map(|p| rank_path(p, rank)),
        busy_log: Some(busy_log),
        stop: Arc::clone(stop),
        command: command.clone(),
        placement: Some(Placement { rank, ranks: size, shared_file: a.shared_file, layout, reorder }),
        log_interval: None,
    };
    let layout_name =
        if a.shared_file { format!("shared-{}", layout.name()) } else { "file-per-process".into() };
    let one = OneRun { me: &me, a: &a, job: &job, opts: &opts, layout: &layout_name, reorder };
    let outcome = if a.repeat > 1 { repeated(&one) } else { single(&one) };
    drop(scratch);
    outcome
}

/// `--reorder-ranks N` as the placement's shift, refused where it would mean nothing.
fn check_reorder(job: &Job, reorder: Option<usize>, ranks: usize) -> Result<usize, String> {
    let Some(n) = reorder else { return Ok(0) };
    if n % ranks == 0 {
        return Err(format!(
            "--reorder-ranks {n} is a multiple of the {ranks} ranks: every rank would read its own data; give \
             a shift that is not (1 reads the next rank's data)"
        ));
    }
    if !job.agents.iter().any(|a| a.op == OpMix::Read) {
        return Err(format!(
            "--reorder-ranks {n}: no agent only reads, and only reading agents move to another rank's data; \
             write the data first (with --keep), then read it with --reorder-ranks"
        ));
    }
    Ok(n)
}

/// One job across the ranks, as each repetition of `run` runs it.
struct OneRun<'a> {
    me: &'a Rank<'a>,
    a: &'a RunArgs,
    job: &'a Job,
    opts: &'a RunOptions,
    layout: &'a str,
    reorder: usize,
}

impl OneRun<'_> {
    /// Runs the job on every rank and combines the results on rank 0. Collective.
    fn run(&self, label: &str) -> Result<RankOutcome, u8> {
        let rank = self.me.world.rank();
        let progress = ProgressLine::new(self.a.output.quiet || rank != 0, label);
        let outcome =
            run_across(self.me.world, self.job, self.opts, &progress, self.layout.into(), self.reorder);
        progress.finish();
        outcome.map_err(|(message, interrupted)| self.me.fatal(&message, interrupted, EXIT_FAILED))
    }
}

/// The table of a combined run and the line describing the ranks.
fn render_combined(combined: &MpiRunResult) -> String {
    let mut text = iolens_report::render_run(&combined.run);
    text.push_str(&format!(
        "ranks: {} on {} host(s) ({}); layout {}{}; clock offsets within ±{:.1} µs; {}\n",
        combined.ranks,
        combined.hosts.len(),
        combined.hosts.join(", "),
        combined.layout,
        match combined.reorder_ranks {
            0 => String::new(),
            n => format!("; readers read rank+{n}'s data"),
        },
        combined.clock_uncertainty_ns as f64 / 1e3,
        combined.mpi_library
    ));
    text
}

/// One combined run: rank 0 prints it and writes its JSON and CSV.
fn single(one: &OneRun<'_>) -> Result<(), u8> {
    let a = one.a;
    let outcome = one.run(&one.job.name)?;
    let Some(combined) = outcome.combined else {
        // A non-zero rank: its part is with rank 0.
        return if outcome.own_error.is_some() { Err(EXIT_FAILED) } else { Ok(()) };
    };
    say!("{}", render_combined(&combined));
    if let Some(path) = &a.output.csv {
        check_write(path, iolens_report::write_csv(path, &combined.run));
    }
    // Last: its `error` tells a file above that could not be written.
    if let Some(path) = &a.output.json {
        write_result(path, &combined, Some(crate::job_json::resolved_job(one.job)));
    }
    crate::run_cmd::outcome(combined.run.error.clone(), verify_failed(&combined.run))
}

/// `--repeat K`: K combined runs, summarized by rank 0 as `run --repeat` does alone. Whether
/// to run the next repetition is agreed by all ranks, so none waits for the others forever.
fn repeated(one: &OneRun<'_>) -> Result<(), u8> {
    let (a, world, stop) = (one.a, one.me.world, &one.opts.stop);
    let mut runs: Vec<MpiRunResult> = Vec::new();
    let (mut error, mut verify_error, mut failed) = (None, None, false);
    for i in 1..=a.repeat {
        if world.any(failed || stop.load(Ordering::SeqCst)) {
            break;
        }
        let outcome = one.run(&format!("{} {i}/{}", one.job.name, a.repeat))?;
        failed = outcome.own_error.is_some();
        let Some(combined) = outcome.combined else { continue };
        if let (None, Some(e)) = (&verify_error, verify_failed(&combined.run)) {
            verify_error = Some(format!("repetition {i}: {e}"));
        }
        match &combined.run.error {
            Some(e) => error = Some(format!("repetition {i}: {e}")),
            None if !stop.load(Ordering::SeqCst) => runs.push(combined),
            None => {}
        }
    }
    if world.rank() != 0 {
        return if failed { Err(EXIT_FAILED) } else { Ok(()) };
    }
    let done = Repetitions {
        runs: &runs,
        aggregates: runs.iter().map(|r| r.run.clone()).collect(),
        last_table: runs.last().map(render_combined),
        error,
        verify_error,
        interrupted: stop.load(Ordering::SeqCst),
    };
    publish_repeated(a, one.job, done)
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
    reorder_ranks: usize,
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
        result: crate::output::document_value(&detail.result),
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
        reorder_ranks,
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
            bw_bytes_s: r.figures.bw_bytes_s,
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
    scratch: ScratchDir,
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
            busy_log: Some(self.scratch.path().join("iolens-busy")),
            // The suite's targets already carry the rank.
            placement: None,
            ..opts.clone()
        };
        let outcome = run_across(world, job, &opts, observer, "file-per-process".into(), 0)
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
    fn beff_io(
        &self,
        cfg: &iolens_suites::beff_io::BeffIoConfig,
        stop: &AtomicBool,
        observer: &dyn iolens_engine::RunObserver,
    ) -> Result<Option<iolens_suites::beff_io::BeffIoResult>, SuiteError> {
        let fatal = |message: &str| -> std::convert::Infallible {
            let code = self.me.fatal(message, stop.load(Ordering::SeqCst), EXIT_FAILED);
            // Alone, nothing else waits for this process: it just ends.
            std::process::exit(code.into())
        };
        let on_step = |s: &iolens_suites::beff_io::BeffIoStep| s.show(observer);
        Ok(iolens_mpi::beff_io_mpi::run(self.me.world, cfg, &[], stop, &fatal, &on_step))
    }
}

/// `mpirun -np N iolens SUITE …`: the suite runs on every rank, each point across all ranks
/// (`body` gets the runner). Only rank 0 prints and writes results (`json`: its error report).
pub fn suite(
    json: Option<PathBuf>,
    fingerprint: &JobFingerprint,
    body: impl FnOnce(&dyn PointRunner) -> Result<(), u8>,
) -> Result<(), u8> {
    let out = OutputArgs { json, csv: None, keep: false, quiet: true };
    let world = World::init().map_err(|e| fail(&out, &format!("MPI: {e}"), false, EXIT_FAILED))?;
    if world.rank() != 0 {
        crate::output::text_to_stderr();
    }
    let me = Rank { world: &world, out: &out };
    me.same_job(fingerprint)?;
    let hosts = world.hosts().map_err(|e| me.fatal(&e, false, EXIT_FAILED))?;
    let scratch = ScratchDir::create(&std::env::temp_dir(), "iolens-mpi-", false).map_err(|e| {
        me.fatal(&format!("cannot create a directory for the busy-period log: {e}"), false, EXIT_FAILED)
    })?;
    let runner = MpiRunner { me: &me, hosts, scratch };
    body(&runner)
}
