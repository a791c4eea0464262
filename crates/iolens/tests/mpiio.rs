//! The MPI-IO layer of `iolens trace` under `mpirun -np 4` (feature `mpi`; run by
//! `scripts/test-mpi`): a small MPI-IO program (`data/mpiio_app.c`) is compiled with `mpicc`
//! and traced both ways a user would — `mpirun … iolens trace -- app` (one summary by rank 0)
//! and `mpirun … env LD_PRELOAD=… app` then `iolens analyze DIR` — through ROMIO, with data
//! sieving on for its strided read. The program knows exactly what it asks MPI-IO for; the
//! MPI-IO figures must say the same, and the POSIX calls beneath must have moved at least that.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const RANKS: u64 = 4;
/// What each rank of `mpiio_app.c` asks for: 4 collective writes of 64 KiB, 2 independent
/// writes of 16 KiB, 3 nonblocking writes of 8 KiB (MPI_Waitall) and one of 8 KiB (MPI_Wait), a
/// split collective write of 2 KiB; a nonblocking read of 1 KiB (MPI_Test), a strided read of
/// 16 KiB (data sieving) and a collective read of 4 KiB.
const WRITE_OPS: u64 = 4 + 2 + 3 + 1 + 1;
const WRITE_BYTES: u64 = 4 * 65536 + 2 * 16384 + 3 * 8192 + 8192 + 2048;
const READ_OPS: u64 = 3;
const READ_BYTES: u64 = 1024 + 16384 + 4096;
/// The strided read covers 16 blocks of 1 KiB every 4 KiB: data sieving reads the extent.
const SIEVED_EXTENT: u64 = 15 * 4096 + 1024;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_iolens")
}

/// The test program, compiled with mpicc into `dir`.
fn compile_app(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mpiio_app.c");
    let exe = dir.join("mpiio_app");
    let out = Command::new("mpicc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&source)
        .output()
        .expect("mpicc (apt-get install libopenmpi-dev)");
    assert!(out.status.success(), "mpicc failed: {}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// `mpirun -np 4` with ROMIO as the MPI-IO component (its data sieving is what the test reads).
fn mpirun(args: &[&str]) -> Output {
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &RANKS.to_string(),
            "--mca",
            "io",
            "romio321",
        ])
        .args(args)
        .output()
        .expect("mpirun (install openmpi-bin)");
    assert!(
        out.status.success(),
        "mpirun {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn layer<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == name)
        .unwrap_or_else(|| panic!("no {name} layer in {}", summary["layers"]))
}

/// (ops, read bytes, written bytes) of `path` at `layer`, over all its rows (one per rank).
fn file_totals(summary: &Value, path: &Path, layer: &str) -> (u64, u64, u64) {
    summary["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == path.to_str().unwrap() && f["layer"] == layer)
        .fold((0, 0, 0), |(o, r, w), f| (o + u(&f["ops"]), r + u(&f["read_bytes"]), w + u(&f["write_bytes"])))
}

/// What every summary of a run of the program must say.
fn check_summary(summary: &Value, data: &Path) {
    let shared = data.join("shared.dat");
    assert_eq!(summary["aggregate_layer"], "mpiio");
    let mpiio = layer(summary, "mpiio");
    assert_eq!(u(&mpiio["ops"]), RANKS * (WRITE_OPS + READ_OPS), "{mpiio}");
    assert_eq!(u(&mpiio["write_bytes"]), RANKS * WRITE_BYTES, "{mpiio}");
    assert_eq!(u(&mpiio["read_bytes"]), RANKS * READ_BYTES, "{mpiio}");
    assert!(mpiio["bps"].as_f64().unwrap() > 0.0 && mpiio["busy_s"].as_f64().unwrap() > 0.0, "{mpiio}");
    assert_eq!(u(&summary["write_ops"]), RANKS * WRITE_OPS);
    assert_eq!(u(&summary["read_ops"]), RANKS * READ_OPS);
    assert_eq!(
        file_totals(summary, &shared, "mpiio"),
        (RANKS * (WRITE_OPS + READ_OPS), RANKS * READ_BYTES, RANKS * WRITE_BYTES)
    );
    // Beneath: the POSIX calls ROMIO made on the file moved at least what was asked, and the
    // sieving read fetched each rank's whole strided extent, holes included.
    let (_, posix_read, posix_written) = file_totals(summary, &shared, "posix");
    assert!(posix_written >= RANKS * WRITE_BYTES, "posix wrote {posix_written}");
    assert!(posix_read >= RANKS * (SIEVED_EXTENT + 4096), "posix read {posix_read}: no data sieving?");
    let ranks: Vec<u64> = summary["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["layer"] == "mpiio")
        .map(|p| u(&p["ops"]))
        .collect();
    assert_eq!(ranks, vec![WRITE_OPS + READ_OPS; RANKS as usize], "one row of MPI-IO calls per rank");
    let notes = summary["notes"].to_string();
    // One node: every rank shares rank 0's kernel, and so its clock.
    assert!(
        notes.contains("MPI job of 4 rank(s): 4 traced; all ranks ran on one node, under one clock"),
        "{notes}"
    );
    assert!(!notes.contains("DROPPED") && !notes.contains("left no stream"), "{notes}");
}

/// The temporary job directories of `mpirun … iolens trace` runs.
fn job_dirs() -> std::collections::BTreeSet<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("iolens-trace-mpi-"))
        .collect()
}

#[test]
fn mpirun_iolens_trace_gives_one_summary_with_exact_mpiio_figures() {
    let dir = tempfile::tempdir().unwrap();
    let app = compile_app(dir.path());
    let json = dir.path().join("trace.json");
    let before = job_dirs();
    let out = mpirun(&[
        bin(),
        "trace",
        "--top",
        "100000",
        "--json",
        json.to_str().unwrap(),
        "--",
        app.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("data ops (").count(), 1, "one summary, by rank 0:\n{stdout}");
    assert!(stdout.contains("mpiio calls"), "{stdout}");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check_summary(&summary, dir.path());
    let leftovers: Vec<String> = job_dirs().difference(&before).cloned().collect();
    assert!(leftovers.is_empty(), "rank 0 removes the job's temporary directory: {leftovers:?}");
}

#[test]
fn preloaded_ranks_then_analyze_give_the_same_figures_on_rank_0s_clock() {
    let dir = tempfile::tempdir().unwrap();
    let app = compile_app(dir.path());
    // The preload `iolens trace` uses, as the program sees it.
    let seen = dir.path().join("ld_preload");
    let out = Command::new(bin())
        .args(["trace", "--", "sh", "-c", &format!("printf %s \"$LD_PRELOAD\" > '{}'", seen.display())])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let preload = std::fs::read_to_string(&seen).unwrap();
    assert!(preload.ends_with(".so"), "{preload}");
    let streams = dir.path().join("streams");
    std::fs::create_dir(&streams).unwrap();
    mpirun(&[
        "env",
        &format!("LD_PRELOAD={preload}"),
        &format!("IOLENS_TRACE_DIR={}", streams.display()),
        "IOLENS_MPI_CLOCK=1",
        app.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ]);
    let clock_files: Vec<String> = std::fs::read_dir(&streams)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mpi"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(clock_files.len(), RANKS as usize, "one clock file per rank");
    for text in &clock_files {
        let keys: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(
            keys,
            ["rank", "boot", "init", "finalize"],
            "measured at MPI_Init and MPI_Finalize: {text}"
        );
    }
    let json = dir.path().join("analyze.json");
    let out = Command::new(bin())
        .args(["analyze", "--top", "100000", "--json", json.to_str().unwrap(), streams.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check_summary(&summary, dir.path());
}
