//! A region's decompressed bytes: zlib (a run of streams), bzip2 or stored, and never more
//! than [`MAX_INFLATION`] times the compressed size, so a decompression bomb is refused.

use std::io::{self, BufRead, BufReader, Read};

use bzip2::bufread::MultiBzDecoder;
use flate2::{Decompress, FlushDecompress, Status};

/// A compressed region may decompress to at most this many times its size, and to this floor
/// whatever its size. Every Darshan record carries an 8-byte hash of its file name, so real
/// regions shrink ~50× at most (the public sample logs: 52×); deflate cannot exceed ~1032×, but a
/// bzip2 stream of zeros reaches a million, and streams may follow one another without end.
pub(super) const MAX_INFLATION: u64 = 1024;
pub(super) const MIN_REGION_LIMIT: u64 = 64 << 20;

/// A region compressed as zlib streams one after another (darshan-runtime starts a new
/// stream for each flush): decodes them in turn until the input ends. One decompressor serves
/// every stream of every region, reset between them: a log has hundreds of streams, and a new
/// decompressor (its 32 KiB window and tables) for each was most of the time a small log took.
pub(super) struct ZlibStreams<'d, R: BufRead> {
    pub(super) input: R,
    pub(super) state: &'d mut Decompress,
    /// The current stream has ended: the next byte, if any, starts another.
    pub(super) stream_ended: bool,
}

impl<'d, R: BufRead> ZlibStreams<'d, R> {
    pub(super) fn new(input: R, state: &'d mut Decompress) -> Self {
        state.reset(true);
        ZlibStreams { input, state, stream_ended: false }
    }
}

impl<R: BufRead> Read for ZlibStreams<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let input = self.input.fill_buf()?;
            if self.stream_ended {
                if input.is_empty() {
                    return Ok(0);
                }
                self.state.reset(true);
                self.stream_ended = false;
            }
            let eof = input.is_empty();
            let (in_before, out_before) = (self.state.total_in(), self.state.total_out());
            let flush = if eof { FlushDecompress::Finish } else { FlushDecompress::None };
            let status = self
                .state
                .decompress(input, buf, flush)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("corrupt zlib data: {e}")))?;
            let consumed = (self.state.total_in() - in_before) as usize;
            let produced = (self.state.total_out() - out_before) as usize;
            self.input.consume(consumed);
            self.stream_ended = status == Status::StreamEnd;
            if produced > 0 {
                return Ok(produced);
            }
            if eof {
                // A stream cut short ends the data: the record it leaves incomplete is reported
                // by whoever reads the records.
                return Ok(0);
            }
            if consumed == 0 && !self.stream_ended {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt zlib data: no progress"));
            }
        }
    }
}

/// Decompressed data that may not outgrow `left` bytes: past it, reading fails (a
/// decompression bomb) instead of going on for as long as the streams repeat.
pub(super) struct Inflation<R: Read> {
    pub(super) inner: R,
    pub(super) left: u64,
    pub(super) limit: u64,
    pub(super) compressed: u64,
}

impl<R: Read> Read for Inflation<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // Exactly at the limit is allowed; one byte more is not.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "its {} compressed bytes decompress to more than {} MiB (over {MAX_INFLATION}x): a decompression bomb, or corrupt",
                        self.compressed,
                        self.limit >> 20
                    ),
                )),
            };
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// The decompressed bytes of one region of `compressed` bytes.
pub(super) fn region_reader<'r>(
    compression: u8,
    raw: &'r mut dyn Read,
    compressed: u64,
    zlib: &'r mut Decompress,
) -> Box<dyn Read + 'r> {
    let limit = compressed.saturating_mul(MAX_INFLATION).max(MIN_REGION_LIMIT);
    let bounded = |inner: Box<dyn Read + 'r>| -> Box<dyn Read + 'r> {
        Box::new(Inflation { inner, left: limit, limit, compressed })
    };
    match compression {
        0 => bounded(Box::new(ZlibStreams::new(BufReader::new(raw), zlib))),
        // darshan-util ends a bzip2 stream at each flush and starts another.
        1 => bounded(Box::new(MultiBzDecoder::new(BufReader::new(raw)))),
        _ => Box::new(raw),
    }
}
