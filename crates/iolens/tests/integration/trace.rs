//! `iolens trace` on real programs, checked against strace's count of calls and bytes on the
//! same workload; `iolens analyze` on the shared Darshan samples and on strace output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

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

#[test]
fn dd_reads_and_writes() {
    let summary = compare(&["dd", "if=src.bin", "of=dst.bin", "bs=64k"], |dir| {
        write_file(&dir.join("src.bin"), 3 << 20)
    });
    if summary.is_null() {
        return;
    }
    assert!(summary["busy_s"].as_f64().unwrap() > 0.0);
    assert!(summary["wall_s"].as_f64().unwrap() >= summary["busy_s"].as_f64().unwrap());
    // 48 full reads of 64 KiB, then one more that finds the end of the file.
    assert_eq!(
        summary["read_bytes"].as_u64().unwrap(),
        (3 << 20) + (64 << 10),
        "bytes the application asked for"
    );
}

#[test]
fn cp_of_a_file() {
    // cp tries a clone first; where the file system cannot clone, it copies.
    let summary = compare(&["cp", "a.bin", "b.bin"], |dir| write_file(&dir.join("a.bin"), 5 << 20));
    if !summary.is_null() {
        let notes = summary["notes"].to_string();
        assert!(notes.contains("1 clone ("), "{notes}");
    }
}

/// A scratch XFS file system (reflinks are on by default) on a loop device, unmounted when
/// dropped. `None`, with a note, where none can be made (not root, no mkfs.xfs or loop device).
struct XfsMount {
    mnt: PathBuf,
    _dir: tempfile::TempDir,
}

impl XfsMount {
    fn new() -> Option<XfsMount> {
        let dir = scratch();
        let (image, mnt) = (dir.path().join("xfs.img"), dir.path().join("mnt"));
        // XFS's least size; the image is sparse.
        std::fs::File::create(&image).unwrap().set_len(320 << 20).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let made = have("mkfs.xfs")
            && Command::new("mkfs.xfs").arg("-q").arg(&image).status().is_ok_and(|s| s.success())
            && Command::new("mount")
                .args(["-o", "loop"])
                .arg(&image)
                .arg(&mnt)
                .status()
                .is_ok_and(|s| s.success());
        if !require(made, "an XFS file system (root, mkfs.xfs, a loop device)") {
            return None;
        }
        Some(XfsMount { mnt, _dir: dir })
    }
}

impl Drop for XfsMount {
    fn drop(&mut self) {
        // Lazily when still busy, so the loop device is freed once the last user leaves.
        if !Command::new("umount").arg(&self.mnt).status().is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        }
    }
}

/// A clone shares the source's extents with the destination: the program asked for the bytes
/// copied, the file system moved none. `cp` clones a whole file (FICLONE), `xfs_io` ranges
/// (FICLONERANGE, a length of 0 reaching the source's end); each is a read of the source and a
/// write of the destination, of the bytes cloned, and a note says no data moved.
#[test]
fn clones_count_the_bytes_shared_as_copied() {
    let Some(xfs) = XfsMount::new() else { return };
    let dir = xfs.mnt.as_path();
    write_file(&dir.join("a.bin"), 1 << 20);
    let (ops, summary) = iolens_ops(&["cp", "--reflink=always", "a.bin", "b.bin"], dir);
    // (offset, bytes asked for, result) of each read or write of `name`.
    let halves = |ops: &[Op], name: &str, op: &str| -> Vec<(Option<u64>, u64, i64)> {
        ops.iter()
            .filter(|o| o.path.ends_with(name) && o.op == op)
            .map(|o| (o.offset, o.requested, o.result))
            .collect()
    };
    let whole = (Some(0), 1 << 20, 1 << 20);
    assert_eq!(halves(&ops, "/b.bin", "write"), [whole], "{ops:?}");
    assert_eq!(halves(&ops, "/a.bin", "read"), [whole], "{ops:?}");
    assert_eq!(
        (summary["read_bytes"].as_u64(), summary["write_bytes"].as_u64()),
        (Some(1 << 20), Some(1 << 20))
    );
    let notes = summary["notes"].to_string();
    assert!(notes.contains("1 clone") && notes.contains("1.0 MiB") && notes.contains("no data"), "{notes}");

    if !require_tool("xfs_io") {
        return;
    }
    let a = dir.join("a.bin");
    let a = a.to_str().unwrap();
    let (ops, summary) = iolens_ops(
        &[
            "xfs_io",
            "-f",
            "-c",
            &format!("reflink {a} 4096 0 0"),
            "-c",
            &format!("reflink {a} 4096 8192 16384"),
            "-c",
            &format!("reflink {a}"),
            "d.bin",
        ],
        dir,
    );
    let to_end = (1 << 20) - 4096;
    assert_eq!(
        halves(&ops, "/d.bin", "write"),
        [(Some(0), to_end, to_end as i64), (Some(8192), 16384, 16384), whole],
        "{ops:?}"
    );
    assert_eq!(
        halves(&ops, "/a.bin", "read"),
        [(Some(4096), to_end, to_end as i64), (Some(4096), 16384, 16384), whole],
        "{ops:?}"
    );
    let notes = summary["notes"].to_string();
    assert!(notes.contains("3 clones"), "{notes}");
}

/// `iolens analyze` of strace's output, written with -o or to the terminal, counts what the
/// tracer counts on the same commands: calls, bytes asked and bytes moved, file by file.
#[test]
fn strace_output_analyzed_counts_what_the_tracer_counts() {
    if !require_tool("strace") {
        return;
    }
    let script = "cp a.bin b.bin && cat a.bin > c.bin && dd if=a.bin of=d.bin bs=64k status=none && cat d.bin > /dev/null";
    // (file, op) to (calls, bytes asked, bytes moved), for reads and writes of files in `dir`.
    let tally = |ops: &[Op], dir: &Path| -> BTreeMap<(String, String), (u64, u64, i64)> {
        let mut t = BTreeMap::new();
        for o in ops.iter().filter(|o| o.op == "read" || o.op == "write") {
            let Some(name) = o.path.strip_prefix(dir.to_str().unwrap()) else { continue };
            let e: &mut (u64, u64, i64) = t.entry((name.to_string(), o.op.clone())).or_default();
            *e = (e.0 + 1, e.1 + o.requested, e.2 + o.result.max(0));
        }
        t
    };
    let traced_dir = scratch();
    write_file(&traced_dir.path().join("a.bin"), 1 << 20);
    let (ops, _) = iolens_ops(&["sh", "-c", script], traced_dir.path());
    let traced = tally(&ops, traced_dir.path());
    assert_eq!(traced[&("/b.bin".to_string(), "write".to_string())].2, 1 << 20, "{traced:?}");
    for to_the_terminal in [false, true] {
        let dir = scratch();
        write_file(&dir.path().join("a.bin"), 1 << 20);
        let out = dir.path().join("strace.txt");
        let mut strace = Command::new("strace");
        strace.args(["-f", "-ttt", "-T", "-y"]).current_dir(dir.path());
        if to_the_terminal {
            strace.stderr(std::fs::File::create(&out).unwrap());
        } else {
            strace.arg("-o").arg(&out);
        }
        assert!(strace.args(["sh", "-c", script]).status().unwrap().success());
        let csv = dir.path().join("ops.csv");
        let run = iolens().args(["analyze", "--quiet", "--csv"]).arg(&csv).arg(&out).output().unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(!stdout.contains("malformed"), "{stdout}");
        assert_eq!(tally(&ops_of_csv(&csv), dir.path()), traced, "strace to the terminal: {to_the_terminal}");
    }
}

#[test]
fn cat_copies_in_the_kernel_and_counts_the_bytes_copied() {
    // coreutils' cat copies with copy_file_range, asking for nearly SSIZE_MAX bytes each time.
    let summary = compare(&["sh", "-c", "cat x.bin > y.bin"], |dir| write_file(&dir.join("x.bin"), 300_000));
    if !summary.is_null() {
        assert_eq!(summary["write_bytes"], 300_000, "bytes copied, not the length asked for");
        assert_eq!(summary["read_bytes"], 300_000);
    }
}

const SENDFILE_SPLICE_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>
int main(void) {
    int in = open("src.bin", O_RDONLY), out = open("dst.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    off_t at = 1000;
    if (sendfile(out, in, &at, 100000) != 100000) return 1;   /* from offset 1000 */
    if (sendfile(out, in, NULL, 50000) != 50000) return 1;    /* from the position, 0 */
    int p[2];
    if (pipe(p) != 0) return 1;
    if (splice(in, NULL, p[1], NULL, 30000, 0) != 30000) return 1;
    if (splice(p[0], NULL, out, NULL, 30000, 0) != 30000) return 1;
    return 0;
}
"#;

#[test]
fn sendfile_and_splice_count_both_files() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "sendfile", SENDFILE_SPLICE_PROGRAM) else { return };
    compare_counts(&[prog.to_str().unwrap()], |dir| write_file(&dir.join("src.bin"), 300_000), true);
}

#[test]
fn tar_of_a_tree() {
    compare(&["tar", "cf", "out.tar", "tree"], |dir| {
        let tree = dir.join("tree");
        for sub in ["x", "x/y", "z"] {
            std::fs::create_dir_all(tree.join(sub)).unwrap();
        }
        for (i, f) in ["x/1", "x/y/2", "z/3", "4"].iter().enumerate() {
            write_file(&tree.join(f), (i + 1) * 70_000);
        }
    });
}

#[test]
fn tar_czf_opens_through_the_fortified_open() {
    // Debian's tar is built with _FORTIFY_SOURCE and opens through __openat_2; gzip writes the
    // archive through a pipe from tar.
    compare(&["tar", "czf", "out.tgz", "tree"], |dir| {
        for (i, f) in ["tree/a/1", "tree/a/2", "tree/b/3"].iter().enumerate() {
            std::fs::create_dir_all(dir.join(f).parent().unwrap()).unwrap();
            write_file(&dir.join(f), (i + 1) * 40_000);
        }
    });
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

const STDIO_PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    FILE *f = fopen("out.txt", "w");
    for (int i = 0; i < 100; i++) {
        fprintf(f, "line %d\n", i);
        fputs("fputs\n", f);
        fputc('c', f);
        putc('\n', f);
        fwrite("0123456789", 1, 10, f);
    }
    fclose(f);
    for (int i = 0; i < 50; i++) printf("stdout %d\n", i);
    fflush(stdout);
    char buf[4096];
    f = fopen("out.txt", "r");
    while (fgets(buf, sizeof buf, f)) {}
    rewind(f);
    char *line = NULL;
    size_t n = 0;
    while (getline(&line, &n, f) > 0) {}
    free(line);
    rewind(f);
    while (fgetc(f) != EOF) {}
    rewind(f);
    while (getc(f) != EOF) {}
    rewind(f);
    while (fread(buf, 1, 1000, f) > 0) {}
    fclose(f);
    return 0;
}
"#;

#[test]
fn stdio_calls_count_what_they_moved() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "stdio", STDIO_PROGRAM) else { return };
    if !require_tool("strace") {
        return;
    }
    let command = format!("{} > stdout.txt", prog.display());
    let cmd = ["sh", "-c", command.as_str()];
    let (strace_dir, iolens_dir) = (scratch(), scratch());
    let expected = strace_counts(&cmd, strace_dir.path(), strace_dir.path(), false);
    let (ops, _) = iolens_ops(&cmd, iolens_dir.path());
    let under = iolens_dir.path().to_str().unwrap();
    let stdio = |op: &str| -> Vec<Op> {
        ops.iter()
            .filter(|o| o.layer == "stdio" && o.op == op && o.path.starts_with(under))
            .cloned()
            .collect()
    };
    let (writes, reads) = (stdio("write"), stdio("read"));

    // fprintf, fputs, fputc, putc, fwrite 100 times each, then printf 50 times.
    assert_eq!(writes.len(), 550, "every stdio write call");
    let written: i64 = writes.iter().map(|o| o.result).sum();
    assert_eq!(written as u64, expected["write"].1, "stdio bytes written vs the kernel's (strace)");
    assert!(writes.iter().all(|o| o.requested == o.result as u64), "each asked for what it wrote");

    // The file read five times over: by lines (fgets, getline), by characters (fgetc, getc), in
    // blocks of 1000 (fread); each pass ends with a call that finds the end of the file.
    let size: u64 = (0..100).map(|i| format!("line {i}\n").len() as u64 + 6 + 2 + 10).sum();
    let lines = 301; // the last, "0123456789", without its newline
    let blocks = size.div_ceil(1000);
    assert_eq!(reads.len() as u64, 2 * (lines + 1) + 2 * (size + 1) + (blocks + 1), "every stdio read call");
    let read: i64 = reads.iter().map(|o| o.result).sum();
    assert_eq!(read as u64, 5 * size, "bytes read: five passes over the file");
    let requested: u64 = reads.iter().map(|o| o.requested).sum();
    assert_eq!(
        requested,
        2 * size + 2 * (size + 1) + (blocks + 1) * 1000,
        "a line read asks for the line, not the buffer's size"
    );
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

const REOPEN_SCAN_PROGRAM: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    char block[100];
    memset(block, 'x', sizeof block);
    FILE *f = fopen("first.txt", "w");
    for (int i = 0; i < 10; i++) fwrite(block, 1, sizeof block, f);
    f = freopen("second.txt", "w", f); /* same descriptor number, another file */
    for (int i = 0; i < 50; i++) fwrite(block, 1, sizeof block, f);
    fclose(f);
    f = fopen("numbers.txt", "w");
    for (int i = 0; i < 1000; i++) fprintf(f, "%d\n", i);
    fclose(f);
    f = fopen("numbers.txt", "r");
    int v;
    long sum = 0;
    while (fscanf(f, "%d", &v) == 1) sum += v;
    fclose(f);
    if (!freopen("numbers.txt", "r", stdin)) return 2;
    while (scanf("%d", &v) == 1) sum += v;
    f = fopen("words.bin", "w");
    for (int i = 0; i < 100; i++) putw(i, f);
    fclose(f);
    f = fopen("words.bin", "r");
    while (getw(f) != EOF || !feof(f)) {}
    fclose(f);
    int fd = open("lines.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 200; i++) dprintf(fd, "line %d\n", i);
    close(fd);
    return sum == 2 * 499500 ? 0 : 3;
}
"#;

#[test]
fn freopen_scanf_getw_putw_and_dprintf_count_what_they_moved_under_their_file() {
    let Some((kernel, ops, _, under)) = under_strace_and_iolens("reopen", REOPEN_SCAN_PROGRAM, true, |_| {})
    else {
        return;
    };
    // Calls and bytes per (file, layer, op).
    let mut got: BTreeMap<(String, String, String), (u64, i64)> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.path.starts_with(&under)) {
        let e = got.entry((o.path[under.len()..].to_string(), o.layer.clone(), o.op.clone())).or_default();
        e.0 += 1;
        e.1 += o.result.max(0);
    }
    let get = |file: &str, layer: &str, op: &str| {
        got.get(&(file.to_string(), layer.to_string(), op.to_string())).copied().unwrap_or_default()
    };
    let kernel_bytes = |key: &str| kernel.get(key).map_or(0, |c| c.1) as i64;

    // freopen: the writes after it are the second file's, though the descriptor number is the
    // same; each file's stdio bytes are what the kernel wrote to it.
    assert_eq!(get("first.txt", "stdio", "write"), (10, 1000), "{got:?}");
    assert_eq!(get("second.txt", "stdio", "write"), (50, 5000), "{got:?}");
    assert_eq!(kernel_bytes("first.txt write"), 1000);
    assert_eq!(kernel_bytes("second.txt write"), 5000);
    assert_eq!(get("second.txt", "stdio", "open").0, 1, "freopen opens the second file: {got:?}");

    // fscanf, then scanf on stdin reopened on the same file: every call, the whole file each
    // time (the last call of each pass consumes the final newline and finds the end).
    let size = kernel_bytes("numbers.txt write");
    assert_eq!(size, (0..1000).map(|i: i64| i.to_string().len() as i64 + 1).sum::<i64>());
    assert_eq!(get("numbers.txt", "stdio", "read"), (2 * 1001, 2 * size), "{got:?}");
    assert_eq!(kernel_bytes("numbers.txt read"), 2 * size, "the kernel read the file twice");

    // putw and getw move a word each; the last getw finds the end.
    assert_eq!(get("words.bin", "stdio", "write"), (100, 400), "{got:?}");
    assert_eq!(get("words.bin", "stdio", "read"), (101, 400), "{got:?}");

    // dprintf writes through its own stream on the descriptor: a POSIX write each, as strace
    // sees them.
    let kernel_lines = kernel["lines.txt write"];
    assert_eq!(kernel_lines.0, 200);
    assert_eq!(get("lines.txt", "posix", "write"), (200, kernel_lines.1 as i64), "{got:?}");
}

/// Descriptors closed where no close hook sees it, then reused by an open no hook sees
/// (mkstemp opens inside libc): the temporary file's writes must be its own.
const UNSEEN_CLOSE_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static char block[100];
static int write_temp(const char *tag) {
    char name[64];
    snprintf(name, sizeof name, "temp-%s-XXXXXX", tag);
    int fd = mkstemp(name);
    for (int i = 0; i < 10; i++) write(fd, block, sizeof block);
    return close(fd);
}
int main(void) {
    memset(block, 'x', sizeof block);
    int d = open(".", O_RDONLY | O_DIRECTORY);
    DIR *dir = fdopendir(d);
    while (readdir(dir)) {}
    closedir(dir);
    write_temp("closedir");
    FILE *p = popen("cat > /dev/null", "w");
    fputs("to a pipe\n", p);
    pclose(p);
    write_temp("pclose");
    fdopen(open("data.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644), "w");
    fcloseall();
    write_temp("fcloseall");
    int r = open("data.txt", O_RDONLY);
    syscall(SYS_close, r);
    write_temp("syscall");
    int unnamed = open(".", O_TMPFILE | O_RDWR, 0600);
    for (int i = 0; i < 10; i++) write(unnamed, block, sizeof block);
    return close(unnamed);
}
"#;

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

const INLINED_STDIO_PROGRAM: &str = r#"
#include <stdio.h>
int main(void) {
    FILE *f = fopen("in.txt", "r");
    long n = 0;
    while (getc_unlocked(f) != EOF) n++;
    fclose(f);
    f = fopen("out.txt", "w");
    for (int i = 0; i < 10000; i++) putc_unlocked('a', f);
    fclose(f);
    return n == 20000 ? 0 : 1;
}
"#;

#[test]
fn stdio_macros_inlined_into_the_program_are_said_to_be_uncounted_with_their_buffers_bytes() {
    let Some((kernel, _, summary, _)) =
        under_strace_and_iolens("inlined", INLINED_STDIO_PROGRAM, true, |dir| {
            write_file(&dir.join("in.txt"), 20000)
        })
    else {
        return;
    };
    let notes = summary["notes"].to_string();
    let note = notes.split("\",\"").find(|n| n.contains("inlined")).unwrap_or_else(|| panic!("{notes}"));
    let numbers: Vec<u64> =
        note.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
    let [refills, refilled, flushes, flushed] = numbers[..] else { panic!("{note}") };
    assert_eq!(refilled, kernel["in.txt read"].1, "the refills brought what the kernel read: {note}");
    assert!(refills >= 1 && refills <= kernel["in.txt read"].0, "{note}");
    assert!(flushes >= 1 && flushed > 0 && flushed <= 10000, "{note}");
    assert_eq!(summary["read_bytes"].as_u64(), Some(0), "the characters are not counted as calls: {summary}");
}

/// Two children write 100 lines each: one leaves by the raw exit_group system call (no exit
/// handlers run), the other is killed by SIGKILL.
const ABRUPT_ENDS_PROGRAM: &str = r#"
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static void write_lines(const char *name) {
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++) write(fd, "0123456789", 10);
}
int main(void) {
    pid_t raw = fork();
    if (raw == 0) {
        write_lines("raw-exit.txt");
        syscall(SYS_exit_group, 0);
    }
    pid_t killed = fork();
    if (killed == 0) {
        write_lines("killed.txt");
        raise(SIGKILL);
    }
    int status;
    waitpid(raw, &status, 0);
    waitpid(killed, &status, 0);
    printf("%d\n", (int)killed);
    return 0;
}
"#;

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

/// Every ioctl passes through the clone hook: the others must reach the kernel unchanged,
/// with their argument, through libc and through syscall().
const OTHER_IOCTLS_PROGRAM: &str = r#"
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    int p[2];
    if (pipe(p) || write(p[1], "0123456789", 10) != 10) return 2;
    int queued = -1;
    if (ioctl(p[0], FIONREAD, &queued) != 0 || queued != 10) return 3;
    queued = -1;
    if (syscall(SYS_ioctl, p[0], FIONREAD, &queued) != 0 || queued != 10) return 4;
    if (ioctl(p[0], 0x7fff, 0) != -1) return 5; /* no such request: the kernel's error */
    return 0;
}
"#;

#[test]
fn other_ioctls_pass_through_unchanged() {
    let Some((_, summary, _dir)) = trace_c_program("ioctls", OTHER_IOCTLS_PROGRAM) else { return };
    assert_eq!(summary["ops"].as_u64(), Some(0), "a pipe is no file, and no clone was made: {summary}");
}

#[test]
fn a_raw_exit_keeps_its_events_and_a_killed_process_is_named() {
    let Some((stdout, summary, _dir)) = trace_c_program("abrupt", ABRUPT_ENDS_PROGRAM) else { return };
    let killed = stdout.lines().next().unwrap().trim().to_string();
    let files = summary["files"].as_array().unwrap();
    let writes_of = |name: &str| {
        files
            .iter()
            .filter(|f| f["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .map(|f| f["ops"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(writes_of("/raw-exit.txt"), 100, "a raw exit_group writes out the buffers first: {files:?}");
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let note = notes.iter().find(|n| n.contains("no end")).unwrap_or_else(|| panic!("{notes:?}"));
    assert!(note.contains(&killed), "the killed child {killed} is named: {note}");
    assert!(note.contains("NOT in these figures"), "{note}");
}

/// I/O the program makes while one of its calls is under way: a periodic signal handler logs
/// while the main loop reads; a handler jumps out of a blocked read with siglongjmp; a
/// fopencookie stream's write function writes to a file from inside fwrite and fclose.
const NESTED_IO_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
static int log_fd;
static volatile sig_atomic_t ticks;
static sigjmp_buf timeout;
static int wake[2];
static void tick(int sig) {
    (void)sig;
    write(log_fd, "tick\n", 5);
    write(wake[1], "t", 1); /* the self-pipe pattern: not a file, never counted as one */
    ticks++;
}
static void give_up(int sig) {
    (void)sig;
    siglongjmp(timeout, 1);
}
static ssize_t to_sink(void *sink, const char *buf, size_t n) { return write(*(int *)sink, buf, n); }
static int close_sink(void *sink) { return close(*(int *)sink); }
int main(void) {
    char block[512];
    memset(block, 'd', sizeof block);
    log_fd = open("handler.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (pipe(wake) || fcntl(wake[1], F_SETFL, O_NONBLOCK)) return 4;
    write(wake[1], "t", 1); /* known as a pipe before the handler runs */
    int data = open("data.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 64; i++) write(data, block, sizeof block);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, 0);
    struct itimerval every = {{0, 1000}, {0, 1000}}, stop = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &every, 0);
    while (ticks < 200) pread(data, block, sizeof block, 0);
    setitimer(ITIMER_REAL, &stop, 0);
    int handled = ticks;

    sa.sa_handler = give_up;
    sa.sa_flags = 0;
    sigaction(SIGALRM, &sa, 0);
    int p[2];
    if (pipe(p)) return 2;
    struct itimerval once = {{0, 0}, {0, 20000}};
    if (sigsetjmp(timeout, 1) == 0) {
        setitimer(ITIMER_REAL, &once, 0);
        read(p[0], block, 1); /* nothing ever comes: the handler jumps out */
        return 3;
    }
    int after = open("after-jump.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++) write(after, block, 100);
    close(after);

    static int sink;
    sink = open("cookie-sink.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cookie_io_functions_t io = {.write = to_sink, .close = close_sink};
    FILE *c = fopencookie(&sink, "w", io);
    setvbuf(c, NULL, _IONBF, 0);
    for (int i = 0; i < 50; i++) fwrite(block, 1, 100, c);
    fclose(c);
    printf("%d\n", handled);
    return 0;
}
"#;

#[test]
fn io_made_inside_a_call_by_a_signal_handler_or_a_callback_is_counted() {
    let Some((stdout, summary, _dir)) = trace_c_program("nested", NESTED_IO_PROGRAM) else { return };
    let handled: u64 = stdout.lines().next().unwrap().trim().parse().unwrap();
    let files = summary["files"].as_array().unwrap();
    let file = |name: &str| {
        files
            .iter()
            .find(|f| f["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .map(|f| (f["ops"].as_u64().unwrap(), f["write_bytes"].as_u64().unwrap()))
            .unwrap_or((0, 0))
    };
    assert_eq!(file("/after-jump.txt"), (100, 10000), "a siglongjmp out of a blocked read: {files:?}");
    assert_eq!(file("/cookie-sink.txt"), (50, 5000), "a cookie stream's writes to its file: {files:?}");
    // A handler that runs while the tracer records the call it interrupted is counted in a note.
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let (in_note, in_note_bytes) = notes
        .iter()
        .find(|n| n.contains("signal handler"))
        .map(|n| {
            let numbers: Vec<u64> =
                n.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
            (numbers[0], numbers[1])
        })
        .unwrap_or((0, 0));
    let (recorded, recorded_bytes) = file("/handler.log");
    assert_eq!(recorded + in_note, handled, "every handler write recorded or noted: {files:?} {notes:?}");
    assert_eq!(recorded_bytes + in_note_bytes, 5 * handled, "{files:?} {notes:?}");
    // The self-pipe's writes count under pipes, wherever the handler interrupted: one before the
    // timer, one per tick; and the printf of the count to our pipe.
    let printed = format!("{handled}\n").len() as u64;
    let pipes = format!("{} calls ({} bytes) on pipes and sockets", handled + 2, handled + 1 + printed);
    assert!(notes.iter().any(|n| n.contains(&pipes)), "{pipes}: {notes:?}");
    // How many land inside the recording depends on the build's speed; some come inside preads.
    assert!(recorded > 0, "handler writes inside the program's preads are recorded: {notes:?}");
}

/// Behaves as a Go program does towards the tracer: it carries Go's build-ID note, and makes
/// its system calls by its own instructions, past libc (writes of a file, then exit_group).
const GO_LIKE_PROGRAM: &str = r#"
/* A program that behaves as Go programs do towards the tracer: Go's build-ID note, and system
   calls made by its own instructions, past libc (here a write of a file, then exit_group). */
#include <fcntl.h>
#include <unistd.h>
__asm__(".section .note.go.buildid,\"a\",@note\n"
        ".balign 4\n"
        ".long 4, 8, 4\n"
        ".asciz \"Go\"\n.byte 0\n"
        ".ascii \"id/of/go\"\n"
        ".previous\n");
static long raw3(long n, long a, long b, long c) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
int main(void) {
    int fd = open("go-like.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++) raw3(1, fd, (long)"0123456789", 10);
    raw3(231, 0, 0, 0);
    return 1;
}
"#;

#[test]
fn a_go_program_is_said_to_be_untraced_and_not_killed() {
    let Some((_, summary, dir)) = trace_c_program("go-like", GO_LIKE_PROGRAM) else { return };
    assert_eq!(std::fs::metadata(dir.path().join("go-like.txt")).unwrap().len(), 1000, "it wrote its file");
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let go = notes.iter().find(|n| n.contains("a Go program")).unwrap_or_else(|| panic!("{notes:?}"));
    assert!(go.contains("/go-like, a Go program") && go.contains("NOT traced"), "{go}");
    assert!(!notes.iter().any(|n| n.contains("no end marker")), "a Go exit is not a kill: {notes:?}");
}

/// Every way to make written data durable, through libc and through syscall().
const SYNCS_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    int fd = open("synced.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 10; i++) write(fd, "0123456789", 10);
    fsync(fd);
    fdatasync(fd);
    sync_file_range(fd, 0, 100, SYNC_FILE_RANGE_WRITE);
    syscall(SYS_sync_file_range, fd, 0, 100, SYNC_FILE_RANGE_WRITE);
    syncfs(fd);
    syscall(SYS_syncfs, fd);
    sync();
    syscall(SYS_sync);
    return close(fd);
}
"#;

#[test]
fn every_sync_call_is_recorded_and_sync_counts_for_every_file_system() {
    let Some((kernel, ops, summary, _)) = under_strace_and_iolens("syncs", SYNCS_PROGRAM, true, |_| {})
    else {
        return;
    };
    assert_eq!(kernel["synced.txt sync"].0, 6, "strace: fsync, fdatasync, 2 sync_file_range, 2 syncfs");
    let on_file: Vec<&str> = ops
        .iter()
        .filter(|o| o.path.ends_with("/synced.txt") && o.op.contains("sync"))
        .map(|o| o.op.as_str())
        .collect();
    assert_eq!(
        on_file,
        ["fsync", "fdatasync", "sync_file_range", "sync_file_range", "syncfs", "syncfs"],
        "each call on the file, in order"
    );
    // sync() names no file: it writes out every file system, recorded as a syncfs of "/".
    let whole = ops.iter().filter(|o| o.path == "/" && o.op == "syncfs").count();
    assert_eq!(whole, 2, "sync() and syscall(SYS_sync): {ops:?}");
    assert_eq!(summary["fsyncs"].as_u64(), Some(8), "every one counts as a sync: {summary}");
}

/// POSIX aio's fsync requests, and a program that leaves by quick_exit after its handler
/// writes (no exit handler, no library destructor runs).
const AIO_FSYNC_QUICK_EXIT_PROGRAM: &str = r#"
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int log_fd;
static void last_words(void) { write(log_fd, "bye\n", 4); }
static void sync_by_aio(int fd, int mode) {
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    if (aio_fsync(mode, &cb)) exit(2);
    while (aio_error(&cb) == EINPROGRESS) {}
    aio_return(&cb);
}
int main(void) {
    int fd = open("aio-synced.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    write(fd, "0123456789", 10);
    sync_by_aio(fd, O_SYNC);
    sync_by_aio(fd, O_DSYNC);
    log_fd = open("quick.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    at_quick_exit(last_words);
    for (int i = 0; i < 100; i++) write(log_fd, "0123456789", 10);
    quick_exit(0);
}
"#;

#[test]
fn aio_fsync_requests_are_syncs_and_a_quick_exit_keeps_its_events() {
    let Some((_, summary, _dir)) = trace_c_program("aio-fsync", AIO_FSYNC_QUICK_EXIT_PROGRAM) else { return };
    let files = summary["files"].as_array().unwrap();
    let ops_of = |name: &str| {
        files
            .iter()
            .find(|f| f["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .map(|f| f["ops"].as_u64())
    };
    assert_eq!(ops_of("/quick.txt"), Some(Some(101)), "100 writes and the handler's: {files:?}");
    assert_eq!(summary["fsyncs"].as_u64(), Some(2), "aio_fsync with O_SYNC and O_DSYNC: {summary}");
    let notes = summary["notes"].to_string();
    assert!(!notes.contains("no end marker"), "quick_exit is no kill: {notes}");
}

/// File I/O through syscall() instead of the libc wrappers.
const RAW_SYSCALL_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    char block[100];
    memset(block, 'x', sizeof block);
    int fd = syscall(SYS_openat, AT_FDCWD, "raw.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 10; i++) syscall(SYS_write, fd, block, sizeof block);
    for (int i = 0; i < 10; i++) syscall(SYS_pwrite64, fd, block, sizeof block, 1000 + 100 * i);
    for (int i = 0; i < 10; i++) syscall(SYS_pread64, fd, block, sizeof block, 100 * i);
    syscall(SYS_lseek, fd, 0, SEEK_SET);
    while (syscall(SYS_read, fd, block, 64) > 0) {}
    syscall(SYS_fsync, fd);
    int copy = syscall(SYS_openat, AT_FDCWD, "clone.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    syscall(SYS_ioctl, copy, FICLONE, fd); /* fails where the file system cannot clone */
    syscall(SYS_close, copy);
    syscall(SYS_close, fd);
    fd = syscall(SYS_open, "raw.txt", O_RDONLY);
    syscall(SYS_read, fd, block, sizeof block);
    return syscall(SYS_close, fd);
}
"#;

#[test]
fn file_calls_made_through_syscall_count_like_their_wrappers() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "raw-syscalls", RAW_SYSCALL_PROGRAM) else { return };
    let summary = compare_counts(&[prog.to_str().unwrap()], |_| {}, true);
    if !summary.is_null() {
        // 20 writes, and the clone's write half.
        assert_eq!(summary["write_ops"].as_u64(), Some(21), "{summary}");
    }
}

const WIDE_STDIO_PROGRAM: &str = r#"
#include <stdio.h>
#include <wchar.h>
int main(void) {
    FILE *f = fopen("wide.txt", "w");
    for (int i = 0; i < 100; i++) {
        fputws(L"hello\n", f);
        fwprintf(f, L"%d\n", i);
        fputwc(L'x', f);
    }
    fclose(f);
    wchar_t line[100];
    f = fopen("wide.txt", "r");
    while (fgetws(line, 100, f)) {}
    fclose(f);
    f = fopen("wide.txt", "r");
    while (fgetwc(f) != WEOF) {}
    fclose(f);
    return 0;
}
"#;

#[test]
fn wide_character_stdio_counts_the_bytes_it_moved() {
    let Some((kernel, ops, _, under)) = under_strace_and_iolens("wide", WIDE_STDIO_PROGRAM, false, |_| {})
    else {
        return;
    };
    let stdio = |op: &str| -> (u64, i64) {
        let calls: Vec<&Op> =
            ops.iter().filter(|o| o.layer == "stdio" && o.op == op && o.path.starts_with(&under)).collect();
        (calls.len() as u64, calls.iter().map(|o| o.result).sum())
    };
    let size = kernel["write"].1 as i64;
    assert_eq!(stdio("write"), (300, size), "every wide write, with the bytes the kernel wrote");
    // 201 lines (the last, "x", without its newline) and the call that finds the end; then
    // every character and the call that finds the end.
    assert_eq!(stdio("read"), (202 + size as u64 + 1, 2 * size), "every wide read");
    assert_eq!(kernel["read"].1 as i64, 2 * size, "the kernel read the file twice");
}

/// Runs fio's libaio engine reading a 1 MiB file in 4 KiB requests under `iolens trace`, with
/// `extra` options; the reads of 4 KiB recorded on the file (calls, bytes), and the requests
/// and bytes the native AIO note gives (0 without one).
fn fio_libaio_reads(extra: &[&str]) -> ((u64, i64), (u64, u64)) {
    let dir = scratch();
    let prepare = dir.path().join("data");
    write_file(&prepare, 1 << 20);
    let mut cmd = vec!["fio", "--name=aio", "--filename=data", "--size=1M", "--bs=4k", "--rw=randread"];
    cmd.extend(["--ioengine=libaio", "--iodepth=4", "--output=/dev/null"]);
    cmd.extend(extra);
    let (ops, summary) = iolens_ops(&cmd, dir.path());
    let reads: Vec<&Op> = ops
        .iter()
        .filter(|o| o.path.ends_with("/data") && o.op == "read" && o.layer == "posix" && o.requested == 4096)
        .collect();
    let notes = summary["notes"].to_string();
    let noted = notes.split("\",\"").find(|n| n.contains("native AIO")).map_or((0, 0), |note| {
        let numbers: Vec<u64> =
            note.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
        (numbers[1], numbers[2])
    });
    ((reads.len() as u64, reads.iter().map(|o| o.result).sum()), noted)
}

#[test]
fn linux_native_aio_requests_are_recorded_when_reaped_and_noted_when_not() {
    if !require(have("fio") && fio_has_libaio(), "fio with its libaio engine") {
        return;
    }
    // fio reads the 1 MiB file in 256 requests of 4 KiB, reaped by io_getevents.
    assert_eq!(fio_libaio_reads(&[]), ((256, 1 << 20), (0, 0)), "every request recorded, none noted");
    // Reaped from the completion ring in user space where it can: what no hook saw reaped is
    // noted, with the bytes it asked for.
    let ((recorded, bytes), (noted, asked)) =
        fio_libaio_reads(&["--userspace_reap=1", "--iodepth_batch_complete_min=0"]);
    assert_eq!((recorded + noted, bytes as u64 + asked), (256, 1 << 20), "recorded or noted");
}

const AIO_PARTIAL_SUBMIT_PROGRAM: &str = r#"
/* A libaio submission whose first block polls a pipe (not a read or write) and whose last one
   fails (bad descriptor): the kernel takes the first two, and the second one is reaped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
struct iocb {
    uint64_t data;
    uint32_t key, rw_flags;
    uint16_t opcode;
    int16_t prio;
    uint32_t fd;
    uint64_t buf, nbytes;
    int64_t offset;
    uint64_t reserved2;
    uint32_t flags, resfd;
};
struct io_event { uint64_t data, obj, res, res2; };
int main(void) {
    if (!dlopen("libaio.so.1", RTLD_NOW | RTLD_GLOBAL)) return 2;
    /* Through the global scope, as a program linked with -laio calls them: the tracer's first. */
    int (*setup)(int, void **) = dlsym(RTLD_DEFAULT, "io_setup");
    int (*submit)(void *, long, struct iocb **) = dlsym(RTLD_DEFAULT, "io_submit");
    int (*getevents)(void *, long, long, struct io_event *, struct timespec *) = dlsym(RTLD_DEFAULT, "io_getevents");
    void *ctx = 0;
    if (setup(8, &ctx)) return 3;
    int p[2];
    if (pipe(p) || write(p[1], "x", 1) != 1) return 4;
    int fd = open("data", O_RDONLY);
    static char buf[4096];
    struct iocb poll_cb, read_cb, bad_cb;
    memset(&poll_cb, 0, sizeof poll_cb);
    poll_cb.opcode = 5; /* IO_CMD_POLL */
    poll_cb.fd = p[0];
    poll_cb.buf = POLLIN;
    memset(&read_cb, 0, sizeof read_cb);
    read_cb.opcode = 0; /* IO_CMD_PREAD */
    read_cb.fd = fd;
    read_cb.buf = (uintptr_t)buf;
    read_cb.nbytes = sizeof buf;
    bad_cb = read_cb;
    bad_cb.fd = (uint32_t)-1;
    struct iocb *list[] = {&poll_cb, &read_cb, &bad_cb};
    if (submit(ctx, 3, list) != 2) return 5;
    struct io_event events[2];
    int got = 0;
    while (got < 2) {
        int n = getevents(ctx, 1, 2 - got, events + got, 0);
        if (n <= 0) return 6;
        got += n;
    }
    return 0;
}
"#;

#[test]
fn native_aio_blocks_the_kernel_did_not_take_are_not_said_to_be_unreaped() {
    if !require(Path::new("/usr/lib/x86_64-linux-gnu/libaio.so.1").exists(), "libaio (libaio1)") {
        return;
    }
    let dir = scratch();
    write_file(&dir.path().join("data"), 8192);
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "aio-partial", AIO_PARTIAL_SUBMIT_PROGRAM) else { return };
    let (ops, summary) = iolens_ops(&[prog.to_str().unwrap()], dir.path());
    let reads = ops.iter().filter(|o| o.path.ends_with("/data") && o.op == "read").count();
    assert_eq!(reads, 1, "the read taken and reaped: {ops:?}");
    let notes = summary["notes"].to_string();
    assert!(!notes.contains("native AIO"), "the block refused was never submitted: {notes}");
}

/// Whether fio was built with its libaio engine.
fn fio_has_libaio() -> bool {
    Command::new("fio")
        .arg("--enghelp")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libaio"))
}

#[test]
fn one_thread_never_overlaps_itself() {
    // 100k preads fill many 64 KiB event buffers: the clock conversion at each flush must not
    // move a call before the end of the one it followed.
    let build = scratch();
    let source = r#"
#include <fcntl.h>
#include <unistd.h>
int main(void) {
    char buf[4096];
    int fd = open("data.bin", O_RDONLY);
    for (int i = 0; i < 100000; i++)
        if (pread(fd, buf, sizeof buf, (i % 256) * 4096) != sizeof buf) return 1;
    return close(fd);
}
"#;
    let Some(prog) = compile_c(build.path(), "preads", source) else { return };
    let dir = scratch();
    write_file(&dir.path().join("data.bin"), 1 << 20);
    let (ops, summary) = iolens_ops(&[prog.to_str().unwrap()], dir.path());
    let reads: Vec<&Op> = ops.iter().filter(|o| o.op == "read").collect();
    assert_eq!(reads.len(), 100_000);
    let overlaps: Vec<(u64, u64)> = reads
        .windows(2)
        .filter(|w| w[1].start_ns < w[0].end_ns)
        .map(|w| (w[0].end_ns, w[1].start_ns))
        .collect();
    assert!(
        overlaps.is_empty(),
        "{} calls start before the previous one ended: {:?}",
        overlaps.len(),
        &overlaps[..overlaps.len().min(5)]
    );
    assert!(reads.iter().all(|o| o.tid == reads[0].tid));
    assert_eq!(summary["concurrency"]["peak_in_flight"], 1, "{}", summary["concurrency"]);
}

const DUP_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
static void put(int fd, int n) { write(fd, "0123456789", n); }
int main(void) {
    int log = open("log.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(log, 1);
    close(log);
    for (int i = 0; i < 10; i++) put(1, 1);             /* log.txt */
    int b = open("b.txt", O_WRONLY | O_CREAT, 0644);
    int c = open("c.txt", O_WRONLY | O_CREAT, 0644);
    put(b, 2);                                          /* b.txt */
    dup2(c, b);
    put(b, 3);                                          /* c.txt, through b's number */
    put(dup(c), 4);                                     /* c.txt */
    put(fcntl(c, F_DUPFD, 100), 5);                     /* c.txt */
    put(fcntl(c, F_DUPFD_CLOEXEC, 200), 6);             /* c.txt */
    put(dup3(c, 300, O_CLOEXEC), 7);                    /* c.txt */
    close_range(3, ~0U, 0);
    put(100, 9);                                        /* closed: EBADF */
    int y = open("y.txt", O_WRONLY | O_CREAT, 0644);
    dup2(y, 900);
    put(900, 8);                                        /* y.txt */
    return 0;
}
"#;

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

const IO_URING_PROGRAM: &str = r#"
#include <fcntl.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    int ring = syscall(__NR_io_uring_setup, 8, &params);
    if (ring < 0) return 3; /* io_uring disabled: nothing to note */
    int fds[2] = {open("ring-data.bin", O_RDWR | O_CREAT, 0644), -1};
    if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_FILES, fds, 2) != 0) return 1;
    write(fds[0], "plain", 5);
    /* Closed before the end: the ring is noted when it is made, not found at exit. */
    close(ring);
    return 0;
}
"#;

#[test]
fn an_io_uring_ring_is_noted_with_its_registered_files() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "ring", IO_URING_PROGRAM) else { return };
    let dir = scratch();
    let run = Command::new(&prog).current_dir(dir.path()).status().unwrap();
    if !require(run.code() != Some(3), "io_uring (disabled on this machine)") {
        return;
    }
    let (ops, summary) = iolens_ops(&[prog.to_str().unwrap()], dir.path());
    assert_eq!(ops.iter().filter(|o| o.op == "write").count(), 1, "the plain write is counted");
    let notes = summary["notes"].to_string();
    assert!(
        notes.contains("used io_uring (files registered to their rings: ") && notes.contains("ring-data.bin"),
        "{notes}"
    );
}

#[test]
fn calls_on_devices_and_pipes_are_counted_in_a_note() {
    if !require_tool("strace") {
        return;
    }
    let cmd = ["sh", "-c", "dd if=/dev/zero bs=4k count=10 status=none | cat > out.bin"];
    let (strace_dir, iolens_dir) = (scratch(), scratch());
    let zero = strace_counts(&cmd, strace_dir.path(), Path::new("/dev/zero"), false)["read"];
    assert_eq!(zero, (10, 40960), "strace: dd's reads of /dev/zero");
    let (_, summary) = iolens_ops(&cmd, iolens_dir.path());
    let notes = summary["notes"].to_string();
    assert!(notes.contains("left out, as Darshan does"), "{notes}");
    assert!(notes.contains(&format!("{} calls ({} bytes) on character devices", zero.0, zero.1)), "{notes}");
    // dd's writes into the pipe and cat's reads from it, at least the 40960 bytes each way.
    let piped = notes.split("calls (").nth(1).and_then(|rest| rest.split(" bytes) on pipes").next());
    assert!(piped.and_then(|b| b.parse::<u64>().ok()).is_some_and(|b| b >= 2 * 40960), "{notes}");
}

#[test]
fn python_reads_via_buffered_io_and_pread() {
    let script = "import os\nwith open('data.bin','rb') as f:\n    while f.read(10000): pass\n\
                  fd = os.open('data.bin', os.O_RDONLY)\nfor i in range(100): os.pread(fd, 4096, i * 8192)\nos.close(fd)\n\
                  with open('out.txt','w') as f:\n    for i in range(1000): f.write('line %d\\n' % i)\n";
    compare(&["python3", "-c", script], |dir| write_file(&dir.join("data.bin"), 1 << 20));
}

#[test]
fn sqlite_inserts_with_fsync() {
    if !require_tool("sqlite3") {
        return;
    }
    let sql = "create table t(a, b); begin; insert into t values (1, randomblob(5000)); commit; \
               insert into t values (2, randomblob(20000)); insert into t select a + 2, b from t;";
    let summary = compare(&["sqlite3", "test.db", sql], |_| {});
    if !summary.is_null() {
        assert!(summary["fsyncs"].as_u64().unwrap() > 0, "sqlite syncs its journal and database");
    }
}

#[test]
fn threads_and_forks_are_followed() {
    let script = "import os, threading\n\
        def work(n):\n    with open('t%d.bin' % n, 'wb') as f:\n        for i in range(50): f.write(os.urandom(4096)); f.flush()\n\
        ts = [threading.Thread(target=work, args=(n,)) for n in range(4)]\n[t.start() for t in ts]\n[t.join() for t in ts]\n\
        pid = os.fork()\nif pid == 0:\n    with open('child.bin', 'wb') as f: f.write(b'x' * 100000)\n    os._exit(0)\n\
        os.waitpid(pid, 0)\n";
    let summary = compare(&["python3", "-c", script], |_| {});
    if summary.is_null() {
        return;
    }
    let processes = summary["processes"].as_array().unwrap();
    assert!(processes.len() >= 2, "parent and forked child: {processes:?}");
}

#[test]
fn exit_status_and_output_of_the_program_are_kept() {
    let dir = scratch();
    let out = iolens()
        .args(["trace", "--", "sh", "-c", "echo visible; exec 1>&- 2>&-; exit 7"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "the program's exit status is iolens's");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("visible\n"),
        "the program's output is untouched"
    );
}

/// A shared DXT sample (`../shared/data/dxt/NAME`, beside the checkout); `None` (the test
/// skips) where the samples are not there.
fn dxt(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/dxt").join(name);
    require(p.exists(), "the shared DXT samples (../shared/data/dxt)").then_some(p)
}

#[test]
fn analyze_darshan_dxt_sample() {
    let Some(path) = dxt("mpi-io-test_32ranks.dxt.txt") else { return };
    let text = std::fs::read_to_string(&path).unwrap();
    let posix_segments = text.lines().filter(|l| l.trim_start().starts_with("X_POSIX")).count() as u64;
    let out = scratch();
    let json = out.path().join("d.json");
    let job = out.path().join("replay.toml");
    let run = iolens()
        .arg("analyze")
        .arg(&path)
        .arg("--json")
        .arg(&json)
        .arg("--emit-workload")
        .arg(&job)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let layers = v["layers"].to_string();
    assert!(layers.contains("posix") && layers.contains("mpiio"), "{layers}");
    assert!(v["ops"].as_u64().unwrap() > 0 && v["busy_s"].as_f64().unwrap() > 0.0);
    assert!(posix_segments > 0);
    let job = iolens_workload::load_job_file(&job).expect("the emitted job file is a valid job");
    assert!(!job.agents.is_empty());
}

/// A binary Darshan log: job header, exact counter totals beside the DXT figures, layers apart
/// in the file table, the job runtime as wall time, and JSON carrying all of it.
#[test]
fn analyze_binary_darshan_log() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../../shared/data/darshan/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan",
    );
    if !require(path.exists(), "the shared Darshan logs (../shared/data/darshan)") {
        return;
    }
    let out = scratch();
    let json = out.path().join("d.json");
    let run = iolens().arg("analyze").arg(&path).arg("--json").arg(&json).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("32 processes") && stdout.contains("mpi-io-test -i 4 -v"), "{stdout}");
    assert!(stdout.contains("MPIIO_BYTES_WRITTEN 2147483648"), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["wall_s"].as_f64(), Some(14.0), "the job runtime from the header");
    assert_eq!(v["darshan"]["job"]["nprocs"].as_i64(), Some(32));
    let posix = v["darshan"]["modules"].as_array().unwrap().iter().find(|m| m["name"] == "POSIX").unwrap();
    assert!(posix["counters"].to_string().contains("\"POSIX_BYTES_WRITTEN\",\"total\":2147486208"));
    // Per file, each layer its own row: 256 MPI-IO ops moving 2 GiB each way, not the sum
    // with the POSIX calls beneath them.
    let mpiio_rows: Vec<&serde_json::Value> =
        v["files"].as_array().unwrap().iter().filter(|f| f["layer"] == "mpiio").collect();
    assert_eq!(mpiio_rows.iter().map(|f| f["ops"].as_u64().unwrap()).sum::<u64>(), 256);
    assert_eq!(mpiio_rows.iter().map(|f| f["write_bytes"].as_u64().unwrap()).sum::<u64>(), 2 << 30);
}

fn analyze_json(path: &Path, extra: &[&str]) -> serde_json::Value {
    let out = scratch();
    let json = out.path().join("a.json");
    let run = iolens().arg("analyze").arg(path).args(extra).arg("--json").arg(&json).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// Darshan's NAME_INCLUDE/NAME_EXCLUDE: what the filters leave out is counted, on DXT text and
/// binary logs alike, and what is left plus what is out is the whole trace.
#[test]
fn include_and_exclude_filters_split_the_trace_and_count_what_they_leave_out() {
    let darshan = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/darshan/nonmpi_dxt_anonymized.darshan");
    let Some(text) = dxt("nonmpi_dxt_anonymized.dxt.txt") else { return };
    for path in [text, darshan] {
        let all = analyze_json(&path, &[]);
        assert!(all.get("filters").is_none(), "no filters, no filter report");
        let out = analyze_json(&path, &["--exclude", "^//9", "--exclude", "^//8"]);
        let report = &out["filters"];
        assert_eq!(report["exclude"], serde_json::json!(["^//9", "^//8"]));
        let kept = out["ops"].as_u64().unwrap();
        let left_out = report["ops_out"].as_u64().unwrap();
        assert!(kept > 0 && left_out > 0 && report["files_out"].as_u64().unwrap() > 0, "{report}");
        assert_eq!(kept + left_out, all["ops"].as_u64().unwrap(), "{}", path.display());
        assert_eq!(
            out["bytes"].as_u64().unwrap() + report["bytes_out"].as_u64().unwrap(),
            all["bytes"].as_u64().unwrap()
        );
        assert!(out["files"].as_array().unwrap().iter().all(|f| {
            let p = f["path"].as_str().unwrap();
            !p.starts_with("//9") && !p.starts_with("//8")
        }));
        let only = analyze_json(&path, &["--include", "^//9", "--include", "^//8"]);
        assert_eq!(only["ops"].as_u64().unwrap(), left_out, "the include of what was excluded");
    }
}

#[test]
fn top_files_and_slowest_size_their_tables_apart_and_top_sets_both() {
    let Some(path) = dxt("nonmpi_dxt_anonymized.dxt.txt") else { return };
    let rows = |v: &serde_json::Value| {
        (v["files"].as_array().unwrap().len(), v["slowest"].as_array().unwrap().len())
    };
    assert_eq!(rows(&analyze_json(&path, &["--top-files", "2", "--slowest", "5"])), (2, 5));
    assert_eq!(rows(&analyze_json(&path, &["--top", "3"])), (3, 3));
    assert_eq!(rows(&analyze_json(&path, &["--top", "3", "--slowest", "1"])), (3, 1), "explicit wins");
    let no_files = analyze_json(&path, &["--top-files", "0"]);
    assert_eq!(rows(&no_files), (0, 10));
    assert_eq!(no_files["ops"], analyze_json(&path, &[])["ops"]);
}

#[test]
fn an_invalid_filter_pattern_is_a_usage_error_naming_the_flag() {
    let Some(path) = dxt("mpi-io-test_32ranks.dxt.txt") else { return };
    let out = iolens().arg("analyze").arg(&path).args(["--include", "(unclosed"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--include \"(unclosed\": not a valid regular expression"), "{err}");
}

#[test]
fn analyze_rejects_garbage_with_a_line_number_in_strict_mode() {
    let dir = scratch();
    let bad = dir.path().join("bad.strace");
    std::fs::write(&bad, "100 1700000000.000100 read(3, \"ab\", 2) = 2 <0.000010>\nthis is not strace\n")
        .unwrap();
    let out = iolens().args(["analyze", "--format", "strace", "--strict"]).arg(&bad).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains('2'),
        "names line 2: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = iolens().args(["analyze", "--format", "strace"]).arg(&bad).output().unwrap();
    assert!(out.status.success(), "non-strict keeps going: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("malformed"));
}

#[test]
fn analyze_of_a_run_trace_cut_inside_its_last_record() {
    let dir = scratch();
    let (target, trace, json) =
        (dir.path().join("data"), dir.path().join("run.iolt"), dir.path().join("a.json"));
    let out = iolens()
        .args(["run", "--rw", "write", "--bs", "4k", "--size", "1m", "--bytes", "256k", "--target"])
        .arg(&target)
        .arg("--trace")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let full = iolens_record::trace::TraceReader::open(&trace).unwrap().count() as u64;
    let len = std::fs::metadata(&trace).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&trace).unwrap().set_len(len - 5).unwrap();
    let out = iolens().arg("analyze").arg(&trace).arg("--json").arg(&json).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The writes and the close of the target: the last record (the close) is the cut one.
    assert_eq!(full, 65);
    assert_eq!(v["ops"], 64, "every write before the cut");
    let cut_at = len - 32;
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains(&format!("truncated at offset {cut_at}"))),
        "{notes:?}"
    );
    assert_eq!(v["interrupted"], false);
}

/// A run trace whose agents' records are written agent after agent, so its calls are not in
/// start order: `analyze` sweeps such a trace first, finds the disorder, and must read it again
/// with unions that take any order (the figures below are those of the calls, not of a sweep).
#[test]
fn analyze_of_a_run_trace_whose_agents_overlap_in_time() {
    use iolens_record::trace::{OpKind, OpRecord, OpStatus, TraceWriter};
    let dir = scratch();
    let (trace, json) = (dir.path().join("two.iolt"), dir.path().join("a.json"));
    let writer = TraceWriter::create(&trace, &["agent0".into(), "agent1".into()]).unwrap();
    for (stream, shift) in [(1u16, 25u64), (0, 0)] {
        let mut buf = writer.buffer();
        for i in 0..1000u64 {
            let start = 1_000 + i * 100 + shift;
            buf.push(&OpRecord {
                start_ns: start,
                end_ns: start + 50,
                offset: i * 4096,
                bytes: 4096,
                stream,
                kind: OpKind::Read,
                status: OpStatus::Complete,
            });
        }
        buf.finish().unwrap();
    }
    writer.finish().unwrap();
    let out = iolens().arg("analyze").arg(&trace).arg("--json").arg(&json).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["ops"], 2000);
    assert_eq!(v["busy_periods"], 1000, "each agent's call overlaps the other's");
    assert_eq!(v["busy_s"], 75_000e-9);
    assert_eq!(v["concurrency"]["peak_in_flight"], 2);
    let mut files: Vec<&str> =
        v["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["agent0", "agent1"], "the agents name the rows");
}

/// A run trace whose last record starts before every other, more than the sweep's reorder
/// window (2^18 calls) behind: both sweeps give up and the stored unions give the figures.
#[test]
fn analyze_of_a_run_trace_out_of_order_beyond_the_sweep_window() {
    use iolens_record::trace::{OpKind, OpRecord, OpStatus, TraceWriter};
    let dir = scratch();
    let (trace, json) = (dir.path().join("late.iolt"), dir.path().join("a.json"));
    let writer = TraceWriter::create(&trace, &["agent0".into()]).unwrap();
    let mut buf = writer.buffer();
    let calls = 600_000u64;
    for i in 0..=calls {
        let start = if i == calls { 0 } else { 1_000 + i * 100 };
        buf.push(&OpRecord {
            start_ns: start,
            end_ns: start + 50,
            offset: i * 512,
            bytes: 512,
            stream: 0,
            kind: OpKind::Write,
            status: OpStatus::Complete,
        });
    }
    buf.finish().unwrap();
    writer.finish().unwrap();
    let out = iolens().arg("analyze").arg(&trace).arg("--json").arg(&json).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["ops"], calls + 1);
    assert_eq!(v["busy_periods"], calls + 1);
    assert_eq!(v["busy_s"], (calls + 1) as f64 * 50.0 / 1e9);
    assert_eq!(v["first_start_ns"], 0, "the late call is counted");
}

/// Appends 100 writes of 10 bytes to out.txt, then, while the count in argv[1] is above zero,
/// replaces itself through execl, execlp or execle (in turn) with the count one lower.
const EXEC_CHAIN_PROGRAM: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    int left = argc > 1 ? atoi(argv[1]) : 0;
    int fd = open("out.txt", O_WRONLY | O_CREAT | O_APPEND, 0644);
    for (int i = 0; i < 100; i++) write(fd, "0123456789", 10);
    close(fd);
    if (left == 0) return 0;
    char next[16];
    snprintf(next, sizeof next, "%d", left - 1);
    if (left % 3 == 0) execl(argv[0], argv[0], next, (char *)NULL);
    else if (left % 3 == 1) execlp(argv[0], argv[0], next, (char *)NULL);
    else execle(argv[0], argv[0], next, (char *)NULL, environ);
    return 1;
}
"#;

#[test]
fn execl_execlp_execle_chains_keep_every_image_s_writes() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "chain", EXEC_CHAIN_PROGRAM) else { return };
    let prog = prog.to_str().unwrap();
    // 30 images of 100 writes each, through each of the three calls ten times.
    let summary = compare(&[prog, "29"], |_| {});
    if !summary.is_null() {
        assert_eq!(summary["write_ops"].as_u64(), Some(3000), "{summary}");
    }
}

#[test]
fn a_thread_spawning_subprocesses_leaves_the_writers_counts_whole() {
    // subprocess.run forks with vfork (or posix_spawn) while eight threads write: the child
    // must not touch the buffers and descriptor table of the parent it shares memory with.
    let script = "import os, subprocess, threading\n\
        def work(n):\n    fd = os.open('w%d.bin' % n, os.O_WRONLY | os.O_CREAT, 0o644)\n    for i in range(2000): os.write(fd, b'x')\n    os.close(fd)\n\
        done = threading.Event()\n\
        def spawn():\n    while not done.is_set(): subprocess.run(['true'])\n\
        s = threading.Thread(target=spawn)\ns.start()\n\
        ts = [threading.Thread(target=work, args=(n,)) for n in range(8)]\n[t.start() for t in ts]\n[t.join() for t in ts]\n\
        done.set()\ns.join()\n";
    let dir = scratch();
    let (counts, summary) = iolens_counts(&["python3", "-c", script], dir.path(), dir.path(), false);
    assert_eq!(counts.get("write"), Some(&(16_000, 16_000)), "{counts:?}");
    let notes = summary["notes"].to_string();
    assert!(!notes.contains("DROPPED") && !notes.contains("mid-write"), "{notes}");
}

/// Four threads each write 500 times to a file of their own and then wait, their events still
/// in their buffers, while the main thread execs `true`: the exec ends them, so it must write
/// their buffers out first, after they have left them.
const EXEC_WHILE_THREADS_HOLD_EVENTS: &str = r#"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int ready[2], hold[2];
static void *writer(void *arg) {
    char name[32];
    snprintf(name, sizeof name, "t%ld.bin", (long)arg);
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 500; i++) write(fd, "x", 1);
    write(ready[1], "r", 1);
    char c;
    read(hold[0], &c, 1); /* never returns: the exec ends this thread */
    return NULL;
}
int main(void) {
    pipe(ready);
    pipe(hold);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, writer, (void *)i);
    char c;
    for (int i = 0; i < 4; i++) read(ready[0], &c, 1);
    execl("/bin/true", "true", (char *)NULL);
    return 1;
}
"#;

#[test]
fn an_exec_writes_out_the_buffers_of_the_other_threads() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "exec_threads", EXEC_WHILE_THREADS_HOLD_EVENTS) else { return };
    let dir = scratch();
    let (counts, summary) = iolens_counts(&[prog.to_str().unwrap()], dir.path(), dir.path(), false);
    assert_eq!(counts.get("write"), Some(&(2000, 2000)), "{counts:?}");
    let notes = summary["notes"].to_string();
    assert!(!notes.contains("DROPPED") && !notes.contains("mid-write"), "{notes}");
}

#[test]
fn a_reused_out_directory_is_refused_not_summed() {
    let dir = scratch();
    let out = dir.path().join("streams");
    let run = || {
        iolens()
            .args(["trace", "--json"])
            .arg(dir.path().join("s.json"))
            .arg("--out")
            .arg(&out)
            .args(["--", "dd", "if=/dev/zero", "of=x.bin", "bs=4k", "count=10"])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(summary["write_ops"].as_u64(), Some(10));
    let second = run();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("earlier trace") && stderr.contains("hint:"), "{stderr}");
}

/// `iolens`, run as nobody through setpriv when the tests run as root (with `dir` open to it);
/// else as the current user.
fn as_nobody_if_root(dir: &Path) -> Command {
    if !root() || !have("setpriv") {
        return iolens();
    }
    use std::os::unix::fs::PermissionsExt;
    // Open to all and sticky, as /tmp: what nobody makes in it stays nobody's.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_iolens")]);
    // setpriv keeps root's HOME: nobody's copy of the preload library goes to a cache of its own,
    // and its registry to a state directory of its own.
    cmd.env("XDG_CACHE_HOME", dir.join(".cache")).env("IOLENS_STATE_DIR", dir.join(".state"));
    cmd
}

#[test]
fn a_program_with_umask_777_is_traced_and_keeps_its_exit_status() {
    // Root reads a stream of mode 000 all the same: the failure shows as another user.
    let dir = scratch();
    let json = dir.path().join("s.json");
    let mut cmd = as_nobody_if_root(dir.path());
    let run = cmd
        .args(["trace", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", "umask 777; dd if=/dev/zero of=x.bin bs=4k count=10 2>/dev/null; exit 3"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(3), "{}", String::from_utf8_lossy(&run.stderr));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(summary["write_ops"].as_u64(), Some(10), "{summary}");
}

#[test]
fn processes_that_give_up_root_are_traced_after_the_change() {
    if !require(root(), "root, to change user") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dd = "dd if=/dev/zero of=y.bin bs=4k count=10 2>/dev/null";
    let mut runs: Vec<Vec<&str>> = Vec::new();
    if require_tool("setpriv") {
        runs.push(vec!["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", dd]);
    }
    if require_tool("su") {
        // su forks, the child becomes nobody and runs a shell, which forks dd.
        runs.push(vec!["su", "nobody", "-s", "/bin/sh", "-c", dd]);
    }
    for cmd in runs {
        let dir = scratch();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let (counts, _) = iolens_counts(&cmd, dir.path(), dir.path(), true);
        assert_eq!(counts.get("y.bin write"), Some(&(10, 40960)), "{cmd:?}: {counts:?}");
    }
}

/// Runs the program named by its argument (searched in PATH, then the working directory) with
/// posix_spawnp, and waits for it.
const SPAWN_PROGRAM: &str = r#"
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    setenv("PATH", ".", 1);
    char *args[] = {argv[1], NULL};
    pid_t child;
    int status;
    if (argc < 2 || posix_spawnp(&child, argv[1], NULL, NULL, args, environ) != 0) return 1;
    return waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
"#;

#[test]
fn a_statically_linked_program_run_by_a_traced_process_is_said_to_be_untraced() {
    let dir = scratch();
    if compile_c(dir.path(), "chain", EXEC_CHAIN_PROGRAM).is_none() {
        return;
    }
    compile_c(dir.path(), "spawner", SPAWN_PROGRAM).unwrap();
    let status = Command::new("gcc")
        .args(["-O2", "-static", "-o"])
        .arg(dir.path().join("static-chain"))
        .arg(dir.path().join("chain.c"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr);
    if !require(status.status.success(), &format!("a static C library (libc6-dev): {stderr}")) {
        return;
    }
    let json = dir.path().join("s.json");
    let out = iolens()
        .args(["trace", "--quiet", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", "./static-chain; ./chain; ./static-chain; ./spawner static-chain"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(summary["write_ops"].as_u64(), Some(100), "only the dynamic program's writes: {summary}");
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let static_notes: Vec<&&str> = notes.iter().filter(|n| n.contains("statically linked")).collect();
    assert_eq!(static_notes.len(), 3, "one note per process that ran it (exec or spawn): {notes:?}");
    assert!(static_notes.iter().all(|n| n.contains("static-chain") && n.contains("NOT traced")), "{notes:?}");
}

#[test]
fn a_set_user_id_program_is_said_to_be_untraced() {
    if !require(root() && have("setpriv"), "root and setpriv, to make a set-user-ID program of another user")
    {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let Some(prog) = compile_c(dir.path(), "suid", EXEC_CHAIN_PROGRAM) else { return };
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let json = dir.path().join("s.json");
    for cmd in [vec!["./suid"], vec!["sh", "-c", "./suid; true"]] {
        let mut run = as_nobody_if_root(dir.path());
        let out = run
            .args(["trace", "--json"])
            .arg(&json)
            .arg("--")
            .args(&cmd)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let notes = summary["notes"].to_string();
        assert!(notes.contains("secure-execution mode") && notes.contains("suid"), "{cmd:?}: {notes}");
    }
}

#[test]
fn events_lost_on_a_full_disk_are_counted_with_the_reason() {
    if !require(root(), "root, to mount a small tmpfs") {
        return;
    }
    let dir = scratch();
    let out = dir.path().join("full");
    std::fs::create_dir(&out).unwrap();
    // 64 KiB: the first 64 KiB buffer of events does not fit beside the stream's header (dd's
    // 50,000 writes take some 400 KiB of compact events).
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"]).arg(&out).status();
    if !require(mounted.is_ok_and(|s| s.success()), "a tmpfs mount") {
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&out);
    let json = dir.path().join("s.json");
    let run = iolens()
        .args(["trace", "--json"])
        .arg(&json)
        .arg("--out")
        .arg(out.join("streams"))
        .args(["--", "dd", "if=/dev/zero", "of=x.bin", "bs=512", "count=50000"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (kept, notes) = (summary["write_ops"].as_u64().unwrap(), summary["notes"].to_string());
    let dropped: u64 = notes
        .split(" events were DROPPED")
        .next()
        .and_then(|head| head.rsplit(['"', ' ']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no drop note: {notes}"));
    assert!(notes.contains("No space left on device"), "{notes}");
    // dd's 50,000 writes and its reads of /dev/zero (left out, not lost): every write is either
    // in the figures or counted as dropped, among the other calls dropped with it.
    assert!(kept < 50_000 && kept + dropped >= 50_000, "kept {kept}, dropped {dropped}: {notes}");
    assert!(!notes.contains("mid-write"), "the stream stays whole frames: {notes}");
}

#[test]
fn only_exe_counts_the_chosen_processes_and_says_which() {
    // A launcher (as mpirun) reading its own files around the program that does the I/O.
    let script = "import subprocess, time\n\
        def slurp():\n    with open('data.bin', 'rb', buffering=0) as f:\n        while f.read(1000): pass\n\
        slurp()\n\
        subprocess.run(['dd', 'if=/dev/zero', 'of=o.bin', 'bs=4k', 'count=10'], stderr=subprocess.DEVNULL)\n\
        time.sleep(0.2)\n\
        slurp()\n";
    let dir = scratch();
    write_file(&dir.path().join("data.bin"), 100_000);
    let streams = dir.path().join("streams");
    let traced = iolens()
        .args(["trace", "--out"])
        .arg(&streams)
        .args(["--", "python3", "-c", script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(traced.status.success(), "{}", String::from_utf8_lossy(&traced.stderr));
    let analyze = |only: &[&str]| -> serde_json::Value {
        let json = dir.path().join("s.json");
        let mut cmd = iolens();
        cmd.arg("analyze").arg(&streams).arg("--json").arg(&json);
        for name in only {
            cmd.args(["--only-exe", name]);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    let all = analyze(&[]);
    let dd = analyze(&["dd"]);
    assert_eq!(dd["write_ops"].as_u64(), Some(10), "{dd}");
    assert_eq!(dd["write_bytes"].as_u64(), Some(40960));
    assert!(all["read_ops"].as_u64().unwrap() >= 200, "the launcher's reads: {all}");
    assert_eq!(dd["read_ops"].as_u64(), Some(0), "dd's reads are of /dev/zero, left out: {dd}");
    assert!(
        dd["wall_s"].as_f64().unwrap() < all["wall_s"].as_f64().unwrap(),
        "dd's life lies inside the launcher's: {} vs {}",
        dd["wall_s"],
        all["wall_s"]
    );
    let notes = dd["notes"].to_string();
    assert!(notes.contains("--only-exe dd: the figures count") && notes.contains("left out:"), "{notes}");
    let rows = dd["executables"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["exe"].as_str().unwrap().contains(name)).unwrap();
    assert_eq!(row("/dd")["counted"], true);
    assert_eq!(row("/dd")["ops"].as_u64(), Some(10), "its reads of /dev/zero are not file I/O: {rows:?}");
    assert_eq!(row("python3")["counted"], false);
    // One tree: the traced program (python3, or a wrapper that runs it) and everything it
    // started, dd among them; only dd's process counts.
    let trees = dd["process_trees"].as_array().unwrap();
    assert_eq!(trees.len(), 1, "{trees:?}");
    let tree = &trees[0];
    let processes = tree["processes"].as_u64().unwrap();
    assert!(processes >= 2, "{tree}");
    let exes: Vec<&str> =
        tree["executables"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert!(exes.contains(&"dd") && exes.iter().any(|e| e.starts_with("python3")), "{tree}");
    assert_eq!(tree["counted_pids"].as_array().unwrap().len(), 1, "{tree}");
    assert_eq!(tree["counted_ops"].as_u64(), Some(10));
    assert_eq!(tree["ops"], all["ops"], "every data call lies in the tree");
    let text = String::from_utf8_lossy(
        &iolens().arg("analyze").arg(&streams).args(["--only-exe", "dd"]).output().unwrap().stdout,
    )
    .to_string();
    assert!(text.contains("process trees") && text.contains(&format!("1 of {processes} (pids")), "{text}");
}

#[test]
fn a_daemon_still_running_at_the_end_is_named_in_a_note() {
    // Double fork: the grandchild outlives the traced program, closing every descriptor first.
    let dir = scratch();
    let json = dir.path().join("s.json");
    let run = iolens()
        .args(["trace", "--json"])
        .arg(&json)
        .args(["--", "sh", "-c", "(sh -c 'exec 0<&- 1>&- 2>&-; sleep 5' &) ; exit 0"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let notes = summary["notes"].to_string();
    assert!(notes.contains("still running when it exited"), "{notes}");
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

/// Four threads read one file with pread, each call at its own offset, and write to a file of
/// their own, with an fsync at the end: more calls than the sweep's reorder window holds.
const THREADS_PREAD_PROGRAM: &str = r#"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int in;
static void *reader(void *arg) {
    long t = (long)arg;
    char buf[512], name[32];
    snprintf(name, sizeof name, "out%ld.dat", t);
    int out = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (long i = 0; i < 150000; i++) {
        pread(in, buf, sizeof buf, ((i * 7 + t) % 64) * 512);
        if (i % 1000 == 0) write(out, buf, 100);
    }
    fsync(out);
    close(out);
    return NULL;
}
int main(void) {
    char block[512] = {0};
    int f = open("in.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 64; i++) write(f, block, sizeof block);
    close(f);
    in = open("in.dat", O_RDONLY);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, reader, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
"#;

/// A trace of one process is read first with busy time swept as the calls come, through a
/// reorder window (its threads' calls come in blocks); with a per-op export it is read with
/// stored unions. The two summaries are the same.
#[test]
fn a_traced_process_s_threads_swept_give_the_stored_summary() {
    let dir = scratch();
    let Some(trace) = traced_c_program(dir.path(), "threads_pread", THREADS_PREAD_PROGRAM) else { return };
    let (swept, stored) = swept_and_stored(&trace, dir.path());
    assert_eq!(swept["ops"], 4 * 150_000 + 4 * 150 + 64);
    assert_eq!(swept, stored);
}

/// The main thread opens a file and a worker thread reads it, more calls than fill a buffer:
/// the worker's buffers reach the stream before the main thread's, which holds the open.
const WORKER_READS_WHAT_MAIN_OPENED: &str = r#"
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
static int fd;
static void *worker(void *arg) {
    char buf[512];
    for (long i = 0; i < 20000; i++) pread(fd, buf, sizeof buf, (i % 16) * 512);
    return arg;
}
int main(void) {
    char block[512] = {0};
    int f = open("data.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 16; i++) write(f, block, sizeof block);
    close(f);
    fd = open("data.bin", O_RDONLY);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    close(fd);
    return 0;
}
"#;

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

/// A process and its forked child read one file at the same time, each more calls than fill a
/// buffer: two streams whose calls interleave in time.
const FORKED_READERS_PROGRAM: &str = r#"
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    char block[512] = {0};
    int f = open("in.dat", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 64; i++) write(f, block, sizeof block);
    close(f);
    int in = open("in.dat", O_RDONLY);
    pid_t child = fork();
    long n = child == 0 ? 120000 : 90000;
    for (long i = 0; i < n; i++) pread(in, block, sizeof block, (i % 64) * 512);
    if (child == 0) return 0;
    waitpid(child, NULL, 0);
    return 0;
}
"#;

/// The streams of several processes are read side by side, by time, and their busy time swept;
/// the summary is the one the stored unions give (a per-op export reads them that way).
#[test]
fn processes_read_side_by_side_give_the_stored_summary() {
    let dir = scratch();
    let Some(trace) = traced_c_program(dir.path(), "forked_readers", FORKED_READERS_PROGRAM) else {
        return;
    };
    assert_eq!(iolens_import::stream_files(&trace).unwrap().len(), 2, "one stream per process");
    let (swept, stored) = swept_and_stored(&trace, dir.path());
    assert_eq!(swept["ops"], 120_000 + 90_000 + 64);
    assert_eq!(swept, stored);
}
