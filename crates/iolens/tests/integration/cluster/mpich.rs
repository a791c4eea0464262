//! The simulated cluster under MPICH (hydra's ssh launcher through the cluster's agent), beside
//! Open MPI: `scripts/test-mpi` runs these with `--ignored` where MPICH is installed, with an
//! MPICH build of iolens in `IOLENS_MPICH_BIN` (as the `mpich::` tests).

use super::nodes::{check_three_nodes, node_views, view_script};
use super::runs::{check_hosts_and_clocks, PLACEMENT, RANKS};
use super::*;

fn mpich_bin() -> PathBuf {
    std::env::var_os("IOLENS_MPICH_BIN")
        .expect("IOLENS_MPICH_BIN names an MPICH build of iolens (scripts/test-mpi builds one)")
        .into()
}

fn mpich_cluster(tag: &str) -> Option<Cluster> {
    if !require_tool("mpirun.mpich") {
        return None;
    }
    Cluster::up(tag, 3)
}

#[test]
#[ignore = "needs MPICH (mpirun.mpich); scripts/test-mpi runs it"]
fn under_mpich_three_nodes_have_their_own_hostname_clock_and_local_file_system() {
    let Some(c) = mpich_cluster("mpich-nodes") else { return };
    let out = ok(
        "mpirun.mpich hostname",
        c.mpich("node1:1,node2:1,node3:1", 3).args(["sh", "-c", &view_script(&c, "PMI_RANK")]),
    );
    check_three_nodes(&node_views(&out));
}

#[test]
#[ignore = "needs an MPICH build of iolens in IOLENS_MPICH_BIN; scripts/test-mpi runs it"]
fn under_mpich_file_per_process_on_node_local_scratch_names_three_hosts() {
    let bin = mpich_bin();
    let Some(c) = mpich_cluster("mpich-fpp") else { return };
    let json = c.shared.join("result.json");
    let local = c.local.to_str().unwrap();
    ok(
        "mpirun.mpich iolens run",
        c.mpich(PLACEMENT, RANKS)
            .env("IOLENS_STATE_DIR", c.shared.join("state"))
            .arg(&bin)
            .args(["run", "--target", local, "--rw", "write", "--bs", "64k", "--size", "4m", "--bytes", "4m"])
            .args(["--keep", "-q", "--json", json.to_str().unwrap()]),
    );
    let d = read_json(&json);
    assert!(d["mpi_library"].as_str().unwrap().contains("MPICH"), "{}", d["mpi_library"]);
    check_hosts_and_clocks(&d);
    assert_eq!(u(&d["aggregate"]["bytes"]), RANKS as u64 * (4 << 20));
    for (node, count) in [("node1", 2), ("node2", 1), ("node3", 1)] {
        assert_eq!(c.local_data_files(node).len(), count, "{node}");
    }
}

/// Rank 2 (alone on node2) is killed (SIGKILL) two seconds into a 30 s run under hydra: the
/// ranks on node1 and node3 end too, within 10 s of it.
#[test]
#[ignore = "needs an MPICH build of iolens in IOLENS_MPICH_BIN; scripts/test-mpi runs it"]
fn under_mpich_a_rank_killed_on_another_node_ends_every_rank_within_10_s() {
    let bin = mpich_bin();
    let Some(c) = mpich_cluster("mpich-kill") else { return };
    let script = format!(
        "if [ \"$PMI_RANK\" = 2 ]; then (sleep 2; kill -9 $$) & fi; \
         exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 64k --size 4m --time 30s -q",
        c.local.display()
    );
    let started = std::time::Instant::now();
    let out = c
        .mpich(PLACEMENT, RANKS)
        .env("IOLENS_BIN", &bin)
        .env("IOLENS_STATE_DIR", c.shared.join("state"))
        .args(["sh", "-c", &script])
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    // The job ran until the kill, not into an error of its own at start.
    assert!(took >= std::time::Duration::from_secs(2), "ended after {took:?}, before the kill:\n{err}");
    // Two seconds until the kill, then at most ten until every rank is out.
    assert!(
        took < std::time::Duration::from_secs(12),
        "took {took:?}: the other ranks were not stopped\n{err}"
    );
}
