//! What an installed iolens needs without the source tree: `trace` with the preload library it
//! carries, shell completions, the manual page, and a version that names its commit.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::util::Env;

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn version_names_the_commit() {
    let env = Env::new();
    let out = env.iolens().arg("--version").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let version = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(version.starts_with(concat!("iolens ", env!("CARGO_PKG_VERSION"), " (git ")), "{version}");
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success());
    if let Some(head) = head {
        let commit = String::from_utf8_lossy(&head.stdout).trim().to_string();
        assert!(version.contains(&format!("(git {commit})")), "{version} vs HEAD {commit}");
    }
}

#[test]
fn completions_for_each_shell() {
    let env = Env::new();
    for (shell, marker) in
        [("bash", "complete -F"), ("zsh", "#compdef iolens"), ("fish", "complete -c iolens")]
    {
        let out = env.iolens().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains(marker), "{shell}: no {marker:?} in the script");
        assert!(script.contains("compare") && script.contains("fail-if-slower"), "{shell}: commands missing");
    }
    let out = env.iolens().args(["completions", "cmd.exe"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn the_manual_page_is_roff() {
    let env = Env::new();
    let out = env.iolens().arg("man").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH iolens 1"), "{page}");
    assert!(page.contains("compare") && page.contains("trace"), "{page}");
}

/// Installed alone (as `cargo install` does), iolens still traces: it writes the library it
/// carries into a private cache directory on first use.
#[test]
fn trace_works_from_a_lone_binary() {
    let env = Env::new();
    let bin = env.mkdir("bin");
    let lone = bin.join("iolens");
    std::fs::copy(env!("CARGO_BIN_EXE_iolens"), &lone).unwrap();
    let cache = env.path("cache");
    let work = env.mkdir("elsewhere");
    let trace = |cache_home: &std::path::Path| {
        Command::new(&lone)
            .args(["trace", "--", "sh", "-c", "echo hello > out.txt"])
            .current_dir(&work)
            .env("XDG_CACHE_HOME", cache_home)
            .env("IOLENS_STATE_DIR", &env.state)
            .env_remove("IOLENS_PRELOAD")
            .output()
            .unwrap()
    };
    for _ in 0..2 {
        let out = trace(&cache);
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("out.txt"), "the write was not traced: {}", text(&out));
    }
    let dir = cache.join("iolens");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o755);
    let copies: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(copies.len(), 1, "one copy, reused: {copies:?}");

    // A cache directory others may write into is refused, not used: nothing is written there,
    // and the library comes from the next trusted place (HOME's cache; /var/cache for root).
    let shared = env.mkdir("shared");
    std::fs::create_dir(shared.join("iolens")).unwrap();
    std::fs::set_permissions(shared.join("iolens"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = trace(&shared);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_dir(shared.join("iolens")).unwrap().count(), 0);
}
