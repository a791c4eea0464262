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

/// Rectangles drawn on the timeline at most: a page stays light whatever the trace's length.
pub(crate) const MAX_SPANS: usize = 4000;

/// Each lane's busy periods `(start_s, end_s)`, with gaps closed, shortest first, until all
/// lanes together have at most `budget` periods. Returns the shortest gap kept (0: none closed).
pub(crate) fn decimate(lanes: &mut [Vec<(f64, f64)>], budget: usize) -> f64 {
    let total = |lanes: &[Vec<(f64, f64)>]| lanes.iter().map(Vec::len).sum::<usize>();
    if total(lanes) <= budget {
        return 0.0;
    }
    for lane in lanes.iter_mut() {
        lane.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let span = lanes.iter().flatten().map(|p| p.1).fold(0.0, f64::max)
        - lanes.iter().flatten().map(|p| p.0).fold(f64::INFINITY, f64::min);
    // Start near the gap that would leave `budget` evenly spaced periods, then double.
    let mut gap = (span / budget.max(1) as f64).max(f64::MIN_POSITIVE);
    loop {
        for lane in lanes.iter_mut() {
            let mut kept: Vec<(f64, f64)> = Vec::with_capacity(lane.len());
            for &(a, b) in lane.iter() {
                match kept.last_mut() {
                    Some(last) if a - last.1 <= gap => last.1 = last.1.max(b),
                    _ => kept.push((a, b)),
                }
            }
            *lane = kept;
        }
        if total(lanes) <= budget || !gap.is_finite() {
            return gap;
        }
        gap *= 2.0;
    }
}

/// The processes' busy periods (from `analyze`), their lifetimes and the slowest operations,
/// one lane per process.
fn timeline(page: &mut Page, doc: &Value) {
    let kinds: Vec<String> =
        ["busy", "read", "write", "other", "lifetime"].iter().map(|k| k.to_string()).collect();
    let kind_of = |op: &str| match op {
        o if o.contains("read") => 1,
        o if o.contains("write") => 2,
        _ => 3,
    };
    let mut rows: Vec<String> = Vec::new();
    let mut dropped = false;
    let mut row_of = |who: String, rows: &mut Vec<String>| match rows.iter().position(|r| *r == who) {
        Some(r) => Some(r),
        None if rows.len() < MAX_ROWS => {
            rows.push(who);
            Some(rows.len() - 1)
        }
        None => {
            dropped = true;
            None
        }
    };
    let mut lanes: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
    let mut coarsest = 0.0f64;
    for p in array(doc, "processes") {
        let periods: Vec<(f64, f64)> = array(p, "busy_periods_s")
            .iter()
            .filter_map(|iv| Some((iv.get(0)?.as_f64()?, iv.get(1)?.as_f64()?)))
            .filter(|(a, b)| a.is_finite() && b.is_finite())
            .collect();
        let Some(who) = owner(p) else { continue };
        let who = match text(p, "layer") {
            Some(layer) => format!("{who} {layer}"),
            None => who,
        };
        if periods.is_empty() {
            continue;
        }
        let Some(row) = row_of(who, &mut rows) else { continue };
        coarsest = coarsest.max(num(p, &[&["busy_periods_resolution_s"]]).unwrap_or(0.0));
        lanes.push((row, periods));
    }
    let mut periods: Vec<Vec<(f64, f64)>> = lanes.iter().map(|l| l.1.clone()).collect();
    let merged_gap = decimate(&mut periods, MAX_SPANS);
    let mut spans = Vec::new();
    for ((row, _), periods) in lanes.iter().zip(periods) {
        for (a, b) in periods {
            let title = format!(
                "{} busy from {} for {}",
                rows[*row],
                cell(Some(a), Unit::Seconds),
                cell(Some(b - a), Unit::Seconds)
            );
            spans.push(Span { row: *row, start_s: a, end_s: b, kind: 0, title });
        }
    }
    let busy_lanes = !spans.is_empty();
    for p in array(doc, "processes") {
        if let (Some(who), Some(start), Some(end)) =
            (owner(p), num(p, &[&["start_s"]]), num(p, &[&["end_s"]]))
        {
            let Some(row) = row_of(who.clone(), &mut rows) else { continue };
            spans.push(Span { row, start_s: start, end_s: end, kind: 4, title: format!("{who} lifetime") });
        }
    }
    let ops = array(doc, "timeline").iter().chain(array(doc, "slowest"));
    for op in ops.take(MAX_SPANS) {
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
        // On the lane of the process's busy periods where it has one.
        let lane = match (busy_lanes, text(op, "layer")) {
            (true, Some(layer)) if rows.contains(&format!("{who} {layer}")) => format!("{who} {layer}"),
            _ => who,
        };
        let Some(row) = row_of(lane, &mut rows) else { continue };
        spans.push(Span { row, start_s: start, end_s: start + duration, kind: kind_of(&name), title });
    }
    if spans.is_empty() {
        return;
    }
    page.heading("Timeline");
    if busy_lanes {
        page.note(
            "Busy: when each process had a call in flight (the union of its calls). The slowest \
             operations are drawn over their process's lane in the colour of their kind.",
        );
    } else if array(doc, "timeline").is_empty() {
        page.note(
            "The slowest operations the summary kept, per process (the summary keeps no full timeline).",
        );
    }
    if coarsest > 1e-9 {
        page.note(&format!(
            "The analysis kept each process's busy periods exact to {} (a bounded number per process).",
            cell(Some(coarsest), Unit::Seconds)
        ));
    }
    if merged_gap > 0.0 {
        page.note(&format!(
            "Decimated to at most {MAX_SPANS} periods: idle gaps shorter than {} are drawn as busy.",
            cell(Some(merged_gap), Unit::Seconds)
        ));
    }
    if dropped {
        page.note(&format!("The first {MAX_ROWS} processes are drawn; the tables list every one kept."));
    }
    Timeline { title: "I/O timeline per process".into(), rows, kinds, spans }.render(page.out());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decimation_closes_the_shortest_gaps_first_and_keeps_the_budget() {
        let mut lanes = vec![vec![(0.0, 1.0), (1.1, 2.0), (5.0, 6.0)], vec![(0.0, 0.5), (0.6, 1.0)]];
        assert_eq!(decimate(&mut lanes.clone(), 5), 0.0, "within the budget: untouched");
        let gap = decimate(&mut lanes, 3);
        assert!((0.1..3.0).contains(&gap), "{gap}");
        assert_eq!(lanes, [vec![(0.0, 2.0), (5.0, 6.0)], vec![(0.0, 1.0)]]);
    }

    proptest::proptest! {
        /// Any lanes, however many, long or far apart their periods: decimation ends within the
        /// budget (every lane one period at worst).
        #[test]
        fn decimation_always_ends_within_the_budget(
            lanes in proptest::collection::vec(
                proptest::collection::vec((-1e300f64..1e300, 0f64..1e300), 0..300), 1..40),
            budget in 40usize..500,
        ) {
            let mut lanes: Vec<Vec<(f64, f64)>> =
                lanes.into_iter().map(|l| l.into_iter().map(|(a, d)| (a, a + d)).collect()).collect();
            let before: usize = lanes.iter().map(Vec::len).sum();
            let gap = decimate(&mut lanes, budget);
            let after: usize = lanes.iter().map(Vec::len).sum();
            proptest::prop_assert!(after <= budget && after <= before, "{before} -> {after}, gap {gap}");
        }
    }

    #[test]
    fn a_long_trace_is_drawn_within_the_span_budget_and_says_it_was_decimated() {
        let periods = |lane: u64| -> Vec<[f64; 2]> {
            (0..3000).map(|i| [i as f64 * 1e-3 + lane as f64 * 1e-4, i as f64 * 1e-3 + 5e-4]).collect()
        };
        let doc = json!({
            "ops": 9000, "size_histogram": [], "files": [],
            "processes": [
                {"pid": 1, "layer": "posix", "busy_periods_s": periods(0), "busy_periods_resolution_s": 1e-9},
                {"pid": 2, "layer": "posix", "busy_periods_s": periods(1), "busy_periods_resolution_s": 1e-6},
                {"pid": 3, "layer": "posix", "busy_periods_s": periods(2), "busy_periods_resolution_s": 1e-9}
            ],
            "slowest": [{"pid": 2, "layer": "posix", "op": "read", "start_s": 1.0, "duration_s": 0.01}]
        });
        let html = super::super::render(&[super::super::Source { name: "t.json", doc: &doc }], "t").unwrap();
        let timeline = &html[html.find("I/O timeline per process").unwrap()..];
        let timeline = &timeline[..timeline.find("</svg>").unwrap()];
        let rects = timeline.matches("<rect x=").count();
        assert!((3..=MAX_SPANS + 1).contains(&rects), "{rects} rectangles");
        assert!(html.contains("Decimated to at most 4000 periods"), "the page says so");
        assert!(html.contains("exact to 1 µs"), "the analysis's own resolution is told");
        for lane in ["pid 1 posix", "pid 2 posix", "pid 3 posix"] {
            assert!(timeline.contains(&format!(">{lane}</text>")), "{lane} has a lane");
        }
        assert!(timeline.contains("pid 2 read"), "the slowest op is on its process's lane");
        assert!(
            timeline.contains(">busy</text>") && timeline.contains(">read</text>"),
            "drawn kinds in the legend"
        );
        assert!(!timeline.contains(">lifetime</text>"), "no legend entry for a kind not drawn");
    }
}
