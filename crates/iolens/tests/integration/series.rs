//! End-to-end tests of the run outputs for plotting and data frames: latency bins
//! (`lat_ns.bins`), per-interval series (`--log-interval`) and Parquet files (`--parquet`).

use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;

use crate::util::schema_check;
use crate::util::{iolens, read_json, run_ok, u};

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Column names, rows and the envelope of a Parquet file, through the Rust reader.
fn parquet(path: &Path) -> (Vec<String>, Vec<Vec<Field>>, Value) {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let meta = reader.metadata();
    for g in meta.row_groups() {
        for c in g.columns() {
            assert!(matches!(c.compression(), parquet::basic::Compression::ZSTD(_)), "{}", c.column_path());
        }
    }
    let file = meta.file_metadata();
    let columns = file.schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
    let envelope = file
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == "iolens.envelope"))
        .and_then(|k| k.value.clone())
        .expect("the envelope in the key-value metadata");
    let rows = reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| r.unwrap().get_column_iter().map(|(_, f)| f.clone()).collect())
        .collect();
    (columns, rows, serde_json::from_str(&envelope).unwrap())
}

fn column<'a>(columns: &[String], rows: &'a [Vec<Field>], name: &str) -> Vec<&'a Field> {
    let k =
        columns.iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name} in {columns:?}"));
    rows.iter().map(|r| &r[k]).collect()
}

fn long(f: &Field) -> i64 {
    match f {
        Field::Long(v) => *v,
        other => panic!("not an integer: {other:?}"),
    }
}

/// A small time-driven null-engine run of two agents with a series every 100 ms, written as
/// JSON, CSV and Parquet (with its trace, for the per-op table).
struct Outputs {
    _dir: tempfile::TempDir,
    json: Value,
    csv: std::path::PathBuf,
    parquet: std::path::PathBuf,
}

fn null_run_with_every_output() -> Outputs {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    run_ok(&[
        "run",
        "--quiet",
        "--target",
        dir.path().to_str().unwrap(),
        "--engine",
        "null",
        "--threads",
        "2",
        "--rate",
        "2000",
        "--time",
        "450ms",
        "--log-interval",
        "100ms",
        "--trace",
        p("run.trace").to_str().unwrap(),
        "--json",
        p("run.json").to_str().unwrap(),
        "--csv",
        p("run.csv").to_str().unwrap(),
        "--parquet",
        p("run.parquet").to_str().unwrap(),
    ]);
    Outputs { json: read_json(&p("run.json")), csv: p("run.csv"), parquet: p("run.parquet"), _dir: dir }
}

#[test]
fn a_run_with_bins_and_series_fits_the_run_schema() {
    let o = null_run_with_every_output();
    let schemas = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas");
    let errors = schema_check::Schemas::new(&schemas).validate("run.schema.json", &o.json);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert!(o.json["series"].is_object() && o.json["aggregate"]["lat_ns"]["bins"].is_array());
    let mut broken = o.json.clone();
    broken["series"]["aggregate"][0]["lat_ns"]["p99.9"] = 1.into();
    let errors = schema_check::Schemas::new(&schemas).validate("run.schema.json", &broken);
    assert!(!errors.is_empty(), "the schema describes the series exactly");
}

#[test]
fn latency_bins_count_every_operation_per_agent_and_aggregate() {
    let o = null_run_with_every_output();
    let scopes = o.json["agents"].as_array().unwrap().iter().chain([&o.json["aggregate"]]);
    for scope in scopes {
        let bins = scope["lat_ns"]["bins"].as_array().unwrap();
        assert_eq!(bins.len(), 26, "1-2-5 per decade from 1 µs to 100 s, and the overflow bin");
        assert_eq!(u(&bins[0]["le_ns"]), 1_000);
        assert_eq!(u(&bins[24]["le_ns"]), 100_000_000_000);
        assert!(bins[25]["le_ns"].is_null());
        let total: u64 = bins.iter().map(|b| u(&b["count"])).sum();
        assert_eq!(total, u(&scope["ops"]), "bins sum to the op count");
        assert!(total > 0);
    }
}

#[test]
fn series_cover_the_run_per_agent_and_aggregate() {
    let o = null_run_with_every_output();
    let series = &o.json["series"];
    assert_eq!(f(&series["interval_s"]), 0.1);
    let agents = series["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    let aggregate = series["aggregate"].as_array().unwrap();
    assert!(aggregate.len() >= 4, "450 ms in 100 ms intervals: {}", aggregate.len());
    for (k, iv) in aggregate.iter().enumerate() {
        assert!((f(&iv["start_s"]) - k as f64 * 0.1).abs() < 1e-9);
        assert!(f(&iv["end_s"]) > f(&iv["start_s"]));
        for key in ["ops", "bytes", "iops", "bw_bytes_s"] {
            assert!(iv[key].is_number(), "{key}: {iv}");
        }
        let lat = &iv["lat_ns"];
        if u(&iv["ops"]) > 0 {
            assert!(u(&lat["p50"]) <= u(&lat["p99"]) && u(&lat["p99"]) <= u(&lat["max"]), "{iv}");
        }
        let agents_ops: u64 = agents.iter().map(|a| a["intervals"].get(k).map_or(0, |i| u(&i["ops"]))).sum();
        assert_eq!(u(&iv["ops"]), agents_ops, "interval {k}: the aggregate is the agents' sum");
    }
    let total: u64 = aggregate.iter().map(|i| u(&i["ops"])).sum();
    assert_eq!(total, u(&o.json["aggregate"]["ops"]), "every measured op in one interval");
    for a in agents {
        let ops: u64 = a["intervals"].as_array().unwrap().iter().map(|i| u(&i["ops"])).sum();
        let agent = o.json["agents"].as_array().unwrap().iter().find(|x| x["name"] == a["name"]).unwrap();
        assert_eq!(ops, u(&agent["ops"]));
    }

    let series_csv = o.csv.with_file_name("run-series.csv");
    let text = std::fs::read_to_string(&series_csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[..5], ["scope", "name", "interval", "start_s", "end_s"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let agent_rows: usize = agents.iter().map(|a| a["intervals"].as_array().unwrap().len()).sum();
    assert_eq!(rows.len(), agent_rows + aggregate.len());
    let ops = header.iter().position(|c| *c == "ops").unwrap();
    let csv_total: u64 =
        rows.iter().filter(|r| r[0] == "aggregate").map(|r| r[ops].parse::<u64>().unwrap()).sum();
    assert_eq!(csv_total, total);
}

#[test]
fn parquet_files_hold_agents_series_and_operations_with_the_envelope() {
    let o = null_run_with_every_output();
    let (columns, rows, envelope) = parquet(&o.parquet);
    assert_eq!(rows.len(), 3, "two agents and the aggregate");
    assert_eq!(columns[..2], ["scope", "name"]);
    let scope = column(&columns, &rows, "scope");
    assert_eq!(scope[2], &Field::Str("aggregate".into()));
    let ops = column(&columns, &rows, "ops");
    assert_eq!(long(ops[2]) as u64, u(&o.json["aggregate"]["ops"]));
    assert_eq!(long(ops[0]) + long(ops[1]), long(ops[2]));
    assert!(columns.iter().any(|c| c == "lat_ns_p99"));
    assert_eq!(envelope["command"], o.json["command"]);
    assert_eq!(envelope["schema_version"], o.json["schema_version"]);
    assert!(envelope["host"].is_object(), "the envelope of the JSON: {envelope}");
    assert!(envelope.get("agents").is_none(), "the tables are the rows, not metadata");

    let (s_columns, s_rows, _) = parquet(&o.parquet.with_file_name("run-series.parquet"));
    assert_eq!(s_columns[..5], ["scope", "name", "interval", "start_s", "end_s"]);
    let agg = o.json["series"]["aggregate"].as_array().unwrap().len();
    let scopes = column(&s_columns, &s_rows, "scope");
    assert_eq!(scopes.iter().filter(|s| ***s == Field::Str("aggregate".into())).count(), agg);

    let (p_columns, p_rows, p_envelope) = parquet(&o.parquet.with_file_name("run-ops.parquet"));
    assert_eq!(p_columns, ["agent", "op", "status", "offset", "bytes", "start_ns", "end_ns", "duration_ns"]);
    let data_ops = column(&p_columns, &p_rows, "op")
        .iter()
        .filter(|op| matches!(op, Field::Str(s) if s == "read" || s == "write"))
        .count();
    assert_eq!(data_ops as u64, u(&o.json["aggregate"]["ops"]), "one row per measured data operation");
    assert_eq!(p_envelope["tool"], o.json["tool"]);
    assert_eq!(p_envelope["started_at"], o.json["started_at"]);
}

#[test]
fn log_interval_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (interval, csv, message) in [
        ("1ms", "x.csv", "shorter than 10 ms"),
        ("soon", "x.csv", "--log-interval soon"),
        ("1s", "-", "--csv -"),
    ] {
        let out = iolens()
            .args(["run", "--quiet", "--engine", "null", "--time", "100ms", "--log-interval", interval])
            .args(["--target", dir.path().to_str().unwrap(), "--csv", csv])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{interval}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{interval}: {stderr}");
    }
}

#[test]
fn sweep_points_go_to_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let pq = dir.path().join("sweep.parquet");
    let json = dir.path().join("sweep.json");
    run_ok(&[
        "sweep",
        dir.path().to_str().unwrap(),
        "--quiet",
        "--buffered",
        "--threads",
        "1",
        "--min-bs",
        "4k",
        "--max-bs",
        "8k",
        "--time",
        "100ms",
        "--size",
        "1m",
        "--json",
        json.to_str().unwrap(),
        "--parquet",
        pq.to_str().unwrap(),
    ]);
    let v = read_json(&json);
    let points: usize =
        v["curves"].as_array().unwrap().iter().map(|c| c["points"].as_array().unwrap().len()).sum();
    let (columns, rows, envelope) = parquet(&pq);
    assert_eq!(rows.len(), points);
    assert!(points >= 2);
    assert!(columns.iter().any(|c| c == "iops") && columns.iter().any(|c| c.starts_with("curves_")));
    assert_eq!(envelope["schema_version"], v["schema_version"]);
}

#[test]
fn beff_io_patterns_and_validate_runs_go_to_parquet_with_the_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    run_ok(&[
        "beff-io",
        d,
        "--time",
        "200ms",
        "--mpart",
        "1m",
        "--ranks",
        "1",
        "--memory",
        "16m",
        "-q",
        "--json",
        &p("beff-io.json"),
        "--parquet",
        &p("beff-io.parquet"),
    ]);
    let v = read_json(&dir.path().join("beff-io.json"));
    let patterns: usize =
        v["partitions"].as_array().unwrap().iter().map(|x| x["patterns"].as_array().unwrap().len()).sum();
    let (columns, rows, envelope) = parquet(&dir.path().join("beff-io.parquet"));
    assert!(patterns > 0);
    assert_eq!(rows.len(), patterns);
    assert!(columns.iter().any(|c| c == "partitions_ranks"), "{columns:?}");
    assert_eq!(envelope["job"]["suite"], "beff-io");
    assert_eq!(envelope["b_eff_io_mb_s"], v["b_eff_io_mb_s"]);

    run_ok(&[
        "validate",
        d,
        "--volume",
        "1m",
        "--repeat",
        "2",
        "--sets",
        "2",
        "-q",
        "--json",
        &p("validate.json"),
        "--parquet",
        &p("validate.parquet"),
    ]);
    let v = read_json(&dir.path().join("validate.json"));
    let runs: usize = v["sets"].as_array().unwrap().iter().map(|x| x["runs"].as_array().unwrap().len()).sum();
    let (columns, rows, envelope) = parquet(&dir.path().join("validate.parquet"));
    assert!(runs >= 2);
    assert_eq!(rows.len(), runs);
    assert!(
        columns.iter().any(|c| c == "sets_set") && columns.iter().any(|c| c == "bw_bytes_s"),
        "{columns:?}"
    );
    assert_eq!(envelope["job"]["suite"], "validate");
}

#[test]
fn analyze_per_op_parquet_carries_the_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    run_ok(&[
        "run",
        "--target",
        dir.path().to_str().unwrap(),
        "--size",
        "1m",
        "--time",
        "100ms",
        "-q",
        "--trace",
        &p("t.trace"),
    ]);
    run_ok(&["analyze", &p("t.trace"), "--json", &p("a.json"), "--parquet", &p("ops.parquet")]);
    let v = read_json(&dir.path().join("a.json"));
    let (_, rows, envelope) = parquet(&dir.path().join("ops.parquet"));
    assert!(!rows.is_empty());
    assert_eq!(envelope["schema_version"], v["schema_version"]);
    let command: Vec<&str> =
        envelope["command"].as_array().unwrap().iter().filter_map(|a| a.as_str()).collect();
    assert!(command.contains(&"analyze"), "{command:?}");
    assert_eq!(envelope["aggregate_layer"], v["aggregate_layer"], "the summary is in it");
}

#[test]
fn repetitions_go_to_parquet_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let pq = dir.path().join("rep.parquet");
    let json = dir.path().join("rep.json");
    let common = [
        "run",
        "--quiet",
        "--engine",
        "null",
        "--rate",
        "1000",
        "--time",
        "250ms",
        "--log-interval",
        "100ms",
    ];
    run_ok(
        &[
            &common[..],
            &["--repeat", "2", "--target", dir.path().to_str().unwrap()],
            &["--json", json.to_str().unwrap(), "--parquet", pq.to_str().unwrap()],
        ]
        .concat(),
    );
    let v = read_json(&json);
    let (columns, rows, envelope) = parquet(&pq);
    assert_eq!(columns[..3], ["repetition", "scope", "name"]);
    let numbers: Vec<i64> = column(&columns, &rows, "repetition").into_iter().map(long).collect();
    assert_eq!(numbers, [1, 1, 2, 2], "one agent and the aggregate per repetition");
    let ops = column(&columns, &rows, "ops");
    assert_eq!(long(ops[3]) as u64, u(&v["runs"][1]["aggregate"]["ops"]));
    assert_eq!(envelope["repeat"], 2);
    assert_eq!(envelope["schema_version"], v["schema_version"]);
    assert!(envelope["host"].is_object(), "the envelope of the JSON: {envelope}");
    assert!(envelope.get("runs").is_none());
    let (s_columns, s_rows, _) = parquet(&pq.with_file_name("rep-series.parquet"));
    assert_eq!(s_columns[..4], ["repetition", "scope", "name", "interval"]);
    let per_run: usize = (0..2)
        .map(|k| {
            let s = &v["runs"][k]["series"];
            s["aggregate"].as_array().unwrap().len()
                + s["agents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a["intervals"].as_array().unwrap().len())
                    .sum::<usize>()
        })
        .sum();
    assert_eq!(s_rows.len(), per_run);

    let out = iolens()
        .args(common)
        .args(["--repeat", "2", "--target", dir.path().to_str().unwrap(), "--csv", "x.csv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--log-interval with --repeat and --csv"));
}
