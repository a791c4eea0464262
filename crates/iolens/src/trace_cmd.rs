//! `iolens trace` and `iolens analyze`: the same summary, from a live program or a trace file.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolens_analyze::trace_summary::{summarize, SummaryDocument, TraceInput};
use iolens_analyze::{emit_workload, export::OpExports, AnalyzeOptions, PathFilter, TraceSummary};
use iolens_import::darshan::DarshanLog;
use iolens_import::{detect_format, input_bytes, Format, ImportReport};
use iolens_trace::{exit_like, program_notes, run_traced, ProgramNote, RankOfJob, StreamDir, TracedProgram};

use crate::cli::{AnalyzeArgs, SummaryArgs, TraceArgs};
use crate::output::{check_write, write_json_or_warn, ReadingLine, EXIT_FAILED, EXIT_USAGE};

fn error(message: &str, code: u8, json: Option<&Path>) -> u8 {
    crate::output::report_error(json, message, false, code)
}

/// Rows of the summary's tables unless the user says otherwise.
const DEFAULT_ROWS: usize = 10;

fn options(s: &SummaryArgs, program_wall_ns: Option<u64>) -> Result<AnalyzeOptions, String> {
    let block_unit = iolens_workload::parse_size(&s.block_unit).map_err(|e| format!("--block-unit: {e}"))?;
    let filter = PathFilter::new(&s.include, &s.exclude).map_err(|e| e.to_string())?;
    Ok(AnalyzeOptions {
        filter,
        block_unit: block_unit.max(1),
        top_files: s.top_files.or(s.top).unwrap_or(DEFAULT_ROWS),
        slowest: s.slowest.or(s.top).unwrap_or(DEFAULT_ROWS),
        top_processes: s.top.unwrap_or(DEFAULT_ROWS),
        program_wall_ns,
        per_op_csv: s.csv.clone(),
        #[cfg(feature = "parquet")]
        per_op_parquet: s.parquet.clone().map(|p| (p, iolens_report::export::trace_ops::open_parquet as _)),
        ..AnalyzeOptions::default()
    })
}

/// [`summarize`] with the reading line of `label` (`analyze`, `trace`).
fn summarize_trace(
    path: &Path,
    format: Format,
    strict: bool,
    opts: AnalyzeOptions,
    args: &SummaryArgs,
    wall_from_markers: bool,
    label: &str,
) -> Result<(TraceSummary, ImportReport, OpExports), String> {
    let reading = ReadingLine::start(args.quiet, label, input_bytes(path));
    let input = TraceInput { path, format, strict, only_exe: &args.only_exe, wall_from_markers };
    summarize(&input, opts, &reading)
}

/// Prints the summary and writes its files; the per-operation exports are completed with the
/// result's envelope (their Parquet metadata).
fn publish(summary: &TraceSummary, darshan: Option<&DarshanLog>, s: &SummaryArgs, exports: OpExports) {
    // The envelope serializes the whole summary: made only for files that carry it.
    if !exports.is_empty() {
        #[cfg(feature = "parquet")]
        let envelope =
            Some(crate::output::parquet_envelope(&SummaryDocument { summary, darshan }, None, &[]));
        // Only a Parquet file carries the envelope, and this build writes none.
        #[cfg(not(feature = "parquet"))]
        let envelope: Option<String> = None;
        if let Err((path, e)) = exports.finish(envelope.as_deref()) {
            check_write(&path, Err(e));
        }
    }
    if let Some(log) = darshan {
        say!("{}", iolens_report::text::darshan::render(log));
    }
    say!("{}", iolens_report::text::trace::render_summary(summary));
    if let Some(path) = &s.emit_workload {
        match emit_workload(summary, &s.workload_target) {
            Ok(job) => check_write(path, iolens_report::write_output(path, |w| w.write_all(job.as_bytes()))),
            Err(why) => errln!("iolens: no job file written: {why}"),
        }
    }
    // Last: its `error` tells a file above that could not be written.
    if let Some(path) = &s.json {
        write_json_or_warn(path, &SummaryDocument { summary, darshan });
    }
}

pub fn analyze(a: AnalyzeArgs, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    let json = a.summary.json.as_deref();
    let format = match a.format.as_str() {
        "auto" => detect_format(&a.trace)
            .map_err(|e| error(&format!("{}: {e}", a.trace.display()), EXIT_USAGE, json))?,
        other => other.parse::<Format>().map_err(|e| {
            const FORMATS: &[&str] = &["auto", "iolens", "events", "strace", "blkparse", "dxt", "darshan"];
            let near = iolens_workload::suggest(other, FORMATS).map(|k| format!(" (did you mean {k}?)"));
            error(&format!("--format: {e}{}", near.unwrap_or_default()), EXIT_USAGE, json)
        })?,
    };
    let opts = options(&a.summary, None).map_err(|e| error(&e, EXIT_USAGE, json))?;
    let opts = AnalyzeOptions { stop: Some(Arc::clone(stop)), ..opts };
    let (summary, report, exports) =
        summarize_trace(&a.trace, format, a.strict, opts, &a.summary, false, "analyze")
            .map_err(|e| error(&e, EXIT_FAILED, json))?;
    publish(&summary, report.darshan.as_deref(), &a.summary, exports);
    Ok(())
}

/// `iolens trace`; `mpi` when started by an MPI launcher as one rank of a job (see
/// [`iolens_trace::job`]): rank 0 then summarizes all ranks, the others print nothing.
pub fn trace(a: TraceArgs, mpi: Option<RankOfJob>) -> Result<(), u8> {
    // Only rank 0 writes the JSON, error reports included.
    let json = a.summary.json.as_deref().filter(|_| mpi.as_ref().is_none_or(|m| m.rank == 0));
    let preload = iolens_trace::preload::locate().map_err(|e| error(&e, EXIT_FAILED, json))?;
    let opts = options(&a.summary, None).map_err(|e| error(&e, EXIT_USAGE, json))?;
    let job_dir = match &mpi {
        Some(job) => Some(job.job_dir(a.out.as_deref()).map_err(|e| error(&e, EXIT_FAILED, json))?),
        None => None,
    };
    let rank_out = match (&mpi, &job_dir) {
        (Some(job), Some((dir, _, _))) => Some(job.rank_dir(dir)),
        _ => a.out.clone(),
    };
    let dir = StreamDir::create(rank_out.as_deref())
        .map_err(|(e, usage)| error(&e, if usage { EXIT_USAGE } else { EXIT_FAILED }, json))?;
    let stream_dir = std::fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
    let program = &a.command[0];
    let traced = TracedProgram {
        command: &a.command,
        preload: &preload,
        stream_dir: &stream_dir,
        mpi_clock: mpi.is_some(),
    };
    let ran = run_traced(&traced, iolens_trace::signals::forward_to, |child| match (&mpi, &job_dir) {
        (Some(job), Some((job_dir, _, _))) => job.wait_stopping_on_abort(child, job_dir),
        _ => child.wait(),
    })
    .map_err(|e| error(&e, EXIT_FAILED, json))?;

    let mut notes = Vec::new();
    let summarized = match (&mpi, &job_dir) {
        (Some(job), Some((job_dir, _, _))) => match job.after_program(job_dir, &stream_dir, &ran.status) {
            Some(job_notes) => {
                notes = job_notes;
                job_dir.clone()
            }
            None => return exit_like(&ran.status),
        },
        _ => stream_dir.clone(),
    };
    // A job's wall time is its ranks' (first start to last end, on rank 0's clock).
    let opts = AnalyzeOptions { program_wall_ns: mpi.is_none().then_some(ran.wall_ns), ..opts };
    let summary_or_error =
        summarize_trace(&summarized, Format::Events, false, opts, &a.summary, mpi.is_some(), "trace");
    let rank_0_done = || {
        if let (Some(job), Some((job_dir, _, _))) = (&mpi, &job_dir) {
            job.mark_summarized(job_dir);
        }
    };
    let (mut summary, _, exports) = summary_or_error.map_err(|e| {
        rank_0_done();
        error(&e, EXIT_FAILED, json)
    })?;
    summary.notes.extend(notes);
    summary.notes.extend(program_notes(program, &ran).iter().map(ProgramNote::to_string));
    publish(&summary, None, &a.summary, exports);
    rank_0_done();
    if let Some((job_dir, true, _)) = &job_dir {
        // The summary is written: the streams go (what iolens made there, one by one).
        let _ = iolens_ownership::remove_made_dir(job_dir);
    }
    exit_like(&ran.status)
}
