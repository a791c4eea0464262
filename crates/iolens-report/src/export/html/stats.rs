//! Sections for the statistics commands: validate, correlate and doe analyze.

use serde_json::Value;

use super::svg::{Axis, BarChart, BarGroup, LineChart, Scale, Series, Unit};
use super::{array, cell, num, text, Page};

fn cc_axis() -> Axis {
    Axis::new(
        "normalized correlation with execution time (1 = tracks it as expected)",
        Scale::Linear,
        Unit::Plain,
    )
    .with_range(-1.0, 1.0)
}

pub(crate) fn validate(page: &mut Page, doc: &Value) {
    let sets = array(doc, "sets");
    let mut metrics: Vec<String> = Vec::new();
    for s in sets {
        for c in array(s, "correlations") {
            let name = text(c, "name").unwrap_or_default();
            if !metrics.contains(&name) {
                metrics.push(name);
            }
        }
    }
    let mut chart =
        BarChart::new("Normalized correlation per metric and experiment set", metrics.clone(), cc_axis());
    for s in sets {
        let label = format!(
            "set {}: {}",
            num(s, &[&["set"]]).map_or_else(|| "?".into(), |n| n.to_string()),
            text(s, "name").unwrap_or_default()
        );
        let correlations = array(s, "correlations");
        let values = metrics
            .iter()
            .map(|m| {
                correlations
                    .iter()
                    .find(|c| text(c, "name").as_ref() == Some(m))
                    .and_then(|c| num(c, &[&["normalized_cc"]]))
                    .unwrap_or(f64::NAN)
            })
            .collect();
        chart.groups.push(BarGroup { name: label, values });
    }
    chart.render(page.out());
    for s in sets {
        let title =
            format!("Set {}: {}", text(s, "set").unwrap_or_default(), text(s, "name").unwrap_or_default());
        page.heading(&title);
        let rows: Vec<Vec<String>> = array(s, "correlations")
            .iter()
            .map(|c| {
                vec![
                    text(c, "name").unwrap_or_default(),
                    cell(num(c, &[&["cc"]]), Unit::Plain),
                    cell(num(c, &[&["normalized_cc"]]), Unit::Plain),
                    text(c, "direction_ok").unwrap_or_default(),
                ]
            })
            .collect();
        page.table(&["metric", "CC", "normalized CC", "expected direction"], &rows);
        let misleading: Vec<String> = array(s, "misleading")
            .iter()
            .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_string))
            .collect();
        if !misleading.is_empty() {
            page.note(&format!(
                "Misleading in this set (correlates against its expected direction): {}",
                misleading.join(", ")
            ));
        }
        for item in array(s, "notes") {
            let line = item.as_str().map_or_else(|| item.to_string(), str::to_string);
            page.note(&line);
        }
    }
}

pub(crate) fn correlate(page: &mut Page, doc: &Value) {
    page.facts(&[
        ("data", text(doc, "data").unwrap_or_default()),
        ("time column", text(doc, "time").unwrap_or_default()),
    ]);
    let metrics = array(doc, "metrics");
    let mut chart = BarChart::new(
        "Normalized correlation per metric",
        metrics.iter().map(|m| text(m, "name").unwrap_or_default()).collect(),
        cc_axis(),
    );
    chart.groups.push(BarGroup {
        name: "normalized CC".into(),
        values: metrics.iter().map(|m| num(m, &[&["normalized_cc"]]).unwrap_or(f64::NAN)).collect(),
    });
    chart.render(page.out());
    let rows: Vec<Vec<String>> = metrics
        .iter()
        .map(|m| {
            vec![
                text(m, "name").unwrap_or_default(),
                cell(num(m, &[&["cc"]]), Unit::Plain),
                cell(num(m, &[&["normalized_cc"]]), Unit::Plain),
                text(m, "expected").unwrap_or_default(),
                text(m, "direction_ok").unwrap_or_default(),
                cell(num(m, &[&["p"]]), Unit::Plain),
                cell(num(m, &[&["n"]]), Unit::Count),
            ]
        })
        .collect();
    page.table(&["metric", "CC", "normalized CC", "expected", "as expected", "p", "n"], &rows);
}

/// Levels in the order they first appear.
/// Mean response per level of a term's first factor, one line per level of the others: lines
/// far from parallel show the factors interacting.
fn interaction_plot(page: &mut Page, term: &Value, significant: bool, y: &Axis) {
    let name = text(term, "term").unwrap_or_default();
    let factors: Vec<&str> = name.split(':').collect();
    let cells = array(term, "cells");
    let level = |c: &Value, i: usize| {
        c.get("levels").and_then(|l| l.get(i)).and_then(Value::as_str).map(str::to_string)
    };
    // The first factor along x, one line per combination of the others.
    let rest = |c: &Value| (1..factors.len()).filter_map(|i| level(c, i)).collect::<Vec<_>>().join(", ");
    let xs = distinct(cells.iter().filter_map(|c| level(c, 0)));
    let lines = distinct(cells.iter().map(rest));
    let verdict = if significant { "significant" } else { "not significant" };
    let mut chart = LineChart::new(
        &format!("Interaction {name} (p = {}, {verdict})", cell(num(term, &[&["p"]]), Unit::Plain)),
        Axis::categorical(factors[0], xs.clone()),
        y.clone(),
    );
    for line in &lines {
        let points = cells
            .iter()
            .filter(|c| &rest(c) == line)
            .filter_map(|c| {
                Some((xs.iter().position(|x| Some(x) == level(c, 0).as_ref())? as f64, num(c, &[&["mean"]])?))
            })
            .collect();
        chart.series.push(Series::new(format!("{} = {line}", factors[1..].join(", ")), points));
    }
    chart.render(page.out());
}

fn distinct(values: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

pub(crate) fn doe(page: &mut Page, doc: &Value) {
    let response = text(doc, "response").unwrap_or_else(|| "response".into());
    page.facts(&[
        ("data", text(doc, "data").unwrap_or_default()),
        ("response", response.clone()),
        ("runs", cell(num(doc, &[&["rows"]]), Unit::Count)),
        ("R²", cell(num(doc, &[&["final_r_squared"], &["r_squared"]]), Unit::Plain)),
        ("goal", text(doc, "goal").unwrap_or_default()),
    ]);
    let unit = if response.starts_with("bw") {
        Unit::BytesPerSec
    } else if response.ends_with("_s") {
        Unit::Seconds
    } else {
        Unit::Count
    };
    let y = || Axis::new(&format!("mean {response}"), Scale::Linear, unit);
    for entry in array(doc, "level_means") {
        // [factor, [{level, mean, n}]]
        let (Some(factor), Some(levels)) =
            (entry.get(0).and_then(Value::as_str), entry.get(1).and_then(Value::as_array))
        else {
            continue;
        };
        let names: Vec<String> = levels.iter().map(|l| text(l, "level").unwrap_or_default()).collect();
        let mut chart =
            LineChart::new(&format!("Main effect of {factor}"), Axis::categorical(factor, names), y());
        chart.series.push(Series::new(
            "",
            levels.iter().enumerate().filter_map(|(i, l)| Some((i as f64, num(l, &[&["mean"]])?))).collect(),
        ));
        chart.render(page.out());
    }
    let significant = array(doc, "significant_interactions");
    // Every two-factor interaction where the result has them all, else the significant ones.
    let all = array(doc, "interaction_means");
    if significant.is_empty() {
        page.note(if all.is_empty() {
            "No significant interaction: the main-effect plots tell the whole story."
        } else {
            "No significant interaction: the main-effect plots tell the whole story; the lines of \
             the interaction plots below differ from parallel by no more than the noise."
        });
    }
    let terms = if all.is_empty() { significant } else { all };
    for term in terms {
        let name = text(term, "term").unwrap_or_default();
        let is_significant = significant.iter().any(|s| text(s, "term").as_deref() == Some(&name));
        interaction_plot(page, term, is_significant, &y());
    }
    let anova_key = if doc.get("final_anova").is_some_and(Value::is_array) { "final_anova" } else { "anova" };
    let rows: Vec<Vec<String>> = array(doc, anova_key)
        .iter()
        .map(|r| {
            vec![
                text(r, "term").unwrap_or_default(),
                cell(num(r, &[&["df"]]), Unit::Plain),
                cell(num(r, &[&["sum_sq"]]), Unit::Plain),
                cell(num(r, &[&["F"]]), Unit::Plain),
                cell(num(r, &[&["p"]]), Unit::Plain),
            ]
        })
        .collect();
    page.heading("ANOVA");
    page.table(&["term", "df", "sum of squares", "F", "p"], &rows);
    let recommendations: Vec<Vec<String>> = array(doc, "recommendations")
        .iter()
        .map(|r| {
            let choice = match r.get("choice") {
                Some(Value::Object(m)) => {
                    m.values().map(|v| v.as_str().unwrap_or("?").to_string()).collect::<Vec<_>>().join(", ")
                }
                Some(Value::String(s)) if s == "NotSignificant" => "no significant effect".into(),
                Some(Value::String(s)) => s.clone(),
                _ => "-".into(),
            };
            vec![text(r, "factor").unwrap_or_default(), choice, cell(num(r, &[&["p"]]), Unit::Plain)]
        })
        .collect();
    if !recommendations.is_empty() {
        page.heading("Recommendations");
        page.table(&["factor", "choice", "p"], &recommendations);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn every_two_factor_interaction_is_plotted_and_says_whether_it_is_significant() {
        let cell = |bs: &str, t: &str, mean: f64| json!({"levels": [bs, t], "mean": mean, "n": 2});
        let doc = json!({
            "response": "bw_bytes_s", "anova": [], "level_means": [],
            "significant_interactions": [],
            "interaction_means": [{"term": "bs:threads", "p": 0.46, "cells": [
                cell("4k", "1", 1.0e9), cell("4k", "2", 1.2e9), cell("16k", "1", 3.0e9), cell("16k", "2", 3.3e9)
            ]}]
        });
        let html = super::super::render(&[super::super::Source { name: "d.json", doc: &doc }], "t").unwrap();
        assert!(html.contains("Interaction bs:threads (p = 0.46, not significant)"), "{html}");
        assert!(
            html.contains(">threads = 1</text>") && html.contains(">threads = 2</text>"),
            "a line per level"
        );
        assert!(!html.contains("no data to plot"));
    }
}
