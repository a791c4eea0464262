//! The block-size sweep of the `iops` program: at a fixed concurrency, the request size doubles
//! from one sector to 16 MiB. Small sizes show the IOPS the device sustains, large ones its
//! bandwidth; the knee between them is where request size stops being free.

use iolens_metrics::LatencySummary;
use std::path::PathBuf;
use std::time::Duration;

use iolens_workload::{format_bytes, FlagWorkload};
use serde::Serialize;

use crate::{run_point, PointWarning, Processes, RankShare, SuiteContext, SuiteError, SuiteTarget, REACHED};

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    pub target: PathBuf,
    /// fio-style: randread (default), read, randwrite, write, randrw, rw.
    pub rw: String,
    /// Concurrency levels (threads); one curve each.
    pub threads: Vec<u32>,
    pub min_size: u64,
    pub max_size: u64,
    /// Factor between consecutive sizes (2 as the iops program; 4 for a short sweep).
    pub growth: u64,
    /// O_DIRECT (default): the device, not the page cache.
    pub direct: bool,
    pub time_per_point: Duration,
    /// Size of the file the points address.
    pub region: u64,
    /// A point below this many IO/s ends its curve, as `iops` does.
    pub floor_iops: f64,
}

impl SweepConfig {
    pub fn new(target: PathBuf) -> SweepConfig {
        SweepConfig {
            target,
            rw: "randread".into(),
            threads: vec![32],
            min_size: 512,
            max_size: 16 << 20,
            growth: 2,
            direct: true,
            time_per_point: Duration::from_secs(2),
            region: 1 << 30,
            floor_iops: 1.0,
        }
    }

    /// The sweep as run, every default filled in: the `job` of its result's envelope.
    pub fn job(&self) -> serde_json::Value {
        serde_json::json!({
            "suite": "sweep",
            "target": self.target.display().to_string(),
            "rw": self.rw,
            "threads": self.threads,
            "min_bs_bytes": self.min_size,
            "max_bs_bytes": self.max_size,
            "growth": self.growth,
            "direct": self.direct,
            "time_per_point_s": self.time_per_point.as_secs_f64(),
            "region_bytes": self.region,
            "floor_iops": self.floor_iops,
        })
    }

    /// The request sizes: growing by `growth` (doubling by default) from `min_size` to `max_size`.
    pub fn sizes(&self) -> Vec<u64> {
        std::iter::successors(Some(self.min_size.max(1)), |s| s.checked_mul(self.growth.max(2)))
            .take_while(|s| *s <= self.max_size)
            .collect()
    }
}

/// One point of a curve; rates are per wall second, as `iops` prints them.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    pub threads: u32,
    #[serde(rename = "bs_bytes")]
    pub bs: u64,
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bw_bytes_s: f64,
    pub bps: f64,
    pub lat_ns: LatencySummary,
    /// Device utilization over the point, when a block device is behind the target.
    pub device_util: Option<f64>,
    /// The point's warnings; its JSON lists their codes, the envelope their messages.
    #[serde(rename = "warning_codes", serialize_with = "crate::warning_codes")]
    pub warnings: Vec<PointWarning>,
    /// Under MPI: each rank's part (the figures above are the aggregate over all ranks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_rank: Vec<RankShare>,
}

/// One curve's findings.
#[derive(Debug, Clone, Serialize)]
pub struct SweepCurve {
    pub threads: u32,
    pub points: Vec<SweepPoint>,
    /// The largest size, at or after the IOPS peak, with IOPS at least 90% of the peak (see
    /// [`knee`]).
    #[serde(rename = "knee_bs_bytes")]
    pub knee_bs: Option<u64>,
    /// Set when the knee is the largest size measured, so the true knee may lie beyond it.
    pub knee_note: Option<String>,
    /// The smallest size reaching 90% of the peak bandwidth.
    #[serde(rename = "bw90_bs_bytes")]
    pub bw90_bs: Option<u64>,
    /// Why the curve ended before `max_size`.
    pub stopped_early: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepResult {
    pub suite: &'static str,
    pub target: String,
    pub rw: String,
    pub direct: bool,
    pub time_per_point_s: f64,
    /// Under MPI: the ranks (each ran `threads` threads on its own file) and their hosts.
    #[serde(flatten)]
    pub processes: Option<Processes>,
    pub curves: Vec<SweepCurve>,
    /// Told to the envelope (see `iolens_output::contract::Body`).
    #[serde(skip)]
    pub interrupted: bool,
}

impl iolens_output::contract::Body for SweepResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    /// Each point's warnings, named by the point.
    fn warnings(&self) -> Vec<iolens_output::contract::Notice> {
        let mut all = Vec::new();
        for c in &self.curves {
            for p in &c.points {
                let at = format!("{} threads, {}", c.threads, format_bytes(p.bs));
                all.extend(p.warnings.iter().map(|w| w.notice(&at)));
            }
        }
        all
    }
}

/// The knee and the 90%-bandwidth size of a curve.
pub fn findings(points: &[SweepPoint]) -> (Option<u64>, Option<u64>) {
    let peak_bw = points.iter().map(|p| p.bw_bytes_s).fold(0.0, f64::max);
    let knee = knee(points);
    let bw90 = points.iter().find(|p| peak_bw > 0.0 && p.bw_bytes_s >= REACHED * peak_bw).map(|p| p.bs);
    (knee, bw90)
}

/// The knee of the IOPS curve: the largest size, at or after the peak, whose IOPS is still at
/// least 90% of the peak. Up to it a larger request costs (almost) no IOPS; beyond it the device
/// is moving bytes, not serving requests.
///
/// Counting from the peak rather than from the smallest size keeps the knee defined for the
/// rise-then-fall curves real devices give (sub-sector and tiny requests slower than the peak),
/// and taking the largest such size rather than the end of the first unbroken run looks past a
/// single noisy dip. Points whose IOPS is not a finite number are not measurements and are
/// skipped. `None` only when no point has positive IOPS.
pub fn knee(points: &[SweepPoint]) -> Option<u64> {
    let measured = |p: &&SweepPoint| p.iops.is_finite();
    let (peak_at, peak) = points.iter().enumerate().filter(|(_, p)| measured(p)).fold(
        None,
        |best: Option<(usize, f64)>, (i, p)| match best {
            Some((_, b)) if b >= p.iops => best,
            _ => Some((i, p.iops)),
        },
    )?;
    if peak <= 0.0 {
        return None;
    }
    points[peak_at..].iter().filter(measured).rfind(|p| p.iops >= REACHED * peak).map(|p| p.bs)
}

/// Why the knee is only a bound: IOPS had not fallen below 90% of the peak by the largest size
/// measured, so the true knee may lie beyond it.
pub fn knee_note(points: &[SweepPoint]) -> Option<String> {
    let knee = knee(points)?;
    let largest = points.iter().filter(|p| p.iops.is_finite()).map(|p| p.bs).max()?;
    (knee == largest).then(|| {
        format!(
            "IOPS stayed within 90% of the peak up to the largest size measured ({}): the knee lies at or beyond it",
            format_bytes(largest)
        )
    })
}

pub fn sweep(cfg: &SweepConfig, ctx: &SuiteContext) -> Result<SweepResult, SuiteError> {
    if cfg.threads.is_empty() || cfg.threads.contains(&0) {
        return Err(SuiteError::Config("--threads needs positive thread counts".into()));
    }
    if cfg.max_size > cfg.region {
        return Err(SuiteError::Config(format!(
            "the largest size ({}) exceeds the region ({}); give a larger --size",
            format_bytes(cfg.max_size),
            format_bytes(cfg.region)
        )));
    }
    let target = SuiteTarget::new(&cfg.target, "sweep", ctx)?;
    let mut curves = Vec::new();
    'curves: for &threads in &cfg.threads {
        let mut points = Vec::new();
        let mut stopped_early = None;
        for bs in cfg.sizes() {
            if ctx.stopped() {
                curves.push(curve(threads, points, stopped_early));
                break 'curves;
            }
            let flags = FlagWorkload {
                target: target.path.clone(),
                rw: cfg.rw.clone(),
                bs: bs.to_string(),
                threads,
                direct: cfg.direct,
                size: Some(cfg.region.to_string()),
                time: Some(format!("{}ms", cfg.time_per_point.as_millis())),
                ..FlagWorkload::default()
            };
            let f = run_point(&flags, ctx)?;
            let point = SweepPoint {
                threads,
                bs,
                ops: f.ops,
                bytes: f.bytes,
                iops: f.iops,
                bw_bytes_s: f.bw_bytes_s,
                bps: f.bps,
                lat_ns: f.lat_ns,
                device_util: f.device_util,
                warnings: f.warnings,
                per_rank: f.per_rank,
            };
            let below_floor = point.iops < cfg.floor_iops;
            points.push(point);
            if let Some(e) = f.error {
                return Err(SuiteError::Config(e));
            }
            if below_floor {
                stopped_early = Some(format!("{} fell below {} IO/s", format_bytes(bs), cfg.floor_iops));
                break;
            }
        }
        curves.push(curve(threads, points, stopped_early));
    }
    Ok(SweepResult {
        suite: "sweep",
        target: target.path.display().to_string(),
        rw: cfg.rw.clone(),
        direct: cfg.direct,
        time_per_point_s: cfg.time_per_point.as_secs_f64(),
        processes: ctx.processes(),
        curves,
        interrupted: ctx.stopped(),
    })
}

fn curve(threads: u32, points: Vec<SweepPoint>, stopped_early: Option<String>) -> SweepCurve {
    let (knee_bs, bw90_bs) = findings(&points);
    let knee_note = knee_note(&points);
    SweepCurve { threads, points, knee_bs, knee_note, bw90_bs, stopped_early }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(bs: u64, iops: f64) -> SweepPoint {
        SweepPoint {
            threads: 1,
            bs,
            ops: 0,
            bytes: 0,
            iops,
            bw_bytes_s: iops * bs as f64,
            bps: 0.0,
            lat_ns: LatencySummary::default(),
            device_util: None,
            warnings: vec![],
            per_rank: vec![],
        }
    }

    fn curve_of(iops: &[f64]) -> Vec<SweepPoint> {
        iops.iter().enumerate().map(|(i, &x)| p(512 << i, x)).collect()
    }

    fn knee_of(iops: &[f64]) -> Option<u64> {
        knee(&curve_of(iops))
    }

    #[test]
    fn knee_and_bandwidth_point() {
        // Flat IOPS up to 16 KiB, then bandwidth-bound at 400 MiB/s.
        let pts = vec![
            p(4096, 10_000.0),
            p(8192, 9_900.0),
            p(16384, 9_500.0),
            p(32768, 7_000.0),
            p(65536, 6_000.0),
            p(131072, 3_200.0),
        ];
        let (knee, bw90) = findings(&pts);
        assert_eq!(knee, Some(16384));
        // peak bw = 3200 * 128 KiB = 400 MiB/s; 65536 gives 375 MiB/s (>= 360)
        assert_eq!(bw90, Some(65536));
        assert_eq!(findings(&[]), (None, None));
    }

    #[test]
    fn knee_of_flat_then_fall() {
        assert_eq!(knee_of(&[1000.0, 990.0, 950.0, 800.0, 400.0]), Some(2048));
    }

    #[test]
    fn knee_of_rise_then_fall_exists() {
        // The usual shape on real devices: the smallest sizes are slower than the peak (sub-sector
        // requests, per-call overhead), then IOPS falls once bandwidth binds.
        assert_eq!(knee_of(&[500.0, 800.0, 1000.0, 960.0, 700.0, 350.0]), Some(4096));
        // The peak alone, when the very next size already falls.
        assert_eq!(knee_of(&[500.0, 1000.0, 600.0, 300.0]), Some(1024));
    }

    #[test]
    fn knee_of_monotone_curves() {
        // Falling from the start: the smallest size is the peak and the only flat point.
        assert_eq!(knee_of(&[1000.0, 700.0, 400.0, 200.0]), Some(512));
        // Still rising at the largest size: the peak is the last point, and the note says the
        // knee lies at or beyond it.
        let rising = curve_of(&[100.0, 200.0, 400.0, 800.0]);
        assert_eq!(knee(&rising), Some(4096));
        assert!(knee_note(&rising).is_some_and(|n| n.contains("largest size")));
        assert_eq!(knee_note(&curve_of(&[1000.0, 950.0, 400.0])), None);
        // A flat curve: every size is free, the knee is the largest.
        assert_eq!(knee_of(&[1000.0, 1000.0, 1000.0]), Some(2048));
    }

    #[test]
    fn knee_of_noisy_curve_looks_past_a_single_dip() {
        // One noisy point below 90% inside the flat region does not end it.
        assert_eq!(knee_of(&[980.0, 1000.0, 850.0, 960.0, 920.0, 500.0, 250.0]), Some(8192));
    }

    #[test]
    fn knee_needs_a_positive_finite_peak() {
        assert_eq!(knee_of(&[]), None);
        assert_eq!(knee_of(&[0.0, 0.0]), None);
        assert_eq!(knee_of(&[f64::NAN, 1000.0, 950.0, 100.0]), Some(2048));
        assert_eq!(knee_of(&[f64::INFINITY, 1000.0]), Some(1024));
    }

    #[test]
    fn sizes_double() {
        let mut c = SweepConfig::new(".".into());
        c.min_size = 512;
        c.max_size = 4096;
        assert_eq!(c.sizes(), vec![512, 1024, 2048, 4096]);
    }
}
