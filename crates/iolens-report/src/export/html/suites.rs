//! Sections for the suites: sweep, saturate, write-modes and b_eff_io.

use serde_json::Value;

use super::svg::{Axis, BarChart, BarGroup, LineChart, Mark, Scale, Series, Unit};
use super::{array, bandwidth, cell, latency, num, text, Page};

fn block_size(point: &Value) -> Option<f64> {
    num(point, &[&["bs_bytes"], &["bs"]])
}

pub(crate) fn sweep(page: &mut Page, doc: &Value) {
    let curves = array(doc, "curves");
    page.facts(&[
        ("target", text(doc, "target").unwrap_or_default()),
        ("rw", text(doc, "rw").unwrap_or_default()),
        ("O_DIRECT", text(doc, "direct").unwrap_or_default()),
        ("time per point", cell(num(doc, &[&["time_per_point_s"]]), Unit::Seconds)),
    ]);
    let bs_axis = || Axis::new("block size", Scale::Log2, Unit::Bytes);
    let mut iops =
        LineChart::new("IOPS vs block size", bs_axis(), Axis::new("IOPS", Scale::Linear, Unit::Count));
    let mut bw = LineChart::new(
        "Bandwidth vs block size",
        bs_axis(),
        Axis::new("bandwidth", Scale::Linear, Unit::BytesPerSec),
    );
    let mut lat =
        LineChart::new("Latency vs block size", bs_axis(), Axis::new("latency", Scale::Log10, Unit::Nanos));
    let mut rows = Vec::new();
    for c in curves {
        let name = match num(c, &[&["threads"]]) {
            Some(1.0) => "1 thread".to_string(),
            Some(t) => format!("{t} threads"),
            None => "curve".into(),
        };
        let points = array(c, "points");
        let curve = |f: &dyn Fn(&Value) -> Option<f64>| {
            points.iter().filter_map(|p| Some((block_size(p)?, f(p)?))).collect::<Vec<_>>()
        };
        iops.series.push(Series::new(name.clone(), curve(&|p| num(p, &[&["iops"]]))));
        bw.series.push(Series::new(name.clone(), curve(&bandwidth)));
        lat.series.push(Series::new(format!("{name} p50"), curve(&|p| latency(p, "p50"))));
        let mut p99 = Series::new(format!("{name} p99"), curve(&|p| latency(p, "p99")));
        p99.dashed = true;
        lat.series.push(p99);
        let at_size = |bs: f64, f: &dyn Fn(&Value) -> Option<f64>| {
            points.iter().find(|p| block_size(p) == Some(bs)).and_then(f)
        };
        if let Some(knee) = num(c, &[&["knee_bs_bytes"], &["knee_bs"]]) {
            iops.marks.push(Mark {
                x: knee,
                y: at_size(knee, &|p| num(p, &[&["iops"]])),
                label: format!("knee {name}"),
            });
        }
        if let Some(bw90) = num(c, &[&["bw90_bs_bytes"], &["bw90_bs"]]) {
            bw.marks.push(Mark {
                x: bw90,
                y: at_size(bw90, &bandwidth),
                label: format!("90% of peak {name}"),
            });
        }
        for p in points {
            rows.push(vec![
                name.clone(),
                cell(block_size(p), Unit::Bytes),
                cell(num(p, &[&["iops"]]), Unit::Count),
                cell(bandwidth(p), Unit::BytesPerSec),
                cell(latency(p, "p50"), Unit::Nanos),
                cell(latency(p, "p99"), Unit::Nanos),
                cell(num(p, &[&["device_util"]]), Unit::Fraction),
            ]);
        }
        if let Some(why) = text(c, "stopped_early") {
            page.note(&format!("{name}: stopped early: {why}"));
        }
        if let Some(note) = text(c, "knee_note") {
            page.note(&format!("{name}: {note}"));
        }
    }
    page.note("The knee: the largest size at or after the IOPS peak still within 90% of it.");
    iops.render(page.out());
    bw.render(page.out());
    lat.render(page.out());
    page.table(&["curve", "block size", "IOPS", "bandwidth", "p50", "p99", "device busy"], &rows);
}

pub(crate) fn saturate(page: &mut Page, doc: &Value) {
    page.facts(&[
        ("target", text(doc, "target").unwrap_or_default()),
        ("block size", cell(num(doc, &[&["bs_bytes"], &["bs"]]), Unit::Bytes)),
        ("O_DIRECT", text(doc, "direct").unwrap_or_default()),
        ("concurrency by", text(doc, "concurrency_by").unwrap_or_default()),
    ]);
    let axis = || Axis::new("concurrency", Scale::Log2, Unit::Count);
    let mut iops =
        LineChart::new("IOPS vs concurrency", axis(), Axis::new("IOPS", Scale::Linear, Unit::Count));
    let mut bw = LineChart::new(
        "Bandwidth vs concurrency",
        axis(),
        Axis::new("bandwidth", Scale::Linear, Unit::BytesPerSec),
    );
    let mut rows = Vec::new();
    for c in array(doc, "curves") {
        let name = text(c, "rw").unwrap_or_else(|| "curve".into());
        let points = array(c, "points");
        let curve = |f: &dyn Fn(&Value) -> Option<f64>| {
            points.iter().filter_map(|p| Some((num(p, &[&["concurrency"]])?, f(p)?))).collect::<Vec<_>>()
        };
        iops.series.push(Series::new(name.clone(), curve(&|p| num(p, &[&["iops"]]))));
        bw.series.push(Series::new(name.clone(), curve(&bandwidth)));
        if let Some(sat) = num(c, &[&["saturation_concurrency"]]) {
            let at = points.iter().find(|p| num(p, &[&["concurrency"]]) == Some(sat));
            iops.marks.push(Mark {
                x: sat,
                y: at.and_then(|p| num(p, &[&["iops"]])),
                label: format!("saturation {name}: {sat}"),
            });
            bw.marks.push(Mark { x: sat, y: at.and_then(bandwidth), label: format!("saturation {name}") });
        }
        if let Some(ended) = text(c, "ended") {
            page.note(&format!("{name}: ended: {ended}"));
        }
        for p in points {
            rows.push(vec![
                name.clone(),
                cell(num(p, &[&["concurrency"]]), Unit::Count),
                cell(num(p, &[&["iops"]]), Unit::Count),
                cell(bandwidth(p), Unit::BytesPerSec),
                cell(latency(p, "p50"), Unit::Nanos),
                cell(latency(p, "p99"), Unit::Nanos),
                cell(num(p, &[&["gain"]]), Unit::Fraction),
            ]);
        }
    }
    page.note("The saturation point: the smallest concurrency reaching 90% of the curve's peak IOPS.");
    iops.render(page.out());
    bw.render(page.out());
    page.table(&["curve", "concurrency", "IOPS", "bandwidth", "p50", "p99", "gain"], &rows);
}

pub(crate) fn write_modes(page: &mut Page, doc: &Value) {
    let modes = array(doc, "modes");
    page.facts(&[
        ("target", text(doc, "target").unwrap_or_default()),
        ("block size", cell(num(doc, &[&["bs_bytes"], &["bs"]]), Unit::Bytes)),
        ("bytes per mode", cell(num(doc, &[&["bytes_per_mode"], &["bytes_per_mode_bytes"]]), Unit::Bytes)),
        ("threads", cell(num(doc, &[&["threads"]]), Unit::Count)),
    ]);
    let names: Vec<String> = modes.iter().map(|m| text(m, "mode").unwrap_or_default()).collect();
    let mut time = BarChart::new(
        "Where the time went, per mode",
        names.clone(),
        Axis::new("seconds", Scale::Linear, Unit::Seconds),
    );
    time.stacked = true;
    let part = |key: &str| modes.iter().map(|m| num(m, &[&[key]]).unwrap_or(0.0)).collect::<Vec<f64>>();
    let (write, fsync, close) = (part("write_s"), part("fsync_s"), part("close_s"));
    let other: Vec<f64> = modes
        .iter()
        .enumerate()
        .map(|(i, m)| (num(m, &[&["phase_s"]]).unwrap_or(0.0) - write[i] - fsync[i] - close[i]).max(0.0))
        .collect();
    for (name, values) in [("write calls", write), ("fsync", fsync), ("close", close), ("other", other)] {
        time.groups.push(BarGroup { name: name.into(), values });
    }
    time.render(page.out());
    let mut iops =
        BarChart::new("Apparent and effective IOPS", names, Axis::new("IOPS", Scale::Linear, Unit::Count));
    iops.groups.push(BarGroup { name: "apparent (write calls)".into(), values: part("apparent_iops") });
    iops.groups.push(BarGroup { name: "effective (whole phase)".into(), values: part("effective_iops") });
    iops.render(page.out());
    let rows: Vec<Vec<String>> = modes
        .iter()
        .map(|m| {
            vec![
                text(m, "mode").unwrap_or_default(),
                cell(num(m, &[&["write_s"]]), Unit::Seconds),
                cell(num(m, &[&["fsync_s"]]), Unit::Seconds),
                cell(num(m, &[&["close_s"]]), Unit::Seconds),
                cell(num(m, &[&["phase_s"]]), Unit::Seconds),
                cell(num(m, &[&["apparent_iops"]]), Unit::Count),
                cell(num(m, &[&["effective_iops"]]), Unit::Count),
                cell(num(m, &[&["device_write_bytes"]]), Unit::Bytes),
            ]
        })
        .collect();
    page.table(
        &[
            "mode",
            "write calls",
            "fsync",
            "close",
            "phase",
            "apparent IOPS",
            "effective IOPS",
            "device wrote",
        ],
        &rows,
    );
}

/// `(chunk size, MB/s)` of `patterns` whose chunk sizes are (or are not) powers of two: the bytes
/// of every pattern with that chunk size over their summed time, as b_eff_io weighs patterns.
fn per_chunk(patterns: &[&Value], well_formed: bool) -> Vec<(f64, f64)> {
    let mut sums: Vec<(u64, f64, f64)> = Vec::new();
    for p in patterns {
        let (Some(chunk), Some(bytes), Some(time)) =
            (num(p, &[&["chunk_bytes"], &["chunk"]]), num(p, &[&["bytes"]]), num(p, &[&["time_s"]]))
        else {
            continue;
        };
        let chunk = chunk as u64;
        if chunk == 0 || chunk.is_power_of_two() != well_formed {
            continue;
        }
        match sums.iter_mut().find(|s| s.0 == chunk) {
            Some(s) => {
                s.1 += bytes;
                s.2 += time;
            }
            None => sums.push((chunk, bytes, time)),
        }
    }
    sums.sort_by_key(|s| s.0);
    sums.into_iter()
        .filter(|s| s.2 > 0.0)
        .map(|(chunk, bytes, time)| (chunk as f64, bytes / time / 1e6))
        .collect()
}

/// b_eff_io's bandwidths are MB/s (10^6 bytes), as in the paper.
fn megabytes(v: &Value) -> Option<f64> {
    num(v, &[&["bw_mb_s"], &["mb_s"]])
}

pub(crate) fn beff_io(page: &mut Page, doc: &Value) {
    page.facts(&[
        ("b_eff_io", cell(num(doc, &[&["b_eff_io_mb_s"], &["b_eff_io"]]), Unit::MegabytesPerSec)),
        ("best partition", cell(num(doc, &[&["best_ranks"]]), Unit::Count)),
        ("T", cell(num(doc, &[&["time_s"]]), Unit::Seconds)),
        ("MPART", cell(num(doc, &[&["mpart_bytes"], &["mpart"]]), Unit::Bytes)),
        ("coffee cup", cell(num(doc, &[&["coffee_cup_s"]]), Unit::Seconds)),
    ]);
    page.note("MB = 10^6 bytes, as in the b_eff_io paper.");
    let partitions = array(doc, "partitions");
    let best = num(doc, &[&["best_ranks"]]);
    let rows: Vec<Vec<String>> = partitions
        .iter()
        .map(|p| {
            vec![
                cell(num(p, &[&["ranks"]]), Unit::Count),
                cell(num(p, &[&["b_eff_io_mb_s"], &["b_eff_io"]]), Unit::MegabytesPerSec),
                cell(num(p, &[&["elapsed_s"]]), Unit::Seconds),
                text(p, "schedule_held").unwrap_or_default(),
            ]
        })
        .collect();
    page.table(&["ranks", "b_eff_io", "elapsed", "T held"], &rows);
    let Some(partition) = partitions.iter().find(|p| num(p, &[&["ranks"]]) == best).or(partitions.first())
    else {
        return;
    };
    let ranks = num(partition, &[&["ranks"]]).unwrap_or(0.0);
    let patterns = array(partition, "patterns");
    let mut methods: Vec<String> = Vec::new();
    let mut types: Vec<i64> = Vec::new();
    for p in patterns {
        let m = text(p, "method").unwrap_or_default();
        if !methods.contains(&m) {
            methods.push(m);
        }
        let t = num(p, &[&["pattern_type"]]).map_or(-1, |t| t as i64);
        if !types.contains(&t) {
            types.push(t);
        }
    }
    types.sort_unstable();
    let type_name = |t: i64| {
        let call = array(partition, "types")
            .iter()
            .find(|x| num(x, &[&["pattern_type"]]) == Some(t as f64))
            .and_then(|x| text(x, "call"));
        match call {
            Some(c) => format!("type {t}: {c}"),
            None => format!("type {t}"),
        }
    };
    for method in &methods {
        let mut chart = LineChart::new(
            &format!("{method}: bandwidth vs chunk size, {ranks} ranks"),
            Axis::new("chunk size", Scale::Log2, Unit::Bytes),
            Axis::new("bandwidth (MB/s)", Scale::Log10, Unit::MegabytesPerSec),
        );
        for (i, &t) in types.iter().enumerate() {
            let mine: Vec<&Value> = patterns
                .iter()
                .filter(|p| text(p, "method").as_ref() == Some(method))
                .filter(|p| num(p, &[&["pattern_type"]]).map_or(-1, |x| x as i64) == t)
                .collect();
            for well_formed in [true, false] {
                let mut series = Series::new(format!("type {t}"), per_chunk(&mine, well_formed));
                series.colour = Some(i);
                series.dashed = !well_formed;
                series.in_legend = well_formed;
                chart.series.push(series);
            }
        }
        chart.render(page.out());
    }
    page.note(
        "Each point: the bytes of every pattern with that chunk size over their time. Dashed: chunk \
         sizes that are not a power of two (the paper's non-wellformed sizes, l + 8 bytes).",
    );
    page.note(&types.iter().map(|t| type_name(*t)).collect::<Vec<_>>().join("; "));
    let type_rows: Vec<Vec<String>> = array(partition, "types")
        .iter()
        .map(|t| {
            vec![
                text(t, "method").unwrap_or_default(),
                cell(num(t, &[&["pattern_type"]]), Unit::Plain),
                cell(megabytes(t), Unit::MegabytesPerSec),
                cell(num(t, &[&["bytes"]]), Unit::Bytes),
                cell(num(t, &[&["time_s"]]), Unit::Seconds),
            ]
        })
        .collect();
    page.table(&["method", "pattern type", "bandwidth", "bytes", "time"], &type_rows);
}
