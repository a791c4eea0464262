//! `iolens run`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{run_job, LocalBarrier, RunOptions, TargetPolicy};
use iolens_suites::repeat::{self, RepeatedRuns, Repetitions};
use iolens_workload::{load_job, FlagWorkload, Job};
use serde::Serialize;

use crate::cli::RunArgs;
use crate::output::{check_write, fail, write_result, ProgressLine, EXIT_FAILED, EXIT_USAGE, EXIT_VERIFY};
use iolens_output::console::output_failed;
use iolens_workload::resolved_job;

pub(crate) fn job_from_flags(a: &RunArgs) -> Result<Job, String> {
    let flags = FlagWorkload {
        target: a.target.clone().unwrap_or_default(),
        rw: a.rw.clone(),
        bs: a.bs.clone(),
        threads: a.threads,
        qd: a.qd,
        engine: a.engine.clone(),
        direct: a.direct,
        size: a.size.clone(),
        time: a.time.clone(),
        bytes: a.bytes.clone(),
        ramp: a.ramp.clone(),
        rate: a.rate,
        arrival: a.arrival.clone(),
        fsync: a.fsync.clone(),
        read_pct: a.read_pct,
        distribution: a.distribution.clone(),
        zipf_theta: a.zipf_theta,
        hot_spot: a.hot_spot,
        spread: a.spread,
        stride: a.stride.clone(),
        pattern: a.pattern.clone(),
        regions: a.regions,
        region_size: a.region_size.clone(),
        spacing: a.spacing.clone(),
        sieve: a.sieve,
        sieve_buffer: a.sieve_buffer.clone(),
        random_map: a.random_map,
        block_unit: a.block_unit.clone(),
        seed: a.seed,
        verify: a.verify.clone(),
        verify_after_write: a.verify_after_write,
        verify_generation: a.verify_generation,
    };
    flags.to_job().map_err(|e| e.to_string())
}

/// What the flags say of how to run a job in this process (no MPI placement, no series).
pub(crate) fn run_options(a: &RunArgs, stop: &Arc<AtomicBool>, command: &str) -> RunOptions {
    RunOptions {
        policy: TargetPolicy {
            allow_overwrite: a.allow_overwrite,
            keep_cache: a.keep_cache,
            drop_cache: a.drop_cache,
            sparse: false,
        },
        keep: a.output.keep,
        scratch: false,
        trace: a.trace.clone(),
        busy_log: a.busy_log.clone(),
        stop: Arc::clone(stop),
        command: command.to_string(),
        placement: None,
        log_interval: None,
    }
}

pub fn run(a: RunArgs, stop: &Arc<AtomicBool>, command: String) -> Result<(), u8> {
    let job = match &a.job {
        Some(path) => load_job(path).map_err(|e| e.to_string()),
        None => job_from_flags(&a),
    };
    let job = job.map_err(|e| fail(&a.output, &e, false, EXIT_USAGE))?;
    let log_interval = iolens_engine::parse_log_interval(a.log_interval.as_deref())
        .and_then(|l| check_companions(&a, l.is_some()).map(|()| l))
        .map_err(|e| fail(&a.output, &e, false, EXIT_USAGE))?;
    let opts = RunOptions { log_interval, ..run_options(&a, stop, &command) };
    if a.shared_file {
        return Err(fail(
            &a.output,
            "--shared-file: only under MPI (mpirun … iolens run)",
            false,
            EXIT_USAGE,
        ));
    }
    if a.reorder_ranks.is_some() {
        return Err(fail(
            &a.output,
            "--reorder-ranks: only under MPI (mpirun … iolens run): it makes each rank read another rank's data",
            false,
            EXIT_USAGE,
        ));
    }
    if a.repeat == 0 {
        return Err(fail(&a.output, "--repeat: give at least 1", false, EXIT_USAGE));
    }
    if a.repeat > 1 {
        return run_repeated(&a, &job, &opts, stop);
    }
    let progress = ProgressLine::new(a.output.quiet, &job.name);
    let result = run_job(&job, &opts, &progress, &LocalBarrier);
    progress.finish();
    let run = result.map_err(|e| {
        let interrupted = stop.load(Ordering::SeqCst);
        fail(&a.output, &e.to_string(), interrupted, EXIT_FAILED)
    })?;
    say!("{}", iolens_report::render_run(&run));
    check_run_files(&run);
    let job_doc = resolved_job(&job);
    iolens_report::publish::write_run_tables(
        &run,
        a.output.csv.as_deref(),
        a.parquet.as_deref(),
        &job_doc,
        a.trace.as_deref(),
    );
    // Last: its `error` tells a file above that could not be written.
    if let Some(path) = &a.output.json {
        write_result(path, &run, Some(job_doc));
    }
    outcome(run.error.clone(), run.verify_error())
}

/// The files a run writes as it goes (`--trace`, `--busy-log`) that came out incomplete (a
/// full disk): the command fails as for any other result file, the warning saying why.
pub(crate) fn check_run_files(run: &iolens_metrics::RunResult) {
    use iolens_metrics::WarningCode;
    for w in &run.warnings {
        if matches!(w.code, WarningCode::BusyLogIncomplete | WarningCode::TraceDropped) {
            output_failed(w.message.clone());
        }
    }
}

/// The files written beside `--csv` and `--parquet` need those to be files, not stdout.
fn check_companions(a: &RunArgs, series: bool) -> Result<(), String> {
    let stdout = |p: &Option<std::path::PathBuf>| p.as_deref().is_some_and(iolens_report::is_stdout);
    if series && a.repeat > 1 && a.output.csv.is_some() {
        return Err("--log-interval with --repeat and --csv: the CSV holds the repetitions' summary, not their series\n  hint: the series are in --json and --parquet (STEM-series.parquet, a row per interval and repetition)".into());
    }
    if series && stdout(&a.output.csv) {
        return Err("--log-interval with --csv -: the series goes to a file beside the CSV\n  hint: give --csv a file name (the series is written to NAME-series.csv)".into());
    }
    if (series || a.trace.is_some()) && stdout(&a.parquet) {
        return Err("--parquet -: the series and per-op tables go to files beside it\n  hint: give --parquet a file name".into());
    }
    Ok(())
}

/// The exit of a run: its error (exit 1) over failed verification (exit 3), each printed.
pub(crate) fn outcome(error: Option<String>, verify_error: Option<String>) -> Result<(), u8> {
    match (error, verify_error) {
        (Some(e), _) => {
            errln!("iolens: error: {e}");
            Err(EXIT_FAILED)
        }
        (None, Some(e)) => {
            errln!("iolens: error: {e}");
            Err(EXIT_VERIFY)
        }
        (None, None) => Ok(()),
    }
}

fn run_repeated(a: &RunArgs, job: &Job, opts: &RunOptions, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    let mut done = Repetitions::default();
    for i in 1..=a.repeat {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let progress = ProgressLine::new(a.output.quiet, &format!("{} {i}/{}", job.name, a.repeat));
        let result = run_job(job, opts, &progress, &LocalBarrier);
        progress.finish();
        if let Ok(run) = &result {
            check_run_files(run);
        }
        if !done.record(i, result.map_err(|e| e.to_string()), |r| r, stop.load(Ordering::SeqCst)) {
            break;
        }
    }
    let aggregates = done.runs.clone();
    let last_table = done.runs.last().map(iolens_report::render_run);
    publish_repeated(a, job, &done, &aggregates, last_table, stop.load(Ordering::SeqCst))
}

/// Prints the summary of the repetitions (after `last_table`, the last one's), writes their
/// JSON and CSV, and gives the exit code.
pub(crate) fn publish_repeated<R: Serialize>(
    a: &RunArgs,
    job: &Job,
    done: &Repetitions<R>,
    aggregates: &[iolens_metrics::RunResult],
    last_table: Option<String>,
    interrupted: bool,
) -> Result<(), u8> {
    let report = RepeatedRuns::new(a.repeat, done, aggregates, a.cv_warn, interrupted);
    if let Some(table) = &last_table {
        say!("{table}");
    }
    say!("{}", iolens_report::text::repeat::render(&report.summary));
    for w in &report.warnings {
        sayln!("warning [{}]: {}", w.code.as_str(), w.message);
    }
    if let Some(path) = &a.output.csv {
        let csv = repeat::csv(&report.summary);
        check_write(path, iolens_report::write_output(path, |w| w.write_all(csv.as_bytes())));
    }
    #[cfg(feature = "parquet")]
    if let Some(path) = &a.parquet {
        let envelope = crate::output::parquet_envelope(&report, Some(resolved_job(job)), &["runs"]);
        check_write(path, iolens_report::export::parquet::write_repetitions(path, aggregates, envelope));
    }
    // Last: its `error` tells a file above that could not be written.
    if let Some(path) = &a.output.json {
        write_result(path, &report, Some(resolved_job(job)));
    }
    outcome(done.error.clone(), done.verify_error.clone())
}

/// `iolens convert JOB.fio`: the equivalent TOML job on stdout.
pub fn convert(a: crate::cli::ConvertArgs) -> Result<(), u8> {
    let fio = iolens_workload::load_fio_file(&a.job).map_err(|e| {
        errln!("iolens: error: {e}");
        EXIT_USAGE
    })?;
    let cwd = std::env::current_dir().unwrap_or_default();
    say!("{}", iolens_workload::fio_to_toml(&fio, &cwd, &a.job.display().to_string()));
    Ok(())
}
