//! Importers of I/O traces into iolens events ([`IoEvent`]), one module per format, all
//! streaming: a multi-gigabyte trace is read line by line (or frame by frame) and handed to an
//! [`EventSink`], never held in memory.
//!
//! Formats: iolens run traces (`IOLTRACE`), iolens event streams (`IOLEVT02`/`IOLEVT01`, a file or the
//! directory `iolens trace` writes), `strace -f -ttt -T` output, `blkparse` default text, and
//! Darshan DXT text from `darshan-dxt-parser`, and binary Darshan logs (`*.darshan`: counter
//! totals and job metadata in [`ImportReport::darshan`], DXT segments as events). Malformed lines are skipped and reported with
//! their line numbers, or stop the import in strict mode.

mod blkparse;
mod chunked;
pub mod darshan;
mod dxt;
pub mod mpi_clock;
mod native;
mod pipelined;
pub use native::{input_bytes, stream_files, MERGED_STREAMS_MAX};
pub use pipelined::{import_pipelined, PIPELINE_MIN_BYTES};
mod strace;

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use iolens_record::event::IoEvent;

pub use chunked::{import_run_trace_chunked, import_run_trace_chunked_counted};

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
    /// Binary Darshan logs (`*.darshan`).
    Darshan,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Iolens => "iolens",
            Format::Events => "events",
            Format::Strace => "strace",
            Format::Blkparse => "blkparse",
            Format::Dxt => "dxt",
            Format::Darshan => "darshan",
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
        [Format::Iolens, Format::Events, Format::Strace, Format::Blkparse, Format::Dxt, Format::Darshan]
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!("unknown format {s:?}; use auto, iolens, events, strace, blkparse, dxt or darshan")
            })
    }
}

/// Receives imported paths and events. Path ids are unique over the whole import.
pub trait EventSink {
    fn path(&mut self, id: u32, path: &str);
    fn event(&mut self, e: &IoEvent);
    /// Whether the import should end now with what it has (Ctrl-C on a large trace). Importers
    /// ask every [`STOP_POLL`] lines or records, so the check may cost an atomic load.
    fn stop_requested(&mut self) -> bool {
        false
    }
}

/// Lines or records read between two [`EventSink::stop_requested`] calls.
pub const STOP_POLL: u32 = 1024;

/// How far an import has got, for a progress display on another thread: bytes of the input
/// files read and events passed to the sink. The importers add to it once per buffer they read
/// and every [`STOP_POLL`] lines or records, never per record.
#[derive(Debug, Default)]
pub struct ReadProgress {
    bytes: AtomicU64,
    events: AtomicU64,
}

impl ReadProgress {
    /// Bytes of the input read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Events passed to the sink so far (up to [`STOP_POLL`] behind).
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Back to zero, for another reading of the same input.
    pub fn restart(&self) {
        self.bytes.store(0, Ordering::Relaxed);
        self.events.store(0, Ordering::Relaxed);
    }

    pub(crate) fn add_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn add_events(&self, n: u64) {
        self.events.fetch_add(n, Ordering::Relaxed);
    }
}

/// A reader that adds what it reads to a [`ReadProgress`] (it sits under the importers'
/// buffers, so it counts once per buffer filled).
pub(crate) struct Counted<'a, R> {
    inner: R,
    progress: Option<&'a ReadProgress>,
}

impl<'a, R: Read> Counted<'a, R> {
    pub(crate) fn new(inner: R, progress: Option<&'a ReadProgress>) -> Counted<'a, R> {
        Counted { inner, progress }
    }
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(p) = self.progress {
            p.add_bytes(n as u64);
        }
        Ok(n)
    }
}

/// Longest text line read whole: longer ones are malformed (no real strace, blkparse or DXT
/// line comes near it), so a file without newlines cannot fill memory.
pub const MAX_LINE: usize = 1 << 20;

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
    /// Why: the errno of the writer's last failed write, when a write failed.
    pub drop_errno: Option<u32>,
    /// Calls the writer left out (not on files), and their bytes, by reason.
    pub excluded: iolens_record::event::ExcludedCounts,
    pub notes: Vec<String>,
    /// The sink asked to stop: the events are those before that point.
    pub interrupted: bool,
    /// A binary Darshan log's job, mounts and module totals.
    pub darshan: Option<Box<darshan::DarshanLog>>,
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
    /// The global id of each path name: the streams of several processes (MPI ranks sharing a
    /// file), and one process opening a file again, define the same name under ids of their
    /// own, and the per-file table gives a file one row per layer.
    path_ids: HashMap<String, u32>,
    polls: u32,
    pub progress: Option<&'a ReadProgress>,
    /// Events already added to `progress`.
    events_told: u64,
    /// Capacity of the read buffer of a text or run trace ([`read_buffer_bytes`]).
    pub read_buffer_bytes: usize,
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
                drop_errno: None,
                excluded: Default::default(),
                notes: Vec::new(),
                interrupted: false,
                darshan: None,
            },
            next_path: 0,
            path_ids: HashMap::new(),
            polls: 0,
            progress: None,
            read_buffer_bytes: MAX_READ_BUFFER,
            events_told: 0,
        }
    }

    /// Whether to end the import now; call once per line or record.
    pub fn should_stop(&mut self) -> bool {
        if !self.report.interrupted {
            self.polls = self.polls.wrapping_add(1);
            if self.polls % STOP_POLL == 0 {
                if let Some(progress) = self.progress {
                    progress.add_events(self.report.events - self.events_told);
                    self.events_told = self.report.events;
                }
                if self.sink.stop_requested() {
                    self.report.interrupted = true;
                }
            }
        }
        self.report.interrupted
    }

    /// The global id of the path name `path`, defined to the sink when first seen.
    pub fn new_path(&mut self, path: &str) -> u32 {
        if let Some(&id) = self.path_ids.get(path) {
            return id;
        }
        let id = self.next_path;
        self.path_ids.insert(path.to_string(), id);
        self.next_path = self.next_path.saturating_add(1);
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

    /// An error of a binary format; its message carries the byte offset.
    pub fn format_err(&self, file: &Path, message: impl fmt::Display) -> ImportError {
        ImportError::Format { path: file.to_path_buf(), message: message.to_string() }
    }
}

/// Reads lines of a text trace, 1-based, tolerating invalid UTF-8. Lines are handed out of the
/// read buffer where they lie whole (only a line cut by the buffer's end is copied), and checked
/// as UTF-8 in place: a line costs no allocation unless it is invalid UTF-8.
pub(crate) fn for_each_line(
    ctx: &mut Ctx,
    input: impl Read,
    mut f: impl FnMut(&mut Ctx, u64, &str) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    for_each_line_bytes(ctx, input, |ctx, line_no, bytes| line_text(ctx, line_no, bytes, &mut f))
}

/// Hands `bytes`, a line as [`for_each_line_bytes`] gives it, to `f` as text: checked as UTF-8
/// in place, or with invalid sequences replaced (then copied).
#[inline]
pub(crate) fn line_text(
    ctx: &mut Ctx,
    line_no: u64,
    bytes: &[u8],
    f: &mut impl FnMut(&mut Ctx, u64, &str) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => f(ctx, line_no, text),
        Err(_) => f(ctx, line_no, &String::from_utf8_lossy(bytes)),
    }
}

/// [`for_each_line`] without the UTF-8 check: `f` gets each line's bytes, its `\n` and any
/// `\r` before it cut off (overlong lines are reported here, as malformed, and not handed out).
pub(crate) fn for_each_line_bytes(
    ctx: &mut Ctx,
    input: impl Read,
    mut f: impl FnMut(&mut Ctx, u64, &[u8]) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut reader = BufReader::with_capacity(ctx.read_buffer_bytes, input);
    // The start of a line the buffer cut, and whether it is already too long (then skipped).
    let mut carry: Vec<u8> = Vec::new();
    let mut overlong = false;
    let mut line_no = 0u64;
    let mut line = |ctx: &mut Ctx, line_no: u64, bytes: &[u8], overlong: bool| {
        if overlong || bytes.len() > MAX_LINE {
            return ctx.malformed(line_no, format!("line longer than {} MiB", MAX_LINE >> 20));
        }
        let end = bytes.iter().rposition(|b| !matches!(b, b'\n' | b'\r')).map_or(0, |i| i + 1);
        f(ctx, line_no, &bytes[..end])
    };
    loop {
        if ctx.should_stop() {
            return Ok(());
        }
        let buf = reader.fill_buf().map_err(|e| ctx.io(e))?;
        if buf.is_empty() {
            if !carry.is_empty() || overlong {
                line_no += 1;
                line(ctx, line_no, &carry, overlong)?;
            }
            return Ok(());
        }
        let mut pos = 0;
        while let Some(newline) = find_newline(&buf[pos..]) {
            let end = pos + newline;
            line_no += 1;
            if carry.is_empty() {
                line(ctx, line_no, &buf[pos..end], overlong)?;
            } else {
                carry.extend_from_slice(&buf[pos..end.min(pos + MAX_LINE + 1)]);
                line(ctx, line_no, &carry, overlong)?;
                carry.clear();
            }
            overlong = false;
            pos = end + 1;
            if ctx.should_stop() {
                return Ok(());
            }
        }
        let rest = &buf[pos..];
        if !overlong {
            if carry.len() + rest.len() > MAX_LINE {
                overlong = true;
                carry.clear();
            } else {
                carry.extend_from_slice(rest);
            }
        }
        let used = buf.len();
        reader.consume(used);
    }
}

/// The first `\n` in `bytes`, eight bytes at a time (a word has one where `word ^ 0x0a0a…`
/// has a zero byte).
#[inline]
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ (ONES * u64::from(b'\n'));
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            break;
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b == b'\n').map(|i| at + i)
}

/// Decimal seconds (`1700000000.000123`) as nanoseconds, exactly (no floating point, which
/// loses microseconds at epoch-sized values).
pub(crate) fn seconds_to_ns(text: &str) -> Option<u64> {
    plain_seconds_to_ns(text.as_bytes()).or_else(|| seconds_to_ns_general(text))
}

/// [`seconds_to_ns`] of digits with at most one dot and at most 19 digits before it, as traces
/// write times, in one pass over the bytes; None for anything else (left to the general parser,
/// which gives the same value for these).
#[inline]
pub(crate) fn plain_seconds_to_ns(text: &[u8]) -> Option<u64> {
    let (mut whole, mut whole_digits) = (0u64, 0u32);
    let (mut frac, mut frac_digits, mut dot) = (0u64, 0u32, false);
    for &c in text {
        match c {
            b'0'..=b'9' if dot => {
                if frac_digits < 9 {
                    frac = frac * 10 + u64::from(c - b'0');
                    frac_digits += 1;
                }
            }
            b'0'..=b'9' if whole_digits < 19 => {
                whole = whole * 10 + u64::from(c - b'0');
                whole_digits += 1;
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    if whole_digits == 0 && frac_digits == 0 {
        return None;
    }
    whole.checked_mul(1_000_000_000)?.checked_add(frac * 10u64.pow(9 - frac_digits))
}

fn seconds_to_ns_general(text: &str) -> Option<u64> {
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

/// The largest read buffer: past it, larger reads save no time.
const MAX_READ_BUFFER: usize = 1 << 18;

/// A read buffer for `file`: room for all of a small file (and the read that finds its end),
/// else [`MAX_READ_BUFFER`]. A buffer is zeroed whole before its first read, so a 1 MiB one
/// for a 20 KiB trace costs more page faults than reading the trace.
pub(crate) fn read_buffer_bytes(file: &std::fs::File) -> usize {
    match file.metadata() {
        Ok(m) if m.is_file() => usize::try_from(m.len())
            .map_or(MAX_READ_BUFFER, |len| len.saturating_add(1).clamp(4096, MAX_READ_BUFFER)),
        _ => MAX_READ_BUFFER,
    }
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
    // Any version: the reader tells a version it does not know from no stream at all.
    if head.starts_with(iolens_record::event::EVENT_MAGIC_PREFIX) {
        return Ok(Format::Events);
    }
    if darshan::looks_like(&head) {
        return Ok(Format::Darshan);
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
        "cannot tell the trace format; give --format (iolens, events, strace, blkparse, dxt, darshan)",
    ))
}

/// Imports `path` in `format` into `sink`.
pub fn import(
    path: &Path,
    format: Format,
    strict: bool,
    sink: &mut dyn EventSink,
) -> Result<ImportReport, ImportError> {
    import_counted(path, format, strict, sink, None)
}

/// [`import`], telling `progress` how far it has got.
pub fn import_counted(
    path: &Path,
    format: Format,
    strict: bool,
    sink: &mut dyn EventSink,
    progress: Option<&ReadProgress>,
) -> Result<ImportReport, ImportError> {
    let mut ctx = Ctx::new(sink, path, format, strict);
    ctx.progress = progress;
    if format == Format::Events {
        native::import_events(&mut ctx)?;
    } else {
        let file = open(path)?;
        ctx.read_buffer_bytes = read_buffer_bytes(&file);
        import_format(&mut ctx, Counted::new(file, progress))?;
    }
    Ok(ctx.report)
}

/// Imports one trace read from `input`; `name` stands for it in messages and notes. An event
/// stream is read as a single stream (a directory of them needs [`import`]).
pub fn import_reader(
    input: impl Read,
    name: &Path,
    format: Format,
    strict: bool,
    sink: &mut dyn EventSink,
) -> Result<ImportReport, ImportError> {
    let mut ctx = Ctx::new(sink, name, format, strict);
    import_format(&mut ctx, input)?;
    Ok(ctx.report)
}

fn import_format(ctx: &mut Ctx, input: impl Read) -> Result<(), ImportError> {
    match ctx.report.format {
        Format::Iolens => native::import_run_trace(ctx, input),
        Format::Events => native::import_event_file(ctx, input),
        Format::Strace => strace::import(ctx, input),
        Format::Blkparse => blkparse::import(ctx, input),
        Format::Dxt => dxt::import(ctx, input),
        Format::Darshan => darshan::import(ctx, input),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_plain_seconds_parser_agrees_with_the_general_one() {
        let mut state = 7u64;
        let alphabet = b"0123456789.+- x";
        for _ in 0..200_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (state >> 59) as usize + 1;
            let text: String = (0..len)
                .map(|i| {
                    let pick =
                        (state >> (3 * i % 48)) as usize % if i % 5 == 4 { alphabet.len() } else { 11 };
                    alphabet[pick] as char
                })
                .collect();
            if let Some(fast) = super::plain_seconds_to_ns(text.as_bytes()) {
                assert_eq!(Some(fast), super::seconds_to_ns_general(&text), "{text:?}");
            }
            assert_eq!(super::seconds_to_ns(&text), super::seconds_to_ns_general(&text), "{text:?}");
        }
        for text in [
            "18446744073.709551615",
            "18446744073.709551616",
            "9999999999999999999",
            "0000000000000000000001.5",
        ] {
            assert_eq!(super::seconds_to_ns(text), super::seconds_to_ns_general(text), "{text:?}");
        }
    }

    #[test]
    fn newlines_are_found_wherever_they_are() {
        for len in 0..40 {
            for at in 0..=len {
                let mut bytes = vec![b'\n' ^ 0x80; len];
                if at < len {
                    bytes[at] = b'\n';
                    bytes.iter_mut().skip(at + 1).step_by(3).for_each(|b| *b = b'\n');
                }
                let expected = bytes.iter().position(|&b| b == b'\n');
                assert_eq!(super::find_newline(&bytes), expected, "len {len}, at {at}");
            }
        }
    }

    #[test]
    fn exact_seconds() {
        assert_eq!(super::seconds_to_ns("1700000000.000300"), Some(1_700_000_000_000_300_000));
        assert_eq!(super::seconds_to_ns("2.7599"), Some(2_759_900_000));
        assert_eq!(super::seconds_to_ns("0.0000000001"), Some(0));
        assert_eq!(super::seconds_to_ns("7"), Some(7_000_000_000));
        assert_eq!(super::seconds_to_ns("x.5"), None);
        assert_eq!(super::seconds_to_ns("-1.0"), None);
    }

    use super::testing::import_text;
    use super::Format;

    #[test]
    fn extreme_numbers_saturate_instead_of_overflowing() {
        let strace = "100 18446744073.709551615 read(3</a>, \"\", 1) = 1 <1.000000>\n\
                      100 1.0 lseek(4</b>, 0, SEEK_SET) = 9223372036854775807 <0.1>\n\
                      100 1.1 read(4</b>, \"\", 1) = 9223372036854775807 <0.1>\n\
                      100 1.2 read(4</b>, \"\", 1) = 9223372036854775807 <0.1>\n\
                      100 1.3 read(4</b>, \"\", 1) = 9223372036854775807 <0.1>\n";
        let (c, r) = import_text(Format::Strace, strace, true);
        assert_eq!(r.unwrap().events, 5);
        assert_eq!(c.events[0].end_ns, u64::MAX);
        let blk = "8,0 0 1 0.1 7 Q W 18446744073709551615 + 18446744073709551615 [x]\n\
                   8,0 0 2 0.2 7 C W 18446744073709551615 + 8 [x]\n";
        let (c, r) = import_text(Format::Blkparse, blk, true);
        assert_eq!(r.unwrap().events, 1);
        assert_eq!((c.events[0].offset, c.events[0].requested), (u64::MAX, u64::MAX));
        assert!(c.events[0].result > 0, "a huge size is not an error code");
        let dxt = "# DXT, file_id: 1, file_name: /a\n X_POSIX 0 write 0 0 18446744073709551615 1.0 2.0\n";
        let (c, r) = import_text(Format::Dxt, dxt, true);
        assert_eq!(r.unwrap().events, 1);
        assert_eq!(c.events[0].result, i64::MAX);
    }

    #[test]
    fn overlong_lines_are_malformed_with_their_number() {
        let text = format!(
            "8,0 0 1 0.1 7 Q W 8 + 8 [x]\n{}\n8,0 0 2 0.2 7 C W 8 + 8 [x]\n",
            "x".repeat(super::MAX_LINE + 10)
        );
        let (_, r) = import_text(Format::Blkparse, &text, false);
        let r = r.unwrap();
        assert_eq!(r.events, 1, "the line after the long one is read");
        assert_eq!((r.malformed_count, r.malformed[0].line), (1, 2));
        assert!(r.malformed[0].message.contains("longer than"), "{:?}", r.malformed);
    }

    /// Gives at most `self.1` bytes per read, so lines are cut by the reader's buffer.
    struct Trickle<'a>(&'a [u8], usize);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    struct Nothing;
    impl super::EventSink for Nothing {
        fn path(&mut self, _: u32, _: &str) {}
        fn event(&mut self, _: &super::IoEvent) {}
    }

    #[test]
    fn lines_cut_by_reads_crlf_invalid_utf8_and_a_missing_last_newline() {
        let long = "y".repeat(super::MAX_LINE + 1);
        let mut text = b"first\r\nsecond\n\nbad \xff byte\n".to_vec();
        text.extend_from_slice(long.as_bytes());
        text.extend_from_slice(b"\nafter the long one\nno newline at the end");
        let expected =
            ["first", "second", "", "bad \u{fffd} byte", "after the long one", "no newline at the end"];
        for step in [1, 3, 7, 1 << 20, usize::MAX] {
            let mut sink = Nothing;
            let mut ctx = super::Ctx::new(&mut sink, std::path::Path::new("t"), Format::Strace, false);
            let mut lines = Vec::new();
            super::for_each_line(&mut ctx, Trickle(&text, step), |_, no, line| {
                lines.push((no, line.to_string()));
                Ok(())
            })
            .unwrap();
            let numbers: Vec<u64> = lines.iter().map(|(no, _)| *no).collect();
            assert_eq!(numbers, [1, 2, 3, 4, 6, 7], "reads of {step} bytes");
            let texts: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
            assert_eq!(texts, expected, "reads of {step} bytes");
            assert_eq!((ctx.report.malformed_count, ctx.report.malformed[0].line), (1, 5));
        }
    }

    /// Stops after the first poll.
    struct StopAtOnce(u64);
    impl super::EventSink for StopAtOnce {
        fn path(&mut self, _: u32, _: &str) {}
        fn event(&mut self, _: &super::IoEvent) {
            self.0 += 1;
        }
        fn stop_requested(&mut self) -> bool {
            true
        }
    }

    #[test]
    fn a_stop_request_ends_the_import_with_what_it_has() {
        let line = "8,0 0 1 0.1 7 Q W 8 + 8 [x]\n8,0 0 2 0.2 7 C W 8 + 8 [x]\n";
        let text = line.repeat(10 * super::STOP_POLL as usize);
        let mut sink = StopAtOnce(0);
        let r = super::import_reader(
            text.as_bytes(),
            std::path::Path::new("t"),
            Format::Blkparse,
            true,
            &mut sink,
        )
        .unwrap();
        assert!(r.interrupted);
        assert_eq!(sink.0, r.events);
        assert_eq!(r.events, (super::STOP_POLL as u64 - 1) / 2, "lines before the first poll");
    }
}

// The one skip helper of the workspace's tests: tests without the shared data sets skip, or
// fail under IOLENS_REQUIRE_TOOLS=1.
#[cfg(test)]
#[path = "../../iolens/tests/integration/util/prerequisite.rs"]
mod prerequisite;

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
