//! Per-operation exports: one row per traced call, as CSV or Parquet, with the same columns.
//!
//! | column        | type            | meaning                                              |
//! |---------------|-----------------|------------------------------------------------------|
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
//! Parquet files are written a row group at a time, so memory stays bounded whatever the trace
//! length; pandas (`read_parquet`) and DuckDB read them directly.

use iolens_output::OutputFile;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iolens_record::event::{IoEvent, UNKNOWN_OFFSET};
use iolens_report::export::csv_field;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

pub const OP_COLUMNS: [&str; 11] = [
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

/// Rows per Parquet row group: large enough for good compression and scans, small enough to
/// keep the writer's buffers near 100 MB at most.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// A destination for per-operation rows.
pub(crate) trait OpWriter: Send {
    fn op(&mut self, e: &IoEvent, path: &str) -> std::io::Result<()>;
    fn finish(self: Box<Self>) -> std::io::Result<()>;
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
        write!(self.out, "{},{},{},{},{},", e.pid, e.tid, csv_field(path), e.op.name(), e.layer.name())?;
        if e.offset != UNKNOWN_OFFSET {
            write!(self.out, "{}", e.offset)?;
        }
        writeln!(self.out, ",{},{},{},{},{}", e.requested, e.result, e.start_ns, e.end_ns, e.duration_ns())
    }

    fn finish(self: Box<Self>) -> std::io::Result<()> {
        self.out.into_inner().map_err(|e| e.into_error())?.commit()
    }
}

const PARQUET_SCHEMA: &str = "message iolens_ops {
    REQUIRED INT64 pid;
    REQUIRED INT64 tid;
    REQUIRED BYTE_ARRAY path (UTF8);
    REQUIRED BYTE_ARRAY op (UTF8);
    REQUIRED BYTE_ARRAY layer (UTF8);
    OPTIONAL INT64 offset;
    REQUIRED INT64 requested;
    REQUIRED INT64 result;
    REQUIRED INT64 start_ns;
    REQUIRED INT64 end_ns;
    REQUIRED INT64 duration_ns;
}";

/// Column buffers of the row group being filled.
#[derive(Default)]
struct Columns {
    pid: Vec<i64>,
    tid: Vec<i64>,
    path: Vec<ByteArray>,
    op: Vec<ByteArray>,
    layer: Vec<ByteArray>,
    offset: Vec<i64>,
    offset_defined: Vec<i16>,
    requested: Vec<i64>,
    result: Vec<i64>,
    start_ns: Vec<i64>,
    end_ns: Vec<i64>,
    duration_ns: Vec<i64>,
}

pub(crate) struct ParquetOps {
    writer: SerializedFileWriter<OutputFile>,
    rows: Columns,
    /// The last path seen and its shared bytes: consecutive calls mostly name the same file.
    last_path: Option<(String, ByteArray)>,
}

fn to_io(e: parquet::errors::ParquetError) -> std::io::Error {
    std::io::Error::other(e)
}

fn as_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl ParquetOps {
    pub(crate) fn create(path: &Path) -> std::io::Result<ParquetOps> {
        let schema = Arc::new(parse_message_type(PARQUET_SCHEMA).map_err(to_io)?);
        let props = Arc::new(WriterProperties::builder().set_created_by("iolens".into()).build());
        let writer = SerializedFileWriter::new(OutputFile::create(path)?, schema, props).map_err(to_io)?;
        Ok(ParquetOps { writer, rows: Columns::default(), last_path: None })
    }

    fn write_row_group(&mut self) -> std::io::Result<()> {
        if self.rows.pid.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.rows);
        let mut group = self.writer.next_row_group().map_err(to_io)?;
        for name in OP_COLUMNS {
            let Some(mut column) = group.next_column().map_err(to_io)? else { break };
            let strings = match name {
                "path" => Some(&rows.path),
                "op" => Some(&rows.op),
                "layer" => Some(&rows.layer),
                _ => None,
            };
            if let Some(values) = strings {
                column.typed::<ByteArrayType>().write_batch(values, None, None).map_err(to_io)?;
            } else {
                let (values, defined) = match name {
                    "pid" => (&rows.pid, None),
                    "tid" => (&rows.tid, None),
                    "offset" => (&rows.offset, Some(rows.offset_defined.as_slice())),
                    "requested" => (&rows.requested, None),
                    "result" => (&rows.result, None),
                    "start_ns" => (&rows.start_ns, None),
                    "end_ns" => (&rows.end_ns, None),
                    _ => (&rows.duration_ns, None),
                };
                column.typed::<Int64Type>().write_batch(values, defined, None).map_err(to_io)?;
            }
            column.close().map_err(to_io)?;
        }
        group.close().map_err(to_io)?;
        Ok(())
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
        let r = &mut self.rows;
        r.pid.push(e.pid.into());
        r.tid.push(e.tid.into());
        r.path.push(path_bytes);
        r.op.push(ByteArray::from(e.op.name()));
        r.layer.push(ByteArray::from(e.layer.name()));
        if e.offset == UNKNOWN_OFFSET {
            r.offset_defined.push(0);
        } else {
            r.offset_defined.push(1);
            r.offset.push(as_i64(e.offset));
        }
        r.requested.push(as_i64(e.requested));
        r.result.push(e.result);
        r.start_ns.push(as_i64(e.start_ns));
        r.end_ns.push(as_i64(e.end_ns));
        r.duration_ns.push(as_i64(e.duration_ns()));
        if r.pid.len() >= ROW_GROUP_ROWS {
            self.write_row_group()?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> std::io::Result<()> {
        self.write_row_group()?;
        self.writer.into_inner().map_err(to_io)?.commit()
    }
}

/// An open export and its file (for error messages).
pub(crate) type Export = (PathBuf, Box<dyn OpWriter>);

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
