//! Random writes measured three ways ("IOPS are dumb"): timing only the write calls (naive),
//! timing the final fsync inside the phase, and bypassing the cache with O_DIRECT. The naive
//! figure measures how fast memory absorbs writes; the device bytes inside each window show it.

use std::path::PathBuf;
use std::time::Duration;

use iolens_report::table::{fmt_mib, fmt_rate, Table};
use iolens_workload::{format_bytes, FlagWorkload};
use serde::Serialize;

use crate::{run_point, SuiteContext, SuiteError, SuiteTarget};

#[derive(Debug, Clone)]
pub struct WriteModesConfig {
    pub target: PathBuf,
    pub bs: u64,
    pub time: Duration,
    pub region: u64,
}

impl WriteModesConfig {
    pub fn new(target: PathBuf) -> WriteModesConfig {
        WriteModesConfig { target, bs: 4096, time: Duration::from_secs(5), region: 256 << 20 }
    }
}

/// One mode's phase, broken down.
#[derive(Debug, Clone, Serialize)]
pub struct ModeResult {
    pub mode: &'static str,
    pub ops: u64,
    pub bytes: u64,
    /// Time inside write calls.
    pub write_s: f64,
    pub fsync_s: f64,
    pub close_s: f64,
    /// The whole timed phase: from the first write to the end of close.
    pub phase_s: f64,
    /// ops / time in write calls: what timing only the calls reports.
    pub apparent_iops: f64,
    /// ops / whole phase, fsync and close included.
    pub effective_iops: f64,
    pub apparent_mib_s: f64,
    pub effective_mib_s: f64,
    /// Bytes the device wrote inside the phase (None without a block device).
    pub device_write_bytes: Option<u64>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WriteModesResult {
    pub schema_version: u32,
    pub suite: &'static str,
    pub target: String,
    pub bs: u64,
    pub modes: Vec<ModeResult>,
    pub interrupted: bool,
}

const MODES: [(&str, bool, &str); 3] =
    [("naive", false, "none"), ("fsync", false, "end"), ("direct", true, "none")];

pub fn write_modes(cfg: &WriteModesConfig, ctx: &SuiteContext) -> Result<WriteModesResult, SuiteError> {
    let target = SuiteTarget::new(&cfg.target, "write-modes", ctx.keep);
    let mut modes = Vec::new();
    for (mode, direct, fsync) in MODES {
        if ctx.stopped() {
            break;
        }
        let flags = FlagWorkload {
            target: target.path.clone(),
            rw: "randwrite".into(),
            bs: cfg.bs.to_string(),
            direct,
            fsync: Some(fsync.into()),
            size: Some(cfg.region.to_string()),
            time: Some(format!("{}ms", cfg.time.as_millis())),
            ..FlagWorkload::default()
        };
        let r = run_point(&flags, ctx)?;
        if let Some(e) = r.error {
            return Err(SuiteError::Config(e));
        }
        // Write back what this mode left dirty, untimed, so it does not land in the next window.
        if let Ok(f) = std::fs::File::open(&target.path) {
            let _ = f.sync_all();
        }
        let f = &r.aggregate;
        let write_s = f.arpt_s * f.ops as f64;
        let per = |v: f64, s: f64| if s > 0.0 { v / s } else { 0.0 };
        modes.push(ModeResult {
            mode,
            ops: f.ops,
            bytes: f.bytes,
            write_s,
            fsync_s: f.fsync_s,
            close_s: f.close_s,
            phase_s: f.wall_s,
            apparent_iops: per(f.ops as f64, write_s),
            effective_iops: per(f.ops as f64, f.wall_s),
            apparent_mib_s: per(f.bytes as f64, write_s) / (1u64 << 20) as f64,
            effective_mib_s: per(f.bytes as f64, f.wall_s) / (1u64 << 20) as f64,
            device_write_bytes: r.device.as_ref().map(|d| d.write_bytes),
            warnings: r.warnings.iter().map(|w| w.code.as_str().to_string()).collect(),
        });
    }
    Ok(WriteModesResult {
        schema_version: iolens_metrics::SCHEMA_VERSION,
        suite: "write-modes",
        target: target.path.display().to_string(),
        bs: cfg.bs,
        modes,
        interrupted: ctx.stopped(),
    })
}

pub fn render(r: &WriteModesResult) -> String {
    let mut out = format!("write-modes {} random {} writes:\n", r.target, format_bytes(r.bs));
    let mut t = Table::new(vec![
        "mode",
        "ops",
        "write s",
        "fsync s",
        "close s",
        "phase s",
        "apparent IO/s",
        "effective IO/s",
        "apparent MiB/s",
        "effective MiB/s",
        "device MiB",
        "warnings",
    ]);
    t.left_aligned = vec![11];
    for m in &r.modes {
        t.rows.push(vec![
            m.mode.into(),
            m.ops.to_string(),
            format!("{:.3}", m.write_s),
            format!("{:.3}", m.fsync_s),
            format!("{:.3}", m.close_s),
            format!("{:.3}", m.phase_s),
            fmt_rate(m.apparent_iops),
            fmt_rate(m.effective_iops),
            fmt_mib(m.apparent_mib_s * (1u64 << 20) as f64),
            fmt_mib(m.effective_mib_s * (1u64 << 20) as f64),
            m.device_write_bytes.map_or("-".into(), |b| fmt_mib(b as f64)),
            m.warnings.join(","),
        ]);
    }
    t.render(&mut out);
    out.push_str(
        "apparent = ops / time inside write calls; effective = ops / whole phase (fsync and close included); \
         device MiB = bytes the device wrote inside the phase\n",
    );
    out
}
