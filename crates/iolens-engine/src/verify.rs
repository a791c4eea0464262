//! Data verification: the block format, filling blocks before a write and checking them after a
//! read.
//!
//! A verified block (one request of the agent's fixed size) is laid out as
//!
//! ```text
//! 0        8        16           24            32      36   37       44          48
//! | magic  | offset | generation | payload sum | size  |kind| zero   | header crc |
//! 48                                      size-16             size-8       size
//! | pattern(offset, generation) ...       | generation        | offset      |
//! ```
//!
//! all integers little-endian. The header checksum is CRC-32C of bytes 0..44. The payload
//! (bytes 48..size) is a deterministic function of (offset, generation) followed by a trailer
//! repeating both, so the expected content of any block is known and a mismatch can name its
//! first differing byte. `crc32c` and `xxh3` store a checksum of the payload in the header and
//! check against it (regenerating the payload only on a mismatch); `pattern` stores none and
//! compares the payload with the regenerated one byte for byte. A reader checks each block by
//! the method its header names.
//!
//! What a check reports, in this order: `short` (fewer bytes than a block: end of file),
//! `unwritten` (no block header: never written with verification), `torn` (header and trailer
//! name different writes, or the trailer names this block under a broken header), `corrupt`
//! (header checksum, or payload, wrong), `misplaced` (a valid block of another offset or size),
//! `stale` / `newer` (a valid block of an older / newer generation than expected).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use iolens_record::clock::now_ns;
use iolens_workload::VerifyKind;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::buffers::AlignedBuffers;

pub const HEADER_LEN: usize = 48;
pub const TRAILER_LEN: usize = 16;
pub const MAGIC: [u8; 8] = *b"IOLNSBLK";
/// Failures kept with their details per agent; all are counted.
pub const MAX_FAILURES: usize = 16;

const _: () = assert!((HEADER_LEN + TRAILER_LEN) as u64 == iolens_workload::limits::MIN_VERIFY_BLOCK);

fn kind_code(kind: VerifyKind) -> u8 {
    match kind {
        VerifyKind::Crc32c => 1,
        VerifyKind::Xxh3 => 2,
        VerifyKind::Pattern => 3,
    }
}

fn kind_of(code: u8) -> Option<VerifyKind> {
    match code {
        1 => Some(VerifyKind::Crc32c),
        2 => Some(VerifyKind::Xxh3),
        3 => Some(VerifyKind::Pattern),
        _ => None,
    }
}

/// A block header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub magic: [u8; 8],
    pub offset: u64,
    pub generation: u64,
    pub payload_sum: u64,
    pub block_size: u32,
    pub kind: u8,
}

/// Why bytes are not a valid header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderProblem {
    /// No magic: not a block header at all.
    Magic,
    /// The magic is there but the header checksum does not match: the fields as found.
    Checksum(Header),
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Header {
    pub fn new(offset: u64, generation: u64, block_size: u32, kind: VerifyKind, payload_sum: u64) -> Header {
        Header { magic: MAGIC, offset, generation, payload_sum, block_size, kind: kind_code(kind) }
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(&self.magic);
        h[8..16].copy_from_slice(&self.offset.to_le_bytes());
        h[16..24].copy_from_slice(&self.generation.to_le_bytes());
        h[24..32].copy_from_slice(&self.payload_sum.to_le_bytes());
        h[32..36].copy_from_slice(&self.block_size.to_le_bytes());
        h[36] = self.kind;
        let crc = crc32c::crc32c(&h[..44]);
        h[44..48].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// Reads a header from the first [`HEADER_LEN`] bytes of `b` (which must hold them).
    pub fn decode(b: &[u8]) -> Result<Header, HeaderProblem> {
        let b = &b[..HEADER_LEN];
        let magic: [u8; 8] = b[0..8].try_into().expect("8 bytes");
        if magic != MAGIC {
            return Err(HeaderProblem::Magic);
        }
        let h = Header {
            magic,
            offset: u64_at(b, 8),
            generation: u64_at(b, 16),
            payload_sum: u64_at(b, 24),
            block_size: u32::from_le_bytes(b[32..36].try_into().expect("4 bytes")),
            kind: b[36],
        };
        let crc = u32::from_le_bytes(b[44..48].try_into().expect("4 bytes"));
        if crc != crc32c::crc32c(&b[..44]) || b[37..44].iter().any(|x| *x != 0) {
            return Err(HeaderProblem::Checksum(h));
        }
        Ok(h)
    }
}

/// The payload pattern: splitmix64 words from a state seeded by (offset, generation).
struct PatternGen {
    state: u64,
}

fn splitmix(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl PatternGen {
    fn new(offset: u64, generation: u64) -> PatternGen {
        PatternGen { state: splitmix(offset ^ splitmix(generation ^ 0x5EED_1015_B10C_0000)) }
    }

    #[inline]
    fn word(&mut self) -> [u8; 8] {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        splitmix(self.state).to_le_bytes()
    }

    /// Fills `buf`; calls continue the stream as long as every `buf` but the last is a
    /// multiple of 8 bytes long.
    fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.word());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let w = self.word();
            rest.copy_from_slice(&w[..rest.len()]);
        }
    }

    /// Index of the first byte of `buf` that differs from the stream (same chunking rule).
    fn first_mismatch(&mut self, buf: &[u8]) -> Option<usize> {
        for (i, c) in buf.chunks(8).enumerate() {
            let w = self.word();
            if c != &w[..c.len()] {
                return Some(i * 8 + c.iter().zip(w).position(|(a, b)| *a != b).unwrap_or(0));
            }
        }
        None
    }
}

fn payload_sum(kind: VerifyKind, payload: &[u8]) -> u64 {
    match kind {
        VerifyKind::Crc32c => u64::from(crc32c::crc32c(payload)),
        VerifyKind::Xxh3 => xxh3_64(payload),
        VerifyKind::Pattern => 0,
    }
}

fn trailer(offset: u64, generation: u64) -> [u8; TRAILER_LEN] {
    let mut t = [0u8; TRAILER_LEN];
    t[..8].copy_from_slice(&generation.to_le_bytes());
    t[8..].copy_from_slice(&offset.to_le_bytes());
    t
}

/// Writes a complete block for `offset` and `generation` into `block` (its whole length is the
/// block, at least [`HEADER_LEN`] + [`TRAILER_LEN`] bytes).
pub fn fill_block(block: &mut [u8], offset: u64, generation: u64, kind: VerifyKind) {
    let size = block.len();
    let (head, payload) = block.split_at_mut(HEADER_LEN);
    let split = payload.len() - TRAILER_LEN;
    PatternGen::new(offset, generation).fill(&mut payload[..split]);
    payload[split..].copy_from_slice(&trailer(offset, generation));
    let sum = payload_sum(kind, payload);
    head.copy_from_slice(&Header::new(offset, generation, size as u32, kind, sum).encode());
}

/// The checksum of the payload `fill_block` writes, computed in pieces without a block buffer.
fn expected_sum(size: usize, offset: u64, generation: u64, kind: VerifyKind) -> u64 {
    if kind == VerifyKind::Pattern {
        return 0;
    }
    let mut gen = PatternGen::new(offset, generation);
    let mut crc = 0u32;
    let mut xxh = Xxh3::new();
    let mut chunk = [0u8; 4096];
    let mut left = size - HEADER_LEN - TRAILER_LEN;
    let mut feed = |piece: &[u8]| match kind {
        VerifyKind::Crc32c => crc = crc32c::crc32c_append(crc, piece),
        _ => xxh.update(piece),
    };
    while left > 0 {
        let n = left.min(chunk.len());
        gen.fill(&mut chunk[..n]);
        feed(&chunk[..n]);
        left -= n;
    }
    feed(&trailer(offset, generation));
    match kind {
        VerifyKind::Crc32c => u64::from(crc),
        _ => xxh.digest(),
    }
}

/// Index of the first byte of `block` (a whole block as read) that differs from the block
/// `fill_block` writes for (offset, generation, kind).
pub fn first_difference(block: &[u8], offset: u64, generation: u64, kind: VerifyKind) -> Option<usize> {
    let size = block.len();
    let sum = expected_sum(size, offset, generation, kind);
    let head = Header::new(offset, generation, size as u32, kind, sum).encode();
    if let Some(i) = block[..HEADER_LEN].iter().zip(head).position(|(a, b)| *a != b) {
        return Some(i);
    }
    let end = size - TRAILER_LEN;
    if let Some(i) = PatternGen::new(offset, generation).first_mismatch(&block[HEADER_LEN..end]) {
        return Some(HEADER_LEN + i);
    }
    block[end..].iter().zip(trailer(offset, generation)).position(|(a, b)| *a != b).map(|i| end + i)
}

/// What a reader expects of the generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// This generation exactly (`verify_generation`, or the one just written).
    Exactly(u64),
    /// The generation of the first valid block read (`None` until one is read).
    FirstSeen(Option<u64>),
}

impl Expect {
    fn known(&self) -> Option<u64> {
        match *self {
            Expect::Exactly(g) => Some(g),
            Expect::FirstSeen(g) => g,
        }
    }

    fn settle(&mut self, found: u64) -> u64 {
        match self {
            Expect::Exactly(g) => *g,
            Expect::FirstSeen(g) => *g.get_or_insert(found),
        }
    }
}

/// What a failed check found wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    Short,
    Unwritten,
    Torn,
    Corrupt,
    Misplaced,
    Stale,
    Newer,
}

impl FailureKind {
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Short => "short",
            FailureKind::Unwritten => "unwritten",
            FailureKind::Torn => "torn",
            FailureKind::Corrupt => "corrupt",
            FailureKind::Misplaced => "misplaced",
            FailureKind::Stale => "stale",
            FailureKind::Newer => "newer",
        }
    }
}

/// Header fields of a block, expected or found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    pub magic: [u8; 8],
    pub offset: u64,
    pub size: u64,
    /// `None` in expectations before the first valid block settled it.
    pub generation: Option<u64>,
}

impl From<&Header> for Fields {
    fn from(h: &Header) -> Fields {
        Fields {
            magic: h.magic,
            offset: h.offset,
            size: u64::from(h.block_size),
            generation: Some(h.generation),
        }
    }
}

/// One block that failed its check (plain data: recorded without allocating).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockFailure {
    pub offset: u64,
    pub kind: FailureKind,
    pub expected: Fields,
    /// The header as found: `None` when there is none (no magic, or fewer bytes than a header).
    pub found: Option<Fields>,
    /// First byte (from the block's start) that differs from the expected block.
    pub first_bad_byte: Option<u64>,
    pub bytes_read: u64,
}

/// Checks `data` (what a read of `size` bytes at `offset` returned) against `expect`.
pub fn check_block(
    data: &[u8],
    size: usize,
    offset: u64,
    kind: VerifyKind,
    expect: &mut Expect,
) -> Result<(), BlockFailure> {
    let expected = |g: Option<u64>| Fields { magic: MAGIC, offset, size: size as u64, generation: g };
    let fail = |kind, expected, found, first_bad: Option<usize>| {
        Err(BlockFailure {
            offset,
            kind,
            expected,
            found,
            first_bad_byte: first_bad.map(|i| i as u64),
            bytes_read: data.len() as u64,
        })
    };
    if data.len() < size {
        let found = if data.len() >= HEADER_LEN {
            match Header::decode(data) {
                Ok(h) | Err(HeaderProblem::Checksum(h)) => Some(Fields::from(&h)),
                Err(HeaderProblem::Magic) => None,
            }
        } else {
            None
        };
        return fail(FailureKind::Short, expected(expect.known()), found, Some(data.len()));
    }
    let data = &data[..size];
    let tail = &data[size - TRAILER_LEN..];
    let (tail_gen, tail_off) = (u64_at(tail, 0), u64_at(tail, 8));
    let header = match Header::decode(data) {
        Ok(h) => h,
        Err(HeaderProblem::Magic) => {
            let magic_diff = data.iter().zip(MAGIC).position(|(a, b)| *a != b);
            // The end of the block is ours, the start is not: a write that did not all land.
            if tail_off == offset && tail_gen != 0 {
                let gen = expect.known().unwrap_or(tail_gen);
                let first = first_difference(data, offset, gen, kind);
                return fail(FailureKind::Torn, expected(expect.known()), None, first);
            }
            return fail(FailureKind::Unwritten, expected(expect.known()), None, magic_diff);
        }
        Err(HeaderProblem::Checksum(h)) => {
            let gen = expect.known().unwrap_or(h.generation);
            let first = first_difference(data, offset, gen, kind_of(h.kind).unwrap_or(kind));
            return fail(FailureKind::Corrupt, expected(expect.known()), Some(Fields::from(&h)), first);
        }
    };
    let found = Some(Fields::from(&header));
    let block_kind = kind_of(header.kind).unwrap_or(kind);
    if header.offset != offset || u64::from(header.block_size) != size as u64 {
        let gen = expect.known().unwrap_or(header.generation);
        let first = first_difference(data, offset, gen, block_kind);
        return fail(FailureKind::Misplaced, expected(expect.known()), found, first);
    }
    if (tail_off, tail_gen) != (header.offset, header.generation) {
        // Compared with the write the header belongs to: the first byte of another write.
        let first = first_difference(data, offset, header.generation, block_kind);
        return fail(FailureKind::Torn, expected(expect.known()), found, first);
    }
    let want = expect.settle(header.generation);
    if header.generation != want {
        let kind = if header.generation < want { FailureKind::Stale } else { FailureKind::Newer };
        let first = first_difference(data, offset, want, block_kind);
        return fail(kind, expected(Some(want)), found, first);
    }
    let payload = &data[HEADER_LEN..];
    let intact = match kind_of(header.kind) {
        Some(VerifyKind::Pattern) => {
            PatternGen::new(offset, want).first_mismatch(&payload[..payload.len() - TRAILER_LEN]).is_none()
        }
        Some(k) => payload_sum(k, payload) == header.payload_sum,
        None => false,
    };
    if !intact {
        let first = first_difference(data, offset, want, block_kind);
        return fail(FailureKind::Corrupt, expected(Some(want)), found, first);
    }
    Ok(())
}

/// Counts of one agent's verification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyCounts {
    pub blocks_written: u64,
    pub blocks_checked: u64,
    pub failures_total: u64,
    /// Filling and checking blocks, nanoseconds (outside every timed I/O interval).
    pub cost_ns: u64,
    /// The read-back pass after the write phase (`verify_after_write`), nanoseconds.
    pub readback_ns: u64,
}

/// One agent's verification state: everything allocated up front.
pub(crate) struct AgentVerify {
    pub kind: VerifyKind,
    pub generation: u64,
    pub expect: Expect,
    pub size: usize,
    /// One bit per block of the region, set once a verified write of it completed; only kept
    /// for the read-back pass.
    pub written: Option<Vec<u64>>,
    pub counts: VerifyCounts,
    /// The first failures, each with whether the read-back pass found it.
    pub failures: Vec<(BlockFailure, bool)>,
    pub readback_expect: Expect,
}

impl AgentVerify {
    pub fn new(
        kind: VerifyKind,
        generation: u64,
        expect: Expect,
        size: usize,
        region: u64,
        after_write: bool,
    ) -> AgentVerify {
        let blocks = region / size as u64;
        AgentVerify {
            kind,
            generation,
            expect,
            size,
            written: after_write.then(|| vec![0u64; blocks.div_ceil(64) as usize]),
            counts: VerifyCounts::default(),
            failures: Vec::with_capacity(MAX_FAILURES),
            readback_expect: Expect::Exactly(generation),
        }
    }

    #[inline]
    pub fn fill(&mut self, block: &mut [u8], offset: u64) {
        fill_block(block, offset, self.generation, self.kind);
    }

    #[inline]
    pub fn wrote(&mut self, offset: u64) {
        self.counts.blocks_written += 1;
        if let Some(bits) = &mut self.written {
            let b = offset / self.size as u64;
            if let Some(w) = bits.get_mut((b / 64) as usize) {
                *w |= 1 << (b % 64);
            }
        }
    }

    #[inline]
    pub fn check(&mut self, data: &[u8], offset: u64, readback: bool) {
        self.counts.blocks_checked += 1;
        let expect = if readback { &mut self.readback_expect } else { &mut self.expect };
        if let Err(f) = check_block(data, self.size, offset, self.kind, expect) {
            self.counts.failures_total += 1;
            if self.failures.len() < MAX_FAILURES {
                self.failures.push((f, readback));
            }
        }
    }
}

/// The `verify_after_write` pass: flushes `file` and drops its cached pages (so reads reach the
/// device where the file system allows), then reads every block the agent wrote and checks it
/// against the generation written. Runs after the measurement, so no figure includes it.
/// Returns the offset and error of a failed read.
pub(crate) fn read_back(v: &mut AgentVerify, file: &File, stop: &AtomicBool) -> Result<(), (u64, io::Error)> {
    let Some(bits) = v.written.take() else { return Ok(()) };
    let t0 = now_ns();
    let fd = file.as_raw_fd();
    // SAFETY: plain syscalls on a descriptor we own; failures only leave pages cached.
    unsafe {
        libc::fdatasync(fd);
        libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    let mut buf = AlignedBuffers::new(1, v.size, 0);
    let size = v.size;
    let mut result = Ok(());
    'blocks: for (w, word) in bits.iter().enumerate() {
        let mut word = *word;
        while word != 0 {
            if stop.load(Ordering::Relaxed) {
                break 'blocks;
            }
            let offset = (w as u64 * 64 + u64::from(word.trailing_zeros())) * size as u64;
            word &= word - 1;
            let block = &mut buf.slot_mut(0)[..size];
            let mut got = 0;
            while got < size {
                // SAFETY: the buffer holds `size` bytes; the descriptor is open.
                let n = unsafe {
                    libc::pread(
                        fd,
                        block[got..].as_mut_ptr().cast(),
                        size - got,
                        (offset + got as u64) as i64,
                    )
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    result = Err((offset, e));
                    break 'blocks;
                }
                if n == 0 {
                    break;
                }
                got += n as usize;
            }
            v.check(&block[..got], offset, true);
        }
    }
    v.counts.readback_ns += now_ns() - t0;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS: usize = 4096;

    fn block(offset: u64, generation: u64, kind: VerifyKind) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        fill_block(&mut b, offset, generation, kind);
        b
    }

    fn check(data: &[u8], offset: u64, expect: &mut Expect) -> Result<(), BlockFailure> {
        check_block(data, BS, offset, VerifyKind::Crc32c, expect)
    }

    const KINDS: [VerifyKind; 3] = [VerifyKind::Crc32c, VerifyKind::Xxh3, VerifyKind::Pattern];

    #[test]
    fn header_round_trips_and_detects_damage() {
        let h = Header::new(123 << 12, 77, 4096, VerifyKind::Xxh3, 0xdead_beef);
        let bytes = h.encode();
        assert_eq!(Header::decode(&bytes), Ok(h));
        let mut bad = bytes;
        bad[9] ^= 1;
        assert!(matches!(Header::decode(&bad), Err(HeaderProblem::Checksum(f)) if f.offset != h.offset));
        bad = bytes;
        bad[0] = b'x';
        assert_eq!(Header::decode(&bad), Err(HeaderProblem::Magic));
        bad = bytes;
        bad[40] = 1;
        assert!(matches!(Header::decode(&bad), Err(HeaderProblem::Checksum(_))));
    }

    #[test]
    fn clean_blocks_pass_for_every_kind_and_odd_sizes() {
        for kind in KINDS {
            for size in [64usize, 100, 4096, 5000] {
                let mut b = vec![0u8; size];
                fill_block(&mut b, 7 * size as u64, 9, kind);
                let mut e = Expect::Exactly(9);
                assert_eq!(check_block(&b, size, 7 * size as u64, kind, &mut e), Ok(()), "{kind:?} {size}");
                assert_eq!(first_difference(&b, 7 * size as u64, 9, kind), None);
            }
        }
    }

    #[test]
    fn a_flipped_payload_byte_is_corrupt_at_that_byte() {
        for kind in KINDS {
            let mut b = block(8192, 5, kind);
            b[1000] ^= 0x40;
            let f = check_block(&b, BS, 8192, VerifyKind::Crc32c, &mut Expect::Exactly(5)).unwrap_err();
            assert_eq!((f.kind, f.first_bad_byte), (FailureKind::Corrupt, Some(1000)), "{kind:?}");
            assert_eq!(f.found.unwrap().generation, Some(5));
        }
    }

    #[test]
    fn a_damaged_header_is_corrupt() {
        let mut b = block(0, 5, VerifyKind::Crc32c);
        b[20] ^= 1;
        let f = check(&b, 0, &mut Expect::Exactly(5)).unwrap_err();
        assert_eq!((f.kind, f.first_bad_byte), (FailureKind::Corrupt, Some(20)));
    }

    #[test]
    fn a_block_at_the_wrong_offset_is_misplaced() {
        let b = block(4096, 5, VerifyKind::Crc32c);
        let f = check(&b, 8192, &mut Expect::Exactly(5)).unwrap_err();
        assert_eq!(f.kind, FailureKind::Misplaced);
        assert_eq!((f.expected.offset, f.found.unwrap().offset), (8192, 4096));
        assert_eq!(f.first_bad_byte, Some(9), "offset 8192 vs 4096 differs in byte 1 of the field");
    }

    #[test]
    fn generations_older_than_expected_are_stale_newer_are_newer() {
        let old = block(0, 3, VerifyKind::Crc32c);
        let f = check(&old, 0, &mut Expect::Exactly(4)).unwrap_err();
        assert_eq!(
            (f.kind, f.expected.generation, f.first_bad_byte),
            (FailureKind::Stale, Some(4), Some(16))
        );
        let f = check(&block(0, 5, VerifyKind::Crc32c), 0, &mut Expect::Exactly(4)).unwrap_err();
        assert_eq!(f.kind, FailureKind::Newer);
        // Without an explicit generation, the first valid block sets it.
        let mut e = Expect::FirstSeen(None);
        assert_eq!(check(&block(0, 9, VerifyKind::Crc32c), 0, &mut e), Ok(()));
        assert_eq!(
            check(&block(4096, 8, VerifyKind::Crc32c), 4096, &mut e).unwrap_err().kind,
            FailureKind::Stale
        );
    }

    #[test]
    fn mixed_writes_in_one_block_are_torn() {
        // New header and start, old end.
        let mut b = block(0, 9, VerifyKind::Crc32c);
        let old = block(0, 8, VerifyKind::Crc32c);
        b[2048..].copy_from_slice(&old[2048..]);
        let f = check(&b, 0, &mut Expect::Exactly(9)).unwrap_err();
        assert_eq!((f.kind, f.first_bad_byte), (FailureKind::Torn, Some(2048)));
        // Old-data start without a header, our end.
        let mut b = block(0, 9, VerifyKind::Crc32c);
        b[..512].fill(0);
        let f = check(&b, 0, &mut Expect::Exactly(9)).unwrap_err();
        assert_eq!((f.kind, f.first_bad_byte), (FailureKind::Torn, Some(0)));
    }

    #[test]
    fn zeros_and_random_data_are_unwritten_and_short_reads_short() {
        let f = check(&[0u8; BS], 4096, &mut Expect::FirstSeen(None)).unwrap_err();
        assert_eq!((f.kind, f.first_bad_byte, f.found), (FailureKind::Unwritten, Some(0), None));
        let b = block(4096, 2, VerifyKind::Crc32c);
        let f = check(&b[..1000], 4096, &mut Expect::Exactly(2)).unwrap_err();
        assert_eq!((f.kind, f.first_bad_byte, f.bytes_read), (FailureKind::Short, Some(1000), 1000));
        assert_eq!(f.found.unwrap().offset, 4096);
        let f = check(&[], 4096, &mut Expect::Exactly(2)).unwrap_err();
        assert_eq!((f.kind, f.found), (FailureKind::Short, None));
    }

    #[test]
    fn the_failure_list_is_bounded_but_all_are_counted() {
        let mut v = AgentVerify::new(VerifyKind::Crc32c, 1, Expect::Exactly(1), BS, 1 << 20, true);
        for i in 0..40u64 {
            v.check(&[0u8; BS], i * BS as u64, false);
        }
        assert_eq!((v.counts.blocks_checked, v.counts.failures_total), (40, 40));
        assert_eq!(v.failures.len(), MAX_FAILURES);
        v.wrote(4096 * 65);
        assert_eq!(v.written.as_ref().unwrap()[1], 2);
    }
}
