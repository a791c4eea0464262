//! Tracing unmodified programs: the preload library built into iolens and written out where
//! only this user can change it ([`preload`]), running the program with it ([`spawn`]), and the
//! ranks of an MPI job meeting in one directory so that rank 0 summarizes them all ([`job`]), and
//! the signals that stop a command and are passed on to the traced program ([`signals`]).
//! The summary itself is `iolens_analyze::trace_summary`'s.

pub mod job;
pub mod preload;
pub mod signals;
pub mod spawn;

use std::path::Path;

use iolens_ownership::ScratchDir;

pub use job::RankOfJob;
pub use spawn::{exit_like, program_notes, run_traced, ProgramNote, Ran, StreamDir, TracedProgram};

/// The directory the busy-time union spills sorted runs into: a [`ScratchDir`] of iolens's own,
/// in this process's lease, so the one of a killed analysis is found by `iolens clean`.
pub fn registered_spill_dir(base: &Path) -> std::io::Result<iolens_analyze::SpillDir> {
    let dir = ScratchDir::create(base, "iolens-union.", false)?;
    Ok(iolens_analyze::SpillDir { path: dir.path().to_path_buf(), guard: Box::new(dir) })
}

#[cfg(test)]
mod spill_tests {
    use super::*;
    use std::fs;

    /// A killed analysis must leave nothing `clean` cannot find: the spill directory is in the
    /// lease on disk while it exists, and goes with its runs.
    #[test]
    fn the_unions_spill_directory_is_in_the_lease_and_goes_with_its_runs() {
        let Some(state) = iolens_ownership::state_dir() else {
            panic!("no ownership registry for this test: {:?}", iolens_ownership::registry_notice())
        };
        let base = tempfile::tempdir().unwrap();
        let spill = registered_spill_dir(base.path()).unwrap();
        fs::write(spill.path.join("iolens-run-0.busy"), b"runs").unwrap();
        let hex: String =
            spill.path.as_os_str().as_encoded_bytes().iter().map(|b| format!("{b:02x}")).collect();
        let leases: String = fs::read_dir(state.join("runs"))
            .unwrap()
            .filter_map(|e| fs::read_to_string(e.unwrap().path()).ok())
            .collect();
        assert!(leases.lines().any(|l| l.starts_with("d ") && l.ends_with(&hex)), "{leases}");
        let path = spill.path.clone();
        drop(spill);
        assert!(!path.exists());
    }
}
