//! Repetitions of a run (`run --repeat`) in the terminal: each metric's mean, spread and 95%
//! interval.

use iolens_suites::repeat::MetricRepeats;

use super::table::Table;

fn num(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e5 || v.abs() < 1e-3) {
        format!("{v:.4e}")
    } else {
        format!("{v:.4}")
    }
}

/// The result as text for the terminal.
pub fn render(metrics: &[MetricRepeats]) -> String {
    let n = metrics.first().map_or(0, |m| m.values.len());
    let mut out = format!("over {n} repetitions (aggregate figures; 95% interval from Student's t):\n");
    let mut t = Table::new(vec!["metric", "mean", "std dev", "95% CI low", "95% CI high", "CV"]);
    t.left_aligned = vec![0];
    let opt = |v: Option<f64>| v.map_or("-".to_string(), num);
    for m in metrics {
        t.rows.push(vec![
            m.name.to_string(),
            num(m.mean),
            opt(m.std_dev),
            opt(m.ci95_low),
            opt(m.ci95_high),
            m.cv.map_or("-".into(), |c| format!("{:.1}%", 100.0 * c)),
        ]);
    }
    t.render(&mut out);
    out
}
