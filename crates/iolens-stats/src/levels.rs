use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::anova::AnovaTable;
use crate::design::Dataset;
use crate::diagnostics::CellKey;
use crate::error::StatsError;

/// The mean response at one level of a factor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelMean {
    pub level: String,
    /// Mean of the response in its original units (never log-transformed: these are the
    /// numbers a reader compares).
    pub mean: f64,
    /// Observations at this level.
    pub n: usize,
}

/// The mean response at one combination of levels of several factors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellMean {
    /// One level per factor, in the order the factors were asked for.
    pub levels: Vec<String>,
    pub mean: f64,
    pub n: usize,
}

/// Mean response per level of `factor`, levels in [`crate::level_order`].
pub fn level_means(data: &Dataset, factor: &str) -> Result<Vec<LevelMean>, StatsError> {
    Ok(cell_means(data, &[factor])?
        .into_iter()
        .map(|cell| LevelMean {
            level: cell.levels.into_iter().next().unwrap_or_default(),
            mean: cell.mean,
            n: cell.n,
        })
        .collect())
}

/// Mean response per combination of levels of `factors` present in the data (two factors: the
/// cells of a two-way interaction plot). Combinations are ordered level by level.
pub fn cell_means<S: AsRef<str>>(data: &Dataset, factors: &[S]) -> Result<Vec<CellMean>, StatsError> {
    data.validate()?;
    if factors.is_empty() {
        return Err(StatsError::NoFactors);
    }
    let columns =
        factors.iter().map(|factor| data.factor_index(factor.as_ref())).collect::<Result<Vec<_>, _>>()?;
    let mut sums: BTreeMap<CellKey, (f64, usize)> = BTreeMap::new();
    for (levels, value) in data.levels.iter().zip(&data.response) {
        let key = CellKey(columns.iter().map(|&c| levels[c].clone()).collect());
        let entry = sums.entry(key).or_insert((0.0, 0));
        entry.0 += value;
        entry.1 += 1;
    }
    Ok(sums.into_iter().map(|(key, (sum, n))| CellMean { levels: key.0, mean: sum / n as f64, n }).collect())
}

/// Whether a larger or a smaller response is better (throughput versus latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Goal {
    Maximize,
    Minimize,
}

/// What to set a factor to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Choice {
    /// The level with the best mean response.
    Level(String),
    /// The factor's effect is not statistically significant: any level will do.
    NotSignificant,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Level(level) => f.write_str(level),
            Choice::NotSignificant => f.write_str("SNS"),
        }
    }
}

/// The recommended setting of one factor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub factor: String,
    pub choice: Choice,
    /// The factor's p-value in the ANOVA; `None` when it had no degrees of freedom.
    pub p: Option<f64>,
    /// Mean response (original units) at the chosen level; `None` for
    /// [`Choice::NotSignificant`].
    pub mean: Option<f64>,
}

/// Recommends a level for each main effect of the analysed model, as Table 3 of the IOAgent
/// paper: the level with the best mean response, or "statistically not significant" (SNS)
/// when the factor's p-value exceeds `alpha` (or could not be computed).
///
/// The choice rests on each factor's own level means; where a significant interaction makes
/// the best level depend on another factor, look at [`cell_means`] as well.
pub fn recommend(
    data: &Dataset,
    table: &AnovaTable,
    goal: Goal,
    alpha: f64,
) -> Result<Vec<Recommendation>, StatsError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(StatsError::InvalidAlpha(alpha));
    }
    if table.residuals.len() != data.len() {
        return Err(StatsError::ResidualsDoNotMatchData { table: table.residuals.len(), data: data.len() });
    }
    let mut recommendations = Vec::with_capacity(table.spec.main_effects.len());
    for factor in &table.spec.main_effects {
        let p = table.row(factor).and_then(|row| row.p);
        let significant = p.is_some_and(|p| p <= alpha);
        let (choice, mean) = if significant {
            let means = level_means(data, factor)?;
            let mut best: Option<&LevelMean> = None;
            for candidate in &means {
                let better = match (best, goal) {
                    (None, _) => true,
                    (Some(current), Goal::Maximize) => candidate.mean > current.mean,
                    (Some(current), Goal::Minimize) => candidate.mean < current.mean,
                };
                if better {
                    best = Some(candidate);
                }
            }
            match best {
                Some(best) => (Choice::Level(best.level.clone()), Some(best.mean)),
                None => (Choice::NotSignificant, None),
            }
        } else {
            (Choice::NotSignificant, None)
        };
        recommendations.push(Recommendation { factor: factor.clone(), choice, p, mean });
    }
    Ok(recommendations)
}
