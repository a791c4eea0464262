//! Writing a command's result documents: the envelope (tool, command line, times, host) around
//! each body, error documents for commands that failed before they had a result, and the
//! bookkeeping that keeps a JSON result from reading as a success when a file before it failed.

use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;

use iolens_output::console::{check_write, error_code, first_write_error, EXIT_FAILED};
use iolens_output::errln;

use crate::envelope::{Document, Tool};
use crate::{Body, Invocation, Notice};

static INVOCATION: OnceLock<Invocation> = OnceLock::new();

/// Remembers this process's tool, command line and start time for every envelope it writes.
/// The first call wins; a process that never calls it gets its own arguments and no commit.
pub fn start_invocation(tool: Tool, argv: &[OsString]) {
    let _ = INVOCATION.set(new_invocation(tool, argv));
}

fn new_invocation(tool: Tool, argv: &[OsString]) -> Invocation {
    Invocation::new(tool, argv.iter().map(|a| a.to_string_lossy().into_owned()).collect())
}

fn invocation() -> &'static Invocation {
    INVOCATION.get_or_init(|| {
        let tool = Tool {
            name: "iolens".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: "unknown".into(),
        };
        new_invocation(tool, &std::env::args_os().collect::<Vec<_>>())
    })
}

/// Prints the error, writes it as the JSON result when one was asked for, and gives `code`.
pub fn report_error(json: Option<&Path>, message: &str, interrupted: bool, code: u8) -> u8 {
    errln!("iolens: error: {message}");
    if let Some(path) = json {
        write_error_document(path, message, interrupted, code);
    }
    code
}

/// Writes the JSON error document of a command that failed with exit `code`, without printing.
pub fn report_error_document(path: &Path, message: &str, code: u8) {
    write_error_document(path, message, false, code);
}

fn write_error_document(path: &Path, message: &str, interrupted: bool, code: u8) {
    let doc = invocation().error_document(Notice::new(error_code(code), message), interrupted);
    check_write(path, crate::write_json_atomic(path, &doc));
}

/// Writes a result (envelope and body) as JSON; a failure is reported naming the path, and
/// fails the command (see [`iolens_output::console::write_failed`]) without stopping the other
/// outputs.
pub fn write_json_or_warn<B: Body>(path: &Path, body: &B) {
    write_result(path, body, None);
}

/// A result with its envelope as a JSON value (a rank's own result inside the combined one).
pub fn document_value<B: Body>(body: &B) -> serde_json::Value {
    serde_json::to_value(document(body, None)).expect("a result always serializes")
}

#[cfg(feature = "parquet")]
/// What a Parquet file of `body` carries in its metadata: the JSON document (envelope, with
/// the resolved `job` where there is one, and body) without the keys its rows hold (`tables`).
pub fn parquet_envelope<B: Body>(body: &B, job: Option<serde_json::Value>, tables: &[&str]) -> String {
    crate::export::parquet::envelope(&invocation().document(body, job), tables)
}

/// One document (the same envelope, to the millisecond) written to every path.
pub fn write_json_copies<B: Body>(paths: &[&Path], body: &B, job: Option<serde_json::Value>) {
    let doc = document(body, job);
    for path in paths {
        check_write(path, crate::write_json_atomic(path, &doc));
    }
}

/// [`write_json_or_warn`] for a command that ran a job: the resolved job goes into the envelope.
pub fn write_result<B: Body>(path: &Path, body: &B, job: Option<serde_json::Value>) {
    check_write(path, crate::write_json_atomic(path, &document(body, job)));
}

/// The document of `body`; when a result file failed before it, its `error` says so (unless
/// the command has an error of its own), so that the JSON never reads as a success.
fn document<'a, B: Body>(body: &'a B, job: Option<serde_json::Value>) -> Document<'a, B> {
    let mut doc = invocation().document(body, job);
    if doc.envelope.error.is_none() {
        if let Some(message) = first_write_error() {
            doc.envelope.error = Some(Notice::new(error_code(EXIT_FAILED), message));
        }
    }
    doc
}

/// `run`'s table files: the CSV (a row per agent) with its series beside it (`STEM-series.csv`,
/// with `--log-interval`), and the Parquet file with the agents and aggregate, beside it the
/// series (`STEM-series.parquet`) and every operation (`STEM-ops.parquet`, from `trace`). The
/// Parquet files carry `job` in their envelope. A failed write is reported and fails the command
/// without stopping the other files.
pub fn write_run_tables(
    run: &iolens_metrics::RunResult,
    csv: Option<&Path>,
    parquet: Option<&Path>,
    job: &serde_json::Value,
    trace: Option<&Path>,
) {
    use crate::export::companion_path;
    if let Some(path) = csv {
        check_write(path, crate::write_csv(path, run));
        if run.series.is_some() {
            let series = companion_path(path, "series");
            check_write(&series, crate::export::write_series_csv(&series, run));
        }
    }
    #[cfg(feature = "parquet")]
    if let Some(path) = parquet {
        use crate::export::parquet;
        let envelope = parquet_envelope(run, Some(job.clone()), &parquet::RUN_TABLE_KEYS);
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
    // A build without Parquet refuses --parquet before anything runs.
    #[cfg(not(feature = "parquet"))]
    let _ = (parquet, job, trace);
}

/// A suite's result, on rank 0 or alone: its `table` printed, its points as Parquet and the
/// whole as JSON, `job` (what ran) in their envelope. The JSON comes last: its `error` tells a
/// file before it that could not be written.
pub fn publish_points<R: Body>(
    result: &R,
    job: serde_json::Value,
    table: &str,
    json: Option<&Path>,
    parquet: Option<&Path>,
) {
    iolens_output::say!("{table}");
    #[cfg(feature = "parquet")]
    if let Some(path) = parquet {
        use crate::export::parquet;
        let envelope = parquet_envelope(result, Some(job.clone()), &parquet::POINT_TABLE_KEYS);
        check_write(path, parquet::write_points(path, result, envelope).map(|_| ()));
    }
    #[cfg(not(feature = "parquet"))]
    let _ = parquet;
    if let Some(path) = json {
        write_result(path, result, Some(job));
    }
}
