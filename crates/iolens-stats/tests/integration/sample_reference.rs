//! Summaries, correlation, Shapiro-Wilk and Brown-Forsythe on plain samples against scipy
//! (tests/fixtures/samples.json, written by scripts/stats_fixtures.py).

use iolens_stats::{brown_forsythe, pearson_test, shapiro_wilk, summarize, HypothesisTest};
use serde::Deserialize;

use crate::util::{assert_close, read_json, Worst};

/// Relative above 1, absolute below; the contract is 1e-6, the agreement about 1e-14.
const TOLERANCE: f64 = 1e-9;
/// Shapiro-Wilk and Brown-Forsythe p-values, absolute (achieved: about 5e-14, since the
/// Shapiro-Wilk code follows the same AS R94 / AS 111 / AS 66 steps as scipy's).
const P_TOLERANCE: f64 = 1e-9;

#[derive(Deserialize)]
struct Samples {
    summaries: Vec<SummaryFixture>,
    correlations: Vec<CorrelationFixture>,
    shapiro_wilk: Vec<NormalityFixture>,
    brown_forsythe: Vec<EqualVarianceFixture>,
}

#[derive(Deserialize)]
struct SummaryFixture {
    values: Vec<f64>,
    n: usize,
    mean: f64,
    std_dev: f64,
    ci95_low: f64,
    ci95_high: f64,
    cv: f64,
}

#[derive(Deserialize)]
struct CorrelationFixture {
    x: Vec<f64>,
    y: Vec<f64>,
    r: f64,
    p: f64,
}

#[derive(Deserialize)]
struct NormalityFixture {
    kind: String,
    values: Vec<f64>,
    statistic: f64,
    p: f64,
}

#[derive(Deserialize)]
struct EqualVarianceFixture {
    groups: Vec<Vec<f64>>,
    statistic: f64,
    p: f64,
}

fn samples() -> Samples {
    read_json("samples.json")
}

#[test]
fn summaries_match_scipy_t_intervals() {
    let mut worst = Worst::default();
    for fixture in samples().summaries {
        let context = format!("summary of {} values", fixture.n);
        let summary = summarize(&fixture.values).expect("summary");
        assert_eq!(summary.n, fixture.n);
        assert_close(summary.mean, fixture.mean, TOLERANCE, &context);
        let std_dev = summary.std_dev.expect("n > 1");
        assert_close(std_dev, fixture.std_dev, TOLERANCE, &context);
        let (low, high) = (summary.ci95_low.expect("low"), summary.ci95_high.expect("high"));
        assert_close(low, fixture.ci95_low, TOLERANCE, &format!("{context}: CI low"));
        assert_close(high, fixture.ci95_high, TOLERANCE, &format!("{context}: CI high"));
        worst.record("CI bounds", low, fixture.ci95_low);
        worst.record("CI bounds", high, fixture.ci95_high);
        assert_close(summary.cv.expect("mean != 0"), fixture.cv, TOLERANCE, &context);
    }
    worst.print("summaries");
}

#[test]
fn correlations_match_scipy_pearsonr() {
    let mut worst = Worst::default();
    for fixture in samples().correlations {
        let context = format!("correlation of {} pairs", fixture.x.len());
        let test = pearson_test(&fixture.x, &fixture.y).expect("correlation");
        assert_close(test.r, fixture.r, 1e-12, &context);
        assert_close(test.p, fixture.p, 1e-9, &format!("{context}: p"));
        worst.record("r", test.r, fixture.r);
        worst.record("p", test.p, fixture.p);
    }
    worst.print("pearson");
}

#[test]
fn shapiro_wilk_matches_scipy() {
    let mut worst = Worst::default();
    for fixture in samples().shapiro_wilk {
        let context = format!("{} sample of {}", fixture.kind, fixture.values.len());
        let result = shapiro_wilk(&fixture.values).expect("Shapiro-Wilk");
        assert_eq!(result.test, HypothesisTest::ShapiroWilk);
        assert_close(result.statistic, fixture.statistic, TOLERANCE, &format!("{context}: W"));
        assert_close(result.p, fixture.p, P_TOLERANCE, &format!("{context}: p"));
        worst.record("W", result.statistic, fixture.statistic);
        worst.record("p", result.p, fixture.p);
    }
    worst.print("shapiro_wilk");
}

#[test]
fn brown_forsythe_matches_scipy_levene_median() {
    let mut worst = Worst::default();
    for fixture in samples().brown_forsythe {
        let context = format!("{} groups", fixture.groups.len());
        let result = brown_forsythe(&fixture.groups).expect("Brown-Forsythe");
        assert_eq!(result.test, HypothesisTest::BrownForsythe);
        assert_close(result.statistic, fixture.statistic, TOLERANCE, &context);
        assert_close(result.p, fixture.p, P_TOLERANCE, &format!("{context}: p"));
        worst.record("statistic", result.statistic, fixture.statistic);
        worst.record("p", result.p, fixture.p);
    }
    worst.print("brown_forsythe");
}
