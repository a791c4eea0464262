//! `iolens run` under Open MPI across three nodes, four ranks placed 2+1+1: file per process on
//! node-local scratch, and one shared file on the shared directory.

use super::*;

pub(super) const PLACEMENT: &str = "node1:2,node2:1,node3:1";
pub(super) const RANKS: usize = 4;
/// The node of each rank under [`PLACEMENT`].
const RANK_HOSTS: [&str; RANKS] = ["node1", "node1", "node2", "node3"];

/// `iolens run ARGS` on four ranks across the cluster, writing its JSON into the shared
/// directory; the JSON.
fn run_across(c: &Cluster, args: &[&str]) -> Value {
    let json = c.shared.join("result.json");
    let state = c.shared.join("state");
    let out = ok(
        &format!("mpirun iolens run {args:?}"),
        c.openmpi(PLACEMENT, RANKS, &["IOLENS_STATE_DIR"])
            .env("IOLENS_STATE_DIR", &state)
            .args([bin(), "run"])
            .args(args)
            .args(["-q", "--json", json.to_str().unwrap()]),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("ranks: 4 on").count(), 1, "one table, from rank 0:\n{stdout}");
    read_json(&json)
}

/// The hosts, and each rank's clock offset: what the cluster's nodes make a run see.
pub(super) fn check_hosts_and_clocks(d: &Value) {
    assert_eq!(u(&d["ranks"]), RANKS as u64);
    assert_eq!(d["hosts"], serde_json::json!(["node1", "node2", "node3"]), "{}", d["hosts"]);
    assert_eq!(rank_hosts(d), RANK_HOSTS);
    // Each node's clock is (N-1) × 1000 s ahead of node1's, exactly (a time namespace's offset):
    // the measured offset is within its uncertainty of it, plus slack for a loaded machine.
    for (rank, r) in d["per_rank"].as_array().unwrap().iter().enumerate() {
        let node: i64 = RANK_HOSTS[rank].trim_start_matches("node").parse().unwrap();
        let expected = (node - 1) * OFFSET_S as i64 * 1_000_000_000;
        let offset = r["offset_ns"].as_i64().unwrap();
        let bound = u(&r["uncertainty_ns"]) as i64 + 1_000_000;
        assert!(
            (offset - expected).abs() <= bound,
            "rank {rank}: offset {offset} ns, expected {expected} ± {bound}"
        );
    }
}

#[test]
fn file_per_process_on_node_local_scratch_names_three_hosts() {
    let Some(c) = Cluster::up("fpp", 3) else { return };
    let local = c.local.to_str().unwrap();
    let d = run_across(
        &c,
        &["--target", local, "--rw", "write", "--bs", "64k", "--size", "4m", "--bytes", "4m", "--keep"],
    );
    check_hosts_and_clocks(&d);
    assert_eq!(d["layout"], "file-per-process");
    let per_rank = d["per_rank"].as_array().unwrap();
    for r in per_rank {
        assert_eq!(u(&r["figures"]["bytes"]), 4 << 20, "{r}");
        assert!(r["figures"]["bw_bytes_s"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(u(&d["aggregate"]["bytes"]), RANKS as u64 * (4 << 20));
    // The global busy time is a union of clock-corrected periods: no more than the wall (it
    // would be about 1000 s more if node2's clock were taken as node1's).
    let busy = d["aggregate"]["busy_s"].as_f64().unwrap();
    assert!(busy > 0.0 && busy <= d["aggregate"]["wall_s"].as_f64().unwrap() + 1e-3, "busy {busy} s");
    // Issue 25, item 8: the per-node view. Each node's busy time is the union of its own ranks',
    // at most the job's; the nodes' bytes are the job's.
    let nodes = d["per_node"].as_array().unwrap_or_else(|| panic!("no per_node: {d}"));
    let hosts: Vec<(&str, Vec<u64>)> = nodes
        .iter()
        .map(|n| (n["host"].as_str().unwrap(), n["ranks"].as_array().unwrap().iter().map(u).collect()))
        .collect();
    assert_eq!(hosts, [("node1", vec![0, 1]), ("node2", vec![2]), ("node3", vec![3])]);
    let bytes: u64 = nodes.iter().map(|n| u(&n["write_bytes"])).sum();
    assert_eq!(bytes, RANKS as u64 * (4 << 20));
    for n in nodes {
        let node_busy = n["busy_s"].as_f64().unwrap();
        assert!(node_busy > 0.0 && node_busy <= busy + 1e-9, "{n}");
        assert!(n["bps"].as_f64().unwrap() > 0.0, "{n}");
    }
    // Each node's files are on its own scratch: two on node1, one each on node2 and node3.
    for (node, ranks) in [("node1", vec![0, 1]), ("node2", vec![2]), ("node3", vec![3])] {
        let files = c.local_data_files(node);
        assert_eq!(files.len(), ranks.len(), "{node}: {files:?}");
        for r in ranks {
            assert!(files.iter().any(|f| f.ends_with(&format!("-r{r}.dat"))), "{node}: {files:?}");
        }
    }
}

#[test]
fn shared_file_segmented_on_the_shared_directory() {
    let Some(c) = Cluster::up("seg", 3) else { return };
    let target = c.shared.join("data");
    std::fs::create_dir(&target).unwrap();
    let target = target.to_str().unwrap();
    let d = run_across(
        &c,
        &[
            "--target",
            target,
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
            "segmented",
            "--keep",
        ],
    );
    check_hosts_and_clocks(&d);
    assert_eq!(d["layout"], "shared-segmented");
    assert_eq!(u(&d["aggregate"]["write_bytes"]), RANKS as u64 * (2 << 20));
    let files: Vec<String> = std::fs::read_dir(target)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".dat"))
        .collect();
    assert_eq!(files.len(), 1, "one shared file: {files:?}");
    // Every node sees that one file, whole: the segments of all four ranks.
    for node in ["node1", "node2", "node3"] {
        let size = c.sh(node, &format!("stat -c %s '{}'", files[0]));
        assert_eq!(size.trim(), (RANKS * (2 << 20)).to_string(), "{node}");
    }
}

/// IOR's `-C` across nodes: every rank writes its file on the shared directory stamped with a
/// generation of its own (1000 + rank); then with `--reorder-ranks 1` each rank reads, and
/// verifies, what the next rank wrote — rank 1 on node1 node2's data, rank 2 node3's, rank 3
/// node1's. (The nodes share this machine's page cache: what `-C` defeats on a real cluster,
/// the reader's cache of the data, is not there to defeat; this checks placement and data.)
#[test]
fn reorder_ranks_reads_and_verifies_another_nodes_data() {
    let Some(c) = Cluster::up("reorder", 3) else { return };
    let data = c.shared.join("data");
    std::fs::create_dir(&data).unwrap();
    let json = c.shared.join("read.json");
    let common = format!("--target '{}' --bs 64k --size 1m --verify crc32c -q --keep", data.display());
    let mpirun = |script: String| {
        c.openmpi(PLACEMENT, RANKS, &["IOLENS_BIN", "IOLENS_STATE_DIR"])
            .env("IOLENS_BIN", bin())
            .env("IOLENS_STATE_DIR", c.shared.join("state"))
            .args(["sh", "-c", &script])
            .output()
            .unwrap()
    };
    let write = mpirun(format!(
        "exec \"$IOLENS_BIN\" run {common} --rw write --verify-generation $((1000 + OMPI_COMM_WORLD_RANK))"
    ));
    assert!(write.status.success(), "write: {}", String::from_utf8_lossy(&write.stderr));
    let read_next = |reorder: &str| {
        mpirun(format!(
            "exec \"$IOLENS_BIN\" run {common} --rw read {reorder} --json '{}' \
             --verify-generation $((1000 + (OMPI_COMM_WORLD_RANK + 1) % {RANKS}))",
            json.display()
        ))
    };
    // The control: expecting the next rank's data in a rank's own file fails on every block.
    let own = read_next("");
    assert_eq!(own.status.code(), Some(3), "{}", String::from_utf8_lossy(&own.stderr));
    let read = read_next("--reorder-ranks 1");
    assert!(read.status.success(), "read: {}", String::from_utf8_lossy(&read.stderr));
    let d = read_json(&json);
    check_hosts_and_clocks(&d);
    assert_eq!(u(&d["reorder_ranks"]), 1);
    assert_eq!(u(&d["verify"]["blocks_checked"]), RANKS as u64 * 16, "{}", d["verify"]);
    assert_eq!(u(&d["verify"]["failures_total"]), 0, "{}", d["verify"]);
    for (r, entry) in d["per_rank"].as_array().unwrap().iter().enumerate() {
        let file = entry["files"][0].as_str().unwrap();
        assert!(file.ends_with(&format!("-r{}.dat", (r + 1) % RANKS)), "rank {r} read {file}");
    }
}
