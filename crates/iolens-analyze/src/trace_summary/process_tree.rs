//! Process trees of an `iolens trace`: each traced process's start marker names its parent, so
//! the processes a program started (mpirun's ranks, a script's commands) group under the
//! program that started them. A tree is a root (a traced process whose parent was not traced)
//! and all its descendants; its row says what its processes did and which of them count.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::ProcessTreeRow;

#[derive(Default)]
struct Process {
    parent: u32,
    /// Executables of the process's images, in the order it ran them (exec replaces one).
    images: Vec<String>,
    ops: u64,
    bytes: u64,
    counted_ops: u64,
    /// Any of its images ran an executable that counts (`--only-exe`, or all).
    counted: bool,
    first_ns: u64,
    last_ns: u64,
    /// Images started and not (yet) ended by an end marker.
    open_images: u32,
}

#[derive(Default)]
pub struct ProcessForest {
    processes: HashMap<u32, Process>,
}

fn file_name(exe: &str) -> &str {
    Path::new(exe).file_name().and_then(|n| n.to_str()).unwrap_or(exe)
}

/// The totals of some data calls of one process.
#[derive(Debug, Default, Clone, Copy)]
pub struct DataCalls {
    pub ops: u64,
    pub bytes: u64,
    /// Those of them the process selection counts.
    pub counted_ops: u64,
    pub last_end_ns: u64,
}

impl DataCalls {
    pub fn add(&mut self, bytes: u64, counted: bool, end_ns: u64) {
        self.ops = self.ops.saturating_add(1);
        self.bytes = self.bytes.saturating_add(bytes);
        self.counted_ops = self.counted_ops.saturating_add(counted as u64);
        self.last_end_ns = self.last_end_ns.max(end_ns);
    }
}

impl ProcessForest {
    /// A process image started (its start marker): `parent` is its parent's pid.
    pub fn start(&mut self, pid: u32, parent: u32, exe: &str, counted: bool, at_ns: u64) {
        let first_image = !self.processes.contains_key(&pid);
        let p =
            self.processes.entry(pid).or_insert_with(|| Process { first_ns: at_ns, ..Default::default() });
        if first_image {
            // An exec keeps the pid and the parent: the first image's parent is the one.
            p.parent = parent;
        }
        p.images.push(exe.to_string());
        p.open_images = p.open_images.saturating_add(1);
        p.counted |= counted;
        p.first_ns = p.first_ns.min(at_ns);
        p.last_ns = p.last_ns.max(at_ns);
    }

    pub fn end(&mut self, pid: u32, at_ns: u64) {
        if let Some(p) = self.processes.get_mut(&pid) {
            p.last_ns = p.last_ns.max(at_ns);
            p.open_images = p.open_images.saturating_sub(1);
        }
    }

    /// Processes with an image whose stream has no end marker, by pid: killed by a signal, or
    /// still running when the streams were read. Their last buffered events never came.
    pub fn unended(&self) -> Vec<u32> {
        let mut pids: Vec<u32> =
            self.processes.iter().filter(|(_, p)| p.open_images > 0).map(|(pid, _)| *pid).collect();
        pids.sort_unstable();
        pids
    }

    /// A data call of `pid` (of a process without a start marker: not in any tree).
    #[cfg(test)]
    pub fn data(&mut self, pid: u32, bytes: u64, counted: bool, end_ns: u64) {
        let calls = DataCalls { ops: 1, bytes, counted_ops: counted as u64, last_end_ns: end_ns };
        self.data_calls(pid, &calls);
    }

    /// Data calls of `pid` (of a process without a start marker: not in any tree).
    pub fn data_calls(&mut self, pid: u32, calls: &DataCalls) {
        if let Some(p) = self.processes.get_mut(&pid) {
            p.ops = p.ops.saturating_add(calls.ops);
            p.bytes = p.bytes.saturating_add(calls.bytes);
            p.counted_ops = p.counted_ops.saturating_add(calls.counted_ops);
            p.last_ns = p.last_ns.max(calls.last_end_ns);
        }
    }

    /// The root of `pid`'s tree: its farthest traced ancestor. Pids may be reused, so a chain
    /// that loops stops where it would repeat.
    fn root_of(&self, mut pid: u32) -> u32 {
        for _ in 0..self.processes.len() {
            match self.processes.get(&pid) {
                Some(p) if p.parent != pid && self.processes.contains_key(&p.parent) => pid = p.parent,
                _ => break,
            }
        }
        pid
    }

    /// One row per tree, the trees with the most bytes first.
    pub fn rows(&self) -> Vec<ProcessTreeRow> {
        let mut trees: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &pid in self.processes.keys() {
            trees.entry(self.root_of(pid)).or_default().push(pid);
        }
        let mut rows: Vec<ProcessTreeRow> = trees
            .into_iter()
            .map(|(root, mut pids)| {
                pids.sort_unstable();
                let mut executables: BTreeMap<&str, u64> = BTreeMap::new();
                let (mut ops, mut bytes, mut counted_ops) = (0u64, 0u64, 0u64);
                let (mut first, mut last) = (u64::MAX, 0u64);
                let mut counted_pids = Vec::new();
                for pid in &pids {
                    let p = &self.processes[pid];
                    for exe in &p.images {
                        *executables.entry(file_name(exe)).or_default() += 1;
                    }
                    ops = ops.saturating_add(p.ops);
                    bytes = bytes.saturating_add(p.bytes);
                    counted_ops = counted_ops.saturating_add(p.counted_ops);
                    first = first.min(p.first_ns);
                    last = last.max(p.last_ns);
                    if p.counted {
                        counted_pids.push(*pid);
                    }
                }
                let r = &self.processes[&root];
                ProcessTreeRow {
                    root_pid: root,
                    root_exe: r.images.first().cloned().unwrap_or_default(),
                    parent_pid: r.parent,
                    processes: pids.len() as u64,
                    executables: executables
                        .into_iter()
                        .map(|(exe, n)| if n > 1 { format!("{exe} ×{n}") } else { exe.to_string() })
                        .collect(),
                    ops,
                    bytes,
                    counted_ops,
                    counted_pids,
                    wall_s: last.saturating_sub(first) as f64 / 1e9,
                }
            })
            .collect();
        rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.root_pid.cmp(&b.root_pid)));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_group_under_their_untraced_parent_s_child() {
        let mut f = ProcessForest::default();
        // mpirun (10, started by iolens, pid 1) → prted (11) → two ranks (12, 13); a second
        // program (20) started by iolens on its own.
        f.start(10, 1, "/usr/bin/mpirun", false, 0);
        f.start(11, 10, "/usr/bin/prted", false, 5);
        f.start(12, 11, "/bin/sh", false, 6);
        f.start(12, 11, "/opt/ior", true, 7); // exec: same pid, same parent
        f.start(13, 11, "/opt/ior", true, 8);
        f.start(20, 1, "/bin/cat", false, 100);
        f.data(10, 1000, false, 9);
        f.data(12, 4096, true, 50);
        f.data(13, 4096, true, 60);
        f.data(20, 7, false, 110);
        f.data(99, 1, true, 1); // no start marker: in no tree
        f.end(10, 90);
        let rows = f.rows();
        assert_eq!(rows.len(), 2);
        let mpirun = &rows[0];
        assert_eq!((mpirun.root_pid, mpirun.parent_pid, mpirun.processes), (10, 1, 4));
        assert_eq!(mpirun.root_exe, "/usr/bin/mpirun");
        assert_eq!(mpirun.executables, ["ior ×2", "mpirun", "prted", "sh"]);
        assert_eq!((mpirun.ops, mpirun.bytes, mpirun.counted_ops), (3, 9192, 2));
        assert_eq!(mpirun.counted_pids, [12, 13]);
        assert_eq!(mpirun.wall_s, 90e-9);
        assert_eq!((rows[1].root_pid, rows[1].processes, rows[1].bytes), (20, 1, 7));
    }

    #[test]
    fn a_parent_loop_from_reused_pids_ends() {
        let mut f = ProcessForest::default();
        f.start(5, 6, "/a", true, 0);
        f.start(6, 5, "/b", true, 0);
        f.start(7, 7, "/c", true, 0);
        let rows = f.rows();
        assert_eq!(rows.iter().map(|r| r.processes).sum::<u64>(), 3, "every process in one tree");
    }
}
