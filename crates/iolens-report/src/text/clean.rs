//! `iolens clean` in the terminal: what the ownership registry's clean-up did with each object
//! killed runs left behind.

use std::fmt::Write;

use iolens_ownership::Cleaned;

/// What `clean` did: one line per object removed, left (and why), forgotten or not removable,
/// and the runs it did not judge (live here, or of other hosts sharing the registry).
pub fn render(c: &Cleaned) -> String {
    let mut out = String::new();
    for p in &c.removed {
        let _ = writeln!(out, "removed {}", p.display());
    }
    for (p, why) in &c.left {
        let _ = writeln!(out, "left {}: {why}", p.display());
    }
    for p in &c.forgotten {
        let _ = writeln!(
            out,
            "forgotten {} (it now holds something iolens did not create, or nothing; left alone)",
            p.display()
        );
    }
    for (p, e) in &c.failed {
        let _ = writeln!(out, "could not remove {}: {e}", p.display());
    }
    if c.removed.is_empty() && c.forgotten.is_empty() && c.failed.is_empty() && c.left.is_empty() {
        let _ = writeln!(out, "nothing left behind by earlier runs");
    }
    if c.live_runs > 0 {
        let _ = writeln!(out, "{} run(s) still going on this host: not touched", c.live_runs);
    }
    if c.other_hosts > 0 {
        let _ =
            writeln!(out,
            "{} other host(s), boot(s) or namespace(s) share this registry: their runs are judged only there",
            c.other_hosts
        );
    }
    out
}
