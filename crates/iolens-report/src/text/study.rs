//! `doe analyze` and `correlate` in the terminal: ANOVA tables, the parsimony steps, residual
//! tests, level and cell means, the recommended configuration; each metric's correlation.

use iolens_stats::study::{AnovaRow, CorrelationReport, StudyAnalysis};
use iolens_stats::TestOutcome;

use super::table::Table;

/// A p-value: `-` when there is none, scientific below 1e-4.
pub fn fmt_p(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 1e-4 => format!("{p:.2e}"),
        Some(p) => format!("{p:.4}"),
    }
}

fn render_anova(rows: &[AnovaRow], r_squared: f64, adj_r_squared: f64, out: &mut String) {
    let mut table = Table::new(vec!["term", "df", "sum_sq", "mean_sq", "F", "p"]);
    table.left_aligned = vec![0];
    for r in rows {
        table.rows.push(vec![
            r.term.clone(),
            format!("{}", r.df),
            format!("{:.6e}", r.sum_sq),
            format!("{:.6e}", r.mean_sq),
            r.f.map_or("-".into(), |f| format!("{f:.4}")),
            fmt_p(r.p),
        ]);
    }
    table.render(out);
    out.push_str(&format!("R² {r_squared:.4}, adjusted R² {adj_r_squared:.4}\n"));
}

fn test_line(outcome: &TestOutcome) -> String {
    match outcome {
        TestOutcome::Computed(t) => {
            format!("{}: statistic {:.4}, p {}", t.test, t.statistic, fmt_p(Some(t.p)))
        }
        TestOutcome::Skipped { test, skipped } => format!("{test} not computed: {skipped}"),
    }
}

/// The analysis of a study.
pub fn render_study(a: &StudyAnalysis) -> String {
    let mut out = format!(
        "ANOVA (Type II sums of squares) of {}{} in {} ({} runs), model: {}\n",
        if a.log_response { "log " } else { "" },
        a.response,
        a.data,
        a.rows,
        a.model_terms.join(" + ")
    );
    render_anova(&a.anova, a.r_squared, a.adj_r_squared, &mut out);
    if !a.full {
        if a.removed.is_empty() {
            out.push_str(&format!(
                "\nparsimony: every interaction is significant at {} (or there are none)\n",
                a.alpha
            ));
        } else {
            for s in &a.removed {
                out.push_str(&format!("parsimony: removed {} (p {})\n", s.removed, fmt_p(s.p)));
            }
            out.push_str("\nfinal model:\n");
            render_anova(&a.final_anova, a.final_r_squared, a.final_adj_r_squared, &mut out);
        }
    }
    match (&a.diagnostics, &a.diagnostics_note) {
        (Some(d), _) => out.push_str(&format!(
            "residuals: {}\nresiduals over {} cells of {}: {}\n",
            test_line(&d.normality),
            d.cells,
            d.cell_factors.join(","),
            test_line(&d.equal_variance),
        )),
        (None, Some(note)) => out.push_str(&format!("{note}\n")),
        _ => {}
    }
    for (f, means) in &a.level_means {
        let cells: Vec<String> =
            means.iter().map(|m| format!("{} {:.6e} (n {})", m.level, m.mean, m.n)).collect();
        out.push_str(&format!("mean {} by {f}: {}\n", a.response, cells.join(", ")));
    }
    for it in &a.significant_interactions {
        out.push_str(&format!("significant interaction {} (p {}):\n", it.term, fmt_p(it.p)));
        // The factor names head the first row: the table header takes static names only.
        let mut t = Table::new(vec!["", "", "mean", "n"]);
        t.rows.push(it.term.split(':').map(str::to_string).chain([String::new(), String::new()]).collect());
        for c in &it.cells {
            let mut row = c.levels.clone();
            row.push(format!("{:.6e}", c.mean));
            row.push(c.n.to_string());
            t.rows.push(row);
        }
        t.render(&mut out);
    }
    let mut t = Table::new(vec!["factor", "recommended", "p", "mean"]);
    t.left_aligned = vec![0, 1];
    for r in &a.recommendations {
        t.rows.push(vec![
            r.factor.clone(),
            r.choice.to_string(),
            fmt_p(r.p),
            r.mean.map_or("-".into(), |m| format!("{m:.6e}")),
        ]);
    }
    out.push_str(&format!(
        "recommended configuration ({} {}; SNS = statistically not significant at {}):\n",
        a.goal, a.response, a.alpha
    ));
    t.render(&mut out);
    out
}

/// Each metric's correlation with execution time.
pub fn render_correlation(r: &CorrelationReport) -> String {
    let mut t = Table::new(vec!["metric", "expected", "CC", "normalized CC", "direction", "p"]);
    t.left_aligned = vec![0, 1, 4];
    for m in &r.metrics {
        t.rows.push(vec![
            m.name.clone(),
            m.expected.into(),
            format!("{:.4}", m.cc),
            format!("{:+.4}", m.normalized_cc),
            if m.direction_ok { "right".into() } else { "WRONG".into() },
            fmt_p(Some(m.p)),
        ]);
    }
    let mut out = format!("Pearson correlation with {} over {} rows of {}:\n", r.time, r.rows, r.data);
    t.render(&mut out);
    out.push_str(
        "normalized CC = |CC|, negative when the sign is not the expected one (a misleading metric)\n",
    );
    out
}

/// `doe PLAN`'s first line: the plan's size and order, and where its rows go.
pub fn render_plan(plan: &iolens_suites::doe::Plan, csv: &std::path::Path) -> String {
    format!(
        "doe {}: {} factors, {} combinations × {} replicates = {} runs in randomized order (seed {}), rows in {}",
        plan.file.display(),
        plan.factors.len(),
        plan.combinations().len(),
        plan.replicates,
        plan.runs().len(),
        plan.seed,
        csv.display()
    )
}

/// One run of a study as it ends: its levels and the bandwidth it reached.
pub fn render_study_run(
    plan: &iolens_suites::doe::Plan,
    run: &iolens_suites::doe::PlannedRun,
    bw_bytes_s: f64,
    i: usize,
    n: usize,
) -> String {
    let levels: Vec<String> =
        plan.factors.iter().zip(&run.levels).map(|(f, &l)| format!("{}={}", f.name, f.levels[l].1)).collect();
    format!(
        "run {i}/{n} (id {}, replicate {}): {} → {}",
        run.run_id,
        run.replicate,
        levels.join(" "),
        super::number::fmt_mib(bw_bytes_s)
    )
}

/// How a study went, and (when it is complete) the command that analyses it.
pub fn render_study_outcome(
    plan: &iolens_suites::doe::Plan,
    outcome: &iolens_suites::doe::StudyOutcome,
    csv: &std::path::Path,
) -> String {
    let mut text = format!(
        "{} runs in the study: {} were already done, {} ran now{}\n",
        outcome.total_runs,
        outcome.already_done,
        outcome.ran,
        if outcome.interrupted { "; interrupted — re-run the same command to resume" } else { "" }
    );
    if !outcome.interrupted {
        let factors: Vec<&str> = plan.factors.iter().map(|f| f.name.as_str()).collect();
        text += &format!(
            "analyze: iolens doe analyze {} --response {} --factors {}\n",
            csv.display(),
            plan.response,
            factors.join(",")
        );
    }
    text
}
