use iolens_record::busy::UnionTotals;
use serde::{Deserialize, Serialize};

use crate::{DeviceReport, LatencyBin, LatencyHistogram, LatencySummary, Warning};

/// Operation counts and sizes as the application asked for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpCounters {
    pub read_ops: u64,
    pub write_ops: u64,
    /// Bytes requested by reads (what the application asked for, not what moved below it).
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Bytes the calls moved to or from the file system: the requested bytes plus what data
    /// sieving reads around them.
    pub moved_bytes: u64,
    pub fsyncs: u64,
    pub fsync_ns: u64,
    /// Time closing the target at the end of the phase.
    pub close_ns: u64,
    /// Requests that moved fewer bytes than asked (end of file, device end).
    pub short_ops: u64,
    pub errors: u64,
    /// Sum of data-op response times, for an exact mean.
    pub latency_sum_ns: u64,
}

impl OpCounters {
    pub fn ops(&self) -> u64 {
        self.read_ops + self.write_ops
    }
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
    pub fn merge(&mut self, o: &OpCounters) {
        self.read_ops += o.read_ops;
        self.write_ops += o.write_ops;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.moved_bytes += o.moved_bytes;
        self.fsyncs += o.fsyncs;
        self.fsync_ns += o.fsync_ns;
        self.close_ns += o.close_ns;
        self.short_ops += o.short_ops;
        self.errors += o.errors;
        self.latency_sum_ns += o.latency_sum_ns;
    }
}

/// CPU time consumed (user and system), in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTime {
    pub user_s: f64,
    pub sys_s: f64,
}

impl CpuTime {
    pub fn merge(&mut self, o: &CpuTime) {
        self.user_s += o.user_s;
        self.sys_s += o.sys_s;
    }
}

/// Latencies of reads and of writes apart, for agents (and merges) that do both.
#[derive(Debug, Clone, Default)]
pub struct DirectionLatency {
    pub read: LatencyHistogram,
    pub write: LatencyHistogram,
    /// Sums of response times, for exact means.
    pub read_sum_ns: u64,
    pub write_sum_ns: u64,
}

impl DirectionLatency {
    fn merge(&mut self, o: &DirectionLatency) {
        self.read.merge(&o.read);
        self.write.merge(&o.write);
        self.read_sum_ns = self.read_sum_ns.saturating_add(o.read_sum_ns);
        self.write_sum_ns = self.write_sum_ns.saturating_add(o.write_sum_ns);
    }
}

/// What one agent (or a merge of several) accumulated: raw, mergeable data.
#[derive(Debug, Clone, Default)]
pub struct AgentRaw {
    pub counters: OpCounters,
    /// Latencies of all data operations.
    pub latency: LatencyHistogram,
    /// Reads and writes apart: allocated up front where both can occur
    /// ([`AgentRaw::split_directions`]); `None` where one direction only is recorded (then
    /// `latency` is that direction's) or where the direction was not kept.
    pub by_direction: Option<Box<DirectionLatency>>,
    /// The busy periods of this agent alone (its own in-flight union).
    pub busy: UnionTotals,
    pub cpu: CpuTime,
    /// Measurement window (after the ramp), nanoseconds of the monotonic clock.
    pub window_start_ns: u64,
    pub window_end_ns: u64,
}

impl AgentRaw {
    /// Keeps reads' and writes' latencies apart from now on (before any operation is recorded).
    pub fn split_directions(&mut self) {
        self.by_direction = Some(Box::default());
    }

    /// Keeps reads' and writes' latencies apart from now on, when only one direction has been
    /// counted so far: what `latency` holds is that direction's. For readers of traces, which
    /// learn only as they go whether both directions occur (two more histograms of 288 KB
    /// each, zeroed, are then paid for only by a trace that has both).
    pub fn split_directions_now(&mut self) {
        if self.by_direction.is_none() {
            self.by_direction = self.directions().map(|d| Box::new(d.into_owned()));
        }
    }

    /// Records one data operation's response time (the counters are the caller's).
    #[inline]
    pub fn record_latency(&mut self, write: bool, ns: u64) {
        self.latency.record(ns);
        if let Some(d) = &mut self.by_direction {
            if write {
                d.write.record(ns);
                d.write_sum_ns = d.write_sum_ns.saturating_add(ns);
            } else {
                d.read.record(ns);
                d.read_sum_ns = d.read_sum_ns.saturating_add(ns);
            }
        }
    }

    /// Reads' and writes' latencies apart: kept, or known because only one direction occurred.
    fn directions(&self) -> Option<std::borrow::Cow<'_, DirectionLatency>> {
        use std::borrow::Cow;
        let c = &self.counters;
        match &self.by_direction {
            Some(d) => Some(Cow::Borrowed(d)),
            None if c.write_ops == 0 => Some(Cow::Owned(DirectionLatency {
                read: self.latency.clone(),
                read_sum_ns: c.latency_sum_ns,
                ..Default::default()
            })),
            None if c.read_ops == 0 => Some(Cow::Owned(DirectionLatency {
                write: self.latency.clone(),
                write_sum_ns: c.latency_sum_ns,
                ..Default::default()
            })),
            None => None,
        }
    }

    /// Merges counters, histograms and CPU; the window widens. Busy time is *not* summed here:
    /// the union across agents must come from their intervals, so the caller sets it.
    pub fn merge_except_busy(&mut self, o: &AgentRaw) {
        let both = (self.counters.read_ops + o.counters.read_ops > 0)
            && (self.counters.write_ops + o.counters.write_ops > 0);
        // Only a merge holding both directions needs them apart; otherwise `latency` is the one.
        self.by_direction = if both {
            match (self.directions(), o.directions()) {
                (Some(mine), Some(theirs)) => {
                    let mut d = mine.into_owned();
                    d.merge(&theirs);
                    Some(Box::new(d))
                }
                _ => None,
            }
        } else {
            None
        };
        self.counters.merge(&o.counters);
        self.latency.merge(&o.latency);
        self.cpu.merge(&o.cpu);
        if self.window_start_ns == 0 || (o.window_start_ns != 0 && o.window_start_ns < self.window_start_ns) {
            self.window_start_ns = o.window_start_ns;
        }
        self.window_end_ns = self.window_end_ns.max(o.window_end_ns);
    }

    pub fn wall_ns(&self) -> u64 {
        self.window_end_ns.saturating_sub(self.window_start_ns)
    }

    /// The figures of this data with `block_unit`-byte blocks for BPS.
    pub fn figures(&self, block_unit: u64) -> Figures {
        Figures::compute(self, block_unit)
    }
}

/// CPU figures of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuFigures {
    pub user_s: f64,
    pub sys_s: f64,
    /// (user + sys) per data operation, nanoseconds.
    pub per_op_ns: f64,
}

/// The figures of one direction (reads or writes) of a run that does both.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DirectionFigures {
    pub ops: u64,
    /// Requested bytes.
    pub bytes: u64,
    /// Operations and requested bytes of this direction per second of wall time.
    pub iops: f64,
    pub bw_bytes_s: f64,
    /// Mean response time of this direction's operations, seconds.
    pub arpt_s: f64,
    pub lat_ns: LatencySummary,
}

/// A run's latency figures: the percentiles, and the fio-style bins beside them (`lat_ns.bins`).
/// Dereferences to the percentiles, so `figures.lat_ns.p99` reads as before.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencyFigures {
    #[serde(flatten)]
    pub summary: LatencySummary,
    /// Operations per bin ([`crate::BIN_EDGES_NS`], then the overflow bin); the counts sum to
    /// the operations measured.
    pub bins: Vec<LatencyBin>,
}

impl LatencyFigures {
    pub fn of(hist: &LatencyHistogram) -> LatencyFigures {
        LatencyFigures { summary: hist.summary(), bins: hist.bins() }
    }
}

impl From<LatencySummary> for LatencyFigures {
    fn from(summary: LatencySummary) -> LatencyFigures {
        LatencyFigures { summary, bins: Vec::new() }
    }
}

impl std::ops::Deref for LatencyFigures {
    type Target = LatencySummary;
    fn deref(&self) -> &LatencySummary {
        &self.summary
    }
}

/// The figures a report shows, derived from raw data. All are application-side: bytes are what
/// the application requested, times are what it waited.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    pub ops: u64,
    pub bytes: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Bytes moved by the calls (≥ `bytes` when data sieving reads the holes too).
    pub moved_bytes: u64,
    pub fsyncs: u64,
    pub fsync_s: f64,
    /// Time in close at the end of the phase (counted in busy time, like fsync).
    pub close_s: f64,
    pub short_ops: u64,
    pub errors: u64,
    /// Measurement window: from the end of the ramp to the end of the phase.
    pub wall_s: f64,
    /// Overlapped busy time: the union of all in-flight intervals (idle gaps excluded).
    pub busy_s: f64,
    pub busy_periods: u64,
    /// Blocks (of `block_unit` bytes) requested per second of busy time.
    pub bps: f64,
    #[serde(rename = "block_unit_bytes")]
    pub block_unit: u64,
    /// Data operations per second of wall time.
    pub iops: f64,
    /// Requested bytes per second of wall time.
    pub bw_bytes_s: f64,
    /// Average response time of a data operation, seconds.
    pub arpt_s: f64,
    pub lat_ns: LatencyFigures,
    pub cpu: CpuFigures,
    /// busy_s / wall_s: the share of the run spent with at least one request in flight.
    pub io_wait_fraction: f64,
    /// Reads and writes apart, when both occurred (absent otherwise, and where the directions
    /// were not kept apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<DirectionFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<DirectionFigures>,
}

fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

impl Figures {
    pub fn compute(raw: &AgentRaw, block_unit: u64) -> Figures {
        let c = &raw.counters;
        let ops = c.ops();
        let bytes = c.bytes();
        let wall_s = raw.wall_ns() as f64 / 1e9;
        let busy_s = raw.busy.busy_ns as f64 / 1e9;
        let blocks = bytes as f64 / block_unit.max(1) as f64;
        let cpu_s = raw.cpu.user_s + raw.cpu.sys_s;
        let dirs = (c.read_ops > 0 && c.write_ops > 0).then_some(raw.by_direction.as_deref()).flatten();
        let direction = |ops: u64, bytes: u64, hist: &LatencyHistogram, sum_ns: u64| DirectionFigures {
            ops,
            bytes,
            iops: ratio(ops as f64, wall_s),
            bw_bytes_s: ratio(bytes as f64, wall_s),
            arpt_s: ratio(sum_ns as f64 / 1e9, ops as f64),
            lat_ns: hist.summary(),
        };
        Figures {
            read: dirs.map(|d| direction(c.read_ops, c.read_bytes, &d.read, d.read_sum_ns)),
            write: dirs.map(|d| direction(c.write_ops, c.write_bytes, &d.write, d.write_sum_ns)),
            ops,
            bytes,
            read_ops: c.read_ops,
            write_ops: c.write_ops,
            read_bytes: c.read_bytes,
            write_bytes: c.write_bytes,
            moved_bytes: c.moved_bytes,
            fsyncs: c.fsyncs,
            fsync_s: c.fsync_ns as f64 / 1e9,
            close_s: c.close_ns as f64 / 1e9,
            short_ops: c.short_ops,
            errors: c.errors,
            wall_s,
            busy_s,
            busy_periods: raw.busy.periods,
            bps: ratio(blocks, busy_s),
            block_unit,
            iops: ratio(ops as f64, wall_s),
            bw_bytes_s: ratio(bytes as f64, wall_s),
            arpt_s: ratio(c.latency_sum_ns as f64 / 1e9, ops as f64),
            lat_ns: LatencyFigures::of(&raw.latency),
            cpu: CpuFigures {
                user_s: raw.cpu.user_s,
                sys_s: raw.cpu.sys_s,
                per_op_ns: ratio(cpu_s * 1e9, ops as f64),
            },
            io_wait_fraction: ratio(busy_s, wall_s).min(1.0),
        }
    }
}

/// How one agent was configured, in words, for reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentInfo {
    pub name: String,
    pub target: String,
    /// e.g. "randread", "write", "mix 70% read"
    pub rw: String,
    /// The block sizes as words, e.g. "4KiB" or "4KiB:50,64KiB:50" (the envelope's job has them
    /// as numbers, `bs_bytes`).
    #[serde(rename = "bs_spec")]
    pub bs: String,
    /// The block size when the agent has one fixed size; `None` for a mix of sizes.
    pub bs_bytes: Option<u64>,
    pub engine: String,
    pub qd: u32,
    pub direct: bool,
    /// Random offsets drawn without replacement (a permutation of the blocks per pass).
    pub random_map: bool,
    /// The rate the agent asked for, operations per second; 0 = as fast as possible.
    #[serde(rename = "rate_iops")]
    pub rate: f64,
}

/// What preparation did to one target before the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TargetReport {
    pub path: String,
    /// Created by this run (false: it existed before, and was read as it was).
    pub created: bool,
    /// Bytes of incompressible data written to lay the file out before the run: only files
    /// this run created (or a suite's own file from an earlier point) are laid out.
    pub laid_out_bytes: u64,
    /// Its cached pages were written back and dropped before the run: a file laid out here
    /// (unless `--keep-cache`), an existing one only with `--drop-cache`.
    pub cache_dropped: bool,
}

/// One agent's result line.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentResult {
    #[serde(flatten)]
    pub info: AgentInfo,
    #[serde(flatten)]
    pub figures: Figures,
}

/// A whole run: the body of what `--json` writes (the envelope, with the resolved job, comes
/// from `iolens_report`, which takes `interrupted`, `error` and `warnings` from here).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunResult {
    /// The job's name.
    #[serde(rename = "job_name")]
    pub job: String,
    /// True when the run was stopped early (Ctrl-C); figures cover what ran.
    #[serde(skip)]
    pub interrupted: bool,
    /// The error that ended the run early, if any; figures cover what ran.
    #[serde(skip)]
    pub error: Option<String>,
    pub aggregate: Figures,
    pub agents: Vec<AgentResult>,
    /// What preparation did to each target (created, laid out, cache dropped).
    pub targets: Vec<TargetReport>,
    /// Counters of the device behind the targets over the measurement window, beside the
    /// application's; `None` when no block device is behind them (tmpfs, null engine).
    pub device: Option<DeviceReport>,
    #[serde(skip)]
    pub warnings: Vec<Warning>,
    /// Memory the streaming busy-time union needed (peak disjoint runs held).
    pub union_peak_pending: u64,
    pub trace_file: Option<String>,
    pub trace_dropped_records: u64,
    /// Times an agent waited because the collector had not drained its ring yet.
    pub union_ring_stalls: u64,
    /// Data verification, when any agent verifies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::VerifyReport>,
    /// Per-interval figures, with `--log-interval`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<crate::RunSeries>,
}

impl RunResult {
    /// Bad blocks found by verification, as an error line; `None` when none (or no verification).
    pub fn verify_error(&self) -> Option<String> {
        let v = self.verify.as_ref().filter(|v| v.failures_total > 0)?;
        Some(format!(
            "data verification failed: {} of {} blocks checked are bad (listed above and in the JSON result)",
            v.failures_total, v.blocks_checked
        ))
    }
}

/// A run tells the envelope its interruption, warnings and failure.
impl iolens_output::contract::Body for RunResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    fn warnings(&self) -> Vec<iolens_output::contract::Notice> {
        crate::Warning::notices(&self.warnings)
    }
    fn error(&self) -> Option<iolens_output::contract::Notice> {
        self.error.as_ref().map(|e| iolens_output::contract::Notice::new("run_failed", e.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(ops: u64, size: u64, busy_ns: u64, wall_ns: u64) -> AgentRaw {
        let mut r = AgentRaw::default();
        r.counters.read_ops = ops;
        r.counters.read_bytes = ops * size;
        r.counters.latency_sum_ns = ops * 1000;
        for _ in 0..ops {
            r.latency.record(1000);
        }
        r.busy = UnionTotals { busy_ns, periods: 1, first_start: 10, last_end: 10 + busy_ns };
        r.window_start_ns = 10;
        r.window_end_ns = 10 + wall_ns;
        r.cpu = CpuTime { user_s: 0.5, sys_s: 0.5 };
        r
    }

    #[test]
    fn derived_figures() {
        // 1000 reads of 4 KiB, busy 0.5 s of a 2 s window.
        let f = raw(1000, 4096, 500_000_000, 2_000_000_000).figures(512);
        assert_eq!(f.ops, 1000);
        assert_eq!(f.bytes, 4_096_000);
        assert!((f.bps - 8.0 * 1000.0 / 0.5).abs() < 1e-9, "blocks / busy time");
        assert!((f.iops - 500.0).abs() < 1e-9, "ops / wall time");
        assert!((f.bw_bytes_s - 2_048_000.0).abs() < 1e-6);
        assert!((f.arpt_s - 1e-6).abs() < 1e-15);
        assert!((f.io_wait_fraction - 0.25).abs() < 1e-12);
        assert!((f.cpu.per_op_ns - 1e6).abs() < 1e-6);
        assert_eq!(f.lat_ns.p50, 1000);
        assert_eq!(f.lat_ns.bins.iter().map(|b| b.count).sum::<u64>(), f.ops, "bins hold every op");
        assert_eq!(f.lat_ns.bins.iter().find(|b| b.le_ns == Some(1000)).unwrap().count, 1000);
    }

    #[test]
    fn empty_run_has_zero_not_nan() {
        let f = AgentRaw::default().figures(512);
        for v in [f.bps, f.iops, f.bw_bytes_s, f.arpt_s, f.io_wait_fraction, f.cpu.per_op_ns] {
            assert_eq!(v, 0.0);
        }
    }

    fn record(r: &mut AgentRaw, write: bool, ns: u64, bytes: u64) {
        r.record_latency(write, ns);
        let c = &mut r.counters;
        c.latency_sum_ns += ns;
        if write {
            c.write_ops += 1;
            c.write_bytes += bytes;
        } else {
            c.read_ops += 1;
            c.read_bytes += bytes;
        }
    }

    #[test]
    fn mixed_agents_report_reads_and_writes_apart() {
        // Fast reads (10 us), slow writes (1 ms): merged, p50 would be a read and p99 a write.
        let mut r = AgentRaw::default();
        r.split_directions();
        for i in 0..300 {
            record(&mut r, i % 3 == 0, if i % 3 == 0 { 1_000_000 } else { 10_000 }, 4096);
        }
        r.window_end_ns = 1_000_000_000;
        let f = r.figures(512);
        let (rd, wr) = (f.read.clone().unwrap(), f.write.clone().unwrap());
        assert_eq!((rd.ops, wr.ops), (200, 100));
        assert_eq!((rd.bytes, wr.bytes), (200 * 4096, 100 * 4096));
        assert!((rd.iops - 200.0).abs() < 1e-9 && (wr.bw_bytes_s - 409_600.0).abs() < 1e-6);
        assert!((rd.arpt_s - 10e-6).abs() < 1e-12 && (wr.arpt_s - 1e-3).abs() < 1e-12);
        let close = |got: u64, want: u64| (got as f64 - want as f64).abs() / want as f64 <= 0.001;
        assert!(close(rd.lat_ns.p99, 10_000) && close(wr.lat_ns.p50, 1_000_000));
        assert!(close(f.lat_ns.p99, 1_000_000), "the overall histogram still holds both");

        // Aggregate of a read-only and a write-only agent: the split comes from their directions.
        let mut reader = AgentRaw::default();
        let mut writer = AgentRaw::default();
        for _ in 0..10 {
            record(&mut reader, false, 5_000, 512);
            record(&mut writer, true, 50_000, 512);
        }
        let mut all = AgentRaw::default();
        all.merge_except_busy(&reader);
        assert!(all.by_direction.is_none(), "one direction: nothing to keep apart");
        all.merge_except_busy(&writer);
        all.merge_except_busy(&r);
        let f = all.figures(512);
        let (rd, wr) = (f.read.unwrap(), f.write.unwrap());
        assert_eq!((rd.ops, wr.ops), (210, 110));
        assert!(close(rd.lat_ns.min, 5_000) && close(rd.lat_ns.max, 10_000));
        assert!(close(wr.lat_ns.min, 50_000) && close(wr.lat_ns.max, 1_000_000));

        // Single-direction runs carry no split.
        let f = reader.figures(512);
        assert!(f.read.is_none() && f.write.is_none());
    }

    #[test]
    fn merge_adds_counts_and_widens_window() {
        let mut a = raw(10, 4096, 100, 1000);
        let mut b = raw(30, 8192, 100, 1000);
        b.window_start_ns = 5;
        b.window_end_ns = 2000;
        a.merge_except_busy(&b);
        assert_eq!(a.counters.ops(), 40);
        assert_eq!(a.counters.bytes(), 10 * 4096 + 30 * 8192);
        assert_eq!(a.latency.count(), 40);
        assert_eq!((a.window_start_ns, a.window_end_ns), (5, 2000));
        assert_eq!(a.cpu.user_s, 1.0);
    }
}
