//! Properties checked on small hand-made data, without reference files: sign rules, known
//! values, parsimony, invariances and the errors for bad input.

use iolens_stats::{
    anova, normalized_pearson, pearson, pearson_test, recommend, reduce_model, residual_diagnostics,
    summarize, Choice, Dataset, Direction, Goal, ModelSpec, NormalizedCc, ResponseScale, StatsError,
};

/// Deterministic, roughly normal noise (sum of uniforms from a fixed xorshift sequence), so
/// the data sets below are the same on every run.
struct Noise(u64);

impl Noise {
    fn next_uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn next_normal(&mut self) -> f64 {
        (0..12).map(|_| self.next_uniform()).sum::<f64>() - 6.0
    }
}

/// A full factorial over `levels` with `reps` rows per cell and response
/// `effect(cell) + noise_sd · noise`.
fn factorial(
    factors: &[&str],
    levels: &[&[&str]],
    reps: usize,
    noise_sd: f64,
    seed: u64,
    effect: impl Fn(&[usize]) -> f64,
) -> Dataset {
    let mut noise = Noise(seed);
    let mut rows = Vec::new();
    let mut response = Vec::new();
    let mut index = vec![0usize; levels.len()];
    'cells: loop {
        for _ in 0..reps {
            rows.push(index.iter().zip(levels).map(|(&i, l)| l[i].to_string()).collect());
            response.push(effect(&index) + noise_sd * noise.next_normal());
        }
        for slot in (0..index.len()).rev() {
            index[slot] += 1;
            if index[slot] < levels[slot].len() {
                continue 'cells;
            }
            index[slot] = 0;
        }
        break;
    }
    Dataset::new(factors.iter().map(|f| f.to_string()).collect(), rows, response).expect("valid data set")
}

fn additive_two_factor(seed: u64) -> Dataset {
    factorial(&["A", "B"], &[&["1", "2", "3"], &["x", "y", "z", "w"]], 4, 1.0, seed, |i| {
        100.0 + 10.0 * i[0] as f64 - 6.0 * i[1] as f64
    })
}

#[test]
fn normalized_cc_is_positive_only_in_the_expected_direction() {
    let right = NormalizedCc::new(-0.9, Direction::Negative);
    assert_eq!((right.normalized_cc, right.direction_ok), (0.9, true));
    let wrong = NormalizedCc::new(0.9, Direction::Negative);
    assert_eq!((wrong.normalized_cc, wrong.direction_ok), (-0.9, false));
    let right = NormalizedCc::new(0.4, Direction::Positive);
    assert_eq!((right.normalized_cc, right.direction_ok), (0.4, true));
    let wrong = NormalizedCc::new(-0.4, Direction::Positive);
    assert_eq!((wrong.normalized_cc, wrong.direction_ok), (-0.4, false));
    // No correlation has no direction.
    let none = NormalizedCc::new(0.0, Direction::Positive);
    assert!(!none.direction_ok);
    assert_eq!(none.normalized_cc.abs(), 0.0);
    assert_eq!(none.cc, 0.0);
}

#[test]
fn normalized_pearson_flags_a_metric_that_moves_the_wrong_way() {
    // Execution time falls as bandwidth rises: bandwidth is expected to correlate negatively.
    let bandwidth = [100.0, 200.0, 300.0, 400.0, 500.0];
    let time = [50.0, 26.0, 17.0, 12.5, 10.0];
    let bw = normalized_pearson(&bandwidth, &time, Direction::Negative).expect("cc");
    assert!(bw.cc < -0.8 && bw.direction_ok && bw.normalized_cc > 0.8);
    // IOPS that rise with execution time (small requests): strong but misleading.
    let iops = [1000.0, 2100.0, 2900.0, 4200.0, 5000.0];
    let misleading = normalized_pearson(&iops, &time, Direction::Positive).expect("cc");
    assert!(!misleading.direction_ok && misleading.normalized_cc < -0.8);
}

#[test]
fn pearson_of_exact_lines_and_its_p_value() {
    let x = [1.0, 2.0, 3.0, 4.0];
    let rising = pearson(&x, &[2.0, 4.0, 6.0, 8.0]).expect("r");
    let falling = pearson(&x, &[8.0, 6.0, 4.0, 2.0]).expect("r");
    assert!((rising - 1.0).abs() < 1e-15 && rising <= 1.0, "{rising}");
    assert!((falling + 1.0).abs() < 1e-15 && falling >= -1.0, "{falling}");
    let perfect = pearson_test(&x, &[3.0, 5.0, 7.0, 9.0]).expect("test");
    assert!(perfect.p < 1e-12, "{}", perfect.p);
    // r = 0.8 with n = 5: t = 0.8·√3/0.6 = 2.3094 on 3 df, two-sided p = 0.104088.
    let x = [1.0, 2.0, 3.0, 4.0, 5.0];
    let y = [1.0, 3.0, 2.0, 5.0, 4.0];
    let test = pearson_test(&x, &y).expect("test");
    assert!((test.r - 0.8).abs() < 1e-12, "{}", test.r);
    assert!((test.p - 0.104_088_039_653_969).abs() < 1e-9, "{}", test.p);
}

#[test]
fn pearson_rejects_bad_input() {
    assert!(matches!(pearson(&[1.0, 2.0, 3.0], &[1.0, 2.0]), Err(StatsError::LengthMismatch { .. })));
    assert!(matches!(pearson(&[1.0, 2.0], &[1.0, 2.0]), Err(StatsError::TooFewValues { needed: 3, .. })));
    assert_eq!(pearson(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0]), Err(StatsError::ZeroVariance { what: "y" }));
    assert!(matches!(
        pearson(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0]),
        Err(StatsError::NonFinite { index: 1, .. })
    ));
}

#[test]
fn summarize_known_values() {
    // Mean 5, squared deviations 32, sample variance 32/7; t(0.975, 7) = 2.364624251592785.
    let summary = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).expect("summary");
    let std_dev = (32.0f64 / 7.0).sqrt();
    let half_width = 2.364_624_251_592_785 * std_dev / 8.0f64.sqrt();
    assert_eq!(summary.n, 8);
    assert_eq!(summary.mean, 5.0);
    assert!((summary.std_dev.expect("sd") - std_dev).abs() < 1e-12);
    assert!((summary.ci95_low.expect("low") - (5.0 - half_width)).abs() < 1e-9);
    assert!((summary.ci95_high.expect("high") - (5.0 + half_width)).abs() < 1e-9);
    assert!((summary.ci95_half_width().expect("width") - half_width).abs() < 1e-9);
    assert!((summary.cv.expect("cv") - std_dev / 5.0).abs() < 1e-12);
}

#[test]
fn summarize_edge_cases() {
    let single = summarize(&[3.5]).expect("one value");
    assert_eq!((single.n, single.mean), (1, 3.5));
    assert_eq!((single.std_dev, single.ci95_low, single.cv), (None, None, None));
    let centred = summarize(&[-1.0, 1.0]).expect("zero mean");
    assert_eq!(centred.cv, None);
    assert!(centred.std_dev.is_some());
    assert_eq!(summarize(&[]), Err(StatsError::Empty));
    assert!(matches!(summarize(&[1.0, f64::INFINITY]), Err(StatsError::NonFinite { index: 1, .. })));
}

#[test]
fn parsimony_removes_a_null_interaction_and_keeps_main_effects() {
    let data = additive_two_factor(7);
    let full = ModelSpec::main_effects(&["A", "B"]).with_interaction(&["A", "B"]);
    let reduction = reduce_model(&data, &full, ResponseScale::Raw, 0.05).expect("reduce");
    assert_eq!(reduction.steps.len(), 1);
    assert_eq!(reduction.steps[0].removed, "A:B");
    assert!(reduction.steps[0].p.expect("p") > 0.05);
    assert_eq!(reduction.spec.main_effects, ["A", "B"]);
    assert!(reduction.spec.interactions.is_empty());
    let terms: Vec<&str> = reduction.table.rows.iter().map(|r| r.term.as_str()).collect();
    assert_eq!(terms, ["A", "B", "Residual"]);
    // Main effects stay even when one of them is null.
    let null_b =
        factorial(&["A", "B"], &[&["1", "2"], &["x", "y", "z"]], 3, 1.0, 11, |i| 20.0 + 5.0 * i[0] as f64);
    let reduction = reduce_model(&null_b, &full, ResponseScale::Raw, 0.05).expect("reduce");
    assert_eq!(reduction.spec.main_effects, ["A", "B"]);
    assert!(reduction.table.row("B").and_then(|r| r.p).expect("p of B") > 0.05);
}

#[test]
fn parsimony_keeps_a_real_interaction() {
    let data = factorial(&["A", "B"], &[&["1", "2"], &["x", "y", "z"]], 3, 0.5, 3, |i| {
        if i[0] == 1 && i[1] == 2 {
            30.0
        } else {
            10.0 + i[0] as f64
        }
    });
    let full = ModelSpec::main_effects(&["A", "B"]).with_interaction(&["A", "B"]);
    let reduction = reduce_model(&data, &full, ResponseScale::Raw, 0.05).expect("reduce");
    assert!(reduction.steps.is_empty());
    assert_eq!(reduction.spec, full);
}

#[test]
fn parsimony_removes_a_three_way_term_before_its_margins() {
    let data = factorial(&["A", "B", "D"], &[&["1", "2"], &["x", "y"], &["lo", "hi"]], 3, 1.0, 5, |i| {
        50.0 + 4.0 * i[0] as f64 + 3.0 * i[1] as f64 + 2.0 * i[2] as f64
    });
    let full = ModelSpec::up_to_order(&["A", "B", "D"], 3);
    let reduction = reduce_model(&data, &full, ResponseScale::Raw, 0.05).expect("reduce");
    assert_eq!(reduction.steps[0].removed, "A:B:D");
    assert!(reduction.spec.interactions.is_empty(), "{:?}", reduction.spec);
    assert_eq!(reduction.steps.len(), 4);
}

#[test]
fn anova_does_not_depend_on_factor_or_row_order() {
    let data = factorial(
        &["A", "B", "D"],
        &[&["1", "2", "3"], &["x", "y"], &["4k", "64k", "1m"]],
        2,
        1.0,
        17,
        |i| 10.0 + i[0] as f64 * i[1] as f64 + 0.5 * i[2] as f64,
    );
    // Drop a few rows and a whole cell so that the design is unbalanced and incomplete.
    let keep: Vec<usize> = (0..data.len()).filter(|i| i % 7 != 3 && !(10..12).contains(i)).collect();
    let subset = |order: &[usize]| Dataset {
        factors: data.factors.clone(),
        levels: order.iter().map(|&i| data.levels[i].clone()).collect(),
        response: order.iter().map(|&i| data.response[i]).collect(),
    };
    let forward = subset(&keep);
    let reversed: Vec<usize> = keep.iter().rev().copied().collect();
    let backward = subset(&reversed);
    let spec =
        ModelSpec::main_effects(&["A", "B", "D"]).with_interaction(&["A", "B"]).with_interaction(&["B", "D"]);
    let permuted =
        ModelSpec::main_effects(&["D", "B", "A"]).with_interaction(&["D", "B"]).with_interaction(&["B", "A"]);
    let reference = anova(&forward, &spec, ResponseScale::Raw).expect("anova");
    for (data, spec) in [(&backward, &spec), (&forward, &permuted), (&backward, &permuted)] {
        let other = anova(data, spec, ResponseScale::Raw).expect("anova");
        for row in &reference.rows {
            let mut factors: Vec<&str> = row.term.split(':').collect();
            let same = other
                .rows
                .iter()
                .find(|candidate| {
                    let mut theirs: Vec<&str> = candidate.term.split(':').collect();
                    theirs.sort_unstable();
                    factors.sort_unstable();
                    theirs == factors
                })
                .expect("same term");
            assert_eq!(same.df, row.df, "{}", row.term);
            let scale = row.sum_sq.abs().max(1.0);
            assert!((same.sum_sq - row.sum_sq).abs() < 1e-9 * scale, "{}", row.term);
        }
        assert!((other.r_squared - reference.r_squared).abs() < 1e-12);
    }
}

#[test]
fn missing_cells_lower_the_interaction_degrees_of_freedom() {
    // A 3×3 design without the cells (1, x) and (2, y): A:B has (3−1)(3−1) − 2 = 2 df.
    let full = factorial(&["A", "B"], &[&["1", "2", "3"], &["x", "y", "z"]], 2, 1.0, 23, |i| {
        (i[0] * 3 + i[1]) as f64
    });
    let keep: Vec<usize> = (0..full.len())
        .filter(|&i| {
            let row = &full.levels[i];
            let cell = (row[0].as_str(), row[1].as_str());
            cell != ("1", "x") && cell != ("2", "y")
        })
        .collect();
    let data = Dataset {
        factors: full.factors.clone(),
        levels: keep.iter().map(|&i| full.levels[i].clone()).collect(),
        response: keep.iter().map(|&i| full.response[i]).collect(),
    };
    let spec = ModelSpec::up_to_order(&["A", "B"], 2);
    let table = anova(&data, &spec, ResponseScale::Raw).expect("anova");
    let df: Vec<f64> = table.rows.iter().map(|row| row.df).collect();
    // 7 cells × 2 rows; the saturated model has rank 7.
    assert_eq!(df, [2.0, 2.0, 2.0, 7.0]);
}

#[test]
fn log_response_is_modelled_in_log_units() {
    let data = factorial(&["A", "B"], &[&["1", "2"], &["x", "y", "z"]], 3, 0.05, 29, |i| {
        (1.0 + i[0] as f64 * 0.7 + i[1] as f64 * 0.2).exp()
    });
    let spec = ModelSpec::main_effects(&["A", "B"]);
    let table = anova(&data, &spec, ResponseScale::Log).expect("anova");
    for (row, y) in data.response.iter().enumerate() {
        assert!((table.fitted[row] + table.residuals[row] - y.ln()).abs() < 1e-12);
    }
    let mut negative = data.clone();
    negative.response[4] = 0.0;
    assert_eq!(
        anova(&negative, &spec, ResponseScale::Log),
        Err(StatsError::NonPositiveForLog { row: 4, value: 0.0 })
    );
    assert!(anova(&negative, &spec, ResponseScale::Raw).is_ok());
}

#[test]
fn anova_rejects_models_it_cannot_test() {
    let one_per_cell =
        factorial(&["A", "B"], &[&["1", "2"], &["x", "y", "z"]], 1, 1.0, 31, |i| i[0] as f64 + i[1] as f64);
    let saturated = ModelSpec::up_to_order(&["A", "B"], 2);
    assert_eq!(
        anova(&one_per_cell, &saturated, ResponseScale::Raw),
        Err(StatsError::NoResidualDegreesOfFreedom { observations: 6, rank: 6 })
    );
    let mut constant = additive_two_factor(37);
    constant.response.iter_mut().for_each(|y| *y = 4.0);
    assert!(matches!(
        anova(&constant, &ModelSpec::main_effects(&["A"]), ResponseScale::Raw),
        Err(StatsError::ZeroVariance { .. })
    ));
    let exact =
        factorial(&["A", "B"], &[&["1", "2"], &["x", "y"]], 2, 0.0, 1, |i| 3.0 * i[0] as f64 + i[1] as f64);
    assert_eq!(
        anova(&exact, &ModelSpec::main_effects(&["A", "B"]), ResponseScale::Raw),
        Err(StatsError::PerfectFit)
    );
    let data = additive_two_factor(41);
    assert_eq!(
        anova(&data, &ModelSpec::main_effects(&["A", "Q"]), ResponseScale::Raw),
        Err(StatsError::UnknownFactor("Q".into()))
    );
    let mut ragged = data.clone();
    ragged.levels[2].pop();
    assert!(matches!(
        anova(&ragged, &ModelSpec::main_effects(&["A"]), ResponseScale::Raw),
        Err(StatsError::RaggedRow { row: 2, .. })
    ));
    assert_eq!(
        reduce_model(&data, &ModelSpec::main_effects(&["A"]), ResponseScale::Raw, 1.5).map(|r| r.steps),
        Err(StatsError::InvalidAlpha(1.5))
    );
}

#[test]
fn recommendations_pick_the_best_level_or_sns() {
    let data =
        factorial(&["A", "B"], &[&["1", "2", "4"], &["x", "y"]], 4, 1.0, 43, |i| [10.0, 30.0, 20.0][i[0]]);
    let table = anova(&data, &ModelSpec::main_effects(&["A", "B"]), ResponseScale::Raw).expect("anova");
    let best = recommend(&data, &table, Goal::Maximize, 0.05).expect("recommend");
    assert_eq!(best[0].choice, Choice::Level("2".into()));
    assert!(best[0].mean.expect("mean") > 25.0);
    assert_eq!(best[1].choice, Choice::NotSignificant);
    assert_eq!(best[1].choice.to_string(), "SNS");
    assert_eq!(best[1].mean, None);
    let worst = recommend(&data, &table, Goal::Minimize, 0.05).expect("recommend");
    assert_eq!(worst[0].choice.to_string(), "1");
    assert_eq!(
        recommend(&data, &table, Goal::Maximize, 0.0).map(|r| r.len()),
        Err(StatsError::InvalidAlpha(0.0))
    );
    let other = additive_two_factor(47);
    assert!(matches!(
        recommend(&other, &table, Goal::Maximize, 0.05),
        Err(StatsError::ResidualsDoNotMatchData { .. })
    ));
}

#[test]
fn residual_diagnostics_need_repeated_cells() {
    let data = additive_two_factor(53);
    let spec = ModelSpec::main_effects(&["A", "B"]);
    let table = anova(&data, &spec, ResponseScale::Raw).expect("anova");
    let diagnostics = residual_diagnostics::<&str>(&data, &table, &[]).expect("diagnostics");
    assert_eq!(diagnostics.cell_factors, ["A", "B"]);
    assert_eq!(diagnostics.cells, 12);
    // Normal noise and equal variances: neither assumption is rejected.
    assert!(diagnostics.normality.result().unwrap().p > 0.01, "{:?}", diagnostics.normality);
    assert!(diagnostics.equal_variance.result().unwrap().p > 0.01, "{:?}", diagnostics.equal_variance);

    let one_per_cell = factorial(&["A", "B"], &[&["1", "2", "3"], &["x", "y", "z"]], 1, 1.0, 59, |i| {
        i[0] as f64 + i[1] as f64
    });
    let table = anova(&one_per_cell, &spec, ResponseScale::Raw).expect("anova");
    // One run per cell: Brown-Forsythe is undefined and says which cell is too small, but
    // Shapiro-Wilk on the nine residuals is still computed.
    let d = residual_diagnostics(&one_per_cell, &table, &["A", "B"]).expect("diagnostics");
    assert!(d.normality.result().is_some(), "{:?}", d.normality);
    let why = d.equal_variance.skipped().expect("Brown-Forsythe skipped");
    assert!(why.contains("A=1,B=x") && why.contains("1 run"), "{why}");
    let by_a = residual_diagnostics(&one_per_cell, &table, &["A"]).expect("pooled over B");
    assert_eq!(by_a.cells, 3);
    assert!(by_a.equal_variance.result().is_some());
}

#[test]
fn two_replicates_per_cell_still_test_normality_and_say_why_brown_forsythe_cannot_run() {
    // The saturated model on two runs per cell: each cell's residuals are +d and -d, so their
    // absolute deviations from the cell median are equal and Brown-Forsythe's F is 0/0.
    let data = factorial(&["A", "B"], &[&["1", "2", "3"], &["x", "y"]], 2, 1.0, 61, |i| {
        50.0 + 5.0 * i[0] as f64 + 3.0 * i[1] as f64
    });
    let spec = ModelSpec::up_to_order(&["A", "B"], 2);
    let table = anova(&data, &spec, ResponseScale::Raw).expect("anova");
    let d = residual_diagnostics(&data, &table, &["A", "B"]).expect("diagnostics");
    let normality = d.normality.result().expect("Shapiro-Wilk is defined on 12 unequal residuals");
    assert!(normality.p > 0.0 && normality.p <= 1.0, "{normality:?}");
    let why = d.equal_variance.skipped().expect("Brown-Forsythe skipped");
    assert!(why.contains("two runs"), "{why}");
    assert!(!why.contains("all values are equal"), "{why}");
}

#[test]
fn residuals_of_rounding_size_are_not_tested() {
    // `anova` refuses a perfect fit, but a table can still carry residuals that are rounding
    // error against responses near 1e6; testing them would report noise in the last bits as a
    // finding about the errors.
    let data = factorial(&["A", "B"], &[&["1", "2"], &["x", "y", "z"]], 3, 1.0, 67, |i| {
        1e6 + 1e3 * i[0] as f64 + 7.0 * i[1] as f64
    });
    let spec = ModelSpec::main_effects(&["A", "B"]);
    let mut table = anova(&data, &spec, ResponseScale::Raw).expect("anova");
    table.fitted = data.response.clone();
    table.residuals = (0..data.len()).map(|i| (i % 5) as f64 * 1e-10 - 2e-10).collect();
    let d = residual_diagnostics(&data, &table, &["A", "B"]).expect("diagnostics");
    for outcome in [&d.normality, &d.equal_variance] {
        let why = outcome.skipped().unwrap_or_else(|| panic!("skipped: {outcome:?}"));
        assert!(why.contains("fits every run exactly"), "{why}");
    }
}

#[test]
fn residual_diagnostics_see_unequal_variances() {
    // The same additive effects, with noise ten times larger at A = 3.
    let mut data = additive_two_factor(61);
    let b_levels = ["x", "y", "z", "w"];
    for (levels, y) in data.levels.iter().zip(data.response.iter_mut()) {
        let a: f64 = levels[0].parse::<f64>().expect("numeric level") - 1.0;
        let b = b_levels.iter().position(|l| *l == levels[1]).expect("level") as f64;
        let effect = 100.0 + 10.0 * a - 6.0 * b;
        if levels[0] == "3" {
            *y = effect + (*y - effect) * 10.0;
        }
    }
    let table = anova(&data, &ModelSpec::main_effects(&["A", "B"]), ResponseScale::Raw).expect("anova");
    let diagnostics = residual_diagnostics(&data, &table, &["A"]).expect("diagnostics");
    assert!(diagnostics.equal_variance.result().unwrap().p < 1e-3, "{:?}", diagnostics.equal_variance);
    let calm = additive_two_factor(61);
    let table = anova(&calm, &ModelSpec::main_effects(&["A", "B"]), ResponseScale::Raw).expect("anova");
    let diagnostics = residual_diagnostics(&calm, &table, &["A"]).expect("diagnostics");
    assert!(diagnostics.equal_variance.result().unwrap().p > 0.01, "{:?}", diagnostics.equal_variance);
}
