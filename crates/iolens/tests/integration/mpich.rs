//! The same binary's MPI paths under a second MPI library, MPICH (its Hydra launcher
//! `mpirun.mpich`), beside Open MPI: `scripts/test-mpi` builds iolens against MPICH in a target
//! directory of its own and names that binary in `IOLENS_MPICH_BIN`. Ignored by a plain
//! `cargo test`, which has no such build.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{read_json, u};

const RANKS: usize = 4;

fn mpich_bin() -> PathBuf {
    let bin = std::env::var_os("IOLENS_MPICH_BIN")
        .expect("IOLENS_MPICH_BIN names an MPICH build of iolens (scripts/test-mpi builds one)");
    PathBuf::from(bin)
}

/// `mpirun.mpich -np 4 sh -c SCRIPT`, the binary in `$IOLENS_BIN`, each rank's number in
/// `$PMI_RANK` (Hydra's variable).
fn mpich_sh(script: &str) -> Output {
    Command::new("mpirun.mpich")
        .args(["-np", &RANKS.to_string(), "sh", "-c", script])
        .env("IOLENS_BIN", mpich_bin())
        .output()
        .expect("mpirun.mpich (apt-get install mpich libmpich-dev)")
}

fn dat_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "dat"))
        .count()
}

fn run_ok(dir: &Path, extra: &str) -> Value {
    let json = dir.join("result.json");
    let out = mpich_sh(&format!(
        "exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 64k --size 4m --bytes 4m --keep -q --json '{}' {extra}",
        dir.display(),
        json.display()
    ));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.matches("ranks: 4 on").count(), 1, "one table, from rank 0:\n{stdout}");
    read_json(&json)
}

#[test]
#[ignore = "needs an MPICH build of iolens in IOLENS_MPICH_BIN; scripts/test-mpi runs it"]
fn under_mpich_one_json_whose_aggregate_is_the_sum_of_four_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let d = run_ok(dir.path(), "");
    assert!(d["mpi_library"].as_str().unwrap().contains("MPICH"), "{}", d["mpi_library"]);
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert_eq!(d["layout"], "file-per-process");
    let per_rank = d["per_rank"].as_array().unwrap();
    assert_eq!(per_rank.len(), RANKS);
    let sum: u64 = per_rank.iter().map(|r| u(&r["figures"]["bytes"])).sum();
    assert_eq!(sum, RANKS as u64 * (4 << 20));
    assert_eq!(u(&d["aggregate"]["bytes"]), sum);
    assert_eq!(dat_files(dir.path()), RANKS);

    let shared = tempfile::tempdir().unwrap();
    let d = run_ok(shared.path(), "--shared-file --layout strided");
    assert_eq!(d["layout"], "shared-strided");
    assert_eq!(dat_files(shared.path()), 1);
}

#[test]
#[ignore = "needs an MPICH build of iolens in IOLENS_MPICH_BIN; scripts/test-mpi runs it"]
fn under_mpich_a_failing_rank_ends_the_job_within_10_s_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let out = mpich_sh(&format!(
        "T='{}'; if [ \"$PMI_RANK\" = 2 ]; then T=/nonexistent/iolens/dir; fi; \
         exec \"$IOLENS_BIN\" run --target \"$T\" --rw write --bs 64k --size 4m --time 30s -q",
        dir.path().display()
    ));
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    // Not a speed limit: left alone, the other ranks would have run out their --time 30s.
    assert!(took < Duration::from_secs(30), "took {took:?}: the other ranks were not stopped");
    assert!(err.contains("rank 2 on "), "{err}");
}
