use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::StatsError;
use crate::summary::{mean, sample_variance};
use crate::validate_finite;

/// Welch's unequal-variance t-test of two independent samples: whether their means differ by
/// more than their run-to-run noise explains. Repeated benchmark runs on two configurations
/// rarely share a variance, which Student's pooled test would assume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WelchTest {
    /// `mean(after) − mean(before)`.
    pub difference: f64,
    /// The t statistic of that difference (positive when `after` is larger).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (not an integer in general).
    pub degrees_of_freedom: f64,
    /// Two-sided p-value: the probability of a |t| at least this large if the means were equal.
    pub p_value: f64,
}

/// Tests whether `after` and `before` have different means (two-sided).
///
/// Each sample needs two values to have a spread; when neither has any spread (every value of
/// each identical) there is no noise to compare the difference with, and that is an error
/// rather than a p-value of 0 or 1 that would claim more than the data hold.
pub fn welch_t_test(before: &[f64], after: &[f64]) -> Result<WelchTest, StatsError> {
    for (what, sample) in [("before", before), ("after", after)] {
        if sample.len() < 2 {
            return Err(StatsError::TooFewValues { what, needed: 2, got: sample.len() });
        }
        validate_finite(what, sample)?;
    }
    let (mean_before, mean_after) = (mean(before), mean(after));
    let se2_before = sample_variance(before, mean_before) / before.len() as f64;
    let se2_after = sample_variance(after, mean_after) / after.len() as f64;
    let se2 = se2_before + se2_after;
    if se2 <= 0.0 {
        return Err(StatsError::ZeroVariance { what: "both samples" });
    }
    let difference = mean_after - mean_before;
    let t = difference / se2.sqrt();
    let degrees_of_freedom = se2.powi(2)
        / (se2_before.powi(2) / (before.len() - 1) as f64 + se2_after.powi(2) / (after.len() - 1) as f64);
    let distribution = StudentsT::new(0.0, 1.0, degrees_of_freedom)
        .map_err(|error| StatsError::Distribution(error.to_string()))?;
    let p_value = (2.0 * distribution.sf(t.abs())).min(1.0);
    Ok(WelchTest { difference, t, degrees_of_freedom, p_value })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values: the Welch formulas evaluated independently, the p-value by numerical
    // integration of the t density (agrees with scipy.stats.ttest_ind(equal_var=False)).
    #[test]
    fn matches_reference_values_for_a_clear_difference() {
        let test = welch_t_test(&[10.1, 10.3, 9.9, 10.2], &[11.0, 11.4, 10.8]).unwrap();
        assert!((test.t - 4.805_248_787_856_962).abs() < 1e-9, "{test:?}");
        assert!((test.degrees_of_freedom - 2.939_707_960_433_349_6).abs() < 1e-9, "{test:?}");
        assert!((test.p_value - 0.017_970_423_985_960_604).abs() < 1e-6, "{test:?}");
        assert!((test.difference - (11.066_666_666_666_666 - 10.125)).abs() < 1e-9);
    }

    #[test]
    fn matches_reference_values_for_overlapping_samples() {
        let test = welch_t_test(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.5, 2.5, 3.5, 4.5, 5.5, 6.5]).unwrap();
        assert!((test.t - 0.960_768_922_830_522_6).abs() < 1e-9, "{test:?}");
        assert!((test.degrees_of_freedom - 8.989_361_702_127_662).abs() < 1e-9, "{test:?}");
        assert!((test.p_value - 0.361_796_816_229_774_33).abs() < 1e-6, "{test:?}");
    }

    #[test]
    fn is_symmetric_in_its_samples() {
        let a = [3.0, 3.5, 2.9];
        let b = [4.0, 4.4, 4.1, 3.9];
        let ab = welch_t_test(&a, &b).unwrap();
        let ba = welch_t_test(&b, &a).unwrap();
        assert_eq!(ab.t, -ba.t);
        assert_eq!(ab.p_value, ba.p_value);
    }

    #[test]
    fn refuses_samples_without_spread_or_values() {
        assert!(matches!(welch_t_test(&[1.0], &[1.0, 2.0]), Err(StatsError::TooFewValues { got: 1, .. })));
        assert!(matches!(welch_t_test(&[1.0, 1.0], &[2.0, 2.0]), Err(StatsError::ZeroVariance { .. })));
        assert!(matches!(welch_t_test(&[1.0, f64::NAN], &[2.0, 2.5]), Err(StatsError::NonFinite { .. })));
    }
}
