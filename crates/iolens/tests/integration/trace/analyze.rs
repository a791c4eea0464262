//! `iolens analyze` of what other tools wrote (strace output, Darshan logs and DXT text, cut or
//! disordered run traces), checked against their own counts.

use super::*;

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

/// A shared DXT sample (`../shared/data/dxt/NAME`, beside the checkout); `None` (the test
/// skips) where the samples are not there.
fn dxt(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/dxt").join(name);
    require_data(p.exists(), "the shared DXT samples (../shared/data/dxt)").then_some(p)
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
    if !require_data(path.exists(), "the shared Darshan logs (../shared/data/darshan)") {
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
