//! Darshan DXT text, as printed by `darshan-dxt-parser`: per file record a header
//! (`# DXT, file_id: …, file_name: …`, `# DXT, rank: …`) and one row per segment
//! (`X_POSIX rank op segment offset length start end [thread/OST]`), times in seconds since the
//! job started.

use std::collections::HashMap;
use std::io::Read;

use iolens_record::event::{IoEvent, IoOp, Layer, NO_FILE, UNKNOWN_OFFSET};

use crate::{for_each_line, seconds_to_ns, Ctx, ImportError};

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
    let bytes = text.as_bytes();
    if !bytes.is_empty() && bytes.len() <= 19 && bytes.iter().all(u8::is_ascii_digit) {
        return Ok(bytes.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')));
    }
    text.parse::<u64>().map_err(|_| ())
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

pub(crate) fn import(ctx: &mut Ctx, input: impl Read) -> Result<(), ImportError> {
    let mut files: HashMap<String, u32> = HashMap::new();
    let mut file = NO_FILE;
    let mut incomplete: Vec<String> = Vec::new();
    for_each_line(ctx, input, |ctx, line_no, line| {
        let t = line.trim();
        if t.is_empty() {
            return Ok(());
        }
        if let Some(comment) = t.strip_prefix('#') {
            let c = comment.trim();
            if let Some(rest) = c.strip_prefix("DXT, file_id:") {
                let (id, name) = match rest.split_once(", file_name:") {
                    Some((id, name)) => (id.trim().to_string(), name.trim().to_string()),
                    None => (rest.trim().to_string(), rest.trim().to_string()),
                };
                file = match files.get(&id) {
                    Some(&f) => f,
                    None => {
                        let f = ctx.new_path(&name);
                        files.insert(id, f);
                        f
                    }
                };
            } else if c.contains("contains incomplete data") {
                let module =
                    c.split_whitespace().find(|w| w.starts_with("DXT_")).unwrap_or("a DXT").to_string();
                incomplete.push(module);
            }
            return Ok(());
        }
        // The fields a row uses, split in place: a row costs no allocation. Rows are ASCII
        // (the path is in the comment line above them).
        let mut f = [""; ROW_FIELDS];
        let fields = split_fields(t, &mut f);
        let layer = match f[0] {
            "X_POSIX" => Layer::Posix,
            "X_MPIIO" => Layer::MpiIo,
            _ => return ctx.malformed(line_no, "not a DXT segment row (X_POSIX or X_MPIIO)"),
        };
        if fields < 8 {
            return ctx.malformed(line_no, format!("{fields} fields; a segment row has at least 8"));
        }
        let op = match f[2] {
            "read" => IoOp::Read,
            "write" => IoOp::Write,
            other => return ctx.malformed(line_no, format!("unknown operation {other:?}")),
        };
        let (Ok(rank), Ok(offset), Ok(length), Some(start), Some(end)) = (
            parse_u64(f[1]).and_then(|r| u32::try_from(r).map_err(|_| ())),
            parse_offset(f[4]),
            parse_u64(f[5]),
            seconds_to_ns(f[6]),
            seconds_to_ns(f[7]),
        ) else {
            return ctx.malformed(line_no, "rank, offset, length, start and end must be numbers");
        };
        let tid = if fields > 8 { parse_u64(f[8]).map_or(0, |v| v as u32) } else { 0 };
        ctx.event(&IoEvent {
            pid: rank,
            tid,
            file,
            op,
            layer,
            flags: 0,
            offset,
            requested: length,
            result: i64::try_from(length).unwrap_or(i64::MAX),
            start_ns: start,
            end_ns: end.max(start),
        });
        Ok(())
    })?;
    for module in incomplete {
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

    fn sample(name: &str) -> Option<PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/dxt").join(name);
        p.exists().then_some(p)
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
            let Some(path) = sample(name) else {
                eprintln!("skipped: shared DXT samples not found");
                return;
            };
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
