//! The section for `beff` (b_eff, the network's effective bandwidth): Table 1's figures, the
//! bandwidth of each ring and random pattern over the 21 message sizes (the maximum over
//! methods and repetitions, which b_eff averages), the best of each method per size from the
//! protocol, and the per-pattern averages. Bandwidths are in MB/s (10^6 bytes/s), as the paper
//! and the terminal table print them; the JSON holds bytes/s.

use serde_json::Value;

use super::svg::{Axis, BarChart, BarGroup, LineChart, Scale, Series, Unit};
use super::{array, at, cell, num, text, Page};

/// bytes/s to the MB/s the charts and tables print.
fn mb_s(bytes_s: f64) -> f64 {
    bytes_s / 1e6
}

fn summary_mb_s(doc: &Value, key: &str) -> String {
    cell(at(doc, &["summary", key]).and_then(Value::as_f64).map(mb_s), Unit::MegabytesPerSec)
}

fn sizes(doc: &Value) -> Vec<f64> {
    array(doc, "sizes_bytes").iter().filter_map(Value::as_f64).collect()
}

pub(crate) fn beff(page: &mut Page, doc: &Value) {
    page.facts(&[
        ("b_eff", summary_mb_s(doc, "b_eff_bytes_s")),
        ("per process", summary_mb_s(doc, "b_eff_per_process_bytes_s")),
        ("processes", cell(num(doc, &[&["summary", "processes"]]), Unit::Count)),
        ("Lmax", cell(num(doc, &[&["summary", "lmax_bytes"]]), Unit::Bytes)),
        ("ping-pong", summary_mb_s(doc, "ping_pong_bytes_s")),
        ("b_eff at Lmax", summary_mb_s(doc, "b_eff_at_lmax_bytes_s")),
        ("ring patterns", summary_mb_s(doc, "logavg_ring_bytes_s")),
        ("random patterns", summary_mb_s(doc, "logavg_random_bytes_s")),
        ("MPI", text(doc, "mpi_library").unwrap_or_default()),
    ]);
    page.note(
        "MB = 10^6 bytes, as in the b_eff paper. b_eff is the logarithmic average of the ring and \
         random patterns' averages over the message sizes; each pattern's value at a size is the best \
         of its methods and repetitions.",
    );
    let sizes = sizes(doc);
    let results = array(doc, "results");
    per_pattern_chart(page, &sizes, results);
    per_method_chart(page, &sizes, array(doc, "protocol"));
    averages(page, results);
    size_table(page, &sizes, results);
}

/// Bandwidth over message size, one curve per pattern: ring patterns solid, random dashed, the
/// same colour for the same ring pattern number.
fn per_pattern_chart(page: &mut Page, sizes: &[f64], results: &[Value]) {
    if results.is_empty() {
        return;
    }
    let mut chart = LineChart::new(
        "Bandwidth vs message size per pattern",
        Axis::new("message size", Scale::Log2, Unit::Bytes),
        Axis::new("bandwidth (MB/s)", Scale::Log10, Unit::MegabytesPerSec),
    );
    let mut ring_numbers: Vec<String> = Vec::new();
    for r in results {
        let name = text(r, "pattern").unwrap_or_default();
        let random = text(r, "kind").as_deref() == Some("random");
        let number = name.trim_start_matches(|c: char| c.is_ascii_alphabetic()).to_string();
        let colour = match ring_numbers.iter().position(|n| *n == number) {
            Some(i) => i,
            None => {
                ring_numbers.push(number);
                ring_numbers.len() - 1
            }
        };
        let points = sizes
            .iter()
            .zip(array(r, "by_size_bytes_s"))
            .filter_map(|(size, bw)| Some((*size, mb_s(bw.as_f64()?))))
            .collect();
        let mut series = Series::new(name, points);
        series.colour = Some(colour);
        series.dashed = random;
        chart.series.push(series);
    }
    chart.dots = false;
    chart.render(page.out());
    page.note("Solid: ring patterns (neighbours by rank); dashed: random patterns (the same ring sizes on shuffled ranks).");
}

/// The best bandwidth of each method at each size over every pattern and repetition of the
/// protocol: which way of sending wins where.
fn per_method_chart(page: &mut Page, sizes: &[f64], protocol: &[Value]) {
    let mut methods: Vec<String> = Vec::new();
    for m in protocol {
        let name = text(m, "method").unwrap_or_default();
        if !methods.contains(&name) {
            methods.push(name);
        }
    }
    if methods.is_empty() {
        return;
    }
    let mut chart = LineChart::new(
        "Best bandwidth per method vs message size",
        Axis::new("message size", Scale::Log2, Unit::Bytes),
        Axis::new("bandwidth (MB/s)", Scale::Log10, Unit::MegabytesPerSec),
    );
    for method in &methods {
        let points = sizes
            .iter()
            .filter_map(|&size| {
                let best = protocol
                    .iter()
                    .filter(|m| text(m, "method").as_ref() == Some(method))
                    .filter(|m| num(m, &[&["size_bytes"]]) == Some(size))
                    .filter_map(|m| num(m, &[&["bw_bytes_s"]]))
                    .fold(f64::NAN, f64::max);
                best.is_finite().then(|| (size, mb_s(best)))
            })
            .collect();
        chart.series.push(Series::new(method.clone(), points));
    }
    chart.dots = false;
    chart.render(page.out());
}

/// Each pattern's average over the sizes (what b_eff averages) and its value at Lmax.
fn averages(page: &mut Page, results: &[Value]) {
    if results.is_empty() {
        return;
    }
    let value = |r: &Value, key: &str| num(r, &[&[key]]).map_or(f64::NAN, mb_s);
    let mut chart = BarChart::new(
        "Per pattern: average over the message sizes and value at Lmax",
        results.iter().map(|r| text(r, "pattern").unwrap_or_default()).collect(),
        Axis::new("bandwidth (MB/s)", Scale::Linear, Unit::MegabytesPerSec),
    );
    for (name, key) in [("average over sizes", "average_bytes_s"), ("at Lmax", "at_lmax_bytes_s")] {
        chart
            .groups
            .push(BarGroup { name: name.into(), values: results.iter().map(|r| value(r, key)).collect() });
    }
    chart.render(page.out());
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let rings: Vec<String> = array(r, "ring_sizes")
                .iter()
                .map(|s| s.as_u64().map_or("?".into(), |s| s.to_string()))
                .collect();
            vec![
                text(r, "pattern").unwrap_or_default(),
                text(r, "kind").unwrap_or_default(),
                rings.join(","),
                cell(Some(value(r, "average_bytes_s")), Unit::MegabytesPerSec),
                cell(Some(value(r, "at_lmax_bytes_s")), Unit::MegabytesPerSec),
            ]
        })
        .collect();
    page.heading("Patterns");
    page.table(&["pattern", "kind", "ring sizes", "average over sizes", "at Lmax"], &rows);
}

/// One row per message size: the best ring and random pattern there.
fn size_table(page: &mut Page, sizes: &[f64], results: &[Value]) {
    let best = |i: usize, kind: &str| {
        results
            .iter()
            .filter(|r| text(r, "kind").as_deref() == Some(kind))
            .filter_map(|r| array(r, "by_size_bytes_s").get(i).and_then(Value::as_f64))
            .fold(f64::NAN, f64::max)
    };
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            vec![
                cell(Some(size), Unit::Bytes),
                cell(Some(mb_s(best(i, "ring"))), Unit::MegabytesPerSec),
                cell(Some(mb_s(best(i, "random"))), Unit::MegabytesPerSec),
            ]
        })
        .collect();
    page.heading("Message sizes");
    page.table(&["message size", "best ring pattern", "best random pattern"], &rows);
}

#[cfg(test)]
mod tests {
    use super::super::{render, Source};
    use serde_json::json;

    /// A b_eff document of two patterns, two sizes and two methods (the shape `iolens beff`
    /// writes, with the protocol cut short).
    fn doc() -> serde_json::Value {
        json!({
            "benchmark": "b_eff",
            "mpi_library": "Open MPI",
            "units": "bytes/s",
            "summary": {"processes": 2, "b_eff_bytes_s": 3.0e8, "b_eff_per_process_bytes_s": 1.5e8,
                        "lmax_bytes": 8192, "ping_pong_bytes_s": 9.0e8, "b_eff_at_lmax_bytes_s": 6.0e8,
                        "b_eff_at_lmax_per_process_bytes_s": 3.0e8, "ring_at_lmax_per_process_bytes_s": 3.5e8,
                        "logavg_ring_bytes_s": 3.2e8, "logavg_random_bytes_s": 2.8e8},
            "sizes_bytes": [1, 8192],
            "patterns": [],
            "results": [
                {"pattern": "ring1", "kind": "ring", "ring_sizes": [2], "by_size_bytes_s": [2.0e6, 7.0e8],
                 "average_bytes_s": 3.51e8, "at_lmax_bytes_s": 7.0e8},
                {"pattern": "random1", "kind": "random", "ring_sizes": [2], "by_size_bytes_s": [1.0e6, 5.0e8],
                 "average_bytes_s": 2.505e8, "at_lmax_bytes_s": 5.0e8}
            ],
            "ping_pong": [],
            "protocol": [
                {"pattern": "ring1", "kind": "ring", "size_bytes": 1, "method": "sendrecv", "bw_bytes_s": 2.0e6},
                {"pattern": "ring1", "kind": "ring", "size_bytes": 8192, "method": "sendrecv", "bw_bytes_s": 7.0e8},
                {"pattern": "ring1", "kind": "ring", "size_bytes": 8192, "method": "alltoallv", "bw_bytes_s": 4.0e8}
            ]
        })
    }

    #[test]
    fn b_eff_is_drawn_per_pattern_and_per_method_in_mb_s() {
        let doc = doc();
        let html = render(&[Source { name: "beff.json", doc: &doc }], "t").unwrap();
        assert!(html.contains("<small>beff</small>"), "the kind is named");
        assert!(html.contains("Bandwidth vs message size per pattern"));
        assert!(html.contains("Best bandwidth per method vs message size"));
        assert!(html.contains("Per pattern: average over the message sizes"));
        assert!(!html.contains("no data to plot"), "every chart finds its data");
        assert!(html.contains("<dd>300 MB/s</dd>"), "b_eff in MB/s (10^6): {html}");
        // ring1 at 8 KiB: 700 MB/s in the per-pattern chart's tooltip is not drawn (no dots),
        // but the size table has the best ring and random pattern at each size.
        assert!(html.contains("<td>8 KiB</td><td>700 MB/s</td><td>500 MB/s</td>"), "{html}");
        for name in ["ring1", "random1", "sendrecv", "alltoallv"] {
            assert!(html.contains(&format!(">{name}</text>")), "{name} in a legend");
        }
    }
}
