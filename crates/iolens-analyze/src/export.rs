//! Per-operation exports: one row per traced call, as CSV or Parquet, with the same columns.
//!
//! | column        | type            | meaning                                              |
//! |---------------|-----------------|------------------------------------------------------|
//! | `row_kind`    | string          | always `op`: one row shape, as the other CSVs        |
//! | `pid`, `tid`  | integer         | process and thread of the call                       |
//! | `path`        | string          | file the call named ("" when none or unknown)        |
//! | `op`          | string          | open, close, read, write, fsync, seek, copy, …       |
//! | `layer`       | string          | posix, stdio, mpiio or block                         |
//! | `offset`      | integer or null | file (or device) offset; empty/null when unknown     |
//! | `requested`   | integer         | bytes the application asked for                      |
//! | `result`      | integer         | bytes done, or −errno                                |
//! | `start_ns`    | integer         | call start, on the trace's clock                     |
//! | `end_ns`      | integer         | call end                                             |
//! | `duration_ns` | integer         | `end_ns − start_ns`                                  |
//!
//! Parquet files go through [`iolens_report::export::parquet`]: a row group at a time, so memory
//! stays bounded whatever the trace length, zstd-compressed; pandas and DuckDB read them directly.

use iolens_output::OutputFile;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use iolens_record::event::{IoEvent, UNKNOWN_OFFSET};
use iolens_report::export::csv_field;
use iolens_report::export::parquet::{ColumnType, ParquetTable, Value};
use parquet::data_type::ByteArray;

pub const OP_COLUMNS: [&str; 12] = [
    "row_kind",
    "pid",
    "tid",
    "path",
    "op",
    "layer",
    "offset",
    "requested",
    "result",
    "start_ns",
    "end_ns",
    "duration_ns",
];

/// A destination for per-operation rows.
pub(crate) trait OpWriter: Send {
    fn op(&mut self, e: &IoEvent, path: &str) -> std::io::Result<()>;
    /// Completes the file; `envelope` goes into the metadata of the formats that have one.
    fn finish(self: Box<Self>, envelope: Option<&str>) -> std::io::Result<()>;
}

pub(crate) struct CsvOps {
    out: BufWriter<OutputFile>,
}

impl CsvOps {
    pub(crate) fn create(path: &Path) -> std::io::Result<CsvOps> {
        let mut out = BufWriter::new(OutputFile::create(path)?);
        writeln!(out, "{}", OP_COLUMNS.join(","))?;
        Ok(CsvOps { out })
    }
}

impl OpWriter for CsvOps {
    fn op(&mut self, e: &IoEvent, path: &str) -> std::io::Result<()> {
        write!(self.out, "op,{},{},{},{},{},", e.pid, e.tid, csv_field(path), e.op.name(), e.layer.name())?;
        if e.offset != UNKNOWN_OFFSET {
            write!(self.out, "{}", e.offset)?;
        }
        writeln!(self.out, ",{},{},{},{},{}", e.requested, e.result, e.start_ns, e.end_ns, e.duration_ns())
    }

    fn finish(self: Box<Self>, _envelope: Option<&str>) -> std::io::Result<()> {
        self.out.into_inner().map_err(|e| e.into_error())?.commit()
    }
}

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

pub(crate) struct ParquetOps {
    table: ParquetTable,
    /// The last path seen and its shared bytes: consecutive calls mostly name the same file.
    last_path: Option<(String, ByteArray)>,
}

impl ParquetOps {
    pub(crate) fn create(path: &Path) -> std::io::Result<ParquetOps> {
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

/// An open export and its file (for error messages).
pub(crate) type Export = (PathBuf, Box<dyn OpWriter>);

/// The per-operation exports of an analysis, every row written but the files not yet complete:
/// a Parquet file takes the result's envelope, known only once the summary is. An export that
/// failed mid-way is kept with its error: completing the exports fails with it.
pub struct OpExports {
    pub(crate) writers: Vec<Export>,
    pub(crate) failed: Vec<(PathBuf, std::io::Error)>,
}

impl OpExports {
    /// Whether no per-operation file was asked for (then no envelope need be made for them).
    pub fn is_empty(&self) -> bool {
        self.writers.is_empty() && self.failed.is_empty()
    }

    /// Completes every file, `envelope` (the result's JSON document) in the Parquet metadata;
    /// the first that cannot be written (or could not be, mid-way), with its path.
    pub fn finish(self, envelope: Option<&str>) -> Result<(), (PathBuf, std::io::Error)> {
        let mut first = self.failed.into_iter().next();
        for (path, writer) in self.writers {
            if let Err(e) = writer.finish(envelope) {
                first.get_or_insert((path, e));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// The per-op exports requested.
pub(crate) fn open_exports(
    csv: Option<&PathBuf>,
    parquet: Option<&PathBuf>,
) -> Result<Vec<Export>, (PathBuf, std::io::Error)> {
    let mut out: Vec<Export> = Vec::new();
    if let Some(p) = csv {
        out.push((p.clone(), Box::new(CsvOps::create(p).map_err(|e| (p.clone(), e))?)));
    }
    if let Some(p) = parquet {
        out.push((p.clone(), Box::new(ParquetOps::create(p).map_err(|e| (p.clone(), e))?)));
    }
    Ok(out)
}
