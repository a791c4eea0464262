//! `iolens compare BASE.json OTHER.json…`: every other result against the first, figure by
//! figure, with ratios, which way is better, and whether a difference exceeds the noise the
//! repetitions show. `--fail-if-slower` turns a throughput drop into an exit status for CI.

use std::io::Read;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::cli::CompareArgs;
use crate::output::{report_error, write_json_or_warn, EXIT_USAGE};
use crate::result_figures::{self, Better, Figure, ResultFigures};

/// Exit status when `--fail-if-slower` found a throughput drop beyond its limit.
pub const EXIT_SLOWER: u8 = 4;

/// Results are at most a few megabytes; a larger file is not one (and is not read whole).
const MAX_RESULT_BYTES: u64 = 256 << 20;

#[derive(Serialize)]
struct Report {
    /// p-value under which a Welch test calls a difference significant.
    alpha: f64,
    /// The `--fail-if-slower` limit as a fraction (0.05 for `5%`).
    fail_if_slower: Option<f64>,
    failed: bool,
    /// Throughput figures that dropped beyond the limit (significantly, where testable).
    slower: Vec<Slower>,
    comparisons: Vec<Comparison>,
}

impl iolens_report::Body for Report {}

#[derive(Serialize)]
struct Source {
    file: String,
    kind: &'static str,
    repetitions: usize,
    interrupted: bool,
}

#[derive(Serialize)]
struct Comparison {
    before: Source,
    after: Source,
    figures: Vec<FigureComparison>,
    /// Figures present in only one of the two results.
    unmatched: Vec<String>,
}

#[derive(Serialize)]
struct Side {
    n: usize,
    mean: f64,
    ci95_low: Option<f64>,
    ci95_high: Option<f64>,
}

#[derive(Serialize)]
struct Test {
    /// `welch` (both sides repeated) or `ci95` (one value against the other side's 95% interval).
    method: &'static str,
    p_value: Option<f64>,
    t: Option<f64>,
    degrees_of_freedom: Option<f64>,
}

#[derive(Serialize)]
struct FigureComparison {
    figure: String,
    metric: &'static str,
    better: &'static str,
    throughput: bool,
    before: Side,
    after: Side,
    /// Mean after / mean before; absent when the mean before is 0.
    ratio: Option<f64>,
    /// `better`, `worse`, `same` (equal, or a difference within the noise), or `-` for
    /// metrics with no better direction.
    verdict: &'static str,
    /// Whether the difference exceeds the noise; null when neither side has repetitions.
    significant: Option<bool>,
    test: Option<Test>,
}

#[derive(Serialize)]
struct Slower {
    file: String,
    figure: String,
    metric: &'static str,
    ratio: f64,
}

pub fn compare(a: CompareArgs) -> Result<(), u8> {
    let json = a.json.as_deref();
    let usage = |message: String| report_error(json, &message, false, EXIT_USAGE);
    let limit = a.fail_if_slower.as_deref().map(parse_percent).transpose().map_err(usage)?;
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return Err(usage(format!("--alpha {}: a significance level is inside (0, 1), e.g. 0.05", a.alpha)));
    }
    let results = a.files.iter().map(|f| load(f)).collect::<Result<Vec<_>, _>>().map_err(usage)?;
    let (base_file, base) = (&a.files[0], &results[0]);
    for (file, other) in a.files.iter().zip(&results).skip(1) {
        if other.family() != base.family() {
            return Err(usage(format!(
                "{} ({}) and {} ({}) cannot be compared: compare results of the same command",
                base_file.display(),
                base.kind,
                file.display(),
                other.kind
            )));
        }
    }
    let mut report = Report {
        alpha: a.alpha,
        fail_if_slower: limit,
        failed: false,
        slower: Vec::new(),
        comparisons: Vec::new(),
    };
    for (file, other) in a.files.iter().zip(&results).skip(1) {
        let comparison = compare_pair(base_file, base, file, other, a.alpha);
        if let Some(limit) = limit {
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
    print_report(&report);
    if let Some(path) = json {
        write_json_or_warn(path, &report);
    }
    if report.failed {
        return Err(EXIT_SLOWER);
    }
    Ok(())
}

/// `5%`, `5` (percent) → 0.05.
fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(p) if p > 0.0 && p < 100.0 => Ok(p / 100.0),
        _ => Err(format!("--fail-if-slower {text:?}: expected a percentage between 0 and 100, e.g. 5%")),
    }
}

/// Reads and parses one result file; every error names the file (and the line, for bad JSON).
fn load(path: &Path) -> Result<ResultFigures, String> {
    let doc = read_result_file(path)?;
    result_figures::read(&doc).map_err(|e| format!("{}: {e}", path.display()))
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

fn print_report(report: &Report) {
    for c in &report.comparisons {
        sayln!(
            "{} ({}, {}) → {} ({}, {})",
            c.before.file,
            c.before.kind,
            repetitions(c.before.repetitions),
            c.after.file,
            c.after.kind,
            repetitions(c.after.repetitions)
        );
        for s in [&c.before, &c.after].into_iter().filter(|s| s.interrupted) {
            sayln!("note: {} is from an interrupted run", s.file);
        }
        let mut rows =
            vec![["figure", "metric", "before", "after", "after/before", "change", "verdict", "test"]
                .map(String::from)];
        for f in &c.figures {
            rows.push([
                f.figure.clone(),
                f.metric.to_string(),
                with_interval(&f.before),
                with_interval(&f.after),
                f.ratio.map_or("-".into(), |r| format!("{r:.3}")),
                f.ratio.map_or("-".into(), |r| format!("{:+.1}%", (r - 1.0) * 100.0)),
                f.verdict.to_string(),
                match (&f.test, f.significant) {
                    (Some(Test { p_value: Some(p), .. }), _) => format!("Welch p={p:.3}"),
                    (Some(Test { method: "welch", .. }), _) => "no spread".into(),
                    (Some(_), Some(true)) => "outside 95% CI".into(),
                    (Some(_), _) => "inside 95% CI".into(),
                    (None, _) => "untested".into(),
                },
            ]);
        }
        print_table(&rows);
        if !c.unmatched.is_empty() {
            sayln!("only in one of the two: {}", c.unmatched.join(", "));
        }
    }
    sayln!(
        "before, after: mean ±half the 95% interval of the repetitions; after/before: ratio of means; verdict: better/worse by the metric's direction, same within the noise \
         (Welch's t-test at p < {} when both sides are repeated, the 95% interval when one is; untested without repetitions)",
        report.alpha
    );
    for s in &report.slower {
        sayln!(
            "slower: {} {} {} is {:.1}% below the baseline (limit {:.1}%)",
            s.file,
            s.figure,
            s.metric,
            (1.0 - s.ratio) * 100.0,
            report.fail_if_slower.unwrap_or_default() * 100.0
        );
    }
}

fn repetitions(n: usize) -> String {
    if n == 1 {
        "1 run".into()
    } else {
        format!("{n} repetitions")
    }
}

fn with_interval(s: &Side) -> String {
    match (s.ci95_low, s.ci95_high) {
        (Some(low), Some(high)) => format!("{} ±{}", short(s.mean), short((high - low) / 2.0)),
        _ => short(s.mean),
    }
}

/// Four significant digits with an SI suffix: figures span nanoseconds to gigabytes per second.
fn short(v: f64) -> String {
    let magnitude = v.abs();
    let (scaled, suffix) = if magnitude >= 1e9 {
        (v / 1e9, "G")
    } else if magnitude >= 1e6 {
        (v / 1e6, "M")
    } else if magnitude >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if scaled == 0.0 {
        return "0".into();
    }
    if scaled.abs() < 1e-3 {
        return format!("{v:.3e}");
    }
    let decimals = (3 - scaled.abs().log10().floor().clamp(-3.0, 3.0) as i32).max(0) as usize;
    format!("{scaled:.decimals$}{suffix}")
}

fn print_table(rows: &[[String; 8]]) {
    let widths: Vec<usize> =
        (0..8).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| if i < 2 { format!("{cell:<w$}") } else { format!("{cell:>w$}") })
            .collect();
        sayln!("{}", line.join("  ").trim_end());
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn short_numbers_keep_four_significant_digits() {
        assert_eq!(short(535_803.6), "535.8k");
        assert_eq!(short(2.1947e9), "2.195G");
        assert_eq!(short(0.1538), "0.1538");
        assert_eq!(short(1.48e-6), "1.480e-6");
        assert_eq!(short(701.0), "701.0");
        assert_eq!(short(0.0), "0");
    }
}
