//! `iolens trace` on real programs, checked against strace's count of calls and bytes on the
//! same workload; `iolens analyze` on the shared Darshan samples and on strace output. One
//! module per hook family; the C and Python programs they trace are in `tests/programs/`. This
//! module holds what the families share: running under strace and under iolens, and counting.

mod aio;
mod analyze;
mod copy;
mod descriptors;
mod posix;
mod process;
mod stdio;
mod streams;
mod tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::prerequisite::require_data;
use crate::util::{have, require, require_tool, root};

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Calls and bytes per class (open, read, write, sync) on files under `under`, or per file
/// (relative to `under`) and class: "out.txt write".
type Counts = BTreeMap<String, (u64, u64)>;

/// Where a call counts: its class, or its file and class.
fn count_key(by_file: bool, path: &str, under: &str, class: &str) -> String {
    if by_file {
        format!("{} {class}", path.strip_prefix(under).unwrap_or(path).trim_start_matches('/'))
    } else {
        class.to_string()
    }
}

/// The (class, argument index of the file) each traced call counts under: an in-kernel copy is
/// a read of its source and a write of its destination, and so is a clone (`ioctl(FICLONE)`,
/// which `cp` tries first). `None` for the file: the opened one, named in the result.
fn classes_of(call: &str, args: &[&str]) -> &'static [(&'static str, Option<usize>)] {
    match call {
        "ioctl" if args.get(1).is_some_and(|request| request.ends_with(" FICLONE")) => {
            &[("read", Some(2)), ("write", Some(0))]
        }
        "open" | "openat" | "creat" | "openat2" => &[("open", None)],
        "read" | "pread64" | "readv" | "preadv" | "preadv2" => &[("read", Some(0))],
        "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" => &[("write", Some(0))],
        "copy_file_range" | "splice" => &[("read", Some(0)), ("write", Some(2))],
        "sendfile" => &[("read", Some(1)), ("write", Some(0))],
        "fsync" | "fdatasync" | "sync_file_range" | "syncfs" => &[("sync", Some(0))],
        _ => &[],
    }
}

/// The path strace -y writes after a descriptor: `3</tmp/x>` gives `/tmp/x`.
fn decorated_path(arg: &str) -> Option<&str> {
    arg.split_once('<').map(|(_, p)| p.trim_end_matches('>'))
}

/// Runs `cmd` under `strace -ff -y` and counts its calls on files under `under`.
fn strace_counts(cmd: &[&str], cwd: &Path, under: &Path, by_file: bool) -> Counts {
    let out = tempfile::tempdir().unwrap();
    let prefix = out.path().join("st");
    let status = Command::new("strace")
        .args(["-ff", "-y", "-qq", "-e", "signal=none", "-e"])
        .arg("trace=open,openat,creat,openat2,read,write,pread64,pwrite64,readv,writev,preadv,pwritev,preadv2,pwritev2,copy_file_range,sendfile,splice,fsync,fdatasync,sync_file_range,syncfs,ioctl")
        .arg("-o")
        .arg(&prefix)
        .args(cmd)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(status.status.success(), "strace {cmd:?}: {}", String::from_utf8_lossy(&status.stderr));
    let under = under.to_str().unwrap();
    let mut counts = Counts::new();
    for entry in std::fs::read_dir(out.path()).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        // Descriptors opened so far, for the arguments strace leaves undecorated (FICLONE's
        // source): "3" to its path.
        let mut opened: BTreeMap<String, String> = BTreeMap::new();
        for line in text.lines() {
            let Some((call, rest)) = line.split_once('(') else { continue };
            let Some((args, returned)) = rest.rsplit_once(" = ") else { continue };
            let result = returned.split(' ').next().unwrap();
            // strace pads short calls before " = ": the arguments end at the closing parenthesis.
            let args = args.trim_end();
            let args: Vec<&str> = args.strip_suffix(')').unwrap_or(args).split(", ").collect();
            if let (Some(fd), Some(path)) = (result.split_once('<').map(|(fd, _)| fd), decorated_path(result))
            {
                opened.insert(fd.to_string(), path.to_string());
            }
            for &(class, file_arg) in classes_of(call, &args) {
                let path = match file_arg {
                    Some(i) => {
                        args.get(i).and_then(|a| decorated_path(a).or(opened.get(*a).map(String::as_str)))
                    }
                    None => decorated_path(result),
                };
                let Some(path) = path.filter(|p| p.starts_with(under)) else { continue };
                let bytes: i64 = result.split('<').next().unwrap().parse().unwrap_or(-1);
                let e = counts.entry(count_key(by_file, path, under, class)).or_default();
                e.0 += 1;
                if (class == "read" || class == "write") && bytes > 0 {
                    e.1 += bytes as u64;
                }
            }
        }
    }
    counts
}

/// One row of `iolens trace --csv`.
#[derive(Debug, Clone)]
struct Op {
    tid: u64,
    path: String,
    op: String,
    layer: String,
    offset: Option<u64>,
    requested: u64,
    result: i64,
    start_ns: u64,
    end_ns: u64,
}

/// Runs `cmd` under `iolens trace`; returns its per-op rows and its JSON summary.
fn iolens_ops(cmd: &[&str], cwd: &Path) -> (Vec<Op>, serde_json::Value) {
    let out = scratch();
    let csv = out.path().join("ops.csv");
    let json = out.path().join("s.json");
    let run = iolens()
        .args(["trace", "--top", "1000", "--csv"])
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .arg("--")
        .args(cmd)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "iolens trace {cmd:?}: {}\n{}",
        String::from_utf8_lossy(&run.stderr),
        String::from_utf8_lossy(&run.stdout)
    );
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (ops_of_csv(&csv), summary)
}

/// The rows of an `--csv` export.
fn ops_of_csv(csv: &Path) -> Vec<Op> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col =
        |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("CSV column {name}"));
    lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            Op {
                tid: f[col("tid")].parse().unwrap(),
                path: f[col("path")].trim_matches('"').to_string(),
                op: f[col("op")].to_string(),
                layer: f[col("layer")].to_string(),
                offset: f[col("offset")].parse().ok(),
                requested: f[col("requested")].parse().unwrap(),
                result: f[col("result")].parse().unwrap(),
                start_ns: f[col("start_ns")].parse().unwrap(),
                end_ns: f[col("end_ns")].parse().unwrap(),
            }
        })
        .collect()
}

/// Runs `cmd` under `iolens trace` and counts the events on files under `under`, as
/// [`strace_counts`] does; returns the counts and the JSON summary.
fn iolens_counts(cmd: &[&str], cwd: &Path, under: &Path, by_file: bool) -> (Counts, serde_json::Value) {
    let (ops, summary) = iolens_ops(cmd, cwd);
    let under = under.to_str().unwrap();
    let mut counts = Counts::new();
    for o in ops.iter().filter(|o| o.path.starts_with(under)) {
        // stdio's opens are the program's (its kernel calls bypass the POSIX hooks); its reads
        // and writes are buffered, so only the POSIX ones match strace call for call.
        let class = match (o.op.as_str(), o.layer.as_str()) {
            ("open", "posix" | "stdio") => "open",
            ("read", "posix") => "read",
            ("write", "posix") => "write",
            ("fsync" | "fdatasync" | "sync_file_range" | "syncfs", "posix") => "sync",
            _ => continue,
        };
        let e = counts.entry(count_key(by_file, &o.path, under, class)).or_default();
        e.0 += 1;
        if (class == "read" || class == "write") && o.result > 0 {
            e.1 += o.result as u64;
        }
    }
    (counts, summary)
}

/// Runs `cmd` once under strace and once under `iolens trace`, each in its own fresh scratch
/// directory prepared by `prepare` (so a program that changes its directory, like sqlite creating
/// a table, sees the same start both times), and checks the counts on files in it agree.
fn compare(cmd: &[&str], prepare: impl Fn(&Path)) -> serde_json::Value {
    compare_counts(cmd, prepare, false)
}

/// [`compare`], file by file.
fn compare_counts(cmd: &[&str], prepare: impl Fn(&Path), by_file: bool) -> serde_json::Value {
    if !require_tool("strace") {
        return serde_json::Value::Null;
    }
    let (strace_dir, iolens_dir) = (scratch(), scratch());
    prepare(strace_dir.path());
    prepare(iolens_dir.path());
    let expected = strace_counts(cmd, strace_dir.path(), strace_dir.path(), by_file);
    let (got, summary) = iolens_counts(cmd, iolens_dir.path(), iolens_dir.path(), by_file);
    assert!(!expected.is_empty(), "strace saw no file I/O for {cmd:?}");
    assert_eq!(got, expected, "iolens trace vs strace for {cmd:?} (calls, bytes) per class");
    summary
}

fn write_file(path: &Path, bytes: usize) {
    let data: Vec<u8> = (0..bytes).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(path, data).unwrap();
}

/// Compiles the C program `source` into `dir` (fortified, as distributions build); `None`, with
/// a note, without gcc.
fn compile_c(dir: &Path, name: &str, source: &str) -> Option<PathBuf> {
    if !require_tool("gcc") {
        return None;
    }
    let (c, exe) = (dir.join(format!("{name}.c")), dir.join(name));
    std::fs::write(&c, source).unwrap();
    let out =
        Command::new("gcc").args(["-O2", "-D_FORTIFY_SOURCE=2", "-o"]).arg(&exe).arg(&c).output().unwrap();
    assert!(out.status.success(), "gcc {name}: {}", String::from_utf8_lossy(&out.stderr));
    Some(exe)
}

/// Compiles `source` as `name` and runs it once under strace and once under `iolens trace`,
/// each in a fresh directory prepared by `prepare`: the kernel's counts (per file when
/// `by_file`), iolens's per-op rows and summary, and its directory with a trailing slash.
/// `None` (the test skips) without gcc or strace.
fn under_strace_and_iolens(
    name: &str,
    source: &str,
    by_file: bool,
    prepare: impl Fn(&Path),
) -> Option<(Counts, Vec<Op>, serde_json::Value, String)> {
    let build = scratch();
    let prog = compile_c(build.path(), name, source)?;
    if !require_tool("strace") {
        return None;
    }
    let prog = prog.to_str().unwrap();
    let (strace_dir, iolens_dir) = (scratch(), scratch());
    prepare(strace_dir.path());
    prepare(iolens_dir.path());
    let kernel = strace_counts(&[prog], strace_dir.path(), strace_dir.path(), by_file);
    let (ops, summary) = iolens_ops(&[prog], iolens_dir.path());
    Some((kernel, ops, summary, format!("{}/", iolens_dir.path().display())))
}

/// Compiles `source` as `name` and runs it under `iolens trace` in a fresh directory: what the
/// program printed, the JSON summary, and the directory. `None` (the test skips) without gcc.
fn trace_c_program(name: &str, source: &str) -> Option<(String, serde_json::Value, tempfile::TempDir)> {
    let build = scratch();
    let prog = compile_c(build.path(), name, source)?;
    let dir = scratch();
    let json = dir.path().join("s.json");
    let out = iolens()
        .args(["trace", "--quiet", "--top", "100", "--json"])
        .arg(&json)
        .arg("--")
        .arg(&prog)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    Some((String::from_utf8_lossy(&out.stdout).into_owned(), summary, dir))
}

/// Compiles the C program `source` into `dir` and traces it there (`iolens trace --out
/// dir/trace`); the trace directory. `None` without gcc.
fn traced_c_program(dir: &Path, name: &str, source: &str) -> Option<PathBuf> {
    let prog = compile_c(dir, name, source)?;
    let trace = dir.join("trace");
    let out = iolens()
        .current_dir(dir)
        .args(["trace", "--quiet", "--out"])
        .arg(&trace)
        .arg("--")
        .arg(&prog)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(trace)
}

/// The summaries of `trace` read as it comes (swept when its calls come in order) and with a
/// per-op export into `dir` (which reads it with stored unions), without the fields of the run.
fn swept_and_stored(trace: &Path, dir: &Path) -> (serde_json::Value, serde_json::Value) {
    let without_run_fields = |mut v: serde_json::Value| {
        for key in ["tool", "command", "started_at", "ended_at", "exports"] {
            v.as_object_mut().unwrap().remove(key);
        }
        v
    };
    let csv = dir.join("ops.csv");
    let swept = without_run_fields(analyze_json(trace, &[]));
    (swept, without_run_fields(analyze_json(trace, &["--csv", csv.to_str().unwrap()])))
}

fn analyze_json(path: &Path, extra: &[&str]) -> serde_json::Value {
    let out = scratch();
    let json = out.path().join("a.json");
    let run = iolens().arg("analyze").arg(path).args(extra).arg("--json").arg(&json).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}
