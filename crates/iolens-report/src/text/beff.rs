//! `iolens beff` in the terminal: each pattern's bandwidth averaged over the message sizes and
//! at Lmax, then the columns of the b_eff paper's Table 1. MB/s are 10^6 bytes/s, as there.

use std::fmt::Write;

use iolens_suites::beff::{PatternResult, Summary};
use iolens_workload::format_bytes;

fn mb(v: f64) -> String {
    format!("{:.1}", v / 1e6)
}

/// The result of b_eff on `summary.processes` processes measured with the MPI `library`.
pub fn render(summary: &Summary, results: &[PatternResult], library: &str) -> String {
    let s = summary;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "b_eff on {} processes ({library}), Lmax {}; MB/s = 10^6 bytes/s",
        s.processes,
        format_bytes(s.lmax)
    );
    let _ = writeln!(out, "{:<9} {:<28} {:>14} {:>14}", "pattern", "ring sizes", "avg over L", "at Lmax");
    for r in results {
        let rings: Vec<String> = r.ring_sizes.iter().map(|k| k.to_string()).collect();
        let _ = writeln!(
            out,
            "{:<9} {:<28} {:>14} {:>14}",
            r.pattern,
            rings.join(","),
            mb(r.average),
            mb(r.at_lmax)
        );
    }
    let _ = writeln!(
        out,
        "logavg ring patterns {} MB/s, random patterns {} MB/s\n",
        mb(s.logavg_ring),
        mb(s.logavg_random)
    );
    let _ = writeln!(
        out,
        "{:>9} {:>10} {:>10} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "processes", "b_eff", "per proc", "Lmax", "ping-pong", "at Lmax", "per proc", "ring/proc"
    );
    let _ = writeln!(
        out,
        "{:>9} {:>10} {:>10} {:>9} {:>10} {:>10} {:>10} {:>10}",
        s.processes,
        mb(s.b_eff),
        mb(s.b_eff_per_process),
        format_bytes(s.lmax),
        s.ping_pong.map(mb).unwrap_or_else(|| "-".into()),
        mb(s.b_eff_at_lmax),
        mb(s.b_eff_at_lmax_per_process),
        mb(s.ring_at_lmax_per_process)
    );
    let _ = writeln!(out, "b_eff = {} MB/s", mb(s.b_eff));
    out
}
