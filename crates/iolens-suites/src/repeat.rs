//! Repetitions of one run: each metric's mean, standard deviation, 95% Student-t interval and
//! coefficient of variation, with the values of every repetition kept beside them.

use iolens_metrics::{Figures, RunResult, Warning, WarningCode};
use serde::Serialize;

/// The metrics summarized over repetitions, by their JSON names, and how to read each.
/// A metric's JSON name and how to read it from a run's aggregate figures.
pub type Metric = (&'static str, fn(&Figures) -> f64);

pub const REPEATED_METRICS: &[Metric] = &[
    ("iops", |f| f.iops),
    ("bw_bytes_s", |f| f.bw_bytes_s),
    ("bps", |f| f.bps),
    ("arpt_s", |f| f.arpt_s),
    ("busy_s", |f| f.busy_s),
    ("wall_s", |f| f.wall_s),
    ("io_wait_fraction", |f| f.io_wait_fraction),
    ("lat_p50_ns", |f| f.lat_ns.p50 as f64),
    ("lat_p99_ns", |f| f.lat_ns.p99 as f64),
    ("cpu_per_op_ns", |f| f.cpu.per_op_ns),
];

/// Default threshold of the coefficient of variation above which repetitions are flagged.
pub const DEFAULT_CV_THRESHOLD: f64 = 0.10;

#[derive(Debug, Clone, Serialize)]
pub struct MetricRepeats {
    pub name: &'static str,
    pub mean: f64,
    pub std_dev: Option<f64>,
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    pub cv: Option<f64>,
    /// One value per repetition, in the order they ran.
    pub values: Vec<f64>,
}

/// Summaries of every metric over the aggregate figures of `runs`, and a warning for each
/// metric whose coefficient of variation exceeds `cv_threshold`.
pub fn summarize_runs(runs: &[RunResult], cv_threshold: f64) -> (Vec<MetricRepeats>, Vec<Warning>) {
    let mut metrics = Vec::new();
    let mut warnings = Vec::new();
    for (name, read) in REPEATED_METRICS {
        let values: Vec<f64> = runs.iter().map(|r| read(&r.aggregate)).collect();
        let Ok(s) = iolens_stats::summarize(&values) else { continue };
        if let Some(cv) = s.cv.filter(|cv| cv.abs() > cv_threshold) {
            warnings.push(Warning::new(
                WarningCode::HighVariation,
                format!(
                    "{name} varies by {:.1}% (coefficient of variation) over {} repetitions, above {:.0}%: report the interval, not one run",
                    100.0 * cv.abs(),
                    values.len(),
                    100.0 * cv_threshold
                ),
            ));
        }
        metrics.push(MetricRepeats {
            name,
            mean: s.mean,
            std_dev: s.std_dev,
            ci95_low: s.ci95_low,
            ci95_high: s.ci95_high,
            cv: s.cv,
            values,
        });
    }
    (metrics, warnings)
}

/// One CSV row per repetition with every repeated metric.
pub fn csv(metrics: &[MetricRepeats]) -> String {
    let mut out = String::from("repetition");
    for m in metrics {
        out.push(',');
        out.push_str(m.name);
    }
    out.push('\n');
    let n = metrics.first().map_or(0, |m| m.values.len());
    for i in 0..n {
        out.push_str(&(i + 1).to_string());
        for m in metrics {
            // `{:?}`: always a decimal point, so every row types the column as a float.
            out.push_str(&format!(",{:?}", m.values[i]));
        }
        out.push('\n');
    }
    out
}

/// How the repetitions of a run went, recorded one by one ([`Repetitions::record`]). `R` is one
/// repetition's result: one process's [`RunResult`], or under MPI the combined one.
#[derive(Debug)]
pub struct Repetitions<R> {
    /// The completed repetitions (interrupted or failed ones are not kept).
    pub runs: Vec<R>,
    /// The repetition that failed, and why.
    pub error: Option<String>,
    /// The first repetition whose verification found bad blocks.
    pub verify_error: Option<String>,
}

impl<R> Default for Repetitions<R> {
    fn default() -> Self {
        Repetitions { runs: Vec::new(), error: None, verify_error: None }
    }
}

impl<R> Repetitions<R> {
    /// Records repetition `i` (from 1): its result, read through `aggregate` for its error and
    /// verification; `stopped` when the user interrupted it (not kept). Whether to go on: a
    /// failed repetition ends the series, so the error named is the first.
    pub fn record(
        &mut self,
        i: u32,
        result: Result<R, String>,
        aggregate: impl Fn(&R) -> &RunResult,
        stopped: bool,
    ) -> bool {
        let run = match result {
            Ok(run) => run,
            Err(e) => {
                self.error = Some(format!("repetition {i}: {e}"));
                return false;
            }
        };
        let figures = aggregate(&run);
        if self.verify_error.is_none() {
            self.verify_error = figures.verify_error().map(|e| format!("repetition {i}: {e}"));
        }
        if let Some(e) = &figures.error {
            self.error = Some(format!("repetition {i}: {e}"));
            return false;
        }
        if !stopped {
            self.runs.push(run);
        }
        true
    }
}

/// What `run --repeat N --json` writes: each metric summarized over the completed repetitions,
/// and every repetition's own result.
#[derive(Serialize)]
pub struct RepeatedRuns<'a, R: Serialize> {
    pub repeat: u32,
    pub completed: usize,
    /// Told to the envelope, with `error` and `warnings`.
    #[serde(skip)]
    pub interrupted: bool,
    #[serde(skip)]
    pub error: Option<String>,
    pub summary: Vec<MetricRepeats>,
    #[serde(skip)]
    pub warnings: Vec<Warning>,
    pub runs: &'a [R],
}

impl<'a, R: Serialize> RepeatedRuns<'a, R> {
    /// The report of `done` out of `repeat` asked for; `aggregates`: each completed run's
    /// aggregate, in order; repetitions varying by more than `cv_threshold` are warned of.
    pub fn new(
        repeat: u32,
        done: &'a Repetitions<R>,
        aggregates: &[RunResult],
        cv_threshold: f64,
        interrupted: bool,
    ) -> Self {
        let (summary, warnings) = summarize_runs(aggregates, cv_threshold);
        RepeatedRuns {
            repeat,
            completed: done.runs.len(),
            interrupted,
            error: done.error.clone(),
            summary,
            warnings,
            runs: &done.runs,
        }
    }
}

impl<R: Serialize> iolens_output::contract::Body for RepeatedRuns<'_, R> {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    fn warnings(&self) -> Vec<iolens_output::contract::Notice> {
        Warning::notices(&self.warnings)
    }
    fn error(&self) -> Option<iolens_output::contract::Notice> {
        self.error.as_ref().map(|e| iolens_output::contract::Notice::new("run_failed", e.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(iops: f64) -> RunResult {
        let mut r = RunResult::default();
        r.aggregate.iops = iops;
        r.aggregate.bps = 100.0;
        r
    }

    #[test]
    fn summaries_keep_every_value_and_flag_noisy_metrics() {
        let runs = [run_with(100.0), run_with(120.0), run_with(80.0)];
        let (metrics, warnings) = summarize_runs(&runs, 0.10);
        let iops = metrics.iter().find(|m| m.name == "iops").unwrap();
        assert_eq!(iops.values, [100.0, 120.0, 80.0]);
        assert_eq!(iops.mean, 100.0);
        assert!((iops.std_dev.unwrap() - 20.0).abs() < 1e-12);
        // t(0.975, 2) = 4.302653; half width = t * 20 / sqrt(3).
        assert!(
            (iops.ci95_high.unwrap() - (100.0 + 4.302_652_729_911_275 * 20.0 / 3f64.sqrt())).abs() < 1e-6
        );
        assert_eq!(warnings.len(), 1, "only iops varies: {warnings:?}");
        assert!(warnings[0].message.starts_with("iops varies by 20.0%"));
        let text = csv(&metrics);
        assert!(text.lines().nth(2).unwrap().starts_with("2,120.0,"), "{text}");
    }

    #[test]
    fn a_failed_repetition_ends_the_series_and_an_interrupted_one_is_not_kept() {
        let mut done = Repetitions::default();
        assert!(done.record(1, Ok(run_with(1.0)), |r| r, false));
        assert!(done.record(2, Ok(run_with(2.0)), |r| r, true), "interrupted: not kept, not failed");
        let mut failed = run_with(3.0);
        failed.error = Some("disk full".into());
        assert!(!done.record(3, Ok(failed), |r| r, false));
        assert_eq!(done.runs.len(), 1);
        assert_eq!(done.error.as_deref(), Some("repetition 3: disk full"));
        assert!(!done.record(4, Err("no target".into()), |r: &RunResult| r, false));
        assert_eq!(done.error.as_deref(), Some("repetition 4: no target"));
    }
}
