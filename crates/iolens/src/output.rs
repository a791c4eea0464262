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
use iolens_report::ErrorReport;

use crate::cli::OutputArgs;

/// Exit code for bad input (arguments, job files).
pub const EXIT_USAGE: u8 = 2;
/// Exit code for a run that failed or ended with an error.
pub const EXIT_FAILED: u8 = 1;
/// Exit code for a run that completed but whose data verification found bad blocks.
pub const EXIT_VERIFY: u8 = 3;

/// A progress line with ETA on stderr (hidden when stderr is not a terminal).
pub struct ProgressLine {
    bar: ProgressBar,
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
        ProgressLine { bar }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl RunObserver for ProgressLine {
    fn phase(&self, what: &str) {
        self.bar.set_message(what.to_string());
    }

    fn progress(&self, p: &Progress) {
        if let Some(f) = p.fraction {
            self.bar.set_position((f * 1000.0) as u64);
        }
        self.bar.set_message(format!("{} ops, {:.1} MiB", p.ops, p.bytes as f64 / (1u64 << 20) as f64));
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

/// Prints the error, writes it as the JSON result when one was asked for, and gives `code`.
pub fn report_error(json: Option<&Path>, command: &str, message: &str, interrupted: bool, code: u8) -> u8 {
    errln!("iolens: error: {message}");
    if let Some(path) = json {
        write_json_or_warn(path, &ErrorReport::new(command.to_string(), message.to_string(), interrupted));
    }
    code
}

/// Writes a result as JSON; a failure is reported naming the path, and fails the command (see
/// [`write_failed`]) without stopping the other outputs.
pub fn write_json_or_warn<T: serde::Serialize>(path: &Path, value: &T) {
    check_write(path, iolens_report::write_json_atomic(path, value));
}

/// Reports a failed write of `path` and remembers that the command failed.
pub fn check_write(path: &Path, result: std::io::Result<()>) {
    if let Err(e) = result {
        WRITE_FAILED.store(true, Ordering::SeqCst);
        errln!("iolens: error: cannot write {}: {e}", path.display());
    }
}
