//! The comparison in the terminal: per pair, a table of figures with both sides' means and
//! intervals, the ratio, the verdict and the test that decided it.

use std::fmt::Write;

use super::{CompareReport, Side, Test};

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
        table(&rows, &mut out);
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

fn table(rows: &[[String; 8]], out: &mut String) {
    let widths: Vec<usize> =
        (0..8).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| if i < 2 { format!("{cell:<w$}") } else { format!("{cell:>w$}") })
            .collect();
        push_line!(out, "{}", line.join("  ").trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
