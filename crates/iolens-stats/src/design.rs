use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::StatsError;
use crate::validate_finite;

/// The most distinct level combinations (cells) a data set may have.
pub const MAX_CELLS: usize = 2048;

/// Observations of a factorial experiment: each row sets one level of every factor and has one
/// response value (e.g. a throughput).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// Factor names, e.g. `["buffered", "disks"]`.
    pub factors: Vec<String>,
    /// `levels[row][factor]`: the level of each factor in each observation, as text. Levels
    /// are categories: "8" and "08" are different levels.
    pub levels: Vec<Vec<String>>,
    /// One response value per row.
    pub response: Vec<f64>,
}

impl Dataset {
    /// Builds a data set after checking its shape (see [`Dataset::validate`]).
    pub fn new(
        factors: Vec<String>,
        levels: Vec<Vec<String>>,
        response: Vec<f64>,
    ) -> Result<Self, StatsError> {
        let dataset = Dataset { factors, levels, response };
        dataset.validate()?;
        Ok(dataset)
    }

    /// Checks what every analysis relies on: at least one uniquely and usably named factor,
    /// one level per factor in every row, one finite response per row, at least one row.
    /// The fields are public, so each analysis runs this again.
    pub fn validate(&self) -> Result<(), StatsError> {
        if self.factors.is_empty() {
            return Err(StatsError::NoFactors);
        }
        let mut seen = BTreeSet::new();
        for factor in &self.factors {
            if factor.is_empty() || factor.contains(':') {
                return Err(StatsError::InvalidFactorName(factor.clone()));
            }
            if !seen.insert(factor.as_str()) {
                return Err(StatsError::DuplicateFactor(factor.clone()));
            }
        }
        if self.levels.len() != self.response.len() {
            return Err(StatsError::LengthMismatch {
                what: "level rows and response values",
                left: self.levels.len(),
                right: self.response.len(),
            });
        }
        if self.response.is_empty() {
            return Err(StatsError::Empty);
        }
        for (row, levels) in self.levels.iter().enumerate() {
            if levels.len() != self.factors.len() {
                return Err(StatsError::RaggedRow { row, expected: self.factors.len(), got: levels.len() });
            }
        }
        // The fits hold a dense basis over the cells (cells² values, cells³ work): bound them
        // before any analysis allocates.
        let mut cells = BTreeSet::new();
        for levels in &self.levels {
            cells.insert(levels);
            if cells.len() > MAX_CELLS {
                return Err(StatsError::TooManyCells { max: MAX_CELLS });
            }
        }
        validate_finite("response", &self.response)
    }

    /// Number of observations.
    pub fn len(&self) -> usize {
        self.response.len()
    }

    pub fn is_empty(&self) -> bool {
        self.response.is_empty()
    }

    /// Position of a factor in [`Dataset::factors`].
    pub fn factor_index(&self, factor: &str) -> Result<usize, StatsError> {
        self.factors
            .iter()
            .position(|name| name == factor)
            .ok_or_else(|| StatsError::UnknownFactor(factor.to_string()))
    }

    /// The distinct levels of a factor, in [`level_order`].
    pub fn levels_of(&self, factor: &str) -> Result<Vec<String>, StatsError> {
        let index = self.factor_index(factor)?;
        let distinct: BTreeSet<&str> = self.levels.iter().map(|row| row[index].as_str()).collect();
        let mut levels: Vec<String> = distinct.into_iter().map(str::to_string).collect();
        sort_levels(&mut levels);
        Ok(levels)
    }
}

/// Sorts levels numerically when every one of them is a number (so that 2 < 16 < 128, as
/// buffer sizes and thread counts read), and as text otherwise.
pub fn sort_levels(levels: &mut [String]) {
    let numbers: Option<Vec<f64>> = levels.iter().map(|level| level.trim().parse::<f64>().ok()).collect();
    match numbers {
        Some(_) => levels.sort_by(|a, b| level_order(a, b)),
        None => levels.sort(),
    }
}

/// The order of [`sort_levels`] for two levels: numeric when both are numbers.
pub fn level_order(a: &str, b: &str) -> Ordering {
    match (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y).then_with(|| a.cmp(b)),
        _ => a.cmp(b),
    }
}

/// Whether the ANOVA models the response itself or its natural logarithm.
///
/// Throughputs and latencies usually vary multiplicatively: a log response turns those effects
/// additive and evens out the residual variance, as in the IOAgent study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ResponseScale {
    #[default]
    Raw,
    /// Natural logarithm; every response must be positive.
    Log,
}

/// A fixed-effects model: the main effects plus chosen interactions, written like the formula
/// `y ~ A + B + D + A:B`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub main_effects: Vec<String>,
    /// Each interaction lists two or more of the main-effect factors.
    pub interactions: Vec<Vec<String>>,
}

impl ModelSpec {
    /// The additive model of the given factors.
    pub fn main_effects<S: AsRef<str>>(factors: &[S]) -> Self {
        ModelSpec {
            main_effects: factors.iter().map(|f| f.as_ref().to_string()).collect(),
            interactions: Vec::new(),
        }
    }

    /// Adds an interaction of the given factors.
    pub fn with_interaction<S: AsRef<str>>(mut self, factors: &[S]) -> Self {
        self.interactions.push(factors.iter().map(|f| f.as_ref().to_string()).collect());
        self
    }

    /// All interactions of the given factors up to `order` factors each (order 1: main effects
    /// only; order = number of factors: the full factorial model).
    pub fn up_to_order<S: AsRef<str>>(factors: &[S], order: usize) -> Self {
        let names: Vec<String> = factors.iter().map(|f| f.as_ref().to_string()).collect();
        let mut interactions = Vec::new();
        for size in 2..=order.min(names.len()) {
            for combination in combinations(names.len(), size) {
                interactions.push(combination.iter().map(|&i| names[i].clone()).collect());
            }
        }
        ModelSpec { main_effects: names, interactions }
    }

    /// The model's terms in table order: main effects as listed, then interactions by
    /// increasing order (each keeping its listed position among equals), factors inside a
    /// term in main-effect order. Checks the spec against the data set.
    pub fn terms(&self, data: &Dataset) -> Result<Vec<Term>, StatsError> {
        if self.main_effects.is_empty() {
            return Err(StatsError::NoMainEffects);
        }
        let mut terms: Vec<Term> = Vec::new();
        let mut main_columns = Vec::new();
        for factor in &self.main_effects {
            let column = data.factor_index(factor)?;
            if main_columns.contains(&column) {
                return Err(StatsError::DuplicateFactor(factor.clone()));
            }
            main_columns.push(column);
            terms.push(Term { factors: vec![factor.clone()], columns: vec![column] });
        }
        let mut interactions = Vec::new();
        for interaction in &self.interactions {
            let written = interaction.join(":");
            let mut positions = Vec::new();
            for factor in interaction {
                let position = self.main_effects.iter().position(|main| main == factor).ok_or_else(|| {
                    StatsError::InteractionOutsideModel { term: written.clone(), factor: factor.clone() }
                })?;
                if positions.contains(&position) {
                    return Err(StatsError::InvalidInteraction { term: written });
                }
                positions.push(position);
            }
            if positions.len() < 2 {
                return Err(StatsError::InvalidInteraction { term: written });
            }
            positions.sort_unstable();
            let term = Term {
                factors: positions.iter().map(|&p| self.main_effects[p].clone()).collect(),
                columns: positions.iter().map(|&p| main_columns[p]).collect(),
            };
            if interactions.iter().any(|other: &Term| other.factors == term.factors) {
                return Err(StatsError::DuplicateTerm(term.name()));
            }
            interactions.push(term);
        }
        interactions.sort_by_key(|term| term.factors.len());
        terms.extend(interactions);
        Ok(terms)
    }

    /// The same model without the named interaction (`"A:B"`, in any factor order).
    pub(crate) fn without_interaction(&self, name: &str) -> ModelSpec {
        let mut wanted: Vec<&str> = name.split(':').collect();
        wanted.sort_unstable();
        let interactions = self
            .interactions
            .iter()
            .filter(|interaction| {
                let mut factors: Vec<&str> = interaction.iter().map(String::as_str).collect();
                factors.sort_unstable();
                factors != wanted
            })
            .cloned()
            .collect();
        ModelSpec { main_effects: self.main_effects.clone(), interactions }
    }
}

/// One term of a model: a main effect (one factor) or an interaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// Factor names in main-effect order.
    pub factors: Vec<String>,
    /// The factors' positions in the data set, same order.
    pub(crate) columns: Vec<usize>,
}

impl Term {
    /// `"A"` or `"A:B"`.
    pub fn name(&self) -> String {
        self.factors.join(":")
    }

    /// Whether `other` is a higher-order term that contains every factor of this one.
    pub fn is_contained_in(&self, other: &Term) -> bool {
        other.factors.len() > self.factors.len()
            && self.factors.iter().all(|factor| other.factors.contains(factor))
    }
}

/// All `size`-element index combinations of `0..count`, in lexicographic order.
fn combinations(count: usize, size: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut current: Vec<usize> = (0..size).collect();
    if size == 0 || size > count {
        return out;
    }
    loop {
        out.push(current.clone());
        let Some(slot) = (0..size).rev().find(|&i| current[i] < count - size + i) else {
            return out;
        };
        current[slot] += 1;
        for next in slot + 1..size {
            current[next] = current[next - 1] + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_many_cells_are_refused_before_any_fit() {
        let levels: Vec<Vec<String>> = (0..=MAX_CELLS).map(|i| vec![i.to_string()]).collect();
        let response = vec![1.0; levels.len()];
        let e = Dataset::new(vec!["A".into()], levels.clone(), response.clone()).unwrap_err();
        assert_eq!(e, StatsError::TooManyCells { max: MAX_CELLS });
        assert!(Dataset::new(vec!["A".into()], levels[1..].to_vec(), response[1..].to_vec()).is_ok());
    }

    fn data() -> Dataset {
        Dataset::new(
            vec!["A".into(), "B".into(), "D".into()],
            vec![vec!["1".into(), "x".into(), "lo".into()]; 3],
            vec![1.0, 2.0, 3.0],
        )
        .expect("valid data set")
    }

    #[test]
    fn up_to_order_lists_every_combination_once() {
        let spec = ModelSpec::up_to_order(&["A", "B", "D", "E"], 3);
        assert_eq!(spec.interactions.len(), 6 + 4);
        assert_eq!(spec.interactions[0], vec!["A", "B"]);
        assert_eq!(spec.interactions[9], vec!["B", "D", "E"]);
        assert!(ModelSpec::up_to_order(&["A", "B"], 1).interactions.is_empty());
    }

    #[test]
    fn terms_are_ordered_and_named_like_the_formula() {
        let spec = ModelSpec::main_effects(&["B", "A", "D"])
            .with_interaction(&["A", "B", "D"])
            .with_interaction(&["A", "B"]);
        let names: Vec<String> = spec.terms(&data()).expect("valid spec").iter().map(Term::name).collect();
        assert_eq!(names, ["B", "A", "D", "B:A", "B:A:D"]);
    }

    #[test]
    fn bad_specs_are_rejected() {
        let data = data();
        let outside = ModelSpec::main_effects(&["A", "B"]).with_interaction(&["A", "D"]);
        assert!(matches!(outside.terms(&data), Err(StatsError::InteractionOutsideModel { .. })));
        let twice =
            ModelSpec::main_effects(&["A", "B"]).with_interaction(&["A", "B"]).with_interaction(&["B", "A"]);
        assert_eq!(twice.terms(&data), Err(StatsError::DuplicateTerm("A:B".into())));
        let single = ModelSpec::main_effects(&["A", "B"]).with_interaction(&["A", "A"]);
        assert!(matches!(single.terms(&data), Err(StatsError::InvalidInteraction { .. })));
        assert_eq!(ModelSpec::main_effects(&["Z"]).terms(&data), Err(StatsError::UnknownFactor("Z".into())));
        assert_eq!(ModelSpec::main_effects::<&str>(&[]).terms(&data), Err(StatsError::NoMainEffects));
    }

    #[test]
    fn invalid_data_sets_are_rejected() {
        let ragged = Dataset::new(vec!["A".into(), "B".into()], vec![vec!["1".into()]], vec![1.0]);
        assert_eq!(ragged, Err(StatsError::RaggedRow { row: 0, expected: 2, got: 1 }));
        let colon = Dataset::new(vec!["A:B".into()], vec![vec!["1".into()]], vec![1.0]);
        assert_eq!(colon, Err(StatsError::InvalidFactorName("A:B".into())));
        let nan = Dataset::new(vec!["A".into()], vec![vec!["1".into()]], vec![f64::NAN]);
        assert!(matches!(nan, Err(StatsError::NonFinite { .. })));
        let short = Dataset::new(vec!["A".into()], vec![vec!["1".into()]], vec![]);
        assert!(matches!(short, Err(StatsError::LengthMismatch { .. })));
    }

    #[test]
    fn numeric_levels_sort_by_value() {
        let mut levels: Vec<String> = ["128", "8", "32", "16"].map(String::from).to_vec();
        sort_levels(&mut levels);
        assert_eq!(levels, ["8", "16", "32", "128"]);
        let mut mixed: Vec<String> = ["8", "x", "16"].map(String::from).to_vec();
        sort_levels(&mut mixed);
        assert_eq!(mixed, ["16", "8", "x"]);
    }
}
