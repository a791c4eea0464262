//! What several integration test files share: a scratch directory with an ownership registry of
//! its own, so tests neither see nor disturb each other's (or the user's) records.
#![allow(dead_code)] // each test file uses its own part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// The binary under test: this build's, or `IOLENS_TEST_BIN` (to show that a test fails on
/// another build, say the one before a fix).
pub fn bin() -> String {
    std::env::var("IOLENS_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_iolens").to_string())
}

/// The iolens under test, with the caller's environment.
pub fn iolens() -> Command {
    Command::new(bin())
}

/// Runs iolens with `args` and fails the test, showing its output, unless it succeeds.
pub fn run_ok(args: &[&str]) -> Output {
    let out = iolens().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "iolens {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

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

    /// Starts `iolens quick BASE` and kills it (SIGKILL: no chance to clean up) once its scratch
    /// directory exists and it has worked in it a moment; returns that directory.
    pub fn killed_quick(&self, base: &Path) -> PathBuf {
        let mut child = self
            .iolens()
            .args(["quick", s(base), "--time", "2s", "--results", s(&self.path("results"))])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let scratch = || entries(base).into_iter().find(|n| n.starts_with("iolens-quick-"));
        wait_for("quick's scratch directory", || scratch().is_some());
        std::thread::sleep(std::time::Duration::from_millis(500));
        child.kill().unwrap();
        child.wait().unwrap();
        base.join(scratch().unwrap())
    }

    /// The iolens under test, with this environment's registry and no stdin.
    pub fn iolens(&self) -> Command {
        let mut c = Command::new(bin());
        c.env("IOLENS_STATE_DIR", &self.state).stdin(Stdio::null());
        c
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Recognizable bytes standing for a user's data.
pub fn user_data(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// The names in a directory, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !cond() {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
