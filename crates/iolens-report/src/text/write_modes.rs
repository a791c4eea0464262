//! `iolens write-modes` in the terminal: a row per write mode, apparent against effective rates.

use iolens_suites::write_modes::WriteModesResult;
use iolens_workload::format_bytes;

use super::number::{fmt_mib, fmt_rate};
use super::table::Table;

/// The result as text for the terminal.
pub fn render(r: &WriteModesResult) -> String {
    let mut out = format!(
        "write-modes {}: random {} writes, {} per mode by {} thread(s), each block once{}\n\
         size: {}\n",
        r.target,
        format_bytes(r.bs),
        format_bytes(r.bytes_per_mode),
        r.threads,
        if r.fresh_files { ", fresh files per mode" } else { " (the same file for every mode)" },
        r.sizing.reason
    );
    let mut t = Table::new(vec![
        "mode",
        "ops",
        "write s",
        "fsync s",
        "close s",
        "phase s",
        "apparent IO/s",
        "effective IO/s",
        "apparent MiB/s",
        "effective MiB/s",
        "device MiB",
        "warnings",
    ]);
    t.left_aligned = vec![11];
    for m in &r.modes {
        t.rows.push(vec![
            m.mode.into(),
            m.ops.to_string(),
            format!("{:.3}", m.write_s),
            format!("{:.3}", m.fsync_s),
            format!("{:.3}", m.close_s),
            format!("{:.3}", m.phase_s),
            fmt_rate(m.apparent_iops),
            fmt_rate(m.effective_iops),
            fmt_mib(m.apparent_bw_bytes_s),
            fmt_mib(m.effective_bw_bytes_s),
            m.device_write_bytes.map_or("-".into(), |b| fmt_mib(b as f64)),
            if m.capped_by_time {
                let mut w = vec!["stopped by --time".to_string()];
                w.extend(m.warnings.iter().map(|w| w.code.clone()));
                w.join(",")
            } else {
                m.warnings.iter().map(|w| w.code.as_str()).collect::<Vec<_>>().join(",")
            },
        ]);
    }
    t.render(&mut out);
    if let Some(p) = &r.processes {
        out.push_str(&p.line(&format!(
            "every rank wrote {} per mode into fresh files of its own",
            format_bytes(r.bytes_per_rank.unwrap_or(r.bytes_per_mode))
        )));
    }
    out.push_str(
        "apparent = ops / time inside write calls (mean per thread); effective = ops / whole phase (fsync and close included); \
         device MiB = bytes the device wrote inside the phase\n",
    );
    out
}
