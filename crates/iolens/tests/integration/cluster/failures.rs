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
