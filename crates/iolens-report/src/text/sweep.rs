//! `iolens sweep` in the terminal: per curve, a row per block size with the knee and the 90%
//! bandwidth size marked, then why the curve stopped.

use iolens_suites::sweep::SweepResult;
use iolens_workload::format_bytes;

use super::number::{fmt_mib, fmt_ns, fmt_rate};
use super::table::Table;

/// The result as text for the terminal.
pub fn render(r: &SweepResult) -> String {
    let mut out = String::new();
    for c in &r.curves {
        out.push_str(&format!(
            "sweep {} {} {} threads, {:.1} s per point ({}):\n",
            r.target,
            r.rw,
            c.threads,
            r.time_per_point_s,
            if r.direct { "O_DIRECT" } else { "buffered" }
        ));
        let mut t = Table::new(vec!["bs", "IO/s", "MiB/s", "BPS", "p50", "p99", "dev util", "", "warnings"]);
        t.left_aligned = vec![7, 8];
        for p in &c.points {
            let mark = match (Some(p.bs) == c.knee_bs, Some(p.bs) == c.bw90_bs) {
                (true, true) => "<- knee, 90% bw",
                (true, false) => "<- knee",
                (false, true) => "<- 90% bw",
                _ => "",
            };
            t.rows.push(vec![
                format_bytes(p.bs),
                fmt_rate(p.iops),
                fmt_mib(p.bw_bytes_s),
                fmt_rate(p.bps),
                fmt_ns(p.lat_ns.p50 as f64),
                fmt_ns(p.lat_ns.p99 as f64),
                p.device_util.map_or("-".into(), |u| format!("{:.0}%", 100.0 * u)),
                mark.into(),
                p.warnings.iter().map(|w| w.code.as_str()).collect::<Vec<_>>().join(","),
            ]);
        }
        t.render(&mut out);
        if let Some(note) = &c.knee_note {
            out.push_str(&format!("knee: {note}\n"));
        }
        if let Some(why) = &c.stopped_early {
            out.push_str(&format!("stopped early: {why}\n"));
        }
    }
    if let Some(p) = &r.processes {
        out.push_str(&p.line("every rank ran the threads of a curve on its own file"));
    }
    out.push_str(
        "IO/s, MiB/s: application requests per wall second; BPS: 512-byte blocks per busy second\n\
         knee: the largest size, at or after the IOPS peak, still within 90% of the peak IOPS\n",
    );
    out
}
