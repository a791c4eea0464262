//! `iolens quick`: flags into [`iolens_suites::quick`], then the summary printed, its JSON
//! written (in the results directory and where `--json` says) and the HTML page beside it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolens_report::export::html;
use iolens_report::progress::PartsOnTerminal;
use iolens_report::text::quick::render;
use iolens_suites::quick::{self, QuickConfig, QuickRun};
use iolens_suites::PointRunner;
use iolens_workload::{parse_duration, parse_size};

use crate::cli::QuickArgs;
use crate::output::{fail, write_json_copies, EXIT_FAILED, EXIT_USAGE};

pub fn quick(
    runner: &dyn PointRunner,
    a: QuickArgs,
    stop: &Arc<AtomicBool>,
    command: String,
) -> Result<(), u8> {
    let out = &a.output;
    if out.csv.is_some() {
        return Err(fail(
            out,
            "--csv: quick writes no CSV\n  hint: each part's full result is JSON in --results DIR; \
             `iolens run --csv` writes one row per agent",
            false,
            EXIT_USAGE,
        ));
    }
    let base = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    crate::suites::target(runner, "", &base, iolens_suites::SUITE_DIR, out)?;
    if !base.is_dir() {
        return Err(fail(out, &format!("{} is not a directory", base.display()), false, EXIT_USAGE));
    }
    let time = parse_duration(&a.time).ok().filter(|d| !d.is_zero()).ok_or_else(|| {
        fail(out, &format!("--time: {:?} is not a positive duration", a.time), false, EXIT_USAGE)
    })?;
    let size = parse_size(&a.size).map_err(|e| fail(out, &format!("--size: {e}"), false, EXIT_USAGE))?;
    let cfg = QuickConfig {
        base,
        time,
        time_text: a.time.clone(),
        size,
        results: a.results.clone().unwrap_or_else(quick::default_results_dir),
        keep: out.keep,
        quiet: out.quiet,
    };
    let QuickRun { report, job, errors } = quick::quick(&PartsOnTerminal, runner, &cfg, stop, command)
        .map_err(|e| fail(out, &e.to_string(), false, EXIT_FAILED))?;
    if runner.rank() != 0 {
        // Rank 0 speaks for the job; every rank had the same parts fail.
        return if errors.is_empty() { Ok(()) } else { Err(EXIT_FAILED) };
    }
    say!("{}", render(&report));
    let summary = cfg.results.join("quick.json");
    let copies: Vec<&Path> = std::iter::once(summary.as_path()).chain(out.json.as_deref()).collect();
    write_json_copies(&copies, &report, Some(job));
    let mut files = vec!["quick.json".to_string()];
    files.extend(report.parts.iter().filter_map(|p| p.json.clone()));
    html::write_results_page(&cfg.results, &files, &format!("iolens {} quick", crate::cli::VERSION));
    if errors.is_empty() {
        Ok(())
    } else {
        for e in &errors {
            errln!("iolens: error: {e}");
        }
        Err(EXIT_FAILED)
    }
}
