//! The end of an analysis: the accumulators become the summary's figures and its tables (layers,
//! request sizes, files, processes, slowest operations).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use iolens_metrics::AgentRaw;
use iolens_record::event::{Layer, NO_FILE, UNKNOWN_OFFSET};

use crate::accumulate::{Class, FileTable, ProcAcc, Slow, LAYERS, SIZE_BUCKETS};
use crate::union::{CompactUnion, SweepUnion};
use crate::{
    export, AnalyzeError, Analyzer, Concurrency, FileRow, FilterReport, LayerRow, ProcessRow, SizeBucket,
    SlowOp, TraceSummary,
};

impl Analyzer {
    /// The summary; the per-operation exports are complete, without an envelope.
    pub fn finish(self) -> Result<TraceSummary, AnalyzeError> {
        let (summary, exports) = self.finish_keeping_exports()?;
        exports.finish(None).map_err(|(path, source)| AnalyzeError::Output { path, source })?;
        Ok(summary)
    }

    /// The summary, and the per-operation exports still to complete with the result's envelope
    /// ([`export::OpExports::finish`]).
    pub fn finish_keeping_exports(mut self) -> Result<(TraceSummary, export::OpExports), AnalyzeError> {
        if !self.in_order() {
            return Err(AnalyzeError::OutOfOrder);
        }
        let in_order = self.opts.in_order;
        self.flush_caches();
        let mut notes = Vec::new();
        if let Some(err) = self.spill_error {
            return Err(AnalyzeError::Spill(err));
        }
        notes.extend(
            self.export_errors
                .iter()
                .map(|(file, err)| format!("the per-op export {} is incomplete: {err}", file.display())),
        );
        let exports = export::OpExports { writers: self.exports, failed: self.export_errors };
        let mut classes = self.classes;
        let chosen = Class::ALL.into_iter().find(|c| classes.contains(*c));
        if chosen == Some(Class::MpiIo) && classes.contains(Class::Application) {
            notes.push(
                "the trace has MPI-IO and POSIX calls: the aggregate counts the MPI-IO calls (the POSIX calls beneath them would count the same bytes twice); see `layers`".into(),
            );
        }
        if self.mmaps > 0 {
            notes.push(format!(
                "{} mmap(s) of traced files: accesses through mapped memory are not in these figures",
                self.mmaps
            ));
        }
        let empty = self.seen == 0;
        let first = if empty { 0 } else { self.first_start };
        let wall_ns = self.opts.program_wall_ns.unwrap_or(self.last_end.saturating_sub(first));
        let (mut raw, union_totals, sizes, seq, duration_sum, peak, max_extent) = match chosen
            .and_then(|c| classes.remove(c))
        {
            Some(mut acc) => {
                let (peak, totals) = if in_order {
                    (acc.sweep.peak_overlap(), acc.sweep.totals())
                } else {
                    (acc.union.peak_overlap(), acc.union.finish().map_err(AnalyzeError::Spill)?)
                };
                let seq = (acc.seq_known > 0).then(|| acc.seq_hits as f64 / acc.seq_known as f64);
                (acc.raw, totals, acc.sizes, seq, acc.duration_sum_ns, peak, acc.max_extent)
            }
            None => (AgentRaw::default(), Default::default(), [[0; 2]; SIZE_BUCKETS], None, 0, Some(0), 0),
        };
        raw.busy = union_totals;
        raw.window_start_ns = first;
        raw.window_end_ns = first.saturating_add(wall_ns);
        let figures = raw.figures(self.opts.block_unit);
        let busy_ns = union_totals.busy_ns;

        let size_histogram = size_histogram(&sizes);

        let paths = self.paths;
        let filters = (!self.opts.filter.is_empty()).then(|| {
            let names: HashSet<&str> = self
                .filtered_ids
                .iter()
                .filter(|(_, used)| **used)
                .filter_map(|(id, _)| paths.get(id).map(String::as_str))
                .collect();
            FilterReport {
                include: self.opts.filter.include_patterns(),
                exclude: self.opts.filter.exclude_patterns(),
                files_out: names.len() as u64,
                ..self.filter_report
            }
        });
        let name = |id: u32| -> String {
            if id == NO_FILE {
                return String::new();
            }
            paths.get(&id).cloned().unwrap_or_else(|| "?".into())
        };
        let files = file_rows(self.files, &name, in_order, self.opts.top_files)?;
        let processes = process_rows(self.processes, first, in_order, self.opts.top_processes)?;
        let slowest = slowest_rows(self.slowest, &name, first);
        let layers = layer_rows(
            self.layers,
            self.layer_unions,
            &mut self.layer_sweeps,
            in_order,
            self.opts.block_unit,
        )?;

        let summary = TraceSummary {
            rate_ops_s: if wall_ns > 0 { figures.ops as f64 / (wall_ns as f64 / 1e9) } else { 0.0 },
            figures,
            aggregate_layer: match chosen {
                Some(Class::MpiIo) => "mpiio",
                Some(Class::Block) => "block",
                _ => "posix+stdio",
            }
            .into(),
            first_start_ns: first,
            sequential_fraction: seq,
            concurrency: Concurrency {
                mean_in_flight: if busy_ns > 0 { duration_sum as f64 / busy_ns as f64 } else { 0.0 },
                peak_in_flight: peak,
            },
            max_extent_bytes: max_extent,
            layers,
            size_histogram,
            files,
            processes,
            executables: Vec::new(),
            process_trees: Vec::new(),
            slowest,
            filters,
            notes,
            interrupted: self.interrupted,
        };
        Ok((summary, exports))
    }
}

/// The per-layer table: each layer's data operations with its own busy time and rate.
fn layer_rows(
    layers: [Option<LayerRow>; LAYERS],
    mut layer_unions: BTreeMap<Layer, CompactUnion>,
    layer_sweeps: &mut [SweepUnion; LAYERS],
    in_order: bool,
    block_unit: u64,
) -> Result<Vec<LayerRow>, AnalyzeError> {
    let block_unit = block_unit.max(1) as f64;
    let mut rows = Vec::with_capacity(LAYERS);
    for (layer, row) in Layer::ALL.into_iter().zip(layers).filter_map(|(l, r)| Some((l, r?))) {
        let busy_ns = match layer_unions.get_mut(&layer) {
            _ if in_order => layer_sweeps[layer as usize].totals().busy_ns,
            Some(union) => union.busy_ns().map_err(AnalyzeError::Spill)?,
            None => 0,
        };
        let busy_s = busy_ns as f64 / 1e9;
        let bps = if busy_s > 0.0 { row.bytes as f64 / block_unit / busy_s } else { 0.0 };
        rows.push(LayerRow { busy_s, bps, ..row });
    }
    Ok(rows)
}

/// The request-size histogram: a row per power-of-two bucket that any call fell in.
fn size_histogram(sizes: &[[u64; 2]; SIZE_BUCKETS]) -> Vec<SizeBucket> {
    sizes
        .iter()
        .enumerate()
        .filter(|(_, c)| c[0] + c[1] > 0)
        .map(|(i, c)| {
            let lo = 1u64 << i;
            SizeBucket {
                label: format!(
                    "{}–{}",
                    iolens_workload::format_bytes(lo),
                    iolens_workload::format_bytes(lo.saturating_mul(2))
                ),
                min_bytes: lo,
                read_ops: c[0],
                write_ops: c[1],
            }
        })
        .collect()
}

/// The per-file table: the `top` files (each layer apart) by busy time.
fn file_rows(
    files: FileTable,
    name: &dyn Fn(u32) -> String,
    in_order: bool,
    top: usize,
) -> Result<Vec<FileRow>, AnalyzeError> {
    let mut rows: Vec<FileRow> = files
        .into_entries()
        .map(|((id, layer), mut f)| {
            Ok(FileRow {
                path: name(id),
                layer: layer.name().into(),
                ops: f.ops,
                bytes: f.read_bytes.saturating_add(f.write_bytes),
                read_bytes: f.read_bytes,
                write_bytes: f.write_bytes,
                busy_s: if in_order {
                    f.sweep.totals().busy_ns
                } else {
                    f.union.busy_ns().map_err(AnalyzeError::Spill)?
                } as f64
                    / 1e9,
                mean_latency_s: if f.ops > 0 { f.latency_sum_ns as f64 / f.ops as f64 / 1e9 } else { 0.0 },
            })
        })
        .collect::<Result<_, AnalyzeError>>()?;
    rows.sort_by(|a, b| b.busy_s.total_cmp(&a.busy_s).then(a.path.cmp(&b.path)).then(a.layer.cmp(&b.layer)));
    rows.truncate(top);
    Ok(rows)
}

/// The per-process table: the `top` processes (each layer apart) by busy time, with their busy
/// periods from the trace's first call (`first`).
fn process_rows(
    processes: HashMap<(u32, Layer), ProcAcc>,
    first: u64,
    in_order: bool,
    top: usize,
) -> Result<Vec<ProcessRow>, AnalyzeError> {
    let mut rows: Vec<ProcessRow> = processes
        .into_iter()
        .map(|((pid, layer), mut p)| {
            Ok(ProcessRow {
                pid,
                layer: layer.name().into(),
                ops: p.ops,
                bytes: p.bytes,
                busy_s: if in_order {
                    p.sweep.totals().busy_ns
                } else {
                    p.union.busy_ns().map_err(AnalyzeError::Spill)?
                } as f64
                    / 1e9,
                threads: p.threads.len(),
                busy_periods_s: p
                    .timeline
                    .periods()
                    .map(|(start, end)| {
                        let since_first = |ns: u64| ns.saturating_sub(first) as f64 / 1e9;
                        [since_first(start), since_first(end)]
                    })
                    .collect(),
                busy_periods_resolution_s: p.timeline.resolution_ns() as f64 / 1e9,
            })
        })
        .collect::<Result<_, AnalyzeError>>()?;
    rows.sort_by(|a, b| b.busy_s.total_cmp(&a.busy_s).then(a.pid.cmp(&b.pid)).then(a.layer.cmp(&b.layer)));
    rows.truncate(top);
    Ok(rows)
}

/// The slowest operations, slowest first, started at seconds from the trace's first call.
fn slowest_rows(slowest: BinaryHeap<Reverse<Slow>>, name: &dyn Fn(u32) -> String, first: u64) -> Vec<SlowOp> {
    let mut rows: Vec<SlowOp> = slowest
        .into_sorted_vec()
        .into_iter()
        .map(|Reverse(Slow(dur, _, e))| SlowOp {
            pid: e.pid,
            tid: e.tid,
            path: name(e.file),
            op: e.op.name().into(),
            layer: e.layer.name().into(),
            offset: (e.offset != UNKNOWN_OFFSET).then_some(e.offset),
            bytes: e.requested,
            start_s: e.start_ns.saturating_sub(first) as f64 / 1e9,
            duration_s: dur as f64 / 1e9,
        })
        .collect();
    rows.sort_by(|a, b| b.duration_s.total_cmp(&a.duration_s));
    rows
}
