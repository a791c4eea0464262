//! `iolens doe`, `iolens doe analyze` and `iolens correlate`: experiment studies and their
//! statistics (the math lives in `iolens_stats`, the runs in `iolens_suites::doe`).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolens_engine::TargetPolicy;
use iolens_report::table::Table;
use iolens_stats::csv::CsvTable;
use iolens_stats::{
    anova, cell_means, level_means, recommend, reduce_model, residual_diagnostics, AnovaTable, Dataset,
    Direction, Goal, ModelSpec, NormalizedCc, ResponseScale, TestOutcome,
};
use iolens_suites::doe::{run_study, Plan};
use serde::Serialize;

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

/// Whether `data` has the column `name` that `flag` names; if not, the error names the file and
/// the closest column (`bw` for `BW`, `time` for `tme`) before listing them all.
fn known_column(data: &CsvTable, flag: &str, name: &str) -> Result<(), String> {
    let Err(mut e) = data.column(flag, name) else { return Ok(()) };
    let header: Vec<&str> = data.header.iter().map(String::as_str).collect();
    let near = header.iter().find(|h| h.eq_ignore_ascii_case(name)).map(|h| h.to_string());
    if let Some(k) = near.or_else(|| iolens_workload::suggest(name, &header)) {
        e.hint = Some(format!("did you mean {k:?}? {}", e.hint.unwrap_or_default()));
    }
    Err(e.to_string())
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
    let total = plan.runs().len();
    sayln!(
        "doe {}: {} factors, {} combinations × {} replicates = {total} runs in randomized order (seed {}), rows in {}",
        plan_path.display(),
        plan.factors.len(),
        plan.combinations().len(),
        plan.replicates,
        plan.seed,
        csv.display()
    );
    let progress = ProgressLine::new(quiet, "doe");
    // Every run starts from the device, as a suite's points do.
    let policy = TargetPolicy { allow_overwrite, keep_cache: false, drop_cache: true, sparse: false };
    let outcome = run_study(&plan, &csv, policy, stop, &progress, |run, result, i, n| {
        if !quiet {
            let levels: Vec<String> = plan
                .factors
                .iter()
                .zip(&run.levels)
                .map(|(f, &l)| format!("{}={}", f.name, f.levels[l].1))
                .collect();
            errln!(
                "run {i}/{n} (id {}, replicate {}): {} → {}",
                run.run_id,
                run.replicate,
                levels.join(" "),
                iolens_report::table::fmt_mib(result.aggregate.bw_bytes_s)
            );
        }
    });
    progress.finish();
    let outcome = outcome.map_err(|e| fail(&None, &e.to_string(), EXIT_FAILED))?;
    sayln!(
        "{} runs in the study: {} were already done, {} ran now{}",
        outcome.total_runs,
        outcome.already_done,
        outcome.ran,
        if outcome.interrupted { "; interrupted — re-run the same command to resume" } else { "" }
    );
    if !outcome.interrupted {
        let factors: Vec<&str> = plan.factors.iter().map(|f| f.name.as_str()).collect();
        sayln!(
            "analyze: iolens doe analyze {} --response {} --factors {}",
            csv.display(),
            plan.response,
            factors.join(",")
        );
    }
    Ok(())
}

#[derive(Serialize)]
struct AnovaJsonRow {
    term: String,
    df: f64,
    sum_sq: f64,
    mean_sq: f64,
    #[serde(rename = "F")]
    f: Option<f64>,
    p: Option<f64>,
}

fn anova_rows(t: &AnovaTable) -> Vec<AnovaJsonRow> {
    t.rows
        .iter()
        .map(|r| AnovaJsonRow {
            term: r.term.clone(),
            df: r.df,
            sum_sq: r.sum_sq,
            mean_sq: r.mean_sq,
            f: r.f,
            p: r.p,
        })
        .collect()
}

#[derive(Serialize)]
struct InteractionTable {
    term: String,
    p: Option<f64>,
    cells: Vec<iolens_stats::CellMean>,
}

#[derive(Serialize)]
struct AnalysisReport {
    data: String,
    response: String,
    log_response: bool,
    alpha: f64,
    rows: usize,
    /// The model as asked: main effects plus interactions up to `--interactions`.
    anova: Vec<AnovaJsonRow>,
    r_squared: f64,
    adj_r_squared: f64,
    diagnostics: Option<iolens_stats::ResidualDiagnostics>,
    diagnostics_note: Option<String>,
    /// Interactions dropped one at a time for parsimony (empty with `--full`).
    removed: Vec<iolens_stats::ReductionStep>,
    final_model: Vec<String>,
    final_anova: Vec<AnovaJsonRow>,
    final_r_squared: f64,
    final_adj_r_squared: f64,
    level_means: Vec<(String, Vec<iolens_stats::LevelMean>)>,
    significant_interactions: Vec<InteractionTable>,
    /// Cell means of every two-factor interaction of the model asked, significant or not:
    /// the data of interaction plots (p from the model asked).
    interaction_means: Vec<InteractionTable>,
    goal: String,
    recommendations: Vec<iolens_stats::Recommendation>,
}

fn fmt_p(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 1e-4 => format!("{p:.2e}"),
        Some(p) => format!("{p:.4}"),
    }
}

fn render_anova(t: &AnovaTable, out: &mut String) {
    let mut table = Table::new(vec!["term", "df", "sum_sq", "mean_sq", "F", "p"]);
    table.left_aligned = vec![0];
    for r in &t.rows {
        table.rows.push(vec![
            r.term.clone(),
            format!("{}", r.df),
            format!("{:.6e}", r.sum_sq),
            format!("{:.6e}", r.mean_sq),
            r.f.map_or("-".into(), |f| format!("{f:.4}")),
            fmt_p(r.p),
        ]);
    }
    table.render(out);
    out.push_str(&format!("R² {:.4}, adjusted R² {:.4}\n", t.r_squared, t.adj_r_squared));
}

fn test_line(outcome: &TestOutcome) -> String {
    match outcome {
        TestOutcome::Computed(t) => {
            format!("{}: statistic {:.4}, p {}", t.test, t.statistic, fmt_p(Some(t.p)))
        }
        TestOutcome::Skipped { test, skipped } => format!("{test} not computed: {skipped}"),
    }
}

fn analyze(a: DoeAnalyzeArgs) -> Result<(), u8> {
    let bad = |m: String| fail(&a.json, &m, EXIT_USAGE);
    let data = read_csv(&a.data).map_err(bad)?;
    known_column(&data, "--response", &a.response).map_err(bad)?;
    let response = data.numbers("--response", &a.response).map_err(|e| bad(e.to_string()))?;
    if a.factors.is_empty() {
        return Err(bad("--factors: name the factor columns, e.g. --factors direct,qd,bs".into()));
    }
    let mut levels = vec![Vec::new(); data.rows.len()];
    for f in &a.factors {
        known_column(&data, "--factors", f).map_err(bad)?;
        let column = data.texts("--factors", f).map_err(|e| bad(e.to_string()))?;
        for (value, lv) in column.into_iter().zip(levels.iter_mut()) {
            lv.push(value);
        }
    }
    let dataset = Dataset::new(a.factors.clone(), levels, response).map_err(|e| bad(e.to_string()))?;
    let scale = if a.log { ResponseScale::Log } else { ResponseScale::Raw };
    let spec = ModelSpec::up_to_order(&a.factors, a.interactions.max(1));
    let stats = |e: iolens_stats::StatsError| fail(&a.json, &e.to_string(), EXIT_FAILED);
    let full = anova(&dataset, &spec, scale).map_err(stats)?;
    let (removed, final_table) = if a.full {
        (Vec::new(), full.clone())
    } else {
        let r = reduce_model(&dataset, &spec, scale, a.alpha).map_err(stats)?;
        (r.steps, r.table)
    };
    let (diagnostics, diagnostics_note) = match residual_diagnostics(&dataset, &final_table, &a.factors) {
        Ok(d) => (Some(d), None),
        Err(e) => (None, Some(format!("residual diagnostics not computed: {e}"))),
    };
    let goal = match a.goal.as_deref() {
        Some("min") => Goal::Minimize,
        Some("max") => Goal::Maximize,
        Some(other) => return Err(bad(format!("--goal: {other:?} is neither max nor min"))),
        // Times and latencies are better small; rates better large.
        None if ["arpt", "lat", "wall", "busy", "time"].iter().any(|k| a.response.contains(k)) => {
            Goal::Minimize
        }
        None => Goal::Maximize,
    };
    let mut level_tables = Vec::new();
    for f in &a.factors {
        level_tables.push((f.clone(), level_means(&dataset, f).map_err(stats)?));
    }
    let mut interactions = Vec::new();
    for row in &final_table.rows {
        let parts: Vec<&str> = row.term.split(':').collect();
        if parts.len() == 2 && row.p.is_some_and(|p| p <= a.alpha) {
            interactions.push(InteractionTable {
                term: row.term.clone(),
                p: row.p,
                cells: cell_means(&dataset, &parts).map_err(stats)?,
            });
        }
    }
    let mut interaction_means = Vec::new();
    for row in &full.rows {
        let parts: Vec<&str> = row.term.split(':').collect();
        if parts.len() == 2 {
            interaction_means.push(InteractionTable {
                term: row.term.clone(),
                p: row.p,
                cells: cell_means(&dataset, &parts).map_err(stats)?,
            });
        }
    }
    let recommendations = recommend(&dataset, &final_table, goal, a.alpha).map_err(stats)?;

    let mut out = format!(
        "ANOVA (Type II sums of squares) of {}{} in {} ({} runs), model: {}\n",
        if a.log { "log " } else { "" },
        a.response,
        a.data.display(),
        dataset.len(),
        spec.terms(&dataset).map_err(stats)?.iter().map(|t| t.name()).collect::<Vec<_>>().join(" + ")
    );
    render_anova(&full, &mut out);
    if !a.full {
        if removed.is_empty() {
            out.push_str(&format!(
                "\nparsimony: every interaction is significant at {} (or there are none)\n",
                a.alpha
            ));
        } else {
            for s in &removed {
                out.push_str(&format!("parsimony: removed {} (p {})\n", s.removed, fmt_p(s.p)));
            }
            out.push_str("\nfinal model:\n");
            render_anova(&final_table, &mut out);
        }
    }
    match (&diagnostics, &diagnostics_note) {
        (Some(d), _) => out.push_str(&format!(
            "residuals: {}\nresiduals over {} cells of {}: {}\n",
            test_line(&d.normality),
            d.cells,
            d.cell_factors.join(","),
            test_line(&d.equal_variance),
        )),
        (None, Some(note)) => out.push_str(&format!("{note}\n")),
        _ => {}
    }
    for (f, means) in &level_tables {
        let cells: Vec<String> =
            means.iter().map(|m| format!("{} {:.6e} (n {})", m.level, m.mean, m.n)).collect();
        out.push_str(&format!("mean {} by {f}: {}\n", a.response, cells.join(", ")));
    }
    for it in &interactions {
        out.push_str(&format!("significant interaction {} (p {}):\n", it.term, fmt_p(it.p)));
        // The factor names head the first row: the table header takes static names only.
        let mut t = Table::new(vec!["", "", "mean", "n"]);
        t.rows.push(it.term.split(':').map(str::to_string).chain([String::new(), String::new()]).collect());
        for c in &it.cells {
            let mut row = c.levels.clone();
            row.push(format!("{:.6e}", c.mean));
            row.push(c.n.to_string());
            t.rows.push(row);
        }
        t.render(&mut out);
    }
    let mut t = Table::new(vec!["factor", "recommended", "p", "mean"]);
    t.left_aligned = vec![0, 1];
    for r in &recommendations {
        t.rows.push(vec![
            r.factor.clone(),
            r.choice.to_string(),
            fmt_p(r.p),
            r.mean.map_or("-".into(), |m| format!("{m:.6e}")),
        ]);
    }
    out.push_str(&format!(
        "recommended configuration ({} {}; SNS = statistically not significant at {}):\n",
        if goal == Goal::Maximize { "maximize" } else { "minimize" },
        a.response,
        a.alpha
    ));
    t.render(&mut out);
    say!("{out}");

    if let Some(path) = &a.json {
        let report = AnalysisReport {
            data: a.data.display().to_string(),
            response: a.response.clone(),
            log_response: a.log,
            alpha: a.alpha,
            rows: dataset.len(),
            anova: anova_rows(&full),
            r_squared: full.r_squared,
            adj_r_squared: full.adj_r_squared,
            diagnostics,
            diagnostics_note,
            removed,
            final_model: final_table
                .rows
                .iter()
                .map(|r| r.term.clone())
                .filter(|t| t != "Residual")
                .collect(),
            final_anova: anova_rows(&final_table),
            final_r_squared: final_table.r_squared,
            final_adj_r_squared: final_table.adj_r_squared,
            level_means: level_tables,
            significant_interactions: interactions,
            interaction_means,
            goal: if goal == Goal::Maximize { "maximize".into() } else { "minimize".into() },
            recommendations,
        };
        let job = serde_json::json!({
            "suite": "doe",
            "data": a.data.display().to_string(),
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

/// The expected direction of a metric's correlation with execution time (BPS paper, Table 1).
fn built_in_direction(metric: &str) -> Option<Direction> {
    let m = metric.to_ascii_lowercase();
    if m.contains("arpt") || m.contains("response") || m.contains("latency") {
        Some(Direction::Positive)
    } else if m.contains("iops") || m.contains("bw") || m.contains("bandwidth") || m.contains("bps") {
        Some(Direction::Negative)
    } else {
        None
    }
}

impl iolens_report::Body for AnalysisReport {}

impl iolens_report::Body for CorrelationReport {}

#[derive(Serialize)]
struct CorrelationRow {
    name: String,
    cc: f64,
    normalized_cc: f64,
    direction_ok: bool,
    expected: &'static str,
    p: f64,
    n: usize,
}

#[derive(Serialize)]
struct CorrelationReport {
    data: String,
    time: String,
    metrics: Vec<CorrelationRow>,
}

pub fn correlate(a: CorrelateArgs) -> Result<(), u8> {
    let bad = |m: String| fail(&a.json, &m, EXIT_USAGE);
    let data = read_csv(&a.data).map_err(bad)?;
    // Constant columns are refused here, by name: the correlation itself would only say "x".
    known_column(&data, "--time", &a.time).map_err(bad)?;
    let time = data.varying_numbers("--time", &a.time).map_err(|e| bad(e.to_string()))?;
    let mut expected: Vec<(String, Direction)> = Vec::new();
    for e in &a.expect {
        let (name, dir) =
            e.split_once(':').ok_or_else(|| bad(format!("--expect {e:?}: write name:neg or name:pos")))?;
        let dir = match dir {
            "neg" | "negative" | "-" => Direction::Negative,
            "pos" | "positive" | "+" => Direction::Positive,
            other => return Err(bad(format!("--expect {e:?}: {other:?} is neither neg nor pos"))),
        };
        expected.push((name.to_string(), dir));
    }
    let metrics: Vec<String> = if a.metrics.is_empty() {
        data.header.iter().filter(|h| **h != a.time && built_in_direction(h).is_some()).cloned().collect()
    } else {
        a.metrics.clone()
    };
    if metrics.is_empty() {
        return Err(bad("no metric columns: name them with --metrics iops,bw,arpt,bps".into()));
    }
    // A misspelt --expect would be ignored without a word: its metric must be one correlated.
    for (name, _) in &expected {
        if !metrics.contains(name) {
            let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
            let near = iolens_workload::suggest(name, &names)
                .map(|k| format!("did you mean {k:?}? "))
                .unwrap_or_default();
            return Err(bad(format!(
                "--expect {name:?}: not a metric correlated here\n  hint: {near}the metrics are {}",
                names.join(", ")
            )));
        }
    }
    let mut rows = Vec::new();
    for m in &metrics {
        known_column(&data, "--metrics", m).map_err(bad)?;
        let values = data.varying_numbers("--metrics", m).map_err(|e| bad(e.to_string()))?;
        let direction = expected
            .iter()
            .find(|(n, _)| n == m)
            .map(|(_, d)| *d)
            .or_else(|| built_in_direction(m))
            .ok_or_else(|| {
                bad(format!("{m}: no expected direction is built in\n  hint: add --expect {m}:neg (or :pos)"))
            })?;
        let test = iolens_stats::pearson_test(&values, &time).map_err(|e| bad(format!("{m}: {e}")))?;
        let n = NormalizedCc::new(test.r, direction);
        rows.push(CorrelationRow {
            name: m.clone(),
            cc: n.cc,
            normalized_cc: n.normalized_cc,
            direction_ok: n.direction_ok,
            expected: if direction == Direction::Negative { "negative" } else { "positive" },
            p: test.p,
            n: test.n,
        });
    }
    let mut t = Table::new(vec!["metric", "expected", "CC", "normalized CC", "direction", "p"]);
    t.left_aligned = vec![0, 1, 4];
    for r in &rows {
        t.rows.push(vec![
            r.name.clone(),
            r.expected.into(),
            format!("{:.4}", r.cc),
            format!("{:+.4}", r.normalized_cc),
            if r.direction_ok { "right".into() } else { "WRONG".into() },
            fmt_p(Some(r.p)),
        ]);
    }
    let mut out =
        format!("Pearson correlation with {} over {} rows of {}:\n", a.time, time.len(), a.data.display());
    t.render(&mut out);
    out.push_str(
        "normalized CC = |CC|, negative when the sign is not the expected one (a misleading metric)\n",
    );
    say!("{out}");
    if let Some(path) = &a.json {
        let report =
            CorrelationReport { data: a.data.display().to_string(), time: a.time.clone(), metrics: rows };
        write_json_or_warn(path, &report);
    }
    Ok(())
}
