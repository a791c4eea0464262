//! Darshan DXT text, as printed by `darshan-dxt-parser`: per file record a header
//! (`# DXT, file_id: …, file_name: …`, `# DXT, rank: …`) and one row per segment
//! (`X_POSIX rank op segment offset length start end [thread/OST]`), times in seconds since the
//! job started.

use std::collections::HashMap;
use std::io::Read;

use iolens_record::event::{IoEvent, IoOp, Layer, NO_FILE, UNKNOWN_OFFSET};

use crate::{for_each_line_bytes, line_text, plain_seconds_to_ns, seconds_to_ns, Ctx, ImportError};

/// An offset, or −1 for one Darshan did not know (3.1 wrote it for MPI-IO calls).
fn parse_offset(text: &str) -> Result<u64, ()> {
    match parse_u64(text) {
        Err(_) if text == "-1" => Ok(UNKNOWN_OFFSET),
        other => other,
    }
}

/// `text.parse::<u64>()`, with plain digits (all a trace writes) read in one pass.
#[inline]
fn parse_u64(text: &str) -> Result<u64, ()> {
    parse_u64_bytes(text.as_bytes())
}

/// [`parse_u64`] of bytes: an error for invalid UTF-8 (which `str::parse` never sees).
#[inline]
fn parse_u64_bytes(bytes: &[u8]) -> Result<u64, ()> {
    if let Some(n) = plain_u64(bytes) {
        return Ok(n);
    }
    std::str::from_utf8(bytes).map_err(|_| ())?.parse::<u64>().map_err(|_| ())
}

/// 1 to 19 ASCII digits (no sign), which cannot overflow a u64; None for anything else.
#[inline]
fn plain_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 19 {
        return None;
    }
    let mut n = 0u64;
    for &d in bytes {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        n = n * 10 + u64::from(digit);
    }
    Some(n)
}

/// Splits `row` at ASCII whitespace into `fields` (those past its length are counted, not
/// kept); returns how many fields the row has. One pass over the bytes, no allocation.
#[inline]
fn split_fields<'a>(row: &'a str, fields: &mut [&'a str]) -> usize {
    let bytes = row.as_bytes();
    let mut count = 0;
    let mut at = 0;
    while at < bytes.len() {
        // darshan-dxt-parser pads its columns with long runs of spaces: skip them eight at a
        // time (most of a row's bytes are such padding).
        while let Some(word) = bytes.get(at..at + 8) {
            if u64::from_ne_bytes(word.try_into().expect("eight bytes")) != EIGHT_SPACES {
                break;
            }
            at += 8;
        }
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at == bytes.len() {
            break;
        }
        let start = at;
        while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if let Some(slot) = fields.get_mut(count) {
            // Cut at ASCII bytes: always on a character boundary.
            *slot = &row[start..at];
        }
        count += 1;
    }
    count
}

const EIGHT_SPACES: u64 = u64::from_ne_bytes(*b"        ");

/// Fields of a segment row that are read: module, rank, op, segment, offset, length, start, end
/// and (darshan 3.2+) the thread or OST column.
const ROW_FIELDS: usize = 9;

/// A segment row's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    layer: Layer,
    rank: u32,
    op: IoOp,
    offset: u64,
    length: u64,
    start: u64,
    end: u64,
    tid: u32,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `i`, the first in the lowest byte; None past the end.
#[inline(always)]
fn word_at(bytes: &[u8], i: usize) -> Option<u64> {
    bytes.get(i..i + 8).map(|w| u64::from_le_bytes(w.try_into().expect("eight bytes")))
}

/// The high bit of each byte of `word` that is not a space. Exact per byte: no lane carries
/// into the next.
#[inline(always)]
fn not_spaces(word: u64) -> u64 {
    let x = word ^ (ONES * u64::from(b' '));
    (((x & !HIGHS) + !HIGHS) | x) & HIGHS
}

/// The high bit of each byte of `word` outside printable ASCII (`0x21..=0x7e`). Exact per byte:
/// each lane adds to at most seven bits, so no lane carries into the next.
#[inline(always)]
fn not_printable(word: u64) -> u64 {
    let low = word & !HIGHS;
    let at_least_21 = (low + ONES * 0x5f) & HIGHS;
    let at_least_7f = (low + ONES) & HIGHS;
    !(at_least_21 & !at_least_7f & !(word & HIGHS)) & HIGHS
}

/// Skips ASCII whitespace from `at`; then the token there (an empty one at the end of the row),
/// or None at a byte that is neither printable ASCII nor ASCII whitespace. Eight bytes at a
/// time where eight are left (darshan-dxt-parser pads its columns with long runs of spaces);
/// byte by byte after them and for whitespace other than spaces.
#[inline(always)]
fn next_token<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let mut i = *at;
    while let Some(word) = word_at(bytes, i) {
        let found = not_spaces(word);
        if found != 0 {
            i += (found.trailing_zeros() / 8) as usize;
            break;
        }
        i += 8;
    }
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    let start = i;
    while let Some(word) = word_at(bytes, i) {
        let found = not_printable(word);
        if found != 0 {
            i += (found.trailing_zeros() / 8) as usize;
            break;
        }
        i += 8;
    }
    while i < bytes.len() && matches!(bytes[i], 0x21..=0x7e) {
        i += 1;
    }
    if i < bytes.len() && !bytes[i].is_ascii_whitespace() {
        return None;
    }
    *at = i;
    Some(&bytes[start..i])
}

/// A segment row read straight from its bytes, as darshan-dxt-parser writes them: printable
/// ASCII fields between ASCII whitespace, 8 or 9 of them, each in its plain form (digits, `-1`
/// for an unknown offset, `d.dddd` seconds). None for any other line (a comment, a malformed
/// row, a row in an unusual form, a byte outside printable ASCII and ASCII whitespace): it is
/// left to [`text_line`], which gives the same values for any row this accepts.
#[inline]
fn plain_row(bytes: &[u8]) -> Option<Row> {
    let mut at = 0;
    let layer = match next_token(bytes, &mut at)? {
        b"X_POSIX" => Layer::Posix,
        b"X_MPIIO" => Layer::MpiIo,
        _ => return None,
    };
    let rank = u32::try_from(plain_u64(next_token(bytes, &mut at)?)?).ok()?;
    let op = match next_token(bytes, &mut at)? {
        b"read" => IoOp::Read,
        b"write" => IoOp::Write,
        _ => return None,
    };
    if next_token(bytes, &mut at)?.is_empty() {
        return None;
    }
    let offset = match next_token(bytes, &mut at)? {
        b"-1" => UNKNOWN_OFFSET,
        digits => plain_u64(digits)?,
    };
    let length = plain_u64(next_token(bytes, &mut at)?)?;
    let start = plain_seconds_to_ns(next_token(bytes, &mut at)?)?;
    let end = plain_seconds_to_ns(next_token(bytes, &mut at)?)?;
    let tid = match next_token(bytes, &mut at)? {
        b"" | b"N/A" => 0,
        other => parse_u64_bytes(other).map_or(0, |v| v as u32),
    };
    if !next_token(bytes, &mut at)?.is_empty() {
        return None;
    }
    Some(Row { layer, rank, op, offset, length, start, end, tid })
}

/// What the lines before tell a row: the file records seen and the current one.
struct State {
    files: HashMap<String, u32>,
    file: u32,
    incomplete: Vec<String>,
}

fn emit(ctx: &mut Ctx, file: u32, row: Row) {
    ctx.event(&IoEvent {
        pid: row.rank,
        tid: row.tid,
        file,
        op: row.op,
        layer: row.layer,
        flags: 0,
        offset: row.offset,
        requested: row.length,
        result: i64::try_from(row.length).unwrap_or(i64::MAX),
        start_ns: row.start,
        end_ns: row.end.max(row.start),
    });
}

/// Any line, as text: headers, comments, and rows [`plain_row`] leaves (read field by field,
/// malformed ones reported).
fn text_line(state: &mut State, ctx: &mut Ctx, line_no: u64, line: &str) -> Result<(), ImportError> {
    match text_row(state, ctx, line_no, line)? {
        Some(row) => {
            emit(ctx, state.file, row);
            Ok(())
        }
        None => Ok(()),
    }
}

/// The row `line` holds, if any (None for blank lines, comments and malformed rows, the latter
/// reported).
fn text_row(state: &mut State, ctx: &mut Ctx, line_no: u64, line: &str) -> Result<Option<Row>, ImportError> {
    let t = line.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if let Some(comment) = t.strip_prefix('#') {
        let c = comment.trim();
        if let Some(rest) = c.strip_prefix("DXT, file_id:") {
            let (id, name) = match rest.split_once(", file_name:") {
                Some((id, name)) => (id.trim().to_string(), name.trim().to_string()),
                None => (rest.trim().to_string(), rest.trim().to_string()),
            };
            state.file = match state.files.get(&id) {
                Some(&f) => f,
                None => {
                    let f = ctx.new_path(&name);
                    state.files.insert(id, f);
                    f
                }
            };
        } else if c.contains("contains incomplete data") {
            let module = c.split_whitespace().find(|w| w.starts_with("DXT_")).unwrap_or("a DXT").to_string();
            state.incomplete.push(module);
        }
        return Ok(None);
    }
    // The fields a row uses, split in place: a row costs no allocation. Rows are ASCII
    // (the path is in the comment line above them).
    let mut f = [""; ROW_FIELDS];
    let fields = split_fields(t, &mut f);
    let layer = match f[0] {
        "X_POSIX" => Layer::Posix,
        "X_MPIIO" => Layer::MpiIo,
        _ => {
            ctx.malformed(line_no, "not a DXT segment row (X_POSIX or X_MPIIO)")?;
            return Ok(None);
        }
    };
    if fields < 8 {
        ctx.malformed(line_no, format!("{fields} fields; a segment row has at least 8"))?;
        return Ok(None);
    }
    let op = match f[2] {
        "read" => IoOp::Read,
        "write" => IoOp::Write,
        other => {
            ctx.malformed(line_no, format!("unknown operation {other:?}"))?;
            return Ok(None);
        }
    };
    let (Ok(rank), Ok(offset), Ok(length), Some(start), Some(end)) = (
        parse_u64(f[1]).and_then(|r| u32::try_from(r).map_err(|_| ())),
        parse_offset(f[4]),
        parse_u64(f[5]),
        seconds_to_ns(f[6]),
        seconds_to_ns(f[7]),
    ) else {
        ctx.malformed(line_no, "rank, offset, length, start and end must be numbers")?;
        return Ok(None);
    };
    let tid = if fields > 8 { parse_u64(f[8]).map_or(0, |v| v as u32) } else { 0 };
    Ok(Some(Row { layer, rank, op, offset, length, start, end, tid }))
}

pub(crate) fn import(ctx: &mut Ctx, input: impl Read) -> Result<(), ImportError> {
    let mut state = State { files: HashMap::new(), file: NO_FILE, incomplete: Vec::new() };
    for_each_line_bytes(ctx, input, |ctx, line_no, bytes| {
        // Rows in darshan-dxt-parser's own form (all of them, in its output) straight from
        // their bytes; anything else as text.
        if let Some(row) = plain_row(bytes) {
            emit(ctx, state.file, row);
            return Ok(());
        }
        line_text(ctx, line_no, bytes, &mut |ctx, line_no, line| text_line(&mut state, ctx, line_no, line))
    })?;
    for module in state.incomplete {
        ctx.report.notes.push(format!(
            "the Darshan log is truncated: the {module} module contains incomplete data (it ran out of memory), so totals are lower bounds"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::testing::{import_text, Collect};
    use crate::{import, Format};

    const SAMPLE: &str = "\
# DXT, file_id: 11, file_name: /data/a
# DXT, rank: 0, hostname: n1
 X_POSIX       0   read        0               0              32      2.7599      2.7604   N/A
 X_POSIX       0  write        1            4096            1000      3.0000      3.5000   N/A

# DXT, file_id: 11, file_name: /data/a
# DXT, rank: 3, hostname: n2
 X_MPIIO       3  write        0               0         1048576      1.0000      1.2500
";

    #[test]
    fn fields_and_numbers_read_as_the_standard_library_reads_them() {
        for row in [
            " X_POSIX  0 read\t1 2  ",
            "",
            "   ",
            "a",
            "é b\u{a0}c  d",
            "1 2 3 4 5 6 7 8 9 10 11",
            " X_POSIX       0   read        0               0              32      2.7599      2.7604   N/A",
            "        ",
            "                 x",
            "a               \t        \t b          ",
            "        \u{a0}        é",
        ] {
            let mut fields = [""; super::ROW_FIELDS];
            let n = super::split_fields(row, &mut fields);
            let expected: Vec<&str> = row.split_ascii_whitespace().collect();
            assert_eq!(n, expected.len(), "{row:?}");
            let kept = n.min(super::ROW_FIELDS);
            assert_eq!(&fields[..kept], &expected[..kept], "{row:?}");
        }
        for text in [
            "0",
            "42",
            "+7",
            "-1",
            "",
            "18446744073709551615",
            "18446744073709551616",
            "9999999999999999999",
            "00000000000000000000012",
            "1x",
        ] {
            assert_eq!(super::parse_u64(text).ok(), text.parse::<u64>().ok(), "{text:?}");
        }
    }

    /// Pieces of rows, well-formed and hostile: fields, numbers at and past every limit, bytes
    /// outside ASCII, Unicode and ASCII whitespace the field splitter and `trim` treat apart.
    const PIECES: &[&[u8]] = &[
        b"X_POSIX",
        b"X_MPIIO",
        b"X_POSIXX",
        b"X_posix",
        b"read",
        b"write",
        b"READ",
        b"writes",
        b"0",
        b"7",
        b"42",
        b"4294967295",
        b"4294967296",
        b"9999999999999999999",
        b"18446744073709551615",
        b"18446744073709551616",
        b"00000000000000000000012",
        b"-1",
        b"-2",
        b"+7",
        b"1x",
        b"0.0011",
        b"2.7599",
        b"10.6289",
        b".5",
        b"5.",
        b".",
        b"1..2",
        b"18446744073.709551615",
        b"18446744073.709551616",
        b"1.0000000001",
        b"N/A",
        b"n/a",
        b"#",
        b"# DXT",
        "\u{e9}".as_bytes(),
        "\u{a0}".as_bytes(),
        "\u{85}".as_bytes(),
        "\u{3000}".as_bytes(),
        b"\xff",
        b"\xc3",
        b"\x0b",
        b"\x00",
        b"\x7f",
        b"\x0c",
        b"\r",
        b"\t",
        b" ",
        b"        ",
        b"                ",
    ];

    fn state() -> super::State {
        super::State { files: Default::default(), file: 0, incomplete: Vec::new() }
    }

    /// Whatever [`super::plain_row`] accepts, the text reader reads to the same values without
    /// reporting the row: rows it accepts need not go through the text reader at all.
    fn agrees(bytes: &[u8]) {
        let Some(fast) = super::plain_row(bytes) else { return };
        let mut sink = Collect::default();
        let mut ctx = crate::Ctx::new(&mut sink, Path::new("t"), Format::Dxt, false);
        let text = String::from_utf8_lossy(bytes);
        let slow = super::text_row(&mut state(), &mut ctx, 1, &text).unwrap();
        assert_eq!(slow, Some(fast), "{:?}", text);
        assert_eq!(ctx.report.malformed_count, 0, "{text:?}");
    }

    #[test]
    fn plain_rows_read_as_the_text_reader_reads_them() {
        let mut accepted = 0;
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let seps: [&[u8]; 6] = [b" ", b"   ", b"\t", b"        ", b" \r", b"\x0c "];
        let fields: [&[&[u8]]; 9] = [
            &[b"X_POSIX", b"X_MPIIO"],
            &[b"0", b"3", b"4294967295", b"65536"],
            &[b"read", b"write"],
            &[b"0", b"17"],
            &[b"0", b"4096", b"-1", b"9999999999999999999"],
            &[b"1", b"32", b"16777216"],
            &[b"0.0011", b"2.7599", b"7", b"18446744073.709551615"],
            &[b"0.0011", b"2.7604", b"1.0000000001"],
            &[b"N/A", b"3", b"99999999999"],
        ];
        for _ in 0..200_000 {
            let mut row = Vec::new();
            if next(2) == 0 {
                row.extend_from_slice(seps[next(seps.len())]);
            }
            // A well-formed row, with one or two of its pieces replaced by anything.
            let count = 8 + next(3);
            let spoil = [next(count * 2), next(count * 4)];
            for i in 0..count {
                if i > 0 {
                    row.extend_from_slice(seps[next(seps.len())]);
                }
                let piece = if spoil.contains(&i) {
                    PIECES[next(PIECES.len())]
                } else {
                    let choices = fields[i.min(8)];
                    choices[next(choices.len())]
                };
                row.extend_from_slice(piece);
                if spoil.contains(&(i + count)) {
                    row.extend_from_slice(PIECES[next(PIECES.len())]);
                }
            }
            if next(2) == 0 {
                row.extend_from_slice(seps[next(seps.len())]);
            }
            accepted += usize::from(super::plain_row(&row).is_some());
            agrees(&row);
        }
        assert!(accepted > 20_000, "{accepted} rows of 200000 read as plain rows");
        // Random pieces in any order.
        for _ in 0..200_000 {
            let row: Vec<u8> =
                (0..next(12)).flat_map(|_| PIECES[next(PIECES.len())].iter().copied()).collect();
            agrees(&row);
        }
        for row in [
            &b" X_POSIX       0   read        0               0              32      2.7599      2.7604   N/A"[..],
            b" X_MPIIO 2 write 0 -1 4096 1.0 1.5",
            b"X_POSIX 0 read 0 0 1 1.0 2.0 5",
        ] {
            assert!(super::plain_row(row).is_some(), "{row:?}");
            agrees(row);
        }
        for row in [
            &b" X_POSIX 0 read 0 0 1 1.0 2.0 5 6"[..],
            b" X_POSIX 0 read 0 0 1 1.0",
            b"\x0bX_POSIX 0 read 0 0 1 1.0 2.0",
            b"X_POSIX 0 read 0 0 1 1.0 2.0 5\x0b",
            "X_POSIX 0 read 0 0 1 1.0 2.0\u{a0}".as_bytes(),
            b"# X_POSIX 0 read 0 0 1 1.0 2.0",
        ] {
            assert!(super::plain_row(row).is_none(), "{row:?}");
        }
    }

    /// [`super::next_token`] as a byte-by-byte loop.
    fn next_token_bytewise<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
        let mut i = *at;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && matches!(bytes[i], 0x21..=0x7e) {
            i += 1;
        }
        if i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            return None;
        }
        *at = i;
        Some(&bytes[start..i])
    }

    #[test]
    fn tokens_read_eight_bytes_at_a_time_as_byte_by_byte() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..100_000 {
            let len = round % 40;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    // Mostly spaces and printable bytes, any byte now and then.
                    match rng % 8 {
                        0..=3 => b' ',
                        4..=5 => b'0' + (rng >> 8) as u8 % 75,
                        _ => (rng >> 16) as u8,
                    }
                })
                .collect();
            let (mut a, mut b) = (0, 0);
            loop {
                let (x, y) = (super::next_token(&bytes, &mut a), next_token_bytewise(&bytes, &mut b));
                assert_eq!(x, y, "{bytes:?}");
                assert_eq!(a, b, "{bytes:?}");
                if x.is_none_or(|t| t.is_empty()) {
                    break;
                }
            }
        }
        for byte in 0..=255u8 {
            let word = u64::from_le_bytes([b'a', byte, b' ', 0x7f, byte, b'~', b'!', byte]);
            let expected = [b'a', byte, b' ', 0x7f, byte, b'~', b'!', byte]
                .iter()
                .enumerate()
                .filter(|(_, b)| !matches!(b, 0x21..=0x7e))
                .fold(0u64, |m, (i, _)| m | 0x80 << (8 * i));
            assert_eq!(super::not_printable(word), expected, "{byte:#x}");
            let spaces = [byte, b' ', byte, b' ', b' ', byte, 0xa0, b'\t']
                .iter()
                .enumerate()
                .filter(|(_, b)| **b != b' ')
                .fold(0u64, |m, (i, _)| m | 0x80 << (8 * i));
            let word = u64::from_le_bytes([byte, b' ', byte, b' ', b' ', byte, 0xa0, b'\t']);
            assert_eq!(super::not_spaces(word), spaces, "{byte:#x}");
        }
    }

    #[test]
    fn rows_become_events() {
        let (c, r) = import_text(Format::Dxt, SAMPLE, true);
        let r = r.unwrap();
        assert_eq!(r.events, 3);
        assert_eq!(c.paths.len(), 1, "one file, seen from two ranks");
        let e = &c.events[1];
        assert_eq!(
            (e.pid, e.offset, e.requested, e.start_ns, e.end_ns),
            (0, 4096, 1000, 3_000_000_000, 3_500_000_000)
        );
        assert_eq!(c.events[2].layer, iolens_record::event::Layer::MpiIo);
        assert_eq!(c.events[2].pid, 3);
        assert_eq!(c.path_of(e.file), "/data/a");
    }

    /// Darshan 3.1 wrote offset −1 for MPI-IO calls whose offset it did not know.
    #[test]
    fn an_unknown_offset_is_not_malformed() {
        let text = "# DXT, file_id: 1, file_name: /a\n X_MPIIO 2 write 0 -1 4096 1.0 1.5\n";
        let (c, r) = import_text(Format::Dxt, text, true);
        assert_eq!(r.unwrap().events, 1);
        assert_eq!(c.events[0].offset, iolens_record::event::UNKNOWN_OFFSET);
        assert_eq!(c.events[0].requested, 4096);
    }

    #[test]
    fn malformed_rows_are_reported_or_stop() {
        let bad = format!("{SAMPLE} X_POSIX 0 read 2 zero 10 1.0 1.1\ngarbage here\n");
        let (c, r) = import_text(Format::Dxt, &bad, false);
        let r = r.unwrap();
        assert_eq!((r.events, r.malformed_count), (3, 2));
        assert_eq!(r.malformed[0].line, 9);
        assert_eq!(c.events.len(), 3);
        let (_, r) = import_text(Format::Dxt, &bad, true);
        assert!(r.unwrap_err().to_string().contains(":9:"));
    }

    /// A shared DXT sample (`../shared/data/dxt/NAME`, beside the checkout); `None` (the test
    /// skips) where the samples are not there.
    fn sample(name: &str) -> Option<PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/dxt").join(name);
        crate::prerequisite::require_data(p.exists(), "the shared DXT samples (../shared/data/dxt)")
            .then_some(p)
    }

    /// Counts rows and bytes with plain text processing, independently of the parser.
    fn count(path: &Path) -> (u64, u64, std::collections::BTreeSet<u32>) {
        let text = std::fs::read_to_string(path).unwrap();
        let rows: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.first().is_some_and(|m| *m == "X_POSIX" || *m == "X_MPIIO"))
            .collect();
        let bytes = rows.iter().map(|f| f[5].parse::<u64>().unwrap()).sum();
        (rows.len() as u64, bytes, rows.iter().map(|f| f[1].parse().unwrap()).collect())
    }

    #[test]
    fn shared_samples() {
        for (name, posix, rank_count) in [
            ("nonmpi_dxt_anonymized.dxt.txt", 17_652, 1),
            ("partial_data_dxt.dxt.txt", 65_536, 1),
            ("mpi-io-test_32ranks.dxt.txt", 320, 32),
            ("hdf5_diagonal_write_1_byte_dxt.dxt.txt", 440, 10),
            ("runtime_and_dxt_heatmaps_diagonal_write_only.dxt.txt", 32, 32),
        ] {
            let Some(path) = sample(name) else { return };
            let (rows, bytes, rank_set) = count(&path);
            let mut c = Collect::default();
            let r = import(&path, Format::Dxt, true, &mut c).unwrap();
            assert_eq!(r.events, rows, "{name}");
            let posix_events =
                c.events.iter().filter(|e| e.layer == iolens_record::event::Layer::Posix).count();
            assert_eq!(posix_events, posix, "{name}");
            assert_eq!(c.events.iter().map(|e| e.requested).sum::<u64>(), bytes, "{name}");
            let ranks: std::collections::BTreeSet<u32> = c.events.iter().map(|e| e.pid).collect();
            assert_eq!(ranks, rank_set, "{name}");
            assert_eq!(ranks.len(), rank_count, "{name}");
            if name.starts_with("partial") {
                assert_eq!(rows, 131_065, "the truncated log's segment count");
                assert!(r.notes.iter().any(|n| n.contains("truncated")), "{:?}", r.notes);
            } else {
                assert!(r.notes.is_empty(), "{name}: {:?}", r.notes);
            }
        }
    }
}
