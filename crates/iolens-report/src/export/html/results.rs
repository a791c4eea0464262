//! Sections for runs (single, repeated, MPI), quick's summary, comparisons and monitor samples.

use serde_json::Value;

use super::svg::{format_value, Axis, BarChart, BarGroup, LineChart, Scale, Series, Unit};
use super::{array, at, bandwidth, cell, latency, latency_cdf, num, text, Page};

/// Agents (or ranks) drawn one by one at most; beyond, the aggregate speaks for them.
const MAX_CURVES: usize = 8;

fn figures_row(name: &str, v: &Value) -> Vec<String> {
    vec![
        name.to_string(),
        cell(num(v, &[&["iops"]]), Unit::Count),
        cell(bandwidth(v), Unit::BytesPerSec),
        cell(num(v, &[&["lat_ns", "mean"]]), Unit::Nanos),
        cell(latency(v, "p50"), Unit::Nanos),
        cell(latency(v, "p99"), Unit::Nanos),
        cell(latency(v, "p99_9"), Unit::Nanos),
        cell(num(v, &[&["lat_ns", "max"]]), Unit::Nanos),
        cell(num(v, &[&["bps"]]), Unit::Count),
        cell(num(v, &[&["ops"]]), Unit::Count),
        cell(num(v, &[&["wall_s"]]), Unit::Seconds),
    ]
}

const FIGURE_HEADERS: [&str; 11] =
    ["", "IOPS", "bandwidth", "mean lat", "p50", "p99", "p99.9", "max", "BPS", "ops", "wall"];

/// Per-agent (or per-rank) results of a run: `agents`, or `per_rank` under MPI.
fn parts(doc: &Value) -> Vec<(String, &Value)> {
    let agents = array(doc, "agents")
        .iter()
        .enumerate()
        .map(|(i, a)| (text(a, "name").unwrap_or_else(|| format!("agent {i}")), a));
    let ranks = array(doc, "per_rank")
        .iter()
        .enumerate()
        .map(|(i, r)| (num(r, &[&["rank"]]).map_or_else(|| format!("rank {i}"), |n| format!("rank {n}")), r));
    agents.chain(ranks).collect()
}

pub(crate) fn run(page: &mut Page, doc: &Value) {
    let aggregate = &doc["aggregate"];
    let parts = parts(doc);
    let mut rows = vec![figures_row("aggregate", aggregate)];
    rows.extend(parts.iter().map(|(name, v)| figures_row(name, v)));
    page.heading("Figures");
    page.table(&FIGURE_HEADERS, &rows);
    let agents: Vec<Vec<String>> = array(doc, "agents")
        .iter()
        .map(|a| {
            ["name", "target", "rw", "bs", "engine", "qd", "direct"]
                .iter()
                .map(|k| text(a, k).unwrap_or_else(|| "-".into()))
                .collect()
        })
        .collect();
    if !agents.is_empty() {
        page.heading("Agents");
        page.table(&["name", "target", "rw", "bs", "engine", "qd", "direct"], &agents);
    }
    nodes(page, doc);

    let mut cdf = LineChart::new(
        "Latency CDF",
        Axis::new("latency", Scale::Log10, Unit::Nanos),
        Axis::new("fraction of operations", Scale::Linear, Unit::Fraction).with_range(0.0, 1.0),
    );
    cdf.series.push(Series::new("aggregate", latency_cdf(&aggregate["lat_ns"])));
    if parts.len() > 1 {
        for (name, v) in parts.iter().take(MAX_CURVES) {
            let mut s = Series::new(name.clone(), latency_cdf(&v["lat_ns"]));
            s.dashed = true;
            cdf.series.push(s);
        }
    }
    let from_bins = aggregate.get("lat_ns").is_some_and(|l| l.get("bins").is_some());
    page.heading("Latency");
    page.note(if from_bins {
        "From the latency histogram's bins (each point: the share of operations at or below the bin's upper edge)."
    } else {
        "From the reported percentiles (min, p50, p90, p95, p99, p99.9, p99.99, max)."
    });
    cdf.render(page.out());

    interval_series(page, doc);
    device(page, doc);
}

/// Under MPI across several hosts: each node's share (`per_node`), rates over the job's window
/// and busy time the union of the node's ranks.
fn nodes(page: &mut Page, doc: &Value) {
    let nodes = array(doc, "per_node");
    if nodes.len() < 2 {
        return;
    }
    let rows: Vec<Vec<String>> = nodes
        .iter()
        .map(|n| {
            let ranks: Vec<String> =
                n["ranks"].as_array().into_iter().flatten().map(|r| r.to_string()).collect();
            vec![
                text(n, "host").unwrap_or_default(),
                ranks.join(","),
                num(n, &[&["ops"]]).map_or_else(|| "-".into(), |v| format_value(v, Unit::Count)),
                num(n, &[&["iops"]]).map_or_else(|| "-".into(), |v| format_value(v, Unit::Count)),
                num(n, &[&["bw_bytes_s"]]).map_or_else(|| "-".into(), |v| format_value(v, Unit::BytesPerSec)),
                num(n, &[&["busy_s"]]).map_or_else(|| "-".into(), |v| format_value(v, Unit::Seconds)),
                num(n, &[&["bps"]]).map_or_else(|| "-".into(), |v| format_value(v, Unit::Count)),
                text(n, "device").unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    page.heading("Nodes");
    page.note("Rates over the job's measured window (the nodes' add up to the job's); busy time is the union of each node's ranks' in-flight intervals.");
    page.table(&["host", "ranks", "ops", "IOPS", "bandwidth", "busy", "BPS", "device"], &rows);
}

/// Time of an interval: its end, as the contract writes it, or whatever key a sample has.
fn interval_time(v: &Value) -> Option<f64> {
    num(v, &[&["end_s"], &["t_s"], &["time_s"], &["start_s"]])
}

fn looks_like_intervals(items: &[Value]) -> bool {
    items.first().is_some_and(|i| interval_time(i).is_some())
}

/// Adds the series `v` holds: a list of intervals, a list of named holders of intervals, or an
/// object of named lists.
fn add_series<'a>(name: &str, v: &'a Value, found: &mut Vec<(String, Vec<&'a Value>)>) {
    match v {
        Value::Array(items) if looks_like_intervals(items) => {
            found.push((name.to_string(), items.iter().collect()))
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let label = text(item, "agent")
                    .or_else(|| text(item, "name"))
                    .unwrap_or_else(|| format!("{name} {i}"));
                for key in ["intervals", "points", "series"] {
                    if let Some(Value::Array(inner)) = item.get(key) {
                        if looks_like_intervals(inner) {
                            found.push((label.clone(), inner.iter().collect()));
                        }
                    }
                }
            }
        }
        Value::Object(map) => {
            // The aggregate first: it speaks for the run where one series is drawn.
            let mut keys: Vec<&String> = map.keys().filter(|k| map[*k].is_array()).collect();
            keys.sort_by_key(|k| *k != "aggregate");
            for key in keys {
                add_series(key, &map[key], found);
            }
        }
        _ => {}
    }
}

/// Named per-interval series of a run: the aggregate's and each agent's, wherever the run keeps
/// them (`series` at the top, in `aggregate`, or in each agent).
fn collect_series(doc: &Value) -> Vec<(String, Vec<&Value>)> {
    let mut found = Vec::new();
    if let Some(s) = doc.get("series") {
        add_series("aggregate", s, &mut found);
    }
    if let Some(s) = at(doc, &["aggregate", "series"]) {
        add_series("aggregate", s, &mut found);
    }
    for (name, agent) in parts(doc) {
        if let Some(s) = agent.get("series") {
            add_series(&name, s, &mut found);
        }
    }
    found
}

fn interval_series(page: &mut Page, doc: &Value) {
    let series = collect_series(doc);
    if series.is_empty() {
        return;
    }
    page.heading("Per interval");
    let time = || Axis::new("seconds since the run started", Scale::Linear, Unit::Plain);
    let curve = |name: &str, items: &[&Value], f: &dyn Fn(&Value) -> Option<f64>| {
        Series::new(name, items.iter().filter_map(|v| Some((interval_time(v)?, f(v)?))).collect())
    };
    let mut iops = LineChart::new("IOPS per interval", time(), Axis::new("IOPS", Scale::Linear, Unit::Count));
    let mut bw = LineChart::new(
        "Bandwidth per interval",
        time(),
        Axis::new("bandwidth", Scale::Linear, Unit::BytesPerSec),
    );
    for (name, items) in series.iter().take(MAX_CURVES) {
        iops.series.push(curve(name, items, &|v| num(v, &[&["iops"]])));
        bw.series.push(curve(name, items, &bandwidth));
    }
    iops.dots = series.iter().all(|(_, items)| items.len() <= 60);
    bw.dots = iops.dots;
    iops.render(page.out());
    bw.render(page.out());
    let (name, items) = &series[0];
    let mut lat = LineChart::new(
        &format!("Latency per interval ({name})"),
        time(),
        Axis::new("latency", Scale::Log10, Unit::Nanos),
    );
    for p in ["p50", "p99", "max"] {
        lat.series.push(curve(p, items, &|v| {
            if p == "max" {
                num(v, &[&["lat_ns", "max"]])
            } else {
                latency(v, p)
            }
        }));
    }
    lat.dots = iops.dots;
    lat.render(page.out());
}

fn device(page: &mut Page, doc: &Value) {
    let Some(dev) = doc.get("device").filter(|d| d.is_object()) else { return };
    page.heading("Device");
    page.facts(&[
        ("device", text(dev, "device").unwrap_or_default()),
        ("file system", text(dev, "filesystem").unwrap_or_default()),
        ("utilization", cell(num(dev, &[&["util"]]), Unit::Fraction)),
        ("mean queue", cell(num(dev, &[&["avg_queue"]]), Unit::Plain)),
        ("read", cell(num(dev, &[&["read_bytes"]]), Unit::Bytes)),
        ("written", cell(num(dev, &[&["write_bytes"]]), Unit::Bytes)),
        ("amplification", cell(num(dev, &[&["amplification"]]), Unit::Plain)),
    ]);
    let samples = array(dev, "samples");
    if samples.is_empty() {
        page.note("No per-second device samples: the run was shorter than a sampling interval.");
        return;
    }
    let time = || Axis::new("seconds since the run started", Scale::Linear, Unit::Plain);
    let mut util = LineChart::new(
        "Device utilization",
        time(),
        Axis::new("busy share of each second", Scale::Linear, Unit::Fraction).with_range(0.0, 1.0),
    );
    let points = |f: &dyn Fn(&Value) -> Option<f64>| {
        samples.iter().filter_map(|s| Some((num(s, &[&["t_s"]])?, f(s)?))).collect::<Vec<_>>()
    };
    util.series.push(Series::new("utilization", points(&|s| num(s, &[&["util"]]))));
    util.render(page.out());
    let mut bytes =
        LineChart::new("Device throughput", time(), Axis::new("bandwidth", Scale::Linear, Unit::BytesPerSec));
    let rate = |key: &'static str| {
        move |s: &Value| Some(num(s, &[&[key]])? / num(s, &[&["interval_s"]]).filter(|i| *i > 0.0)?)
    };
    bytes.series.push(Series::new("read", points(&rate("read_bytes"))));
    bytes.series.push(Series::new("write", points(&rate("write_bytes"))));
    bytes.render(page.out());
}

pub(crate) fn repeated_run(page: &mut Page, doc: &Value) {
    let summary = array(doc, "summary");
    let rows: Vec<Vec<String>> = summary
        .iter()
        .map(|m| {
            let name = text(m, "name").unwrap_or_default();
            let unit = metric_unit(&name);
            vec![
                name,
                cell(num(m, &[&["mean"]]), unit),
                cell(num(m, &[&["ci95_low"]]), unit),
                cell(num(m, &[&["ci95_high"]]), unit),
                cell(num(m, &[&["cv"]]), Unit::Fraction),
                array(m, "values").len().to_string(),
            ]
        })
        .collect();
    page.heading("Summary over the repetitions");
    page.table(&["metric", "mean", "95% low", "95% high", "CV", "n"], &rows);
    for (name, unit, title) in [
        ("iops", Unit::Count, "IOPS per repetition"),
        ("bw_bytes_s", Unit::BytesPerSec, "Bandwidth per repetition"),
    ] {
        let Some(m) = summary.iter().find(|m| text(m, "name").as_deref() == Some(name)) else { continue };
        let values: Vec<f64> = array(m, "values").iter().filter_map(Value::as_f64).collect();
        let mut x = Axis::new("repetition", Scale::Linear, Unit::Count);
        x.from_zero = false;
        let mut chart = LineChart::new(title, x, Axis::new(name, Scale::Linear, unit));
        chart
            .series
            .push(Series::new(name, values.iter().enumerate().map(|(i, v)| (i as f64 + 1.0, *v)).collect()));
        let span = (1.0, values.len().max(1) as f64);
        for (key, label, colour, in_legend) in [
            ("mean", "mean", 1, true),
            ("ci95_low", "95% interval", 2, true),
            ("ci95_high", "95% interval", 2, false),
        ] {
            if let Some(v) = num(m, &[&[key]]) {
                let mut s = Series::new(label, vec![(span.0, v), (span.1, v)]);
                s.dashed = true;
                s.colour = Some(colour);
                s.in_legend = in_legend;
                chart.series.push(s);
            }
        }
        chart.render(page.out());
    }
    let runs = array(doc, "runs");
    if !runs.is_empty() {
        let mut cdf = LineChart::new(
            "Latency CDF of each repetition",
            Axis::new("latency", Scale::Log10, Unit::Nanos),
            Axis::new("fraction of operations", Scale::Linear, Unit::Fraction).with_range(0.0, 1.0),
        );
        for (i, r) in runs.iter().enumerate().take(MAX_CURVES) {
            cdf.series
                .push(Series::new(format!("repetition {}", i + 1), latency_cdf(&r["aggregate"]["lat_ns"])));
        }
        cdf.render(page.out());
    }
}

fn metric_unit(name: &str) -> Unit {
    if name.starts_with("bw") {
        Unit::BytesPerSec
    } else if name.ends_with("_ns") {
        Unit::Nanos
    } else if name.ends_with("_s") {
        Unit::Seconds
    } else if name.ends_with("fraction") {
        Unit::Fraction
    } else {
        Unit::Count
    }
}

pub(crate) fn quick(page: &mut Page, doc: &Value) {
    page.facts(&[
        ("directory", text(doc, "directory").unwrap_or_default()),
        ("device", text(doc, "device").unwrap_or_else(|| "none".into())),
        ("file system", text(doc, "filesystem").unwrap_or_default()),
        ("O_DIRECT", text(doc, "direct_supported").unwrap_or_default()),
        ("memory", cell(num(doc, &[&["memory"], &["memory_bytes"]]), Unit::Bytes)),
    ]);
    let headlines: Vec<Vec<String>> = array(doc, "headlines")
        .iter()
        .map(|h| {
            ["part", "figure", "value", "measured"].iter().map(|k| text(h, k).unwrap_or_default()).collect()
        })
        .collect();
    page.heading("Headlines");
    page.table(&["part", "figure", "value", "what was measured"], &headlines);
    let parts: Vec<Vec<String>> = array(doc, "parts")
        .iter()
        .map(|p| {
            let status = text(p, "error")
                .map(|e| format!("failed: {e}"))
                .or_else(|| text(p, "skipped").map(|s| format!("skipped: {s}")))
                .unwrap_or_else(|| "ok".into());
            vec![
                text(p, "part").unwrap_or_default(),
                cell(num(p, &[&["seconds"]]), Unit::Seconds),
                text(p, "json").unwrap_or_else(|| "-".into()),
                status,
            ]
        })
        .collect();
    page.heading("Parts");
    let timed: Vec<&Value> =
        array(doc, "parts").iter().filter(|p| num(p, &[&["seconds"]]).is_some()).collect();
    if !timed.is_empty() {
        let mut chart = BarChart::new(
            "Time per part",
            timed.iter().map(|p| text(p, "part").unwrap_or_default()).collect(),
            Axis::new("seconds", Scale::Linear, Unit::Seconds),
        );
        chart.groups.push(BarGroup {
            name: "time".into(),
            values: timed.iter().filter_map(|p| num(p, &[&["seconds"]])).collect(),
        });
        chart.render(page.out());
    }
    page.table(&["part", "time", "result", "status"], &parts);
    page.note("Each part's full result has a section of its own below: its charts are there.");
}

pub(crate) fn compare(page: &mut Page, doc: &Value) {
    for c in array(doc, "comparisons") {
        let before = at(c, &["before", "file"]).and_then(Value::as_str).unwrap_or("?");
        let after = at(c, &["after", "file"]).and_then(Value::as_str).unwrap_or("?");
        page.heading(&format!("{after} against {before}"));
        let figures = array(c, "figures");
        let label = |f: &Value| {
            format!("{} {}", text(f, "figure").unwrap_or_default(), text(f, "metric").unwrap_or_default())
        };
        let mut chart = BarChart::new(
            "Change after / before",
            figures.iter().map(label).collect(),
            Axis::new("change of the mean", Scale::Linear, Unit::Fraction),
        );
        chart.groups.push(BarGroup {
            name: "change".into(),
            values: figures.iter().map(|f| num(f, &[&["ratio"]]).map_or(f64::NAN, |r| r - 1.0)).collect(),
        });
        chart.render(page.out());
        let rows: Vec<Vec<String>> = figures
            .iter()
            .map(|f| {
                vec![
                    label(f),
                    cell(num(f, &[&["before", "mean"]]), Unit::Plain),
                    cell(num(f, &[&["after", "mean"]]), Unit::Plain),
                    cell(num(f, &[&["ratio"]]), Unit::Plain),
                    text(f, "verdict").unwrap_or_default(),
                    text(f, "significant").unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        page.table(&["figure", "before", "after", "ratio", "verdict", "significant"], &rows);
    }
}

pub(crate) fn monitor(page: &mut Page, doc: &Value) {
    let samples = array(doc, "samples");
    let mut devices: Vec<String> = Vec::new();
    for s in samples {
        let d = text(s, "device").unwrap_or_default();
        if !devices.contains(&d) {
            devices.push(d);
        }
    }
    // Samples tell their interval: the time axis is the end of each, counted per device.
    let timed = samples.iter().all(|s| num(s, &[&["interval_s"]]).is_some());
    let time = || {
        if timed {
            Axis::new("seconds since monitoring started", Scale::Linear, Unit::Plain)
        } else {
            Axis::new("sample", Scale::Linear, Unit::Count)
        }
    };
    let mut util =
        LineChart::new("Device utilization", time(), Axis::new("utilization", Scale::Linear, Unit::Fraction));
    let mut bw = LineChart::new(
        "Device throughput (read + write)",
        time(),
        Axis::new("bandwidth", Scale::Linear, Unit::BytesPerSec),
    );
    for d in devices.iter().take(MAX_CURVES) {
        let mine: Vec<&Value> = samples.iter().filter(|s| text(s, "device").as_deref() == Some(d)).collect();
        let at: Vec<f64> = mine
            .iter()
            .enumerate()
            .scan(0.0, |t, (i, s)| {
                *t += num(s, &[&["interval_s"]]).unwrap_or(0.0);
                Some(if timed { *t } else { i as f64 + 1.0 })
            })
            .collect();
        let series = |f: &dyn Fn(&Value) -> Option<f64>| {
            Series::new(d.clone(), mine.iter().zip(&at).filter_map(|(s, t)| Some((*t, f(s)?))).collect())
        };
        util.series
            .push(series(&|s| num(s, &[&["util_pct"]]).map(|p| p / 100.0).or_else(|| num(s, &[&["util"]]))));
        bw.series.push(series(&|s| {
            let mib = num(s, &[&["rmb_s"]]).zip(num(s, &[&["wmb_s"]])).map(|(r, w)| (r + w) * 1048576.0);
            num(s, &[&["read_bw_bytes_s"]]).zip(num(s, &[&["write_bw_bytes_s"]])).map(|(r, w)| r + w).or(mib)
        }));
    }
    util.render(page.out());
    bw.render(page.out());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page_of(doc: &Value) -> String {
        super::super::render(&[super::super::Source { name: "r.json", doc }], "t").unwrap()
    }

    #[test]
    fn quick_draws_the_time_of_each_part() {
        let doc = json!({"headlines": [], "parts": [
            {"part": "sweep", "seconds": 3.5, "json": "sweep.json"},
            {"part": "beff-io", "seconds": 30.0, "json": "beff-io.json"}
        ]});
        let html = page_of(&doc);
        assert!(
            html.contains("Time per part") && html.contains("<title>beff-io time: 30 s</title>"),
            "{html}"
        );
    }

    #[test]
    fn monitor_samples_are_drawn_against_seconds() {
        let sample = |d: &str, util: f64| {
            json!({"device": d, "interval_s": 2.0, "util": util,
            "read_bw_bytes_s": 1.0, "write_bw_bytes_s": 2.0})
        };
        let doc = json!({"samples": [sample("vda", 0.1), sample("vdb", 0.2), sample("vda", 0.3)]});
        let html = page_of(&doc);
        assert!(html.contains("seconds since monitoring started"), "{html}");
        // vda's second sample ends 4 s after the start.
        assert!(html.contains("<title>vda: 4, 30%</title>"), "{html}");
    }

    #[test]
    fn series_are_found_for_the_aggregate_and_each_agent() {
        let interval = |t: f64| json!({"start_s": t - 1.0, "end_s": t, "iops": 10.0, "lat_ns": {"p50": 5}});
        let doc = json!({
            "aggregate": {},
            "series": {
                "interval_s": 1.0,
                "aggregate": [interval(1.0), interval(2.0)],
                "agents": [{"name": "reader", "intervals": [interval(1.0)]}]
            }
        });
        let found: Vec<(String, usize)> =
            collect_series(&doc).into_iter().map(|(n, i)| (n, i.len())).collect();
        assert_eq!(found, [("aggregate".to_string(), 2), ("reader".to_string(), 1)]);
    }
}
