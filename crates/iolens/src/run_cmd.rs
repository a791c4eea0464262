//! `iolens run`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{run_job, LocalBarrier, RunOptions, TargetPolicy};
use iolens_suites::repeat;
use iolens_workload::{load_job, FlagWorkload, Job};
use serde::Serialize;

use iolens_report::export::companion_path;

use crate::cli::RunArgs;
use crate::output::{check_write, fail, write_result, ProgressLine, EXIT_FAILED, EXIT_USAGE, EXIT_VERIFY};
use iolens_output::console::output_failed;
use iolens_workload::resolved_job;

/// Bad blocks found by verification, as an error line; `None` when none (or no verification).
pub(crate) fn verify_failed(run: &iolens_metrics::RunResult) -> Option<String> {
    let v = run.verify.as_ref().filter(|v| v.failures_total > 0)?;
    Some(format!(
        "data verification failed: {} of {} blocks checked are bad (listed above and in the JSON result)",
        v.failures_total, v.blocks_checked
    ))
}

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

pub fn run(a: RunArgs, stop: &Arc<AtomicBool>, command: String) -> Result<(), u8> {
    let job = match &a.job {
        Some(path) => load_job(path).map_err(|e| e.to_string()),
        None => job_from_flags(&a),
    };
    let job = job.map_err(|e| fail(&a.output, &e, false, EXIT_USAGE))?;
    let log_interval = parse_log_interval(a.log_interval.as_deref())
        .and_then(|l| check_companions(&a, l.is_some()).map(|()| l))
        .map_err(|e| fail(&a.output, &e, false, EXIT_USAGE))?;
    let opts = RunOptions {
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
        command: command.clone(),
        placement: None,
        log_interval,
    };
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
    if let Some(path) = &a.output.csv {
        check_write(path, iolens_report::write_csv(path, &run));
        if run.series.is_some() {
            let series = companion_path(path, "series");
            check_write(&series, iolens_report::export::write_series_csv(&series, &run));
        }
    }
    #[cfg(feature = "parquet")]
    if let Some(path) = &a.parquet {
        write_parquet(path, &run, resolved_job(&job), a.trace.as_deref());
    }
    // Last: its `error` tells a file above that could not be written.
    if let Some(path) = &a.output.json {
        write_result(path, &run, Some(resolved_job(&job)));
    }
    outcome(run.error.clone(), verify_failed(&run))
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

#[cfg(feature = "parquet")]
/// `--parquet FILE`: the agents and aggregate; beside it the series (`STEM-series.parquet`) with
/// `--log-interval` and every operation (`STEM-ops.parquet`) with `--trace`.
fn write_parquet(
    path: &std::path::Path,
    run: &iolens_metrics::RunResult,
    job: serde_json::Value,
    trace: Option<&std::path::Path>,
) {
    use iolens_report::export::parquet;
    let envelope = crate::output::parquet_envelope(run, Some(job), &parquet::RUN_TABLE_KEYS);
    check_write(path, parquet::write_run(path, run, envelope.clone()));
    if run.series.is_some() {
        let series = companion_path(path, "series");
        check_write(&series, parquet::write_series(&series, run, envelope.clone()));
    }
    if let (Some(trace), Some(_)) = (trace, &run.trace_file) {
        let ops = companion_path(path, "ops");
        check_write(&ops, parquet::write_trace_ops(&ops, trace, Some(envelope)).map(|_| ()));
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

/// `--log-interval DUR`, at least [`iolens_engine::MIN_LOG_INTERVAL`].
fn parse_log_interval(text: Option<&str>) -> Result<Option<std::time::Duration>, String> {
    let Some(text) = text else { return Ok(None) };
    let d = iolens_workload::parse_duration(text).map_err(|e| format!("--log-interval {text}: {e}"))?;
    let min = iolens_engine::MIN_LOG_INTERVAL;
    if d < min {
        return Err(format!(
            "--log-interval {text}: shorter than {} ms\n  hint: give 10ms or more (e.g. 250ms, 1s)",
            min.as_millis()
        ));
    }
    Ok(Some(d))
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

/// What `run --repeat N --json` writes; `R` is one repetition's result (one process's, or
/// under MPI the combined one).
#[derive(Serialize)]
struct RepeatedRuns<'a, R: Serialize> {
    repeat: u32,
    completed: usize,
    /// Told to the envelope, with `error` and `warnings`.
    #[serde(skip)]
    interrupted: bool,
    #[serde(skip)]
    error: Option<String>,
    summary: Vec<repeat::MetricRepeats>,
    #[serde(skip)]
    warnings: Vec<iolens_metrics::Warning>,
    runs: &'a [R],
}

impl<R: Serialize> iolens_report::Body for RepeatedRuns<'_, R> {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    fn warnings(&self) -> Vec<iolens_report::Notice> {
        self.warnings.iter().map(|w| iolens_report::Notice::new(w.code.as_str(), w.message.clone())).collect()
    }
    fn error(&self) -> Option<iolens_report::Notice> {
        self.error.as_ref().map(|e| iolens_report::Notice::new("run_failed", e.clone()))
    }
}

/// How the repetitions of a run went.
pub(crate) struct Repetitions<'a, R: Serialize> {
    /// The completed repetitions (interrupted or failed ones are not kept).
    pub runs: &'a [R],
    /// The aggregate of each of `runs`, in the same order.
    pub aggregates: Vec<iolens_metrics::RunResult>,
    /// The last completed repetition as a table.
    pub last_table: Option<String>,
    /// The repetition that failed, and why.
    pub error: Option<String>,
    /// The first repetition whose verification found bad blocks.
    pub verify_error: Option<String>,
    pub interrupted: bool,
}

fn run_repeated(a: &RunArgs, job: &Job, opts: &RunOptions, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    let mut runs = Vec::new();
    let mut error = None;
    let mut verify_error = None;
    for i in 1..=a.repeat {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let progress = ProgressLine::new(a.output.quiet, &format!("{} {i}/{}", job.name, a.repeat));
        let result = run_job(job, opts, &progress, &LocalBarrier);
        progress.finish();
        match result {
            Ok(run) => {
                check_run_files(&run);
                let failed = run.error.clone();
                if let (None, Some(e)) = (&verify_error, verify_failed(&run)) {
                    verify_error = Some(format!("repetition {i}: {e}"));
                }
                if !stop.load(Ordering::SeqCst) && failed.is_none() {
                    runs.push(run);
                }
                if let Some(e) = failed {
                    error = Some(format!("repetition {i}: {e}"));
                    break;
                }
            }
            Err(e) => {
                error = Some(format!("repetition {i}: {e}"));
                break;
            }
        }
    }
    let done = Repetitions {
        runs: &runs,
        aggregates: runs.clone(),
        last_table: runs.last().map(iolens_report::render_run),
        error,
        verify_error,
        interrupted: stop.load(Ordering::SeqCst),
    };
    publish_repeated(a, job, done)
}

/// Prints the summary of the repetitions, writes their JSON and CSV, and gives the exit code.
pub(crate) fn publish_repeated<R: Serialize>(
    a: &RunArgs,
    job: &Job,
    done: Repetitions<'_, R>,
) -> Result<(), u8> {
    let (summary, warnings) = repeat::summarize_runs(&done.aggregates, a.cv_warn);
    if let Some(table) = &done.last_table {
        say!("{table}");
    }
    say!("{}", iolens_report::text::repeat::render(&summary));
    for w in &warnings {
        sayln!("warning [{}]: {}", w.code.as_str(), w.message);
    }
    let report = RepeatedRuns {
        repeat: a.repeat,
        completed: done.runs.len(),
        interrupted: done.interrupted,
        error: done.error.clone(),
        summary,
        warnings,
        runs: done.runs,
    };
    if let Some(path) = &a.output.csv {
        let csv = repeat::csv(&report.summary);
        check_write(path, iolens_report::write_output(path, |w| w.write_all(csv.as_bytes())));
    }
    #[cfg(feature = "parquet")]
    if let Some(path) = &a.parquet {
        let envelope = crate::output::parquet_envelope(&report, Some(resolved_job(job)), &["runs"]);
        check_write(
            path,
            iolens_report::export::parquet::write_repetitions(path, &done.aggregates, envelope),
        );
    }
    // Last: its `error` tells a file above that could not be written.
    if let Some(path) = &a.output.json {
        write_result(path, &report, Some(resolved_job(job)));
    }
    outcome(done.error, done.verify_error)
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
