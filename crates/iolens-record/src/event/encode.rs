//! Writing event streams: the frame encoders (event, path, drops, excluded calls, lost events,
//! block headers, compact events) and [`EventWriter`], which puts them into a stream.

use std::io::{self, Write};

use super::{
    Excluded, IoEvent, Predictor, BLOCK_HEADER_LEN, COMPACT_EVENT_MAX_LEN, COMPACT_FIELDS, EVENT_FRAME_LEN,
    EVENT_MAGIC, EXCLUDED_FRAME_LEN, LOST_FRAME_LEN, SHORT_EVENT_LEN, TAG_BLOCK, TAG_COMPACT, TAG_DROPPED,
    TAG_EVENT, TAG_EXCLUDED, TAG_LOST, TAG_PATH, TAG_SHORT,
};

/// Encodes a lost-events frame: `count` events, lost by a write that failed with `errno`.
pub fn encode_lost(count: u64, errno: u32) -> [u8; LOST_FRAME_LEN] {
    let mut out = [0u8; LOST_FRAME_LEN];
    out[0] = TAG_LOST;
    out[1..9].copy_from_slice(&count.to_le_bytes());
    out[9..13].copy_from_slice(&errno.to_le_bytes());
    out
}

/// Encodes an excluded-calls frame.
pub fn encode_excluded(reason: Excluded, calls: u64, bytes: u64) -> [u8; EXCLUDED_FRAME_LEN] {
    let mut out = [0u8; EXCLUDED_FRAME_LEN];
    out[0] = TAG_EXCLUDED;
    out[1] = reason as u8;
    out[2..10].copy_from_slice(&calls.to_le_bytes());
    out[10..18].copy_from_slice(&bytes.to_le_bytes());
    out
}

impl IoEvent {
    #[inline]
    pub(super) fn encode(&self, out: &mut [u8; EVENT_FRAME_LEN]) {
        out[0] = TAG_EVENT;
        out[1..5].copy_from_slice(&self.pid.to_le_bytes());
        out[5..9].copy_from_slice(&self.tid.to_le_bytes());
        out[9..13].copy_from_slice(&self.file.to_le_bytes());
        out[13] = self.op as u8;
        out[14] = self.layer as u8;
        out[15..17].copy_from_slice(&self.flags.to_le_bytes());
        out[17..25].copy_from_slice(&self.offset.to_le_bytes());
        out[25..33].copy_from_slice(&self.requested.to_le_bytes());
        out[33..41].copy_from_slice(&self.result.to_le_bytes());
        out[41..49].copy_from_slice(&self.start_ns.to_le_bytes());
        out[49..57].copy_from_slice(&self.end_ns.to_le_bytes());
        out[57..65].fill(0);
    }
}

/// Writes an event stream.
pub struct EventWriter<W: Write> {
    out: W,
}

impl<W: Write> EventWriter<W> {
    pub fn new(mut out: W) -> io::Result<EventWriter<W>> {
        out.write_all(EVENT_MAGIC)?;
        Ok(EventWriter { out })
    }

    pub fn path(&mut self, id: u32, path: &str) -> io::Result<()> {
        let bytes = &path.as_bytes()[..path.len().min(u16::MAX as usize)];
        self.out.write_all(&[TAG_PATH])?;
        self.out.write_all(&id.to_le_bytes())?;
        self.out.write_all(&(bytes.len() as u16).to_le_bytes())?;
        self.out.write_all(bytes)
    }

    pub fn event(&mut self, e: &IoEvent) -> io::Result<()> {
        let mut buf = [0u8; EVENT_FRAME_LEN];
        e.encode(&mut buf);
        self.out.write_all(&buf)
    }

    pub fn dropped(&mut self, count: u64) -> io::Result<()> {
        self.out.write_all(&[TAG_DROPPED])?;
        self.out.write_all(&count.to_le_bytes())
    }

    pub fn excluded(&mut self, reason: Excluded, calls: u64, bytes: u64) -> io::Result<()> {
        self.out.write_all(&encode_excluded(reason, calls, bytes))
    }

    /// Starts a block of compact events (see the stream layout).
    pub fn block(&mut self, pid: u32, tid: u32, from: (u64, u64), to: (u64, u64)) -> io::Result<Predictor> {
        self.out.write_all(&encode_block_header(pid, tid, from, to))?;
        Ok(Predictor::new(from.0))
    }

    /// Writes `e`, timed in ticks of the block `predictor` was returned for, as a compact event.
    pub fn compact_event(&mut self, e: &IoEvent, predictor: &mut Predictor) -> io::Result<()> {
        let mut buf = [0u8; COMPACT_EVENT_MAX_LEN];
        let len = encode_compact(e, predictor, &mut buf);
        self.out.write_all(&buf[..len])
    }

    pub fn lost(&mut self, count: u64, errno: u32) -> io::Result<()> {
        self.out.write_all(&encode_lost(count, errno))
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Encodes one event frame into `out` (for writers that manage their own buffers).
#[inline]
pub fn encode_event(e: &IoEvent, out: &mut [u8; EVENT_FRAME_LEN]) {
    e.encode(out);
}

/// Encodes a block header: the compact events that follow are thread `tid` of process `pid`,
/// timed in ticks mapped by the segment from `from` to `to` (`(tick, ns)` points).
pub fn encode_block_header(pid: u32, tid: u32, from: (u64, u64), to: (u64, u64)) -> [u8; BLOCK_HEADER_LEN] {
    let mut out = [0u8; BLOCK_HEADER_LEN];
    out[0] = TAG_BLOCK;
    out[1..5].copy_from_slice(&pid.to_le_bytes());
    out[5..9].copy_from_slice(&tid.to_le_bytes());
    out[9..17].copy_from_slice(&from.0.to_le_bytes());
    out[17..25].copy_from_slice(&from.1.to_le_bytes());
    out[25..33].copy_from_slice(&to.0.to_le_bytes());
    out[33..41].copy_from_slice(&to.1.to_le_bytes());
    out
}

#[inline(always)]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Encodes `e` as a compact event into `out`; its length. `e`'s timestamps are ticks of the
/// block `predictor` belongs to; its pid and tid are the block's and are not written.
///
/// No branch depends on the values: each field is stored as 8 bytes, and the next one starts
/// where the value's significant bytes end.
#[inline(always)]
pub fn encode_compact(
    e: &IoEvent,
    predictor: &mut Predictor,
    out: &mut [u8; COMPACT_EVENT_MAX_LEN],
) -> usize {
    let values: [u64; COMPACT_FIELDS] = [
        (e.file ^ predictor.file) as u64,
        zigzag(e.offset.wrapping_sub(predictor.next_offset) as i64),
        e.requested ^ predictor.requested,
        zigzag(e.result.wrapping_sub(e.requested as i64)),
        zigzag(e.start_ns.wrapping_sub(predictor.last_end) as i64),
        zigzag(e.end_ns.wrapping_sub(e.start_ns) as i64),
    ];
    let gap = e.start_ns.wrapping_sub(predictor.last_end);
    let duration = e.end_ns.wrapping_sub(e.start_ns);
    let continues = (e.file ^ predictor.file) as u64
        | (e.offset ^ predictor.next_offset)
        | (e.requested ^ predictor.requested)
        | (e.result as u64 ^ e.requested)
        | e.flags as u64
        | (gap | duration) >> 16;
    predictor.advance(e.file, e.offset, e.requested, e.result, e.end_ns);
    if continues == 0 {
        let head =
            [TAG_SHORT | (e.layer as u8) << 4 | e.op as u8, gap as u8, (gap >> 8) as u8, duration as u8];
        out[..4].copy_from_slice(&head);
        out[4] = (duration >> 8) as u8;
        return SHORT_EVENT_LEN;
    }
    let flagged = e.flags != 0;
    out[0] = TAG_COMPACT | (flagged as u8) << 6 | (e.layer as u8) << 4 | e.op as u8;
    let mut lens = 0u32;
    let mut at = 4;
    for (k, v) in values.into_iter().enumerate() {
        let len = (u64::BITS - v.leading_zeros()).div_ceil(8);
        // SAFETY: field k starts at most at 4 + 8k, so its 8 bytes end by 4 + 8 * 6, inside
        // `out`.
        unsafe { out.as_mut_ptr().add(at).cast::<[u8; 8]>().write_unaligned(v.to_le_bytes()) };
        at += len as usize;
        lens |= len << (4 * k);
    }
    // SAFETY: at most 4 + 8 * 6 here: the flags' 2 bytes end by COMPACT_EVENT_MAX_LEN.
    unsafe { out.as_mut_ptr().add(at).cast::<[u8; 2]>().write_unaligned(e.flags.to_le_bytes()) };
    at += 2 * flagged as usize;
    out[1..4].copy_from_slice(&lens.to_le_bytes()[..3]);
    at
}
