use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, FisherSnedecor};

use crate::design::{Dataset, ModelSpec, ResponseScale, Term};
use crate::error::StatsError;

/// Name of the residual row of an [`AnovaTable`].
pub const RESIDUAL: &str = "Residual";

/// One line of an ANOVA table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnovaRow {
    /// `"A"`, `"A:B"` or [`RESIDUAL`].
    pub term: String,
    /// Degrees of freedom: for a term, the rank it adds to the model (less than its level
    /// count suggests when cells are missing); for the residual, observations minus rank.
    pub df: f64,
    /// Type II sum of squares (residual: residual sum of squares of the full model).
    pub sum_sq: f64,
    /// `sum_sq / df`; 0 for a term whose columns are all aliased (df 0).
    pub mean_sq: f64,
    /// F against the residual mean square; `None` for the residual row and for df 0.
    pub f: Option<f64>,
    /// P(F ≥ f); `None` where `f` is.
    pub p: Option<f64>,
}

/// A fixed-effects ANOVA of one model, with Type II sums of squares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnovaTable {
    pub spec: ModelSpec,
    pub response_scale: ResponseScale,
    /// Terms in model order (see [`ModelSpec::terms`]), then the [`RESIDUAL`] row.
    pub rows: Vec<AnovaRow>,
    pub r_squared: f64,
    pub adj_r_squared: f64,
    /// Observed minus fitted, per row of the data set, on the modelled scale (log units for
    /// [`ResponseScale::Log`]).
    pub residuals: Vec<f64>,
    /// Fitted values, per row, on the modelled scale.
    pub fitted: Vec<f64>,
}

impl AnovaTable {
    /// The row of a term, by its table name (`"A:B"`), or the residual row.
    pub fn row(&self, term: &str) -> Option<&AnovaRow> {
        self.rows.iter().find(|row| row.term == term)
    }

    /// The residual row.
    pub fn residual(&self) -> Option<&AnovaRow> {
        self.row(RESIDUAL)
    }
}

/// Fixed-effects ANOVA with Type II sums of squares, as statsmodels'
/// `anova_lm(ols("y ~ C(A) + C(B) + C(A):C(B)", data).fit(), typ=2)`.
///
/// The Type II sum of squares of a term is the drop in residual sum of squares when the term
/// joins the model made of every other term except those that contain it (marginality: A is
/// judged beside B, not beside A:B). Each F is tested against the full model's residual mean
/// square.
///
/// Balanced and unbalanced designs are handled alike. When level combinations are missing the
/// design is rank deficient: the fits use a rank-revealing decomposition and every df is a
/// difference of ranks, so an aliased term gets fewer degrees of freedom (or none). There
/// statsmodels' own typ=2 output is not a model comparison (its Wald test runs on
/// non-estimable coefficients and counts columns as df); this function keeps the definition
/// above, which equals statsmodels' nested-model fits.
pub fn anova(data: &Dataset, spec: &ModelSpec, scale: ResponseScale) -> Result<AnovaTable, StatsError> {
    data.validate()?;
    let terms = spec.terms(data)?;
    let response = transformed_response(data, scale)?;
    let cells = Cells::new(data, &terms, &response);
    if cells.total_sum_sq == 0.0 {
        return Err(StatsError::ZeroVariance { what: "the response" });
    }

    let mut fits = FitCache::new(&cells, &terms);
    let all_terms: Vec<usize> = (0..terms.len()).collect();
    let full = fits.fit(&all_terms);
    let observations = data.len();
    if full.rank >= observations {
        return Err(StatsError::NoResidualDegreesOfFreedom { observations, rank: full.rank });
    }
    let residual_df = (observations - full.rank) as f64;
    let residual_sum_sq = cells.residual_sum_sq(&full.cell_fitted);
    if residual_sum_sq <= cells.total_sum_sq * PERFECT_FIT_FRACTION {
        return Err(StatsError::PerfectFit);
    }
    let residual_mean_sq = residual_sum_sq / residual_df;

    let mut rows = Vec::with_capacity(terms.len() + 1);
    for (index, term) in terms.iter().enumerate() {
        let base: Vec<usize> =
            (0..terms.len()).filter(|&other| !term.is_contained_in(&terms[other])).collect();
        let reduced: Vec<usize> = base.iter().copied().filter(|&t| t != index).collect();
        let with_term = fits.fit(&base);
        let without_term = fits.fit(&reduced);
        // The fits are nested projections, so the gain in explained sum of squares is the
        // squared distance between them; subtracting two residual sums would lose the digits
        // of a small term to cancellation.
        let sum_sq = cells.weighted_distance_sq(&with_term.cell_fitted, &without_term.cell_fitted);
        let df = with_term.rank.saturating_sub(without_term.rank) as f64;
        rows.push(term_row(term, df, sum_sq, residual_mean_sq, residual_df)?);
    }
    rows.push(AnovaRow {
        term: RESIDUAL.to_string(),
        df: residual_df,
        sum_sq: residual_sum_sq,
        mean_sq: residual_mean_sq,
        f: None,
        p: None,
    });

    let r_squared = 1.0 - residual_sum_sq / cells.total_sum_sq;
    let adj_r_squared = 1.0 - (1.0 - r_squared) * (observations as f64 - 1.0) / residual_df;
    let (fitted, residuals) = cells.per_row(&full.cell_fitted, &response);
    Ok(AnovaTable {
        spec: spec.clone(),
        response_scale: scale,
        rows,
        r_squared,
        adj_r_squared,
        residuals,
        fitted,
    })
}

/// A residual sum of squares below this fraction of the total is rounding noise: an exact
/// fit never lands on exactly zero, and F ratios of 1e20 and more would test nothing.
const PERFECT_FIT_FRACTION: f64 = 1e-20;

fn term_row(
    term: &Term,
    df: f64,
    sum_sq: f64,
    residual_mean_sq: f64,
    residual_df: f64,
) -> Result<AnovaRow, StatsError> {
    if df == 0.0 {
        return Ok(AnovaRow { term: term.name(), df, sum_sq, mean_sq: 0.0, f: None, p: None });
    }
    let mean_sq = sum_sq / df;
    let f = mean_sq / residual_mean_sq;
    let p = FisherSnedecor::new(df, residual_df)
        .map_err(|error| StatsError::Distribution(error.to_string()))?
        .sf(f);
    Ok(AnovaRow { term: term.name(), df, sum_sq, mean_sq, f: Some(f), p: Some(p) })
}

pub(crate) fn transformed_response(data: &Dataset, scale: ResponseScale) -> Result<Vec<f64>, StatsError> {
    match scale {
        ResponseScale::Raw => Ok(data.response.clone()),
        ResponseScale::Log => {
            data.response
                .iter()
                .enumerate()
                .map(|(row, &value)| {
                    if value > 0.0 {
                        Ok(value.ln())
                    } else {
                        Err(StatsError::NonPositiveForLog { row, value })
                    }
                })
                .collect()
        }
    }
}

/// The observations grouped by their combination of levels of the model's factors.
///
/// Every model's design row depends only on that combination, so least squares over the
/// cells, each weighted by its count, gives the same fit as over the rows; the spread inside
/// the cells (pure error) is the same for every model and is added back once. This keeps the
/// decompositions at (number of cells) rows however many repetitions were run.
struct Cells {
    /// Per cell: the level id of each model factor, in main-effect order.
    keys: Vec<Vec<usize>>,
    counts: Vec<f64>,
    /// Cell means of the centred response.
    means: Vec<f64>,
    cell_of_row: Vec<usize>,
    /// Mean of the response, subtracted before fitting: the intercept absorbs it in every
    /// model, and the fits stay accurate for large responses.
    grand_mean: f64,
    pure_error_sum_sq: f64,
    total_sum_sq: f64,
}

impl Cells {
    fn new(data: &Dataset, terms: &[Term], response: &[f64]) -> Self {
        let model_columns: Vec<usize> =
            terms.iter().filter(|term| term.columns.len() == 1).map(|term| term.columns[0]).collect();
        let mut level_ids: Vec<HashMap<&str, usize>> = vec![HashMap::new(); model_columns.len()];
        let mut cell_ids: HashMap<Vec<usize>, usize> = HashMap::new();
        let mut keys = Vec::new();
        let mut cell_of_row = Vec::with_capacity(data.len());
        for row in &data.levels {
            let key: Vec<usize> = model_columns
                .iter()
                .zip(level_ids.iter_mut())
                .map(|(&column, ids)| {
                    let next = ids.len();
                    *ids.entry(row[column].as_str()).or_insert(next)
                })
                .collect();
            let next = cell_ids.len();
            let cell = *cell_ids.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                next
            });
            cell_of_row.push(cell);
        }

        let grand_mean = response.iter().sum::<f64>() / response.len() as f64;
        let centred: Vec<f64> = response.iter().map(|y| y - grand_mean).collect();
        let mut counts = vec![0.0; keys.len()];
        let mut sums = vec![0.0; keys.len()];
        for (&cell, value) in cell_of_row.iter().zip(&centred) {
            counts[cell] += 1.0;
            sums[cell] += value;
        }
        let means: Vec<f64> = sums.iter().zip(&counts).map(|(s, n)| s / n).collect();
        let pure_error_sum_sq =
            cell_of_row.iter().zip(&centred).map(|(&cell, value)| (value - means[cell]).powi(2)).sum();
        let total_sum_sq = centred.iter().map(|value| value * value).sum();
        Cells { keys, counts, means, cell_of_row, grand_mean, pure_error_sum_sq, total_sum_sq }
    }

    fn residual_sum_sq(&self, cell_fitted: &[f64]) -> f64 {
        self.pure_error_sum_sq + self.weighted_distance_sq(&self.means, cell_fitted)
    }

    fn weighted_distance_sq(&self, a: &[f64], b: &[f64]) -> f64 {
        self.counts.iter().zip(a.iter().zip(b)).map(|(n, (x, y))| n * (x - y).powi(2)).sum()
    }

    fn per_row(&self, cell_fitted: &[f64], response: &[f64]) -> (Vec<f64>, Vec<f64>) {
        self.cell_of_row
            .iter()
            .zip(response)
            .map(|(&cell, observed)| {
                let fitted = self.grand_mean + cell_fitted[cell];
                (fitted, observed - fitted)
            })
            .unzip()
    }
}

struct Fit {
    /// Fitted (centred) value of each cell.
    cell_fitted: Vec<f64>,
    rank: usize,
}

/// Least-squares fits of sub-models (sets of term indices), each computed once: the Type II
/// table asks for the same base model for many terms.
struct FitCache<'a> {
    cells: &'a Cells,
    /// Per term: the positions of its factors in a cell key.
    key_positions: Vec<Vec<usize>>,
    fits: HashMap<Vec<usize>, std::rc::Rc<Fit>>,
}

impl<'a> FitCache<'a> {
    fn new(cells: &'a Cells, terms: &[Term]) -> Self {
        let main_columns: Vec<usize> =
            terms.iter().filter(|term| term.columns.len() == 1).map(|term| term.columns[0]).collect();
        let key_positions = terms
            .iter()
            .map(|term| {
                term.columns
                    .iter()
                    .filter_map(|column| main_columns.iter().position(|c| c == column))
                    .collect()
            })
            .collect();
        FitCache { cells, key_positions, fits: HashMap::new() }
    }

    fn fit(&mut self, term_set: &[usize]) -> std::rc::Rc<Fit> {
        if let Some(fit) = self.fits.get(term_set) {
            return fit.clone();
        }
        let fit = std::rc::Rc::new(self.least_squares(term_set));
        self.fits.insert(term_set.to_vec(), fit.clone());
        fit
    }

    /// Projects the cell means onto the span of the intercept and, for every term, the
    /// indicators of its level combinations, in the count-weighted inner product.
    ///
    /// Indicator columns for every combination are redundant on purpose: their span is what
    /// any full-rank coding (statsmodels' treatment contrasts included) spans, hierarchical
    /// model or not. The basis is built by Gram-Schmidt, orthogonalizing twice ("twice is
    /// enough" for orthogonality to working precision) and dropping a column when what is
    /// left of it is negligible next to its own length, i.e. it lies in the span of the
    /// columns before it. That is how missing cells lower the rank, as R's `lm` does with its
    /// pivoted QR. (An SVD is not used here: on these exactly rank-deficient indicator matrices
    /// it can return factors that do not reproduce the matrix.)
    fn least_squares(&self, term_set: &[usize]) -> Fit {
        let cells = self.cells;
        let cell_count = cells.keys.len();
        let weights: Vec<f64> = cells.counts.iter().map(|n| n.sqrt()).collect();

        let mut basis: Vec<Vec<f64>> = Vec::new();
        let mut add_column = |column: Vec<f64>| {
            let length = norm(&column);
            let mut remainder = column;
            for _ in 0..2 {
                for direction in &basis {
                    let along = dot(direction, &remainder);
                    axpy(&mut remainder, -along, direction);
                }
            }
            let left = norm(&remainder);
            if left > DEPENDENT_COLUMN_TOLERANCE * length {
                basis.push(remainder.iter().map(|v| v / left).collect());
            }
        };
        add_column(weights.clone());
        for &term in term_set {
            let positions = &self.key_positions[term];
            let mut column_of: HashMap<Vec<usize>, usize> = HashMap::new();
            let mut columns: Vec<Vec<f64>> = Vec::new();
            for (cell, key) in cells.keys.iter().enumerate() {
                let combination: Vec<usize> = positions.iter().map(|&p| key[p]).collect();
                let column = *column_of.entry(combination).or_insert_with(|| {
                    columns.push(vec![0.0; cell_count]);
                    columns.len() - 1
                });
                columns[column][cell] = weights[cell];
            }
            columns.into_iter().for_each(&mut add_column);
        }

        let target: Vec<f64> = cells.means.iter().zip(&weights).map(|(mean, w)| mean * w).collect();
        let mut projection = vec![0.0; cell_count];
        for direction in &basis {
            axpy(&mut projection, dot(direction, &target), direction);
        }
        let cell_fitted = projection.iter().zip(&weights).map(|(value, w)| value / w).collect();
        Fit { cell_fitted, rank: basis.len() }
    }
}

/// The inner product of two columns.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The Euclidean length of a column.
fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// `y += a·x`.
fn axpy(y: &mut [f64], a: f64, x: &[f64]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// A column is dependent on the ones before it when less than this fraction of its length is
/// left after orthogonalization. Exact dependence leaves rounding noise (~1e-15); an
/// independent indicator column keeps at least about 1/√(observations) of its length, so
/// the threshold separates the two by many orders of magnitude for any realistic design.
const DEPENDENT_COLUMN_TOLERANCE: f64 = 1e-9;

/// One removal made by [`reduce_model`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReductionStep {
    /// The interaction removed, e.g. `"A:B"`.
    pub removed: String,
    /// Its p-value in the model it was removed from; `None` when it had no degrees of freedom
    /// left (fully aliased by missing cells).
    pub p: Option<f64>,
}

/// The outcome of [`reduce_model`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reduction {
    /// The model kept.
    pub spec: ModelSpec,
    /// Removals in the order they were made.
    pub steps: Vec<ReductionStep>,
    /// The ANOVA of the model kept.
    pub table: AnovaTable,
}

/// Simplifies a model by the principle of parsimony: refits and drops the least significant
/// interaction (largest p) while that p exceeds `alpha`, one term at a time.
///
/// Main effects always stay. An interaction contained in another remaining interaction (A:B
/// under A:B:D) is not removable until the larger one is gone, so the model stays
/// hierarchical. A term with no degrees of freedom explains nothing and counts as p = 1.
pub fn reduce_model(
    data: &Dataset,
    spec: &ModelSpec,
    scale: ResponseScale,
    alpha: f64,
) -> Result<Reduction, StatsError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(StatsError::InvalidAlpha(alpha));
    }
    let mut current = spec.clone();
    let mut steps = Vec::new();
    loop {
        let table = anova(data, &current, scale)?;
        let terms = current.terms(data)?;
        let mut weakest: Option<(&Term, Option<f64>)> = None;
        for term in terms.iter().filter(|term| term.factors.len() > 1) {
            if terms.iter().any(|other| term.is_contained_in(other)) {
                continue;
            }
            let p = table.row(&term.name()).and_then(|row| row.p);
            let is_weaker = match weakest {
                None => true,
                Some((_, weakest_p)) => p.unwrap_or(1.0) > weakest_p.unwrap_or(1.0),
            };
            if is_weaker {
                weakest = Some((term, p));
            }
        }
        match weakest {
            Some((term, p)) if p.unwrap_or(1.0) > alpha => {
                let removed = term.name();
                current = current.without_interaction(&removed);
                steps.push(ReductionStep { removed, p });
            }
            _ => return Ok(Reduction { spec: current, steps, table }),
        }
    }
}
