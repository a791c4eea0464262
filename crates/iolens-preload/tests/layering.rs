//! The preload's modules are layered: each uses only modules of its own layer or below, and
//! no two modules use each other, however indirectly. This test reads every source file's
//! `crate::…` paths (comments aside) and fails on a use of a higher layer or on a cycle, so
//! that the layering in `src/lib.rs`'s documentation stays true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first, by the module path prefixes they hold. `lib` is the crate root.
const LAYERS: &[(&str, &[&str])] = &[
    ("base", &["base"]),
    ("stream", &["stream"]),
    ("record", &["record"]),
    ("hook families", &["hooks", "mpi"]),
    ("composition root", &["lib"]),
];

/// The module a source file defines: `src/hooks/posix.rs` is `hooks::posix`, `src/base/mod.rs`
/// is `base`, `src/lib.rs` is `lib`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("a file under src/").with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The layer of module `module` (its index in [`LAYERS`]).
fn layer_of(module: &str) -> usize {
    let top = module.split("::").next().unwrap_or(module);
    LAYERS
        .iter()
        .position(|(_, prefixes)| prefixes.contains(&top))
        .unwrap_or_else(|| panic!("module `{module}` is in no layer: add it to LAYERS"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of `text` without its comments (`//` to the end of the line, doc comments
/// included): a doc link to a module above is not a dependency.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            // `//` inside a string literal is rare enough in this crate not to matter; the URL
            // of `concat!`-built strings never contains `crate::`.
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `code` names after `crate::` (and `$crate::` in macros): each `a::b::c`
/// as far as it goes, braces of a `use` group expanded one level.
fn referenced_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let path: String =
            rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
        let path = path.trim_end_matches(':').to_string();
        let after = &rest[path.len()..].trim_start_matches(':');
        if after.starts_with('{') {
            // `use crate::hooks::{aio, posix};`: each name in the group.
            let group = &after[1..after.find('}').unwrap_or(after.len())];
            for name in group.split(',') {
                let name = name.trim().split("::").next().unwrap_or("").trim();
                if !name.is_empty() && name != "self" {
                    paths.push(format!("{path}::{name}"));
                }
            }
        }
        paths.push(path);
    }
    paths
}

/// The module a path names: its longest prefix that is one of `modules` (`base::fd_table::path`
/// is `base::fd_table`).
fn module_named<'a>(path: &str, modules: &'a BTreeSet<String>) -> Option<&'a String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().find_map(|n| modules.get(&parts[..n].join("::")))
}

/// Module → the other modules it uses.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let code = without_comments(&std::fs::read_to_string(file).expect("a readable source file"));
        let used: BTreeSet<String> = referenced_paths(&code)
            .iter()
            .filter_map(|p| module_named(p, &modules))
            .filter(|m| **m != module && !module.starts_with(&format!("{m}::")))
            .cloned()
            .collect();
        graph.insert(module, used);
    }
    graph
}

#[test]
fn no_module_uses_a_higher_layer() {
    let graph = dependencies();
    assert!(graph.contains_key("base::guard") && graph.contains_key("hooks::posix"), "src/ was read");
    let upward: Vec<String> = graph
        .iter()
        .flat_map(|(module, used)| used.iter().map(move |u| (module, u)))
        .filter(|(module, used)| layer_of(used) > layer_of(module))
        .map(|(module, used)| {
            format!("{module} ({}) uses {used} ({})", LAYERS[layer_of(module)].0, LAYERS[layer_of(used)].0)
        })
        .collect();
    assert!(upward.is_empty(), "uses of a higher layer:\n{}", upward.join("\n"));
}

#[test]
fn no_modules_use_each_other() {
    let graph = dependencies();
    // Depth-first search, the path so far on a stack: a module met again on it closes a cycle.
    fn visit<'a>(
        module: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<String> {
        if let Some(at) = path.iter().position(|m| *m == module) {
            return Some(format!("{} -> {module}", path[at..].join(" -> ")));
        }
        if !done.insert(module) {
            return None;
        }
        path.push(module);
        let cycle = graph.get(module)?.iter().find_map(|next| visit(next, graph, path, done));
        path.pop();
        cycle
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        let cycle = visit(module, &graph, &mut Vec::new(), &mut done);
        assert!(cycle.is_none(), "modules that use each other: {}", cycle.unwrap_or_default());
    }
}

#[test]
fn the_reader_finds_uses_in_use_groups_paths_and_macros() {
    let code = "use crate::base::{clock, fd_table::{self, NOT_A_FILE}};\n\
                let x = crate::stream::enter_guard();\n\
                $crate::record::count_excluded(fd, 0);";
    let paths = referenced_paths(&without_comments(code));
    for expected in ["base::clock", "base::fd_table", "stream::enter_guard", "record::count_excluded"] {
        assert!(paths.iter().any(|p| p == expected), "{expected} in {paths:?}");
    }
    assert!(referenced_paths(&without_comments("/// see [`crate::hooks::aio`]")).is_empty());
}
