//! Merging analyzers of consecutive parts of one trace, so a trace can be read in chunks on
//! several threads: the merge of the analyzers of chunks 1..n, in trace order, gives the
//! summary the analyzer of the whole trace gives (tested in `tests.rs`).

use std::cmp::Reverse;

use crate::accumulate::{ClassAcc, FileAcc, ProcAcc, Slow};
use crate::{Analyzer, LayerRow};
use iolens_metrics::OpCounters;

/// Saturating, as the analyzer's own sums: a trace is input.
fn add_counters(c: &mut OpCounters, o: &OpCounters) {
    c.read_ops = c.read_ops.saturating_add(o.read_ops);
    c.write_ops = c.write_ops.saturating_add(o.write_ops);
    let room = u64::MAX - c.read_bytes.saturating_add(c.write_bytes);
    let read = o.read_bytes.min(room);
    c.read_bytes += read;
    c.write_bytes += o.write_bytes.min(room - read);
    c.moved_bytes = c.moved_bytes.saturating_add(o.moved_bytes);
    c.fsyncs = c.fsyncs.saturating_add(o.fsyncs);
    c.fsync_ns = c.fsync_ns.saturating_add(o.fsync_ns);
    c.close_ns = c.close_ns.saturating_add(o.close_ns);
    c.short_ops = c.short_ops.saturating_add(o.short_ops);
    c.errors = c.errors.saturating_add(o.errors);
    c.latency_sum_ns = c.latency_sum_ns.saturating_add(o.latency_sum_ns);
}

impl ClassAcc {
    fn absorb(&mut self, later: ClassAcc) -> std::io::Result<()> {
        // The histograms merge through `merge_except_busy`, whose plain additions of the counters
        // could overflow on hostile input: it sees only which directions occurred, and the counters are added here, saturating.
        let mut later = later;
        self.short_latencies.flush_into(&mut self.raw);
        later.short_latencies.flush_into(&mut later.raw);
        let mut later_raw = later.raw;
        let (a, b) = (&self.raw.counters, &later_raw.counters);
        if (a.read_ops > 0 || b.read_ops > 0) && (a.write_ops > 0 || b.write_ops > 0) {
            // The merge holds both directions: a side that kept one only (its histogram is that
            // direction's, its latency sum in the counters taken below) splits first.
            self.raw.split_directions_now();
            later_raw.split_directions_now();
        }
        let mine = std::mem::take(&mut self.raw.counters);
        let theirs = std::mem::take(&mut later_raw.counters);
        for (raw, c) in [(&mut self.raw, &mine), (&mut later_raw, &theirs)] {
            raw.counters.read_ops = c.read_ops.min(1);
            raw.counters.write_ops = c.write_ops.min(1);
        }
        self.raw.merge_except_busy(&later_raw);
        self.raw.counters = mine;
        add_counters(&mut self.raw.counters, &theirs);
        self.union.absorb(later.union)?;
        self.sweep.absorb(later.sweep);
        self.staged.absorb(&later.staged);
        for (mine, theirs) in self.sizes.iter_mut().zip(later.sizes) {
            mine[0] = mine[0].saturating_add(theirs[0]);
            mine[1] = mine[1].saturating_add(theirs[1]);
        }
        self.seq_known = self.seq_known.saturating_add(later.seq_known);
        self.seq_hits = self.seq_hits.saturating_add(later.seq_hits);
        self.seq.absorb(later.seq, &mut self.seq_hits);
        self.duration_sum_ns = self.duration_sum_ns.saturating_add(later.duration_sum_ns);
        self.max_extent = self.max_extent.max(later.max_extent);
        Ok(())
    }
}

impl FileAcc {
    fn absorb(&mut self, later: FileAcc) {
        self.ops = self.ops.saturating_add(later.ops);
        self.read_bytes = self.read_bytes.saturating_add(later.read_bytes);
        self.write_bytes = self.write_bytes.saturating_add(later.write_bytes);
        self.latency_sum_ns = self.latency_sum_ns.saturating_add(later.latency_sum_ns);
        self.union.absorb(later.union);
        self.sweep.absorb(later.sweep);
    }
}

impl ProcAcc {
    fn absorb(&mut self, later: ProcAcc) {
        self.ops = self.ops.saturating_add(later.ops);
        self.bytes = self.bytes.saturating_add(later.bytes);
        self.threads.extend(later.threads);
        self.union.absorb(later.union);
        self.timeline.absorb(later.timeline);
        self.sweep.absorb(later.sweep);
    }
}

impl Analyzer {
    /// Adds the analysis of the events that follow this analyzer's in the trace. Both must have
    /// the same options and paths; `later` has no exports (they are written in event order).
    pub fn merge(&mut self, later: Analyzer) {
        self.flush_caches();
        let mut later = later;
        later.flush_caches();
        for (id, used) in later.filtered_ids {
            *self.filtered_ids.entry(id).or_insert(false) |= used;
        }
        let r = &mut self.filter_report;
        let o = &later.filter_report;
        r.ops_out = r.ops_out.saturating_add(o.ops_out);
        r.bytes_out = r.bytes_out.saturating_add(o.bytes_out);
        r.syncs_out = r.syncs_out.saturating_add(o.syncs_out);
        for (class, acc) in later.classes.into_entries() {
            match self.classes.get_mut(class) {
                Some(mine) => {
                    if let Err(err) = mine.absorb(acc) {
                        self.spill_error.get_or_insert(err);
                    }
                }
                None => {
                    self.classes.insert(class, acc);
                }
            }
        }
        for (mine, row) in self.layers.iter_mut().zip(later.layers) {
            let Some(row) = row else { continue };
            let mine =
                mine.get_or_insert_with(|| LayerRow { layer: row.layer.clone(), ..Default::default() });
            mine.ops = mine.ops.saturating_add(row.ops);
            mine.bytes = mine.bytes.saturating_add(row.bytes);
            mine.read_bytes = mine.read_bytes.saturating_add(row.read_bytes);
            mine.write_bytes = mine.write_bytes.saturating_add(row.write_bytes);
        }
        for (layer, union) in later.layer_unions {
            self.layer_unions.entry(layer).or_default().absorb(union);
        }
        for (mine, theirs) in self.layer_sweeps.iter_mut().zip(later.layer_sweeps) {
            mine.absorb(theirs);
        }
        for (key, acc) in later.files.into_entries() {
            self.files.get_or_default(key).absorb(acc);
        }
        for (key, acc) in later.processes {
            self.processes.entry(key).or_default().absorb(acc);
        }
        // Ties in duration go to the later arrival: arrivals count on from this analyzer's.
        for Reverse(Slow(dur, seen, e)) in later.slowest {
            self.keep_if_slow(dur, seen.saturating_add(self.seen), e);
        }
        self.seen = self.seen.saturating_add(later.seen);
        self.first_start = self.first_start.min(later.first_start);
        self.last_end = self.last_end.max(later.last_end);
        self.mmaps = self.mmaps.saturating_add(later.mmaps);
        self.export_errors.extend(later.export_errors);
        if let Some(err) = later.spill_error {
            self.spill_error.get_or_insert(err);
        }
        self.interrupted |= later.interrupted;
    }
}
