//! `iolens compare BASE.json OTHER.json…`: flags into [`iolens_report::compare`], the tables
//! printed, the JSON written. `--fail-if-slower` turns a throughput drop into an exit status for
//! CI.

use iolens_report::compare::{compare_files, parse_percent, render};

use crate::cli::CompareArgs;
use crate::output::{report_error, write_json_or_warn, EXIT_USAGE};

/// Exit status when `--fail-if-slower` found a throughput drop beyond its limit.
pub const EXIT_SLOWER: u8 = 4;

pub fn compare(a: CompareArgs) -> Result<(), u8> {
    let json = a.json.as_deref();
    let usage = |message: String| report_error(json, &message, false, EXIT_USAGE);
    let limit = a.fail_if_slower.as_deref().map(parse_percent).transpose().map_err(usage)?;
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return Err(usage(format!("--alpha {}: a significance level is inside (0, 1), e.g. 0.05", a.alpha)));
    }
    let report = compare_files(&a.files, a.alpha, limit).map_err(usage)?;
    say!("{}", render(&report));
    if let Some(path) = json {
        write_json_or_warn(path, &report);
    }
    if report.failed {
        return Err(EXIT_SLOWER);
    }
    Ok(())
}
