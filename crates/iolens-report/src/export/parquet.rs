//! Results as Parquet files: a run's agents and aggregate, its series, the operations of its
//! trace, and a suite's points, each flattened from the result's JSON into typed columns, with
//! the result's JSON envelope in the file's key-value metadata under [`ENVELOPE_KEY`]. pandas
//! (`read_parquet`), pyarrow and DuckDB read these files directly. The writer itself (schema,
//! row groups, compression) is [`ParquetTable`], in `table`.

use std::path::Path;

use parquet::data_type::ByteArray;

mod table;

pub use table::{ColumnType, ParquetTable, Value, ENVELOPE_KEY};

/// A column name from a JSON key path: `lat_ns` + `p99.9` → `lat_ns_p99_9`.
fn column_name(path: &[&str]) -> String {
    path.iter()
        .map(|k| k.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect::<String>())
        .collect::<Vec<_>>()
        .join("_")
}

/// The scalar fields of `value` (nested objects flattened, `_`-joined; arrays kept as JSON text),
/// appended to `out` in document order.
fn flatten<'a>(
    value: &'a serde_json::Value,
    path: &mut Vec<&'a str>,
    out: &mut Vec<(String, serde_json::Value)>,
) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                path.push(k);
                flatten(v, path, out);
                path.pop();
            }
        }
        serde_json::Value::Array(_) => {
            out.push((column_name(path), serde_json::Value::String(value.to_string())))
        }
        scalar => out.push((column_name(path), scalar.clone())),
    }
}

/// The column type holding every value seen for a column; mixed kinds become JSON text.
fn widen(kind: Option<ColumnType>, v: &serde_json::Value) -> Option<ColumnType> {
    use serde_json::Value as J;
    let this = match v {
        J::Null => return kind,
        J::Bool(_) => ColumnType::OptionalBool,
        J::Number(n) if n.is_i64() || n.is_u64() => ColumnType::OptionalInt64,
        J::Number(_) => ColumnType::OptionalDouble,
        J::String(_) | J::Array(_) | J::Object(_) => ColumnType::OptionalUtf8,
    };
    Some(match (kind, this) {
        (None, t) => t,
        (Some(a), b) if a == b => a,
        (Some(ColumnType::OptionalInt64), ColumnType::OptionalDouble)
        | (Some(ColumnType::OptionalDouble), ColumnType::OptionalInt64) => ColumnType::OptionalDouble,
        _ => ColumnType::OptionalUtf8,
    })
}

fn json_value(v: &serde_json::Value, kind: ColumnType) -> Value<'_> {
    use serde_json::Value as J;
    match (v, kind) {
        (J::Null, _) => Value::Null,
        (J::Number(n), ColumnType::OptionalInt64) => match n.as_i64() {
            Some(i) => Value::Int64(i),
            None => Value::UInt64(n.as_u64().unwrap_or(u64::MAX)),
        },
        (J::Number(n), ColumnType::OptionalDouble) => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
        (J::Bool(b), ColumnType::OptionalBool) => Value::Bool(*b),
        (J::String(s), _) => Value::Str(s),
        (other, _) => Value::Bytes(ByteArray::from(other.to_string().into_bytes())),
    }
}

/// Writes one row per JSON object in `rows`, their fields flattened into columns (`a.b` →
/// `a_b`, arrays as JSON text), every column nullable and typed from the values it holds
/// (integers, floats, strings, booleans). The `leading` columns come first, in that order, the
/// others by name. `envelope` goes into the file's metadata.
pub fn write_json_rows(
    path: &Path,
    table: &str,
    rows: &[serde_json::Value],
    leading: &[&str],
    envelope: Option<String>,
) -> std::io::Result<()> {
    let flat: Vec<Vec<(String, serde_json::Value)>> = rows
        .iter()
        .map(|r| {
            let mut out = Vec::new();
            flatten(r, &mut Vec::new(), &mut out);
            out
        })
        .collect();
    let mut columns: Vec<(String, Option<ColumnType>)> =
        leading.iter().map(|n| (n.to_string(), None)).collect();
    let mut index: std::collections::HashMap<String, usize> =
        leading.iter().enumerate().map(|(k, n)| (n.to_string(), k)).collect();
    for (name, v) in flat.iter().flatten() {
        let k = *index.entry(name.clone()).or_insert_with(|| {
            columns.push((name.clone(), None));
            columns.len() - 1
        });
        columns[k].1 = widen(columns[k].1, v);
    }
    // A column of nulls only is still a column: strings, the most general type.
    let columns: Vec<(String, ColumnType)> =
        columns.into_iter().map(|(n, k)| (n, k.unwrap_or(ColumnType::OptionalUtf8))).collect();
    let mut t = ParquetTable::create(path, table, &columns, envelope)?;
    let null = serde_json::Value::Null;
    let mut values = Vec::with_capacity(columns.len());
    for row in &flat {
        values.clear();
        let by_name: std::collections::HashMap<&str, &serde_json::Value> =
            row.iter().map(|(n, v)| (n.as_str(), v)).collect();
        values.extend(
            columns.iter().map(|(n, k)| json_value(by_name.get(n.as_str()).copied().unwrap_or(&null), *k)),
        );
        t.row(&values)?;
    }
    t.finish()
}

/// The JSON document of a result (envelope and body) without its tables (`keys`): what a
/// Parquet file's metadata carries under [`ENVELOPE_KEY`], so a file read alone still says what
/// produced it, where and how it went.
pub fn envelope<T: serde::Serialize>(result: &T, keys: &[&str]) -> String {
    let mut v = serde_json::to_value(result).unwrap_or(serde_json::Value::Null);
    if let Some(map) = v.as_object_mut() {
        for k in keys {
            map.remove(*k);
        }
    }
    v.to_string()
}

/// A run's rows: one per agent (`scope` = `agent`) and the aggregate (`scope` = `aggregate`,
/// `name` = the job), the JSON's figures flattened (`lat_ns_p99`).
pub fn run_rows(run: &iolens_metrics::RunResult) -> Vec<serde_json::Value> {
    let with_scope = |scope: &str, name: &str, v: serde_json::Value| {
        let mut row = serde_json::Map::new();
        row.insert("scope".into(), scope.into());
        row.insert("name".into(), name.into());
        if let serde_json::Value::Object(fields) = v {
            row.extend(fields.into_iter().filter(|(k, _)| k != "name"));
        }
        serde_json::Value::Object(row)
    };
    let json = |v: Result<serde_json::Value, serde_json::Error>| v.unwrap_or(serde_json::Value::Null);
    run.agents
        .iter()
        .map(|a| with_scope("agent", &a.info.name, json(serde_json::to_value(a))))
        .chain(std::iter::once(with_scope("aggregate", &run.job, json(serde_json::to_value(&run.aggregate)))))
        .collect()
}

/// The keys of a run's JSON that its tables hold (left out of its Parquet files' envelope).
pub const RUN_TABLE_KEYS: [&str; 3] = ["agents", "aggregate", "series"];

/// A run as Parquet: the rows of [`run_rows`]; `envelope` (see [`envelope`]) in the metadata.
pub fn write_run(path: &Path, run: &iolens_metrics::RunResult, envelope: String) -> std::io::Result<()> {
    write_json_rows(path, "iolens_run", &run_rows(run), &["scope", "name"], Some(envelope))
}

/// `rows` of each repetition, numbered from 1 in a leading `repetition` column.
fn numbered(
    runs: &[iolens_metrics::RunResult],
    rows: fn(&iolens_metrics::RunResult) -> Vec<serde_json::Value>,
) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for (k, run) in runs.iter().enumerate() {
        for row in rows(run) {
            let mut numbered = serde_json::Map::new();
            numbered.insert("repetition".into(), (k + 1).into());
            if let serde_json::Value::Object(fields) = row {
                numbered.extend(fields);
            }
            out.push(serde_json::Value::Object(numbered));
        }
    }
    out
}

/// The repetitions of a run (`--repeat`) as Parquet: [`run_rows`] of each, with its number in
/// `repetition`; beside it (`STEM-series.EXT`) their series when they have one. `envelope` is
/// the repeated result without its runs.
pub fn write_repetitions(
    path: &Path,
    runs: &[iolens_metrics::RunResult],
    envelope: String,
) -> std::io::Result<()> {
    let rows = numbered(runs, run_rows);
    write_json_rows(path, "iolens_runs", &rows, &["repetition", "scope", "name"], Some(envelope.clone()))?;
    if runs.iter().any(|r| r.series.is_some()) {
        let rows = numbered(runs, series_rows);
        let leading = ["repetition", "scope", "name", "interval", "start_s", "end_s"];
        write_json_rows(&companion_path(path, "series"), "iolens_series", &rows, &leading, Some(envelope))?;
    }
    Ok(())
}

/// A run's series as rows: one per interval of each agent (`scope` = `agent`) and of the
/// aggregate (`scope` = `aggregate`), in that order.
pub fn series_rows(run: &iolens_metrics::RunResult) -> Vec<serde_json::Value> {
    let Some(series) = &run.series else { return Vec::new() };
    let rows_of = |scope: &str, name: &str, intervals: &[iolens_metrics::IntervalFigures]| {
        intervals
            .iter()
            .enumerate()
            .map(|(k, iv)| {
                let mut row = serde_json::Map::new();
                row.insert("scope".into(), scope.into());
                row.insert("name".into(), name.into());
                row.insert("interval".into(), k.into());
                if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(iv) {
                    row.extend(fields);
                }
                serde_json::Value::Object(row)
            })
            .collect::<Vec<_>>()
    };
    let mut rows = Vec::new();
    for a in &series.agents {
        rows.extend(rows_of("agent", &a.name, &a.intervals));
    }
    rows.extend(rows_of("aggregate", &run.job, &series.aggregate));
    rows
}

/// A run's series (`--log-interval`) as Parquet: the rows of [`series_rows`].
pub fn write_series(path: &Path, run: &iolens_metrics::RunResult, envelope: String) -> std::io::Result<()> {
    write_json_rows(
        path,
        "iolens_series",
        &series_rows(run),
        &["scope", "name", "interval", "start_s", "end_s"],
        Some(envelope),
    )
}

/// Columns of the per-operation table of a run (from its `--trace` records).
pub const RUN_OP_COLUMNS: [(&str, ColumnType); 8] = [
    ("agent", ColumnType::Utf8),
    ("op", ColumnType::Utf8),
    ("status", ColumnType::Utf8),
    ("offset", ColumnType::Int64),
    ("bytes", ColumnType::Int64),
    ("start_ns", ColumnType::Int64),
    ("end_ns", ColumnType::Int64),
    ("duration_ns", ColumnType::Int64),
];

/// Every operation of a run's trace (`--trace FILE`) as Parquet, one row each; times on the
/// monotonic clock of the run. Memory stays bounded: rows go out a row group at a time.
pub fn write_trace_ops(path: &Path, trace: &Path, envelope: Option<String>) -> std::io::Result<u64> {
    use iolens_record::{OpKind, OpStatus};
    let mut reader = iolens_record::trace::TraceReader::open(trace)
        .map_err(|e| std::io::Error::other(format!("{}: {e}", trace.display())))?;
    let names: Vec<ByteArray> =
        reader.streams.iter().map(|n| ByteArray::from(n.as_bytes().to_vec())).collect();
    let unknown = ByteArray::from("?");
    let mut t = ParquetTable::create(path, "iolens_run_ops", &RUN_OP_COLUMNS, envelope)?;
    let mut rows = 0u64;
    while let Some(r) =
        reader.next_record().map_err(|e| std::io::Error::other(format!("{}: {e}", trace.display())))?
    {
        let op = match r.kind {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Fsync => "fsync",
            OpKind::Close => "close",
        };
        let status = match r.status {
            OpStatus::Complete => "complete",
            OpStatus::Short => "short",
            OpStatus::Error => "error",
        };
        t.row(&[
            Value::Bytes(names.get(usize::from(r.stream)).unwrap_or(&unknown).clone()),
            Value::Str(op),
            Value::Str(status),
            Value::UInt64(r.offset),
            Value::UInt64(u64::from(r.bytes)),
            Value::UInt64(r.start_ns),
            Value::UInt64(r.end_ns),
            Value::UInt64(r.end_ns.saturating_sub(r.start_ns)),
        ])?;
        rows += 1;
    }
    t.finish()?;
    Ok(rows)
}

/// Arrays whose objects are the rows of a suite's table: sweep's and saturate's `points`,
/// write-modes' `modes`, b_eff_io's `patterns` (per partition), validate's `runs` (per set).
const ROW_ARRAYS: [&str; 4] = ["points", "modes", "patterns", "runs"];

/// The points of a suite's result as rows: every object of an array named in [`ROW_ARRAYS`],
/// with the scalar fields of the objects around it (a curve's `threads`) prefixed by their
/// array's name (`curves_threads`).
pub fn point_rows(result: &serde_json::Value) -> Vec<serde_json::Value> {
    fn walk(
        v: &serde_json::Value,
        context: &serde_json::Map<String, serde_json::Value>,
        out: &mut Vec<serde_json::Value>,
    ) {
        let serde_json::Value::Object(map) = v else { return };
        for (key, child) in map {
            let serde_json::Value::Array(items) = child else { continue };
            for item in items {
                let serde_json::Value::Object(fields) = item else { continue };
                if ROW_ARRAYS.contains(&key.as_str()) {
                    let mut row = context.clone();
                    row.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
                    out.push(serde_json::Value::Object(row));
                } else {
                    let mut inner = context.clone();
                    for (k, v) in fields {
                        if !v.is_array() && !v.is_object() {
                            inner.insert(format!("{key}_{k}"), v.clone());
                        }
                    }
                    walk(item, &inner, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(result, &serde_json::Map::new(), &mut out);
    out
}

/// The keys of a suite's JSON that hold its points (left out of its Parquet file's envelope);
/// b_eff_io's partitions and validate's sets stay in it, for their per-method and per-set
/// findings the rows do not hold.
pub const POINT_TABLE_KEYS: [&str; 2] = ["curves", "modes"];

/// A suite's result as Parquet: one row per point ([`point_rows`]); `envelope` (see
/// [`envelope`]) in the metadata.
pub fn write_points<T: serde::Serialize>(
    path: &Path,
    result: &T,
    envelope: String,
) -> std::io::Result<usize> {
    let json = serde_json::to_value(result).map_err(std::io::Error::other)?;
    let rows = point_rows(&json);
    write_json_rows(path, "iolens_points", &rows, &[], Some(envelope))?;
    Ok(rows.len())
}

pub use super::companion_path;

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::basic::Compression;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    #[test]
    fn beff_io_patterns_and_validate_runs_are_rows_with_their_context() {
        let beff_io = serde_json::json!({
            "suite": "beff-io",
            "method_weights": [["scatter", 0.25]],
            "partitions": [
                {"ranks": 1, "b_eff_io": 3.5, "methods": [{"method": "write", "mb_s": 2.0}],
                 "patterns": [{"method": "write", "type": 0, "chunk_bytes": 1024}, {"method": "read", "type": 1, "chunk_bytes": 32}]},
                {"ranks": 2, "b_eff_io": 5.0, "methods": [], "patterns": [{"method": "write", "type": 0, "chunk_bytes": 1024}]}
            ]
        });
        let rows = point_rows(&beff_io);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[1]["partitions_ranks"], 1);
        assert_eq!(rows[1]["chunk_bytes"], 32);
        assert_eq!(rows[2]["partitions_ranks"], 2);
        assert!(rows.iter().all(|r| r.get("methods_mb_s").is_none()), "a sibling table's fields stay out");
        let validate = serde_json::json!({
            "suite": "validate",
            "sets": [{"set": 2, "name": "request size", "runs": [{"config": "4k", "repetition": 1, "iops": 10.0}],
                      "correlations": [{"name": "iops", "cc": -0.5}]}]
        });
        let rows = point_rows(&validate);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0]["sets_set"].clone(), rows[0]["config"].clone()), (2.into(), "4k".into()));
    }

    #[test]
    fn rows_columns_nulls_and_envelope_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let columns = [
            ("n", ColumnType::Int64),
            ("maybe", ColumnType::OptionalInt64),
            ("x", ColumnType::Double),
            ("s", ColumnType::Utf8),
            ("b", ColumnType::Bool),
            ("ms", ColumnType::OptionalUtf8),
        ];
        let mut t = ParquetTable::create(&path, "t", &columns, Some("{\"a\":1}".into())).unwrap();
        t.row(&[
            Value::UInt64(u64::MAX),
            Value::OptionalInt64(None),
            Value::Double(1.5),
            Value::Str("a,b"),
            Value::Bool(true),
            Value::Null,
        ])
        .unwrap();
        t.row(&[
            Value::Int64(-1),
            Value::Int64(7),
            Value::Double(0.0),
            Value::Str(""),
            Value::Bool(false),
            Value::Str("x"),
        ])
        .unwrap();
        let wrong = [
            Value::Double(1.0),
            Value::Int64(7),
            Value::Double(0.0),
            Value::Str(""),
            Value::Bool(false),
            Value::Null,
        ];
        assert!(t.row(&wrong).unwrap_err().to_string().contains("column n"));
        let null_in_required =
            [Value::Null, Value::Null, Value::Double(0.0), Value::Str(""), Value::Bool(false), Value::Null];
        assert!(t.row(&null_in_required).is_err());
        assert!(t.row(&[Value::Int64(1)]).is_err(), "too few values");
        t.finish().unwrap();

        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), 2, "the refused rows left no trace");
        let kv = meta.file_metadata().key_value_metadata().unwrap();
        assert!(kv.iter().any(|k| k.key == ENVELOPE_KEY && k.value.as_deref() == Some("{\"a\":1}")));
        let codec = meta.row_group(0).column(0).compression();
        assert!(matches!(codec, Compression::ZSTD(_)), "{codec:?}");
        let rows: Vec<Vec<Field>> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().get_column_iter().map(|(_, f)| f.clone()).collect())
            .collect();
        assert_eq!(
            rows[0],
            vec![
                Field::Long(i64::MAX),
                Field::Null,
                Field::Double(1.5),
                Field::Str("a,b".into()),
                Field::Bool(true),
                Field::Null
            ]
        );
        assert_eq!(rows[1][1], Field::Long(7));
        assert_eq!(rows[1][5], Field::Str("x".into()));
        let bad_name =
            ParquetTable::create(&dir.path().join("b.parquet"), "t", &[("p99.9", ColumnType::Int64)], None);
        assert!(bad_name.is_err());
    }

    fn read_back(path: &Path) -> (Vec<String>, Vec<Vec<Field>>, Option<String>) {
        let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
        let meta = reader.metadata().file_metadata();
        let columns = meta.schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
        let envelope = meta
            .key_value_metadata()
            .and_then(|kv| kv.iter().find(|k| k.key == ENVELOPE_KEY).and_then(|k| k.value.clone()));
        let rows = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().get_column_iter().map(|(_, f)| f.clone()).collect())
            .collect();
        (columns, rows, envelope)
    }

    #[test]
    fn json_rows_flatten_and_type_their_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.parquet");
        let rows = vec![
            serde_json::json!({"n": 1, "x": 2, "lat_ns": {"p99.9": 7}, "tags": [1, 2], "s": "a", "maybe": null}),
            serde_json::json!({"n": 2, "x": 2.5, "lat_ns": {"p99.9": 8}, "tags": [], "s": "b", "ok": true}),
        ];
        write_json_rows(&path, "j", &rows, &["s", "n"], Some("{}".into())).unwrap();
        let (columns, got, envelope) = read_back(&path);
        assert_eq!(columns, ["s", "n", "lat_ns_p99_9", "maybe", "tags", "x", "ok"]);
        assert_eq!(envelope.as_deref(), Some("{}"));
        assert_eq!(got[0][1], Field::Long(1));
        assert_eq!(got[0][5], Field::Double(2.0), "ints and floats in one column: floats");
        assert_eq!(got[1][2], Field::Long(8));
        assert_eq!(got[0][4], Field::Str("[1,2]".into()));
        assert_eq!(got[0][3], Field::Null);
        assert_eq!((got[0][6].clone(), got[1][6].clone()), (Field::Null, Field::Bool(true)));
    }

    #[test]
    fn run_table_has_agents_then_aggregate_and_the_envelope() {
        use iolens_metrics::{AgentInfo, AgentResult, Figures, RunResult};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.parquet");
        let mut run = RunResult { job: "j".into(), ..Default::default() };
        for (name, ops) in [("a", 3), ("b", 4)] {
            run.agents.push(AgentResult {
                info: AgentInfo { name: name.into(), ..Default::default() },
                figures: Figures { ops, ..Default::default() },
            });
        }
        run.aggregate.ops = 7;
        write_run(&path, &run, envelope(&run, &RUN_TABLE_KEYS)).unwrap();
        let (columns, rows, envelope) = read_back(&path);
        assert_eq!(&columns[..2], ["scope", "name"]);
        let ops = columns.iter().position(|c| c == "ops").unwrap();
        assert!(columns.contains(&"lat_ns_p50".to_string()));
        let scoped: Vec<(Field, Field, Field)> =
            rows.iter().map(|r| (r[0].clone(), r[1].clone(), r[ops].clone())).collect();
        assert_eq!(
            scoped,
            [
                (Field::Str("agent".into()), Field::Str("a".into()), Field::Long(3)),
                (Field::Str("agent".into()), Field::Str("b".into()), Field::Long(4)),
                (Field::Str("aggregate".into()), Field::Str("j".into()), Field::Long(7)),
            ]
        );
        let envelope: serde_json::Value = serde_json::from_str(&envelope.unwrap()).unwrap();
        assert_eq!(envelope["job_name"], "j");
        assert!(envelope.get("agents").is_none() && envelope.get("aggregate").is_none());
    }

    #[test]
    fn suite_points_carry_their_curve() {
        let result = serde_json::json!({
            "schema_version": 1,
            "curves": [
                {"threads": 1, "points": [{"bs": 4096, "iops": 10.0}, {"bs": 8192, "iops": 9.0}]},
                {"threads": 4, "points": [{"bs": 4096, "iops": 30.5}]}
            ]
        });
        let rows = point_rows(&result);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2]["curves_threads"], 4);
        assert_eq!(rows[2]["iops"], 30.5);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.parquet");
        assert_eq!(write_points(&path, &result, envelope(&result, &POINT_TABLE_KEYS)).unwrap(), 3);
        let (columns, got, envelope) = read_back(&path);
        assert_eq!(columns, ["bs", "curves_threads", "iops"]);
        assert_eq!(got.len(), 3);
        assert_eq!(envelope.as_deref(), Some("{\"schema_version\":1}"));
    }

    #[test]
    fn companions_sit_beside_their_file() {
        assert_eq!(companion_path(Path::new("/r/out.csv"), "series"), Path::new("/r/out-series.csv"));
        assert_eq!(companion_path(Path::new("out"), "ops"), Path::new("out-ops"));
    }
}
