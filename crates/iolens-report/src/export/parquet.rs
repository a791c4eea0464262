//! Parquet tables: a typed column schema, rows buffered a row group at a time (so memory stays
//! bounded whatever the row count), zstd-compressed pages, and the result's JSON envelope in
//! the file's key-value metadata under [`ENVELOPE_KEY`]. pandas (`read_parquet`), pyarrow and
//! DuckDB read these files directly.

use std::path::Path;
use std::sync::Arc;

use iolens_output::OutputFile;
use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

/// Key of the key-value metadata entry holding the result's JSON envelope.
pub const ENVELOPE_KEY: &str = "iolens.envelope";

/// Rows per row group: large enough for good compression and scans, small enough to keep the
/// writer's buffers near 100 MB at most.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// The type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Int64,
    /// An integer that may be null.
    OptionalInt64,
    Double,
    /// A UTF-8 string.
    Utf8,
    Bool,
}

impl ColumnType {
    fn schema(self, name: &str) -> String {
        match self {
            ColumnType::Int64 => format!("REQUIRED INT64 {name};"),
            ColumnType::OptionalInt64 => format!("OPTIONAL INT64 {name};"),
            ColumnType::Double => format!("REQUIRED DOUBLE {name};"),
            ColumnType::Utf8 => format!("REQUIRED BYTE_ARRAY {name} (UTF8);"),
            ColumnType::Bool => format!("REQUIRED BOOLEAN {name};"),
        }
    }
}

/// One value of a row, in column order.
#[derive(Debug, Clone)]
pub enum Value<'a> {
    Int64(i64),
    /// A `u64` stored as INT64, saturating at `i64::MAX`.
    UInt64(u64),
    OptionalInt64(Option<i64>),
    Double(f64),
    Str(&'a str),
    /// String bytes already shared (repeated values cost no copy).
    Bytes(ByteArray),
    Bool(bool),
}

enum Buffer {
    Int64(Vec<i64>),
    OptionalInt64 { values: Vec<i64>, defined: Vec<i16> },
    Double(Vec<f64>),
    Utf8(Vec<ByteArray>),
    Bool(Vec<bool>),
}

impl Buffer {
    fn new(kind: ColumnType) -> Buffer {
        match kind {
            ColumnType::Int64 => Buffer::Int64(Vec::new()),
            ColumnType::OptionalInt64 => Buffer::OptionalInt64 { values: Vec::new(), defined: Vec::new() },
            ColumnType::Double => Buffer::Double(Vec::new()),
            ColumnType::Utf8 => Buffer::Utf8(Vec::new()),
            ColumnType::Bool => Buffer::Bool(Vec::new()),
        }
    }

    fn clear(&mut self) {
        match self {
            Buffer::Int64(v) => v.clear(),
            Buffer::OptionalInt64 { values, defined } => {
                values.clear();
                defined.clear();
            }
            Buffer::Double(v) => v.clear(),
            Buffer::Utf8(v) => v.clear(),
            Buffer::Bool(v) => v.clear(),
        }
    }
}

fn to_io(e: parquet::errors::ParquetError) -> std::io::Error {
    std::io::Error::other(e)
}

fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A Parquet file being written: [`ParquetTable::row`] per row, then [`ParquetTable::finish`]
/// puts the complete file in place (atomically for regular files, see [`iolens_output`]).
pub struct ParquetTable {
    writer: SerializedFileWriter<OutputFile>,
    columns: Vec<(&'static str, ColumnType)>,
    buffers: Vec<Buffer>,
    rows: usize,
}

impl ParquetTable {
    /// A table named `name` with these columns; `envelope`, when given, is stored in the
    /// key-value metadata under [`ENVELOPE_KEY`].
    pub fn create(
        path: &Path,
        name: &str,
        columns: &[(&'static str, ColumnType)],
        envelope: Option<String>,
    ) -> std::io::Result<ParquetTable> {
        let fields: String = columns.iter().map(|(n, k)| k.schema(n)).collect::<Vec<_>>().join("\n");
        let schema =
            Arc::new(parse_message_type(&format!("message {name} {{\n{fields}\n}}")).map_err(to_io)?);
        let props = WriterProperties::builder()
            .set_created_by(format!("iolens {}", env!("CARGO_PKG_VERSION")))
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_key_value_metadata(envelope.map(|e| vec![KeyValue::new(ENVELOPE_KEY.to_string(), e)]))
            .build();
        let writer =
            SerializedFileWriter::new(OutputFile::create(path)?, schema, Arc::new(props)).map_err(to_io)?;
        Ok(ParquetTable {
            writer,
            columns: columns.to_vec(),
            buffers: columns.iter().map(|(_, k)| Buffer::new(*k)).collect(),
            rows: 0,
        })
    }

    /// Appends one row; its values must match the columns in number and type.
    pub fn row(&mut self, values: &[Value]) -> std::io::Result<()> {
        if values.len() != self.columns.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a row of {} values for {} columns", values.len(), self.columns.len()),
            ));
        }
        // Checked before anything is pushed, so a bad row leaves the columns aligned.
        for (v, (name, kind)) in values.iter().zip(&self.columns) {
            let fits = matches!(
                (v, kind),
                (Value::Int64(_) | Value::UInt64(_), ColumnType::Int64)
                    | (
                        Value::OptionalInt64(_) | Value::Int64(_) | Value::UInt64(_),
                        ColumnType::OptionalInt64
                    )
                    | (Value::Double(_), ColumnType::Double)
                    | (Value::Str(_) | Value::Bytes(_), ColumnType::Utf8)
                    | (Value::Bool(_), ColumnType::Bool)
            );
            if !fits {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("column {name} is {kind:?}, not {v:?}"),
                ));
            }
        }
        for (v, buffer) in values.iter().zip(&mut self.buffers) {
            match (buffer, v) {
                (Buffer::Int64(b), Value::Int64(x)) => b.push(*x),
                (Buffer::Int64(b), Value::UInt64(x)) => b.push(saturating_i64(*x)),
                (Buffer::OptionalInt64 { values, defined }, v) => {
                    let x = match v {
                        Value::Int64(x) => Some(*x),
                        Value::UInt64(x) => Some(saturating_i64(*x)),
                        Value::OptionalInt64(x) => *x,
                        _ => unreachable!("checked above"),
                    };
                    defined.push(i16::from(x.is_some()));
                    values.extend(x);
                }
                (Buffer::Double(b), Value::Double(x)) => b.push(*x),
                (Buffer::Utf8(b), Value::Str(s)) => b.push(ByteArray::from(s.as_bytes().to_vec())),
                (Buffer::Utf8(b), Value::Bytes(s)) => b.push(s.clone()),
                (Buffer::Bool(b), Value::Bool(x)) => b.push(*x),
                _ => unreachable!("checked above"),
            }
        }
        self.rows += 1;
        if self.rows >= ROW_GROUP_ROWS {
            self.write_row_group()?;
        }
        Ok(())
    }

    fn write_row_group(&mut self) -> std::io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut group = self.writer.next_row_group().map_err(to_io)?;
        for buffer in &mut self.buffers {
            let Some(mut column) = group.next_column().map_err(to_io)? else { break };
            match &*buffer {
                Buffer::Int64(v) => column.typed::<Int64Type>().write_batch(v, None, None),
                Buffer::OptionalInt64 { values, defined } => {
                    column.typed::<Int64Type>().write_batch(values, Some(defined), None)
                }
                Buffer::Double(v) => column.typed::<DoubleType>().write_batch(v, None, None),
                Buffer::Utf8(v) => column.typed::<ByteArrayType>().write_batch(v, None, None),
                Buffer::Bool(v) => column.typed::<BoolType>().write_batch(v, None, None),
            }
            .map_err(to_io)?;
            column.close().map_err(to_io)?;
            buffer.clear();
        }
        group.close().map_err(to_io)?;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last row group and the footer, and puts the file in place.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.write_row_group()?;
        self.writer.into_inner().map_err(to_io)?.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

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
        ];
        let mut t = ParquetTable::create(&path, "t", &columns, Some("{\"a\":1}".into())).unwrap();
        t.row(&[
            Value::UInt64(u64::MAX),
            Value::OptionalInt64(None),
            Value::Double(1.5),
            Value::Str("a,b"),
            Value::Bool(true),
        ])
        .unwrap();
        t.row(&[Value::Int64(-1), Value::Int64(7), Value::Double(0.0), Value::Str(""), Value::Bool(false)])
            .unwrap();
        let wrong = t.row(&[
            Value::Double(1.0),
            Value::Int64(7),
            Value::Double(0.0),
            Value::Str(""),
            Value::Bool(false),
        ]);
        assert!(wrong.unwrap_err().to_string().contains("column n"));
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
                Field::Bool(true)
            ]
        );
        assert_eq!(rows[1][1], Field::Long(7));
    }
}
