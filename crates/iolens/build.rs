//! Embeds the commit the binary is built from (`iolens --version`). The preload library the
//! binary carries is built by `iolens-trace`'s build script.

use std::process::Command;

fn main() {
    embed_git_commit();
}

/// `iolens --version` names the commit it was built from: `IOLENS_GIT_COMMIT`, "unknown"
/// outside a git checkout (a source tarball).
fn embed_git_commit() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=IOLENS_GIT_COMMIT={commit}");
    // A new commit moves HEAD or the branch it names (loose or packed).
    let mut watched =
        vec![git(&["rev-parse", "--git-path", "HEAD"]), git(&["rev-parse", "--git-path", "packed-refs"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
    }
    for path in watched.into_iter().flatten() {
        println!("cargo:rerun-if-changed={path}");
    }
}
