//! What an installed iolens needs without the source tree: `trace` with the preload library it
//! carries, shell completions, the manual page, and a version that names its commit. And what a
//! reader of the source tree needs: documentation that stays true (the crate table of
//! docs/architecture.md names the workspace's crates; every relative link leads somewhere).

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
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

/// One page per command, as git and fio users know them: `iolens man run` is iolens-run(1), and
/// `--all DIR` writes every page; a mistyped command is refused with the nearest one.
#[test]
fn every_command_has_its_own_manual_page() {
    let env = Env::new();
    let out = env.iolens().args(["man", "run"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH iolens-run 1"), "{page}");
    // Its own flags, which the page of iolens(1) does not list (roff writes `-` as `\-`).
    assert!(page.contains("\\-\\-rw"), "{page}");
    let out = env.iolens().args(["man", "rn"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("did you mean run?"), "{}", text(&out));
    let dir = env.mkdir("man");
    let out = env.iolens().args(["man", "--all"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for command in
        ["iolens", "iolens-run", "iolens-trace", "iolens-analyze", "iolens-quick", "iolens-compare"]
    {
        let page = std::fs::read_to_string(dir.join(format!("{command}.1"))).unwrap();
        assert!(page.contains(&format!(".TH {command} 1")), "{command}: {page}");
    }
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

/// The repository's root: this crate lives in `crates/iolens`.
fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The crates of the workspace: every directory under `crates/` with a Cargo.toml.
fn workspace_crates(root: &Path) -> BTreeSet<String> {
    std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .map(|dir| dir.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The crate names in the first column of the table under `## Crates` in docs/architecture.md.
fn documented_crates(architecture: &str) -> BTreeSet<String> {
    let section = architecture
        .split("\n## ")
        .find(|section| section.starts_with("Crates\n"))
        .expect("docs/architecture.md has a `## Crates` section");
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|row| row.split_once('`'))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// docs/architecture.md is the map of the code: a crate missing from its table is undocumented,
/// and a row for a crate that no longer exists sends the reader looking for nothing.
#[test]
fn architecture_lists_every_crate() {
    let root = repository_root();
    let architecture = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let documented = documented_crates(&architecture);
    let crates = workspace_crates(&root);
    let undocumented: Vec<_> = crates.difference(&documented).collect();
    let gone: Vec<_> = documented.difference(&crates).collect();
    assert!(undocumented.is_empty(), "crates missing from docs/architecture.md's table: {undocumented:?}");
    assert!(gone.is_empty(), "docs/architecture.md's table names crates that are not in crates/: {gone:?}");
}

/// The Markdown pages of the repository: README, CONTRIBUTING, CHANGELOG and docs/.
fn documentation_pages(root: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"]
        .iter()
        .map(|name| root.join(name))
        .filter(|page| page.is_file())
        .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Link targets `](target)` of a Markdown page, outside fenced code blocks.
fn link_targets(page: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code = false;
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// The anchors GitHub gives a page's headings: lower case, spaces to hyphens, punctuation other
/// than `-` and `_` dropped.
fn heading_anchors(page: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut anchors = BTreeSet::new();
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let anchor: String = title
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .flat_map(char::to_lowercase)
            .collect();
        anchors.insert(anchor);
    }
    anchors
}

/// Every relative link in the documentation leads to a file that exists, and every `#anchor`
/// to a heading of the page it names: pages move, and a dead link is where a reader gives up.
#[test]
fn documentation_links_resolve() {
    let root = repository_root();
    let mut dead = Vec::new();
    for page in documentation_pages(&root) {
        let text = std::fs::read_to_string(&page).unwrap();
        let shown = page.strip_prefix(&root).unwrap().display().to_string();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            if !linked.exists() {
                dead.push(format!("{shown}: {target} (no such file)"));
                continue;
            }
            if !anchor.is_empty() && linked.extension().is_some_and(|ext| ext == "md") {
                let linked_text = std::fs::read_to_string(&linked).unwrap();
                if !heading_anchors(&linked_text).contains(anchor) {
                    dead.push(format!("{shown}: {target} (no such heading)"));
                }
            }
        }
    }
    assert!(dead.is_empty(), "dead links in the documentation:\n{}", dead.join("\n"));
}
