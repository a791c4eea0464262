//! Rank 0's combined result: one aggregate over all ranks, and each rank's part.

use iolens_metrics::{
    AgentInfo, AgentRaw, AgentResult, DeviceReport, Figures, RunResult, TargetReport, VerifyReport, Warning,
    WarningCode,
};
use iolens_record::busy::UnionTotals;
use serde::Serialize;

use crate::clock::ClockCorrection;
use crate::wire::RankReport;

/// One rank's part of a combined result.
#[derive(Debug, Clone, Serialize)]
pub struct RankEntry {
    pub rank: usize,
    pub host: String,
    pub files: Vec<String>,
    /// The rank's clock minus rank 0's (mean of the estimates before and after the run).
    pub offset_ns: i64,
    /// Bound on the offset's error: half the smallest ping-pong round trip.
    pub uncertainty_ns: u64,
    /// Offset change per nanosecond between the two estimates (rate difference of the clocks).
    pub drift: f64,
    pub clock: ClockCorrection,
    pub error: Option<String>,
    /// The rank's own figures: its busy time is the union of its own agents only.
    pub figures: Figures,
    /// The rank's own result as it would have written it alone (agents, warnings, device).
    pub result: serde_json::Value,
}

/// What rank 0 prints and writes for a run over many ranks.
#[derive(Debug, Clone, Serialize)]
pub struct MpiRunResult {
    /// The aggregate over all ranks (`aggregate`: counters summed, histograms merged, busy time
    /// the union over every rank's corrected busy periods); `agents` has one row per rank.
    #[serde(flatten)]
    pub run: RunResult,
    pub ranks: usize,
    /// Distinct hosts, in rank order of first appearance.
    pub hosts: Vec<String>,
    /// file-per-process, shared-segmented or shared-strided.
    pub layout: String,
    pub mpi_library: String,
    /// The largest offset uncertainty of any rank.
    pub clock_uncertainty_ns: u64,
    /// Reading agents read the data of rank (rank + reorder_ranks) mod ranks (0: their own).
    pub reorder_ranks: usize,
    /// The ranks whose device counters make up the aggregate `device`: one per host (the
    /// lowest rank on it), since every rank of a host reads the same whole-device counters.
    /// Empty when some host has none (the aggregate `device` is then null).
    pub device_ranks: Vec<usize>,
    /// Some device serves more than one rank (several ranks on a host, or hosts under one
    /// kernel): its counters count all of them once.
    pub device_shared: bool,
    pub per_rank: Vec<RankEntry>,
    /// Each node's share of the job: its ranks' operations and bytes, their rates over the job's
    /// measured window (so the nodes' rates add up to the job's), and the union of its ranks'
    /// busy periods (so BPS is the node's own).
    pub per_node: Vec<NodeEntry>,
}

/// One node (host) of a job run over several.
#[derive(Debug, Clone, Serialize)]
pub struct NodeEntry {
    pub host: String,
    pub ranks: Vec<usize>,
    pub ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Operations and requested bytes per second of the job's measured window.
    pub iops: f64,
    pub bw_bytes_s: f64,
    /// The union of the node's ranks' in-flight intervals (on rank 0's clock).
    pub busy_s: f64,
    /// Blocks requested by the node's ranks per second of the node's busy time.
    pub bps: f64,
    /// The device the node's counters come from (as in the job's `device`), when it has one.
    pub device: Option<String>,
}

/// Each rank's node: the index of its host among the hosts in the order they first appear.
pub fn nodes_of_ranks(reports: &[RankReport]) -> Vec<usize> {
    let mut hosts: Vec<&str> = Vec::new();
    reports
        .iter()
        .map(|r| match hosts.iter().position(|h| *h == r.host) {
            Some(i) => i,
            None => {
                hosts.push(&r.host);
                hosts.len() - 1
            }
        })
        .collect()
}

/// Each node's entry: the ranks of `per_rank` grouped by their node (`node_of`, from
/// [`nodes_of_ranks`], which the unions are by too), the busy time of `unions[node]`.
fn nodes(
    per_rank: &[RankEntry],
    node_of: &[usize],
    unions: &[UnionTotals],
    wall_s: f64,
    block_unit: u64,
) -> Vec<NodeEntry> {
    let mut out: Vec<NodeEntry> = Vec::new();
    for (r, &i) in per_rank.iter().zip(node_of) {
        if i == out.len() {
            let device = r.result.pointer("/device/device").and_then(|d| d.as_str()).map(str::to_string);
            out.push(NodeEntry {
                host: r.host.clone(),
                ranks: Vec::new(),
                ops: 0,
                read_bytes: 0,
                write_bytes: 0,
                iops: 0.0,
                bw_bytes_s: 0.0,
                busy_s: 0.0,
                bps: 0.0,
                device,
            });
        }
        let n = &mut out[i];
        n.ranks.push(r.rank);
        n.ops += r.figures.ops;
        n.read_bytes += r.figures.read_bytes;
        n.write_bytes += r.figures.write_bytes;
    }
    let per_s = |v: f64, s: f64| if s > 0.0 { v / s } else { 0.0 };
    for (i, n) in out.iter_mut().enumerate() {
        let bytes = (n.read_bytes + n.write_bytes) as f64;
        n.iops = per_s(n.ops as f64, wall_s);
        n.bw_bytes_s = per_s(bytes, wall_s);
        n.busy_s = unions.get(i).map_or(0.0, |u| u.busy_ns as f64 / 1e9);
        n.bps = per_s(bytes / block_unit.max(1) as f64, n.busy_s);
    }
    out
}

/// Rank 0's run tells the envelope how the whole run went (its warnings include the ranks').
impl iolens_report::Body for MpiRunResult {
    fn interrupted(&self) -> bool {
        iolens_report::Body::interrupted(&self.run)
    }
    fn warnings(&self) -> Vec<iolens_report::Notice> {
        iolens_report::Body::warnings(&self.run)
    }
    fn error(&self) -> Option<iolens_report::Notice> {
        iolens_report::Body::error(&self.run)
    }
}

/// Everything rank 0 has after the run.
pub struct Gathered<'a> {
    /// Rank 0's own result: the base of the combined one (command, job, warnings).
    pub base: RunResult,
    pub reports: &'a [RankReport],
    pub clocks: &'a [ClockCorrection],
    /// The union over all ranks' corrected busy periods.
    pub union: UnionTotals,
    /// The union over each node's ranks' periods, by node (hosts in order of first appearance).
    pub node_unions: Vec<UnionTotals>,
    pub block_unit: u64,
    pub layout: String,
    pub mpi_library: String,
    /// `--reorder-ranks`, recorded in the result.
    pub reorder_ranks: usize,
}

/// Warnings a rank draws from comparing its own bytes with whole-device counters. When other
/// ranks share its host (and so its disk), the device also counts their I/O: these warnings
/// then say nothing about the job, and stay in the rank's own result only.
const DEVICE_WARNINGS: [&str; 3] = ["device_shared", "page_cache_reads", "writes_not_durable"];

fn text(v: &serde_json::Value, key: &str) -> String {
    v.get(key).and_then(|x| x.as_str()).unwrap_or_default().to_string()
}

/// Combines every rank's report into one result. Errors only for an unreadable histogram.
pub fn combine(g: Gathered<'_>) -> Result<MpiRunResult, String> {
    let mut total = AgentRaw::default();
    let mut per_rank = Vec::with_capacity(g.reports.len());
    let mut rows = Vec::with_capacity(g.reports.len());
    let mut hosts: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut interrupted = g.base.interrupted;
    let mut peak_pending = 0;
    let mut stalls = 0;
    let mut dropped = 0;
    let distinct_hosts: std::collections::BTreeSet<&str> =
        g.reports.iter().map(|r| r.host.as_str()).collect();
    // Some host runs several ranks, which share its devices.
    let shared_host = distinct_hosts.len() < g.reports.len();
    for (report, clock) in g.reports.iter().zip(g.clocks) {
        let mut raw = report.raw.to_raw()?;
        let figures = raw.figures(g.block_unit);
        // The window in rank 0's time, so windows of all ranks compare.
        raw.window_start_ns = clock.to_root(raw.window_start_ns);
        raw.window_end_ns = clock.to_root(raw.window_end_ns);
        total.merge_except_busy(&raw);
        if !hosts.contains(&report.host) {
            hosts.push(report.host.clone());
        }
        let r = &report.result;
        // The rank's own document: its envelope's error is {code, message}.
        let error = r.pointer("/error/message").and_then(|e| e.as_str()).map(str::to_string);
        if let Some(e) = &error {
            errors.push(format!("rank {} on {}: {e}", report.rank, report.host));
        }
        interrupted |= r.get("interrupted").and_then(|v| v.as_bool()).unwrap_or(false);
        peak_pending = peak_pending.max(r.get("union_peak_pending").and_then(|v| v.as_u64()).unwrap_or(0));
        stalls += r.get("union_ring_stalls").and_then(|v| v.as_u64()).unwrap_or(0);
        dropped += r.get("trace_dropped_records").and_then(|v| v.as_u64()).unwrap_or(0);
        if report.rank != 0 {
            let warnings_of_rank = r.get("warnings").and_then(|w| w.as_array()).into_iter().flatten();
            for w in warnings_of_rank
                .filter(|w| !(shared_host && DEVICE_WARNINGS.contains(&text(w, "code").as_str())))
            {
                warnings.push(Warning::new(
                    WarningCode::RankWarning,
                    format!("rank {} [{}]: {}", report.rank, text(w, "code"), text(w, "message")),
                ));
            }
        }
        // The row shows the rank's first agent's settings (ranks usually run the same job).
        let first = r.get("agents").and_then(|a| a.get(0)).cloned().unwrap_or_default();
        let agents = r.get("agents").and_then(|a| a.as_array()).map_or(0, |a| a.len());
        rows.push(AgentResult {
            info: AgentInfo {
                name: if agents > 1 {
                    format!("rank {} ({agents} agents)", report.rank)
                } else {
                    format!("rank {}", report.rank)
                },
                target: format!("{}:{}", report.host, report.files.join(",")),
                rw: text(&first, "rw"),
                bs: text(&first, "bs_spec"),
                bs_bytes: first.get("bs_bytes").and_then(|v| v.as_u64()),
                engine: text(&first, "engine"),
                qd: first.get("qd").and_then(|v| v.as_u64()).unwrap_or(1) as u32,
                direct: first.get("direct").and_then(|v| v.as_bool()).unwrap_or(false),
                random_map: first.get("random_map").and_then(|v| v.as_bool()).unwrap_or(false),
                rate: first.get("rate_iops").and_then(|v| v.as_f64()).unwrap_or(0.0),
            },
            figures: figures.clone(),
        });
        per_rank.push(RankEntry {
            rank: report.rank,
            host: report.host.clone(),
            files: report.files.clone(),
            offset_ns: clock.offset_ns(),
            uncertainty_ns: clock.uncertainty_ns(),
            drift: clock.drift,
            clock: *clock,
            error,
            figures,
            result: report.result.clone(),
        });
    }
    total.busy = g.union;
    let aggregate = total.figures(g.block_unit);
    let clock_uncertainty_ns = g.clocks.iter().map(|c| c.uncertainty_ns()).max().unwrap_or(0);
    let device = hosts_device(g.reports, &aggregate);
    let hosts_share_a_device = device.as_ref().is_some_and(|(_, _, shared)| !shared.is_empty());
    let mut run = g.base;
    // Rank 0's own warnings stay (they describe the job), but for its device ones: other ranks'
    // I/O is in the counters it compared its own bytes with.
    if shared_host || hosts_share_a_device {
        run.warnings.retain(|w| !DEVICE_WARNINGS.contains(&w.code.as_str()));
    }
    run.warnings.extend(warnings);
    let total_uncertainty: u64 = g.clocks.iter().map(|c| c.uncertainty_ns()).sum();
    if total_uncertainty as f64 > 0.01 * g.union.busy_ns as f64 {
        run.warnings.push(Warning::new(
            WarningCode::ClockUncertain,
            format!(
                "the ranks' clock offsets are uncertain by {:.1} µs in total, more than 1% of the busy time ({:.1} µs): \
                 the global busy time may be off by that much; run longer",
                total_uncertainty as f64 / 1e3,
                g.union.busy_ns as f64 / 1e3
            ),
        ));
    }
    let (device, device_ranks) = match device {
        Some((d, ranks, shared)) => {
            for (device, hosts) in shared {
                run.warnings.push(Warning::new(
                    WarningCode::DeviceShared,
                    format!(
                        "hosts {} run under one kernel and read the same device {device}: its counters are counted once",
                        hosts.join(", ")
                    ),
                ));
            }
            (Some(d), ranks)
        }
        None => (None, Vec::new()),
    };
    run.verify = ranks_verify(g.reports);
    ranks_targets(&mut run.targets, g.reports);
    let device_shared = shared_host || hosts_share_a_device;
    run.aggregate = aggregate;
    run.agents = rows;
    run.device = device;
    run.interrupted = interrupted;
    run.error = if errors.is_empty() { None } else { Some(errors.join("; ")) };
    run.union_peak_pending = peak_pending;
    run.union_ring_stalls = stalls;
    run.trace_file = None;
    run.trace_dropped_records = dropped;
    let node_of = nodes_of_ranks(g.reports);
    let per_node = nodes(&per_rank, &node_of, &g.node_unions, run.aggregate.wall_s, g.block_unit);
    Ok(MpiRunResult {
        run,
        ranks: g.reports.len(),
        hosts,
        layout: g.layout,
        mpi_library: g.mpi_library,
        clock_uncertainty_ns,
        reorder_ranks: g.reorder_ranks,
        device_ranks,
        device_shared,
        per_node,
        per_rank,
    })
}

/// Every rank's verification summed: counts and times added, each rank's listed failures kept
/// (their agent prefixed with the rank). `None` when no rank verified.
/// Every rank's targets after rank 0's: what each rank's preparation did to its files (a shared
/// file once, as rank 0 prepared it).
fn ranks_targets(targets: &mut Vec<TargetReport>, reports: &[RankReport]) {
    for report in reports.iter().filter(|r| r.rank != 0) {
        let listed = report.result.get("targets").and_then(|t| t.as_array()).into_iter().flatten();
        for t in listed {
            let path = text(t, "path");
            if targets.iter().any(|x| x.path == path) {
                continue;
            }
            let flag = |key: &str| t.get(key).and_then(|v| v.as_bool()).unwrap_or(false);
            targets.push(TargetReport {
                created: flag("created"),
                laid_out_bytes: t.get("laid_out_bytes").and_then(|v| v.as_u64()).unwrap_or(0),
                cache_dropped: flag("cache_dropped"),
                path,
            });
        }
    }
}

fn ranks_verify(reports: &[RankReport]) -> Option<VerifyReport> {
    let mut total: Option<VerifyReport> = None;
    let mut generations = Vec::new();
    for report in reports {
        let Some(v) = report.result.get("verify").filter(|v| !v.is_null()) else { continue };
        let Ok(v) = serde_json::from_value::<VerifyReport>(v.clone()) else { continue };
        let t = total.get_or_insert_with(VerifyReport::default);
        for kind in v.kind.split('+').filter(|k| !k.is_empty()) {
            if !t.kind.split('+').any(|k| k == kind) {
                t.kind = if t.kind.is_empty() { kind.to_string() } else { format!("{}+{kind}", t.kind) };
            }
        }
        generations.extend(v.generation_written);
        t.blocks_written += v.blocks_written;
        t.blocks_checked += v.blocks_checked;
        t.failures_total += v.failures_total;
        t.cost_s += v.cost_s;
        t.read_back_s += v.read_back_s;
        t.failures.extend(v.failures.into_iter().map(|mut f| {
            f.agent = format!("rank {} {}", report.rank, f.agent);
            f
        }));
    }
    if let Some(t) = &mut total {
        // Each rank stamps its own generation unless the job names one; per_rank has each.
        generations.dedup();
        t.generation_written = if generations.len() == 1 { generations.first().copied() } else { None };
    }
    total
}

/// The device of the whole job: its counters, the ranks whose reports make them up, and each
/// device that several hosts read, with those hosts.
type JobDevice = (DeviceReport, Vec<usize>, Vec<(String, Vec<String>)>);

/// The device counters of the whole job: one report per host (its lowest rank's; every rank of
/// a host reads the same whole-device counters, so adding them would count the disk once per
/// rank), summed over hosts. `None` when some host has no device report.
///
/// Hosts under one kernel (the same boot id: containers, the nodes of a simulated cluster) read
/// one disk's counters: a device is known by the kernel and its name, counted once, and the
/// hosts that share it are returned as (device, hosts) for a warning.
fn hosts_device(reports: &[RankReport], aggregate: &Figures) -> Option<JobDevice> {
    let mut seen_hosts: Vec<&str> = Vec::new();
    let mut per_host: Vec<(&str, usize, DeviceReport)> = Vec::new();
    // Per device known by its kernel: the hosts that read it.
    let mut sharing: Vec<((&str, String), Vec<String>)> = Vec::new();
    for report in reports {
        if seen_hosts.contains(&report.host.as_str()) {
            continue;
        }
        seen_hosts.push(&report.host);
        let device = report.result.get("device").filter(|d| !d.is_null())?;
        let device: DeviceReport = serde_json::from_value(device.clone()).ok()?;
        if !report.boot.is_empty() {
            let key = (report.boot.as_str(), device.device.clone());
            match sharing.iter_mut().find(|(k, _)| *k == key) {
                Some((_, hosts)) => {
                    hosts.push(report.host.clone());
                    continue;
                }
                None => sharing.push((key, vec![report.host.clone()])),
            }
        }
        per_host.push((&report.host, report.rank, device));
    }
    let shared: Vec<(String, Vec<String>)> = sharing
        .into_iter()
        .filter(|(_, hosts)| hosts.len() > 1)
        .map(|((_, dev), hosts)| (dev, hosts))
        .collect();
    let ranks = per_host.iter().map(|(_, rank, _)| *rank).collect();
    let mut sum = if per_host.len() == 1 {
        per_host.pop()?.2
    } else {
        let n = per_host.len() as f64;
        let mut sum = DeviceReport { whole_device: true, ..DeviceReport::default() };
        let mut names = Vec::new();
        let mut filesystems: Vec<&str> = Vec::new();
        for (host, _, d) in &per_host {
            names.push(format!("{host}:{}", d.device));
            if !filesystems.contains(&d.filesystem.as_str()) {
                filesystems.push(&d.filesystem);
            }
            sum.window_s = sum.window_s.max(d.window_s);
            sum.read_ops += d.read_ops;
            sum.write_ops += d.write_ops;
            sum.read_bytes += d.read_bytes;
            sum.write_bytes += d.write_bytes;
            sum.read_merges += d.read_merges;
            sum.write_merges += d.write_merges;
            sum.flushes += d.flushes;
            // Busy shares of different devices do not add up: their mean does.
            sum.util += d.util / n;
            sum.avg_queue += d.avg_queue;
        }
        sum.device = names.join("+");
        sum.filesystem = filesystems.join("+");
        // The hosts' per-second samples start at different instants: none is kept.
        sum
    };
    // Against the bytes of every rank, which all went to these devices.
    let amp = |dev: u64, app: u64| (app > 0).then(|| dev as f64 / app as f64);
    sum.read_amplification = amp(sum.read_bytes, aggregate.read_bytes);
    sum.write_amplification = amp(sum.write_bytes, aggregate.write_bytes);
    sum.amplification = amp(sum.read_bytes + sum.write_bytes, aggregate.read_bytes + aggregate.write_bytes);
    Some((sum, ranks, shared))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::OffsetEstimate;
    use crate::wire::RawTotals;

    fn report(rank: usize, ops: u64, busy_ns: u64) -> RankReport {
        let mut raw = AgentRaw::default();
        raw.counters.write_ops = ops;
        raw.counters.write_bytes = ops * 4096;
        raw.counters.latency_sum_ns = ops * 10_000;
        for _ in 0..ops {
            raw.latency.record(10_000 * (rank as u64 + 1));
        }
        raw.window_start_ns = 1_000_000 + rank as u64 * 5_000_000;
        raw.window_end_ns = raw.window_start_ns + 1_000_000_000;
        raw.busy = UnionTotals { busy_ns, periods: 1, first_start: raw.window_start_ns, last_end: 0 };
        RankReport {
            rank,
            host: if rank < 2 { "a".into() } else { "b".into() },
            boot: String::new(),
            raw: RawTotals::from_raw(&raw),
            files: vec![format!("/d/iolens-j-a0-r{rank}.dat")],
            result: serde_json::json!({"agents": [{"rw": "write", "bs_spec": "4KiB", "engine": "sync", "qd": 1}],
                "warnings": [{"code": "few_ops", "message": "m"}], "error": null}),
        }
    }

    #[test]
    fn aggregate_sums_ranks_and_takes_the_global_union() {
        let reports: Vec<RankReport> = (0..4).map(|r| report(r, 100 * (r as u64 + 1), 400_000_000)).collect();
        let skew = |r: usize| {
            let e = OffsetEstimate {
                offset_ns: r as i64 * 5_000_000,
                uncertainty_ns: 2_000,
                rtt_ns: 4_000,
                at_ns: 1,
            };
            ClockCorrection::new(e, e)
        };
        let clocks: Vec<ClockCorrection> = (0..4).map(skew).collect();
        let union = UnionTotals { busy_ns: 600_000_000, periods: 3, first_start: 1, last_end: 2 };
        let m = combine(Gathered {
            base: RunResult { job: "j".into(), ..RunResult::default() },
            reports: &reports,
            clocks: &clocks,
            union,
            node_unions: vec![
                UnionTotals { busy_ns: 400_000_000, ..UnionTotals::default() },
                UnionTotals { busy_ns: 500_000_000, ..UnionTotals::default() },
            ],
            block_unit: 4096,
            layout: "file-per-process".into(),
            mpi_library: "test".into(),
            reorder_ranks: 0,
        })
        .unwrap();
        assert_eq!(m.ranks, 4);
        // Issue 25, item 8: each node's share, its busy time its own ranks' union.
        let hosts: Vec<(&str, &[usize])> =
            m.per_node.iter().map(|n| (n.host.as_str(), &n.ranks[..])).collect();
        assert_eq!(hosts, [("a", &[0, 1][..]), ("b", &[2, 3][..])]);
        let ops: u64 = m.per_node.iter().map(|n| n.ops).sum();
        assert_eq!(ops, m.run.aggregate.ops, "the nodes' operations are the job's");
        let iops: f64 = m.per_node.iter().map(|n| n.iops).sum();
        assert!((iops - m.run.aggregate.iops).abs() <= 1e-9 * iops, "{iops} vs {}", m.run.aggregate.iops);
        assert_eq!((m.per_node[0].busy_s, m.per_node[1].busy_s), (0.4, 0.5));
        let b = &m.per_node[1];
        assert!((b.bps - (b.write_bytes as f64 / 4096.0) / 0.5).abs() < 1e-6, "{b:?}");
        assert_eq!(m.hosts, vec!["a".to_string(), "b".to_string()]);
        let sum: u64 = m.per_rank.iter().map(|r| r.figures.bytes).sum();
        assert_eq!(m.run.aggregate.bytes, sum);
        assert_eq!(m.run.aggregate.ops, 1000);
        // Corrected windows coincide: the aggregate window is one second.
        assert!((m.run.aggregate.wall_s - 1.0).abs() < 1e-9, "{}", m.run.aggregate.wall_s);
        assert!((m.run.aggregate.busy_s - 0.6).abs() < 1e-12);
        assert!((m.run.aggregate.bps - 1000.0 / 0.6).abs() < 1e-6);
        // Histograms merged by bucket: the 400 samples of rank 3 (40 µs) are the top 40%.
        assert!(m.run.aggregate.lat_ns.p50 >= 29_000 && m.run.aggregate.lat_ns.p50 <= 30_100);
        assert_eq!(m.run.agents.len(), 4);
        assert_eq!(m.per_rank[2].offset_ns, 10_000_000);
        assert_eq!(m.clock_uncertainty_ns, 2_000);
        assert!(m.run.warnings.iter().filter(|w| w.code == WarningCode::RankWarning).count() == 3);
        assert!(!m.run.warnings.iter().any(|w| w.code == WarningCode::ClockUncertain));
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["ranks"], 4);
        assert!(json["aggregate"]["bytes"].is_u64() && json["per_rank"][3]["offset_ns"].is_i64());
    }

    #[test]
    fn uncertain_clocks_and_rank_errors_are_reported() {
        let mut reports: Vec<RankReport> = (0..2).map(|r| report(r, 10, 1_000_000)).collect();
        reports[1].result["error"] = serde_json::json!({"code": "run_failed", "message": "disk full"});
        let e = OffsetEstimate { offset_ns: 0, uncertainty_ns: 20_000, rtt_ns: 40_000, at_ns: 1 };
        let clocks = [ClockCorrection::identity(), ClockCorrection::new(e, e)];
        let m = combine(Gathered {
            base: RunResult::default(),
            reports: &reports,
            clocks: &clocks,
            union: UnionTotals { busy_ns: 1_000_000, ..UnionTotals::default() },
            node_unions: Vec::new(),
            block_unit: 512,
            layout: "x".into(),
            mpi_library: "test".into(),
            reorder_ranks: 0,
        })
        .unwrap();
        assert!(m.run.warnings.iter().any(|w| w.code == WarningCode::ClockUncertain));
        assert_eq!(m.run.error.as_deref(), Some("rank 1 on a: disk full"));
    }

    fn combined(reports: &[RankReport]) -> MpiRunResult {
        let clocks: Vec<ClockCorrection> = reports.iter().map(|_| ClockCorrection::identity()).collect();
        combine(Gathered {
            base: RunResult::default(),
            reports,
            clocks: &clocks,
            union: UnionTotals { busy_ns: 1_000_000_000, ..UnionTotals::default() },
            node_unions: Vec::new(),
            block_unit: 4096,
            layout: "file-per-process".into(),
            mpi_library: "test".into(),
            reorder_ranks: 0,
        })
        .unwrap()
    }

    fn verify_json(checked: u64, failures: u64, generation: u64) -> serde_json::Value {
        let failure = serde_json::json!({"agent": "agent0", "file": "/d/f", "offset": 0, "kind": "stale",
            "phase": "read", "expected": {"magic": "00", "offset": 0, "size": 4096, "generation": generation},
            "found": null, "first_bad_byte": null, "first_bad_offset": null, "bytes_read": 4096});
        serde_json::json!({"kind": "crc32c", "generation_written": generation, "blocks_written": checked,
            "blocks_checked": checked, "failures_total": failures,
            "failures": vec![failure; failures.min(2) as usize], "cost_s": 0.5, "read_back_s": 0.25,
            "included_in_io_time": false})
    }

    #[test]
    fn verification_counts_are_summed_over_ranks_and_failures_name_the_rank() {
        let mut reports: Vec<RankReport> = (0..3).map(|r| report(r, 10, 1_000)).collect();
        reports[0].result["verify"] = verify_json(100, 0, 7);
        reports[1].result["verify"] = verify_json(200, 5, 7);
        reports[2].result["verify"] = verify_json(300, 1, 9);
        let m = combined(&reports);
        let v = m.run.verify.as_ref().expect("an aggregate verify block");
        assert_eq!(v.blocks_checked, 600);
        assert_eq!(v.blocks_written, 600);
        assert_eq!(v.failures_total, 6);
        assert_eq!(v.failures.len(), 3, "every rank's listed failures: {:?}", v.failures);
        assert_eq!(v.failures[0].agent, "rank 1 agent0");
        assert_eq!(v.failures[2].agent, "rank 2 agent0");
        assert!((v.cost_s - 1.5).abs() < 1e-12 && (v.read_back_s - 0.75).abs() < 1e-12);
        assert_eq!(v.kind, "crc32c");
        // Ranks stamped different generations: no one generation stands for all of them.
        assert_eq!(v.generation_written, None);
        assert_eq!(m.per_rank[1].result["verify"]["failures_total"], 5);
    }

    #[test]
    fn without_verification_there_is_no_verify_block() {
        let reports: Vec<RankReport> = (0..2).map(|r| report(r, 10, 1_000)).collect();
        assert!(combined(&reports).run.verify.is_none());
    }

    fn device_json(name: &str, write_bytes: u64, util: f64) -> serde_json::Value {
        serde_json::to_value(DeviceReport {
            device: name.into(),
            filesystem: "ext4".into(),
            window_s: 1.0,
            whole_device: true,
            write_ops: write_bytes / 4096,
            write_bytes,
            util,
            avg_queue: 2.0,
            write_amplification: Some(1.0),
            amplification: Some(1.0),
            ..DeviceReport::default()
        })
        .unwrap()
    }

    #[test]
    fn a_device_shared_by_the_ranks_of_one_host_is_counted_once() {
        // 4 ranks on one host wrote 1000 blocks of 4096 bytes in all; each rank's counters are
        // the whole disk's, so each saw all 1000, whichever rank read them.
        let mut reports: Vec<RankReport> = (0..4).map(|r| report(r, 100 * (r as u64 + 1), 1_000)).collect();
        for r in &mut reports {
            r.host = "a".into();
            r.result["device"] = device_json("sda", 1000 * 4096, 0.5);
            r.result["warnings"] = serde_json::json!([{"code": "device_shared", "message": "4x"},
                {"code": "writes_not_durable", "message": "m"}, {"code": "few_ops", "message": "m"}]);
        }
        let m = combined(&reports);
        // Each rank compared its own bytes with the disk all four wrote: not the job's warnings.
        let texts: Vec<&str> = m.run.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(texts.iter().all(|t| t.contains("[few_ops]")), "{texts:?}");
        assert_eq!(m.per_rank[1].result["warnings"][0]["code"], "device_shared", "kept per rank");
        let d = m.run.device.as_ref().expect("one host: its device");
        assert_eq!(d.write_bytes, 1000 * 4096, "not 4 times the same disk");
        assert_eq!(d.device, "sda");
        assert!(m.device_shared);
        assert_eq!(m.device_ranks, vec![0]);
        // Amplification against every rank's bytes, not one rank's.
        assert_eq!(d.write_amplification, Some(1.0));
        assert_eq!(m.per_rank[3].result["device"]["write_bytes"], 1000 * 4096);
    }

    /// Issue 25, defect 6: hosts under one kernel (containers, namespaces of a simulated
    /// cluster) read the same disk's counters; each host's share of it is not another disk.
    #[test]
    fn a_device_hosts_share_under_one_kernel_is_counted_once_with_a_warning() {
        let mut reports: Vec<RankReport> = (0..4).map(|r| report(r, 250, 1_000)).collect();
        for (r, host) in reports.iter_mut().zip(["node1", "node1", "node2", "node3"]) {
            r.host = host.into();
            r.boot = "7c1e".into();
            r.result["device"] = device_json("vda", 1000 * 4096, 0.5);
        }
        let m = combined(&reports);
        let d = m.run.device.as_ref().expect("the one disk");
        assert_eq!((d.device.as_str(), d.write_bytes), ("vda", 1000 * 4096), "counted once, not per host");
        assert_eq!(d.write_amplification, Some(1.0));
        let shared = m.run.warnings.iter().find(|w| w.code == WarningCode::DeviceShared);
        let shared = shared.unwrap_or_else(|| panic!("no warning: {:?}", m.run.warnings));
        assert!(
            shared.message.contains("node1, node2, node3") && shared.message.contains("vda"),
            "{shared:?}"
        );
        // Different kernels: different disks of the same name, summed.
        reports[2].boot = "another".into();
        reports[3].boot = "a third".into();
        assert_eq!(combined(&reports).run.device.unwrap().write_bytes, 3 * 1000 * 4096);
    }

    #[test]
    fn devices_of_several_hosts_are_summed_once_per_host() {
        // Ranks 0, 1 on host a, ranks 2, 3 on host b.
        let mut reports: Vec<RankReport> = (0..4).map(|r| report(r, 250, 1_000)).collect();
        for r in &mut reports {
            let (bytes, util) = if r.host == "a" { (600 * 4096, 0.2) } else { (400 * 4096, 0.6) };
            r.result["device"] = device_json("sda", bytes, util);
        }
        let m = combined(&reports);
        let d = m.run.device.as_ref().expect("every host has a device");
        assert_eq!(d.write_bytes, 1000 * 4096);
        assert_eq!(d.write_ops, 1000);
        assert_eq!(d.device, "a:sda+b:sda");
        assert!((d.util - 0.4).abs() < 1e-12, "mean over the devices: {}", d.util);
        assert!((d.avg_queue - 4.0).abs() < 1e-12, "requests in flight add up: {}", d.avg_queue);
        assert_eq!(d.write_amplification, Some(1.0));
        assert!(d.samples.is_empty(), "the hosts' samples are not aligned in time");
        assert!(m.device_shared);
        assert_eq!(m.device_ranks, vec![0, 2]);
    }

    #[test]
    fn a_host_without_a_device_leaves_the_aggregate_without_one() {
        let mut reports: Vec<RankReport> = (0..4).map(|r| report(r, 10, 1_000)).collect();
        reports[0].result["device"] = device_json("sda", 4096, 0.1);
        reports[1].result["device"] = device_json("sda", 4096, 0.1);
        let m = combined(&reports);
        assert!(m.run.device.is_none(), "host b's device is unknown: a sum would be too small");
        assert!(m.device_ranks.is_empty());
    }
}
