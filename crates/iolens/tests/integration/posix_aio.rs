//! POSIX asynchronous I/O under `iolens trace`: glibc carries out `aio_read`/`aio_write` (and
//! the lists of `lio_listio`) in helper threads through its internal `pread`/`pwrite`, past the
//! preload's hooks; the aio hooks record each request from its submission to its `aio_return`. Checked against strace on the
//! same program (`data/posix_aio.c`): the calls the helper threads made on the file and the
//! bytes they moved.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::require_tool;

/// `tests/data/NAME.c` compiled into `dir`.
fn compile(dir: &Path, name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(format!("{name}.c"));
    let exe = dir.join(name);
    let out = Command::new("gcc").args(["-O2", "-o"]).arg(&exe).arg(&source).output().unwrap();
    assert!(out.status.success(), "gcc: {}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// (calls, bytes) of `call` on `file` in strace -f -y output: the file's descriptor is decorated
/// with its path (`3</dir/aio.dat>`), the result follows ` = `.
fn strace_calls(text: &str, call: &str, file: &Path) -> (u64, u64) {
    let decorated = format!("{call}(");
    let fd = format!("<{}>", file.display());
    text.lines()
        .filter_map(|l| l.split_once(&decorated))
        .filter(|(_, rest)| rest.split(", ").next().is_some_and(|a| a.ends_with(&fd)))
        .filter_map(|(_, rest)| rest.rsplit_once(" = ")?.1.split(' ').next()?.parse::<i64>().ok())
        .fold((0, 0), |(n, b), r| (n + 1, b + r.max(0) as u64))
}

/// (start, end) of each `op` on `file` in `iolens trace --csv` rows, in the order of `order_by`
/// ("offset" or "start_ns").
fn iolens_times(csv: &str, op: &str, file: &Path, order_by: &str) -> Vec<(u64, u64)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("column {name}"));
    let (path, kind, key, start, end) =
        (col("path"), col("op"), col(order_by), col("start_ns"), col("end_ns"));
    let mut rows: Vec<(u64, u64, u64)> = lines
        .map(|l| l.split(',').collect::<Vec<&str>>())
        .filter(|f| f[path].trim_matches('"') == file.to_str().unwrap() && f[kind] == op)
        .map(|f| (f[key].parse().unwrap(), f[start].parse().unwrap(), f[end].parse().unwrap()))
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, s, e)| (s, e)).collect()
}

/// (calls, requested bytes, moved bytes) of `op` on `file` in `iolens trace --csv` rows.
fn iolens_calls(csv: &str, op: &str, file: &Path) -> (u64, u64, u64) {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("column {name}"));
    let (path, kind, layer, requested, result) =
        (col("path"), col("op"), col("layer"), col("requested"), col("result"));
    lines
        .map(|l| l.split(',').collect::<Vec<&str>>())
        .filter(|f| {
            f[path].trim_matches('"') == file.to_str().unwrap() && f[kind] == op && f[layer] == "posix"
        })
        .fold((0, 0, 0), |(n, r, m), f| {
            (
                n + 1,
                r + f[requested].parse::<u64>().unwrap(),
                m + f[result].parse::<i64>().unwrap().max(0) as u64,
            )
        })
}

/// `exe` run in `dir` under `strace -f -y` of `calls`: what it printed, and strace's log.
fn under_strace(dir: &Path, exe: &Path, calls: &str) -> (String, String) {
    let log = dir.join("strace.txt");
    let out = Command::new("strace")
        .args(["-f", "-y", "-qq", "-e", &format!("trace={calls}"), "-o"])
        .arg(&log)
        .arg(exe)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8_lossy(&out.stdout).into_owned(), std::fs::read_to_string(&log).unwrap())
}

/// `exe` run in `dir` under `iolens trace OUTPUTS --`, which succeeded.
fn traced(dir: &Path, exe: &Path, outputs: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_iolens"))
        .arg("trace")
        .args(outputs)
        .arg("--")
        .arg(exe)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn aio_requests_are_recorded_with_the_bytes_strace_sees_the_helper_threads_move() {
    if !require_tool("gcc") || !require_tool("strace") {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let exe = compile(dir.path(), "posix_aio");
    let file = dir.path().join("aio.dat");

    let (said, text) = under_strace(dir.path(), &exe, "pread64,pwrite64");
    let (strace_writes, strace_written) = strace_calls(&text, "pwrite64", &file);
    let (strace_reads, strace_read) = strace_calls(&text, "pread64", &file);
    assert_eq!((strace_writes, strace_reads), (8 + 2, 4), "one system call per request:\n{text}");
    assert_eq!(said.trim(), format!("aio wrote {strace_written} read {strace_read}"));

    std::fs::remove_file(&file).unwrap();
    let csv = dir.path().join("ops.csv");
    traced(dir.path(), &exe, &["--csv", csv.to_str().unwrap()]);
    let rows = std::fs::read_to_string(&csv).unwrap();
    let (writes, asked_written, written) = iolens_calls(&rows, "write", &file);
    let (reads, asked_read, read) = iolens_calls(&rows, "read", &file);
    assert_eq!((writes, written), (strace_writes, strace_written), "{rows}");
    assert_eq!((reads, read), (strace_reads, strace_read), "{rows}");
    assert_eq!(asked_written, written, "every write moved what it asked");
    assert_eq!(asked_read, 4 * 65536, "the reads asked for 64 KiB each");
    assert!(read < asked_read, "the last read was short: the bytes moved are recorded, not those asked");

    // Each request ends when aio_error first said it was done: before the marker byte written
    // between that and its aio_return (8 writes then 4 reads, in offset order each).
    let markers = iolens_times(&rows, "write", &dir.path().join("marker.txt"), "start_ns");
    let mut requests = iolens_times(&rows, "write", &file, "offset");
    requests.truncate(8);
    requests.extend(iolens_times(&rows, "read", &file, "offset"));
    assert_eq!(markers.len(), requests.len(), "{rows}");
    for (i, ((_, end), (marker_start, _))) in requests.iter().zip(&markers).enumerate() {
        assert!(
            end <= marker_start,
            "request {i} ends at {end}, after the marker at {marker_start}:\n{rows}"
        );
    }
}

/// Requests never collected by `aio_return` cannot be recorded (nothing says what they moved):
/// the summary says how many each process left, and the bytes they asked for; those collected
/// are recorded as usual. Together they are every write strace saw the helper threads make.
#[test]
fn aio_requests_never_collected_are_counted_in_a_note() {
    if !require_tool("gcc") || !require_tool("strace") {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let exe = compile(dir.path(), "posix_aio_uncollected");
    let file = dir.path().join("uncollected.dat");

    let (_, text) = under_strace(dir.path(), &exe, "pwrite64");
    let (strace_writes, strace_written) = strace_calls(&text, "pwrite64", &file);
    assert_eq!((strace_writes, strace_written), (4, 3 * 4096 + 1000));

    let (csv, json) = (dir.path().join("ops.csv"), dir.path().join("summary.json"));
    let out = traced(dir.path(), &exe, &["--csv", csv.to_str().unwrap(), "--json", json.to_str().unwrap()]);
    // Notes are wrapped to the terminal's width: read the sentences as one line.
    let said = String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("left 3 requests uncollected"), "{said}");
    let (writes, _, written) = iolens_calls(&std::fs::read_to_string(&csv).unwrap(), "write", &file);
    assert_eq!((writes, written), (1, 1000), "the one collected request");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let uncollected: Vec<&&str> =
        notes.iter().filter(|n| n.contains("never collected by aio_return")).collect();
    assert_eq!(uncollected.len(), 1, "{notes:?}");
    assert!(
        uncollected[0].contains(&format!(
            "submitted {} POSIX aio request(s) ({} bytes asked)",
            strace_writes - writes,
            strace_written - written
        )),
        "{notes:?}"
    );
    assert!(said.contains("never collected by aio_return"), "the printed summary says it too: {said}");
}
