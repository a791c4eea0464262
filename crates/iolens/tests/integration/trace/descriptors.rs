//! Descriptors and their files: duplicates, closes no hook sees, and calls of a thread on a
//! file another thread opened.

use super::*;

/// Descriptors closed where no close hook sees it, then reused by an open no hook sees
/// (mkstemp opens inside libc): the temporary file's writes must be its own.
const UNSEEN_CLOSE_PROGRAM: &str = include_str!("../../programs/unseen_close.c");

#[test]
fn descriptors_closed_where_no_hook_sees_do_not_name_the_next_file() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "unseen-close", UNSEEN_CLOSE_PROGRAM) else { return };
    let prog = prog.to_str().unwrap();
    let summary = compare(&[prog], |_| {});
    if summary.is_null() {
        return;
    }
    let dir = scratch();
    let (ops, _) = iolens_ops(&[prog], dir.path());
    let under = format!("{}/", dir.path().display());
    let mut writes: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.op == "write" && o.layer == "posix") {
        let name = o.path.strip_prefix(&under).unwrap_or(&o.path);
        // An O_TMPFILE file is named as /proc/self/fd shows it ("#1234 (deleted)"), not as
        // the directory it was opened with.
        let name = if name.ends_with(" (deleted)") { "unnamed" } else { name };
        let tag = name.strip_prefix("temp-").map_or(name, |t| t.split('-').next().unwrap());
        let e = writes.entry(tag.to_string()).or_default();
        e.0 += 1;
        e.1 += o.result;
    }
    let expected: BTreeMap<String, (u64, i64)> = ["closedir", "fcloseall", "pclose", "syscall", "unnamed"]
        .iter()
        .map(|t| (t.to_string(), (10, 1000)))
        .collect();
    assert_eq!(writes, expected, "POSIX writes per file (temporary files by their tag)");
}

const DUP_PROGRAM: &str = include_str!("../../programs/dups.c");

#[test]
fn duplicated_descriptors_count_under_their_file() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "dups", DUP_PROGRAM) else { return };
    let summary = compare_counts(&[prog.to_str().unwrap()], |_| {}, true);
    if !summary.is_null() {
        let files = summary["files"].to_string();
        assert!(files.contains("c.txt") && files.contains("log.txt"), "{files}");
    }
}

/// The main thread opens a file and a worker thread reads it, more calls than fill a buffer:
/// the worker's buffers reach the stream before the main thread's, which holds the open.
const WORKER_READS_WHAT_MAIN_OPENED: &str = include_str!("../../programs/worker_reads_what_main_opened.c");

/// Calls on a descriptor another thread opened are counted under its file, even when their
/// thread's buffers reach the stream before the opener's.
#[test]
fn calls_of_a_thread_on_a_file_another_thread_opened_name_the_file() {
    let dir = scratch();
    let Some(trace) = traced_c_program(dir.path(), "worker_reads", WORKER_READS_WHAT_MAIN_OPENED) else {
        return;
    };
    let v = analyze_json(&trace, &[]);
    let files: Vec<(String, u64)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_string(), f["ops"].as_u64().unwrap()))
        .collect();
    let data = dir.path().join("data.bin").canonicalize().unwrap();
    let reads = files.iter().find(|(path, _)| Path::new(path) == data).map(|(_, ops)| *ops);
    assert_eq!(reads, Some(20_000 + 16), "{files:?}");
}
