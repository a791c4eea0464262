//! Reading event streams: [`EventReader`] decodes every frame version 1 and 2 streams hold,
//! and refuses truncated or corrupt ones with the offset of the bad frame.

use std::io::{self, BufRead};

use super::{
    EventError, Excluded, ExcludedCounts, IoEvent, IoOp, Layer, PathTable, Predictor, TickLine,
    BLOCK_HEADER_LEN, COMPACT_EVENT_MAX_LEN, COMPACT_FIELDS, COMPACT_FLAGGED, EVENT_FRAME_LEN, EVENT_MAGIC,
    EVENT_MAGIC_PREFIX, EVENT_MAGIC_V1, EXCLUDED_FRAME_LEN, LOST_FRAME_LEN, SHORT_EVENT_LEN, TAG_BLOCK,
    TAG_COMPACT, TAG_DROPPED, TAG_EVENT, TAG_EXCLUDED, TAG_LOST, TAG_PATH, TAG_SHORT,
};

impl IoEvent {
    /// Decodes the body of the event frame that starts at byte `offset` (for error messages).
    pub(super) fn decode(b: &[u8; EVENT_FRAME_LEN - 1], offset: u64) -> Result<IoEvent, EventError> {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(v)
        };
        let corrupt = |what: &str, value: u8| EventError::Corrupt {
            offset,
            message: format!("invalid {what} {value}"),
        };
        Ok(IoEvent {
            pid: u32_at(0),
            tid: u32_at(4),
            file: u32_at(8),
            op: IoOp::from_u8(b[12]).ok_or_else(|| corrupt("operation", b[12]))?,
            layer: Layer::from_u8(b[13]).ok_or_else(|| corrupt("layer", b[13]))?,
            flags: u16::from_le_bytes([b[14], b[15]]),
            offset: u64_at(16),
            requested: u64_at(24),
            result: u64_at(32) as i64,
            start_ns: u64_at(40),
            end_ns: u64_at(48),
        })
    }
}

#[inline(always)]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Reads an event stream: events in stream order, with the path table filled as it goes.
pub struct EventReader<R: BufRead> {
    input: R,
    pub paths: PathTable,
    /// Events the writer reported it could not record.
    pub dropped: u64,
    /// Calls the writer left out, and their bytes, by reason.
    pub excluded: ExcludedCounts,
    /// Why the writer lost events: the errno of its last failed write, if one failed.
    pub lost_errno: Option<u32>,
    /// Byte offset of the next frame, for error messages.
    offset: u64,
    /// Set after an error: a reader does not resynchronize inside a corrupt stream.
    failed: bool,
    /// The stream's format version (1 or 2).
    version: u8,
    /// The block the compact events read now belong to (version 2).
    block: Option<Block>,
}

/// A block of compact events: whose they are, their clock, and the decoder's predictor.
#[derive(Debug, Clone, Copy)]
struct Block {
    pid: u32,
    tid: u32,
    line: TickLine,
    predictor: Predictor,
}

impl<R: BufRead> EventReader<R> {
    pub fn new(mut input: R) -> Result<EventReader<R>, EventError> {
        let mut magic = [0u8; 8];
        input.read_exact(&mut magic).map_err(|_| EventError::BadMagic)?;
        let version = match &magic {
            m if m == EVENT_MAGIC => 2,
            m if m == EVENT_MAGIC_V1 => 1,
            m if m.starts_with(EVENT_MAGIC_PREFIX) => {
                return Err(EventError::UnsupportedVersion(String::from_utf8_lossy(&m[6..]).into_owned()))
            }
            _ => return Err(EventError::BadMagic),
        };
        Ok(EventReader {
            version,
            block: None,
            input,
            paths: PathTable::default(),
            dropped: 0,
            excluded: Default::default(),
            lost_errno: None,
            offset: 8,
            failed: false,
        })
    }

    /// Byte offset of the next frame.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Fills `buf` with the rest of the frame that starts at `frame`.
    fn fill(&mut self, buf: &mut [u8], frame: u64) -> Result<(), EventError> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => EventError::Truncated { offset: frame },
            _ => EventError::Io(e),
        })?;
        self.offset = self.offset.saturating_add(buf.len() as u64);
        Ok(())
    }

    /// The next event, `None` at the end of the stream (or after an error).
    pub fn next_event(&mut self) -> Result<Option<IoEvent>, EventError> {
        if self.failed {
            return Ok(None);
        }
        let r = self.read_event();
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn read_event(&mut self) -> Result<Option<IoEvent>, EventError> {
        loop {
            if let Some(event) = self.buffered_event() {
                return event.map(Some);
            }
            let frame = self.offset;
            let mut tag = [0u8; 1];
            match self.input.read(&mut tag) {
                Ok(0) => return Ok(None),
                Ok(_) => self.offset = self.offset.saturating_add(1),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
            match tag[0] {
                TAG_EVENT => {
                    let mut b = [0u8; EVENT_FRAME_LEN - 1];
                    self.fill(&mut b, frame)?;
                    return IoEvent::decode(&b, frame).map(Some);
                }
                TAG_PATH => {
                    let mut head = [0u8; 6];
                    self.fill(&mut head, frame)?;
                    let id = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
                    // A u16 length: at most 64 KiB, whatever the file says.
                    let len = u16::from_le_bytes([head[4], head[5]]) as usize;
                    let mut name = vec![0u8; len];
                    self.fill(&mut name, frame)?;
                    self.paths.insert(id, String::from_utf8_lossy(&name).into_owned());
                }
                TAG_DROPPED => {
                    let mut b = [0u8; 8];
                    self.fill(&mut b, frame)?;
                    self.dropped = self.dropped.saturating_add(u64::from_le_bytes(b));
                }
                TAG_LOST => {
                    let mut b = [0u8; LOST_FRAME_LEN - 1];
                    self.fill(&mut b, frame)?;
                    self.dropped =
                        self.dropped.saturating_add(u64::from_le_bytes(b[..8].try_into().unwrap()));
                    let errno = u32::from_le_bytes(b[8..].try_into().unwrap());
                    if errno != 0 {
                        self.lost_errno = Some(errno);
                    }
                }
                TAG_BLOCK if self.version >= 2 => {
                    let mut b = [0u8; BLOCK_HEADER_LEN - 1];
                    self.fill(&mut b, frame)?;
                    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
                    let (from, to) = ((u64_at(8), u64_at(16)), (u64_at(24), u64_at(32)));
                    self.block = Some(Block {
                        pid: u32::from_le_bytes(b[0..4].try_into().unwrap()),
                        tid: u32::from_le_bytes(b[4..8].try_into().unwrap()),
                        line: TickLine::between(from, to),
                        predictor: Predictor::new(from.0),
                    });
                }
                tag if tag & TAG_COMPACT != 0 && self.version >= 2 => {
                    return self.read_compact(tag, frame).map(Some);
                }
                tag if tag & TAG_SHORT != 0 && self.version >= 2 => {
                    return self.read_short(tag, frame).map(Some);
                }
                TAG_EXCLUDED => {
                    let mut b = [0u8; EXCLUDED_FRAME_LEN - 1];
                    self.fill(&mut b, frame)?;
                    let reason = Excluded::from_u8(b[0]).ok_or_else(|| EventError::Corrupt {
                        offset: frame,
                        message: format!("invalid exclusion reason {}", b[0]),
                    })?;
                    let counts = &mut self.excluded[reason as usize];
                    counts.0 = counts.0.saturating_add(u64::from_le_bytes(b[1..9].try_into().unwrap()));
                    counts.1 = counts.1.saturating_add(u64::from_le_bytes(b[9..17].try_into().unwrap()));
                }
                other => {
                    return Err(EventError::Corrupt {
                        offset: frame,
                        message: format!("invalid frame tag {other}"),
                    })
                }
            }
        }
    }
}

impl<R: BufRead> EventReader<R> {
    /// The compact or short event that starts the buffered input, decoded in place, when the
    /// whole frame (and the slack its decoding reads) is in the buffer: most frames are, and
    /// this spares the copies of reading them piece by piece.
    #[inline]
    fn buffered_event(&mut self) -> Option<Result<IoEvent, EventError>> {
        let buf = self.input.fill_buf().ok()?;
        let (&tag, _) = buf.split_first()?;
        if self.version < 2 || buf.len() < COMPACT_EVENT_MAX_LEN + DECODE_SLACK {
            return None;
        }
        let frame = self.offset;
        let decoded = if tag & TAG_COMPACT != 0 {
            decode_compact(self.block.as_mut(), &buf[..COMPACT_EVENT_MAX_LEN + DECODE_SLACK], frame)
        } else if tag & TAG_SHORT != 0 {
            decode_short(self.block.as_mut(), tag, buf[1..SHORT_EVENT_LEN].try_into().unwrap(), frame)
                .map(|e| (e, SHORT_EVENT_LEN))
        } else {
            return None;
        };
        Some(decoded.map(|(e, len)| {
            self.input.consume(len);
            self.offset = self.offset.saturating_add(len as u64);
            e
        }))
    }

    /// Reads the rest of the short compact event whose tag byte `tag` was at `frame`.
    fn read_short(&mut self, tag: u8, frame: u64) -> Result<IoEvent, EventError> {
        op_of(tag, frame)?;
        let mut b = [0u8; SHORT_EVENT_LEN - 1];
        self.fill(&mut b, frame)?;
        decode_short(self.block.as_mut(), tag, &b, frame)
    }

    /// Reads the rest of the compact event whose tag byte `tag` was at `frame`.
    fn read_compact(&mut self, tag: u8, frame: u64) -> Result<IoEvent, EventError> {
        op_of(tag, frame)?;
        // The frame again, as `decode_compact` takes it: tag, lengths, fields, slack.
        let mut bytes = [0u8; COMPACT_EVENT_MAX_LEN + DECODE_SLACK];
        bytes[0] = tag;
        self.fill(&mut bytes[1..4], frame)?;
        let lens = compact_lens(&bytes, frame)?;
        let flags_len = if tag & COMPACT_FLAGGED != 0 { 2 } else { 0 };
        let body_len = lens.iter().sum::<usize>() + flags_len;
        self.fill(&mut bytes[4..4 + body_len], frame)?;
        decode_compact(self.block.as_mut(), &bytes, frame).map(|(e, _)| e)
    }
}

/// Bytes past a compact frame's end that decoding it may read: each field is read as 8 bytes
/// and masked to its length.
const DECODE_SLACK: usize = 8;

/// The operation and layer a compact or short event's tag names.
fn op_of(tag: u8, frame: u64) -> Result<(IoOp, Layer), EventError> {
    let op = IoOp::from_u8(tag & 0x0f).ok_or_else(|| EventError::Corrupt {
        offset: frame,
        message: format!("invalid operation {}", tag & 0x0f),
    })?;
    Ok((op, Layer::from_u8(tag >> 4 & 0x03).expect("two bits name a layer")))
}

/// The field lengths of the compact frame `bytes` (tag first).
fn compact_lens(bytes: &[u8], frame: u64) -> Result<[usize; COMPACT_FIELDS], EventError> {
    let lens_word = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], 0]);
    let lens: [usize; COMPACT_FIELDS] = std::array::from_fn(|k| (lens_word >> (4 * k) & 0xf) as usize);
    match lens.iter().find(|&&n| n > 8) {
        Some(bad) => {
            Err(EventError::Corrupt { offset: frame, message: format!("invalid field length {bad}") })
        }
        None => Ok(lens),
    }
}

fn no_block(frame: u64) -> EventError {
    EventError::Corrupt { offset: frame, message: "compact event before any block header".into() }
}

/// Decodes the short event of `block` whose tag is `tag` and whose other bytes are `b`.
#[inline(always)]
fn decode_short(block: Option<&mut Block>, tag: u8, b: &[u8; 4], frame: u64) -> Result<IoEvent, EventError> {
    let (op, layer) = op_of(tag, frame)?;
    let block = block.ok_or_else(|| no_block(frame))?;
    let p = &mut block.predictor;
    let (file, offset, requested) = (p.file, p.next_offset, p.requested);
    let start = p.last_end.wrapping_add(u16::from_le_bytes([b[0], b[1]]) as u64);
    let end = start.wrapping_add(u16::from_le_bytes([b[2], b[3]]) as u64);
    p.advance(file, offset, requested, requested as i64, end);
    Ok(IoEvent {
        pid: block.pid,
        tid: block.tid,
        file,
        op,
        layer,
        flags: 0,
        offset,
        requested,
        result: requested as i64,
        start_ns: block.line.ns(start),
        end_ns: block.line.ns(end),
    })
}

/// Decodes the compact event of `block` that `bytes` starts with (its tag first, then
/// [`DECODE_SLACK`] bytes or more past its end); the event and the frame's length.
#[inline(always)]
fn decode_compact(
    block: Option<&mut Block>,
    bytes: &[u8],
    frame: u64,
) -> Result<(IoEvent, usize), EventError> {
    let tag = bytes[0];
    let (op, layer) = op_of(tag, frame)?;
    let lens = compact_lens(bytes, frame)?;
    let mut at = 4;
    let values: [u64; COMPACT_FIELDS] = std::array::from_fn(|k| {
        let word = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let v = if lens[k] == 8 { word } else { word & ((1u64 << (8 * lens[k])) - 1) };
        at += lens[k];
        v
    });
    let flags = if tag & COMPACT_FLAGGED != 0 {
        at += 2;
        u16::from_le_bytes([bytes[at - 2], bytes[at - 1]])
    } else {
        0
    };
    let block = block.ok_or_else(|| no_block(frame))?;
    let p = &mut block.predictor;
    let file = values[0] as u32 ^ p.file;
    if values[0] > u32::MAX as u64 {
        return Err(EventError::Corrupt {
            offset: frame,
            message: format!("invalid file id delta {}", values[0]),
        });
    }
    let offset = p.next_offset.wrapping_add(unzigzag(values[1]) as u64);
    let requested = values[2] ^ p.requested;
    let result = (requested as i64).wrapping_add(unzigzag(values[3]));
    let start = p.last_end.wrapping_add(unzigzag(values[4]) as u64);
    let end = start.wrapping_add(unzigzag(values[5]) as u64);
    p.advance(file, offset, requested, result, end);
    let event = IoEvent {
        pid: block.pid,
        tid: block.tid,
        file,
        op,
        layer,
        flags,
        offset,
        requested,
        result,
        start_ns: block.line.ns(start),
        end_ns: block.line.ns(end),
    };
    Ok((event, at))
}

impl<R: BufRead> Iterator for EventReader<R> {
    type Item = Result<IoEvent, EventError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}
