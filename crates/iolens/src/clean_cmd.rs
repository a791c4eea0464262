//! `iolens clean`: removes what killed runs of this host left behind (their files and scratch
//! directories), as recorded in the ownership registry, proving each object first. Every other
//! command that writes does the same quietly first.

use iolens_ownership::{clean_leftovers, registry_notice, state_dir, Cleaned};

/// Lists what was removed, what was left in place and why, what was only forgotten (the path
/// now holds something else), and what could not be removed.
pub fn clean() -> Result<(), u8> {
    if let Some(notice) = registry_notice() {
        errln!("iolens: {notice}");
    }
    match clean_leftovers() {
        Ok(c) => {
            report(&c);
            if c.failed.is_empty() {
                Ok(())
            } else {
                Err(1)
            }
        }
        Err(e) => {
            let registry =
                state_dir().map_or_else(|| "(no state directory)".into(), |d| d.display().to_string());
            errln!("iolens: cannot read the ownership registry in {registry}: {e}");
            Err(1)
        }
    }
}

fn report(c: &Cleaned) {
    for p in &c.removed {
        sayln!("removed {}", p.display());
    }
    for (p, why) in &c.left {
        sayln!("left {}: {why}", p.display());
    }
    for p in &c.forgotten {
        sayln!(
            "forgotten {} (it now holds something iolens did not create, or nothing; left alone)",
            p.display()
        );
    }
    for (p, e) in &c.failed {
        sayln!("could not remove {}: {e}", p.display());
    }
    if c.removed.is_empty() && c.forgotten.is_empty() && c.failed.is_empty() && c.left.is_empty() {
        sayln!("nothing left behind by earlier runs");
    }
    if c.live_runs > 0 {
        sayln!("{} run(s) still going on this host: not touched", c.live_runs);
    }
    if c.other_hosts > 0 {
        sayln!(
            "{} other host(s), boot(s) or namespace(s) share this registry: their runs are judged only there",
            c.other_hosts
        );
    }
}

/// Before a command creates files: removes earlier runs' leftovers, saying so on stderr (and
/// what was left in place, and why).
pub fn remove_leftovers_quietly() {
    if let Some(notice) = registry_notice() {
        errln!("iolens: {notice}");
    }
    if let Ok(c) = clean_leftovers() {
        for p in &c.removed {
            errln!("iolens: removed {}, left behind by a killed run", p.display());
        }
        for (p, why) in &c.left {
            errln!("iolens: left {} of a killed run in place: {why}", p.display());
        }
    }
}
