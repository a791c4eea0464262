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
//! Parquet files are written by `iolens_report::export::trace_ops` (named by the caller as an
//! [`OpFileOpener`]) through `iolens_report::export::parquet`: a row group at a time, so memory
//! stays bounded whatever the trace length, zstd-compressed; pandas and DuckDB read them directly.

use iolens_output::OutputFile;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use iolens_output::csv::csv_field;
use iolens_record::event::{IoEvent, UNKNOWN_OFFSET};

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
pub trait OpWriter: Send {
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

/// Opens a per-operation file of a format this crate does not write itself (Parquet: its writer
/// is `iolens_report::export::trace_ops`, above this crate, which the caller names here).
pub type OpFileOpener = fn(&Path) -> std::io::Result<Box<dyn OpWriter>>;

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
    parquet: Option<&(PathBuf, OpFileOpener)>,
) -> Result<Vec<Export>, (PathBuf, std::io::Error)> {
    let mut out: Vec<Export> = Vec::new();
    if let Some(p) = csv {
        out.push((p.clone(), Box::new(CsvOps::create(p).map_err(|e| (p.clone(), e))?)));
    }
    if let Some((p, open)) = parquet {
        out.push((p.clone(), open(p).map_err(|e| (p.clone(), e))?));
    }
    Ok(out)
}
