//! The terminal page of a binary Darshan log's own data, printed above the trace summary of its
//! DXT segments: the job, its mounts, and each module's exact counter totals.

use std::fmt::Write;

use iolens_import::darshan::{DarshanLog, DarshanModule};
use iolens_report::table::Table;

/// A module row's reads, writes, bytes read and bytes written: DXT segments, or the sums of
/// the module's counters of each kind (None where the module has no such counter).
fn row_totals(m: &DarshanModule) -> [Option<i64>; 4] {
    if let Some(d) = &m.dxt {
        return [d.read_segments, d.write_segments, d.read_bytes, d.write_bytes].map(|v| Some(v as i64));
    }
    let sum = |suffix: &str| {
        let mut matching = m.counters.iter().filter(|c| c.name.ends_with(suffix)).map(|c| c.total).peekable();
        matching
            .peek()
            .is_some()
            .then(|| matching.fold(0i64, |a, v| if a < 0 || v < 0 { -1 } else { a.saturating_add(v) }))
    };
    [sum("_READS"), sum("_WRITES"), sum("_BYTES_READ"), sum("_BYTES_WRITTEN")]
}

fn cell(v: Option<i64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v < 0 => "n/a".into(),
        Some(v) => v.to_string(),
    }
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
        let mut row = vec![m.name.clone(), m.version.to_string()];
        if m.decoded || m.dxt.is_some() {
            row.push(m.records.to_string());
            row.extend(row_totals(m).map(cell));
        } else {
            row.extend(std::iter::repeat_n("-".to_string(), 5));
        }
        row.push(note.into());
        t.rows.push(row);
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
