//! iolens across nodes of a simulated cluster (issue 25; feature `mpi`, run by
//! `scripts/test-mpi`): `scripts/cluster` makes every node a set of namespaces on this machine —
//! its own network (over a bridge in a namespace of its own), hostname, node-local ext4 at one
//! path, and clock (node N at (N-1) × 1000 s) — and its launcher agent starts MPI's daemons on the
//! nodes. mpirun itself runs on node1, so that all MPI traffic stays inside the cluster. Each
//! test brings up a cluster of its own ([`Cluster::up`]), torn down when the test ends, passed or
//! failed.

mod defects;
mod failures;
mod mpich;
mod nodes;
mod runs;
mod suites;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::util::{read_json, require, require_tool, root, u};

/// Every node's clock is this many seconds ahead of the previous node's.
const OFFSET_S: u64 = 1000;

/// The bound on any one mpirun of these tests: ended by `timeout` (SIGTERM to mpirun, which ends
/// its job) instead of hanging the test binary. Far beyond what a run takes.
const MPIRUN_LIMIT_S: u32 = 120;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster")
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_iolens")
}

/// A cluster set up by `scripts/cluster up`, torn down by `scripts/cluster down` on drop.
pub struct Cluster {
    name: String,
    /// The node end of every node's link (`ic0`): MPI's interface.
    pub iface: String,
    /// The node-local scratch: the same path on every node, a file system of its own on each.
    pub local: PathBuf,
    /// The directory every node sees, the "parallel file system".
    pub shared: PathBuf,
    /// The launcher agent (ssh's calling convention).
    pub agent: PathBuf,
}

impl Cluster {
    /// Sets up `nodes` nodes, or `None` (the test skips) when a prerequisite is missing; under
    /// `IOLENS_REQUIRE_TOOLS=1` a missing prerequisite fails the test, naming it. `tag` tells
    /// this test's cluster from others (a cluster name is at most 31 characters).
    pub fn up(tag: &str, nodes: usize) -> Option<Cluster> {
        if !prerequisites() {
            return None;
        }
        down_clusters_of_ended_tests();
        let name = format!("t{}-{tag}", std::process::id());
        let out = Command::new(script())
            .args(["up", &name, &nodes.to_string(), "--offset-s", &OFFSET_S.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/cluster up {name} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        let field = |key: &str| {
            said.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("scripts/cluster up printed no {key}=:\n{said}"))
                .to_string()
        };
        Some(Cluster {
            iface: field("iface"),
            local: field("local").into(),
            shared: field("shared").into(),
            agent: field("agent").into(),
            name,
        })
    }

    /// `scripts/cluster exec NAME NODE -- PROGRAM`: PROGRAM on NODE, with this process's
    /// environment and the command's.
    pub fn exec(&self, node: &str, program: &str) -> Command {
        let mut c = Command::new(script());
        c.args(["exec", &self.name, node, "--", program]);
        c
    }

    /// `sh -c SCRIPT` on NODE; fails the test unless it succeeds. Its standard output.
    pub fn sh(&self, node: &str, script: &str) -> String {
        let out = self.exec(node, "sh").args(["-c", script]).output().unwrap();
        assert!(out.status.success(), "on {node}: {script}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Open MPI's mpirun on node1, starting its daemons on the other nodes through the agent,
    /// with `np` ranks placed by `hosts` (`node1:2,node2:1,node3:1`). Each name in `pass` is
    /// passed to the ranks (`-x`) from this command's environment.
    pub fn openmpi(&self, hosts: &str, np: usize, pass: &[&str]) -> Command {
        let mut c = self.exec("node1", "timeout");
        c.args([&MPIRUN_LIMIT_S.to_string(), "mpirun"]);
        self.openmpi_options(&mut c, hosts, np, pass);
        c
    }

    /// [`Cluster::openmpi`] without the time limit: mpirun itself, for a test that signals it
    /// (`timeout` would pass a signal on to its whole process group, the ranks on node1 too).
    pub fn openmpi_unbounded(&self, hosts: &str, np: usize, pass: &[&str]) -> Command {
        let mut c = self.exec("node1", "mpirun");
        self.openmpi_options(&mut c, hosts, np, pass);
        c
    }

    fn openmpi_options(&self, c: &mut Command, hosts: &str, np: usize, pass: &[&str]) {
        c.args(["--allow-run-as-root", "--oversubscribe"]);
        c.args(["--mca", "plm_rsh_agent", self.agent.to_str().unwrap()]);
        c.args(["--mca", "btl", "tcp,self,vader"]);
        c.args(["--mca", "btl_tcp_if_include", &self.iface, "--mca", "oob_tcp_if_include", &self.iface]);
        c.args(["-H", hosts, "-np", &np.to_string()]);
        for name in pass {
            c.args(["-x", name]);
        }
    }

    /// MPICH's mpirun (hydra) on node1, starting its proxies through the agent as its ssh
    /// launcher. Hydra passes the whole environment to the ranks.
    pub fn mpich(&self, hosts: &str, np: usize) -> Command {
        let mut c = self.exec("node1", "timeout");
        c.args([&MPIRUN_LIMIT_S.to_string(), "mpirun.mpich", "-launcher", "ssh"]);
        c.args(["-launcher-exec", self.agent.to_str().unwrap(), "-iface", &self.iface]);
        c.args(["-hosts", hosts, "-np", &np.to_string()]);
        c
    }

    /// The names of the `.dat` files in the node-local scratch of NODE.
    pub fn local_data_files(&self, node: &str) -> Vec<String> {
        let listing = self.sh(node, &format!("ls -1 '{}'", self.local.display()));
        listing.lines().filter(|n| n.ends_with(".dat")).map(str::to_string).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let out = Command::new(script()).args(["down", &self.name]).output();
        let failure = match out {
            Ok(o) if o.status.success() => return,
            Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => e.to_string(),
        };
        // A second panic while the test's own unwinds would abort the test binary.
        if std::thread::panicking() {
            eprintln!("scripts/cluster down {} failed: {failure}", self.name);
        } else {
            panic!("scripts/cluster down {} failed: {failure}", self.name);
        }
    }
}

/// Tears down the clusters of test binaries that ended without tearing theirs down (killed:
/// no `Drop` ran), so that their loop devices and holders do not pile up over runs. A test's
/// cluster is named after the test binary's pid (`tPID-TAG`).
fn down_clusters_of_ended_tests() {
    let root = std::env::var_os("IOLENS_CLUSTER_ROOT").unwrap_or_else(|| "/run/iolens-cluster".into());
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix('t').and_then(|rest| rest.split_once('-')).map(|(pid, _)| pid)
        else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let out = Command::new(script()).args(["down", &name]).output().unwrap();
            eprintln!("tore down {name}, left by an ended test: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// What `scripts/cluster` needs: root, its tools, and the kernel's time namespaces.
fn prerequisites() -> bool {
    if !require(root(), "root, for the simulated cluster's namespaces, loop devices and mounts") {
        return false;
    }
    for tool in ["ip", "nsenter", "unshare", "losetup", "mkfs.ext4", "timeout", "mpirun"] {
        if !require_tool(tool) {
            return false;
        }
    }
    if !require(
        Path::new("/proc/self/ns/time").exists(),
        "time namespaces in the kernel (Linux >= 5.6, CONFIG_TIME_NS), for the nodes' clocks",
    ) {
        return false;
    }
    let help = Command::new("nsenter").arg("--help").output().unwrap();
    require(
        String::from_utf8_lossy(&help.stdout).contains("--time"),
        "nsenter with --time (util-linux >= 2.36), to enter a node's clock",
    )
}

/// The command's output; fails the test, showing both streams, unless it succeeded.
fn ok(what: &str, c: &mut Command) -> Output {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// The hosts of `per_rank`, in rank order.
fn rank_hosts(d: &Value) -> Vec<String> {
    d["per_rank"].as_array().unwrap().iter().map(|r| r["host"].as_str().unwrap().to_string()).collect()
}
