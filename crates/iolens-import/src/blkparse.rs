//! `blkparse` default text output: device requests, from queueing (`Q`) to completion (`C`).
//!
//! A line reads `maj,min cpu seq seconds pid action rwbs sector + count [process]`. Requests
//! are matched by device, direction and sector; other actions (G, I, D, M, P, U, …) and the
//! summary block at the end are not events.

use std::collections::HashMap;
use std::io::Read;

use iolens_record::event::{IoEvent, IoOp, Layer};

use crate::{for_each_line, seconds_to_ns, Ctx, ImportError};

struct Line<'a> {
    dev: &'a str,
    time_ns: u64,
    pid: u32,
    action: &'a str,
    rwbs: &'a str,
    sector: Option<u64>,
    count: Option<u64>,
    error: bool,
}

fn parse(line: &str) -> Option<Line<'_>> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 7 || !f[0].contains(',') || f[0].split(',').any(|p| p.parse::<u32>().is_err()) {
        return None;
    }
    f[1].parse::<u32>().ok()?;
    f[2].parse::<u64>().ok()?;
    let time_ns = seconds_to_ns(f[3])?;
    let (sector, count) = match (f.get(7), f.get(8), f.get(9)) {
        (Some(s), Some(&"+"), Some(n)) => (s.parse().ok(), n.parse().ok()),
        _ => (None, None),
    };
    Some(Line {
        dev: f[0],
        time_ns,
        pid: f[4].parse().ok()?,
        action: f[5],
        rwbs: f[6],
        sector,
        count,
        error: line.contains("[error]") || line.ends_with("[-5]"),
    })
}

/// Whether a line looks like blkparse output (for format detection).
pub(crate) fn looks_like(line: &str) -> bool {
    parse(line).is_some_and(|l| l.action.len() <= 2 && l.action.chars().all(|c| c.is_ascii_uppercase()))
}

/// Summary lines blkparse prints after the events.
fn is_summary(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("CPU")
        || t.starts_with("Total")
        || t.starts_with("Throughput")
        || t.starts_with("Events")
        || t.starts_with("Skips")
        || t.starts_with("Reads")
        || t.starts_with("Writes")
        || t.starts_with("Read ")
        || t.starts_with("Write ")
        || t.starts_with("IO unplugs")
        || t.starts_with("Timer unplugs")
        || t.contains(':')
}

pub(crate) fn import(ctx: &mut Ctx, input: impl Read) -> Result<(), ImportError> {
    // Queued requests waiting for completion: (device, write?, sector) -> (start, pid, sectors).
    let mut queued: HashMap<(String, bool, u64), (u64, u32, u64)> = HashMap::new();
    let mut devices: HashMap<String, u32> = HashMap::new();
    let mut in_summary = false;
    for_each_line(ctx, input, |ctx, line_no, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        let Some(l) = parse(line) else {
            if in_summary || is_summary(line) {
                in_summary = true;
                return Ok(());
            }
            return ctx
                .malformed(line_no, "not a blkparse event line (maj,min cpu seq time pid action rwbs ...)");
        };
        let write = l.rwbs.contains('W');
        match (l.action, l.sector, l.count) {
            ("Q", Some(sector), Some(count)) => {
                queued.insert((l.dev.to_string(), write, sector), (l.time_ns, l.pid, count));
            }
            ("C", Some(sector), Some(_)) => {
                let Some((start, pid, count)) = queued.remove(&(l.dev.to_string(), write, sector)) else {
                    return Ok(()); // queued before the trace started
                };
                let file = match devices.get(l.dev) {
                    Some(&id) => id,
                    None => {
                        let id = ctx.new_path(&format!("device {}", l.dev));
                        devices.insert(l.dev.to_string(), id);
                        id
                    }
                };
                let op = if l.rwbs.contains('D') {
                    IoOp::Other
                } else if l.rwbs.contains('F') && count == 0 {
                    IoOp::Flush
                } else if write {
                    IoOp::Write
                } else {
                    IoOp::Read
                };
                let bytes = count.saturating_mul(512);
                ctx.event(&IoEvent {
                    pid,
                    tid: pid,
                    file,
                    op,
                    layer: Layer::Block,
                    flags: 0,
                    offset: sector.saturating_mul(512),
                    requested: bytes,
                    result: if l.error {
                        -(libc::EIO as i64)
                    } else {
                        i64::try_from(bytes).unwrap_or(i64::MAX)
                    },
                    start_ns: start,
                    end_ns: l.time_ns.max(start),
                });
            }
            _ => {}
        }
        Ok(())
    })?;
    if !queued.is_empty() {
        ctx.report.notes.push(format!("{} queued block requests never completed in the trace", queued.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::import_text;
    use crate::Format;

    const SAMPLE: &str = "  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kworker/u16:2]
  8,0    3        2     0.000001000   697  G   W 223490 + 8 [kworker/u16:2]
  8,0    3        3     0.000002000   697  I   W 223490 + 8 [kworker/u16:2]
  8,0    1        1     0.000010000  1234  Q   R 1000 + 256 [dd]
  8,0    3        4     0.000150000     0  C   W 223490 + 8 [0]
  8,0    1        2     0.000500000     0  C   R 1000 + 256 [0]
  8,0    1        3     0.000600000  1234  Q   R 5000 + 8 [dd]
CPU1 (8,0):
 Reads Queued:           2,        1MiB\t Writes Queued:           1,        4KiB
Total (8,0):
Throughput (R/W): 100KiB/s / 8KiB/s
Events (8,0): 9 entries
";

    #[test]
    fn queue_to_completion_pairs() {
        let (c, r) = import_text(Format::Blkparse, SAMPLE, true);
        let r = r.unwrap();
        assert_eq!(r.events, 2);
        let w = &c.events[0];
        assert_eq!(
            (w.op, w.offset, w.requested, w.start_ns, w.end_ns, w.pid),
            (IoOp::Write, 223490 * 512, 4096, 0, 150_000, 697)
        );
        let rd = &c.events[1];
        assert_eq!((rd.op, rd.requested, rd.duration_ns()), (IoOp::Read, 256 * 512, 490_000));
        assert_eq!(c.path_of(rd.file), "device 8,0");
        assert!(r.notes[0].contains("1 queued"), "{:?}", r.notes);
    }

    #[test]
    fn malformed_lines() {
        let text = "  8,0    3        1     0.000000000   697  Q   W 1 + 8 [x]\nhello world\n";
        let (_, r) = import_text(Format::Blkparse, text, false);
        let r = r.unwrap();
        assert_eq!((r.malformed_count, r.malformed[0].line), (1, 2));
        let (_, r) = import_text(Format::Blkparse, text, true);
        assert!(r.is_err());
        assert!(looks_like("  8,0    3        1     0.000000000   697  Q   W 1 + 8 [x]"));
    }
}
