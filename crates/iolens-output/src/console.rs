//! Text for people on stdout and stderr, and the record of result files that failed.
//!
//! Nothing here panics when stdout or stderr is closed or full (`println!` would): a failed
//! stdout is remembered and turned into the exit code by the command, after its JSON is
//! written. A result file that could not be written is remembered too, both for the exit code
//! and for the `error` of the JSON result written after it.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;

/// Exit code for bad input (arguments, job files).
pub const EXIT_USAGE: u8 = 2;
/// Exit code for a run that failed or ended with an error.
pub const EXIT_FAILED: u8 = 1;
/// Exit code for a run that completed but whose data verification found bad blocks.
pub const EXIT_VERIFY: u8 = 3;

/// The stable code of an error document, from the exit code it goes with.
pub fn error_code(exit: u8) -> &'static str {
    match exit {
        EXIT_USAGE => "bad_input",
        EXIT_VERIFY => "verify_failed",
        _ => "failed",
    }
}

/// Text for people on stdout. With `--json -` (or `--csv -`) it goes to stderr instead, so that
/// stdout stays one valid document.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => { $crate::console::say(&format!($($t)*)) };
}

/// `say!` with a newline.
#[macro_export]
macro_rules! sayln {
    ($($t:tt)*) => { $crate::console::say(&format!("{}\n", format_args!($($t)*))) };
}

/// A line on stderr; a closed stderr is ignored (there is nowhere left to complain).
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::console::err(&format!("{}\n", format_args!($($t)*))) };
}

static TEXT_TO_STDERR: AtomicBool = AtomicBool::new(false);
/// The first error writing stdout: its errno, or -1 without one; 0 while stdout is fine.
static STDOUT_ERROR: AtomicI32 = AtomicI32::new(0);
static WRITE_FAILED: AtomicBool = AtomicBool::new(false);
/// What the first failed result file was: the `error` of the JSON result written after it.
static WRITE_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Writes `text` to stdout (or stderr, see [`text_to_stderr`]); a failure is remembered.
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

/// Writes `text` to stderr.
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

/// The message of the first result file that could not be written.
pub fn first_write_error() -> Option<String> {
    WRITE_ERROR.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
}

/// Reports a failed write of `path` and remembers that the command failed.
pub fn check_write(path: &Path, result: std::io::Result<()>) {
    if let Err(e) = result {
        output_failed(format!("cannot write {}: {e}", path.display()));
    }
}

/// A result file that could not be written (whole): printed, and remembered both for the exit
/// code ([`write_failed`]) and for the `error` of the JSON result, which is written last.
pub fn output_failed(message: String) {
    WRITE_FAILED.store(true, Ordering::SeqCst);
    errln!("iolens: error: {message}");
    WRITE_ERROR.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get_or_insert(message);
}
