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
use std::io::{self, BufReader, Read, Write};
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

    pub fn decode(b: &[u8; RECORD_SIZE]) -> Result<OpRecord, TraceError> {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        Ok(OpRecord {
            start_ns: u64_at(0),
            end_ns: u64_at(8),
            offset: u64_at(16),
            bytes: u32::from_le_bytes(b[24..28].try_into().unwrap()),
            stream: u16::from_le_bytes(b[28..30].try_into().unwrap()),
            kind: OpKind::from_u8(b[30]).ok_or(TraceError::BadField("kind", b[30]))?,
            status: OpStatus::from_u8(b[31]).ok_or(TraceError::BadField("status", b[31]))?,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not an iolens trace (bad magic); expected a file written by `iolens run --trace`")]
    BadMagic,
    #[error("unsupported trace version {0} (this iolens reads version {VERSION})")]
    BadVersion(u32),
    #[error("corrupt trace header: {0}")]
    BadHeader(&'static str),
    #[error("corrupt record: invalid {0} value {1}")]
    BadField(&'static str, u8),
    #[error("trace ends inside a record ({0} trailing bytes): the writer was cut off")]
    Truncated(usize),
}

/// The shared end of a trace being written: streams reserve file ranges atomically and write
/// their blocks positionally, so no lock is shared between agents.
#[derive(Debug)]
pub struct TraceWriter {
    file: File,
    next_offset: AtomicU64,
    dropped: AtomicU64,
}

impl TraceWriter {
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
        let mut file = File::create(path)?;
        file.write_all(&header)?;
        Ok(Arc::new(TraceWriter {
            file,
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

    fn write_block(&self, block: &[u8]) -> io::Result<()> {
        let at = self.next_offset.fetch_add(block.len() as u64, Ordering::Relaxed);
        self.file.write_all_at(block, at).inspect_err(|_| {
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
pub struct TraceReader {
    pub streams: Vec<String>,
    input: BufReader<File>,
}

impl TraceReader {
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        let mut input = BufReader::with_capacity(1 << 20, File::open(path)?);
        let mut fixed = [0u8; 32];
        input.read_exact(&mut fixed).map_err(|_| TraceError::BadMagic)?;
        if &fixed[0..8] != MAGIC {
            return Err(TraceError::BadMagic);
        }
        let u32_at = |i: usize| u32::from_le_bytes(fixed[i..i + 4].try_into().unwrap());
        let version = u32_at(8);
        if version != VERSION {
            return Err(TraceError::BadVersion(version));
        }
        if u32_at(12) as usize != RECORD_SIZE {
            return Err(TraceError::BadHeader("record size"));
        }
        let data_offset = u64::from_le_bytes(fixed[16..24].try_into().unwrap());
        if data_offset < 32 || data_offset % RECORD_SIZE as u64 != 0 {
            return Err(TraceError::BadHeader("data offset"));
        }
        let mut table = vec![0u8; data_offset as usize - 32];
        input.read_exact(&mut table).map_err(|_| TraceError::BadHeader("stream table cut off"))?;
        let mut streams = Vec::new();
        let mut at = 0;
        for _ in 0..u32_at(28) {
            let len_bytes = table.get(at..at + 2).ok_or(TraceError::BadHeader("stream table"))?;
            let len = u16::from_le_bytes(len_bytes.try_into().unwrap()) as usize;
            let name = table.get(at + 2..at + 2 + len).ok_or(TraceError::BadHeader("stream name"))?;
            streams.push(String::from_utf8_lossy(name).into_owned());
            at += 2 + len;
        }
        Ok(TraceReader { streams, input })
    }

    /// The next record, `None` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<OpRecord>, TraceError> {
        let mut b = [0u8; RECORD_SIZE];
        let mut filled = 0;
        while filled < RECORD_SIZE {
            match self.input.read(&mut b[filled..]) {
                Ok(0) if filled == 0 => return Ok(None),
                Ok(0) => return Err(TraceError::Truncated(filled)),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        OpRecord::decode(&b).map(Some)
    }
}

impl Iterator for TraceReader {
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
        drop(writer);
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 5).unwrap();
        let mut reader = TraceReader::open(&path).unwrap();
        assert!(matches!(reader.next_record(), Err(TraceError::Truncated(27))));
    }

    #[test]
    fn rejects_bad_kind() {
        let mut b = rec(1, 0).encode();
        b[30] = 9;
        assert!(matches!(OpRecord::decode(&b), Err(TraceError::BadField("kind", 9))));
    }
}
