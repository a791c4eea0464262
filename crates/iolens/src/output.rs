//! What the binary adds to the library's console and result writing: the raw-argument lookup of
//! result flags (before or without clap) and the error of a command given its output flags.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

pub use iolens_output::console::{
    check_write, stdout_error, text_to_stderr, write_failed, EXIT_FAILED, EXIT_USAGE, EXIT_VERIFY,
};
pub use iolens_report::progress::{ProgressLine, ReadingLine};
#[cfg(feature = "parquet")]
pub use iolens_report::publish::parquet_envelope;
pub use iolens_report::publish::{
    report_error, report_error_document, write_json_copies, write_json_or_warn, write_result,
};

use crate::cli::OutputArgs;

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
pub fn fail(out: &OutputArgs, message: &str, interrupted: bool, code: u8) -> u8 {
    report_error(out.json.as_deref(), message, interrupted, code)
}
