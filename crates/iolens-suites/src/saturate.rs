//! The scale-up test of "IOPS are dumb": concurrency doubles until throughput stops growing.
//! A device's IOPS figure means little without the concurrency it needs; this finds it.
//!
//! Under MPI the concurrency is ranks × requests per rank: every rank runs the same point on its
//! own file, so the storage sees all of them at once. With the cores of a compute node, the
//! saturation point becomes a node count — "32 nodes max out this file system".

use iolens_metrics::LatencySummary;
use std::path::PathBuf;
use std::time::Duration;

use iolens_workload::FlagWorkload;
use serde::Serialize;

use crate::{run_point, PointWarning, Processes, RankShare, SuiteContext, SuiteError, SuiteTarget, REACHED};

/// Throughput must grow by more than this per doubling to keep going.
pub const MIN_GAIN: f64 = 0.05;
/// Doublings in a row below the gain that end a curve.
pub const FLAT_STEPS: usize = 2;

#[derive(Debug, Clone)]
pub struct SaturateConfig {
    pub target: PathBuf,
    pub bs: u64,
    pub direct: bool,
    /// Concurrency through io_uring buffers in flight (default) or through sync threads.
    pub use_threads: bool,
    /// Largest concurrency, over all ranks under MPI (the first point runs regardless).
    pub max_concurrency: u32,
    /// Cores of a compute node: report how many nodes, one request in flight per core,
    /// saturate the target.
    pub cores_per_node: Option<u32>,
    pub time_per_point: Duration,
    pub region: u64,
    /// Curves to run, fio-style: randread, randwrite.
    pub loads: Vec<String>,
}

impl SaturateConfig {
    pub fn new(target: PathBuf) -> SaturateConfig {
        SaturateConfig {
            target,
            bs: 4096,
            direct: true,
            use_threads: false,
            max_concurrency: 256,
            cores_per_node: None,
            time_per_point: Duration::from_secs(2),
            region: 1 << 30,
            loads: vec!["randread".into(), "randwrite".into()],
        }
    }

    /// The requests in flight per rank, point by point: doubling from 1 while all `ranks`
    /// together stay within the cap (the first point runs regardless). A curve may stop
    /// earlier, once throughput has flattened.
    pub fn levels(&self, ranks: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(1u32), |c| c.checked_mul(2))
            .enumerate()
            .take_while(move |(i, c)| *i == 0 || ranks.saturating_mul(*c) <= self.max_concurrency)
            .map(|(_, c)| c)
    }

    /// The saturation test as run, every default filled in: the `job` of its result's envelope.
    pub fn job(&self) -> serde_json::Value {
        serde_json::json!({
            "suite": "saturate",
            "target": self.target.display().to_string(),
            "rw": self.loads,
            "bs_bytes": self.bs,
            "direct": self.direct,
            "concurrency_by": if self.use_threads { "threads" } else { "io_uring" },
            "max_concurrency": self.max_concurrency,
            "cores_per_node": self.cores_per_node,
            "time_per_point_s": self.time_per_point.as_secs_f64(),
            "region_bytes": self.region,
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SaturatePoint {
    /// Requests in flight over all processes (ranks × per rank under MPI).
    pub concurrency: u32,
    /// Under MPI: each rank's requests in flight (threads or io_uring buffers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_rank_concurrency: Option<u32>,
    pub ops: u64,
    /// Bytes the application requested over the point.
    pub bytes: u64,
    pub iops: f64,
    pub bw_bytes_s: f64,
    pub lat_ns: LatencySummary,
    /// Throughput growth over the previous point.
    pub gain: Option<f64>,
    /// The point's warnings; its JSON lists their codes, the envelope their messages.
    #[serde(rename = "warning_codes", serialize_with = "crate::warning_codes")]
    pub warnings: Vec<PointWarning>,
    /// Under MPI: each rank's part (the figures above are the aggregate over all ranks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_rank: Vec<RankShare>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SaturateCurve {
    pub rw: String,
    pub points: Vec<SaturatePoint>,
    pub peak_iops: f64,
    /// The smallest concurrency reaching 90% of the peak.
    pub saturation_concurrency: Option<u32>,
    /// With `cores_per_node`: the compute nodes whose cores, one request in flight each, reach
    /// the saturation concurrency — ceil(saturation_concurrency / cores_per_node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes_to_saturate: Option<u64>,
    /// Why the curve ended: flat throughput, or the cap.
    pub ended: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SaturateResult {
    pub suite: &'static str,
    pub target: String,
    #[serde(rename = "bs_bytes")]
    pub bs: u64,
    pub direct: bool,
    pub concurrency_by: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores_per_node: Option<u32>,
    /// Under MPI: the ranks (each ran a point's per-rank concurrency on its own file) and hosts.
    #[serde(flatten)]
    pub processes: Option<Processes>,
    pub curves: Vec<SaturateCurve>,
    /// Told to the envelope (see `iolens_output::contract::Body`).
    #[serde(skip)]
    pub interrupted: bool,
}

impl iolens_output::contract::Body for SaturateResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    /// Each point's warnings, named by the curve and the point.
    fn warnings(&self) -> Vec<iolens_output::contract::Notice> {
        let mut all = Vec::new();
        for c in &self.curves {
            for p in &c.points {
                let at = format!("{} at {} in flight", c.rw, p.concurrency);
                all.extend(p.warnings.iter().map(|w| w.notice(&at)));
            }
        }
        all
    }
}

/// The saturation point: the smallest concurrency whose throughput reaches 90% of the peak.
pub fn saturation_point(points: &[SaturatePoint]) -> Option<u32> {
    let peak = points.iter().map(|p| p.iops).fold(0.0, f64::max);
    points.iter().find(|p| peak > 0.0 && p.iops >= REACHED * peak).map(|p| p.concurrency)
}

/// Compute nodes of `cores_per_node` cores, one request in flight per core, that reach a
/// concurrency of `saturation`: ceil(saturation / cores_per_node).
pub fn nodes_to_saturate(saturation: u32, cores_per_node: u32) -> u64 {
    u64::from(saturation).div_ceil(u64::from(cores_per_node.max(1)))
}

/// Whether the last points show `FLAT_STEPS` doublings in a row gaining less than `MIN_GAIN`.
pub fn flattened(points: &[SaturatePoint]) -> bool {
    points.len() > FLAT_STEPS
        && points.iter().rev().take(FLAT_STEPS).all(|p| p.gain.is_some_and(|g| g < MIN_GAIN))
}

pub fn saturate(cfg: &SaturateConfig, ctx: &SuiteContext) -> Result<SaturateResult, SuiteError> {
    if cfg.cores_per_node == Some(0) {
        return Err(SuiteError::Config("--cores-per-node: give at least 1".into()));
    }
    let target = SuiteTarget::new(&cfg.target, "saturate", ctx)?;
    let ranks = u32::try_from(ctx.runner.ranks()).unwrap_or(u32::MAX).max(1);
    let mut curves = Vec::new();
    for rw in &cfg.loads {
        let mut points: Vec<SaturatePoint> = Vec::new();
        let mut ended = format!("reached the cap of {}", cfg.max_concurrency);
        // Requests in flight per rank; the storage sees ranks × c.
        for c in cfg.levels(ranks) {
            if ctx.stopped() {
                ended = "interrupted".into();
                break;
            }
            let (threads, qd, engine) = if cfg.use_threads { (c, 1, "sync") } else { (1, c, "io_uring") };
            let flags = FlagWorkload {
                target: target.path.clone(),
                rw: rw.clone(),
                bs: cfg.bs.to_string(),
                threads,
                qd,
                engine: engine.into(),
                direct: cfg.direct,
                size: Some(cfg.region.to_string()),
                time: Some(format!("{}ms", cfg.time_per_point.as_millis())),
                ..FlagWorkload::default()
            };
            let f = run_point(&flags, ctx)?;
            if let Some(e) = f.error {
                return Err(SuiteError::Config(e));
            }
            let gain = points.last().filter(|p| p.iops > 0.0).map(|p| f.iops / p.iops - 1.0);
            points.push(SaturatePoint {
                concurrency: ranks.saturating_mul(c),
                per_rank_concurrency: (ranks > 1).then_some(c),
                ops: f.ops,
                bytes: f.bytes,
                iops: f.iops,
                bw_bytes_s: f.bw_bytes_s,
                lat_ns: f.lat_ns,
                gain,
                warnings: f.warnings,
                per_rank: f.per_rank,
            });
            if flattened(&points) {
                ended =
                    format!("throughput grew less than {:.0}% {FLAT_STEPS} times in a row", 100.0 * MIN_GAIN);
                break;
            }
        }
        let peak_iops = points.iter().map(|p| p.iops).fold(0.0, f64::max);
        let saturation_concurrency = saturation_point(&points);
        curves.push(SaturateCurve {
            rw: rw.clone(),
            saturation_concurrency,
            nodes_to_saturate: saturation_concurrency
                .zip(cfg.cores_per_node)
                .map(|(s, k)| nodes_to_saturate(s, k)),
            points,
            peak_iops,
            ended,
        });
        if ctx.stopped() {
            break;
        }
    }
    Ok(SaturateResult {
        suite: "saturate",
        target: target.path.display().to_string(),
        bs: cfg.bs,
        direct: cfg.direct,
        concurrency_by: if cfg.use_threads { "sync threads" } else { "io_uring requests in flight" },
        cores_per_node: cfg.cores_per_node,
        processes: ctx.processes(),
        curves,
        interrupted: ctx.stopped(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(iops: &[f64]) -> Vec<SaturatePoint> {
        let mut v: Vec<SaturatePoint> = Vec::new();
        for (i, &x) in iops.iter().enumerate() {
            let gain = v.last().map(|p: &SaturatePoint| x / p.iops - 1.0);
            v.push(SaturatePoint {
                concurrency: 1 << i,
                per_rank_concurrency: None,
                ops: 0,
                bytes: 0,
                iops: x,
                bw_bytes_s: 0.0,
                lat_ns: LatencySummary::default(),
                gain,
                warnings: vec![],
                per_rank: vec![],
            });
        }
        v
    }

    #[test]
    fn levels_double_within_the_cap_and_the_first_always_runs() {
        let mut cfg = SaturateConfig::new("/tmp".into());
        cfg.max_concurrency = 32;
        assert_eq!(cfg.levels(1).collect::<Vec<_>>(), [1, 2, 4, 8, 16, 32]);
        assert_eq!(cfg.levels(4).collect::<Vec<_>>(), [1, 2, 4, 8]);
        assert_eq!(cfg.levels(64).collect::<Vec<_>>(), [1], "ranks past the cap still run one point");
        cfg.max_concurrency = u32::MAX;
        assert_eq!(cfg.levels(1).count(), 32, "no level overflows");
    }

    #[test]
    fn saturation_and_flattening() {
        let p = pts(&[1000.0, 1900.0, 3500.0, 5000.0, 5100.0, 5150.0]);
        assert!(flattened(&p), "+2% and +1%: two flat doublings");
        assert!(!flattened(&p[..5]), "one flat doubling is not enough");
        assert_eq!(saturation_point(&p), Some(8), "5000 >= 0.9 * 5150");
    }

    #[test]
    fn nodes_to_saturate_round_up() {
        // "IOPS are dumb": 4096 concurrent readers on 128-core nodes are 32 nodes.
        assert_eq!(nodes_to_saturate(4096, 128), 32);
        assert_eq!(nodes_to_saturate(4097, 128), 33);
        assert_eq!(nodes_to_saturate(8, 64), 1);
        assert_eq!(nodes_to_saturate(1, 1), 1);
    }
}
