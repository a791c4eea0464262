use serde::{Deserialize, Serialize};
use statrs::function::beta::checked_beta_reg;

use crate::error::StatsError;
use crate::summary::mean;
use crate::validate_finite;

/// Pearson's correlation coefficient of paired samples.
///
/// Errors when the lengths differ, when fewer than three pairs are given (two points always
/// lie on a line), or when either side is constant.
pub fn pearson(x: &[f64], y: &[f64]) -> Result<f64, StatsError> {
    if x.len() != y.len() {
        return Err(StatsError::LengthMismatch {
            what: "correlation samples",
            left: x.len(),
            right: y.len(),
        });
    }
    if x.len() < 3 {
        return Err(StatsError::TooFewValues { what: "a correlation", needed: 3, got: x.len() });
    }
    validate_finite("x", x)?;
    validate_finite("y", y)?;
    if is_constant(x) {
        return Err(StatsError::ZeroVariance { what: "x" });
    }
    if is_constant(y) {
        return Err(StatsError::ZeroVariance { what: "y" });
    }
    let (mean_x, mean_y) = (mean(x), mean(y));
    let (mut sum_xy, mut sum_xx, mut sum_yy) = (0.0, 0.0, 0.0);
    for (xi, yi) in x.iter().zip(y) {
        let (dx, dy) = (xi - mean_x, yi - mean_y);
        sum_xy += dx * dy;
        sum_xx += dx * dx;
        sum_yy += dy * dy;
    }
    // Rounding can push |r| a hair past 1 on perfectly collinear data.
    Ok((sum_xy / (sum_xx.sqrt() * sum_yy.sqrt())).clamp(-1.0, 1.0))
}

/// A correlation coefficient with its two-sided p-value against "no correlation".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CorrelationTest {
    pub r: f64,
    /// Two-sided p-value of the t-test with n − 2 degrees of freedom (as scipy's `pearsonr`).
    pub p: f64,
    pub n: usize,
}

/// Pearson's r and its p-value.
pub fn pearson_test(x: &[f64], y: &[f64]) -> Result<CorrelationTest, StatsError> {
    let r = pearson(x, y)?;
    let n = x.len();
    Ok(CorrelationTest { r, p: correlation_p_value(r, n)?, n })
}

/// P(|T| ≥ |t|) for t = r·√((n−2)/(1−r²)), written as the regularized incomplete beta
/// I_{1−r²}((n−2)/2, 1/2): the same number without forming t, which overflows as |r| → 1.
fn correlation_p_value(r: f64, n: usize) -> Result<f64, StatsError> {
    let one_minus_r2 = (1.0 - r * r).max(0.0);
    if one_minus_r2 == 0.0 {
        return Ok(0.0);
    }
    checked_beta_reg((n as f64 - 2.0) / 2.0, 0.5, one_minus_r2)
        .map_err(|error| StatsError::Distribution(error.to_string()))
}

fn is_constant(values: &[f64]) -> bool {
    values.iter().all(|value| *value == values[0])
}

/// The direction in which a metric is expected to move with the quantity it should predict
/// (e.g. bandwidth against execution time: negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    Negative,
    Positive,
}

/// A correlation coefficient normalized against its expected direction, as in the BPS paper:
/// the magnitude tells how strongly the metric tracks the target, the sign whether it tracks
/// it the right way round. A normalized CC of −0.9 is a strong but misleading metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NormalizedCc {
    /// The raw coefficient.
    pub cc: f64,
    /// `|cc|`, positive when `cc` has the expected sign and negative otherwise.
    pub normalized_cc: f64,
    /// Whether `cc` has the expected sign. A coefficient of exactly 0 has no direction, so it
    /// does not count as right.
    pub direction_ok: bool,
}

impl NormalizedCc {
    pub fn new(cc: f64, expected: Direction) -> Self {
        let direction_ok = match expected {
            Direction::Positive => cc > 0.0,
            Direction::Negative => cc < 0.0,
        };
        let magnitude = cc.abs();
        NormalizedCc { cc, normalized_cc: if direction_ok { magnitude } else { -magnitude }, direction_ok }
    }
}

/// Pearson's r of `x` and `y`, normalized against the expected direction.
pub fn normalized_pearson(x: &[f64], y: &[f64], expected: Direction) -> Result<NormalizedCc, StatsError> {
    Ok(NormalizedCc::new(pearson(x, y)?, expected))
}
