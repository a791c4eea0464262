//! What a test needs from the machine (a tool, root, a mount, a data set) and what happens when
//! it is missing: the test says "skipped: …" and returns, unless `IOLENS_REQUIRE_TOOLS=1`
//! (`.ci/run` sets it), where the missing prerequisite fails the test, so that CI cannot pass a
//! test that never ran.
//!
//! The one place every skip of the workspace goes through: the tests of other crates (and the
//! `#[cfg(test)]` modules that read shared data) include this file by `#[path]`, so it uses the
//! standard library only.
#![allow(dead_code)] // each crate that includes this file uses its own part of it

use std::process::Command;

/// The variable that turns a missing prerequisite from a skip into a failure.
pub const REQUIRE_TOOLS: &str = "IOLENS_REQUIRE_TOOLS";

/// Whether the test may go on: `true` when `present`. Otherwise, under `IOLENS_REQUIRE_TOOLS=1`
/// the test fails ("required but missing: WHAT"); elsewhere it prints "skipped: WHAT" and the
/// caller returns (`if !require(root(), "root, to mount") { return; }`).
#[track_caller]
pub fn require(present: bool, what: &str) -> bool {
    required_under(REQUIRE_TOOLS, present, what)
}

/// The variable that makes a missing data set beside the checkout a failure too.
pub const REQUIRE_DATA: &str = "IOLENS_REQUIRE_DATA";

/// [`require`] for the real data sets beside the checkout (`../shared/data`): they are not part
/// of the repository, so a checkout elsewhere has none, and the test is skipped, also under
/// `IOLENS_REQUIRE_TOOLS=1`. `IOLENS_REQUIRE_DATA=1` (which `.ci/run` sets when the data is
/// beside its checkout) makes them required.
#[track_caller]
pub fn require_data(present: bool, what: &str) -> bool {
    required_under(REQUIRE_DATA, present, what)
}

/// `present`, or: a failure when `variable` is 1, else "skipped: WHAT" and `false`.
#[track_caller]
fn required_under(variable: &str, present: bool, what: &str) -> bool {
    if present {
        return true;
    }
    assert!(std::env::var(variable).as_deref() != Ok("1"), "required but missing: {what}");
    eprintln!("skipped: {what}");
    false
}

/// [`require`] of a value that may be missing (a mount, a loop device): the value when there
/// is one (`let Some(fs) = require_some(mount(), "a tmpfs mount") else { return };`).
#[track_caller]
pub fn require_some<T>(value: Option<T>, what: &str) -> Option<T> {
    if require(value.is_some(), what) {
        value
    } else {
        None
    }
}

/// [`require`] of a program on `PATH`.
#[track_caller]
pub fn require_tool(tool: &str) -> bool {
    require(have(tool), &format!("{tool} not installed"))
}

/// Whether `tool` is on `PATH`.
pub fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// Whether this process runs as root (mounts, loop devices, namespaces, other users).
pub fn root() -> bool {
    // /proc/self belongs to the effective user; read so, crates without `libc` can include this.
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}
