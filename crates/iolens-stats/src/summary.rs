use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::StatsError;
use crate::validate_finite;

/// Mean, spread and 95 % confidence interval of repeated measurements of one quantity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); `None` for a single value.
    pub std_dev: Option<f64>,
    /// Two-sided 95 % Student-t interval for the mean; `None` for a single value.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    /// Coefficient of variation `std_dev / mean` (keeps the sign of the mean); `None` for a
    /// single value or a zero mean.
    pub cv: Option<f64>,
}

impl Summary {
    /// Half the width of the 95 % interval.
    pub fn ci95_half_width(&self) -> Option<f64> {
        Some((self.ci95_high? - self.ci95_low?) / 2.0)
    }
}

/// Summarizes repetitions of one measurement.
///
/// One value gives its mean and no spread: repeating a run once says nothing about its noise,
/// and a zero-width interval would claim otherwise.
pub fn summarize(values: &[f64]) -> Result<Summary, StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty);
    }
    validate_finite("values", values)?;
    let n = values.len();
    let mean = mean(values);
    if n < 2 {
        return Ok(Summary { n, mean, std_dev: None, ci95_low: None, ci95_high: None, cv: None });
    }
    let std_dev = sample_variance(values, mean).sqrt();
    let degrees_of_freedom = (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, degrees_of_freedom)
        .map_err(|error| StatsError::Distribution(error.to_string()))?
        .inverse_cdf(0.975);
    let half_width = t * std_dev / (n as f64).sqrt();
    Ok(Summary {
        n,
        mean,
        std_dev: Some(std_dev),
        ci95_low: Some(mean - half_width),
        ci95_high: Some(mean + half_width),
        cv: (mean != 0.0).then(|| std_dev / mean),
    })
}

pub(crate) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Two-pass variance: summing squared deviations from the mean avoids the cancellation of
/// `E[x²] − E[x]²` on large, tightly clustered values such as throughputs.
pub(crate) fn sample_variance(values: &[f64], mean: f64) -> f64 {
    let squares: f64 = values.iter().map(|value| (value - mean).powi(2)).sum();
    squares / (values.len() - 1) as f64
}
