//! The compact binary per-op trace written by `iolens run --trace FILE`.
//!
//! # Layout (version 1, all integers little-endian)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `IOLTRACE` |
//! | 8 | 4 | version (1) |
//! | 12 | 4 | record size in bytes (32) |
//! | 16 | 8 | `data_offset`: where the first record starts (a multiple of 32) |
//! | 24 | 4 | clock: 1 = `CLOCK_MONOTONIC`, nanoseconds |
//! | 28 | 4 | number of streams `n` |
//! | 32 | … | `n` stream names: u16 byte length, then UTF-8 bytes; zero padding up to `data_offset` |
//!
//! Then records of 32 bytes until the end of the file:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | start (submission), ns |
//! | 8 | 8 | end (completion), ns |
//! | 16 | 8 | file offset in bytes |
//! | 24 | 4 | bytes requested |
//! | 28 | 2 | stream (agent) index into the name table |
//! | 30 | 1 | kind: 0 read, 1 write, 2 fsync, 3 close (of the target, at the end of the phase) |
//! | 31 | 1 | status: 0 complete, 1 short transfer, 2 error |
//!
//! Each stream's records appear in its completion order, in blocks: streams write their buffers
//! concurrently, so blocks of different streams interleave. Sort by `start` for a global order.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub const MAGIC: &[u8; 8] = b"IOLTRACE";
pub const VERSION: u32 = 1;
pub const RECORD_SIZE: usize = 32;
const CLOCK_MONOTONIC_NS: u32 = 1;
/// Records buffered per stream before one positional write.
const RECORDS_PER_BLOCK: usize = 4096;

/// What an operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpKind {
    Read = 0,
    Write = 1,
    Fsync = 2,
    Close = 3,
}

impl OpKind {
    pub fn from_u8(v: u8) -> Option<OpKind> {
        match v {
            0 => Some(OpKind::Read),
            1 => Some(OpKind::Write),
            2 => Some(OpKind::Fsync),
            3 => Some(OpKind::Close),
            _ => None,
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpStatus {
    Complete = 0,
    Short = 1,
    Error = 2,
}

impl OpStatus {
    pub fn from_u8(v: u8) -> Option<OpStatus> {
        match v {
            0 => Some(OpStatus::Complete),
            1 => Some(OpStatus::Short),
            2 => Some(OpStatus::Error),
            _ => None,
        }
    }
}

/// One operation as the application saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpRecord {
    pub start_ns: u64,
    pub end_ns: u64,
    pub offset: u64,
    pub bytes: u32,
    pub stream: u16,
    pub kind: OpKind,
    pub status: OpStatus,
}

impl OpRecord {
    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&self.start_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.end_ns.to_le_bytes());
        b[16..24].copy_from_slice(&self.offset.to_le_bytes());
        b[24..28].copy_from_slice(&self.bytes.to_le_bytes());
        b[28..30].copy_from_slice(&self.stream.to_le_bytes());
        b[30] = self.kind as u8;
        b[31] = self.status as u8;
        b
    }

    /// Decodes the record that starts at byte `offset` of the file (for error messages).
    pub fn decode(b: &[u8; RECORD_SIZE], offset: u64) -> Result<OpRecord, TraceError> {
        let u64_at = |i: usize| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(v)
        };
        let bad = |field: &'static str, value: u8| TraceError::BadRecord { offset, field, value };
        Ok(OpRecord {
            start_ns: u64_at(0),
            end_ns: u64_at(8),
            offset: u64_at(16),
            bytes: u32::from_le_bytes([b[24], b[25], b[26], b[27]]),
            stream: u16::from_le_bytes([b[28], b[29]]),
            kind: OpKind::from_u8(b[30]).ok_or(bad("kind", b[30]))?,
            status: OpStatus::from_u8(b[31]).ok_or(bad("status", b[31]))?,
        })
    }
}

/// The largest stream-name table a reader accepts: a name per stream index (u16) of a few
/// dozen bytes is far below it, and it keeps a corrupt `data_offset` from allocating gigabytes.
pub const MAX_HEADER_BYTES: u64 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not an iolens trace (bad magic); expected a file written by `iolens run --trace`")]
    BadMagic,
    #[error("unsupported trace version {0} (this iolens reads version {VERSION})")]
    BadVersion(u32),
    #[error("corrupt trace header at offset {offset}: {message}")]
    BadHeader { offset: u64, message: String },
    #[error("corrupt record at offset {offset}: invalid {field} {value}")]
    BadRecord { offset: u64, field: &'static str, value: u8 },
    #[error("trace ends inside the record at offset {offset} ({bytes} of {RECORD_SIZE} bytes): the writer was cut off")]
    Truncated { offset: u64, bytes: usize },
}

/// The shared end of a trace being written: streams reserve file ranges atomically and write
/// their blocks positionally, so no lock is shared between agents.
#[derive(Debug)]
pub struct TraceWriter {
    /// A temporary beside the trace's path until [`TraceWriter::finish`] renames it into place
    /// (see [`iolens_output::OutputFile::create_positional`]).
    out: iolens_output::OutputFile,
    next_offset: AtomicU64,
    dropped: AtomicU64,
}

impl TraceWriter {
    /// Starts a trace at `path`: a regular file or a new path (a FIFO, device or stdout is
    /// refused). Nothing appears at `path` until [`finish`](Self::finish).
    pub fn create(path: &Path, streams: &[String]) -> io::Result<Arc<TraceWriter>> {
        let mut header = Vec::with_capacity(64);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&(RECORD_SIZE as u32).to_le_bytes());
        header.extend_from_slice(&0u64.to_le_bytes()); // data_offset, patched below
        header.extend_from_slice(&CLOCK_MONOTONIC_NS.to_le_bytes());
        header.extend_from_slice(&(streams.len() as u32).to_le_bytes());
        for name in streams {
            let bytes = &name.as_bytes()[..name.len().min(u16::MAX as usize)];
            header.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            header.extend_from_slice(bytes);
        }
        header.resize(header.len().div_ceil(RECORD_SIZE) * RECORD_SIZE, 0);
        let data_offset = header.len() as u64;
        header[16..24].copy_from_slice(&data_offset.to_le_bytes());
        let out = iolens_output::OutputFile::create_positional(path)?;
        out.positional().expect("a positional output has a file").write_all_at(&header, 0)?;
        Ok(Arc::new(TraceWriter {
            out,
            next_offset: AtomicU64::new(data_offset),
            dropped: AtomicU64::new(0),
        }))
    }

    /// A per-stream buffer; records reach the file when it fills or is finished.
    pub fn buffer(self: &Arc<Self>) -> TraceBuffer {
        TraceBuffer {
            writer: Arc::clone(self),
            buf: Vec::with_capacity(RECORDS_PER_BLOCK * RECORD_SIZE),
            error: None,
        }
    }

    /// Records lost because a block could not be written.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Puts the trace in place once every buffer is finished or dropped (an error if one is
    /// still alive).
    pub fn finish(self: Arc<Self>) -> io::Result<()> {
        let writer =
            Arc::try_unwrap(self).map_err(|_| io::Error::other("a trace stream is still being written"))?;
        writer.out.commit()
    }

    fn write_block(&self, block: &[u8]) -> io::Result<()> {
        let at = self.next_offset.fetch_add(block.len() as u64, Ordering::Relaxed);
        let file = self.out.positional().expect("a positional output has a file");
        file.write_all_at(block, at).inspect_err(|_| {
            self.dropped.fetch_add((block.len() / RECORD_SIZE) as u64, Ordering::Relaxed);
        })
    }
}

/// One stream's buffer of encoded records.
#[derive(Debug)]
pub struct TraceBuffer {
    writer: Arc<TraceWriter>,
    buf: Vec<u8>,
    error: Option<io::Error>,
}

impl TraceBuffer {
    #[inline]
    pub fn push(&mut self, rec: &OpRecord) {
        self.buf.extend_from_slice(&rec.encode());
        if self.buf.len() >= RECORDS_PER_BLOCK * RECORD_SIZE {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() {
            if let Err(e) = self.writer.write_block(&self.buf) {
                self.error.get_or_insert(e);
            }
            self.buf.clear();
        }
    }

    /// Writes what is buffered; reports the first write error this stream met.
    pub fn finish(mut self) -> io::Result<()> {
        self.flush();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for TraceBuffer {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Reads a trace: the stream names, then records in file order.
pub struct TraceReader<R: Read = BufReader<File>> {
    pub streams: Vec<String>,
    input: R,
    /// Byte offset of the next record, for error messages.
    offset: u64,
    /// Set after an error: a reader does not resynchronize inside a corrupt file.
    failed: bool,
}

impl TraceReader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<TraceReader<BufReader<File>>, TraceError> {
        TraceReader::new(BufReader::with_capacity(1 << 20, File::open(path)?))
    }
}

fn header_err(offset: u64, message: impl Into<String>) -> TraceError {
    TraceError::BadHeader { offset, message: message.into() }
}

impl<R: Read> TraceReader<R> {
    /// Reads the header from `input`; records follow with [`TraceReader::next_record`].
    pub fn new(mut input: R) -> Result<TraceReader<R>, TraceError> {
        let mut fixed = [0u8; 32];
        let mut filled = 0;
        while filled < fixed.len() {
            match input.read(&mut fixed[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        if filled < 8 || &fixed[0..8] != MAGIC {
            return Err(TraceError::BadMagic);
        }
        if filled < fixed.len() {
            return Err(header_err(filled as u64, "the file ends inside the 32-byte header"));
        }
        let u32_at = |i: usize| u32::from_le_bytes([fixed[i], fixed[i + 1], fixed[i + 2], fixed[i + 3]]);
        let version = u32_at(8);
        if version != VERSION {
            return Err(TraceError::BadVersion(version));
        }
        let record_size = u32_at(12);
        if record_size as usize != RECORD_SIZE {
            return Err(header_err(12, format!("record size {record_size}, expected {RECORD_SIZE}")));
        }
        let mut data_offset = [0u8; 8];
        data_offset.copy_from_slice(&fixed[16..24]);
        let data_offset = u64::from_le_bytes(data_offset);
        if data_offset < 32 || data_offset % RECORD_SIZE as u64 != 0 {
            return Err(header_err(
                16,
                format!("data offset {data_offset} is not a multiple of 32 from 32 on"),
            ));
        }
        let table_len = data_offset - 32;
        if table_len > MAX_HEADER_BYTES {
            return Err(header_err(
                16,
                format!("data offset {data_offset}: a stream table over {MAX_HEADER_BYTES} bytes"),
            ));
        }
        // Reading through `take` grows the buffer with the bytes that exist, so a data offset
        // past the end of the file costs no more memory than the file has.
        let mut table = Vec::new();
        input.by_ref().take(table_len).read_to_end(&mut table)?;
        if (table.len() as u64) < table_len {
            return Err(header_err(
                32 + table.len() as u64,
                format!("the file ends inside the stream table (data offset {data_offset})"),
            ));
        }
        let count = u32_at(28);
        // Records name streams by a u16 index.
        if count > u16::MAX as u32 + 1 {
            return Err(header_err(28, format!("{count} streams; at most 65536 can be named")));
        }
        let mut streams = Vec::new();
        let mut at = 0usize;
        for i in 0..count {
            let name_at = 32 + at as u64;
            let Some(&[lo, hi]) = table.get(at..at.saturating_add(2)) else {
                return Err(header_err(name_at, format!("stream {i} of {count} lies past the stream table")));
            };
            let len = u16::from_le_bytes([lo, hi]) as usize;
            let name = table.get(at + 2..at + 2 + len).ok_or_else(|| {
                header_err(name_at, format!("stream name {i} ({len} bytes) overruns the stream table"))
            })?;
            streams.push(String::from_utf8_lossy(name).into_owned());
            at += 2 + len;
        }
        Ok(TraceReader { streams, input, offset: data_offset, failed: false })
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next record, `None` at the end of the file (or after an error).
    pub fn next_record(&mut self) -> Result<Option<OpRecord>, TraceError> {
        if self.failed {
            return Ok(None);
        }
        let r = self.read_record();
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn read_record(&mut self) -> Result<Option<OpRecord>, TraceError> {
        let mut b = [0u8; RECORD_SIZE];
        let mut filled = 0;
        while filled < RECORD_SIZE {
            match self.input.read(&mut b[filled..]) {
                Ok(0) if filled == 0 => return Ok(None),
                Ok(0) => return Err(TraceError::Truncated { offset: self.offset, bytes: filled }),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        let at = self.offset;
        self.offset = self.offset.saturating_add(RECORD_SIZE as u64);
        OpRecord::decode(&b, at).map(Some)
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<OpRecord, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u64, stream: u16) -> OpRecord {
        OpRecord {
            start_ns: i * 100,
            end_ns: i * 100 + 50,
            offset: i * 4096,
            bytes: 4096,
            stream,
            kind: if i % 3 == 0 { OpKind::Write } else { OpKind::Read },
            status: OpStatus::Complete,
        }
    }

    #[test]
    fn round_trip_from_concurrent_streams() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.iolt");
        let names = vec!["agent0".to_string(), "ägent-1".to_string(), "x".repeat(40)];
        let writer = TraceWriter::create(&path, &names).unwrap();
        let handles: Vec<_> = (0..3u16)
            .map(|s| {
                let mut buf = writer.buffer();
                std::thread::spawn(move || {
                    for i in 0..10_000 {
                        buf.push(&rec(i, s));
                    }
                    buf.finish().unwrap();
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(writer.dropped(), 0);
        assert!(!path.exists(), "the trace appears only when finished");
        writer.finish().unwrap();
        let reader = TraceReader::open(&path).unwrap();
        assert_eq!(reader.streams, names);
        let mut per_stream = [Vec::new(), Vec::new(), Vec::new()];
        for r in reader {
            let r = r.unwrap();
            per_stream[r.stream as usize].push(r);
        }
        for (s, recs) in per_stream.iter().enumerate() {
            let expected: Vec<_> = (0..10_000).map(|i| rec(i, s as u16)).collect();
            assert_eq!(recs, &expected, "stream {s} keeps its order");
        }
    }

    #[test]
    fn rejects_foreign_and_truncated_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junk");
        std::fs::write(&path, b"hello, this is not a trace at all......").unwrap();
        assert!(matches!(TraceReader::open(&path), Err(TraceError::BadMagic)));

        let path = dir.path().join("cut.iolt");
        let writer = TraceWriter::create(&path, &["a".into()]).unwrap();
        let mut buf = writer.buffer();
        buf.push(&rec(1, 0));
        buf.finish().unwrap();
        writer.finish().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 5).unwrap();
        let mut reader = TraceReader::open(&path).unwrap();
        let data_offset = reader.offset();
        let err = reader.next_record().unwrap_err();
        assert!(matches!(err, TraceError::Truncated { offset, bytes: 27 } if offset == data_offset), "{err}");
        assert!(err.to_string().contains(&format!("offset {data_offset}")), "{err}");
        assert!(reader.next_record().unwrap().is_none(), "no records after the cut");
    }

    #[test]
    fn rejects_bad_kind() {
        let mut b = rec(1, 0).encode();
        b[30] = 9;
        let err = OpRecord::decode(&b, 96).unwrap_err();
        assert_eq!(err.to_string(), "corrupt record at offset 96: invalid kind 9");
    }
}

#[cfg(test)]
mod hostile_input {
    use super::*;

    fn header(data_offset: u64, streams: u32) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&(RECORD_SIZE as u32).to_le_bytes());
        h.extend_from_slice(&data_offset.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&streams.to_le_bytes());
        h
    }

    #[test]
    fn huge_data_offset_is_an_error_not_an_allocation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.iolt");
        std::fs::write(&path, header(100_000_000_000 * 32, 1)).unwrap();
        let err = TraceReader::open(&path).err().expect("a 3 TB header in a 32-byte file is corrupt");
        assert!(err.to_string().contains("offset 16"), "{err}");
    }

    #[test]
    fn stream_table_overruns_name_their_offset() {
        let mut t = header(64, 70_000);
        t.resize(64, 0);
        let err = TraceReader::new(&t[..]).err().unwrap();
        assert!(err.to_string().contains("at offset 28"), "{err}");

        let mut t = header(64, 2);
        t.extend_from_slice(&3u16.to_le_bytes());
        t.extend_from_slice(b"abc");
        t.extend_from_slice(&40u16.to_le_bytes());
        t.resize(64, 0);
        let err = TraceReader::new(&t[..]).err().unwrap();
        assert_eq!(
            err.to_string(),
            "corrupt trace header at offset 37: stream name 1 (40 bytes) overruns the stream table"
        );
        let err = TraceReader::new(&header(64, 0)[..20]).err().unwrap();
        assert!(err.to_string().contains("at offset 20"), "{err}");
    }

    #[test]
    fn bad_kind_names_the_record_offset() {
        let mut t = header(32, 0);
        t.extend_from_slice(&rec_bytes(0));
        let mut bad = rec_bytes(0);
        bad[30] = 7;
        t.extend_from_slice(&bad);
        let mut r = TraceReader::new(&t[..]).unwrap();
        assert!(r.next_record().unwrap().is_some());
        let err = r.next_record().unwrap_err();
        assert_eq!(err.to_string(), "corrupt record at offset 64: invalid kind 7");
    }

    fn rec_bytes(i: u64) -> [u8; RECORD_SIZE] {
        OpRecord {
            start_ns: i,
            end_ns: i + 1,
            offset: 0,
            bytes: 1,
            stream: 0,
            kind: OpKind::Read,
            status: OpStatus::Complete,
        }
        .encode()
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
                                       data_offset in 0u64..200, streams in 0u32..8) {
            let mut t = header(data_offset, streams);
            t.extend_from_slice(&tail);
            if let Ok(r) = TraceReader::new(&t[..]) {
                for rec in r.take(100) {
                    let _ = rec;
                }
            }
        }
    }
}
