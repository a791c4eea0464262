//! [`Analyzer`]: takes the events of a trace one at a time and adds each to the accumulators of
//! its class, file and process, its layer and the busy-time unions.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use iolens_record::busy::Interval;
use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_COPY_SOURCE, UNKNOWN_OFFSET};

use crate::accumulate::{
    class_of, Class, ClassAcc, ClassTable, FileTable, KeyRun, ProcAcc, RunKey, Slow, Staged, LAYERS,
    RELEASE_BATCH,
};
use crate::union::{CompactUnion, SweepUnion};
use crate::{export, AnalyzeError, AnalyzeOptions, FilterReport, LayerRow};

/// Builds a [`TraceSummary`] from a stream of events.
pub struct Analyzer {
    pub(crate) opts: AnalyzeOptions,
    /// Keyed, not indexed: ids come from trace files and may be sparse.
    pub(crate) paths: HashMap<u32, String>,
    /// Path ids the filter rejects, and whether any call used them.
    pub(crate) filtered_ids: HashMap<u32, bool>,
    pub(crate) filter_report: FilterReport,
    pub(crate) classes: ClassTable,
    /// Indexed by layer.
    pub(crate) layers: [Option<LayerRow>; LAYERS],
    /// Busy time of each layer on its own.
    pub(crate) layer_unions: BTreeMap<Layer, CompactUnion>,
    /// The same, swept, when the calls come in order (indexed by layer).
    pub(crate) layer_sweeps: [SweepUnion; LAYERS],
    /// Calls released from a reorder window, on their way to their sweeps.
    pub(crate) released: Vec<Staged>,
    /// Per file and per process, each layer on its own: an MPI-IO call and the POSIX calls
    /// beneath it move the same bytes, so adding them would count them twice.
    pub(crate) files: FileTable,
    pub(crate) processes: HashMap<(u32, Layer), ProcAcc>,
    /// The process of the latest call, held outside `processes` (calls come in runs).
    pub(crate) current_process: Option<((u32, Layer), ProcAcc)>,
    pub(crate) run: KeyRun,
    pub(crate) slowest: BinaryHeap<Reverse<Slow>>,
    pub(crate) seen: u64,
    pub(crate) first_start: u64,
    pub(crate) last_end: u64,
    pub(crate) mmaps: u64,
    pub(crate) exports: Vec<export::Export>,
    /// Exports that failed mid-way: the summary goes on, tells them in its notes, and the
    /// exports fail when completed ([`export::OpExports::finish`]).
    pub(crate) export_errors: Vec<(PathBuf, std::io::Error)>,
    /// The first failure to spill the busy-time union: the summary cannot be trusted after it.
    pub(crate) spill_error: Option<std::io::Error>,
    /// The caller's stop flag was seen: the summary covers the events before it.
    pub(crate) interrupted: bool,
}

impl Analyzer {
    pub fn new(opts: AnalyzeOptions) -> Result<Analyzer, AnalyzeError> {
        let exports = export::open_exports(opts.per_op_csv.as_ref(), opts.per_op_parquet.as_ref())
            .map_err(|(path, source)| AnalyzeError::Output { path, source })?;
        Ok(Analyzer {
            opts,
            paths: HashMap::new(),
            filtered_ids: HashMap::new(),
            filter_report: FilterReport::default(),
            classes: ClassTable::default(),
            layers: Default::default(),
            layer_unions: BTreeMap::new(),
            layer_sweeps: Default::default(),
            released: Vec::new(),
            files: FileTable::default(),
            processes: HashMap::new(),
            current_process: None,
            run: KeyRun::default(),
            slowest: BinaryHeap::new(),
            seen: 0,
            first_start: u64::MAX,
            last_end: 0,
            mmaps: 0,
            exports,
            export_errors: Vec::new(),
            spill_error: None,
            interrupted: false,
        })
    }

    /// Whether the caller's stop flag is set; once it is, the summary reports `interrupted`.
    pub fn stop_requested(&mut self) -> bool {
        if !self.interrupted {
            self.interrupted = self.opts.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
        }
        self.interrupted
    }

    pub fn path(&mut self, id: u32, path: &str) {
        if self.opts.filter.admits(path) {
            self.filtered_ids.remove(&id);
        } else {
            self.filtered_ids.insert(id, false);
        }
        self.paths.insert(id, path.to_string());
    }

    /// Whether calls on file `id` count (the path filter admits it, or it names no path).
    pub fn counts_file(&self, id: u32) -> bool {
        self.filtered_ids.is_empty() || !self.filtered_ids.contains_key(&id)
    }

    /// Counts a call on a file the filter rejects; true when `e` is one.
    fn filtered_out(&mut self, e: &IoEvent) -> bool {
        if self.filtered_ids.is_empty() {
            return false;
        }
        let Some(used) = self.filtered_ids.get_mut(&e.file) else { return false };
        *used = true;
        let r = &mut self.filter_report;
        if e.op.is_data() {
            r.ops_out = r.ops_out.saturating_add(1);
            r.bytes_out = r.bytes_out.saturating_add(e.requested);
        } else if e.op.is_sync() {
            r.syncs_out = r.syncs_out.saturating_add(1);
        }
        true
    }

    /// The wall time of what was counted, when known only once the trace is read (the
    /// lifetimes of the selected processes, or a Darshan log's job runtime).
    pub fn set_program_wall_ns(&mut self, wall_ns: u64) {
        self.opts.program_wall_ns = Some(wall_ns);
    }

    /// The path defined for `id`, for notes about events the analysis does not count.
    pub fn path_name(&self, id: u32) -> Option<&str> {
        self.paths.get(&id).map(String::as_str)
    }

    fn export(&mut self, e: &IoEvent) {
        if self.exports.is_empty() {
            return;
        }
        let path = self.paths.get(&e.file).map_or("", String::as_str);
        let mut failed = None;
        for (i, (file, writer)) in self.exports.iter_mut().enumerate() {
            if let Err(err) = writer.op(e, path) {
                self.export_errors.push((file.clone(), err));
                failed = Some(i);
            }
        }
        if let Some(i) = failed {
            self.exports.remove(i);
        }
    }

    pub fn event(&mut self, e: &IoEvent) {
        if self.filtered_out(e) {
            return;
        }
        self.export(e);
        if e.op == IoOp::Mmap {
            self.mmaps += 1;
            return;
        }
        let data = e.op.is_data();
        if !data && !e.op.is_sync() {
            return;
        }
        self.seen = self.seen.saturating_add(1);
        self.first_start = self.first_start.min(e.start_ns);
        self.last_end = self.last_end.max(e.end_ns);
        let iv = Interval::new(e.start_ns, e.end_ns.max(e.start_ns));
        // The read half of an in-kernel copy shares the write half's interval: counted once.
        let timed = e.flags & FLAG_COPY_SOURCE == 0;
        let dur = if timed { iv.len() } else { 0 };
        let write = e.op == IoOp::Write || e.op == IoOp::Copy;

        let class = class_of(e.layer);
        let acc = self.classes.get_or_insert_with(class, || ClassAcc::new(&self.opts));
        let in_order = self.opts.in_order;
        let staging = in_order && self.opts.reorder_window > 0;
        if timed {
            if staging {
                // Swept when the window releases it, with its layer's, file's and process's.
                acc.sweep.arrive(iv);
            } else if in_order {
                acc.sweep.push(iv);
            } else if let Err(err) = acc.union.push(iv) {
                self.spill_error.get_or_insert(err);
            }
        }
        acc.duration_sum_ns = acc.duration_sum_ns.saturating_add(dur as u128);
        if data {
            let c = &acc.raw.counters;
            let other_direction_seen = if write { c.read_ops > 0 } else { c.write_ops > 0 };
            if other_direction_seen && acc.raw.by_direction.is_none() {
                // The first call of the second direction: what the histograms hold so far is
                // the first direction's (its counters are not yet touched by this call).
                acc.short_latencies.flush_into(&mut acc.raw);
                acc.raw.split_directions_now();
            }
        }
        if data && timed {
            acc.short_latencies.record(&mut acc.raw, write, dur);
        }
        let c = &mut acc.raw.counters;
        // Traces are input: their sums saturate rather than overflow. Read and write totals are
        // capped together because the figures add them.
        if data {
            c.latency_sum_ns = c.latency_sum_ns.saturating_add(dur);
            c.moved_bytes = c.moved_bytes.saturating_add(e.requested);
            let room = u64::MAX - c.read_bytes.saturating_add(c.write_bytes);
            if write {
                c.write_ops = c.write_ops.saturating_add(1);
                c.write_bytes += e.requested.min(room);
            } else {
                c.read_ops = c.read_ops.saturating_add(1);
                c.read_bytes += e.requested.min(room);
            }
            if e.failed() {
                c.errors = c.errors.saturating_add(1);
            } else if (e.result as u64) < e.requested && !write {
                c.short_ops = c.short_ops.saturating_add(1);
            }
            let bucket = 63 - e.requested.max(1).leading_zeros() as usize;
            let n = &mut acc.sizes[bucket][write as usize];
            *n = n.saturating_add(1);
            if e.offset != UNKNOWN_OFFSET {
                acc.seq_known = acc.seq_known.saturating_add(1);
                let moved = if e.result > 0 { e.result as u64 } else { e.requested };
                if acc.seq.follows((e.pid, e.file), e.offset, e.offset.saturating_add(moved)) {
                    acc.seq_hits = acc.seq_hits.saturating_add(1);
                }
                acc.max_extent = acc.max_extent.max(e.offset.saturating_add(e.requested));
            }
        } else {
            c.fsyncs = c.fsyncs.saturating_add(1);
            c.fsync_ns = c.fsync_ns.saturating_add(dur);
        }

        let key = (e.pid, e.file, e.layer);
        if self.run.key != Some(key) {
            self.end_run();
            self.run.key = Some(key);
        }
        if data {
            let t = &mut self.run.totals;
            t.ops += 1;
            t.latency_sum_ns = t.latency_sum_ns.saturating_add(dur);
            if write {
                t.write_bytes = t.write_bytes.saturating_add(e.requested);
            } else {
                t.read_bytes = t.read_bytes.saturating_add(e.requested);
            }
        }
        let p = self.process_acc((e.pid, e.layer));
        if p.last_tid != Some(e.tid) {
            p.threads.insert(e.tid);
            p.last_tid = Some(e.tid);
        }
        if timed {
            p.timeline.push(iv);
            if !in_order {
                p.union.push(iv);
                self.layer_unions.entry(e.layer).or_default().push(iv);
                if self.opts.top_files > 0 {
                    self.files.get_or_default((e.file, e.layer)).union.push(iv);
                }
            } else if staging {
                self.stage(class, Staged { iv, key });
            } else {
                self.run_push(key, iv);
            }
            self.keep_if_slow(dur, self.seen, *e);
        }
    }

    /// Makes `key` the process held outside the table.
    #[cold]
    #[inline(never)]
    fn switch_process(&mut self, key: (u32, Layer)) {
        if let Some((k, acc)) = self.current_process.take() {
            self.processes.insert(k, acc);
        }
        let acc = self.processes.remove(&key).unwrap_or_default();
        self.current_process = Some((key, acc));
    }

    /// Puts a call in its class's reorder window, and sweeps the window's earlier half when full.
    #[inline]
    fn stage(&mut self, class: Class, call: Staged) {
        let Some(acc) = self.classes.get_mut(class) else { return };
        acc.staged.push(call);
        if acc.staged.full() {
            let window = acc.staged.window();
            self.release_staged(class, window);
        }
    }

    /// Sweeps the `n` earliest calls waiting in `class`'s reorder window, for the class, and
    /// for their layer, file and process.
    #[cold]
    #[inline(never)]
    fn release_staged(&mut self, class: Class, n: usize) {
        let mut released = std::mem::take(&mut self.released);
        let mut left = n;
        while left > 0 {
            let Some(acc) = self.classes.get_mut(class) else { break };
            acc.staged.release(left.min(RELEASE_BATCH), &mut released);
            if released.is_empty() {
                break;
            }
            left -= released.len();
            released.iter().for_each(|call| acc.sweep.sweep(call.iv));
            for call in released.drain(..) {
                self.for_each_sweep_of(call.key, |sweep| sweep.push(call.iv));
            }
        }
        self.released = released;
    }

    /// Sweeps `iv`, of a call of `key`, for its layer, file and process.
    #[inline]
    fn run_push(&mut self, key: RunKey, iv: Interval) {
        if self.run.sweep.is_empty() {
            if self.run.direct == KeyRun::DIRECT_CALLS {
                let open_end = self.open_end_of(key);
                self.run.horizon = self.run.horizon.max(open_end);
            }
            let run = &mut self.run;
            if run.direct <= KeyRun::DIRECT_CALLS || iv.start <= run.horizon {
                run.direct = run.direct.saturating_add(1);
                run.horizon = run.horizon.max(iv.end);
                self.for_each_sweep_of(key, |sweep| sweep.push(iv));
                return;
            }
        }
        self.run.sweep.push_plain(iv);
    }

    /// The latest open period's end among the layer's, file's and process's sweeps of `key`.
    fn open_end_of(&mut self, key: RunKey) -> u64 {
        let mut end = 0;
        self.for_each_sweep_of(key, |sweep| end = end.max(sweep.open_end().unwrap_or(0)));
        end
    }

    /// Calls `f` on the layer's, file's and process's sweeps of `key`.
    fn for_each_sweep_of(&mut self, (pid, file, layer): RunKey, mut f: impl FnMut(&mut SweepUnion)) {
        f(&mut self.layer_sweeps[layer as usize]);
        if self.opts.top_files > 0 {
            f(&mut self.files.get_or_default((file, layer)).sweep);
        }
        f(&mut self.process_acc((pid, layer)).sweep);
    }

    /// The process `key`, made the one held outside the table (calls come in runs).
    #[inline]
    fn process_acc(&mut self, key: (u32, Layer)) -> &mut ProcAcc {
        if self.current_process.as_ref().is_none_or(|(k, _)| *k != key) {
            self.switch_process(key);
        }
        &mut self.current_process.as_mut().expect("switched to above").1
    }

    /// Adds the run's totals and its own sweep to its layer's, file's and process's.
    #[inline(never)]
    fn end_run(&mut self) {
        let run = std::mem::take(&mut self.run);
        let Some(key @ (pid, file, layer)) = run.key else { return };
        let t = run.totals;
        let bytes = t.read_bytes.saturating_add(t.write_bytes);
        if t.ops > 0 {
            let row = self.layers[layer as usize]
                .get_or_insert_with(|| LayerRow { layer: layer.name().into(), ..Default::default() });
            row.ops = row.ops.saturating_add(t.ops);
            row.bytes = row.bytes.saturating_add(bytes);
            row.read_bytes = row.read_bytes.saturating_add(t.read_bytes);
            row.write_bytes = row.write_bytes.saturating_add(t.write_bytes);
        }
        if self.opts.top_files > 0 {
            let f = self.files.get_or_default((file, layer));
            f.ops = f.ops.saturating_add(t.ops);
            f.latency_sum_ns = f.latency_sum_ns.saturating_add(t.latency_sum_ns);
            f.read_bytes = f.read_bytes.saturating_add(t.read_bytes);
            f.write_bytes = f.write_bytes.saturating_add(t.write_bytes);
        }
        let p = self.process_acc((pid, layer));
        p.ops = p.ops.saturating_add(t.ops);
        p.bytes = p.bytes.saturating_add(bytes);
        if !run.sweep.is_empty() {
            self.for_each_sweep_of(key, |sweep| sweep.absorb(run.sweep.copy_plain()));
        }
    }

    /// Keeps the `slowest` longest operations, ties going to the later arrival.
    #[inline]
    pub(crate) fn keep_if_slow(&mut self, dur: u64, arrival: u64, e: IoEvent) {
        let n = self.opts.slowest;
        if n == 0 {
            return;
        }
        if self.slowest.len() >= n
            && self.slowest.peek().is_some_and(|Reverse(min)| (dur, arrival) < (min.0, min.1))
        {
            return;
        }
        self.slowest.push(Reverse(Slow(dur, arrival, e)));
        if self.slowest.len() > n {
            self.slowest.pop();
        }
    }

    /// Puts what is held outside the tables back in.
    pub(crate) fn flush_caches(&mut self) {
        for class in Class::ALL {
            self.release_staged(class, usize::MAX);
        }
        self.end_run();
        if let Some((k, acc)) = self.current_process.take() {
            self.processes.insert(k, acc);
        }
        for acc in self.classes.values_mut() {
            acc.seq.flush();
            acc.short_latencies.flush_into(&mut acc.raw);
        }
    }

    /// Whether each class's calls have come in start order so far (or through its window): a
    /// check cheap enough to poll while reading. A class's layers, files and processes see
    /// parts of its calls in the same order, so they stay in order while it does; the full
    /// check is [`Analyzer::in_order`].
    pub fn in_order_so_far(&self) -> bool {
        !self.opts.in_order || self.classes.values().all(|c| c.sweep.ordered() && c.staged.ordered())
    }

    /// Whether every union saw its calls in start order (always true without
    /// [`AnalyzeOptions::in_order`]): when false, [`Analyzer::finish`] fails.
    pub fn in_order(&self) -> bool {
        if !self.opts.in_order {
            return true;
        }
        self.classes.values().all(|c| c.sweep.ordered() && c.staged.ordered())
            && self.run.sweep.ordered()
            && self.layer_sweeps.iter().all(SweepUnion::ordered)
            && self.files.accs.iter().all(|(_, f)| f.sweep.ordered())
            && self
                .processes
                .values()
                .chain(self.current_process.as_ref().map(|(_, p)| p))
                .all(|p| p.sweep.ordered())
    }
}
