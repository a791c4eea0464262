//! `mpirun -np N iolens run …`: flags into one job over N ranks (feature `mpi`), one result,
//! printed and written by rank 0; `--repeat K` runs it K times, the ranks agreeing before each
//! repetition whether to go on. The collective steps are [`iolens_mpi::across`]'s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{Layout, Placement, RunOptions};
use iolens_mpi::across::{check_reorder, rank_path, render_combined, run_across, Rank, RankOutcome};
use iolens_mpi::combine::MpiRunResult;
use iolens_mpi::world::World;
use iolens_ownership::ScratchDir;
use iolens_workload::{load_job, Job};

use crate::cli::RunArgs;
use crate::output::{check_write, fail, write_result, ProgressLine, EXIT_FAILED, EXIT_USAGE};
use crate::run_cmd::{job_from_flags, publish_repeated};
use iolens_suites::repeat::Repetitions;

pub fn run(a: RunArgs, stop: &Arc<AtomicBool>, command: String) -> Result<(), u8> {
    let world = World::init().map_err(|e| fail(&a.output, &format!("MPI: {e}"), false, EXIT_FAILED))?;
    let me = Rank { world: &world, json: a.output.json.as_deref() };
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
        trace: a.trace.as_ref().map(|p| rank_path(p, rank)),
        busy_log: Some(busy_log),
        placement: Some(Placement { rank, ranks: size, shared_file: a.shared_file, layout, reorder }),
        ..crate::run_cmd::run_options(&a, stop, &command)
    };
    let layout_name =
        if a.shared_file { format!("shared-{}", layout.name()) } else { "file-per-process".into() };
    let one = OneRun { me: &me, a: &a, job: &job, opts: &opts, layout: &layout_name, reorder };
    let outcome = if a.repeat > 1 { repeated(&one) } else { single(&one) };
    drop(scratch);
    outcome
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
        write_result(path, &combined, Some(iolens_workload::resolved_job(one.job)));
    }
    crate::run_cmd::outcome(combined.run.error.clone(), combined.run.verify_error())
}

/// `--repeat K`: K combined runs, summarized by rank 0 as `run --repeat` does alone. Whether
/// to run the next repetition is agreed by all ranks, so none waits for the others forever.
fn repeated(one: &OneRun<'_>) -> Result<(), u8> {
    let (a, world, stop) = (one.a, one.me.world, &one.opts.stop);
    let mut done: Repetitions<MpiRunResult> = Repetitions::default();
    let mut failed = false;
    for i in 1..=a.repeat {
        if world.any(failed || stop.load(Ordering::SeqCst)) {
            break;
        }
        let outcome = one.run(&format!("{} {i}/{}", one.job.name, a.repeat))?;
        failed = outcome.own_error.is_some();
        if let Some(combined) = outcome.combined {
            // Rank 0's verdict on the combined run ends the series for every rank (next `any`).
            failed |= !done.record(i, Ok(combined), |c| &c.run, stop.load(Ordering::SeqCst));
        }
    }
    if world.rank() != 0 {
        return if failed { Err(EXIT_FAILED) } else { Ok(()) };
    }
    let aggregates: Vec<_> = done.runs.iter().map(|r| r.run.clone()).collect();
    let last_table = done.runs.last().map(render_combined);
    publish_repeated(a, one.job, &done, &aggregates, last_table, stop.load(Ordering::SeqCst))
}
