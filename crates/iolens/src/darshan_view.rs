//! The terminal page of a binary Darshan log's own data, printed above the trace summary of its
//! DXT segments: the job, its mounts, and each module's exact counter totals.

use std::fmt::Write;

use iolens_import::darshan::{DarshanLog, DarshanModule};
use iolens_report::table::Table;

/// The read and write operation counters of each decoded module, summed into its row.
fn ops(m: &DarshanModule) -> (i64, i64) {
    let sum = |suffixes: &[&str]| {
        m.counters.iter().filter(|c| suffixes.iter().any(|s| c.name.ends_with(s))).map(|c| c.total).sum()
    };
    (sum(&["_READS"]), sum(&["_WRITES"]))
}

fn bytes(m: &DarshanModule) -> (i64, i64) {
    let find = |suffix: &str| m.counters.iter().find(|c| c.name.ends_with(suffix)).map_or(0, |c| c.total);
    (find("_BYTES_READ"), find("_BYTES_WRITTEN"))
}

/// Real jobs list dozens of mounts; the first few tell the file systems apart.
const MOUNTS_SHOWN: usize = 8;

pub fn render(log: &DarshanLog) -> String {
    let j = &log.job;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "darshan log {} ({}): job {}, {} processes, uid {}\nexe: {}",
        log.log_version, log.compression, j.jobid, j.nprocs, j.uid, j.exe
    );
    let _ = writeln!(
        out,
        "start {}.{:09} end {}.{:09} (Unix seconds), runtime {:.4} s — the wall time below",
        j.start_time_s, j.start_time_ns, j.end_time_s, j.end_time_ns, j.runtime_s
    );
    if !log.mounts.is_empty() {
        let mounts: Vec<String> =
            log.mounts.iter().take(MOUNTS_SHOWN).map(|m| format!("{} ({})", m.path, m.fs_type)).collect();
        let more = log.mounts.len().saturating_sub(MOUNTS_SHOWN);
        let more = if more > 0 { format!(" and {more} more (all in --json)") } else { String::new() };
        let _ = writeln!(out, "mounts: {}{more}", mounts.join(", "));
    }
    if log.modules.is_empty() {
        out.push_str("\nno module recorded any data\n");
        return out;
    }
    out.push_str(
        "\nmodules (counter totals are exact sums over all records; DXT rows count trace segments):\n",
    );
    let mut t = Table::new(vec![
        "module",
        "ver",
        "records",
        "reads",
        "writes",
        "bytes read",
        "bytes written",
        "note",
    ]);
    t.left_aligned = vec![7];
    for m in &log.modules {
        let note = match (m.partial, m.decoded) {
            (true, _) => "PARTIAL: ran out of memory",
            (false, false) => "not decoded by iolens",
            _ => "",
        };
        let (reads, writes, read_bytes, write_bytes) = match &m.dxt {
            Some(d) => {
                (d.read_segments as i64, d.write_segments as i64, d.read_bytes as i64, d.write_bytes as i64)
            }
            None if m.decoded => {
                let (r, w) = ops(m);
                let (rb, wb) = bytes(m);
                (r, w, rb, wb)
            }
            None => {
                t.rows.push(vec![
                    m.name.clone(),
                    m.version.to_string(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    note.into(),
                ]);
                continue;
            }
        };
        t.rows.push(vec![
            m.name.clone(),
            m.version.to_string(),
            m.records.to_string(),
            reads.to_string(),
            writes.to_string(),
            read_bytes.to_string(),
            write_bytes.to_string(),
            note.into(),
        ]);
    }
    t.render(&mut out);
    out.push_str("counter totals (n/a: the runtime could not monitor it; times are summed over records):\n");
    for m in log.modules.iter().filter(|m| !m.counters.is_empty()) {
        let counters: Vec<String> = m
            .counters
            .iter()
            .map(|c| if c.total < 0 { format!("{} n/a", c.name) } else { format!("{} {}", c.name, c.total) })
            .collect();
        let times: Vec<String> =
            [("read", m.read_time_s), ("write", m.write_time_s), ("meta", m.meta_time_s)]
                .into_iter()
                .filter_map(|(what, t)| t.map(|t| format!("{what} {t:.6} s")))
                .collect();
        let times = if times.is_empty() { String::new() } else { format!("; time {}", times.join(", ")) };
        let _ = writeln!(out, "{}: {}{times}", m.name, counters.join(", "));
    }
    out
}
