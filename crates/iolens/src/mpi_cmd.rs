//! `mpirun -np N iolens run …`: one job over N ranks, one result (feature `mpi`).
//!
//! Order of the collective steps, the same on every rank: clock ping-pong, the run (its phases
//! separated by MPI barriers), clock ping-pong again, every rank's report to rank 0, every
//! rank's busy periods to rank 0 in chunks. Rank 0 prints the one table and writes the one JSON;
//! the other ranks print nothing to stdout and write no result. An error on any rank before
//! the results are combined ends the whole job (`MPI_Abort`), naming the rank and its host.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{run_job_detailed, Layout, Placement, RunOptions, TargetPolicy};
use iolens_mpi::clock::ClockCorrection;
use iolens_mpi::combine::{combine, Gathered};
use iolens_mpi::wire::{RankReport, RawTotals};
use iolens_mpi::world::World;
use iolens_record::busy::read_period_log;
use iolens_record::Interval;
use iolens_workload::load_job;

use crate::cli::RunArgs;
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
    a: &'a RunArgs,
    command: &'a str,
}

impl Rank<'_> {
    /// Reports an error of this rank and ends every rank of the job. Rank 0 also writes the
    /// error as the JSON result when one was asked for; alone, nothing needs aborting.
    fn fatal(&self, message: &str, interrupted: bool, code: u8) -> u8 {
        let w = self.world;
        let message = format!("rank {} on {}: {message}", w.rank(), w.host());
        if w.rank() == 0 {
            fail(&self.a.output, self.command, &message, interrupted, code);
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
    let me = Rank { world: &world, a: &a, command: &command };
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

    let before = world.clock_offsets();
    let progress = ProgressLine::new(a.output.quiet || rank != 0, &job.name);
    let detail = run_job_detailed(&job, &opts, &progress, &world);
    progress.finish();
    let detail = detail.map_err(|e| me.fatal(&e.to_string(), stop.load(Ordering::SeqCst), EXIT_FAILED))?;
    let after = world.clock_offsets();

    let own_error = detail.result.error.clone();
    let report = RankReport {
        rank,
        host: world.host().to_string(),
        raw: RawTotals::from_raw(&detail.total),
        files: detail.files.iter().map(|p| p.display().to_string()).collect(),
        result: serde_json::to_value(&detail.result).expect("a result always serializes"),
    };
    let reports = world.gather_reports(&report).map_err(|e| me.fatal(&e, false, EXIT_FAILED))?;
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
        // A non-zero rank: its part is with rank 0.
        return match own_error {
            Some(_) => Err(EXIT_FAILED),
            None => Ok(()),
        };
    };
    let layout_name =
        if a.shared_file { format!("shared-{}", layout.name()) } else { "file-per-process".into() };
    let combined = combine(Gathered {
        base: detail.result,
        reports: &reports,
        clocks: &clocks,
        union,
        block_unit: job.block_unit,
        layout: layout_name,
        mpi_library: world.library(),
    })
    .map_err(|e| me.fatal(&e, false, EXIT_FAILED))?;

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
