//! The simulated cluster itself, seen by ranks that Open MPI starts on it: a hostname, a clock
//! and a node-local file system of each node's own, one shared directory.

use super::*;

/// One line a rank prints about its node: rank, hostname, boot-time clock (/proc/uptime),
/// and the device ids of the node-local and the shared directory.
pub(super) struct NodeView {
    rank: usize,
    host: String,
    uptime_s: f64,
    local_dev: String,
    shared_dev: String,
    local_fs: String,
}

pub(super) fn node_views(out: &Output) -> Vec<NodeView> {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut views: Vec<NodeView> = text
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f.len(), 6, "{line}");
            NodeView {
                rank: f[0].parse().unwrap(),
                host: f[1].to_string(),
                uptime_s: f[2].parse().unwrap(),
                local_dev: f[3].to_string(),
                shared_dev: f[4].to_string(),
                local_fs: f[5].to_string(),
            }
        })
        .collect();
    views.sort_by_key(|v| v.rank);
    views
}

/// What each rank prints: `$1` is its rank variable, the rest as [`NodeView`].
pub(super) fn view_script(c: &Cluster, rank_var: &str) -> String {
    format!(
        "echo \"${rank_var} $(hostname) $(cut -d' ' -f1 /proc/uptime) $(stat -c %d '{local}') $(stat -c %d '{shared}') $(stat -f -c %i '{local}')\"",
        local = c.local.display(),
        shared = c.shared.display()
    )
}

/// Checks the views of three ranks, one per node: three hostnames, clocks 1000 s apart, three
/// node-local file systems at one path, one shared directory.
pub(super) fn check_three_nodes(views: &[NodeView]) {
    assert_eq!(views.len(), 3);
    let hosts: Vec<&str> = views.iter().map(|v| v.host.as_str()).collect();
    assert_eq!(hosts, ["node1", "node2", "node3"]);
    for (n, v) in views.iter().enumerate() {
        // The ranks read their clocks within a moment of each other (well under 100 s).
        let ahead = v.uptime_s - views[0].uptime_s;
        let expected = n as f64 * OFFSET_S as f64;
        assert!((ahead - expected).abs() < 100.0, "{}: {ahead} s ahead of node1, not {expected}", v.host);
    }
    let local: std::collections::BTreeSet<(&str, &str)> =
        views.iter().map(|v| (v.local_dev.as_str(), v.local_fs.as_str())).collect();
    assert_eq!(local.len(), 3, "the node-local path is one file system per node: {local:?}");
    assert!(
        views.iter().all(|v| v.shared_dev == views[0].shared_dev),
        "the shared directory differs between nodes"
    );
    assert!(views.iter().all(|v| v.shared_dev != v.local_dev));
}

#[test]
fn under_open_mpi_three_nodes_have_their_own_hostname_clock_and_local_file_system() {
    let Some(c) = Cluster::up("nodes", 3) else { return };
    let out = ok(
        "mpirun hostname",
        c.openmpi("node1:1,node2:1,node3:1", 3, &[]).args([
            "sh",
            "-c",
            &view_script(&c, "OMPI_COMM_WORLD_RANK"),
        ]),
    );
    check_three_nodes(&node_views(&out));

    // A file in node1's scratch is not on node2's; one in the shared directory is on every node.
    c.sh("node1", &format!("echo mine > '{}/only-on-node1'", c.local.display()));
    std::fs::write(c.shared.join("everywhere"), "shared").unwrap();
    let seen = c.sh("node2", &format!("ls '{}' '{}'", c.local.display(), c.shared.display()));
    assert!(!seen.contains("only-on-node1"), "{seen}");
    assert!(seen.contains("everywhere"), "{seen}");
    assert!(c.sh("node1", &format!("cat '{}/only-on-node1'", c.local.display())).contains("mine"));
}

/// Nodes resolve each other's names from the cluster's hosts file, and the root namespace
/// neither resolves them nor gains an interface or a mount while the cluster is up; after
/// tear-down no holder process, loop device, mount or state of the cluster remains.
#[test]
fn the_cluster_adds_nothing_to_the_root_namespace_and_leaves_nothing() {
    let links = || ok("ip link", Command::new("ip").args(["-o", "link"])).stdout;
    let before = links();
    let Some(c) = Cluster::up("root-ns", 2) else { return };
    let state = c.local.parent().unwrap().to_path_buf();
    let mounts = || std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let loops = || String::from_utf8(ok("losetup -a", Command::new("losetup").arg("-a")).stdout).unwrap();
    assert_eq!(links(), before, "the cluster added interfaces to the root namespace");
    assert!(!mounts().contains(state.to_str().unwrap()), "a node's mount shows in the root namespace");
    assert_eq!(loops().matches(state.to_str().unwrap()).count(), 2, "one loop device per node:\n{}", loops());
    let resolved = c.sh("node1", "getent hosts node2");
    assert!(resolved.starts_with("10.77.0.2 "), "{resolved}");
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap();
    assert!(!hosts.contains("node2"), "/etc/hosts was edited:\n{hosts}");
    // The holders: the bridge's and one per node, each "PID NET-NAMESPACE-INODE".
    let holders: Vec<String> = ["bridge.pid", "node1.pid", "node2.pid"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(state.join(f)).unwrap().split_whitespace().next().unwrap().to_string()
        })
        .collect();
    drop(c);
    assert_eq!(links(), before);
    assert!(!state.exists(), "{} remains", state.display());
    assert!(!loops().contains(state.to_str().unwrap()), "a loop device remains:\n{}", loops());
    assert!(!mounts().contains(state.to_str().unwrap()));
    for pid in holders {
        // Gone, or a zombie not yet reaped by init, which holds no namespace.
        assert!(!Path::new(&format!("/proc/{pid}/ns/net")).exists(), "holder {pid} still runs");
    }
}
