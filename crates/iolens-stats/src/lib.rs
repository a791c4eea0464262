//! The statistics of iolens: how to tell a real difference between storage configurations
//! from run-to-run noise, and which setting of each knob matters.
//!
//! - [`summarize`]: mean, sample standard deviation, Student-t 95 % interval and coefficient
//!   of variation of repeated runs.
//! - [`welch_t_test`]: whether two sets of repeated runs differ by more than their noise
//!   (`iolens compare`).
//! - [`pearson`], [`pearson_test`], [`NormalizedCc`]: how well a metric (IOPS, bandwidth,
//!   response time, BPS) tracks application performance, with the BPS paper's normalization
//!   against the expected direction.
//! - [`anova`]: fixed-effects ANOVA of a factorial experiment ([`Dataset`], [`ModelSpec`])
//!   with Type II sums of squares, matching statsmodels' `anova_lm(..., typ=2)`, on balanced,
//!   unbalanced and incomplete (missing cells) designs, optionally on the log response.
//! - [`reduce_model`]: drops non-significant interactions one at a time (parsimony).
//! - [`residual_diagnostics`], [`shapiro_wilk`], [`brown_forsythe`]: whether the residuals
//!   meet the ANOVA's normality and equal-variance assumptions.
//! - [`level_means`], [`cell_means`], [`recommend`]: the best level of each significant
//!   factor, or "SNS" (statistically not significant), as in the IOAgent study's Table 3.
//!
//! - [`csv`]: the CSV tables the commands read, with errors that name file, line and column.
//!
//! Apart from [`csv::read_csv`], everything here is a pure function of its inputs; invalid input
//! is an error ([`StatsError`], [`csv::CsvError`]), never a panic.

mod anova;
mod correlation;
pub mod csv;
mod design;
mod diagnostics;
mod error;
mod levels;
pub mod study;
mod summary;
mod welch;

pub use anova::{anova, reduce_model, AnovaRow, AnovaTable, Reduction, ReductionStep, RESIDUAL};
pub use correlation::{normalized_pearson, pearson, pearson_test, CorrelationTest, Direction, NormalizedCc};
pub use design::{level_order, sort_levels, Dataset, ModelSpec, ResponseScale, Term, MAX_CELLS};
pub use diagnostics::{
    brown_forsythe, residual_diagnostics, shapiro_wilk, HypothesisTest, ResidualDiagnostics, TestOutcome,
    TestResult,
};
pub use error::StatsError;
pub use levels::{cell_means, level_means, recommend, CellMean, Choice, Goal, LevelMean, Recommendation};
pub use summary::{summarize, Summary};
pub use welch::{welch_t_test, WelchTest};

fn validate_finite(what: &'static str, values: &[f64]) -> Result<(), StatsError> {
    match values.iter().position(|value| !value.is_finite()) {
        Some(index) => Err(StatsError::NonFinite { what, index, value: values[index] }),
        None => Ok(()),
    }
}
