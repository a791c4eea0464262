//! The failure announcement between ranks, under `mpirun -np 4` (feature `mpi`).
#![cfg(feature = "mpi")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_failure_announced_by_one_rank_reaches_every_other_and_leaves_nothing_pending() {
    // Examples are built by `cargo test`, next to the test binaries' directory.
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples/stop_protocol");
    assert!(example.exists(), "{} (built by cargo test --features mpi)", example.display());
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .arg(&example)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun (install openmpi-bin)");
    // A rank the announcement never reaches waits for it forever: the bound only ends that hang
    // (it is no speed limit).
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("the job still runs after 120 s: a rank never heard of the failure");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.matches("stopped after").count(), 4, "{stdout}");
}
