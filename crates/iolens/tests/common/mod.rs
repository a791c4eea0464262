//! What several integration test files share: a scratch directory with an ownership registry of
//! its own, so tests neither see nor disturb each other's (or the user's) records.
#![allow(dead_code)] // each test file uses its own part of it

use std::path::PathBuf;
use std::process::{Command, Stdio};

pub struct Env {
    pub dir: tempfile::TempDir,
    pub state: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let state = dir.path().join("state");
        Env { dir, state }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn mkdir(&self, name: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::create_dir(&p).unwrap();
        p
    }

    /// The iolens under test, with this environment's registry and no stdin.
    pub fn iolens(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iolens"));
        c.env("IOLENS_STATE_DIR", &self.state).stdin(Stdio::null());
        c
    }
}
