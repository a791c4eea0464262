//! `iolens clean`: removes what killed runs of this host left behind (their files and scratch
//! directories), as recorded in the ownership registry, proving each object first. Every other
//! command that writes does the same quietly first.

use iolens_ownership::{clean_leftovers, registry_notice, state_dir};

/// Lists what was removed, what was left in place and why, what was only forgotten (the path
/// now holds something else), and what could not be removed.
pub fn clean() -> Result<(), u8> {
    if let Some(notice) = registry_notice() {
        errln!("iolens: {notice}");
    }
    match clean_leftovers() {
        Ok(c) => {
            say!("{}", iolens_report::text::clean::render(&c));
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
