//! The figures of an iolens JSON result, as `iolens compare` pairs them: which result kinds it
//! reads and which keys hold which metric. This is the one place that knows the result files'
//! key names, so a change of the output contract is a change here only.

use serde_json::Value;

use iolens_metrics::catalogue::metric;
/// Which way each metric is better, its unit, and whether it is a rate of work: the one
/// catalogue of [`iolens_metrics::catalogue`].
pub use iolens_metrics::catalogue::{Better, Metric};

/// A run's aggregate figures: the metric, and where a single run's JSON holds it under
/// `aggregate`. `run --repeat` lists the same names in its `summary`.
const RUN_METRICS: &[(Metric, &[&str])] = &[
    (metric("iops"), &["iops"]),
    (metric("bw_bytes_s"), &["bw_bytes_s"]),
    (metric("bps"), &["bps"]),
    (metric("arpt_s"), &["arpt_s"]),
    (metric("lat_p50_ns"), &["lat_ns", "p50"]),
    (metric("lat_p99_ns"), &["lat_ns", "p99"]),
    (metric("cpu_per_op_ns"), &["cpu", "per_op_ns"]),
    (metric("busy_s"), &["busy_s"]),
    (metric("wall_s"), &["wall_s"]),
    (metric("io_wait_fraction"), &["io_wait_fraction"]),
];

/// A sweep point's figures (and where `curves[].points[]` hold them).
const SWEEP_METRICS: &[(Metric, &[&str])] = &[
    (metric("iops"), &["iops"]),
    (metric("bw_bytes_s"), &["bw_bytes_s"]),
    (metric("bps"), &["bps"]),
    (metric("lat_p50_ns"), &["lat_ns", "p50"]),
    (metric("lat_p99_ns"), &["lat_ns", "p99"]),
];

/// A saturation point's figures.
const SATURATE_METRICS: &[(Metric, &[&str])] =
    &[(metric("iops"), &["iops"]), (metric("bw_bytes_s"), &["bw_bytes_s"])];

/// One measured quantity of a result: which part of it (`aggregate`, a sweep point), which
/// metric, and its values — one per repetition.
#[derive(Debug, Clone)]
pub struct Figure {
    pub figure: String,
    pub metric: Metric,
    pub values: Vec<f64>,
}

/// What a result file holds.
#[derive(Debug)]
pub struct ResultFigures {
    /// `run`, `mpi run`, `sweep`, `saturate`; results of one family compare with each other.
    pub kind: &'static str,
    /// Repetitions behind each figure (1 for a single run).
    pub repetitions: usize,
    pub interrupted: bool,
    pub figures: Vec<Figure>,
}

impl ResultFigures {
    /// Runs compare with repeated runs and MPI runs: all report one aggregate.
    pub fn family(&self) -> &'static str {
        match self.kind {
            "run" | "mpi run" => "run",
            other => other,
        }
    }
}

/// Reads the figures of a parsed result; errors say which key is wrong, and how.
pub fn read(doc: &Value) -> Result<ResultFigures, String> {
    let Some(object) = doc.as_object() else {
        return Err("not a JSON object".into());
    };
    // The envelope's error is {code, message}; results of schema 1 held the message alone.
    let error = object.get("error").and_then(|e| e.as_str().or_else(|| e.get("message")?.as_str()));
    if let Some(error) = error {
        return Err(format!("records a failed command, not results: {error}"));
    }
    let interrupted = object.get("interrupted").and_then(Value::as_bool).unwrap_or(false);
    let (kind, repetitions, figures) = if let Some(suite) = object.get("suite") {
        match suite.as_str() {
            Some("sweep") => ("sweep", 1, points(doc, "threads", "bs_bytes", SWEEP_METRICS)?),
            Some("saturate") => ("saturate", 1, points(doc, "rw", "concurrency", SATURATE_METRICS)?),
            _ => return Err(format!("suite {suite} is not one `iolens compare` reads (sweep, saturate)")),
        }
    } else if let Some(summary) = object.get("summary") {
        let (repetitions, figures) = repeated(summary)?;
        ("run", repetitions, figures)
    } else if let Some(aggregate) = object.get("aggregate") {
        let kind = if object.contains_key("per_rank") { "mpi run" } else { "run" };
        (kind, 1, aggregate_figures(aggregate)?)
    } else {
        return Err(
            "not a result `iolens compare` reads (expected `aggregate`, `summary` or `suite`)\n  hint: compare the \
             --json of `iolens run` (also with --repeat or under MPI), `iolens sweep` or `iolens saturate`"
                .into(),
        );
    };
    Ok(ResultFigures { kind, repetitions, interrupted, figures })
}

fn aggregate_figures(aggregate: &Value) -> Result<Vec<Figure>, String> {
    let mut figures = Vec::new();
    for (metric, path) in RUN_METRICS {
        let mut value = aggregate;
        for key in *path {
            value = &value[key];
        }
        if let Some(value) = number(value, &format!("aggregate.{}", path.join(".")))? {
            figures.push(Figure { figure: "aggregate".into(), metric: *metric, values: vec![value] });
        }
    }
    Ok(figures)
}

/// `run --repeat`: `summary` lists every metric with its values, one per repetition.
fn repeated(summary: &Value) -> Result<(usize, Vec<Figure>), String> {
    let entries = summary.as_array().ok_or("summary: expected a list of metrics")?;
    let mut figures = Vec::new();
    let mut repetitions = 0;
    for (index, entry) in entries.iter().enumerate() {
        let name =
            entry["name"].as_str().ok_or_else(|| format!("summary[{index}].name: expected a string"))?;
        let Some((metric, _)) = RUN_METRICS.iter().find(|(m, _)| m.name == name) else {
            continue;
        };
        let raw =
            entry["values"].as_array().ok_or_else(|| format!("summary[{index}].values: expected a list"))?;
        let mut values = Vec::with_capacity(raw.len());
        for (i, v) in raw.iter().enumerate() {
            let value = number(v, &format!("summary[{index}].values[{i}]"))?
                .ok_or_else(|| format!("summary[{index}].values[{i}]: expected a number"))?;
            values.push(value);
        }
        if values.is_empty() {
            return Err(format!("summary[{index}].values: no repetitions"));
        }
        repetitions = repetitions.max(values.len());
        figures.push(Figure { figure: "aggregate".into(), metric: *metric, values });
    }
    Ok((repetitions, figures))
}

/// A suite's `curves[].points[]`, each named by its curve key and its point key.
fn points(
    doc: &Value,
    curve_key: &str,
    point_key: &str,
    metrics: &[(Metric, &[&str])],
) -> Result<Vec<Figure>, String> {
    let curves = doc["curves"].as_array().ok_or("curves: expected a list")?;
    let mut figures = Vec::new();
    for (c, curve) in curves.iter().enumerate() {
        let points =
            curve["points"].as_array().ok_or_else(|| format!("curves[{c}].points: expected a list"))?;
        for (p, point) in points.iter().enumerate() {
            let at = format!("curves[{c}].points[{p}]");
            let figure = format!("{}={} {}", curve_key, label(point, curve, curve_key, &at)?, {
                let value = label(point, curve, point_key, &at)?;
                if point_key == "bs_bytes" {
                    format!("bs={}", binary_size(&value))
                } else {
                    format!("{point_key}={value}")
                }
            });
            for (metric, path) in metrics {
                let value = path.iter().fold(point, |v, key| &v[*key]);
                if let Some(value) = number(value, &format!("{at}.{}", path.join(".")))? {
                    figures.push(Figure { figure: figure.clone(), metric: *metric, values: vec![value] });
                }
            }
        }
    }
    Ok(figures)
}

/// A point's label value: on the point itself, else on its curve.
fn label(point: &Value, curve: &Value, key: &str, at: &str) -> Result<String, String> {
    match point.get(key).or_else(|| curve.get(key)) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(format!("{at}.{key}: expected a number or a string")),
    }
}

/// `4096` → `4KiB`, as the sweep prints block sizes; anything else stays as it is.
fn binary_size(text: &str) -> String {
    let Ok(bytes) = text.parse::<u64>() else {
        return text.to_string();
    };
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// A finite number, an absent figure (`None`), or an error naming the key.
fn number(value: &Value, key: &str) -> Result<Option<f64>, String> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(format!("{key}: {n} is not a finite number")),
        },
        other => Err(format!("{key}: expected a number, found {other}")),
    }
}
