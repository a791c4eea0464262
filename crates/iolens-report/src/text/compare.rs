//! The comparison in the terminal: per pair, a table of figures with both sides' means and
//! intervals, the ratio, the verdict and the test that decided it.

use std::fmt::Write;

use super::number::short;
use super::table::Table;
use crate::compare::{CompareReport, Side, Test};

const COLUMNS: [&str; 8] =
    ["figure", "metric", "before", "after", "after/before", "change", "verdict", "test"];

/// `writeln!` into a String, which cannot fail.
macro_rules! push_line {
    ($out:expr, $($t:tt)*) => {{ let _ = writeln!($out, $($t)*); }};
}

/// The comparison as tables for the terminal, one per pair.
pub fn render(report: &CompareReport) -> String {
    let mut out = String::new();
    for c in &report.comparisons {
        push_line!(
            out,
            "{} ({}, {}) → {} ({}, {})",
            c.before.file,
            c.before.kind,
            repetitions(c.before.repetitions),
            c.after.file,
            c.after.kind,
            repetitions(c.after.repetitions)
        );
        for s in [&c.before, &c.after].into_iter().filter(|s| s.interrupted) {
            push_line!(out, "note: {} is from an interrupted run", s.file);
        }
        let mut rows = Vec::new();
        for f in &c.figures {
            rows.push(vec![
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
        Table { header: COLUMNS.to_vec(), rows, left_aligned: vec![1] }.render(&mut out);
        if !c.unmatched.is_empty() {
            push_line!(out, "only in one of the two: {}", c.unmatched.join(", "));
        }
    }
    push_line!(
        out,
        "before, after: mean ±half the 95% interval of the repetitions; after/before: ratio of means; verdict: better/worse by the metric's direction, same within the noise \
         (Welch's t-test at p < {} when both sides are repeated, the 95% interval when one is; untested without repetitions)",
        report.alpha
    );
    for s in &report.slower {
        push_line!(
            out,
            "slower: {} {} {} is {:.1}% below the baseline (limit {:.1}%)",
            s.file,
            s.figure,
            s.metric,
            (1.0 - s.ratio) * 100.0,
            report.fail_if_slower.unwrap_or_default() * 100.0
        );
    }
    out
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
