//! Comparing results: every other result against the first, figure by figure, with ratios,
//! which way is better, and whether a difference exceeds the noise the repetitions show
//! (Welch's t-test when both sides are repeated, the 95% interval when one is).
//! [`read_result_file`] is how `compare`, `report` and `quick` read the JSON iolens wrote.

pub mod figures;

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

pub use crate::text::compare::render;
pub use figures::{Better, Figure, ResultFigures};

/// Results are at most a few megabytes; a larger file is not one (and is not read whole).
const MAX_RESULT_BYTES: u64 = 256 << 20;

#[derive(Serialize)]
pub struct CompareReport {
    /// p-value under which a Welch test calls a difference significant.
    pub alpha: f64,
    /// The `--fail-if-slower` limit as a fraction (0.05 for `5%`).
    pub fail_if_slower: Option<f64>,
    pub failed: bool,
    /// Throughput figures that dropped beyond the limit (significantly, where testable).
    pub slower: Vec<Slower>,
    pub comparisons: Vec<Comparison>,
}

impl crate::Body for CompareReport {}

#[derive(Serialize)]
pub struct Source {
    pub file: String,
    pub kind: &'static str,
    pub repetitions: usize,
    pub interrupted: bool,
}

#[derive(Serialize)]
pub struct Comparison {
    pub before: Source,
    pub after: Source,
    pub figures: Vec<FigureComparison>,
    /// Figures present in only one of the two results.
    pub unmatched: Vec<String>,
}

#[derive(Serialize)]
pub struct Side {
    pub n: usize,
    pub mean: f64,
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
}

#[derive(Serialize)]
pub struct Test {
    /// `welch` (both sides repeated) or `ci95` (one value against the other side's 95% interval).
    pub method: &'static str,
    pub p_value: Option<f64>,
    pub t: Option<f64>,
    pub degrees_of_freedom: Option<f64>,
}

#[derive(Serialize)]
pub struct FigureComparison {
    pub figure: String,
    pub metric: &'static str,
    pub better: &'static str,
    pub throughput: bool,
    pub before: Side,
    pub after: Side,
    /// Mean after / mean before; absent when the mean before is 0.
    pub ratio: Option<f64>,
    /// `better`, `worse`, `same` (equal, or a difference within the noise), or `-` for
    /// metrics with no better direction.
    pub verdict: &'static str,
    /// Whether the difference exceeds the noise; null when neither side has repetitions.
    pub significant: Option<bool>,
    pub test: Option<Test>,
}

#[derive(Serialize)]
pub struct Slower {
    pub file: String,
    pub figure: String,
    pub metric: &'static str,
    pub ratio: f64,
}

/// Compares every result after the first with the first; `fail_if_slower` (a fraction) lists
/// the throughput figures that dropped beyond it. Results of different commands are refused.
pub fn compare_files(
    files: &[PathBuf],
    alpha: f64,
    fail_if_slower: Option<f64>,
) -> Result<CompareReport, String> {
    let results = files.iter().map(|f| load(f)).collect::<Result<Vec<_>, _>>()?;
    let (base_file, base) = (&files[0], &results[0]);
    for (file, other) in files.iter().zip(&results).skip(1) {
        if other.family() != base.family() {
            return Err(format!(
                "{} ({}) and {} ({}) cannot be compared: compare results of the same command",
                base_file.display(),
                base.kind,
                file.display(),
                other.kind
            ));
        }
    }
    let mut report =
        CompareReport { alpha, fail_if_slower, failed: false, slower: Vec::new(), comparisons: Vec::new() };
    for (file, other) in files.iter().zip(&results).skip(1) {
        let comparison = compare_pair(base_file, base, file, other, alpha);
        if let Some(limit) = fail_if_slower {
            for f in &comparison.figures {
                let dropped = f.ratio.is_some_and(|r| r < 1.0 - limit);
                if f.throughput && dropped && f.significant != Some(false) {
                    let ratio = f.ratio.unwrap_or_default();
                    report.slower.push(Slower {
                        file: file.display().to_string(),
                        figure: f.figure.clone(),
                        metric: f.metric,
                        ratio,
                    });
                }
            }
        }
        report.comparisons.push(comparison);
    }
    report.failed = !report.slower.is_empty();
    Ok(report)
}

/// Reads and parses one result file; every error names the file (and the line, for bad JSON).
fn load(path: &Path) -> Result<ResultFigures, String> {
    let doc = read_result_file(path)?;
    figures::read(&doc).map_err(|e| format!("{}: {e}", path.display()))
}

/// An iolens JSON result, read whole but bounded (a FIFO or a huge file cannot exhaust memory);
/// errors name the file, and the line for bad JSON. `compare` and `report` read through this.
pub fn read_result_file(path: &Path) -> Result<Value, String> {
    let name = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("{name}: cannot open: {e}"))?;
    let mut text = Vec::new();
    file.take(MAX_RESULT_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("{name}: cannot read: {e}"))?;
    if text.len() as u64 > MAX_RESULT_BYTES {
        return Err(format!("{name}: larger than {} MiB: not an iolens result", MAX_RESULT_BYTES >> 20));
    }
    serde_json::from_slice(&text).map_err(|e| {
        format!(
            "{name}: line {} column {}: not valid JSON: {e}\n  hint: pass the --json files iolens wrote",
            e.line(),
            e.column()
        )
    })
}

fn source(file: &Path, r: &ResultFigures) -> Source {
    Source {
        file: file.display().to_string(),
        kind: r.kind,
        repetitions: r.repetitions,
        interrupted: r.interrupted,
    }
}

fn compare_pair(
    before_file: &Path,
    before: &ResultFigures,
    after_file: &Path,
    after: &ResultFigures,
    alpha: f64,
) -> Comparison {
    let find = |figures: &'_ [Figure], f: &Figure| -> Option<usize> {
        figures.iter().position(|g| g.figure == f.figure && g.metric.name == f.metric.name)
    };
    let mut figures = Vec::new();
    let mut unmatched: Vec<String> = Vec::new();
    let mut note = |figure: &str| {
        if !unmatched.iter().any(|u| u == figure) {
            unmatched.push(figure.to_string());
        }
    };
    for b in &before.figures {
        match find(&after.figures, b) {
            Some(i) => figures.push(compare_figure(b, &after.figures[i], alpha)),
            None if !after.figures.iter().any(|g| g.figure == b.figure) => note(&b.figure),
            None => {}
        }
    }
    for a in &after.figures {
        if !before.figures.iter().any(|g| g.figure == a.figure) {
            note(&a.figure);
        }
    }
    Comparison { before: source(before_file, before), after: source(after_file, after), figures, unmatched }
}

fn side(values: &[f64]) -> Side {
    match iolens_stats::summarize(values) {
        Ok(s) => Side { n: s.n, mean: s.mean, ci95_low: s.ci95_low, ci95_high: s.ci95_high },
        // The reader admits only non-empty lists of finite numbers.
        Err(_) => Side { n: values.len(), mean: f64::NAN, ci95_low: None, ci95_high: None },
    }
}

fn compare_figure(before: &Figure, after: &Figure, alpha: f64) -> FigureComparison {
    let (b, a) = (side(&before.values), side(&after.values));
    let ratio = (b.mean != 0.0).then(|| a.mean / b.mean).filter(|r| r.is_finite());
    let test = significance(&before.values, &b, &after.values, &a, alpha);
    let significant = test.as_ref().map(|(_, s)| *s);
    let direction = match before.metric.better {
        Better::Higher => a.mean.partial_cmp(&b.mean),
        Better::Lower => b.mean.partial_cmp(&a.mean),
        Better::Neither => None,
    };
    let verdict = match (direction, significant) {
        (None, _) => "-",
        (_, Some(false)) | (Some(std::cmp::Ordering::Equal), _) => "same",
        (Some(std::cmp::Ordering::Greater), _) => "better",
        (Some(std::cmp::Ordering::Less), _) => "worse",
    };
    FigureComparison {
        figure: before.figure.clone(),
        metric: before.metric.name,
        better: before.metric.better.name(),
        throughput: before.metric.throughput,
        before: b,
        after: a,
        ratio,
        verdict,
        significant,
        test: test.map(|(t, _)| t),
    }
}

/// Welch's test when both sides are repeated; with one side repeated, whether the single value
/// lies outside the other's 95% interval; nothing without repetitions.
fn significance(before: &[f64], b: &Side, after: &[f64], a: &Side, alpha: f64) -> Option<(Test, bool)> {
    if before.len() >= 2 && after.len() >= 2 {
        return Some(match iolens_stats::welch_t_test(before, after) {
            Ok(w) => (
                Test {
                    method: "welch",
                    p_value: Some(w.p_value),
                    t: Some(w.t),
                    degrees_of_freedom: Some(w.degrees_of_freedom),
                },
                w.p_value < alpha,
            ),
            // No spread on either side: identical repetitions differ only if their means do.
            Err(_) => {
                (Test { method: "welch", p_value: None, t: None, degrees_of_freedom: None }, a.mean != b.mean)
            }
        });
    }
    let (interval, value) = match (before.len() >= 2, after.len() >= 2) {
        (true, false) => (b, a.mean),
        (false, true) => (a, b.mean),
        _ => return None,
    };
    let (low, high) = (interval.ci95_low?, interval.ci95_high?);
    Some((
        Test { method: "ci95", p_value: None, t: None, degrees_of_freedom: None },
        value < low || value > high,
    ))
}

/// `--fail-if-slower`'s limit: `5%`, `5` (percent) → 0.05.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p / 100.0),
        _ => Err(format!("--fail-if-slower {text:?}: expected a percentage between 0 and 100, e.g. 5%")),
    }
}

#[cfg(test)]
mod percent_tests {
    use super::*;

    #[test]
    fn percentages_parse_with_or_without_the_sign() {
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert_eq!(parse_percent("12.5"), Ok(0.125));
        assert!(parse_percent("0%").is_err());
        assert!(parse_percent("100").is_err());
        assert!(parse_percent("NaN").is_err());
        assert!(parse_percent("-3%").is_err());
    }
}
