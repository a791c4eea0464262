//! Rank 0's combined result: one aggregate over all ranks, and each rank's part.

use iolens_metrics::{AgentInfo, AgentRaw, AgentResult, Figures, RunResult, Warning, WarningCode};
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
    pub per_rank: Vec<RankEntry>,
}

/// Everything rank 0 has after the run.
pub struct Gathered<'a> {
    /// Rank 0's own result: the base of the combined one (command, job, warnings).
    pub base: RunResult,
    pub reports: &'a [RankReport],
    pub clocks: &'a [ClockCorrection],
    /// The union over all ranks' corrected busy periods.
    pub union: UnionTotals,
    pub block_unit: u64,
    pub layout: String,
    pub mpi_library: String,
}

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
        let error = r.get("error").and_then(|e| e.as_str()).map(str::to_string);
        if let Some(e) = &error {
            errors.push(format!("rank {} on {}: {e}", report.rank, report.host));
        }
        interrupted |= r.get("interrupted").and_then(|v| v.as_bool()).unwrap_or(false);
        peak_pending = peak_pending.max(r.get("union_peak_pending").and_then(|v| v.as_u64()).unwrap_or(0));
        stalls += r.get("union_ring_stalls").and_then(|v| v.as_u64()).unwrap_or(0);
        dropped += r.get("trace_dropped_records").and_then(|v| v.as_u64()).unwrap_or(0);
        if report.rank != 0 {
            for w in r.get("warnings").and_then(|w| w.as_array()).into_iter().flatten() {
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
                bs: text(&first, "bs"),
                engine: text(&first, "engine"),
                qd: first.get("qd").and_then(|v| v.as_u64()).unwrap_or(1) as u32,
                direct: first.get("direct").and_then(|v| v.as_bool()).unwrap_or(false),
                random_map: first.get("random_map").and_then(|v| v.as_bool()).unwrap_or(false),
                rate: first.get("rate").and_then(|v| v.as_f64()).unwrap_or(0.0),
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
    let mut run = g.base;
    // Rank 0's own warnings stay (they describe the job); the device report is rank 0's node
    // only, so it stays in rank 0's entry, not on the aggregate.
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
    run.aggregate = aggregate;
    run.agents = rows;
    run.device = None;
    run.interrupted = interrupted;
    run.error = if errors.is_empty() { None } else { Some(errors.join("; ")) };
    run.union_peak_pending = peak_pending;
    run.union_ring_stalls = stalls;
    run.trace_file = None;
    run.trace_dropped_records = dropped;
    Ok(MpiRunResult {
        run,
        ranks: g.reports.len(),
        hosts,
        layout: g.layout,
        mpi_library: g.mpi_library,
        clock_uncertainty_ns,
        per_rank,
    })
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
            raw: RawTotals::from_raw(&raw),
            files: vec![format!("/d/iolens-j-a0-r{rank}.dat")],
            result: serde_json::json!({"agents": [{"rw": "write", "bs": "4KiB", "engine": "sync", "qd": 1}],
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
            block_unit: 4096,
            layout: "file-per-process".into(),
            mpi_library: "test".into(),
        })
        .unwrap();
        assert_eq!(m.ranks, 4);
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
        reports[1].result["error"] = "disk full".into();
        let e = OffsetEstimate { offset_ns: 0, uncertainty_ns: 20_000, rtt_ns: 40_000, at_ns: 1 };
        let clocks = [ClockCorrection::identity(), ClockCorrection::new(e, e)];
        let m = combine(Gathered {
            base: RunResult::default(),
            reports: &reports,
            clocks: &clocks,
            union: UnionTotals { busy_ns: 1_000_000, ..UnionTotals::default() },
            block_unit: 512,
            layout: "x".into(),
            mpi_library: "test".into(),
        })
        .unwrap();
        assert!(m.run.warnings.iter().any(|w| w.code == WarningCode::ClockUncertain));
        assert_eq!(m.run.error.as_deref(), Some("rank 1 on a: disk full"));
    }
}
