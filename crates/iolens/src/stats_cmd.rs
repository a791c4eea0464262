//! `iolens doe`, `iolens doe analyze` and `iolens correlate`: experiment studies and their
//! statistics: flags into `iolens_stats::study` (the analysis) and `iolens_suites::doe` (the
//! runs), the text from `iolens_report::text::study`.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolens_engine::TargetPolicy;
use iolens_report::text::study::{
    render_correlation, render_plan, render_study, render_study_outcome, render_study_run,
};
use iolens_stats::csv::CsvTable;
use iolens_stats::study::{analyze_study, correlate_table, dataset_of_table, goal_of_response, StudyOptions};
use iolens_stats::Goal;
use iolens_suites::doe::{run_study, Plan};

use crate::cli::{CorrelateArgs, DoeAnalyzeArgs, DoeArgs, DoeCommand};
use crate::output::{write_json_or_warn, write_result, ProgressLine, EXIT_FAILED, EXIT_USAGE};

/// Reports an error (with JSON when asked) and gives the exit code.
fn fail(json: &Option<PathBuf>, message: &str, code: u8) -> u8 {
    crate::output::report_error(json.as_deref(), message, false, code)
}

/// Reads a CSV for `doe analyze` or `correlate`; errors name the file, line and column.
fn read_csv(path: &Path) -> Result<CsvTable, String> {
    iolens_stats::csv::read_csv(path).map_err(|e| e.to_string())
}

pub fn doe(a: DoeArgs, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    match a.action {
        Some(DoeCommand::Analyze(x)) => analyze(x),
        None => {
            let Some(plan_path) = a.plan else {
                errln!("iolens: error: give a plan: iolens doe PLAN.toml (or iolens doe analyze DATA.csv)");
                return Err(EXIT_USAGE);
            };
            run_plan(&plan_path, a.out, a.allow_overwrite, a.quiet, stop)
        }
    }
}

fn run_plan(
    plan_path: &Path,
    out: Option<PathBuf>,
    allow_overwrite: bool,
    quiet: bool,
    stop: &Arc<AtomicBool>,
) -> Result<(), u8> {
    let plan = Plan::load(plan_path).map_err(|e| fail(&None, &e.to_string(), EXIT_USAGE))?;
    let csv = out.unwrap_or_else(|| plan_path.with_extension("csv"));
    sayln!("{}", render_plan(&plan, &csv));
    let progress = ProgressLine::new(quiet, "doe");
    // Every run starts from the device, as a suite's points do.
    let policy = TargetPolicy { allow_overwrite, keep_cache: false, drop_cache: true, sparse: false };
    let outcome = run_study(&plan, &csv, policy, stop, &progress, |run, result, i, n| {
        if !quiet {
            errln!("{}", render_study_run(&plan, run, result.aggregate.bw_bytes_s, i, n));
        }
    });
    progress.finish();
    let outcome = outcome.map_err(|e| fail(&None, &e.to_string(), EXIT_FAILED))?;
    say!("{}", render_study_outcome(&plan, &outcome, &csv));
    Ok(())
}

fn analyze(a: DoeAnalyzeArgs) -> Result<(), u8> {
    let bad = |m: String| fail(&a.json, &m, EXIT_USAGE);
    let data = read_csv(&a.data).map_err(bad)?;
    let dataset = dataset_of_table(&data, &a.response, &a.factors).map_err(bad)?;
    let goal = match a.goal.as_deref() {
        Some("min") => Goal::Minimize,
        Some("max") => Goal::Maximize,
        Some(other) => return Err(bad(format!("--goal: {other:?} is neither max nor min"))),
        None => goal_of_response(&a.response),
    };
    let opts = StudyOptions { log: a.log, interactions: a.interactions, full: a.full, alpha: a.alpha, goal };
    let data_name = a.data.display().to_string();
    let report = analyze_study(&data_name, &a.response, &dataset, &a.factors, &opts)
        .map_err(|e| fail(&a.json, &e.to_string(), EXIT_FAILED))?;
    say!("{}", render_study(&report));
    if let Some(path) = &a.json {
        let job = serde_json::json!({
            "suite": "doe",
            "data": data_name,
            "response": a.response,
            "factors": a.factors,
            "log_response": a.log,
            "interactions": a.interactions.max(1),
            "full": a.full,
            "alpha": a.alpha,
            "goal": report.goal,
        });
        write_result(path, &report, Some(job));
    }
    Ok(())
}

pub fn correlate(a: CorrelateArgs) -> Result<(), u8> {
    let bad = |m: String| fail(&a.json, &m, EXIT_USAGE);
    let data = read_csv(&a.data).map_err(bad)?;
    let report = correlate_table(&data, &a.time, &a.metrics, &a.expect).map_err(bad)?;
    say!("{}", render_correlation(&report));
    if let Some(path) = &a.json {
        write_json_or_warn(path, &report);
    }
    Ok(())
}
