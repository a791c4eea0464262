//! Terminal progress and result files shared by the commands.

use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use iolens_engine::{Progress, RunObserver};
use iolens_report::ErrorReport;

use crate::cli::OutputArgs;

/// Exit code for bad input (arguments, job files).
pub const EXIT_USAGE: u8 = 2;
/// Exit code for a run that failed or ended with an error.
pub const EXIT_FAILED: u8 = 1;

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

/// Prints an error to stderr and, when asked for JSON, leaves a valid JSON error report.
pub fn fail(out: &OutputArgs, command: &str, message: &str, interrupted: bool, code: u8) -> u8 {
    report_error(out.json.as_deref(), command, message, interrupted, code)
}

/// Prints the error, writes it as the JSON result when one was asked for, and gives `code`.
pub fn report_error(json: Option<&Path>, command: &str, message: &str, interrupted: bool, code: u8) -> u8 {
    eprintln!("iolens: error: {message}");
    if let Some(path) = json {
        write_json_or_warn(path, &ErrorReport::new(command.to_string(), message.to_string(), interrupted));
    }
    code
}

pub fn write_json_or_warn<T: serde::Serialize>(path: &Path, value: &T) {
    if let Err(e) = iolens_report::write_json_atomic(path, value) {
        eprintln!("iolens: error: cannot write {}: {e}", path.display());
    }
}
