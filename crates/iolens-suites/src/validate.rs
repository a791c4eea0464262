//! Metric validation by correlation (the BPS paper, section IV): four experiment sets, each run
//! several times in a shuffled order, and per set the correlation of IOPS, bandwidth, ARPT and
//! BPS with the application's execution time, normalized against the direction each metric
//! should have (Table 1: IOPS, bandwidth and BPS negative, ARPT positive). A metric whose
//! normalized CC is negative points the wrong way on this machine: it misleads here.
//!
//! The "application" of every run reads a fixed volume; its execution time is the run's wall
//! time. Sets: (1) the same sequential read on different storage (page cache via tmpfs, disk
//! buffered with cold cache, disk O_DIRECT, and an extra target if given); (2) request sizes
//! 4 KiB … 8 MiB; (3) 1 … 32 agents on their own files, the volume split between them;
//! (4) noncontiguous reads with data sieving, spacing 8 B … 4 KiB: the application's bytes stay
//! fixed while the bytes moved grow.

use std::path::{Path, PathBuf};

use iolens_metrics::catalogue::{metric, Better};
use iolens_stats::{Direction, NormalizedCc};
use iolens_workload::{format_bytes, FlagWorkload};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

use iolens_ownership::ScratchDir;

use crate::{run_point, PointWarning, SuiteContext, SuiteError};

/// The metrics validated, with their expected correlation with execution time.
pub const VALIDATED: [(&str, Direction); 4] = [
    ("iops", against_time("iops")),
    ("bw_bytes_s", against_time("bw_bytes_s")),
    ("arpt_s", against_time("arpt_s")),
    ("bps", against_time("bps")),
];

/// The sign a metric's correlation with execution time should have, from the catalogue's
/// direction: a metric that is better higher falls as the time grows (negative), one that is
/// better lower grows with it (positive). A metric better neither way predicts nothing here.
const fn against_time(name: &str) -> Direction {
    match metric(name).better {
        Better::Higher => Direction::Negative,
        Better::Lower => Direction::Positive,
        Better::Neither => panic!("a metric better neither way has no expected correlation"),
    }
}

#[derive(Debug, Clone)]
pub struct ValidateConfig {
    pub dir: PathBuf,
    /// Bytes the application reads in every run of sets 1–3.
    pub volume: u64,
    pub repeat: u32,
    pub sets: Vec<u8>,
    /// An extra storage target for set 1.
    pub extra_target: Option<PathBuf>,
    pub seed: u64,
}

impl ValidateConfig {
    pub fn new(dir: PathBuf) -> ValidateConfig {
        ValidateConfig {
            dir,
            volume: 64 << 20,
            repeat: 3,
            sets: vec![1, 2, 3, 4],
            extra_target: None,
            seed: 1,
        }
    }

    /// The validation as run, every default filled in: the `job` of its result's envelope.
    pub fn job(&self) -> serde_json::Value {
        serde_json::json!({
            "suite": "validate",
            "dir": self.dir.display().to_string(),
            "volume_bytes": self.volume,
            "repeat": self.repeat,
            "sets": self.sets,
            "extra_target": self.extra_target.as_ref().map(|t| t.display().to_string()),
            "seed": self.seed,
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ValidationRun {
    pub config: String,
    pub repetition: u32,
    pub time_s: f64,
    pub iops: f64,
    pub bw_bytes_s: f64,
    pub arpt_s: f64,
    pub bps: f64,
    pub bytes: u64,
    pub moved_bytes: u64,
    /// The run's warnings; its JSON lists their codes, the envelope their messages.
    #[serde(rename = "warning_codes", serialize_with = "crate::warning_codes")]
    pub warnings: Vec<PointWarning>,
}

impl ValidationRun {
    fn metric(&self, name: &str) -> f64 {
        match name {
            "iops" => self.iops,
            "bw_bytes_s" => self.bw_bytes_s,
            "arpt_s" => self.arpt_s,
            _ => self.bps,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricCorrelation {
    pub name: &'static str,
    pub cc: Option<f64>,
    pub normalized_cc: Option<f64>,
    pub direction_ok: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExperimentSet {
    pub set: u8,
    pub name: &'static str,
    pub runs: Vec<ValidationRun>,
    pub correlations: Vec<MetricCorrelation>,
    /// Metrics whose correlation with time has the wrong sign here.
    pub misleading: Vec<&'static str>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ValidateResult {
    pub suite: &'static str,
    pub dir: String,
    pub volume: u64,
    pub repeat: u32,
    pub sets: Vec<ExperimentSet>,
    /// Told to the envelope (see `iolens_output::contract::Body`).
    #[serde(skip)]
    pub interrupted: bool,
}

impl iolens_output::contract::Body for ValidateResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    /// Each run's warnings, named by its set, configuration and repetition.
    fn warnings(&self) -> Vec<iolens_output::contract::Notice> {
        let mut all = Vec::new();
        for s in &self.sets {
            for r in &s.runs {
                let at = format!("set {} {} #{}", s.set, r.config, r.repetition);
                all.extend(r.warnings.iter().map(|w| w.notice(&at)));
            }
        }
        all
    }
}

struct Config {
    label: String,
    flags: FlagWorkload,
}

fn read_flags(target: &Path, volume: u64) -> FlagWorkload {
    FlagWorkload {
        target: target.to_path_buf(),
        rw: "read".into(),
        bs: "1m".into(),
        size: Some(volume.to_string()),
        bytes: Some(volume.to_string()),
        ..FlagWorkload::default()
    }
}

fn set_configs(
    set: u8,
    cfg: &ValidateConfig,
    work: &Path,
    shm: Option<&Path>,
    notes: &mut Vec<String>,
) -> Vec<Config> {
    let v = cfg.volume;
    match set {
        1 => {
            let mut out = Vec::new();
            match shm {
                Some(dir) => {
                    out.push(Config { label: "page cache (tmpfs)".into(), flags: read_flags(dir, v) })
                }
                None => notes.push("no /dev/shm: the page-cache storage is left out".into()),
            }
            out.push(Config { label: "disk, buffered, cold cache".into(), flags: read_flags(work, v) });
            out.push(Config {
                label: "disk, O_DIRECT".into(),
                flags: FlagWorkload { direct: true, ..read_flags(work, v) },
            });
            if let Some(t) = &cfg.extra_target {
                out.push(Config { label: format!("{}", t.display()), flags: read_flags(t, v) });
            }
            out
        }
        2 => [4u64 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20]
            .into_iter()
            .filter(|bs| *bs <= v)
            .map(|bs| Config {
                label: format!("{} requests", format_bytes(bs)),
                flags: FlagWorkload { bs: bs.to_string(), direct: true, ..read_flags(work, v) },
            })
            .collect(),
        3 => [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .map(|n| {
                let each = (v / n as u64).max(1 << 20) / (1 << 20) * (1 << 20);
                Config {
                    label: format!("{n} agents"),
                    flags: FlagWorkload {
                        threads: n,
                        size: Some(each.to_string()),
                        bytes: Some(each.to_string()),
                        direct: true,
                        ..read_flags(work, v)
                    },
                }
            })
            .collect(),
        _ => {
            // The application wants the same regions every time; sieving moves the holes too.
            // The file holds every access at the widest spacing, so no run re-reads its data.
            let (regions, region_size, widest) = (256u64, 16u64, 4096u64);
            let app = (v / 256).max(regions * region_size);
            let accesses = app.div_ceil(regions * region_size);
            let file = (accesses * (regions * (region_size + widest))).div_ceil(1 << 20) * (1 << 20);
            [8u64, 64, 512, widest]
                .into_iter()
                .map(|spacing| Config {
                    label: format!("spacing {}", format_bytes(spacing)),
                    flags: FlagWorkload {
                        pattern: Some("noncontig".into()),
                        regions: Some(regions),
                        region_size: Some(region_size.to_string()),
                        spacing: Some(spacing.to_string()),
                        sieve: true,
                        size: Some(file.to_string()),
                        bytes: Some(app.to_string()),
                        ..read_flags(&work.join("iolens-sieve.dat"), v)
                    },
                })
                .collect()
        }
    }
}

const SET_NAMES: [&str; 4] =
    ["storage variation", "request size", "concurrency", "additional data movement (data sieving)"];

fn correlations(runs: &[ValidationRun]) -> Vec<MetricCorrelation> {
    let time: Vec<f64> = runs.iter().map(|r| r.time_s).collect();
    VALIDATED
        .iter()
        .map(|(name, direction)| {
            let values: Vec<f64> = runs.iter().map(|r| r.metric(name)).collect();
            match iolens_stats::pearson(&values, &time) {
                Ok(cc) => {
                    let n = NormalizedCc::new(cc, *direction);
                    MetricCorrelation {
                        name,
                        cc: Some(cc),
                        normalized_cc: Some(n.normalized_cc),
                        direction_ok: Some(n.direction_ok),
                    }
                }
                Err(_) => MetricCorrelation { name, cc: None, normalized_cc: None, direction_ok: None },
            }
        })
        .collect()
}

/// Runs the chosen experiment sets in `cfg.dir` (a scratch directory of the suite's own inside
/// it, removed at the end).
pub fn validate(cfg: &ValidateConfig, ctx: &SuiteContext) -> Result<ValidateResult, SuiteError> {
    if !cfg.dir.is_dir() {
        return Err(SuiteError::Config(format!("{} is not a directory", cfg.dir.display())));
    }
    if let Some(bad) = cfg.sets.iter().find(|s| !(1..=4).contains(*s)) {
        return Err(SuiteError::Config(format!("--sets: {bad} is not an experiment set (1 to 4)")));
    }
    let work = ScratchDir::create(&cfg.dir, "iolens-validate-", ctx.keep).map_err(|e| {
        SuiteError::Config(format!("cannot create a scratch directory in {}: {e}", cfg.dir.display()))
    })?;
    // tmpfs holds its files in RAM until removed: a scratch directory of its own, registered so
    // that even a killed run's directory is found and removed by the next run.
    let shm = if cfg.sets.contains(&1) {
        Path::new("/dev/shm")
            .is_dir()
            .then(|| ScratchDir::create(Path::new("/dev/shm"), "iolens-validate-", ctx.keep).ok())
            .flatten()
    } else {
        None
    };
    run_sets(cfg, ctx, work.path(), shm.as_ref().map(ScratchDir::path))
}

fn run_sets(
    cfg: &ValidateConfig,
    ctx: &SuiteContext,
    work: &Path,
    shm: Option<&Path>,
) -> Result<ValidateResult, SuiteError> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    let mut sets = Vec::new();
    for &set in &cfg.sets {
        let mut notes = Vec::new();
        let configs = set_configs(set, cfg, work, shm, &mut notes);
        let mut order: Vec<(usize, u32)> =
            (0..configs.len()).flat_map(|c| (1..=cfg.repeat).map(move |r| (c, r))).collect();
        order.shuffle(&mut rng);
        let mut runs = Vec::new();
        for (c, repetition) in order {
            if ctx.stopped() {
                break;
            }
            let f = run_point(&configs[c].flags, ctx)?;
            if let Some(e) = &f.error {
                return Err(SuiteError::Config(format!("set {set}, {}: {e}", configs[c].label)));
            }
            if f.interrupted {
                break;
            }
            runs.push(ValidationRun {
                config: configs[c].label.clone(),
                repetition,
                time_s: f.wall_s,
                iops: f.iops,
                bw_bytes_s: f.bw_bytes_s,
                arpt_s: f.arpt_s,
                bps: f.bps,
                bytes: f.bytes,
                moved_bytes: f.moved_bytes,
                warnings: f.warnings.clone(),
            });
        }
        let correlations = correlations(&runs);
        let misleading =
            correlations.iter().filter(|c| c.direction_ok == Some(false)).map(|c| c.name).collect();
        sets.push(ExperimentSet {
            set,
            name: SET_NAMES[set as usize - 1],
            runs,
            correlations,
            misleading,
            notes,
        });
    }
    Ok(ValidateResult {
        suite: "validate",
        dir: cfg.dir.display().to_string(),
        volume: cfg.volume,
        repeat: cfg.repeat,
        sets,
        interrupted: ctx.stopped(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The BPS paper's Table 1: rates fall as the time grows, the response time grows with it.
    #[test]
    fn the_expected_directions_follow_the_catalogue() {
        assert_eq!(
            VALIDATED,
            [
                ("iops", Direction::Negative),
                ("bw_bytes_s", Direction::Negative),
                ("arpt_s", Direction::Positive),
                ("bps", Direction::Negative),
            ]
        );
    }

    fn run(time_s: f64, iops: f64, arpt_s: f64) -> ValidationRun {
        ValidationRun {
            config: String::new(),
            repetition: 1,
            time_s,
            iops,
            bw_bytes_s: iops * 4096.0,
            arpt_s,
            bps: iops * 8.0,
            bytes: 1,
            moved_bytes: 1,
            warnings: vec![],
        }
    }

    #[test]
    fn a_metric_rising_with_time_is_flagged() {
        // IOPS grow with time here (as with small requests): the wrong direction.
        let runs = [run(1.0, 100.0, 1e-3), run(2.0, 200.0, 2e-3), run(3.0, 310.0, 3e-3)];
        let c = correlations(&runs);
        let iops = c.iter().find(|m| m.name == "iops").unwrap();
        assert_eq!(iops.direction_ok, Some(false));
        assert!(iops.normalized_cc.unwrap() < -0.99);
        let arpt = c.iter().find(|m| m.name == "arpt_s").unwrap();
        assert_eq!(arpt.direction_ok, Some(true));
        let flat = [run(1.0, 100.0, 1e-3), run(2.0, 100.0, 1e-3), run(3.0, 100.0, 1e-3)];
        assert_eq!(correlations(&flat)[0].cc, None, "no variance, no correlation");
    }
}
