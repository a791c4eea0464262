//! The Parquet table writer: a typed column schema, rows buffered a row group at a time (so
//! memory stays bounded whatever the row count), zstd-compressed pages, and the JSON envelope
//! in the file's key-value metadata.

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

/// The type of a column; the `Optional` ones may hold nulls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Int64,
    Double,
    /// A UTF-8 string.
    Utf8,
    Bool,
    OptionalInt64,
    OptionalDouble,
    OptionalUtf8,
    OptionalBool,
}

impl ColumnType {
    fn nullable(self) -> bool {
        matches!(
            self,
            ColumnType::OptionalInt64
                | ColumnType::OptionalDouble
                | ColumnType::OptionalUtf8
                | ColumnType::OptionalBool
        )
    }

    fn schema(self, name: &str) -> String {
        let repetition = if self.nullable() { "OPTIONAL" } else { "REQUIRED" };
        let physical = match self {
            ColumnType::Int64 | ColumnType::OptionalInt64 => "INT64",
            ColumnType::Double | ColumnType::OptionalDouble => "DOUBLE",
            ColumnType::Utf8 | ColumnType::OptionalUtf8 => "BYTE_ARRAY",
            ColumnType::Bool | ColumnType::OptionalBool => "BOOLEAN",
        };
        let logical = if physical == "BYTE_ARRAY" { " (UTF8)" } else { "" };
        format!("{repetition} {physical} {name}{logical};")
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
    /// Only in an `Optional` column.
    Null,
}

enum Values {
    Int64(Vec<i64>),
    Double(Vec<f64>),
    Utf8(Vec<ByteArray>),
    Bool(Vec<bool>),
}

/// The values of one column in the row group being filled; nulls are left out of `values`
/// and marked 0 in `defined`.
struct Buffer {
    values: Values,
    defined: Option<Vec<i16>>,
}

impl Buffer {
    fn new(kind: ColumnType) -> Buffer {
        let values = match kind {
            ColumnType::Int64 | ColumnType::OptionalInt64 => Values::Int64(Vec::new()),
            ColumnType::Double | ColumnType::OptionalDouble => Values::Double(Vec::new()),
            ColumnType::Utf8 | ColumnType::OptionalUtf8 => Values::Utf8(Vec::new()),
            ColumnType::Bool | ColumnType::OptionalBool => Values::Bool(Vec::new()),
        };
        Buffer { values, defined: kind.nullable().then(Vec::new) }
    }

    fn clear(&mut self) {
        match &mut self.values {
            Values::Int64(v) => v.clear(),
            Values::Double(v) => v.clear(),
            Values::Utf8(v) => v.clear(),
            Values::Bool(v) => v.clear(),
        }
        if let Some(d) = &mut self.defined {
            d.clear();
        }
    }

    /// Whether `v` can go in this column.
    fn accepts(&self, v: &Value) -> bool {
        match (&self.values, v) {
            (_, Value::Null) | (Values::Int64(_), Value::OptionalInt64(None)) => self.defined.is_some(),
            (Values::Int64(_), Value::Int64(_) | Value::UInt64(_) | Value::OptionalInt64(Some(_))) => true,
            (Values::Double(_), Value::Double(_)) => true,
            (Values::Utf8(_), Value::Str(_) | Value::Bytes(_)) => true,
            (Values::Bool(_), Value::Bool(_)) => true,
            _ => false,
        }
    }

    /// Appends `v`, which [`Buffer::accepts`].
    fn push(&mut self, v: &Value) {
        let present = !matches!(v, Value::Null | Value::OptionalInt64(None));
        if let Some(d) = &mut self.defined {
            d.push(i16::from(present));
        }
        match (&mut self.values, v) {
            (Values::Int64(b), Value::Int64(x) | Value::OptionalInt64(Some(x))) => b.push(*x),
            (Values::Int64(b), Value::UInt64(x)) => b.push(saturating_i64(*x)),
            (Values::Double(b), Value::Double(x)) => b.push(*x),
            (Values::Utf8(b), Value::Str(s)) => b.push(ByteArray::from(s.as_bytes().to_vec())),
            (Values::Utf8(b), Value::Bytes(s)) => b.push(s.clone()),
            (Values::Bool(b), Value::Bool(x)) => b.push(*x),
            _ => debug_assert!(!present, "checked by accepts"),
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
    names: Vec<String>,
    buffers: Vec<Buffer>,
    rows: usize,
}

impl ParquetTable {
    /// A table named `name` with these columns (names of letters, digits and `_`);
    /// `envelope`, when given, is stored in the key-value metadata under [`ENVELOPE_KEY`].
    pub fn create<S: AsRef<str>>(
        path: &Path,
        name: &str,
        columns: &[(S, ColumnType)],
        envelope: Option<String>,
    ) -> std::io::Result<ParquetTable> {
        if let Some((bad, _)) = columns.iter().find(|(n, _)| {
            n.as_ref().is_empty() || !n.as_ref().chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("column name {:?}: only letters, digits and _", bad.as_ref()),
            ));
        }
        let fields: Vec<String> = columns.iter().map(|(n, k)| k.schema(n.as_ref())).collect();
        let schema =
            parse_message_type(&format!("message {name} {{\n{}\n}}", fields.join("\n"))).map_err(to_io)?;
        let props = WriterProperties::builder()
            .set_created_by(format!("iolens {}", env!("CARGO_PKG_VERSION")))
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_key_value_metadata(envelope.map(|e| vec![KeyValue::new(ENVELOPE_KEY.to_string(), e)]))
            .build();
        let writer = SerializedFileWriter::new(OutputFile::create(path)?, Arc::new(schema), Arc::new(props))
            .map_err(to_io)?;
        Ok(ParquetTable {
            writer,
            names: columns.iter().map(|(n, _)| n.as_ref().to_string()).collect(),
            buffers: columns.iter().map(|(_, k)| Buffer::new(*k)).collect(),
            rows: 0,
        })
    }

    /// Appends one row; its values must match the columns in number and type.
    pub fn row(&mut self, values: &[Value]) -> std::io::Result<()> {
        if values.len() != self.buffers.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a row of {} values for {} columns", values.len(), self.buffers.len()),
            ));
        }
        // Checked before anything is pushed, so a bad row leaves the columns aligned.
        if let Some(k) = values.iter().zip(&self.buffers).position(|(v, b)| !b.accepts(v)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("column {} cannot hold {:?}", self.names[k], values[k]),
            ));
        }
        for (v, buffer) in values.iter().zip(&mut self.buffers) {
            buffer.push(v);
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
            let defined = buffer.defined.as_deref();
            match &buffer.values {
                Values::Int64(v) => column.typed::<Int64Type>().write_batch(v, defined, None),
                Values::Double(v) => column.typed::<DoubleType>().write_batch(v, defined, None),
                Values::Utf8(v) => column.typed::<ByteArrayType>().write_batch(v, defined, None),
                Values::Bool(v) => column.typed::<BoolType>().write_batch(v, defined, None),
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
    pub fn finish(self) -> std::io::Result<()> {
        self.finish_with_envelope(None)
    }

    /// [`ParquetTable::finish`] for a table whose envelope is known only once its rows are
    /// written (a trace's summary): `envelope` goes into the metadata now.
    pub fn finish_with_envelope(mut self, envelope: Option<String>) -> std::io::Result<()> {
        self.write_row_group()?;
        if let Some(e) = envelope {
            self.writer.append_key_value_metadata(KeyValue::new(ENVELOPE_KEY.to_string(), e));
        }
        self.writer.into_inner().map_err(to_io)?.commit()
    }
}
