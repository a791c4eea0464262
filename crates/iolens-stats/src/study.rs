//! A study analysed end to end, as `iolens doe analyze` and `iolens correlate` report it: the
//! ANOVA of the model asked, the model reduced for parsimony, residual diagnostics, level and
//! cell means, and the recommended configuration; or each metric's correlation with execution
//! time against the direction it should have (BPS paper, Table 1). The results serialize as the
//! commands' JSON; the terminal text is `iolens_report::text::study`'s.

use serde::Serialize;

use crate::{
    anova, cell_means, level_means, recommend, reduce_model, residual_diagnostics, AnovaTable, CellMean,
    Dataset, Direction, Goal, LevelMean, ModelSpec, NormalizedCc, Recommendation, ReductionStep,
    ResidualDiagnostics, ResponseScale, StatsError,
};

/// How a study is analysed.
pub struct StudyOptions {
    /// Analyse the logarithm of the response.
    pub log: bool,
    /// Interactions up to this order in the model asked (1: main effects only).
    pub interactions: usize,
    /// Keep the model asked (no parsimony reduction).
    pub full: bool,
    /// Significance level.
    pub alpha: f64,
    pub goal: Goal,
}

/// One row of an ANOVA table.
#[derive(Debug, Serialize)]
pub struct AnovaRow {
    pub term: String,
    pub df: f64,
    pub sum_sq: f64,
    pub mean_sq: f64,
    #[serde(rename = "F")]
    pub f: Option<f64>,
    pub p: Option<f64>,
}

fn anova_rows(t: &AnovaTable) -> Vec<AnovaRow> {
    t.rows
        .iter()
        .map(|r| AnovaRow {
            term: r.term.clone(),
            df: r.df,
            sum_sq: r.sum_sq,
            mean_sq: r.mean_sq,
            f: r.f,
            p: r.p,
        })
        .collect()
}

/// The cell means of a two-factor interaction.
#[derive(Debug, Serialize)]
pub struct InteractionTable {
    pub term: String,
    pub p: Option<f64>,
    pub cells: Vec<CellMean>,
}

/// The analysis of a factorial study.
#[derive(Debug, Serialize)]
pub struct StudyAnalysis {
    pub data: String,
    pub response: String,
    pub log_response: bool,
    pub alpha: f64,
    pub rows: usize,
    /// The terms of the model asked, for the heading (the JSON has them as the ANOVA's rows).
    #[serde(skip)]
    pub model_terms: Vec<String>,
    /// The model as asked: main effects plus interactions up to `interactions`.
    pub anova: Vec<AnovaRow>,
    pub r_squared: f64,
    pub adj_r_squared: f64,
    pub diagnostics: Option<ResidualDiagnostics>,
    pub diagnostics_note: Option<String>,
    /// Interactions dropped one at a time for parsimony (empty with `full`).
    pub removed: Vec<ReductionStep>,
    /// Whether the model was kept as asked.
    #[serde(skip)]
    pub full: bool,
    pub final_model: Vec<String>,
    pub final_anova: Vec<AnovaRow>,
    pub final_r_squared: f64,
    pub final_adj_r_squared: f64,
    pub level_means: Vec<(String, Vec<LevelMean>)>,
    pub significant_interactions: Vec<InteractionTable>,
    /// Cell means of every two-factor interaction of the model asked, significant or not:
    /// the data of interaction plots (p from the model asked).
    pub interaction_means: Vec<InteractionTable>,
    pub goal: String,
    pub recommendations: Vec<Recommendation>,
}

/// Which way `metric` is better: the metric catalogue's word for a metric of iolens (so a study
/// and `compare` never disagree), else what the name says (times and latencies small, rates
/// large); `None` when neither tells.
fn better_of(metric: &str) -> Option<bool> {
    use iolens_metrics::catalogue::{lookup, Better};
    match lookup(metric).map(|m| m.better) {
        Some(Better::Higher) => return Some(true),
        Some(Better::Lower) => return Some(false),
        Some(Better::Neither) | None => {}
    }
    let m = metric.to_ascii_lowercase();
    if ["arpt", "lat", "response", "wall", "busy", "time"].iter().any(|k| m.contains(k)) {
        Some(false)
    } else if ["iops", "bw", "bandwidth", "bps"].iter().any(|k| m.contains(k)) {
        Some(true)
    } else {
        None
    }
}

/// The goal a response suggests ([`better_of`]); a name that tells nothing is maximized.
pub fn goal_of_response(response: &str) -> Goal {
    match better_of(response) {
        Some(false) => Goal::Minimize,
        _ => Goal::Maximize,
    }
}

/// Analyses `dataset` (its response named `response`, read from `data`).
pub fn analyze_study(
    data: &str,
    response: &str,
    dataset: &Dataset,
    factors: &[String],
    opts: &StudyOptions,
) -> Result<StudyAnalysis, StatsError> {
    let scale = if opts.log { ResponseScale::Log } else { ResponseScale::Raw };
    let spec = ModelSpec::up_to_order(factors, opts.interactions.max(1));
    let full = anova(dataset, &spec, scale)?;
    let (removed, final_table) = if opts.full {
        (Vec::new(), full.clone())
    } else {
        let r = reduce_model(dataset, &spec, scale, opts.alpha)?;
        (r.steps, r.table)
    };
    let (diagnostics, diagnostics_note) = match residual_diagnostics(dataset, &final_table, factors) {
        Ok(d) => (Some(d), None),
        Err(e) => (None, Some(format!("residual diagnostics not computed: {e}"))),
    };
    let mut level_tables = Vec::new();
    for f in factors {
        level_tables.push((f.clone(), level_means(dataset, f)?));
    }
    let two_factor =
        |table: &AnovaTable, significant_only: bool| -> Result<Vec<InteractionTable>, StatsError> {
            let mut tables = Vec::new();
            for row in &table.rows {
                let parts: Vec<&str> = row.term.split(':').collect();
                if parts.len() == 2 && (!significant_only || row.p.is_some_and(|p| p <= opts.alpha)) {
                    tables.push(InteractionTable {
                        term: row.term.clone(),
                        p: row.p,
                        cells: cell_means(dataset, &parts)?,
                    });
                }
            }
            Ok(tables)
        };
    let significant_interactions = two_factor(&final_table, true)?;
    let interaction_means = two_factor(&full, false)?;
    let recommendations = recommend(dataset, &final_table, opts.goal, opts.alpha)?;
    let model_terms = spec.terms(dataset)?.iter().map(|t| t.name()).collect();
    Ok(StudyAnalysis {
        data: data.to_string(),
        response: response.to_string(),
        log_response: opts.log,
        alpha: opts.alpha,
        rows: dataset.len(),
        model_terms,
        anova: anova_rows(&full),
        r_squared: full.r_squared,
        adj_r_squared: full.adj_r_squared,
        diagnostics,
        diagnostics_note,
        removed,
        full: opts.full,
        final_model: final_table.rows.iter().map(|r| r.term.clone()).filter(|t| t != "Residual").collect(),
        final_anova: anova_rows(&final_table),
        final_r_squared: final_table.r_squared,
        final_adj_r_squared: final_table.adj_r_squared,
        level_means: level_tables,
        significant_interactions,
        interaction_means,
        goal: if opts.goal == Goal::Maximize { "maximize".into() } else { "minimize".into() },
        recommendations,
    })
}

/// The expected direction of a metric's correlation with execution time (BPS paper, Table 1):
/// a metric better higher falls as the run time grows (negative), one better lower rises with
/// it (positive); `None` for a name that tells neither (see [`better_of`]). Elapsed times
/// (`wall_s`, `busy_s`) are the run time itself, not metrics judged against it.
pub fn built_in_direction(metric: &str) -> Option<Direction> {
    let m = metric.to_ascii_lowercase();
    let per_operation = ["arpt", "response", "lat"].iter().any(|k| m.contains(k));
    if !per_operation && ["wall", "busy", "time"].iter().any(|k| m.contains(k)) {
        return None;
    }
    better_of(metric).map(|higher| if higher { Direction::Negative } else { Direction::Positive })
}

/// One metric's correlation with execution time.
#[derive(Debug, Serialize)]
pub struct CorrelationRow {
    pub name: String,
    pub cc: f64,
    pub normalized_cc: f64,
    pub direction_ok: bool,
    pub expected: &'static str,
    pub p: f64,
    pub n: usize,
}

/// Every metric's correlation with execution time.
#[derive(Debug, Serialize)]
pub struct CorrelationReport {
    pub data: String,
    pub time: String,
    pub metrics: Vec<CorrelationRow>,
    /// Rows correlated, for the heading.
    #[serde(skip)]
    pub rows: usize,
}

/// The correlation of `values` with `time`, judged against `direction`.
pub fn correlation_row(
    name: &str,
    values: &[f64],
    time: &[f64],
    direction: Direction,
) -> Result<CorrelationRow, StatsError> {
    let test = crate::pearson_test(values, time)?;
    let n = NormalizedCc::new(test.r, direction);
    Ok(CorrelationRow {
        name: name.to_string(),
        cc: n.cc,
        normalized_cc: n.normalized_cc,
        direction_ok: n.direction_ok,
        expected: if direction == Direction::Negative { "negative" } else { "positive" },
        p: test.p,
        n: test.n,
    })
}

/// An analysis has no interruption, warnings or failure of its own to tell the envelope.
impl iolens_output::contract::Body for StudyAnalysis {}

impl iolens_output::contract::Body for CorrelationReport {}

/// `doe analyze`'s data from a CSV table: the `response` column (numbers) by the levels of the
/// `factors` columns (text). Errors name the file, the flag and the closest column.
pub fn dataset_of_table(
    data: &crate::csv::CsvTable,
    response: &str,
    factors: &[String],
) -> Result<Dataset, String> {
    let values = data.numbers("--response", response).map_err(|e| e.to_string())?;
    if factors.is_empty() {
        return Err("--factors: name the factor columns, e.g. --factors direct,qd,bs".into());
    }
    let mut levels = vec![Vec::new(); data.rows.len()];
    for f in factors {
        let column = data.texts("--factors", f).map_err(|e| e.to_string())?;
        for (value, lv) in column.into_iter().zip(levels.iter_mut()) {
            lv.push(value);
        }
    }
    Dataset::new(factors.to_vec(), levels, values).map_err(|e| e.to_string())
}

/// `--expect NAME:neg|pos`: the direction a metric should correlate with run time.
fn expected_direction(text: &str) -> Result<(String, Direction), String> {
    let (name, dir) =
        text.split_once(':').ok_or_else(|| format!("--expect {text:?}: write name:neg or name:pos"))?;
    let dir = match dir {
        "neg" | "negative" | "-" => Direction::Negative,
        "pos" | "positive" | "+" => Direction::Positive,
        other => return Err(format!("--expect {text:?}: {other:?} is neither neg nor pos")),
    };
    Ok((name.to_string(), dir))
}

/// `correlate`: each of `metrics` (by default every column with a built-in direction) against
/// the run-time column `time` of `data`, each expected to go the way `expect` (`name:neg`) or
/// the built-in direction says. Constant columns are refused by name: the correlation itself
/// would only say "NaN".
pub fn correlate_table(
    data: &crate::csv::CsvTable,
    time: &str,
    metrics: &[String],
    expect: &[String],
) -> Result<CorrelationReport, String> {
    let times = data.varying_numbers("--time", time).map_err(|e| e.to_string())?;
    let expected = expect.iter().map(|e| expected_direction(e)).collect::<Result<Vec<_>, _>>()?;
    let metrics: Vec<String> = if metrics.is_empty() {
        data.header.iter().filter(|h| **h != time && built_in_direction(h).is_some()).cloned().collect()
    } else {
        metrics.to_vec()
    };
    if metrics.is_empty() {
        return Err("no metric columns: name them with --metrics iops,bw,arpt,bps".into());
    }
    // A misspelt --expect would be ignored without a word: its metric must be one correlated.
    for (name, _) in &expected {
        if !metrics.contains(name) {
            let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
            let near = iolens_output::hint::closest(name, &names)
                .map(|k| format!("did you mean {k:?}? "))
                .unwrap_or_default();
            return Err(format!(
                "--expect {name:?}: not a metric correlated here\n  hint: {near}the metrics are {}",
                names.join(", ")
            ));
        }
    }
    let mut rows = Vec::new();
    for m in &metrics {
        let values = data.varying_numbers("--metrics", m).map_err(|e| e.to_string())?;
        let direction = expected
            .iter()
            .find(|(n, _)| n == m)
            .map(|(_, d)| *d)
            .or_else(|| built_in_direction(m))
            .ok_or_else(|| {
                format!("{m}: no expected direction is built in\n  hint: add --expect {m}:neg (or :pos)")
            })?;
        rows.push(correlation_row(m, &values, &times, direction).map_err(|e| format!("{m}: {e}"))?);
    }
    Ok(CorrelationReport {
        data: data.file.clone(),
        time: time.to_string(),
        metrics: rows,
        rows: times.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The metric catalogue decides which way a metric of iolens is better; names outside it
    /// (a study's own columns, the paper's short names) are read by what they say.
    #[test]
    fn goals_and_directions_follow_the_metric_catalogue() {
        for m in iolens_metrics::catalogue::CATALOGUE {
            let (goal, direction) = match m.better {
                iolens_metrics::catalogue::Better::Higher => (Goal::Maximize, Some(Direction::Negative)),
                iolens_metrics::catalogue::Better::Lower => (Goal::Minimize, Some(Direction::Positive)),
                iolens_metrics::catalogue::Better::Neither => continue,
            };
            assert_eq!(goal_of_response(m.name), goal, "{}", m.name);
            assert_eq!(built_in_direction(m.name), direction, "{}", m.name);
        }
        assert_eq!(goal_of_response("runtime"), Goal::Minimize);
        assert_eq!(goal_of_response("bw"), Goal::Maximize);
        assert_eq!(built_in_direction("ARPT"), Some(Direction::Positive));
        assert_eq!(built_in_direction("bw"), Some(Direction::Negative));
        assert_eq!(built_in_direction("hostname"), None);
        assert_eq!(built_in_direction("response_time"), Some(Direction::Positive));
        assert_eq!(built_in_direction("wall_s"), None, "the run time is not judged against itself");
    }
}
