//! ANOVA, diagnostics, level means, recommendations and model reduction against the
//! statsmodels / scipy / pandas references in tests/fixtures (see scripts/stats_fixtures.py).

use iolens_stats::{
    anova, cell_means, level_means, recommend, reduce_model, residual_diagnostics, AnovaTable, Choice,
    Dataset, Goal, ModelSpec, ResponseScale, RESIDUAL,
};

use crate::util::{assert_close, read_dataset, read_json, AnovaFixture, ModelFixture, Worst};

/// Sums of squares, F, R² and residuals: relative where values exceed 1, absolute below.
/// The contract is 1e-6; the fits agree to about 1e-11 (run with `--nocapture` for the
/// largest differences), so the tests hold them to 1e-9 to notice a numerical regression.
const TOLERANCE: f64 = 1e-9;
/// p-values, absolute: ANOVA F tests, Shapiro-Wilk and Brown-Forsythe alike (achieved: about
/// 1e-13).
const P_TOLERANCE: f64 = 1e-9;

fn spec_of(model: &ModelFixture) -> ModelSpec {
    ModelSpec { main_effects: model.main_effects.clone(), interactions: model.interactions.clone() }
}

fn scale_of(log: bool) -> ResponseScale {
    if log {
        ResponseScale::Log
    } else {
        ResponseScale::Raw
    }
}

fn check_model(data: &Dataset, model: &ModelFixture, worst: &mut Worst) -> AnovaTable {
    let context = format!("model {}", model.name);
    let table = anova(data, &spec_of(model), scale_of(model.log_response))
        .unwrap_or_else(|e| panic!("{context}: {e}"));

    let names: Vec<&str> = table.rows.iter().map(|row| row.term.as_str()).collect();
    let expected_names: Vec<&str> = model.table.iter().map(|row| row.term.as_str()).collect();
    assert_eq!(names, expected_names, "{context}: terms");

    for (row, expected) in table.rows.iter().zip(&model.table) {
        let at = format!("{context}, term {}", row.term);
        assert_eq!(row.df, expected.df, "{at}: df");
        assert_close(row.sum_sq, expected.sum_sq, TOLERANCE, &format!("{at}: sum_sq"));
        worst.record("sum_sq", row.sum_sq, expected.sum_sq);
        if let Some(mean_sq) = expected.mean_sq {
            assert_close(row.mean_sq, mean_sq, TOLERANCE, &format!("{at}: mean_sq"));
        }
        match (row.f, expected.f) {
            (Some(f), Some(expected_f)) => {
                assert_close(f, expected_f, TOLERANCE, &format!("{at}: F"));
                worst.record("F", f, expected_f);
            }
            (None, None) => {}
            (got, want) => panic!("{at}: F {got:?}, expected {want:?}"),
        }
        match (row.p, expected.p) {
            (Some(p), Some(expected_p)) => {
                assert_close(p, expected_p, P_TOLERANCE, &format!("{at}: p"));
                worst.record("ANOVA p", p, expected_p);
            }
            (None, None) => {}
            (got, want) => panic!("{at}: p {got:?}, expected {want:?}"),
        }
    }
    assert_close(table.r_squared, model.r_squared, TOLERANCE, &format!("{context}: R²"));
    assert_close(table.adj_r_squared, model.adj_r_squared, TOLERANCE, &format!("{context}: adjusted R²"));
    worst.record("R²", table.r_squared, model.r_squared);

    assert_eq!(table.residuals.len(), model.residuals.len());
    let response_scale: Vec<f64> = match table.response_scale {
        ResponseScale::Raw => data.response.clone(),
        ResponseScale::Log => data.response.iter().map(|y| y.ln()).collect(),
    };
    for (row, (residual, expected)) in table.residuals.iter().zip(&model.residuals).enumerate() {
        assert_close(*residual, *expected, TOLERANCE, &format!("{context}: residual {row}"));
        worst.record("residuals", *residual, *expected);
        let reconstructed = table.fitted[row] + residual;
        assert_close(reconstructed, response_scale[row], 1e-9, &format!("{context}: fitted {row}"));
    }

    let diagnostics = residual_diagnostics(data, &table, &model.brown_forsythe.cell_factors)
        .unwrap_or_else(|e| panic!("{context}: diagnostics: {e}"));
    let normality =
        diagnostics.normality.result().unwrap_or_else(|| panic!("{context}: {:?}", diagnostics.normality));
    let equal_variance = diagnostics
        .equal_variance
        .result()
        .unwrap_or_else(|| panic!("{context}: {:?}", diagnostics.equal_variance));
    assert_close(
        normality.statistic,
        model.shapiro_wilk.statistic,
        TOLERANCE,
        &format!("{context}: Shapiro-Wilk W"),
    );
    assert_close(normality.p, model.shapiro_wilk.p, P_TOLERANCE, &format!("{context}: Shapiro-Wilk p"));
    worst.record("Shapiro-Wilk p (residuals)", normality.p, model.shapiro_wilk.p);
    assert_eq!(diagnostics.cells, model.brown_forsythe.groups, "{context}: cells");
    assert_close(
        equal_variance.statistic,
        model.brown_forsythe.statistic,
        TOLERANCE,
        &format!("{context}: Brown-Forsythe statistic"),
    );
    assert_close(
        equal_variance.p,
        model.brown_forsythe.p,
        P_TOLERANCE,
        &format!("{context}: Brown-Forsythe p"),
    );
    worst.record("Brown-Forsythe p (residuals)", equal_variance.p, model.brown_forsythe.p);
    table
}

fn check_fixture(name: &str) -> (AnovaFixture, Dataset, Vec<AnovaTable>) {
    let fixture: AnovaFixture = read_json(&format!("{name}.json"));
    let data = read_dataset(&fixture);
    let mut worst = Worst::default();
    let tables: Vec<AnovaTable> =
        fixture.models.iter().map(|model| check_model(&data, model, &mut worst)).collect();
    worst.print(name);
    check_means(&fixture, &data);
    check_recommendations(&fixture, &data, &tables);
    check_reduction(&fixture, &data);
    (fixture, data, tables)
}

fn check_means(fixture: &AnovaFixture, data: &Dataset) {
    if let Some(expected) = &fixture.level_means {
        for (factor, levels) in expected {
            let got = level_means(data, factor).expect("level means");
            assert_eq!(got.len(), levels.len(), "levels of {factor}");
            for expected_level in levels {
                let level = got
                    .iter()
                    .find(|l| l.level == expected_level.level)
                    .unwrap_or_else(|| panic!("{factor}: no level {}", expected_level.level));
                assert_eq!(level.n, expected_level.n, "{factor}={}", level.level);
                assert_close(level.mean, expected_level.mean, 1e-12, &format!("{factor}={}", level.level));
            }
        }
    }
    for interaction in fixture.interaction_means.iter().flatten() {
        let got = cell_means(data, &interaction.factors).expect("cell means");
        assert_eq!(got.len(), interaction.cells.len(), "cells of {:?}", interaction.factors);
        for expected in &interaction.cells {
            let cell = got
                .iter()
                .find(|c| c.levels == expected.levels)
                .unwrap_or_else(|| panic!("no cell {:?}", expected.levels));
            assert_eq!(cell.n, expected.n, "{:?}", expected.levels);
            assert_close(cell.mean, expected.mean, 1e-12, &format!("{:?}", expected.levels));
        }
    }
}

fn check_recommendations(fixture: &AnovaFixture, data: &Dataset, tables: &[AnovaTable]) {
    let Some(expected) = &fixture.recommend else {
        return;
    };
    let index = fixture
        .models
        .iter()
        .position(|model| model.name == expected.model)
        .expect("recommendation model is in the fixture");
    for (goal, picks) in [(Goal::Maximize, &expected.maximize), (Goal::Minimize, &expected.minimize)] {
        let got = recommend(data, &tables[index], goal, expected.alpha).expect("recommend");
        assert_eq!(got.len(), picks.len());
        for (recommendation, pick) in got.iter().zip(picks) {
            assert_eq!(recommendation.factor, pick.factor);
            assert_eq!(recommendation.choice.to_string(), pick.choice, "{goal:?} {}", pick.factor);
            assert_eq!(
                recommendation.choice == Choice::NotSignificant,
                pick.choice == "SNS",
                "{goal:?} {}",
                pick.factor
            );
        }
    }
}

fn check_reduction(fixture: &AnovaFixture, data: &Dataset) {
    let Some(expected) = &fixture.reduction else {
        return;
    };
    let start = ModelSpec { main_effects: fixture.factors.clone(), interactions: expected.start.clone() };
    let reduction =
        reduce_model(data, &start, scale_of(expected.log_response), expected.alpha).expect("reduce_model");
    let removed: Vec<&str> = reduction.steps.iter().map(|s| s.removed.as_str()).collect();
    let expected_removed: Vec<&str> = expected.steps.iter().map(|s| s.removed.as_str()).collect();
    assert_eq!(removed, expected_removed, "removal order");
    for (step, expected_step) in reduction.steps.iter().zip(&expected.steps) {
        let p = step.p.expect("removed terms had degrees of freedom");
        assert_close(p, expected_step.p, P_TOLERANCE, &format!("p of {}", step.removed));
    }
    assert_eq!(reduction.spec.interactions, expected.kept, "interactions kept");
    assert_eq!(reduction.spec.main_effects, fixture.factors, "main effects kept");
    // The final table is the kept model's, and everything left in it is significant.
    for term in &expected.kept {
        let row = reduction.table.row(&term.join(":")).expect("kept term in table");
        assert!(row.p.is_some_and(|p| p <= expected.alpha), "{}: {:?}", row.term, row.p);
    }
    assert!(reduction.table.residual().is_some());
}

#[test]
fn two_factor_balanced_matches_statsmodels() {
    let (_, _, tables) = check_fixture("two_factor_balanced");
    // Balanced: Type II main-effect sums of squares do not depend on the interaction.
    let additive = tables[0].row("A").expect("A").sum_sq;
    let with_interaction = tables[1].row("A").expect("A").sum_sq;
    assert_close(additive, with_interaction, 1e-9, "balanced A");
}

#[test]
fn three_factor_unbalanced_matches_statsmodels() {
    let (_, _, tables) = check_fixture("three_factor_unbalanced");
    // Unbalanced: the same main effect gets a different sum of squares once A:B is in.
    let additive = tables[0].row("A").expect("A").sum_sq;
    let with_interaction = tables[1].row("A").expect("A").sum_sq;
    assert!((additive - with_interaction).abs() > 1.0);
}

#[test]
fn missing_cells_match_nested_model_fits() {
    let (fixture, _, tables) = check_fixture("three_factor_missing_cells");
    // Three of the 18 cells are absent: A:B keeps 3 of its 4 degrees of freedom.
    let index = fixture.models.iter().position(|model| model.name == "two_way").expect("two_way model");
    assert!(!fixture.models[index].full_rank);
    assert_eq!(tables[index].row("A:B").expect("A:B").df, 3.0);
}

#[test]
fn four_factor_balanced_matches_statsmodels() {
    check_fixture("four_factor_balanced");
}

#[test]
fn five_factor_paper_design_matches_statsmodels() {
    let (_, _, tables) = check_fixture("five_factor_paper");
    assert!(tables[0].rows.iter().any(|row| row.term == RESIDUAL));
}
