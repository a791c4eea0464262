use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, FisherSnedecor};

use crate::anova::AnovaTable;
use crate::design::{level_order, Dataset};
use crate::error::StatsError;
use crate::validate_finite;

/// Which hypothesis test produced a [`TestResult`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HypothesisTest {
    /// Shapiro–Wilk W with Royston's (1995, AS R94) coefficients and p-value, as
    /// `scipy.stats.shapiro`. Null hypothesis: the values come from a normal distribution.
    ShapiroWilk,
    /// Brown–Forsythe (Levene's test on deviations from the group medians), as
    /// `scipy.stats.levene(..., center="median")`. Null hypothesis: equal variances.
    BrownForsythe,
}

impl fmt::Display for HypothesisTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HypothesisTest::ShapiroWilk => "Shapiro-Wilk",
            HypothesisTest::BrownForsythe => "Brown-Forsythe",
        })
    }
}

/// A test statistic and its p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub test: HypothesisTest,
    pub statistic: f64,
    pub p: f64,
}

/// The Shapiro–Wilk normality test.
///
/// Needs 3 or more values that are not all equal. Royston's approximation is validated up to
/// 5000 values; past that W is still right but the p-value is an extrapolation.
pub fn shapiro_wilk(values: &[f64]) -> Result<TestResult, StatsError> {
    let n = values.len();
    if n < 3 {
        return Err(StatsError::TooFewValues { what: "the Shapiro-Wilk test", needed: 3, got: n });
    }
    validate_finite("values", values)?;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let range = sorted[n - 1] - sorted[0];
    if range <= 0.0 {
        return Err(StatsError::ZeroVariance { what: "the Shapiro-Wilk sample" });
    }

    let half = royston_half_coefficients(n);
    let weight = |i: usize| {
        let mirror = n - 1 - i;
        match i.cmp(&mirror) {
            std::cmp::Ordering::Less => -half[i],
            std::cmp::Ordering::Greater => half[mirror],
            std::cmp::Ordering::Equal => 0.0,
        }
    };
    // W is the squared correlation of the ordered sample with the coefficients. Scaling by
    // the range keeps the sums of squares near 1 whatever the units.
    let sample_mean = sorted.iter().map(|x| x / range).sum::<f64>() / n as f64;
    let weight_mean = (0..n).map(weight).sum::<f64>() / n as f64;
    let (mut sum_aa, mut sum_xx, mut sum_ax) = (0.0, 0.0, 0.0);
    for (i, x) in sorted.iter().enumerate() {
        let a = weight(i) - weight_mean;
        let dx = x / range - sample_mean;
        sum_aa += a * a;
        sum_xx += dx * dx;
        sum_ax += a * dx;
    }
    // 1 − W computed as a product of factors rather than by subtraction: the p-value takes its
    // logarithm, and W is close to 1 exactly when the sample is normal.
    let root = (sum_aa * sum_xx).sqrt();
    let one_minus_w = (root - sum_ax) * (root + sum_ax) / (sum_aa * sum_xx);
    let w = 1.0 - one_minus_w;

    let (statistic, p) = shapiro_wilk_p(n, w, one_minus_w);
    Ok(TestResult { test: HypothesisTest::ShapiroWilk, statistic, p })
}

/// The smallest p-value Royston's small-sample branch reports (AS R94's `SMALL`).
const SHAPIRO_SMALLEST_P: f64 = 1e-19;

/// Royston's p-value for W: exact for n = 3, else a normal approximation of a transform of
/// 1 − W whose mean and spread are polynomials in n (n ≤ 11) or ln n.
fn shapiro_wilk_p(n: usize, w: f64, one_minus_w: f64) -> (f64, f64) {
    if n == 3 {
        // W cannot be below 3/4 for three points; rounding can push it there.
        if w < 0.75 {
            return (0.75, 0.0);
        }
        let p = 1.0 - 6.0 / std::f64::consts::PI * w.sqrt().acos();
        return (w, p);
    }
    let an = n as f64;
    let mut y = one_minus_w.ln();
    let (mean, spread) = if n <= 11 {
        let gamma = polynomial(&[-2.273, 0.459], an);
        if y >= gamma {
            return (w, SHAPIRO_SMALLEST_P);
        }
        y = -(gamma - y).ln();
        (
            polynomial(&[0.5440, -0.39978, 0.025054, -6.714e-4], an),
            polynomial(&[1.3822, -0.77857, 0.062767, -0.0020322], an).exp(),
        )
    } else {
        let log_n = an.ln();
        (
            polynomial(&[-1.5861, -0.31082, -0.083751, 0.0038915], log_n),
            polynomial(&[-0.4803, -0.082676, 0.0030302], log_n).exp(),
        )
    };
    (w, normal_upper_tail_as66((y - mean) / spread))
}

/// The first ⌊n/2⌋ Shapiro–Wilk coefficients (positive; the sample's lower half gets them
/// negated, the upper half mirrored), from Royston's approximation to the normalized
/// expected normal order statistics.
fn royston_half_coefficients(n: usize) -> Vec<f64> {
    let half = n / 2;
    if n == 3 {
        return vec![std::f64::consts::FRAC_1_SQRT_2];
    }
    let an = n as f64;
    // Blom-type scores; AS R94 uses the AS 111 quantile, and so does this, to give the same W.
    let scores: Vec<f64> =
        (1..=half).map(|i| normal_quantile_as111((i as f64 - 0.375) / (an + 0.25))).collect();
    let sum_sq = 2.0 * scores.iter().map(|m| m * m).sum::<f64>();
    let norm = sum_sq.sqrt();
    let u = 1.0 / an.sqrt();
    let first = polynomial(&[0.0, 0.221157, -0.147981, -2.071190, 4.434685, -2.706056], u) - scores[0] / norm;

    let mut coefficients = vec![0.0; half];
    coefficients[0] = first;
    let (exact_count, scale) = if n > 5 {
        let second =
            polynomial(&[0.0, 0.042981, -0.293762, -1.752461, 5.682633, -3.582633], u) - scores[1] / norm;
        coefficients[1] = second;
        let scale = ((sum_sq - 2.0 * scores[0].powi(2) - 2.0 * scores[1].powi(2))
            / (1.0 - 2.0 * first.powi(2) - 2.0 * second.powi(2)))
        .sqrt();
        (2, scale)
    } else {
        let scale = ((sum_sq - 2.0 * scores[0].powi(2)) / (1.0 - 2.0 * first.powi(2))).sqrt();
        (1, scale)
    };
    for i in exact_count..half {
        coefficients[i] = -scores[i] / scale;
    }
    coefficients
}

/// c[0] + c[1]·x + c[2]·x² + …
fn polynomial(coefficients: &[f64], x: f64) -> f64 {
    coefficients.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

/// Normal quantile by Beasley & Springer (1977, AS 111), about 7 digits: AS R94 builds its
/// coefficients on this one, so a more precise quantile would move W off the reference.
fn normal_quantile_as111(p: f64) -> f64 {
    let q = p - 0.5;
    if q.abs() <= 0.42 {
        let r = q * q;
        return q * (((-25.44106049637 * r + 41.39119773534) * r - 18.61500062529) * r + 2.50662823884)
            / ((((3.13082909833 * r - 21.06224101826) * r + 23.08336743743) * r - 8.47351093090) * r + 1.0);
    }
    let tail = if q > 0.0 { 1.0 - p } else { p };
    if tail <= 0.0 {
        return 0.0;
    }
    let r = (-tail.ln()).sqrt();
    let value = (((2.32121276858 * r + 4.85014127135) * r - 2.29796479134) * r - 2.78718931138)
        / ((1.63706781897 * r + 3.54388924762) * r + 1.0);
    if q < 0.0 {
        -value
    } else {
        value
    }
}

/// Upper tail of the standard normal by Hill (1973, AS 66), as AS R94 uses it (with the
/// later extension of the upper cut-off to 38).
fn normal_upper_tail_as66(x: f64) -> f64 {
    let upper = x > 0.0;
    let z = x.abs();
    if z > 7.0 && (!upper || z > 38.0) {
        return if upper { 0.0 } else { 1.0 };
    }
    let y = 0.5 * z * z;
    let tail = if z <= 1.28 {
        0.5 - z
            * (0.398942280444
                - 0.399903438504 * y
                    / (y + 5.75885480458
                        - 29.8213557808 / (y + 2.62433121679 + 48.6959930692 / (y + 5.92885724438))))
    } else {
        0.398942280385 * (-y).exp()
            / (z - 3.8052e-8
                + 1.00000615302
                    / (z + 3.98064794e-4
                        + 1.98615381364
                            / (z - 0.151679116635
                                + 5.29330324926
                                    / (z + 4.8385912808
                                        - 15.1508972451
                                            / (z + 0.742380924027 + 30.789933034 / (z + 3.99019417011))))))
    };
    if upper {
        tail
    } else {
        1.0 - tail
    }
}

/// The Brown–Forsythe test of equal variances across groups.
///
/// Needs two or more groups of two or more values each (one value has no spread to compare).
pub fn brown_forsythe<G: AsRef<[f64]>>(groups: &[G]) -> Result<TestResult, StatsError> {
    if groups.len() < 2 {
        return Err(StatsError::TooFewGroups {
            what: "the Brown-Forsythe test",
            needed: 2,
            got: groups.len(),
        });
    }
    let mut deviations: Vec<Vec<f64>> = Vec::with_capacity(groups.len());
    for (index, group) in groups.iter().enumerate() {
        let group = group.as_ref();
        if group.len() < 2 {
            return Err(StatsError::GroupTooSmall { group: format!("#{index}"), size: group.len() });
        }
        validate_finite("group values", group)?;
        let center = median(group);
        deviations.push(group.iter().map(|x| (x - center).abs()).collect());
    }
    let total: usize = deviations.iter().map(Vec::len).sum();
    let group_count = deviations.len();
    let group_means: Vec<f64> = deviations.iter().map(|d| d.iter().sum::<f64>() / d.len() as f64).collect();
    let grand_mean = deviations.iter().flatten().sum::<f64>() / total as f64;
    let between: f64 = deviations
        .iter()
        .zip(&group_means)
        .map(|(d, mean)| d.len() as f64 * (mean - grand_mean).powi(2))
        .sum();
    let within: f64 = deviations
        .iter()
        .zip(&group_means)
        .map(|(d, mean)| d.iter().map(|z| (z - mean).powi(2)).sum::<f64>())
        .sum();
    // Deviations that differ only by rounding are equal: F would be rounding error over rounding
    // error.
    let spread: f64 = deviations.iter().flatten().map(|z| z * z).sum();
    if within <= 1e-20 * spread {
        return Err(StatsError::ZeroVariance { what: "the deviations from the group medians" });
    }
    let df_between = (group_count - 1) as f64;
    let df_within = (total - group_count) as f64;
    let statistic = (between / df_between) / (within / df_within);
    let p = FisherSnedecor::new(df_between, df_within)
        .map_err(|error| StatsError::Distribution(error.to_string()))?
        .sf(statistic);
    Ok(TestResult { test: HypothesisTest::BrownForsythe, statistic, p })
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

/// A diagnostic test's outcome: its result, or exactly why it is not defined on these data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TestOutcome {
    Computed(TestResult),
    Skipped { test: HypothesisTest, skipped: String },
}

impl TestOutcome {
    pub fn result(&self) -> Option<&TestResult> {
        match self {
            TestOutcome::Computed(result) => Some(result),
            TestOutcome::Skipped { .. } => None,
        }
    }

    /// Why the test was not computed.
    pub fn skipped(&self) -> Option<&str> {
        match self {
            TestOutcome::Computed(_) => None,
            TestOutcome::Skipped { skipped, .. } => Some(skipped),
        }
    }

    pub fn test(&self) -> HypothesisTest {
        match self {
            TestOutcome::Computed(result) => result.test,
            TestOutcome::Skipped { test, .. } => *test,
        }
    }
}

/// Checks of the ANOVA assumptions on a fitted model's residuals. Each test runs whenever it is
/// defined on the data; one that is not says why, and the other still runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResidualDiagnostics {
    /// Shapiro–Wilk on all residuals: a small p says the errors are not normal.
    pub normality: TestOutcome,
    /// Brown–Forsythe on the residuals grouped by cell: a small p says the error variance
    /// differs between cells.
    pub equal_variance: TestOutcome,
    /// The factors whose level combinations formed the cells.
    pub cell_factors: Vec<String>,
    /// Number of cells (groups) in the equal-variance test.
    pub cells: usize,
}

/// Residuals this many machine epsilons of the largest response or smaller are rounding error:
/// the model fits every run exactly and there is no error left to test.
const EXACT_FIT_EPSILONS: f64 = 1024.0;

/// Tests a model's residuals for normality and for equal variance across the cells formed by
/// `cell_factors` (empty: all main effects of the model).
///
/// Brown–Forsythe needs at least two observations per cell and is undefined (0/0) when every
/// cell holds exactly two; with one run per combination, pass a subset of the factors so that
/// the cells pool repetitions. Errors are for data that do not belong to the table; a test
/// the data cannot support is a [`TestOutcome::Skipped`] with the reason.
pub fn residual_diagnostics<S: AsRef<str>>(
    data: &Dataset,
    table: &AnovaTable,
    cell_factors: &[S],
) -> Result<ResidualDiagnostics, StatsError> {
    data.validate()?;
    if table.residuals.len() != data.len() || table.fitted.len() != data.len() {
        return Err(StatsError::ResidualsDoNotMatchData { table: table.residuals.len(), data: data.len() });
    }
    let cell_factors: Vec<String> = if cell_factors.is_empty() {
        table.spec.main_effects.clone()
    } else {
        cell_factors.iter().map(|f| f.as_ref().to_string()).collect()
    };
    let columns =
        cell_factors.iter().map(|factor| data.factor_index(factor)).collect::<Result<Vec<_>, _>>()?;

    let mut groups: BTreeMap<CellKey, Vec<f64>> = BTreeMap::new();
    for (levels, residual) in data.levels.iter().zip(&table.residuals) {
        let key = CellKey(columns.iter().map(|&c| levels[c].clone()).collect());
        groups.entry(key).or_default().push(*residual);
    }
    let cells = groups.len();

    let largest_response =
        table.fitted.iter().zip(&table.residuals).map(|(f, r)| (f + r).abs()).fold(0.0, f64::max);
    let largest_residual = table.residuals.iter().map(|r| r.abs()).fold(0.0, f64::max);
    let exact_fit = (largest_residual <= EXACT_FIT_EPSILONS * f64::EPSILON * largest_response).then(|| {
        format!(
            "the model fits every run exactly (the largest residual, {largest_residual:.3e}, is rounding \
             error against responses up to {largest_response:.3e}): there is no error to test"
        )
    });
    let skip = |test: HypothesisTest, skipped: String| TestOutcome::Skipped { test, skipped };
    let outcome = |test: HypothesisTest, result: Result<TestResult, StatsError>| match result {
        Ok(result) => TestOutcome::Computed(result),
        Err(error) => skip(test, error.to_string()),
    };

    let normality = match (&exact_fit, table.residuals.len()) {
        (Some(why), _) => skip(HypothesisTest::ShapiroWilk, why.clone()),
        (None, n) if n < 3 => {
            skip(HypothesisTest::ShapiroWilk, format!("Shapiro-Wilk needs at least 3 runs; there are {n}"))
        }
        (None, _) => outcome(HypothesisTest::ShapiroWilk, shapiro_wilk(&table.residuals)),
    };

    let equal_variance = if let Some(why) = &exact_fit {
        skip(HypothesisTest::BrownForsythe, why.clone())
    } else if cells < 2 {
        skip(
            HypothesisTest::BrownForsythe,
            format!(
                "Brown-Forsythe compares cells, and every run falls into one cell of {}",
                if cell_factors.is_empty() { "(no factors)".to_string() } else { cell_factors.join(",") }
            ),
        )
    } else if let Some((key, group)) = groups.iter().find(|(_, group)| group.len() < 2) {
        skip(
            HypothesisTest::BrownForsythe,
            format!(
                "cell {} has {} run{}: Brown-Forsythe needs at least 2 runs in every cell; group the \
                 residuals by fewer factors to pool cells",
                cell_name(&cell_factors, &key.0),
                group.len(),
                if group.len() == 1 { "" } else { "s" }
            ),
        )
    } else if groups.values().all(|group| group.len() == 2) {
        skip(
            HypothesisTest::BrownForsythe,
            "with two runs per cell, both runs of a cell lie equally far from its median, so the \
             deviations do not vary within any cell and Brown-Forsythe's F is 0/0; it needs 3 or more \
             runs in some cell"
                .into(),
        )
    } else {
        let groups: Vec<Vec<f64>> = groups.into_values().collect();
        match brown_forsythe(&groups) {
            Err(StatsError::ZeroVariance { .. }) => skip(
                HypothesisTest::BrownForsythe,
                "in every cell the runs lie equally far from the cell's median, so the deviations do \
                 not vary within cells and Brown-Forsythe's F is 0/0"
                    .into(),
            ),
            result => outcome(HypothesisTest::BrownForsythe, result),
        }
    };
    Ok(ResidualDiagnostics { normality, equal_variance, cell_factors, cells })
}

fn cell_name(factors: &[String], levels: &[String]) -> String {
    factors
        .iter()
        .zip(levels)
        .map(|(factor, level)| format!("{factor}={level}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A combination of levels, ordered as [`level_order`] orders each level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CellKey(pub(crate) Vec<String>);

impl Ord for CellKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| level_order(a, b))
            .find(|order| order.is_ne())
            .unwrap_or_else(|| self.0.len().cmp(&other.0.len()))
    }
}

impl PartialOrd for CellKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polynomial_reads_coefficients_in_ascending_powers() {
        assert_eq!(polynomial(&[1.0, 2.0, 3.0], 2.0), 1.0 + 4.0 + 12.0);
    }

    #[test]
    fn as66_and_as111_are_close_to_the_normal_distribution() {
        assert!((normal_upper_tail_as66(1.959963984540054) - 0.025).abs() < 1e-9);
        assert!((normal_upper_tail_as66(-1.0) - 0.841344746068543).abs() < 1e-9);
        assert!((normal_quantile_as111(0.975) - 1.959963984540054).abs() < 1e-6);
        assert!((normal_quantile_as111(0.001) + 3.090232306167814).abs() < 1e-6);
    }

    #[test]
    fn royston_coefficients_have_unit_length() {
        for n in [4, 5, 6, 7, 20, 101] {
            let half = royston_half_coefficients(n);
            let length: f64 = 2.0 * half.iter().map(|a| a * a).sum::<f64>();
            assert!((length - 1.0).abs() < 1e-12, "n = {n}: {length}");
            assert!(half.windows(2).all(|pair| pair[0] > pair[1]), "n = {n}");
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(matches!(shapiro_wilk(&[1.0, 2.0]), Err(StatsError::TooFewValues { .. })));
        assert!(matches!(shapiro_wilk(&[2.0; 5]), Err(StatsError::ZeroVariance { .. })));
        assert!(matches!(shapiro_wilk(&[1.0, f64::INFINITY, 2.0]), Err(StatsError::NonFinite { .. })));
        assert!(matches!(brown_forsythe(&[vec![1.0, 2.0]]), Err(StatsError::TooFewGroups { .. })));
        assert!(matches!(
            brown_forsythe(&[vec![1.0, 2.0], vec![3.0]]),
            Err(StatsError::GroupTooSmall { size: 1, .. })
        ));
        assert!(matches!(
            brown_forsythe(&[vec![1.0, 1.0], vec![3.0, 3.0]]),
            Err(StatsError::ZeroVariance { .. })
        ));
    }
}
