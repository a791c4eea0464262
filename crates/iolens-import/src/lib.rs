//! Importers of I/O traces into iolens events ([`IoEvent`]), one module per format, all
//! streaming: a multi-gigabyte trace is read line by line (or frame by frame) and handed to an
//! [`EventSink`], never held in memory.
//!
//! Formats: iolens run traces (`IOLTRACE`), iolens event streams (`IOLEVT01`, a file or the
//! directory `iolens trace` writes), `strace -f -ttt -T` output, `blkparse` default text, and
//! Darshan DXT text from `darshan-dxt-parser`. Malformed lines are skipped and reported with
//! their line numbers, or stop the import in strict mode.

mod blkparse;
mod dxt;
mod native;
mod strace;

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use iolens_record::event::IoEvent;

/// A trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `iolens run --trace` files.
    Iolens,
    /// `iolens trace` event streams: one file, or a directory of `*.evt` files.
    Events,
    Strace,
    Blkparse,
    Dxt,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Iolens => "iolens",
            Format::Events => "events",
            Format::Strace => "strace",
            Format::Blkparse => "blkparse",
            Format::Dxt => "dxt",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        [Format::Iolens, Format::Events, Format::Strace, Format::Blkparse, Format::Dxt]
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown format {s:?}; use auto, iolens, events, strace, blkparse or dxt"))
    }
}

/// Receives imported paths and events. Path ids are unique over the whole import.
pub trait EventSink {
    fn path(&mut self, id: u32, path: &str);
    fn event(&mut self, e: &IoEvent);
}

/// A line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub line: u64,
    pub message: String,
}

/// What an import found besides events.
#[derive(Debug, Clone)]
pub struct ImportReport {
    pub format: Format,
    pub events: u64,
    pub malformed_count: u64,
    /// The first malformed lines (at most [`MALFORMED_KEPT`]).
    pub malformed: Vec<Malformed>,
    /// Events the writer of the trace said it lost.
    pub dropped: u64,
    pub notes: Vec<String>,
}

pub const MALFORMED_KEPT: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}:{line}: {message}")]
    Malformed { path: PathBuf, line: u64, message: String },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
}

/// Shared state of one import: global path ids, counts, malformed-line handling.
pub(crate) struct Ctx<'a> {
    pub sink: &'a mut dyn EventSink,
    pub path: PathBuf,
    pub strict: bool,
    pub report: ImportReport,
    next_path: u32,
}

impl<'a> Ctx<'a> {
    fn new(sink: &'a mut dyn EventSink, path: &Path, format: Format, strict: bool) -> Ctx<'a> {
        Ctx {
            sink,
            path: path.to_path_buf(),
            strict,
            report: ImportReport {
                format,
                events: 0,
                malformed_count: 0,
                malformed: Vec::new(),
                dropped: 0,
                notes: Vec::new(),
            },
            next_path: 0,
        }
    }

    /// Defines a new path and returns its global id.
    pub fn new_path(&mut self, path: &str) -> u32 {
        let id = self.next_path;
        self.next_path += 1;
        self.sink.path(id, path);
        id
    }

    pub fn event(&mut self, e: &IoEvent) {
        self.report.events += 1;
        self.sink.event(e);
    }

    /// Records a malformed line; in strict mode, the error that stops the import.
    pub fn malformed(&mut self, line: u64, message: impl Into<String>) -> Result<(), ImportError> {
        let message = message.into();
        if self.strict {
            return Err(ImportError::Malformed { path: self.path.clone(), line, message });
        }
        self.report.malformed_count += 1;
        if self.report.malformed.len() < MALFORMED_KEPT {
            self.report.malformed.push(Malformed { line, message });
        }
        Ok(())
    }

    pub fn io(&self, source: io::Error) -> ImportError {
        ImportError::Io { path: self.path.clone(), source }
    }
}

/// Reads lines of a text trace, 1-based, tolerating invalid UTF-8.
pub(crate) fn for_each_line(
    ctx: &mut Ctx,
    input: impl Read,
    mut f: impl FnMut(&mut Ctx, u64, &str) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let mut buf = Vec::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| ctx.io(e))?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        let text = String::from_utf8_lossy(&buf);
        f(ctx, line_no, text.trim_end_matches(['\n', '\r']))?;
    }
}

/// Decimal seconds (`1700000000.000123`) as nanoseconds, exactly (no floating point, which
/// loses microseconds at epoch-sized values).
pub(crate) fn seconds_to_ns(text: &str) -> Option<u64> {
    let (whole, frac) = text.trim().split_once('.').unwrap_or((text.trim(), ""));
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    if !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let digits = &frac[..frac.len().min(9)];
    let frac_ns: u64 =
        if digits.is_empty() { 0 } else { digits.parse::<u64>().ok()? * 10u64.pow(9 - digits.len() as u32) };
    whole.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

fn open(path: &Path) -> Result<std::fs::File, ImportError> {
    std::fs::File::open(path).map_err(|source| ImportError::Io { path: path.to_path_buf(), source })
}

/// Guesses the format from the first bytes or lines.
pub fn detect_format(path: &Path) -> io::Result<Format> {
    if path.is_dir() {
        return Ok(Format::Events);
    }
    let mut head = vec![0u8; 64 * 1024];
    let n = std::fs::File::open(path)?.read(&mut head)?;
    head.truncate(n);
    if head.starts_with(iolens_record::trace::MAGIC) {
        return Ok(Format::Iolens);
    }
    if head.starts_with(iolens_record::event::EVENT_MAGIC) {
        return Ok(Format::Events);
    }
    let text = String::from_utf8_lossy(&head);
    if text.contains("# DXT") || text.contains("darshan log version") || text.contains("X_POSIX") {
        return Ok(Format::Dxt);
    }
    for line in text.lines().filter(|l| !l.trim().is_empty()).take(50) {
        if blkparse::looks_like(line) {
            return Ok(Format::Blkparse);
        }
        if strace::looks_like(line) {
            return Ok(Format::Strace);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "cannot tell the trace format; give --format (iolens, events, strace, blkparse, dxt)",
    ))
}

/// Imports `path` in `format` into `sink`.
pub fn import(
    path: &Path,
    format: Format,
    strict: bool,
    sink: &mut dyn EventSink,
) -> Result<ImportReport, ImportError> {
    let mut ctx = Ctx::new(sink, path, format, strict);
    match format {
        Format::Iolens => native::import_run_trace(&mut ctx)?,
        Format::Events => native::import_events(&mut ctx)?,
        Format::Strace => {
            let f = open(path)?;
            strace::import(&mut ctx, f)?
        }
        Format::Blkparse => {
            let f = open(path)?;
            blkparse::import(&mut ctx, f)?
        }
        Format::Dxt => {
            let f = open(path)?;
            dxt::import(&mut ctx, f)?
        }
    }
    Ok(ctx.report)
}

#[cfg(test)]
mod tests {
    #[test]
    fn exact_seconds() {
        assert_eq!(super::seconds_to_ns("1700000000.000300"), Some(1_700_000_000_000_300_000));
        assert_eq!(super::seconds_to_ns("2.7599"), Some(2_759_900_000));
        assert_eq!(super::seconds_to_ns("0.0000000001"), Some(0));
        assert_eq!(super::seconds_to_ns("7"), Some(7_000_000_000));
        assert_eq!(super::seconds_to_ns("x.5"), None);
        assert_eq!(super::seconds_to_ns("-1.0"), None);
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Collects what an import produced.
    #[derive(Default)]
    pub struct Collect {
        pub paths: Vec<(u32, String)>,
        pub events: Vec<IoEvent>,
    }

    impl EventSink for Collect {
        fn path(&mut self, id: u32, path: &str) {
            self.paths.push((id, path.to_string()));
        }
        fn event(&mut self, e: &IoEvent) {
            self.events.push(*e);
        }
    }

    impl Collect {
        pub fn path_of(&self, id: u32) -> &str {
            &self.paths.iter().find(|(i, _)| *i == id).unwrap().1
        }
    }

    pub fn import_text(
        format: Format,
        text: &str,
        strict: bool,
    ) -> (Collect, Result<ImportReport, ImportError>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, text).unwrap();
        let mut c = Collect::default();
        let r = import(&p, format, strict, &mut c);
        (c, r)
    }
}
