//! Reading the reference fixtures written by `scripts/stats_fixtures.py`, and comparing with
//! a tolerance that reports what was compared.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use iolens_stats::Dataset;
use serde::de::DeserializeOwned;
use serde::Deserialize;

pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join(name)
}

pub fn read_json<T: DeserializeOwned>(name: &str) -> T {
    let path = fixture_path(name);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture CSVs are plain: a header, factor columns, the response column last, no quoting.
pub fn read_dataset(fixture: &AnovaFixture) -> Dataset {
    let path = fixture_path(&fixture.csv);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    assert_eq!(header.last(), Some(&fixture.response.as_str()));
    assert_eq!(header[..header.len() - 1], fixture.factors[..]);
    let mut levels = Vec::new();
    let mut response = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), header.len(), "{line}");
        let (value, factor_levels) = fields.split_last().expect("fields");
        levels.push(factor_levels.iter().map(|l| l.to_string()).collect());
        response.push(value.parse().unwrap_or_else(|e| panic!("{line}: {e}")));
    }
    assert_eq!(response.len(), fixture.rows);
    Dataset::new(fixture.factors.clone(), levels, response).expect("fixture data set is valid")
}

#[derive(Debug, Deserialize)]
pub struct AnovaFixture {
    pub csv: String,
    pub factors: Vec<String>,
    pub response: String,
    pub rows: usize,
    pub models: Vec<ModelFixture>,
    pub level_means: Option<BTreeMap<String, Vec<LevelMeanFixture>>>,
    pub interaction_means: Option<Vec<InteractionMeansFixture>>,
    pub recommend: Option<RecommendFixture>,
    pub reduction: Option<ReductionFixture>,
}

#[derive(Debug, Deserialize)]
pub struct ModelFixture {
    pub name: String,
    pub main_effects: Vec<String>,
    pub interactions: Vec<Vec<String>>,
    pub log_response: bool,
    pub full_rank: bool,
    pub table: Vec<RowFixture>,
    pub r_squared: f64,
    pub adj_r_squared: f64,
    pub residuals: Vec<f64>,
    pub shapiro_wilk: TestFixture,
    pub brown_forsythe: CellTestFixture,
}

#[derive(Debug, Deserialize)]
pub struct RowFixture {
    pub term: String,
    pub df: f64,
    pub sum_sq: f64,
    pub mean_sq: Option<f64>,
    #[serde(rename = "F")]
    pub f: Option<f64>,
    pub p: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct TestFixture {
    pub statistic: f64,
    pub p: f64,
}

#[derive(Debug, Deserialize)]
pub struct CellTestFixture {
    pub cell_factors: Vec<String>,
    pub groups: usize,
    pub statistic: f64,
    pub p: f64,
}

#[derive(Debug, Deserialize)]
pub struct LevelMeanFixture {
    pub level: String,
    pub mean: f64,
    pub n: usize,
}

#[derive(Debug, Deserialize)]
pub struct InteractionMeansFixture {
    pub factors: Vec<String>,
    pub cells: Vec<CellMeanFixture>,
}

#[derive(Debug, Deserialize)]
pub struct CellMeanFixture {
    pub levels: Vec<String>,
    pub mean: f64,
    pub n: usize,
}

#[derive(Debug, Deserialize)]
pub struct RecommendFixture {
    pub model: String,
    pub alpha: f64,
    pub maximize: Vec<PickFixture>,
    pub minimize: Vec<PickFixture>,
}

#[derive(Debug, Deserialize)]
pub struct PickFixture {
    pub factor: String,
    pub choice: String,
    // What the reference printed beside the choice: read by `Debug` when a check fails only.
    #[allow(dead_code)]
    pub p: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct ReductionFixture {
    pub alpha: f64,
    pub log_response: bool,
    pub start: Vec<Vec<String>>,
    pub kept: Vec<Vec<String>>,
    pub steps: Vec<StepFixture>,
}

#[derive(Debug, Deserialize)]
pub struct StepFixture {
    pub removed: String,
    pub p: f64,
}

/// Compares with a scale-aware tolerance: `tolerance` relative to |expected| when that
/// exceeds 1, absolute below (p-values, R², small sums of squares).
pub fn assert_close(actual: f64, expected: f64, tolerance: f64, context: &str) {
    let allowed = tolerance * expected.abs().max(1.0);
    assert!(
        (actual - expected).abs() <= allowed,
        "{context}: got {actual:e}, expected {expected:e} (difference {:e}, allowed {allowed:e})",
        (actual - expected).abs()
    );
}

/// The largest scale-aware difference seen, for the report printed by `--nocapture`.
#[derive(Debug, Default)]
pub struct Worst(BTreeMap<&'static str, f64>);

impl Worst {
    pub fn record(&mut self, what: &'static str, actual: f64, expected: f64) {
        let difference = (actual - expected).abs() / expected.abs().max(1.0);
        let worst = self.0.entry(what).or_insert(0.0);
        *worst = worst.max(difference);
    }

    pub fn print(&self, title: &str) {
        for (what, difference) in &self.0 {
            println!("{title}: largest difference in {what}: {difference:.2e}");
        }
    }
}
