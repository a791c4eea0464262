//! The scale-up test of "IOPS are dumb": concurrency doubles until throughput stops growing.
//! A device's IOPS figure means little without the concurrency it needs; this finds it.

use std::path::PathBuf;
use std::time::Duration;

use iolens_report::table::{fmt_mib, fmt_ns, fmt_rate, Table};
use iolens_workload::{format_bytes, FlagWorkload};
use serde::Serialize;

use crate::{run_point, SuiteContext, SuiteError, SuiteTarget, REACHED};

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
    pub max_concurrency: u32,
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
            time_per_point: Duration::from_secs(2),
            region: 1 << 30,
            loads: vec!["randread".into(), "randwrite".into()],
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SaturatePoint {
    pub concurrency: u32,
    pub iops: f64,
    pub mib_s: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// Throughput growth over the previous point.
    pub gain: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SaturateCurve {
    pub rw: String,
    pub points: Vec<SaturatePoint>,
    pub peak_iops: f64,
    /// The smallest concurrency reaching 90% of the peak.
    pub saturation_concurrency: Option<u32>,
    /// Why the curve ended: flat throughput, or the cap.
    pub ended: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SaturateResult {
    pub schema_version: u32,
    pub suite: &'static str,
    pub target: String,
    pub bs: u64,
    pub direct: bool,
    pub concurrency_by: &'static str,
    pub curves: Vec<SaturateCurve>,
    pub interrupted: bool,
}

/// The saturation point: the smallest concurrency whose throughput reaches 90% of the peak.
pub fn saturation_point(points: &[SaturatePoint]) -> Option<u32> {
    let peak = points.iter().map(|p| p.iops).fold(0.0, f64::max);
    points.iter().find(|p| peak > 0.0 && p.iops >= REACHED * peak).map(|p| p.concurrency)
}

/// Whether the last points show `FLAT_STEPS` doublings in a row gaining less than `MIN_GAIN`.
pub fn flattened(points: &[SaturatePoint]) -> bool {
    points.len() > FLAT_STEPS
        && points.iter().rev().take(FLAT_STEPS).all(|p| p.gain.is_some_and(|g| g < MIN_GAIN))
}

pub fn saturate(cfg: &SaturateConfig, ctx: &SuiteContext) -> Result<SaturateResult, SuiteError> {
    let target = SuiteTarget::new(&cfg.target, "saturate", ctx.keep);
    let mut curves = Vec::new();
    for rw in &cfg.loads {
        let mut points: Vec<SaturatePoint> = Vec::new();
        let mut ended = format!("reached the cap of {}", cfg.max_concurrency);
        let mut c = 1u32;
        while c <= cfg.max_concurrency.max(1) {
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
            let r = run_point(&flags, ctx)?;
            if let Some(e) = r.error {
                return Err(SuiteError::Config(e));
            }
            let f = &r.aggregate;
            let gain = points.last().filter(|p| p.iops > 0.0).map(|p| f.iops / p.iops - 1.0);
            points.push(SaturatePoint {
                concurrency: c,
                iops: f.iops,
                mib_s: f.bw_bytes_s / (1u64 << 20) as f64,
                p50_ns: f.lat_ns.p50,
                p99_ns: f.lat_ns.p99,
                gain,
            });
            if flattened(&points) {
                ended =
                    format!("throughput grew less than {:.0}% {FLAT_STEPS} times in a row", 100.0 * MIN_GAIN);
                break;
            }
            c = c.saturating_mul(2);
        }
        let peak_iops = points.iter().map(|p| p.iops).fold(0.0, f64::max);
        curves.push(SaturateCurve {
            rw: rw.clone(),
            saturation_concurrency: saturation_point(&points),
            points,
            peak_iops,
            ended,
        });
        if ctx.stopped() {
            break;
        }
    }
    Ok(SaturateResult {
        schema_version: iolens_metrics::SCHEMA_VERSION,
        suite: "saturate",
        target: target.path.display().to_string(),
        bs: cfg.bs,
        direct: cfg.direct,
        concurrency_by: if cfg.use_threads { "sync threads" } else { "io_uring requests in flight" },
        curves,
        interrupted: ctx.stopped(),
    })
}

pub fn render(r: &SaturateResult) -> String {
    let mut out = String::new();
    for c in &r.curves {
        out.push_str(&format!(
            "saturate {} {} {} ({}, concurrency = {}):\n",
            r.target,
            c.rw,
            format_bytes(r.bs),
            if r.direct { "O_DIRECT" } else { "buffered" },
            r.concurrency_by
        ));
        let mut t = Table::new(vec!["concurrency", "IO/s", "MiB/s", "gain", "p50", "p99"]);
        for p in &c.points {
            t.rows.push(vec![
                p.concurrency.to_string(),
                fmt_rate(p.iops),
                fmt_mib(p.mib_s * (1u64 << 20) as f64),
                p.gain.map_or("-".into(), |g| format!("{:+.0}%", 100.0 * g)),
                fmt_ns(p.p50_ns as f64),
                fmt_ns(p.p99_ns as f64),
            ]);
        }
        t.render(&mut out);
        match c.saturation_concurrency {
            Some(n) => out.push_str(&format!(
                "saturation: {n} concurrent {} requests reach 90% of the peak ({} IO/s); ended: {}\n",
                c.rw,
                fmt_rate(c.peak_iops),
                c.ended
            )),
            None => out.push_str(&format!("no throughput measured; ended: {}\n", c.ended)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(iops: &[f64]) -> Vec<SaturatePoint> {
        let mut v: Vec<SaturatePoint> = Vec::new();
        for (i, &x) in iops.iter().enumerate() {
            let gain = v.last().map(|p: &SaturatePoint| x / p.iops - 1.0);
            v.push(SaturatePoint { concurrency: 1 << i, iops: x, mib_s: 0.0, p50_ns: 0, p99_ns: 0, gain });
        }
        v
    }

    #[test]
    fn saturation_and_flattening() {
        let p = pts(&[1000.0, 1900.0, 3500.0, 5000.0, 5100.0, 5150.0]);
        assert!(flattened(&p), "+2% and +1%: two flat doublings");
        assert!(!flattened(&p[..5]), "one flat doubling is not enough");
        assert_eq!(saturation_point(&p), Some(8), "5000 >= 0.9 * 5150");
    }
}
