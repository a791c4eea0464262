//! The failure announcement between ranks, under `mpirun -np 4` (feature `mpi`).
#![cfg(feature = "mpi")]

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_failure_announced_by_one_rank_reaches_every_other_and_leaves_nothing_pending() {
    // Examples are built by `cargo test`, next to the test binaries' directory.
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples/stop_protocol");
    assert!(example.exists(), "{} (built by cargo test --features mpi)", example.display());
    let t = Instant::now();
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .arg(&example)
        .output()
        .expect("mpirun (install openmpi-bin)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.matches("stopped after").count(), 4, "{stdout}");
    assert!(t.elapsed() < Duration::from_secs(10));
}
