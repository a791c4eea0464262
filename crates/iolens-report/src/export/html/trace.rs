//! The section for trace summaries (`trace`, `analyze`): figures, the request-size histogram,
//! a timeline per process where the summary carries timed operations, and the per-file,
//! per-process and per-executable tables.

use serde_json::Value;

use super::svg::{Axis, BarChart, BarGroup, LineChart, Scale, Series, Span, Timeline, Unit};
use super::{array, bandwidth, cell, latency, latency_cdf, num, text, Page};

/// Processes drawn on the timeline at most.
const MAX_ROWS: usize = 40;

pub(crate) fn trace(page: &mut Page, doc: &Value) {
    page.facts(&[
        ("ops", cell(num(doc, &[&["ops"]]), Unit::Count)),
        ("bytes", cell(num(doc, &[&["bytes"]]), Unit::Bytes)),
        ("wall", cell(num(doc, &[&["wall_s"]]), Unit::Seconds)),
        ("IOPS", cell(num(doc, &[&["iops"]]), Unit::Count)),
        ("bandwidth", cell(bandwidth(doc), Unit::BytesPerSec)),
        ("p50", cell(latency(doc, "p50"), Unit::Nanos)),
        ("p99", cell(latency(doc, "p99"), Unit::Nanos)),
        ("sequential", cell(num(doc, &[&["sequential_fraction"]]), Unit::Fraction)),
        ("layer", text(doc, "aggregate_layer").unwrap_or_default()),
    ]);
    for note in array(doc, "notes") {
        page.note(&note.as_str().map_or_else(|| note.to_string(), str::to_string));
    }

    timeline(page, doc);

    let histogram = array(doc, "size_histogram");
    if !histogram.is_empty() {
        let mut chart = BarChart::new(
            "Request sizes",
            histogram.iter().map(|b| text(b, "label").unwrap_or_default()).collect(),
            Axis::new("operations", Scale::Linear, Unit::Count),
        );
        for (name, key) in [("read", "read_ops"), ("write", "write_ops")] {
            chart.groups.push(BarGroup {
                name: name.into(),
                values: histogram.iter().map(|b| num(b, &[&[key]]).unwrap_or(0.0)).collect(),
            });
        }
        chart.render(page.out());
    }

    let mut cdf = LineChart::new(
        "Latency CDF",
        Axis::new("latency", Scale::Log10, Unit::Nanos),
        Axis::new("fraction of operations", Scale::Linear, Unit::Fraction).with_range(0.0, 1.0),
    );
    for (name, lat) in [
        ("all", doc.get("lat_ns")),
        ("read", doc.get("read").and_then(|r| r.get("lat_ns"))),
        ("write", doc.get("write").and_then(|w| w.get("lat_ns"))),
    ] {
        if let Some(lat) = lat {
            cdf.series.push(Series::new(name, latency_cdf(lat)));
        }
    }
    if !cdf.series.is_empty() {
        cdf.render(page.out());
    }

    let files: Vec<Vec<String>> = array(doc, "files")
        .iter()
        .map(|f| {
            vec![
                text(f, "path").unwrap_or_default(),
                text(f, "layer").unwrap_or_default(),
                cell(num(f, &[&["ops"]]), Unit::Count),
                cell(num(f, &[&["read_bytes"]]), Unit::Bytes),
                cell(num(f, &[&["write_bytes"]]), Unit::Bytes),
                cell(num(f, &[&["busy_s"]]), Unit::Seconds),
                cell(num(f, &[&["mean_latency_s"]]), Unit::Seconds),
            ]
        })
        .collect();
    if !files.is_empty() {
        page.heading("Files");
        page.table(&["path", "layer", "ops", "read", "written", "busy", "mean latency"], &files);
    }
    let processes: Vec<Vec<String>> = array(doc, "processes")
        .iter()
        .map(|p| {
            vec![
                text(p, "pid").or_else(|| text(p, "rank")).unwrap_or_default(),
                text(p, "layer").unwrap_or_default(),
                cell(num(p, &[&["ops"]]), Unit::Count),
                cell(num(p, &[&["bytes"]]), Unit::Bytes),
                cell(num(p, &[&["busy_s"]]), Unit::Seconds),
                cell(num(p, &[&["threads"]]), Unit::Count),
            ]
        })
        .collect();
    if !processes.is_empty() {
        page.heading("Processes");
        page.table(&["process", "layer", "ops", "bytes", "busy", "threads"], &processes);
    }
    let executables: Vec<Vec<String>> = array(doc, "executables")
        .iter()
        .map(|e| {
            vec![
                text(e, "exe").unwrap_or_default(),
                cell(num(e, &[&["processes"]]), Unit::Count),
                cell(num(e, &[&["ops"]]), Unit::Count),
                cell(num(e, &[&["bytes"]]), Unit::Bytes),
                text(e, "counted").unwrap_or_default(),
            ]
        })
        .collect();
    if !executables.is_empty() {
        page.heading("Executables");
        page.table(&["executable", "processes", "ops", "bytes", "counted"], &executables);
    }
}

/// Which process (or rank) an operation or lifetime belongs to.
fn owner(v: &Value) -> Option<String> {
    num(v, &[&["rank"]])
        .map(|r| format!("rank {r}"))
        .or_else(|| num(v, &[&["pid"]]).map(|p| format!("pid {p}")))
}

/// Spans from whatever timed data the summary has: process lifetimes (`start_s`/`end_s` on a
/// process), a `timeline` of operations, and the slowest operations.
fn timeline(page: &mut Page, doc: &Value) {
    let kinds = vec!["read".to_string(), "write".to_string(), "other".to_string(), "lifetime".to_string()];
    let kind_of = |op: &str| match op {
        o if o.contains("read") => 0,
        o if o.contains("write") => 1,
        _ => 2,
    };
    let mut rows: Vec<String> = Vec::new();
    let mut spans = Vec::new();
    let mut add = |who: String, start: f64, end: f64, kind: usize, title: String, rows: &mut Vec<String>| {
        let row = match rows.iter().position(|r| *r == who) {
            Some(r) => r,
            None if rows.len() < MAX_ROWS => {
                rows.push(who);
                rows.len() - 1
            }
            None => return,
        };
        spans.push(Span { row, start_s: start, end_s: end, kind, title });
    };
    for p in array(doc, "processes") {
        if let (Some(who), Some(start), Some(end)) =
            (owner(p), num(p, &[&["start_s"]]), num(p, &[&["end_s"]]))
        {
            add(who.clone(), start, end, 3, format!("{who} lifetime"), &mut rows);
        }
    }
    let ops = array(doc, "timeline").iter().chain(array(doc, "slowest"));
    for op in ops {
        let (Some(who), Some(start)) = (owner(op), num(op, &[&["start_s"]])) else { continue };
        let duration = num(op, &[&["duration_s"]]).unwrap_or(0.0);
        let name = text(op, "op").unwrap_or_default();
        let title = format!(
            "{who} {name} {} of {} at {}: {}",
            text(op, "path").unwrap_or_default(),
            cell(num(op, &[&["bytes"]]), Unit::Bytes),
            cell(Some(start), Unit::Seconds),
            cell(Some(duration), Unit::Seconds)
        );
        add(who, start, start + duration, kind_of(&name), title, &mut rows);
    }
    if spans.is_empty() {
        return;
    }
    let slowest_only = array(doc, "timeline").is_empty();
    page.heading("Timeline");
    if slowest_only {
        page.note(
            "The slowest operations the summary kept, per process (the summary keeps no full timeline).",
        );
    }
    Timeline { title: "I/O timeline per process".into(), rows, kinds, spans }.render(page.out());
}
