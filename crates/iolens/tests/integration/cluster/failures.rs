//! A rank killed on another node than mpirun's ends the whole job, on every node.

use std::time::{Duration, Instant};

use super::*;

/// Whether any process on this machine, in whatever namespace, runs the iolens under test.
fn iolens_running() -> bool {
    let me = std::fs::canonicalize(bin()).unwrap();
    std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).any(|e| {
        e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit())
            && std::fs::read_link(e.path().join("exe")).is_ok_and(|exe| exe == me)
    })
}

/// Rank 2 (alone on node2) is killed (SIGKILL) two seconds into a 30 s run; the ranks on node1
/// and node3 end too, within 10 s of it, and `iolens clean` on each node leaves no data file in
/// its scratch.
#[test]
fn a_rank_killed_on_another_node_ends_every_rank_within_10_s() {
    let Some(c) = Cluster::up("kill", 3) else { return };
    let state = c.shared.join("state");
    let local = c.local.display();
    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then (sleep 2; kill -9 $$) & fi; \
         exec \"$IOLENS_BIN\" run --target '{local}' --rw write --bs 64k --size 4m --time 30s -q"
    );
    let started = Instant::now();
    let out = c
        .openmpi("node1:2,node2:1,node3:1", 4, &["IOLENS_BIN", "IOLENS_STATE_DIR"])
        .env("IOLENS_BIN", bin())
        .env("IOLENS_STATE_DIR", &state)
        .args(["sh", "-c", &script])
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    // Two seconds until the kill, then at most ten until every rank is out.
    assert!(took < Duration::from_secs(12), "took {took:?}: the other ranks were not stopped\n{err}");
    assert!(
        err.contains("rank 2") || err.contains("node2"),
        "mpirun names neither the rank nor its node:\n{err}"
    );
    // mpirun may return while its daemons still reap their ranks: wait, up to the same bound.
    while iolens_running() {
        assert!(started.elapsed() < Duration::from_secs(12), "a rank still runs 10 s after the kill");
        std::thread::sleep(Duration::from_millis(50));
    }
    for node in ["node1", "node2", "node3"] {
        let cleaned = ok(
            &format!("iolens clean on {node}"),
            c.exec(node, bin()).arg("clean").env("IOLENS_STATE_DIR", &state),
        );
        let left = c.local_data_files(node);
        assert!(left.is_empty(), "{node}: left {left:?}\n{}", String::from_utf8_lossy(&cleaned.stdout));
    }
}

/// The data files in DIR, as names.
fn data_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".dat"))
        .collect();
    v.sort();
    v
}

/// SIGINT to mpirun on node1 while ranks on three nodes write (into the shared directory, where
/// this test sees their files): mpirun passes SIGTERM to every rank through its daemons, and the
/// job ends as Ctrl-C ends it on one node — every rank out, the JSON (if rank 0 wrote it) marked
/// interrupted, and no data file left after `iolens clean`.
#[test]
fn sigint_to_mpirun_stops_the_ranks_on_every_node() {
    let Some(c) = Cluster::up("sigint", 3) else { return };
    let state = c.shared.join("state");
    let data = c.shared.join("data");
    std::fs::create_dir(&data).unwrap();
    let json = c.shared.join("result.json");
    let mut child = c
        .openmpi_unbounded("node1:2,node2:1,node3:1", 4, &["IOLENS_STATE_DIR"])
        .env("IOLENS_STATE_DIR", &state)
        .args([
            bin(),
            "run",
            "--target",
            data.to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "64k",
            "--size",
            "4m",
        ])
        .args(["--time", "60s", "-q", "--json", json.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::wait_for("every rank to write into its file", || {
        let files = data_files(&data);
        files.len() == 4 && files.iter().all(|f| crate::util::holds_written_data(&data.join(f)))
    });
    let (status, took) = crate::util::signal_and_wait(&mut child, libc::SIGINT, Duration::from_secs(60));
    let sent = Instant::now() - took;
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    println!("mpirun ended {:?} after SIGINT: {status}; JSON written: {}", took, json.exists());
    assert!(!status.success(), "{err}");
    while iolens_running() {
        assert!(sent.elapsed() < Duration::from_secs(60), "a rank still runs 60 s after SIGINT\n{err}");
        std::thread::sleep(Duration::from_millis(50));
    }
    if json.exists() {
        let d = read_json(&json);
        assert_eq!(d["interrupted"], true, "{d}");
    }
    for node in ["node1", "node2", "node3"] {
        ok(
            &format!("iolens clean on {node}"),
            c.exec(node, bin()).arg("clean").env("IOLENS_STATE_DIR", &state),
        );
    }
    assert!(data_files(&data).is_empty(), "left: {:?}\n{err}", data_files(&data));
}
