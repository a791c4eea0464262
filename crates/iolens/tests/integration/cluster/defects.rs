//! Defects of issue 25 that only showed across nodes, each a test that failed before its fix
//! (`scripts/test-mpi cluster::defects::`).

use super::runs::{check_hosts_and_clocks, PLACEMENT, RANKS};
use super::*;

/// Issue 25, defect 1: `mpirun … iolens trace -- APP` across nodes whose clocks differ. The
/// analysis took every rank on rank 0's boot id as on rank 0's clock (offset 0), but nodes in
/// time namespaces share the boot id and not the clock: node3's operations landed 2000 s late,
/// and a program of about a second was reported with a wall time of 2000 s. The clock file now
/// names the time namespace beside the boot id.
#[test]
fn defect_1_trace_across_nodes_puts_every_rank_on_rank_0s_clock() {
    if !require_tool("mpicc") {
        return;
    }
    let Some(c) = Cluster::up("defect1", 3) else { return };
    let dir = c.shared.join("app");
    std::fs::create_dir(&dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mpiio_app.c");
    let app = dir.join("mpiio_app");
    ok("mpicc", Command::new("mpicc").arg("-O1").arg("-o").arg(&app).arg(&source));
    let json = c.shared.join("trace.json");
    let out = ok(
        "mpirun iolens trace",
        c.openmpi(PLACEMENT, RANKS, &[])
            .args(["--mca", "io", "romio321", bin(), "trace", "--json", json.to_str().unwrap(), "--"])
            .arg(&app)
            .arg(&dir),
    );
    let summary = read_json(&json);
    let wall = summary["wall_s"].as_f64().unwrap();
    // The program runs for about a second; node2 and node3 are 1000 and 2000 s ahead.
    assert!(
        wall < 100.0,
        "wall {wall} s: node3's clock taken as node1's\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("all ranks ran on one node"), "{stdout}");
}

/// Issue 25, defect 6: one shared file on a directory all three hosts see, on one disk. Each
/// host reads the same whole-device counters, and the aggregate device sums them per host
/// (`node1:vda+node2:vda+node3:vda`: the disk's traffic three times, no warning). Counted once,
/// the device is named once, and a warning says that the hosts share it.
#[test]
fn defect_6_a_device_several_hosts_share_is_counted_once() {
    let Some(c) = Cluster::up("defect6", 3) else { return };
    let target = c.shared.join("data");
    std::fs::create_dir(&target).unwrap();
    let json = c.shared.join("result.json");
    ok(
        "mpirun iolens run --shared-file",
        c.openmpi(PLACEMENT, RANKS, &["IOLENS_STATE_DIR"])
            .env("IOLENS_STATE_DIR", c.shared.join("state"))
            .args([
                bin(),
                "run",
                "--target",
                target.to_str().unwrap(),
                "--rw",
                "write",
                "--bs",
                "1m",
                "--size",
                "16m",
            ])
            .args(["--shared-file", "-q", "--json", json.to_str().unwrap()]),
    );
    let d = read_json(&json);
    check_hosts_and_clocks(&d);
    let named = d["device"]["device"].as_str().unwrap_or_else(|| panic!("no device: {}", d["device"]));
    // The per-host parts, without their host: `node1:vda` is `vda`.
    let devices: Vec<&str> = named.split('+').map(|p| p.rsplit(':').next().unwrap()).collect();
    let distinct: std::collections::BTreeSet<&str> = devices.iter().copied().collect();
    assert_eq!(devices.len(), distinct.len(), "the same device counted once per host: {named}");
    let warned = d["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] != "rank_warning")
        .any(|w| distinct.iter().any(|dev| w["message"].as_str().unwrap().contains(dev)));
    assert!(warned, "no warning that the hosts share {named}: {}", d["warnings"]);
}
