//! `iolens run` under `mpirun -np 4` (feature `mpi`; run by `scripts/test-mpi`). Each test
//! launches the built binary with mpirun and checks the one JSON rank 0 writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use iolens_mpi::clock::{ClockCorrection, OffsetEstimate};
use iolens_record::busy::{read_period_log, union_of};
use iolens_record::trace::TraceReader;
use iolens_record::Interval;
use iolens_record::OpKind;
use serde_json::Value;

use crate::util::{floats_check, holds_written_data, schema_check, wait_for};

const RANKS: usize = 4;
const SKEW_NS: i64 = 5_000_000;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_iolens")
}

/// `mpirun … -np 4 sh -c SCRIPT`: SCRIPT runs once per rank, `$OMPI_COMM_WORLD_RANK` set.
fn mpirun_sh(script: &str) -> Output {
    let mut c = Command::new("mpirun");
    // Root in CI containers; more ranks than cores on small machines.
    c.args(["--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string(), "sh", "-c", script]);
    c.env("IOLENS_BIN", bin());
    c.output().expect("mpirun (install openmpi-bin)")
}

/// Runs SCRIPT under mpirun, which must fail: how long it took and its stderr.
fn failing_mpirun_sh(script: &str) -> (Duration, String) {
    let t = Instant::now();
    let out = mpirun_sh(script);
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    (took, err)
}

fn mpirun(args: &[&str]) -> Output {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let out = mpirun_sh(&format!("exec \"$IOLENS_BIN\" {}", quoted.join(" ")));
    assert!(
        out.status.success(),
        "mpirun iolens {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn data_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dat"))
        .collect();
    v.sort();
    v
}

#[test]
fn file_per_process_one_table_one_json_aggregate_is_the_sum_of_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = mpirun(&[
        "run",
        "--target",
        dir.path().to_str().unwrap(),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "4m",
        "--bytes",
        "4m",
        "--keep",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("ranks: 4 on").count(), 1, "one table, from rank 0:\n{stdout}");
    let files = data_files(dir.path());
    assert_eq!(files.len(), RANKS, "{files:?}");
    for r in 0..RANKS {
        assert!(files.iter().any(|f| f.to_string_lossy().ends_with(&format!("-r{r}.dat"))), "{files:?}");
    }
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert_eq!(d["layout"], "file-per-process");
    assert!(!d["hosts"].as_array().unwrap().is_empty());
    let per_rank = d["per_rank"].as_array().unwrap();
    assert_eq!(per_rank.len(), RANKS);
    let sum: u64 = per_rank.iter().map(|r| u(&r["figures"]["bytes"])).sum();
    let ops: u64 = per_rank.iter().map(|r| u(&r["figures"]["ops"])).sum();
    assert_eq!(u(&d["aggregate"]["bytes"]), sum);
    assert_eq!(sum, RANKS as u64 * (4 << 20));
    assert_eq!(u(&d["aggregate"]["ops"]), ops);
    let distinct: std::collections::BTreeSet<&str> =
        per_rank.iter().map(|r| r["files"][0].as_str().unwrap()).collect();
    assert_eq!(distinct.len(), RANKS);
    // The global busy time is a union: no more than the wall, no less than any rank's own.
    let busy = d["aggregate"]["busy_s"].as_f64().unwrap();
    assert!(per_rank.iter().all(|r| r["figures"]["busy_s"].as_f64().unwrap() <= busy + 1e-9));
    assert!(busy <= d["aggregate"]["wall_s"].as_f64().unwrap() + 1e-3);
}

#[test]
fn shared_file_segmented_and_strided_use_one_file() {
    for layout in ["segmented", "strided"] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("result.json");
        let trace = dir.path().join("ops.trace");
        mpirun(&[
            "run",
            "--target",
            dir.path().to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "64k",
            "--size",
            "2m",
            "--bytes",
            "2m",
            "--shared-file",
            "--layout",
            layout,
            "--keep",
            "-q",
            "--json",
            json.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ]);
        // Every rank's operations land in its own share of the file, and the shares cover it.
        let (region, block) = (2u64 << 20, 64u64 << 10);
        let mut covered = std::collections::BTreeSet::new();
        for r in 0..RANKS as u64 {
            let mut reader = TraceReader::open(&dir.path().join(format!("ops.r{r}.trace"))).unwrap();
            while let Some(op) = reader.next_record().unwrap() {
                if op.kind != OpKind::Write {
                    continue;
                }
                let owner = match layout {
                    "segmented" => op.offset / region,
                    _ => op.offset / block % RANKS as u64,
                };
                assert_eq!(owner, r, "{layout}: rank {r} wrote at {}", op.offset);
                assert!(covered.insert(op.offset), "{layout}: offset {} written twice", op.offset);
            }
        }
        assert_eq!(covered.len() as u64, RANKS as u64 * region / block, "{layout}");
        let files = data_files(dir.path());
        assert_eq!(files.len(), 1, "{layout}: {files:?}");
        assert_eq!(std::fs::metadata(&files[0]).unwrap().len(), RANKS as u64 * (2 << 20), "{layout}");
        let d = read_json(&json);
        assert_eq!(d["layout"], format!("shared-{layout}"));
        assert_eq!(u(&d["aggregate"]["write_bytes"]), RANKS as u64 * (2 << 20), "{layout}");
    }
}

/// Rank 1's clock runs 5 ms ahead (`IOLENS_CLOCK_SKEW_NS`): the ping-pong estimate recovers it
/// within 50 µs, and the global busy time equals the offline union of the four ranks' busy
/// logs with rank 1's moved back by the true skew.
#[test]
fn injected_clock_skew_is_recovered_and_the_union_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let log = dir.path().join("busy.log");
    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then export IOLENS_CLOCK_SKEW_NS={SKEW_NS}; fi; \
         exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 16k --size 8m --time 1s --rate 2000 \
         --busy-log '{}' -q --json '{}'",
        dir.path().display(),
        log.display(),
        json.display()
    );
    let out = mpirun_sh(&script);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = read_json(&json);
    let per_rank = d["per_rank"].as_array().unwrap();
    let offset = |r: usize| per_rank[r]["offset_ns"].as_i64().unwrap();
    let error = (offset(1) - SKEW_NS).abs();
    println!("skew {SKEW_NS} ns estimated as {} ns: error {error} ns", offset(1));
    assert!(error <= 50_000, "skew {SKEW_NS} estimated as {}", offset(1));
    for r in [0, 2, 3] {
        assert!(offset(r).abs() <= 50_000, "rank {r} has no skew but an offset of {}", offset(r));
        assert!(u(&per_rank[r]["uncertainty_ns"]) < 1_000_000);
    }
    // The offline union of the four logs corrected by the *reported* clocks (both estimates and
    // the drift, as rank 0 applied them) equals the global busy time.
    let estimate = |v: &Value| OffsetEstimate {
        offset_ns: v["offset_ns"].as_i64().unwrap(),
        uncertainty_ns: u(&v["uncertainty_ns"]),
        rtt_ns: u(&v["rtt_ns"]),
        at_ns: u(&v["at_ns"]),
    };
    let mut reported: Vec<Interval> = Vec::new();
    for (r, entry) in per_rank.iter().enumerate() {
        let c = ClockCorrection::new(estimate(&entry["clock"]["before"]), estimate(&entry["clock"]["after"]));
        let path = dir.path().join(format!("busy.r{r}.log"));
        reported.extend(read_period_log(&path).unwrap().map(|p| {
            let start = c.to_root(p.start);
            Interval::new(start, c.to_root(p.end).max(start))
        }));
    }
    let with_reported = union_of(&mut reported).busy_ns;
    let mut all: Vec<Interval> = Vec::new();
    for r in 0..RANKS {
        let path = dir.path().join(format!("busy.r{r}.log"));
        let shift = if r == 1 { SKEW_NS as u64 } else { 0 };
        all.extend(read_period_log(&path).unwrap().map(|p| Interval::new(p.start - shift, p.end - shift)));
    }
    let periods = all.len() as u64;
    let offline = union_of(&mut all).busy_ns;
    let global = (d["aggregate"]["busy_s"].as_f64().unwrap() * 1e9).round() as u64;
    // Each period's ends move by at most the estimate's error (plus drift rounding).
    let tolerance = 2 * periods * (error as u64 + 1_000) + 1_000;
    println!(
        "global busy {global} ns; offline union {with_reported} ns with the reported clocks, {offline} ns with \
         the true skew, over {periods} periods"
    );
    assert!(global.abs_diff(with_reported) <= 1_000, "global {global} vs offline {with_reported}");
    assert!(global.abs_diff(offline) <= tolerance, "global {global} vs offline {offline} (±{tolerance})");
}

#[test]
fn a_failing_rank_ends_the_whole_job_within_10_s_naming_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "T='{}'; if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then T=/nonexistent/iolens/dir; fi; \
         exec \"$IOLENS_BIN\" run --target \"$T\" --rw write --bs 64k --size 4m --time 30s -q",
        dir.path().display()
    );
    let (took, err) = failing_mpirun_sh(&script);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(err.contains("rank 2 on "), "{err}");
    assert!(err.contains("/nonexistent/iolens/dir"), "{err}");
}

/// A rank killed mid-run (SIGKILL: no chance to say anything) ends the job on every rank
/// within 10 s; mpirun names the rank and its host. What the killed rank made — its data file
/// and its scratch directory in TMPDIR (issue 23, defect 8: never registered, never reclaimed)
/// — is removed by the next `iolens clean`.
#[test]
fn a_rank_killed_mid_run_ends_the_whole_job_within_10_s() {
    let dir = tempfile::tempdir().unwrap();
    let (data, tmp, state) = (dir.path().join("data"), dir.path().join("tmp"), dir.path().join("state"));
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    let script = format!(
        "export TMPDIR='{}' IOLENS_STATE_DIR='{}'; \
         if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then (sleep 2; kill -9 $$) & fi; \
         exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 64k --size 4m --time 30s -q",
        tmp.display(),
        state.display(),
        data.display()
    );
    let (took, err) = failing_mpirun_sh(&script);
    // Not a speed limit: left alone, the other ranks would have run out their --time 30s.
    assert!(took < Duration::from_secs(30), "took {took:?}: the other ranks were not stopped");
    assert!(err.contains("rank 1"), "{err}");
    let clean = Command::new(bin()).arg("clean").env("IOLENS_STATE_DIR", &state).output().unwrap();
    assert!(clean.status.success(), "{}", stderr(&clean));
    let said = String::from_utf8_lossy(&clean.stdout);
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}\n{said}");
    assert!(data_files(&data).is_empty(), "left: {:?}\n{said}", data_files(&data));
}

/// `iolens beff --quick` under mpirun -np 4: 21 sizes, 6 ring and 6 random patterns, 3 methods ×
/// 3 repetitions each, every loop timed in 2.5–5 ms where the loop length allows it, and b_eff
/// recomputed from the JSON protocol with the paper's formula equals the reported one.
#[test]
fn beff_quick_protocol_recomputes_b_eff() {
    use iolens_mpi::beff::{pattern_results, summarize, BeffOutput, Kind, Method};
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("beff.json");
    let t0 = Instant::now();
    let out = mpirun(&["beff", "--quick", "-q", "--json", json.to_str().unwrap()]);
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("b_eff = ").count(), 1, "one table, from rank 0:\n{stdout}");
    let o: BeffOutput = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(o.sizes.len(), 21);
    assert_eq!(&o.sizes[..13], &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]);
    assert_eq!(*o.sizes.last().unwrap(), 64 << 10);
    assert_eq!(o.summary.lmax, 64 << 10);
    assert_eq!(o.summary.processes, RANKS);
    assert_eq!(o.patterns.iter().filter(|p| p.kind == Kind::Ring).count(), 6);
    assert_eq!(o.patterns.iter().filter(|p| p.kind == Kind::Random).count(), 6);
    // Ring sizes on 4 ranks: 2,2 for pattern 1, one ring of 4 for the others.
    assert_eq!(o.patterns[0].rings, vec![vec![0, 1], vec![2, 3]]);
    for p in &o.patterns {
        let mut ranks: Vec<usize> = p.rings.iter().flatten().copied().collect();
        ranks.sort();
        assert_eq!(ranks, (0..RANKS).collect::<Vec<_>>(), "{}", p.name);
        for &l in &o.sizes {
            for method in [Method::Sendrecv, Method::Alltoallv, Method::Nonblocking] {
                let n = o
                    .protocol
                    .iter()
                    .filter(|m| m.pattern == p.name && m.size == l && m.method == method)
                    .count();
                assert_eq!(n, 3, "{} L={l} {method:?}: 3 repetitions", p.name);
            }
        }
    }
    assert_eq!(o.protocol.len(), 12 * 21 * 3 * 3);
    for m in &o.protocol {
        assert_eq!(m.messages, 2 * RANKS as u64);
        let b = m.size as f64 * m.messages as f64 * m.loops as f64 / m.time_s;
        assert!((b - m.bandwidth).abs() <= 1e-9 * b, "{m:?}");
        assert!(m.loops >= 1 && m.time_s > 0.0);
    }
    // Most loops land in 2.5–5 ms (a busy, oversubscribed machine may push some out).
    let held = o.protocol.iter().filter(|m| (0.0025..=0.005).contains(&m.time_s)).count();
    assert!(held * 2 > o.protocol.len(), "only {held} of {} loops took 2.5-5 ms", o.protocol.len());
    // b_eff from the protocol: max over methods and reps, mean over the 21 sizes, logavg.
    let results = pattern_results(&o.patterns, &o.sizes, &o.protocol);
    let pp = o.ping_pong.iter().map(|p| p.bandwidth).fold(0.0, f64::max);
    let s = summarize(&results, RANKS, o.summary.lmax, Some(pp));
    assert!(s.b_eff > 0.0);
    assert!((s.b_eff - o.summary.b_eff).abs() <= 1e-9 * s.b_eff, "{s:?} vs {:?}", o.summary);
    for (a, b) in [
        (s.b_eff_at_lmax, o.summary.b_eff_at_lmax),
        (s.ring_at_lmax_per_process, o.summary.ring_at_lmax_per_process),
        (s.b_eff_per_process, o.summary.b_eff_per_process),
    ] {
        assert!((a - b).abs() <= 1e-9 * a, "{s:?} vs {:?}", o.summary);
    }
    // And by hand, independently of the library: geometric means of arithmetic means.
    let avg = |name: &str| -> f64 {
        o.sizes
            .iter()
            .map(|&l| {
                o.protocol
                    .iter()
                    .filter(|m| m.pattern == name && m.size == l)
                    .map(|m| m.bandwidth)
                    .fold(0.0, f64::max)
            })
            .sum::<f64>()
            / 21.0
    };
    let geo = |v: Vec<f64>| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    let ring = geo((1..=6).map(|p| avg(&format!("ring{p}"))).collect());
    let random = geo((1..=6).map(|p| avg(&format!("random{p}"))).collect());
    let b_eff = (ring * random).sqrt();
    assert!((b_eff - o.summary.b_eff).abs() <= 1e-9 * b_eff);
    assert_eq!(o.ping_pong.len(), 3);
    assert!(pp > 0.0);
    println!("beff --quick took {took:?}");
}

/// `iolens beff` in one process refuses with exit 2: b_eff needs mpirun -np N, N ≥ 2.
#[test]
fn beff_alone_refuses_with_exit_2() {
    let out = Command::new(bin()).args(["beff", "--quick"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mpirun -np N"));
}

/// The files in `dir` other than the results the test asked for: what a suite left behind.
fn left_behind(dir: &Path, results: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !results.contains(&n.as_str()))
        .collect();
    v.sort();
    v
}

/// One point of a suite under MPI: a part per rank, in rank order, whose bytes add up to the
/// point's aggregate, each rank on files of its own. Returns each rank's first file.
fn check_ranks_of_point(point: &Value) -> Vec<String> {
    let per_rank = point["per_rank"].as_array().unwrap_or_else(|| panic!("no per_rank in {point}"));
    assert_eq!(per_rank.len(), RANKS, "{point}");
    for (r, share) in per_rank.iter().enumerate() {
        assert_eq!(u(&share["rank"]), r as u64);
        assert!(u(&share["bytes"]) > 0, "rank {r} moved nothing: {point}");
    }
    let sum: u64 = per_rank.iter().map(|r| u(&r["bytes"])).sum();
    assert_eq!(sum, u(&point["bytes"]), "{point}");
    let files: Vec<String> = per_rank.iter().map(|r| r["files"][0].as_str().unwrap().to_string()).collect();
    let distinct: std::collections::BTreeSet<&String> = files.iter().collect();
    assert_eq!(distinct.len(), RANKS, "{files:?}");
    files
}

fn one_table(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("ranks: 4 on").count(), 1, "one table, from rank 0:\n{stdout}");
}

#[test]
fn sweep_runs_every_point_on_all_ranks_each_on_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let out = mpirun(&[
        "sweep",
        dir.path().to_str().unwrap(),
        "--buffered",
        "--threads",
        "1",
        "--min-bs",
        "4k",
        "--max-bs",
        "16k",
        "--size",
        "1m",
        "--time",
        "200ms",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    one_table(&out);
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert!(!d["hosts"].as_array().unwrap().is_empty());
    let points = d["curves"][0]["points"].as_array().unwrap();
    assert_eq!(points.iter().map(|p| u(&p["bs_bytes"])).collect::<Vec<_>>(), vec![4096, 8192, 16384]);
    for p in points {
        let files = check_ranks_of_point(p);
        for (r, f) in files.iter().enumerate() {
            assert!(f.ends_with(&format!("iolens-sweep-r{r}.dat")), "{files:?}");
        }
    }
    assert_eq!(left_behind(dir.path(), &["sweep.json"]), Vec::<String>::new());
}

#[test]
fn saturate_grows_ranks_times_requests_and_counts_the_nodes_that_saturate() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("saturate.json");
    let out = mpirun(&[
        "saturate",
        dir.path().to_str().unwrap(),
        "--buffered",
        "--rw",
        "randread",
        "--max-concurrency",
        "8",
        "--cores-per-node",
        "3",
        "--size",
        "1m",
        "--time",
        "200ms",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    one_table(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nodes to saturate: "));
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert_eq!(u(&d["cores_per_node"]), 3);
    let curve = &d["curves"][0];
    let points = curve["points"].as_array().unwrap();
    let total: Vec<u64> = points.iter().map(|p| u(&p["concurrency"])).collect();
    let each: Vec<u64> = points.iter().map(|p| u(&p["per_rank_concurrency"])).collect();
    assert_eq!((total, each), (vec![4, 8], vec![1, 2]), "ranks × requests per rank, capped at 8 in all");
    for p in points {
        check_ranks_of_point(p);
    }
    let saturation = u(&curve["saturation_concurrency"]);
    assert_eq!(u(&curve["nodes_to_saturate"]), saturation.div_ceil(3));
    assert_eq!(left_behind(dir.path(), &["saturate.json"]), Vec::<String>::new());
}

#[test]
fn write_modes_write_every_ranks_bytes_in_files_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("modes.json");
    let out = mpirun(&[
        "write-modes",
        dir.path().to_str().unwrap(),
        "--bytes",
        "256k",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    one_table(&out);
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert_eq!(u(&d["bytes_per_rank"]), 256 << 10);
    assert_eq!(u(&d["bytes_per_mode"]), RANKS as u64 * (256 << 10));
    let modes = d["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 3);
    for m in modes {
        assert_eq!(u(&m["bytes"]), RANKS as u64 * (256 << 10), "{m}");
        check_ranks_of_point(m);
    }
    assert_eq!(left_behind(dir.path(), &["modes.json"]), Vec::<String>::new());
}

#[test]
fn quick_runs_its_parts_across_ranks_and_rank_0_writes_one_page() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let results = dir.path().join("results");
    let json = dir.path().join("quick.json");
    let out = mpirun(&[
        "quick",
        work.to_str().unwrap(),
        "--time",
        "200ms",
        "--size",
        "64k",
        "--results",
        results.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    one_table(&out);
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    let parts = d["parts"].as_array().unwrap();
    for name in ["sweep", "saturate", "write-modes"] {
        let p = parts.iter().find(|p| p["part"] == name).unwrap();
        assert!(p["error"].is_null(), "{p}");
        let part = read_json(&results.join(p["json"].as_str().unwrap()));
        assert_eq!(u(&part["ranks"]), RANKS as u64, "{name}");
    }
    // b_eff_io over MPI-IO, one partition of all ranks.
    let beff = parts.iter().find(|p| p["part"] == "beff-io").unwrap();
    assert!(beff["error"].is_null() && beff["skipped"].is_null(), "{beff}");
    let b = read_json(&results.join(beff["json"].as_str().unwrap()));
    assert_eq!(b["ranks_are"], "MPI processes", "{b}");
    assert_eq!(b["partitions"].as_array().unwrap().len(), 1);
    let sweep = read_json(&results.join("sweep.json"));
    for p in sweep["curves"][0]["points"].as_array().unwrap() {
        check_ranks_of_point(p);
    }
    let saturate = read_json(&results.join("saturate.json"));
    assert_eq!(u(&saturate["curves"][0]["points"][0]["concurrency"]), RANKS as u64);
    assert_eq!(left_behind(&work, &[]), Vec::<String>::new(), "every rank's scratch directory is gone");
}

/// mpirun running SCRIPT per rank with its own ownership registry (`state`), not the user's.
fn mpirun_sh_in(state: &Path, script: &str) -> Output {
    let mut c = Command::new("mpirun");
    c.args(["--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string(), "sh", "-c", script]);
    c.env("IOLENS_BIN", bin()).env("IOLENS_STATE_DIR", state);
    c.output().expect("mpirun (install openmpi-bin)")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// IOR's `-C`: every rank writes its data stamped with a generation of its own (1000 + rank);
/// then with `--reorder-ranks 1` rank r reads, and verifies against generation 1000 + r + 1,
/// what rank r + 1 wrote — its file, or its segment of the shared file. Without the shift the
/// same expectation fails on every block (exit 3, the failures of all ranks summed).
#[test]
fn reorder_ranks_reads_what_the_next_rank_wrote() {
    for shared in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let layout = if shared { "--shared-file" } else { "" };
        let common = format!("--target '{}' --bs 64k --size 1m --verify crc32c -q {layout}", data.display());
        let write = format!(
           "exec \"$IOLENS_BIN\" run {common} --rw write --keep --verify-generation $((1000 + OMPI_COMM_WORLD_RANK))"
       );
        let out = mpirun_sh_in(&state, &write);
        assert!(out.status.success(), "write: {}", stderr(&out));
        let json = dir.path().join("read.json");
        let read = |extra: &str| {
            format!(
                "exec \"$IOLENS_BIN\" run {common} --rw read --keep --json '{}' {extra} \
                --verify-generation $((1000 + (OMPI_COMM_WORLD_RANK + 1) % {RANKS}))",
                json.display()
            )
        };
        let out = mpirun_sh_in(&state, &read("--reorder-ranks 1"));
        assert!(out.status.success(), "shared {shared}: read: {}", stderr(&out));
        let d = read_json(&json);
        assert_eq!(u(&d["reorder_ranks"]), 1);
        let blocks = RANKS as u64 * 16;
        assert_eq!(u(&d["verify"]["blocks_checked"]), blocks, "shared {shared}: {}", d["verify"]);
        assert_eq!(u(&d["verify"]["failures_total"]), 0, "shared {shared}: {}", d["verify"]);
        for (r, entry) in d["per_rank"].as_array().unwrap().iter().enumerate() {
            let file = entry["files"][0].as_str().unwrap();
            if shared {
                assert!(file.ends_with("iolens-run-shared.dat"), "{file}");
            } else {
                assert!(file.ends_with(&format!("-r{}.dat", (r + 1) % RANKS)), "rank {r} read {file}");
            }
            assert_eq!(u(&entry["result"]["verify"]["blocks_checked"]), 16, "rank {r}");
        }
        if !shared {
            // A job file's reading agent moves the same way (its job and agent names are the
            // flags' ones, so it finds the files the write run kept).
            let job = dir.path().join("read.toml");
            std::fs::write(
               &job,
               format!(
                   "name = \"run\"\n[[agent]]\nname = \"agent0\"\ntarget = \"{}\"\nrw = \"read\"\nbs = \"64k\"\nsize = \"1m\"\n",
                   data.display()
               ),
           )
           .unwrap();
            let script = format!(
                "exec \"$IOLENS_BIN\" run --job '{}' --reorder-ranks 3 -q --json '{}'",
                job.display(),
                json.display()
            );
            let out = mpirun_sh_in(&state, &script);
            assert!(out.status.success(), "job file: {}", stderr(&out));
            let d = read_json(&json);
            for (r, entry) in d["per_rank"].as_array().unwrap().iter().enumerate() {
                let file = entry["files"][0].as_str().unwrap();
                assert!(
                    file.ends_with(&format!("-r{}.dat", (r + 3) % RANKS)),
                    "job file: rank {r} read {file}"
                );
            }
            // That unverified read read the kept files as they were: the written data is still
            // there for the next reader, and no rank dropped a cache it was not asked to.
            let out = mpirun_sh_in(&state, &read("--reorder-ranks 1"));
            assert!(out.status.success(), "read after the job file's: {}", stderr(&out));
            let d = read_json(&json);
            assert_eq!(u(&d["verify"]["failures_total"]), 0, "{}", d["verify"]);
            let targets = d["targets"].as_array().unwrap();
            assert_eq!(targets.len(), RANKS, "{targets:?}");
            for t in targets {
                assert_eq!(
                    (&t["created"], &t["laid_out_bytes"], &t["cache_dropped"]),
                    (&false.into(), &0.into(), &false.into()),
                    "{t}"
                );
            }
        }
        // The control: the same expectation on the rank's own data fails everywhere.
        let out = mpirun_sh_in(&state, &read(""));
        assert_eq!(out.status.code(), Some(3), "shared {shared}: {}", stderr(&out));
        let d = read_json(&json);
        assert_eq!(u(&d["reorder_ranks"]), 0);
        assert_eq!(u(&d["verify"]["failures_total"]), blocks, "shared {shared}: {}", d["verify"]);
        let per_rank: u64 = d["per_rank"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| u(&e["result"]["verify"]["failures_total"]))
            .sum();
        assert_eq!(per_rank, blocks);
        assert!(d["verify"]["failures"][0]["agent"].as_str().unwrap().starts_with("rank "));
    }
}

/// `--reorder-ranks` where it means nothing is refused, naming the reason.
#[test]
fn reorder_ranks_refuses_what_it_cannot_mean() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let target = format!("--target '{}' --bs 64k --size 1m -q", dir.path().display());
    for (args, why) in [
        ("--rw read --reorder-ranks 4", "multiple of the 4 ranks"),
        ("--rw read --reorder-ranks 0", "multiple of the 4 ranks"),
        ("--rw write --reorder-ranks 1", "no agent only reads"),
        ("--rw read --reorder-ranks 1", "does not exist"),
    ] {
        let out = mpirun_sh_in(&state, &format!("exec \"$IOLENS_BIN\" run {target} {args}"));
        assert!(!out.status.success(), "{args}");
        assert!(stderr(&out).contains(why), "{args}: {}", stderr(&out));
    }
    let out = Command::new(bin())
        .args(["run", "--target", dir.path().to_str().unwrap(), "--rw", "read", "--reorder-ranks", "1"])
        .env("IOLENS_STATE_DIR", &state)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("only under MPI"), "{}", stderr(&out));
}

/// `--repeat 3` under mpirun: three combined runs, summarized as without MPI.
#[test]
fn repeat_under_mpi_summarizes_every_combined_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    mpirun(&[
        "run",
        "--target",
        dir.path().to_str().unwrap(),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "1m",
        "--repeat",
        "3",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    let d = read_json(&json);
    assert_eq!(u(&d["repeat"]), 3);
    assert_eq!(u(&d["completed"]), 3);
    let runs = d["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        assert_eq!(u(&run["ranks"]), RANKS as u64);
        assert_eq!(run["per_rank"].as_array().unwrap().len(), RANKS);
        assert_eq!(u(&run["aggregate"]["write_bytes"]), RANKS as u64 * (1 << 20));
    }
    let bps = d["summary"].as_array().unwrap().iter().find(|m| m["name"] == "bps").unwrap();
    let values: Vec<f64> = bps["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let want: Vec<f64> = runs.iter().map(|r| r["aggregate"]["bps"].as_f64().unwrap()).collect();
    assert_eq!(values, want);
    assert!(data_files(dir.path()).is_empty(), "every repetition removes its files");
}

/// SIGINT to mpirun (which passes SIGTERM to the ranks, SIGKILL later) acts as Ctrl-C does:
/// the job ends within 10 s, the JSON, if rank 0 wrote it, is valid and marked interrupted,
/// and no data file remains (after `iolens clean` at most).
#[test]
fn sigint_to_mpirun_stops_the_job_and_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let json = dir.path().join("result.json");
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string(), bin()])
        .args(["run", "--target", data.to_str().unwrap(), "--rw", "write", "--bs", "64k", "--size", "4m"])
        .args(["--time", "60s", "-q", "--json", json.to_str().unwrap()])
        .env("IOLENS_STATE_DIR", &state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mpirun");
    // Wait until every rank writes into its file (the measurement runs), then interrupt.
    wait_for("every rank to write into its file", || {
        let files = data_files(&data);
        files.len() == RANKS && files.iter().all(|f| holds_written_data(f))
    });
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let sent = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        // Not a speed limit: the job was asked for 60 s; running that long means SIGINT was lost.
        if sent.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("mpirun still runs 60 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    println!("mpirun ended {:?} after SIGINT: {status}; JSON written: {}", sent.elapsed(), json.exists());
    assert!(!status.success(), "{err}");
    if json.exists() {
        let d = read_json(&json);
        assert_eq!(d["interrupted"], true, "{d}");
    }
    let clean = Command::new(bin()).arg("clean").env("IOLENS_STATE_DIR", &state).output().unwrap();
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert!(data_files(&data).is_empty(), "left: {:?}\n{err}", data_files(&data));
}

/// The check: the global busy time equals the offline union of the four ranks'
/// `--trace` files — every operation moved to rank 0's clock by the reported correction —
/// within 1 µs per busy period. Rank 1's clock runs 5 ms ahead; the rate leaves idle gaps.
#[test]
fn global_busy_time_is_the_union_of_the_rank_traces() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let trace = dir.path().join("ops.trace");
    let script = format!(
       "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then export IOLENS_CLOCK_SKEW_NS={SKEW_NS}; fi; \
        exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 16k --size 8m --time 1s --rate 2000 --threads 2 \
        --trace '{}' -q --json '{}'",
       dir.path().display(),
       trace.display(),
       json.display()
   );
    let out = mpirun_sh(&script);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = read_json(&json);
    let estimate = |v: &Value| OffsetEstimate {
        offset_ns: v["offset_ns"].as_i64().unwrap(),
        uncertainty_ns: u(&v["uncertainty_ns"]),
        rtt_ns: u(&v["rtt_ns"]),
        at_ns: u(&v["at_ns"]),
    };
    let mut ops: Vec<Interval> = Vec::new();
    for (r, entry) in d["per_rank"].as_array().unwrap().iter().enumerate() {
        let c = ClockCorrection::new(estimate(&entry["clock"]["before"]), estimate(&entry["clock"]["after"]));
        assert_eq!(c.offset_ns(), entry["offset_ns"].as_i64().unwrap());
        let mut reader = TraceReader::open(&dir.path().join(format!("ops.r{r}.trace"))).unwrap();
        while let Some(op) = reader.next_record().unwrap() {
            let start = c.to_root(op.start_ns);
            ops.push(Interval::new(start, c.to_root(op.end_ns).max(start)));
        }
    }
    let offline = union_of(&mut ops);
    let global = (d["aggregate"]["busy_s"].as_f64().unwrap() * 1e9).round() as u64;
    println!(
        "global busy {global} ns, offline union of the traces {} ns over {} periods ({} ops)",
        offline.busy_ns,
        offline.periods,
        ops.len()
    );
    assert!(offline.periods > RANKS as u64, "idle gaps between operations: {}", offline.periods);
    assert!(
        global.abs_diff(offline.busy_ns) <= 1_000 * offline.periods,
        "global {global} vs {}",
        offline.busy_ns
    );
}

/// `iolens beff-io` under mpirun -np 4 over MPI-IO, partitions of 1, 2 and 4 processes: one
/// table, one JSON whose b_eff_io the paper's formula gives again from the protocol (type =
/// bytes / open-to-close time; method = types with type 0 twice; partition = 25% write, 25%
/// rewrite, 50% read; system = best partition), the MPI-IO call of every pattern type, the hint
/// passed, and no file left behind.
#[test]
fn beff_io_over_mpi_io_recomputes_its_value_and_names_its_calls() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("beff-io.json");
    let t0 = Instant::now();
    let out = mpirun(&[
        "beff-io",
        target.to_str().unwrap(),
        "--partitions",
        "1,2,4",
        "--time",
        "1s",
        "--mpart",
        "2m",
        "--memory",
        "64m",
        "--hint",
        "cb_nodes=2",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    println!("beff-io over MPI-IO, 3 partitions at T = 1 s: {:?}", t0.elapsed());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("b_eff_io = ").count(), 1, "one table, from rank 0:\n{stdout}");
    assert!(stdout.contains("MPI_File_write_all (view: hvector)"), "{stdout}");
    let d = read_json(&json);
    assert_eq!(d["ranks_are"], "MPI processes");
    assert!(d["mpi"]["library"].as_str().unwrap().contains("MPI"), "{}", d["mpi"]);
    assert_eq!(d["mpi"]["hints"], serde_json::json!([["cb_nodes", "2"]]));
    let f = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    let calls = [
        ("MPI_File_write_all (view: hvector)", "MPI_File_read_all (view: hvector)"),
        ("MPI_File_write_ordered", "MPI_File_read_ordered"),
        ("MPI_File_write (own file, MPI_COMM_SELF)", "MPI_File_read (own file, MPI_COMM_SELF)"),
        ("MPI_File_write_at", "MPI_File_read_at"),
        ("MPI_File_write_at_all", "MPI_File_read_at_all"),
    ];
    let partitions = d["partitions"].as_array().unwrap();
    let sizes: Vec<u64> = partitions.iter().map(|p| u(&p["ranks"])).collect();
    assert_eq!(sizes, [1, 2, 4], "one entry per partition");
    let (method_weight, type_weight) =
        ([0.25, 0.25, 0.5], [2.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0]);
    let mut best = (0.0f64, 0u64);
    for p in partitions {
        let patterns = p["patterns"].as_array().unwrap();
        assert_eq!(patterns.len(), 3 * 43, "{} ranks: every pattern of Table 2, three methods", p["ranks"]);
        let mut partition = 0.0;
        for (m, method) in ["write", "rewrite", "read"].iter().enumerate() {
            let mut value = 0.0;
            for (ty, (write_call, read_call)) in calls.iter().enumerate() {
                let t = p["types"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["method"] == *method && u(&t["pattern_type"]) == ty as u64)
                    .unwrap();
                assert_eq!(t["call"], if *method == "read" { *read_call } else { *write_call });
                let bytes: u64 = patterns
                    .iter()
                    .filter(|x| x["method"] == *method && u(&x["pattern_type"]) == ty as u64)
                    .map(|x| u(&x["bytes"]))
                    .sum();
                assert_eq!(u(&t["bytes"]), bytes, "{method} type {ty}: the patterns' bytes");
                let mb_s = bytes as f64 / f(&t["time_s"]) / 1e6;
                assert!(close(f(&t["bw_mb_s"]), mb_s), "{method} type {ty}");
                value += type_weight[ty] * mb_s;
            }
            assert!(close(f(&p["methods"][m]["bw_mb_s"]), value), "{method}");
            partition += method_weight[m] * value;
        }
        assert!(close(f(&p["b_eff_io_mb_s"]), partition), "{} ranks", p["ranks"]);
        if partition > best.0 {
            best = (partition, u(&p["ranks"]));
        }
    }
    assert!(best.0 > 0.0);
    assert!(close(f(&d["b_eff_io_mb_s"]), best.0), "the system value is the best partition's");
    assert_eq!(u(&d["best_ranks"]), best.1);
    let left: Vec<_> = std::fs::read_dir(&target).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "b_eff_io removes its files: {left:?}");
}

/// A partition larger than the job is a usage error (exit 2), said once by rank 0.
#[test]
fn beff_io_refuses_a_partition_larger_than_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun_sh(&format!(
        "exec \"$IOLENS_BIN\" beff-io '{}' --partitions 2,8 --time 1s -q",
        dir.path().display()
    ));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("--partitions: 8 is not between 1 and the 4 processes").count(), 1, "{err}");
}

/// A rank that cannot use the directory ends the job, naming itself and its host.
#[test]
fn beff_io_a_failing_rank_ends_the_job_naming_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "T='{}'; if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then T=/nonexistent/iolens/dir; fi; \
        exec \"$IOLENS_BIN\" beff-io \"$T\" --time 1s --mpart 2m --memory 64m -q",
        dir.path().display()
    );
    let (took, err) = failing_mpirun_sh(&script);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(err.contains("rank 2 on "), "{err}");
    assert!(err.contains("/nonexistent/iolens/dir"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing made before the failure: {left:?}");
}

/// `doc` fits `schema` in `schemas/`, by the validator of the contract test (tests/contract.rs).
fn conforms(schema: &str, doc: &Value) {
    let mut schemas =
        schema_check::Schemas::new(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas"));
    let errors = schemas.validate(schema, doc);
    assert!(errors.is_empty(), "{schema}:\n{}\n{doc:#}", errors.join("\n"));
    floats_check::cpu_figures_are_floats(doc, schema);
}

#[test]
fn the_json_of_run_sweep_beff_io_and_beff_under_mpi_conforms_to_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let json = |name: &str| dir.path().join(format!("{name}.json")).to_str().unwrap().to_string();
    mpirun(&["run", "--target", &d, "--size", "1m", "--time", "200ms", "-q", "--json", &json("run")]);
    let run = read_json(Path::new(&json("run")));
    conforms("run.schema.json", &run);
    assert_eq!(u(&run["ranks"]), RANKS as u64, "the combined result: {run}");

    mpirun(&[
        "sweep",
        &d,
        "--buffered",
        "--threads",
        "1",
        "--min-bs",
        "4k",
        "--max-bs",
        "8k",
        "--size",
        "1m",
        "--time",
        "100ms",
        "-q",
        "--json",
        &json("sweep"),
    ]);
    let sweep = read_json(Path::new(&json("sweep")));
    conforms("sweep.schema.json", &sweep);
    assert_eq!(sweep["job"]["suite"], "sweep");

    let target = dir.path().join("beff-io");
    std::fs::create_dir(&target).unwrap();
    let pq = dir.path().join("beff-io.parquet").to_str().unwrap().to_string();
    mpirun(&[
        "beff-io",
        target.to_str().unwrap(),
        "--time",
        "400ms",
        "--mpart",
        "1m",
        "--memory",
        "16m",
        "--hint",
        "cb_nodes=2",
        "-q",
        "--json",
        &json("beff-io"),
        "--parquet",
        &pq,
    ]);
    let beff_io = read_json(Path::new(&json("beff-io")));
    conforms("beff-io.schema.json", &beff_io);
    assert_eq!(beff_io["job"]["hints"], serde_json::json!(["cb_nodes=2"]));
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    let patterns: usize = beff_io["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["patterns"].as_array().unwrap().len())
        .sum();
    assert_eq!(reader.metadata().file_metadata().num_rows() as usize, patterns);
    let kv = reader.metadata().file_metadata().key_value_metadata().cloned().unwrap_or_default();
    let envelope = kv.iter().find(|k| k.key == "iolens.envelope").and_then(|k| k.value.clone()).unwrap();
    let envelope: Value = serde_json::from_str(&envelope).unwrap();
    assert_eq!(envelope["job"], beff_io["job"], "rank 0's Parquet carries the same job");

    mpirun(&["beff", "--quick", "-q", "--json", &json("beff")]);
    conforms("beff.schema.json", &read_json(Path::new(&json("beff"))));
}

/// Issue 23, item 12c: ranks given different jobs are refused before anything runs, on every
/// rank, naming the ranks that differ from rank 0 and the first setting that differs; rank 0's
/// JSON is a valid error document.
/// As [`mpirun_sh`], ended after 120 s: ranks given different jobs used to hang a suite.
fn mpirun_sh_limited(script: &str) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "120", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string()]);
    c.args(["sh", "-c", script]).env("IOLENS_BIN", bin());
    let out = c.output().expect("timeout (coreutils)");
    assert_ne!(out.status.code(), Some(127), "mpirun not found (install openmpi-bin)");
    assert_ne!(out.status.code(), Some(124), "mpirun hung for 120 s: {}", stderr(&out));
    out
}

fn refused_as_another_job(out: &Output, json: &Path, ranks: &str, field: &str) {
    let verb = if ranks.contains(',') || ranks.contains('-') { "ranks {} run" } else { "rank {} runs" };
    let err = stderr(out);
    assert!(!out.status.success(), "a mixed launch must fail:\n{err}");
    let want = format!("{} another job than rank 0: {field}", verb.replace("{}", ranks));
    assert!(err.contains(&want), "want {want:?} in:\n{err}");
    assert!(err.contains("every rank must be given the same job (one command line, one job file)"), "{err}");
    let d = read_json(json);
    let error = d["error"]["message"].as_str().unwrap_or_else(|| panic!("no error in {d}"));
    assert!(error.contains(&want), "{error}");
}

#[test]
fn an_mpmd_launch_of_two_job_files_is_refused_naming_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let job = |name: &str, rw: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[[agent]]\nname = \"agent0\"\ntarget = \"{}\"\nrw = \"{rw}\"\nbs = \"64k\"\nsize = \"1m\"\nbytes = \"1m\"\n",
                dir.path().display()
            ),
        )
        .unwrap();
        path
    };
    let (a, b) = (job("a", "write"), job("b", "randwrite"));
    let mut c = Command::new("timeout");
    c.args(["-k", "5", "120", "mpirun", "--allow-run-as-root", "--oversubscribe"]);
    for (n, file) in [("2", &a), ("2", &b)] {
        if file == &b {
            c.arg(":");
        }
        c.args(["-np", n, bin(), "run"]).arg(file).args(["-q", "--json"]).arg(&json);
    }
    let out = c.output().expect("timeout (coreutils)");
    assert_ne!(out.status.code(), Some(127), "mpirun not found (install openmpi-bin)");
    refused_as_another_job(
        &out,
        &json,
        "2,3",
        "pattern random distribution=uniform on rank 2, sequential on rank 0",
    );
    assert!(data_files(dir.path()).is_empty(), "nothing ran: {:?}", data_files(dir.path()));
}

#[test]
fn a_rank_dependent_block_size_is_refused_naming_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let script = format!(
        "BS=64k; if [ \"$OMPI_COMM_WORLD_RANK\" -ge 2 ]; then BS=4k; fi; \
         exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs $BS --size 1m --bytes 1m -q --json '{}'",
        dir.path().display(),
        json.display()
    );
    let out = mpirun_sh_limited(&script);
    refused_as_another_job(&out, &json, "2,3", "bs 4096 on rank 2, 65536 on rank 0");
    assert!(data_files(dir.path()).is_empty(), "nothing ran: {:?}", data_files(dir.path()));

    // Flags of the measurement count too, not only the job: --shared-file on rank 1 alone.
    let script = format!(
        "S=; if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then S=--shared-file; fi; \
         exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 64k --size 1m --bytes 1m $S -q --json '{}'",
        dir.path().display(),
        json.display()
    );
    refused_as_another_job(
        &mpirun_sh_limited(&script),
        &json,
        "1",
        "--shared-file true on rank 1, false on rank 0",
    );
}

/// What may differ per rank does not count: where each rank writes its own output.
#[test]
fn per_rank_output_paths_and_directories_are_the_same_job() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..RANKS {
        std::fs::create_dir(dir.path().join(format!("d{r}"))).unwrap();
    }
    let script = format!(
        "D='{0}'/d$OMPI_COMM_WORLD_RANK; exec \"$IOLENS_BIN\" run --target \"$D\" --rw write --bs 64k \
         --size 1m --bytes 1m -q --trace \"$D/ops.trace\" --json \"$D/result.json\"",
        dir.path().display()
    );
    let out = mpirun_sh(&script);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = read_json(&dir.path().join("d0/result.json"));
    assert!(d["error"].is_null(), "{d}");
    assert_eq!(u(&d["aggregate"]["bytes"]), RANKS as u64 * (1 << 20));
}

/// A suite's points are jobs as well: a rank-dependent suite flag is refused the same way.
#[test]
fn a_suite_with_rank_dependent_flags_is_refused_naming_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let script = format!(
        "M=16k; if [ \"$OMPI_COMM_WORLD_RANK\" = 3 ]; then M=32k; fi; \
         exec \"$IOLENS_BIN\" sweep '{}' --buffered --threads 1 --min-bs 4k --max-bs $M --size 1m --time 200ms \
         -q --json '{}'",
        dir.path().display(),
        json.display()
    );
    refused_as_another_job(
        &mpirun_sh_limited(&script),
        &json,
        "3",
        "--max-bs \"32k\" on rank 3, \"16k\" on rank 0",
    );
}

/// b_eff_io too: a rank-dependent --time is refused before any MPI-IO file is opened.
#[test]
fn beff_io_with_rank_dependent_flags_is_refused_naming_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("beff-io.json");
    let script = format!(
        "T=1s; if [ \"$OMPI_COMM_WORLD_RANK\" -ge 1 ]; then T=2s; fi; \
         exec \"$IOLENS_BIN\" beff-io '{}' --time $T --mpart 2m --memory 64m -q --json '{}'",
        dir.path().display(),
        json.display()
    );
    refused_as_another_job(
        &mpirun_sh_limited(&script),
        &json,
        "1-3",
        "--time \"2s\" on rank 1, \"1s\" on rank 0",
    );
}
