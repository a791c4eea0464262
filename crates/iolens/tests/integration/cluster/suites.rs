//! The suites under Open MPI across three nodes, four ranks placed 2+1+1, each rank on the
//! node-local scratch of its node: `sweep`, `saturate` and `write-modes` name the three hosts,
//! every rank moves data in every point, and no file stays behind on any node.

use super::runs::{PLACEMENT, RANKS};
use super::*;

/// `iolens SUITE LOCAL ARGS` on four ranks across the cluster; its JSON, after checking the
/// ranks and hosts it names.
fn suite_across(c: &Cluster, suite: &str, args: &[&str]) -> Value {
    let json = c.shared.join(format!("{suite}.json"));
    let out = ok(
        &format!("mpirun iolens {suite}"),
        c.openmpi(PLACEMENT, RANKS, &["IOLENS_STATE_DIR"])
            .env("IOLENS_STATE_DIR", c.shared.join("state"))
            .args([bin(), suite, c.local.to_str().unwrap()])
            .args(args)
            .args(["-q", "--json", json.to_str().unwrap()]),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("ranks: 4 on 3 host(s)").count(), 1, "one table, from rank 0:\n{stdout}");
    let d = read_json(&json);
    assert_eq!(u(&d["ranks"]), RANKS as u64, "{suite}");
    assert_eq!(d["hosts"], serde_json::json!(["node1", "node2", "node3"]), "{suite}: {}", d["hosts"]);
    d
}

/// Every rank of a point moved data, each on a file of its own.
fn check_ranks_of_point(point: &Value) {
    let per_rank = point["per_rank"].as_array().unwrap_or_else(|| panic!("no per_rank in {point}"));
    assert_eq!(per_rank.len(), RANKS, "{point}");
    for (r, share) in per_rank.iter().enumerate() {
        assert_eq!(u(&share["rank"]), r as u64);
        assert!(u(&share["bytes"]) > 0, "rank {r} moved nothing: {point}");
    }
    let sum: u64 = per_rank.iter().map(|r| u(&r["bytes"])).sum();
    assert_eq!(sum, u(&point["bytes"]), "{point}");
}

/// What stays in the node-local scratch of every node: nothing but ext4's lost+found.
fn check_nothing_left(c: &Cluster, suite: &str) {
    for node in ["node1", "node2", "node3"] {
        let listing = c.sh(node, &format!("ls -A '{}'", c.local.display()));
        let left: Vec<&str> = listing.lines().filter(|n| *n != "lost+found").collect();
        assert!(left.is_empty(), "{suite} left on {node}: {left:?}");
    }
}

#[test]
fn sweep_saturate_and_write_modes_across_nodes() {
    let Some(c) = Cluster::up("suites", 3) else { return };
    let sweep = suite_across(
        &c,
        "sweep",
        &[
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
        ],
    );
    let points = sweep["curves"][0]["points"].as_array().unwrap();
    assert_eq!(points.iter().map(|p| u(&p["bs_bytes"])).collect::<Vec<_>>(), vec![4096, 8192, 16384]);
    points.iter().for_each(check_ranks_of_point);
    check_nothing_left(&c, "sweep");

    let saturate = suite_across(
        &c,
        "saturate",
        &[
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
        ],
    );
    let curve = &saturate["curves"][0];
    curve["points"].as_array().unwrap().iter().for_each(check_ranks_of_point);
    assert_eq!(u(&curve["nodes_to_saturate"]), u(&curve["saturation_concurrency"]).div_ceil(3));
    check_nothing_left(&c, "saturate");

    let modes = suite_across(&c, "write-modes", &["--bytes", "256k"]);
    for m in modes["modes"].as_array().unwrap() {
        assert_eq!(u(&m["bytes"]), RANKS as u64 * (256 << 10), "{m}");
        check_ranks_of_point(m);
    }
    check_nothing_left(&c, "write-modes");
}
