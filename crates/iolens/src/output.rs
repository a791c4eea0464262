//! Terminal progress, text on stdout and stderr, and result files shared by the commands.
//!
//! Nothing here panics when stdout or stderr is closed or full (`println!` would): a failed
//! stdout is remembered and turned into the exit code by `main`, after the JSON is written.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use iolens_engine::{Progress, RunObserver};
use iolens_report::{Body, Invocation, Notice};

use crate::cli::OutputArgs;

/// Exit code for bad input (arguments, job files).
pub const EXIT_USAGE: u8 = 2;
/// Exit code for a run that failed or ended with an error.
pub const EXIT_FAILED: u8 = 1;
/// Exit code for a run that completed but whose data verification found bad blocks.
pub const EXIT_VERIFY: u8 = 3;

/// A progress line with ETA on stderr (hidden when stderr is not a terminal): elapsed time,
/// ETA, totals so far and the current rates (over the last second or so, not the average since
/// the start, so that a slowing device shows).
pub struct ProgressLine {
    bar: ProgressBar,
    rates: std::sync::Mutex<CurrentRate>,
}

impl ProgressLine {
    pub fn new(quiet: bool, label: &str) -> ProgressLine {
        let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(1000) };
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed_precise} ETA {eta} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        ProgressLine { bar, rates: std::sync::Mutex::new(CurrentRate::default()) }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Operations and bytes per second over a sliding window of about a second.
#[derive(Default)]
struct CurrentRate {
    window_start: Option<(f64, u64, u64)>,
    ops_s: Option<f64>,
    bytes_s: Option<f64>,
}

/// Shortest window a current rate is taken over: shorter ones jitter with the tick.
const RATE_WINDOW_S: f64 = 1.0;

impl CurrentRate {
    fn update(&mut self, elapsed_s: f64, ops: u64, bytes: u64) {
        match self.window_start {
            Some((t0, ops0, bytes0)) if elapsed_s >= t0 && ops >= ops0 && bytes >= bytes0 => {
                let span = elapsed_s - t0;
                if span >= RATE_WINDOW_S {
                    self.ops_s = Some((ops - ops0) as f64 / span);
                    self.bytes_s = Some((bytes - bytes0) as f64 / span);
                    self.window_start = Some((elapsed_s, ops, bytes));
                }
            }
            // First sample, or a new run behind the same line (counters restarted).
            _ => *self = CurrentRate { window_start: Some((elapsed_s, ops, bytes)), ..Default::default() },
        }
    }

    fn message(&self, ops: u64, bytes: u64) -> String {
        let total = format!("{ops} ops, {} MiB", iolens_report::table::fmt_mib(bytes as f64));
        match (self.ops_s, self.bytes_s) {
            (Some(o), Some(b)) => format!(
                "{total}; now {} IOPS, {} MiB/s",
                iolens_report::table::fmt_rate(o),
                iolens_report::table::fmt_mib(b)
            ),
            _ => total,
        }
    }
}

impl RunObserver for ProgressLine {
    fn phase(&self, what: &str) {
        self.bar.set_message(what.to_string());
    }

    fn step(&self, fraction: f64, what: &str) {
        self.bar.set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
        self.bar.set_message(what.to_string());
    }

    fn progress(&self, p: &Progress) {
        if let Some(f) = p.fraction {
            self.bar.set_position((f * 1000.0) as u64);
        }
        let mut rates = self.rates.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        rates.update(p.elapsed_s, p.ops, p.bytes);
        self.bar.set_message(rates.message(p.ops, p.bytes));
    }
}

/// Text for people on stdout. With `--json -` (or `--csv -`) it goes to stderr instead, so that
/// stdout stays one valid document.
macro_rules! say {
    ($($t:tt)*) => { $crate::output::say(&format!($($t)*)) };
}

/// `say!` with a newline.
macro_rules! sayln {
    ($($t:tt)*) => { $crate::output::say(&format!("{}\n", format_args!($($t)*))) };
}

/// A line on stderr; a closed stderr is ignored (there is nowhere left to complain).
macro_rules! errln {
    ($($t:tt)*) => { $crate::output::err(&format!("{}\n", format_args!($($t)*))) };
}

static TEXT_TO_STDERR: AtomicBool = AtomicBool::new(false);
/// The first error writing stdout: its errno, or -1 without one; 0 while stdout is fine.
static STDOUT_ERROR: AtomicI32 = AtomicI32::new(0);
static WRITE_FAILED: AtomicBool = AtomicBool::new(false);

pub fn say(text: &str) {
    if TEXT_TO_STDERR.load(Ordering::Relaxed) {
        err(text);
        return;
    }
    if STDOUT_ERROR.load(Ordering::SeqCst) != 0 {
        return; // already broken: one error is enough
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        STDOUT_ERROR.store(e.raw_os_error().unwrap_or(-1), Ordering::SeqCst);
    }
}

pub fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Sends `say!` text to stderr, because results go to stdout.
pub fn text_to_stderr() {
    TEXT_TO_STDERR.store(true, Ordering::Relaxed);
}

/// Flushes stdout; its first error, if it ever failed.
pub fn stdout_error() -> Option<std::io::Error> {
    if let Err(e) = std::io::stdout().lock().flush() {
        let _ = STDOUT_ERROR.compare_exchange(
            0,
            e.raw_os_error().unwrap_or(-1),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }
    match STDOUT_ERROR.load(Ordering::SeqCst) {
        0 => None,
        -1 => Some(std::io::Error::other("stdout failed")),
        code => Some(std::io::Error::from_raw_os_error(code)),
    }
}

/// Whether a result file could not be written.
pub fn write_failed() -> bool {
    WRITE_FAILED.load(Ordering::SeqCst)
}

/// The value given to `flag` (`--json PATH` or `--json=PATH`) in raw arguments, before or
/// without clap; arguments after `--` belong to a traced program and are not looked at.
pub fn flag_value(argv: &[OsString], flag: &str) -> Option<PathBuf> {
    let joined = format!("{flag}=");
    let mut args = argv.iter().skip(1).take_while(|a| a.as_os_str() != "--");
    while let Some(a) = args.next() {
        let s = a.to_string_lossy();
        if s == flag {
            return args.next().map(PathBuf::from);
        }
        if let Some(v) = a.as_bytes().strip_prefix(joined.as_bytes()) {
            return (!v.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(v)));
        }
    }
    None
}

/// Prints an error to stderr and, when asked for JSON, leaves a valid JSON error report.
pub fn fail(out: &OutputArgs, command: &str, message: &str, interrupted: bool, code: u8) -> u8 {
    report_error(out.json.as_deref(), command, message, interrupted, code)
}

/// The stable code of an error document, from the exit code it goes with.
pub fn error_code(exit: u8) -> &'static str {
    match exit {
        EXIT_USAGE => "bad_input",
        EXIT_VERIFY => "verify_failed",
        _ => "failed",
    }
}

static INVOCATION: std::sync::OnceLock<Invocation> = std::sync::OnceLock::new();

fn new_invocation(argv: &[OsString]) -> Invocation {
    let tool = iolens_report::envelope::Tool {
        name: "iolens".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: env!("IOLENS_GIT_COMMIT").into(),
    };
    Invocation::new(tool, argv.iter().map(|a| a.to_string_lossy().into_owned()).collect())
}

/// Remembers this process's command line and start time for every envelope it writes.
pub fn start_invocation(argv: &[OsString]) {
    let _ = INVOCATION.set(new_invocation(argv));
}

fn invocation() -> &'static Invocation {
    INVOCATION.get_or_init(|| new_invocation(&std::env::args_os().collect::<Vec<_>>()))
}

/// Prints the error, writes it as the JSON result when one was asked for, and gives `code`.
/// `_command`: kept for the callers' convenience; the envelope has the argv already.
pub fn report_error(json: Option<&Path>, _command: &str, message: &str, interrupted: bool, code: u8) -> u8 {
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
    check_write(path, iolens_report::write_json_atomic(path, &doc));
}

/// Writes a result (envelope and body) as JSON; a failure is reported naming the path, and
/// fails the command (see [`write_failed`]) without stopping the other outputs.
pub fn write_json_or_warn<B: Body>(path: &Path, body: &B) {
    write_result(path, body, None);
}

/// A result with its envelope as a JSON value (a rank's own result inside the combined one).
#[cfg(feature = "mpi")]
pub fn document_value<B: Body>(body: &B) -> serde_json::Value {
    serde_json::to_value(invocation().document(body, None)).expect("a result always serializes")
}

/// What a Parquet file of `body` carries in its metadata: the JSON document (envelope, with
/// the resolved `job` where there is one, and body) without the keys its rows hold (`tables`).
pub fn parquet_envelope<B: Body>(body: &B, job: Option<serde_json::Value>, tables: &[&str]) -> String {
    iolens_report::export::parquet::envelope(&invocation().document(body, job), tables)
}

/// One document (the same envelope, to the millisecond) written to every path.
pub fn write_json_copies<B: Body>(paths: &[&Path], body: &B, job: Option<serde_json::Value>) {
    let doc = invocation().document(body, job);
    for path in paths {
        check_write(path, iolens_report::write_json_atomic(path, &doc));
    }
}

/// [`write_json_or_warn`] for a command that ran a job: the resolved job goes into the envelope.
pub fn write_result<B: Body>(path: &Path, body: &B, job: Option<serde_json::Value>) {
    check_write(path, iolens_report::write_json_atomic(path, &invocation().document(body, job)));
}

/// Reports a failed write of `path` and remembers that the command failed.
pub fn check_write(path: &Path, result: std::io::Result<()>) {
    if let Err(e) = result {
        WRITE_FAILED.store(true, Ordering::SeqCst);
        errln!("iolens: error: cannot write {}: {e}", path.display());
    }
}

#[cfg(test)]
mod progress_tests {
    use super::CurrentRate;

    #[test]
    fn current_rate_is_over_the_last_window_not_since_the_start() {
        let mut r = CurrentRate::default();
        r.update(0.0, 0, 0);
        assert_eq!(r.message(0, 0), "0 ops, 0.0 MiB");
        r.update(1.0, 1000, 1 << 20);
        assert_eq!(r.message(1000, 1 << 20), "1000 ops, 1.0 MiB; now 1000 IOPS, 1.0 MiB/s");
        // Under a second later: the rate stays what the last full window said.
        r.update(1.5, 1100, 1 << 20);
        assert_eq!(r.ops_s, Some(1000.0));
        // The device slowed down: 100 ops in the next second, not (1100 + …) / 2 s.
        r.update(2.0, 1100, 2 << 20);
        assert_eq!(r.ops_s, Some(100.0));
        assert_eq!(r.bytes_s, Some((1 << 20) as f64));
    }

    #[test]
    fn a_restarted_run_behind_the_same_line_starts_a_new_window() {
        let mut r = CurrentRate::default();
        r.update(0.0, 0, 0);
        r.update(2.0, 4000, 0);
        r.update(0.1, 10, 0);
        assert_eq!(r.ops_s, None);
        assert_eq!(r.window_start, Some((0.1, 10, 0)));
    }
}
