//! A failing, killed or interrupted rank ends the whole job promptly, naming the rank, and
//! leaves no data behind.

use super::*;

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
    let (status, took) = crate::util::signal_and_wait(&mut child, libc::SIGINT, Duration::from_secs(60));
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    println!("mpirun ended {:?} after SIGINT: {status}; JSON written: {}", took, json.exists());
    assert!(!status.success(), "{err}");
    if json.exists() {
        let d = read_json(&json);
        assert_eq!(d["interrupted"], true, "{d}");
    }
    let clean = Command::new(bin()).arg("clean").env("IOLENS_STATE_DIR", &state).output().unwrap();
    assert!(clean.status.success(), "{}", stderr(&clean));
    assert!(data_files(&data).is_empty(), "left: {:?}\n{err}", data_files(&data));
}
