//! The per-operation Parquet file of `analyze --per-op-parquet`: one row per traced call, the
//! columns of the per-operation CSV. The analysis ([`iolens_analyze`]) feeds the rows through
//! its [`OpWriter`]; the binary names [`open_parquet`] as the opener of this format.

use std::path::Path;

use iolens_analyze::export::OpWriter;
use iolens_record::event::{IoEvent, UNKNOWN_OFFSET};
use parquet::data_type::ByteArray;

use super::parquet::{ColumnType, ParquetTable, Value};

const PARQUET_COLUMNS: [(&str, ColumnType); 12] = [
    ("row_kind", ColumnType::Utf8),
    ("pid", ColumnType::Int64),
    ("tid", ColumnType::Int64),
    ("path", ColumnType::Utf8),
    ("op", ColumnType::Utf8),
    ("layer", ColumnType::Utf8),
    ("offset", ColumnType::OptionalInt64),
    ("requested", ColumnType::Int64),
    ("result", ColumnType::Int64),
    ("start_ns", ColumnType::Int64),
    ("end_ns", ColumnType::Int64),
    ("duration_ns", ColumnType::Int64),
];

struct ParquetOps {
    table: ParquetTable,
    /// The last path seen and its shared bytes: consecutive calls mostly name the same file.
    last_path: Option<(String, ByteArray)>,
}

impl ParquetOps {
    fn create(path: &Path) -> std::io::Result<ParquetOps> {
        Ok(ParquetOps {
            table: ParquetTable::create(path, "iolens_ops", &PARQUET_COLUMNS, None)?,
            last_path: None,
        })
    }
}

impl OpWriter for ParquetOps {
    fn op(&mut self, e: &IoEvent, path: &str) -> std::io::Result<()> {
        let path_bytes = match &self.last_path {
            Some((p, bytes)) if p == path => bytes.clone(),
            _ => {
                let bytes = ByteArray::from(path.as_bytes().to_vec());
                self.last_path = Some((path.to_string(), bytes.clone()));
                bytes
            }
        };
        self.table.row(&[
            Value::Str("op"),
            Value::Int64(e.pid.into()),
            Value::Int64(e.tid.into()),
            Value::Bytes(path_bytes),
            Value::Str(e.op.name()),
            Value::Str(e.layer.name()),
            Value::OptionalInt64(
                (e.offset != UNKNOWN_OFFSET).then(|| i64::try_from(e.offset).unwrap_or(i64::MAX)),
            ),
            Value::UInt64(e.requested),
            Value::Int64(e.result),
            Value::UInt64(e.start_ns),
            Value::UInt64(e.end_ns),
            Value::UInt64(e.duration_ns()),
        ])
    }

    fn finish(self: Box<Self>, envelope: Option<&str>) -> std::io::Result<()> {
        self.table.finish_with_envelope(envelope.map(str::to_string))
    }
}

/// Opens the per-operation Parquet file at `path` (complete only once its envelope is known).
pub fn open_parquet(path: &Path) -> std::io::Result<Box<dyn OpWriter>> {
    Ok(Box::new(ParquetOps::create(path)?))
}

#[cfg(test)]
mod tests {
    use iolens_analyze::{AnalyzeOptions, Analyzer};

    use super::*;
    use crate::test_events::{analyze, sample};

    #[test]
    fn per_op_parquet_has_the_rows_of_the_csv() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = tempfile::tempdir().unwrap();
        let (csv, pq) = (dir.path().join("ops.csv"), dir.path().join("ops.parquet"));
        let events = sample();
        analyze(
            &events,
            AnalyzeOptions {
                per_op_csv: Some(csv.clone()),
                per_op_parquet: Some((pq.clone(), open_parquet)),
                ..AnalyzeOptions::default()
            },
        );
        let reader = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
        let columns: Vec<String> = reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(columns, iolens_analyze::export::OP_COLUMNS);
        let from_parquet: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                row.get_column_iter()
                    .map(|(_, field)| match field {
                        parquet::record::Field::Null => String::new(),
                        parquet::record::Field::Str(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        let text = std::fs::read_to_string(&csv).unwrap();
        let from_csv: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(from_parquet.len(), events.len());
        assert_eq!(from_parquet, from_csv, "same rows, nulls where the CSV is empty");
    }

    #[test]
    fn per_op_parquet_takes_the_envelope_of_the_finished_summary() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir = tempfile::tempdir().unwrap();
        let pq = dir.path().join("ops.parquet");
        let mut a = Analyzer::new(AnalyzeOptions {
            per_op_parquet: Some((pq.clone(), open_parquet)),
            ..AnalyzeOptions::default()
        })
        .unwrap();
        a.path(0, "/a");
        for e in sample() {
            a.event(&e);
        }
        let (summary, exports) = a.finish_keeping_exports().unwrap();
        assert!(!pq.exists(), "the file is complete only with its envelope");
        let envelope = format!("{{\"ops\":{}}}", summary.figures.ops);
        exports.finish(Some(&envelope)).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
        let kv = reader.metadata().file_metadata().key_value_metadata().cloned().unwrap_or_default();
        let stored = kv.iter().find(|k| k.key == crate::export::parquet::ENVELOPE_KEY);
        assert_eq!(stored.and_then(|k| k.value.as_deref()), Some(envelope.as_str()));
    }
}
