//! `iolens trace` on real programs, checked against strace's count of calls and bytes on the
//! same workload; `iolens analyze` on the shared Darshan samples and on strace output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Calls and bytes per class (read, write, copy, sync) on files under `under`.
type Counts = BTreeMap<&'static str, (u64, u64)>;

fn class_of(call: &str) -> Option<&'static str> {
    match call {
        "read" | "pread64" | "readv" | "preadv" | "preadv2" => Some("read"),
        "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" => Some("write"),
        "copy_file_range" | "sendfile" => Some("copy"),
        "fsync" | "fdatasync" => Some("sync"),
        _ => None,
    }
}

/// Runs `cmd` under `strace -ff -y` and counts its calls on files under `under`.
fn strace_counts(cmd: &[&str], cwd: &Path, under: &Path) -> Counts {
    let out = tempfile::tempdir().unwrap();
    let prefix = out.path().join("st");
    let status = Command::new("strace")
        .args(["-ff", "-y", "-qq", "-e", "signal=none", "-e"])
        .arg("trace=read,write,pread64,pwrite64,readv,writev,preadv,pwritev,preadv2,pwritev2,copy_file_range,sendfile,fsync,fdatasync")
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
        for line in text.lines() {
            let Some((call, rest)) = line.split_once('(') else { continue };
            let Some(class) = class_of(call) else { continue };
            // The file is the first fd argument, or for copies the destination (third).
            let args: Vec<&str> = rest.split(", ").collect();
            let fd_arg =
                if class == "copy" && call == "copy_file_range" { args.get(2) } else { args.first() };
            let Some(path) = fd_arg.and_then(|a| a.split_once('<')).map(|(_, p)| p.trim_end_matches('>'))
            else {
                continue;
            };
            if !path.starts_with(under) {
                continue;
            }
            let result: i64 =
                line.rsplit(" = ").next().unwrap().split(' ').next().unwrap().parse().unwrap_or(-1);
            let e = counts.entry(class).or_default();
            e.0 += 1;
            if class != "sync" && result > 0 {
                e.1 += result as u64;
            }
        }
    }
    counts
}

/// Runs `cmd` under `iolens trace` and counts the POSIX events on files under `under` from
/// the per-op CSV; returns the counts and the JSON summary.
fn iolens_counts(cmd: &[&str], cwd: &Path, under: &Path) -> (Counts, serde_json::Value) {
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
    let under = under.to_str().unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col =
        |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("CSV column {name}"));
    let (c_path, c_op, c_layer, c_result) = (col("path"), col("op"), col("layer"), col("result"));
    let mut counts = Counts::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f[c_layer] != "posix" || !f[c_path].trim_matches('"').starts_with(under) {
            continue;
        }
        let class = match f[c_op] {
            "read" => "read",
            "write" => "write",
            "copy" => "copy",
            "fsync" | "fdatasync" => "sync",
            _ => continue,
        };
        let result: i64 = f[c_result].parse().unwrap();
        let e = counts.entry(class).or_default();
        e.0 += 1;
        if class != "sync" && result > 0 {
            e.1 += result as u64;
        }
    }
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (counts, summary)
}

/// Runs `cmd` once under strace and once under `iolens trace`, each in its own fresh scratch
/// directory prepared by `prepare` (so a program that changes its directory, like sqlite creating
/// a table, sees the same start both times), and checks the counts on files in it agree.
fn compare(cmd: &[&str], prepare: impl Fn(&Path)) -> serde_json::Value {
    if !have("strace") {
        eprintln!("skipped: strace not installed");
        return serde_json::Value::Null;
    }
    let (strace_dir, iolens_dir) = (scratch(), scratch());
    prepare(strace_dir.path());
    prepare(iolens_dir.path());
    let expected = strace_counts(cmd, strace_dir.path(), strace_dir.path());
    let (got, summary) = iolens_counts(cmd, iolens_dir.path(), iolens_dir.path());
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
    compare(&["cp", "a.bin", "b.bin"], |dir| write_file(&dir.join("a.bin"), 5 << 20));
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
fn python_reads_via_buffered_io_and_pread() {
    let script = "import os\nwith open('data.bin','rb') as f:\n    while f.read(10000): pass\n\
                  fd = os.open('data.bin', os.O_RDONLY)\nfor i in range(100): os.pread(fd, 4096, i * 8192)\nos.close(fd)\n\
                  with open('out.txt','w') as f:\n    for i in range(1000): f.write('line %d\\n' % i)\n";
    compare(&["python3", "-c", script], |dir| write_file(&dir.join("data.bin"), 1 << 20));
}

#[test]
fn sqlite_inserts_with_fsync() {
    if !have("sqlite3") {
        eprintln!("skipped: sqlite3 not installed");
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

fn dxt(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/dxt").join(name);
    p.exists().then_some(p)
}

#[test]
fn analyze_darshan_dxt_sample() {
    let Some(path) = dxt("mpi-io-test_32ranks.dxt.txt") else {
        eprintln!("skipped: shared DXT samples not found");
        return;
    };
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
    if !path.exists() {
        eprintln!("skipped: shared Darshan logs not found");
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
