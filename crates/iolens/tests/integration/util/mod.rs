//! What the integration test modules share: the binary under test, a scratch directory with an
//! ownership registry of its own (so tests neither see nor disturb each other's, or the user's,
//! records), waits on observable state, and the prerequisites a test may skip without
//! (`prerequisite`); `schema_check` and `floats_check` check JSON outputs against `schemas/`.
#![allow(dead_code)] // the MPI modules, built only with the `mpi` feature, use parts of it

pub mod floats_check;
pub mod loop_fs;
pub mod prerequisite;
pub mod schema_check;

pub use prerequisite::{have, require, require_some, require_tool, root};

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

/// Sends `signal` to `child` and waits for it to end: its status and how long it took. Not a
/// speed limit: still running after `limit` (far longer than the command was asked to run)
/// means the signal was lost, and the test fails saying so.
pub fn signal_and_wait(
    child: &mut std::process::Child,
    signal: i32,
    limit: std::time::Duration,
) -> (std::process::ExitStatus, std::time::Duration) {
    // SAFETY: signalling a child the test started.
    unsafe { libc::kill(child.id() as i32, signal) };
    let sent = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, sent.elapsed());
        }
        if sent.elapsed() > limit {
            let _ = child.kill();
            panic!("{:?} still runs {limit:?} after signal {signal}", child.id());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A JSON integer, or the test fails naming the value.
pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
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

    /// Starts `iolens quick BASE` and kills it (SIGKILL: no chance to clean up) once it has done
    /// I/O in its scratch directory; returns that directory.
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
        let scratch_dir = base.join(scratch().unwrap());
        wait_for("quick to do I/O in its scratch directory", || {
            entries(&scratch_dir).iter().any(|n| holds_written_data(&scratch_dir.join(n)))
        });
        child.kill().unwrap();
        child.wait().unwrap();
        base.join(scratch().unwrap())
    }

    /// Runs the iolens under test with this environment's registry, whatever it ends with.
    pub fn run(&self, args: &[&str]) -> Output {
        self.iolens().args(args).output().unwrap()
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

/// Waits until `cond` holds, polling. The bound only ends a hang (it is far beyond what any
/// wait takes on a loaded machine): tests wait on state they can see, never for a time.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !cond() {
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether `path` is a file holding data someone wrote into it: iolens lays its files out as
/// allocated zeros (posix_fallocate) and writes random bytes, so a byte that is not zero means a
/// run has done I/O in it (the file is no longer just made).
pub fn holds_written_data(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.iter().any(|&b| b != 0))
}

/// Waits until the file system's clock has moved past `file`'s modification time, so that a
/// write to it from now on shows in its mtime (timestamps are as coarse as the kernel's tick).
/// The clock is read from a probe file written under `probe_dir`, which is removed after.
pub fn wait_past_mtime(file: &Path, probe_dir: &Path) {
    let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let then = mtime(file);
    let probe = probe_dir.join(".mtime-probe");
    wait_for("the file system's clock to move past a file's mtime", || {
        std::fs::write(&probe, b"tick").unwrap();
        mtime(&probe) > then
    });
    std::fs::remove_file(&probe).unwrap();
}

/// The test of the skip helper: run again in a child process of this test binary (so the
/// variable is not set under the other tests' feet), a missing prerequisite fails the test under
/// `IOLENS_REQUIRE_TOOLS=1` and is a skip without it.
#[test]
fn a_missing_prerequisite_fails_the_test_only_when_tools_are_required() {
    const CHILD: &str = "IOLENS_TEST_PREREQUISITE_CHILD";
    if std::env::var_os(CHILD).is_some() {
        if require_tool("iolens-no-such-tool") {
            panic!("a tool that does not exist was found");
        }
        return;
    }
    let run = |required: &str| {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "util::a_missing_prerequisite_fails_the_test_only_when_tools_are_required"])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env(prerequisite::REQUIRE_TOOLS, required)
            .output()
            .unwrap()
    };
    let strict = run("1");
    let said =
        String::from_utf8_lossy(&strict.stderr).into_owned() + &String::from_utf8_lossy(&strict.stdout);
    assert!(!strict.status.success(), "a missing tool passed under IOLENS_REQUIRE_TOOLS=1:\n{said}");
    assert!(said.contains("required but missing: iolens-no-such-tool not installed"), "{said}");
    assert!(said.contains("1 failed"), "{said}");
    let lenient = run("0");
    let said =
        String::from_utf8_lossy(&lenient.stderr).into_owned() + &String::from_utf8_lossy(&lenient.stdout);
    assert!(lenient.status.success(), "{said}");
    assert!(
        said.contains("skipped: iolens-no-such-tool not installed") && said.contains("1 passed"),
        "{said}"
    );
}
