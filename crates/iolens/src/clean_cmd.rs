//! `iolens clean`: removes what killed runs left behind (their files and scratch directories),
//! as recorded in the ownership registry. Every other command does the same quietly first.

use iolens_engine::ownership::{clean_leftovers, state_dir, Cleaned};

/// Lists what was removed, what was only forgotten (the path now holds something else), and
/// what could not be removed.
pub fn clean() -> Result<(), u8> {
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
    for p in &c.forgotten {
        sayln!("forgotten {} (it now holds something iolens did not create; left alone)", p.display());
    }
    for (p, e) in &c.failed {
        sayln!("could not remove {}: {e}", p.display());
    }
    if c.removed.is_empty() && c.forgotten.is_empty() && c.failed.is_empty() {
        sayln!("nothing left behind by earlier runs");
    }
}

/// Before a command creates files: removes earlier runs' leftovers, saying so on stderr.
pub fn remove_leftovers_quietly() {
    if let Ok(c) = clean_leftovers() {
        for p in &c.removed {
            errln!("iolens: removed {}, left behind by a killed run", p.display());
        }
    }
}
