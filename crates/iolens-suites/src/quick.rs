//! `iolens quick`: the storage behind a directory in a few minutes — which device and file
//! system, a short block-size sweep, the saturation point (capped), the write modes, and
//! b_eff_io with a short T — on one summary, each part's full result saved as JSON.
//!
//! Under `mpirun` the sweep, saturation and write modes run each point on every rank (each in a
//! scratch directory of its own), and rank 0 alone writes the results; b_eff_io runs over
//! MPI-IO with all ranks as one partition, in the directory given (which every rank shares).

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolens_engine::RunObserver;
use iolens_metrics::number::{fmt_mib, fmt_rate};
use iolens_output::contract::{Body, Notice};
use iolens_output::sayln;
use iolens_ownership::ScratchDir;
use iolens_workload::format_bytes;
use serde::Serialize;

use crate::{beff_io, saturate, sweep, write_modes, PointRunner, Processes, SuiteContext, SuiteError};

/// Where quick keeps its results unless told: `iolens-results-<seconds since the epoch>` in the
/// current directory.
pub fn default_results_dir() -> PathBuf {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    PathBuf::from(format!("iolens-results-{secs}"))
}

/// What quick measures, and where it keeps its results.
pub struct QuickConfig {
    /// The directory whose storage is measured (quick works in a scratch directory inside it).
    pub base: PathBuf,
    /// Time per point (each size, load and mode).
    pub time: Duration,
    /// The time per point as the user gave it, for the first line.
    pub time_text: String,
    /// The region each point works on.
    pub size: u64,
    /// Where each part's JSON goes (created by rank 0).
    pub results: PathBuf,
    /// Keep the scratch directory.
    pub keep: bool,
    /// No progress lines.
    pub quiet: bool,
}

/// What quick ran: the summary, the job of its envelope, and the parts that failed.
pub struct QuickRun {
    pub report: QuickReport,
    pub job: serde_json::Value,
    /// "part: error" of every part that failed (the same on every rank).
    pub errors: Vec<String>,
}

/// b_eff_io's T as a multiple of the per-point time.
pub const BEFF_IO_T_FACTOR: u32 = 30;
/// quick's cap on MPART: the paper's memory/128 would move gigabytes per call on large nodes.
pub const QUICK_MPART_CAP: u64 = 16 << 20;
pub const SATURATE_CAP: u32 = 32;

/// One headline figure with what it measured.
#[derive(Debug, Serialize)]
pub struct Headline {
    pub part: &'static str,
    pub figure: String,
    pub value: String,
    pub measured: String,
}

#[derive(Debug, Serialize)]
pub struct PartOutcome {
    pub part: &'static str,
    /// The part's full result, relative to the results directory.
    pub json: Option<String>,
    pub seconds: f64,
    pub error: Option<String>,
    /// Why the part did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct QuickReport {
    pub directory: String,
    pub filesystem: String,
    /// The directory is on tmpfs or ramfs: every figure measures RAM, not storage.
    pub memory_backed: bool,
    pub device: Option<String>,
    pub direct_supported: bool,
    #[serde(rename = "memory_bytes")]
    pub memory: u64,
    /// Under MPI: the ranks each part's points ran on, and their hosts.
    #[serde(flatten)]
    pub processes: Option<Processes>,
    pub time_per_point_s: f64,
    pub results_dir: String,
    pub parts: Vec<PartOutcome>,
    pub headlines: Vec<Headline>,
    /// Told to the envelope, with `interrupted`.
    #[serde(skip)]
    pub warnings: Vec<Notice>,
    #[serde(skip)]
    pub interrupted: bool,
    pub elapsed_s: f64,
}

impl Body for QuickReport {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    fn warnings(&self) -> Vec<Notice> {
        self.warnings.clone()
    }
}

fn direct_supported(dir: &Path) -> bool {
    let probe = dir.join("iolens-direct-probe");
    let ok =
        OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_DIRECT).open(&probe).is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// What quick shows and saves through its caller, which owns the terminal and the result files
/// (the binary answers with `iolens_report`'s progress lines and result documents): this crate
/// produces results and leaves presenting them to the crates above it.
pub trait QuickPresenter {
    /// What shows a part's progress while it runs.
    type Progress: RunObserver;
    /// The progress of part `name`, starting now; `plan`: every part's planned seconds, in
    /// order, counted from `started`; `quiet`: show nothing.
    fn start_part(
        &self,
        name: &'static str,
        plan: &[(&'static str, f64)],
        started: Instant,
        quiet: bool,
    ) -> Self::Progress;
    /// The part ended: its progress is finished.
    fn end_part(&self, progress: Self::Progress);
    /// Saves a part's result as its JSON document at `path`, with the job it ran.
    fn save<B: Body>(&self, path: &Path, result: &B, job: serde_json::Value);
}

/// The parts run in order; each adds its headlines and warnings.
struct Quick<'a, P: QuickPresenter> {
    report: QuickReport,
    results: PathBuf,
    stop: &'a Arc<AtomicBool>,
    quiet: bool,
    command: String,
    runner: &'a dyn PointRunner,
    /// The job of every part that ran, for quick's own envelope.
    jobs: Vec<serde_json::Value>,
    /// Every part's planned seconds, in order, counted from `started`.
    plan: Vec<(&'static str, f64)>,
    started: Instant,
    presenter: &'a P,
}

/// The seconds each part is planned to take: every point or mode at its time (the sweep and
/// the saturation may end early), b_eff_io its T per partition.
fn planned_seconds(
    sweep: &sweep::SweepConfig,
    saturate: &saturate::SaturateConfig,
    modes: &write_modes::WriteModesConfig,
    beff: &beff_io::BeffIoConfig,
    ranks: usize,
) -> Vec<(&'static str, f64)> {
    let ranks = u32::try_from(ranks).unwrap_or(u32::MAX).max(1);
    let sweep_points = sweep.sizes().len() * sweep.threads.len();
    let levels = saturate.levels(ranks).count();
    let mode_s = modes.time_cap.map_or(0.0, |t| t.as_secs_f64());
    vec![
        ("sweep", sweep_points as f64 * sweep.time_per_point.as_secs_f64()),
        ("saturate", (saturate.loads.len() * levels) as f64 * saturate.time_per_point.as_secs_f64()),
        ("write-modes", write_modes::MODE_COUNT as f64 * mode_s),
        ("beff-io", beff.ranks.len() as f64 * beff.time.as_secs_f64()),
    ]
}

impl<P: QuickPresenter> Quick<'_, P> {
    /// Runs one part (`job`: what it ran, from its result where it has one), saves its JSON, and
    /// hands the result to `summarize`.
    fn part<R: Body>(
        &mut self,
        name: &'static str,
        job: impl FnOnce(Option<&R>) -> serde_json::Value,
        run: impl FnOnce(&SuiteContext) -> Result<R, SuiteError>,
        summarize: impl FnOnce(&R, &mut Vec<Headline>, &mut Vec<Notice>),
    ) {
        if self.stop.load(Ordering::SeqCst) {
            return;
        }
        let started = Instant::now();
        let quiet = self.quiet || self.runner.rank() != 0;
        let progress = self.presenter.start_part(name, &self.plan, self.started, quiet);
        // quick writes only in its own scratch directory, removed at the end.
        let result = run(&SuiteContext::new(false, false, self.stop, &progress, &self.command, self.runner));
        self.presenter.end_part(progress);
        let mut outcome = PartOutcome {
            part: name,
            json: None,
            seconds: started.elapsed().as_secs_f64(),
            error: None,
            skipped: None,
        };
        let job = job(result.as_ref().ok());
        match result {
            Ok(r) => {
                let file = format!("{name}.json");
                if self.runner.rank() == 0 {
                    self.presenter.save(&self.results.join(&file), &r, job.clone());
                }
                outcome.json = Some(file);
                summarize(&r, &mut self.report.headlines, &mut self.report.warnings);
            }
            Err(e) => outcome.error = Some(e.to_string()),
        }
        self.report.parts.push(outcome);
        self.jobs.push(job);
    }
}

fn summarize_sweep(r: &sweep::SweepResult, h: &mut Vec<Headline>, w: &mut Vec<Notice>) {
    let mode = if r.direct { "O_DIRECT" } else { "buffered" };
    for c in &r.curves {
        let measured = format!("{} {} threads, {mode}, app requests per wall second", r.rw, c.threads);
        if let Some(p) = c.points.iter().max_by(|a, b| a.iops.total_cmp(&b.iops)) {
            h.push(Headline {
                part: "sweep",
                figure: "peak IOPS".into(),
                value: format!("{} at {}", fmt_rate(p.iops), format_bytes(p.bs)),
                measured: measured.clone(),
            });
        }
        if let Some(p) = c.points.iter().max_by(|a, b| a.bw_bytes_s.total_cmp(&b.bw_bytes_s)) {
            h.push(Headline {
                part: "sweep",
                figure: "peak bandwidth".into(),
                value: format!("{} MiB/s at {}", fmt_mib(p.bw_bytes_s), format_bytes(p.bs)),
                measured: measured.clone(),
            });
        }
        h.push(Headline {
            part: "sweep",
            figure: "knee / 90% bandwidth".into(),
            value: format!(
                "{} / {}",
                c.knee_bs.map_or("-".into(), format_bytes),
                c.bw90_bs.map_or("-".into(), format_bytes)
            ),
            measured: "largest size at or after the IOPS peak within 90% of it / smallest size at 90% of peak bandwidth"
                .into(),
        });
        for p in &c.points {
            let at = format!("sweep {}", format_bytes(p.bs));
            w.extend(p.warnings.iter().map(|x| x.notice(&at)));
        }
        if let Some(why) = &c.stopped_early {
            w.push(Notice::new("stopped_early", format!("sweep stopped early: {why}")));
        }
    }
}

fn summarize_saturate(r: &saturate::SaturateResult, h: &mut Vec<Headline>, w: &mut Vec<Notice>) {
    for c in &r.curves {
        for p in &c.points {
            let at = format!("saturate {} at {} in flight", c.rw, p.concurrency);
            w.extend(p.warnings.iter().map(|x| x.notice(&at)));
        }
        let value = match c.saturation_concurrency {
            Some(n) => format!("{n} in flight reach 90% of {} IO/s", fmt_rate(c.peak_iops)),
            None => format!("peak {} IO/s", fmt_rate(c.peak_iops)),
        };
        h.push(Headline {
            part: "saturate",
            figure: format!("{} saturation", c.rw),
            value,
            measured: format!(
                "{} {} requests, concurrency by {}, ended: {}",
                format_bytes(r.bs),
                if r.direct { "O_DIRECT" } else { "buffered" },
                r.concurrency_by,
                c.ended
            ),
        });
    }
}

fn summarize_write_modes(r: &write_modes::WriteModesResult, h: &mut Vec<Headline>, w: &mut Vec<Notice>) {
    let cells: Vec<String> = r
        .modes
        .iter()
        .map(|m| format!("{} {}/{}", m.mode, fmt_rate(m.apparent_iops), fmt_rate(m.effective_iops)))
        .collect();
    h.push(Headline {
        part: "write-modes",
        figure: "write IOPS apparent/effective".into(),
        value: cells.join(", "),
        measured: format!(
            "random {} writes; apparent = write calls only, effective = whole phase with fsync and close",
            format_bytes(r.bs)
        ),
    });
    for m in &r.modes {
        let at = format!("write-modes {}", m.mode);
        w.extend(m.warnings.iter().map(|x| x.notice(&at)));
    }
}

fn summarize_beff_io(r: &beff_io::BeffIoResult, h: &mut Vec<Headline>, w: &mut Vec<Notice>) {
    h.push(Headline {
        part: "beff-io",
        figure: "b_eff_io".into(),
        value: format!("{:.1} MB/s", r.b_eff_io),
        measured: format!(
            "{} ranks, T = {:.0} s ({}), MPART {}, buffered; MB = 10^6 bytes",
            r.best_ranks,
            r.time_s,
            r.partitions.iter().find(|p| p.ranks == r.best_ranks).map_or("not run".into(), |p| {
                if p.schedule_held {
                    format!("ran {:.1} s", p.elapsed_s)
                } else {
                    format!("T not held: ran {:.1} s", p.elapsed_s)
                }
            }),
            format_bytes(r.mpart)
        ),
    });
    h.push(Headline {
        part: "beff-io",
        figure: "coffee cup".into(),
        value: format!("{:.0} s", r.coffee_cup_s),
        measured: format!("time to write this node's memory ({}) at b_eff_io", format_bytes(r.memory)),
    });
    w.extend(r.warnings.iter().map(|x| Notice::new(x.code.as_str(), format!("beff-io: {}", x.message))));
}

/// The configurations of quick's four parts in `dir` (b_eff_io under MPI in `base`, which every
/// rank shares; the scratch directories are each rank's own).
fn part_configs(
    dir: &Path,
    base: &Path,
    time: Duration,
    size: u64,
    direct: bool,
    memory: u64,
    ranks: usize,
) -> (sweep::SweepConfig, saturate::SaturateConfig, write_modes::WriteModesConfig, beff_io::BeffIoConfig) {
    let dir = dir.to_path_buf();
    let mut sweep_cfg = sweep::SweepConfig::new(dir.clone());
    sweep_cfg.min_size = 4 << 10;
    sweep_cfg.max_size = (16 << 20).min(size);
    sweep_cfg.growth = 4;
    sweep_cfg.direct = direct;
    sweep_cfg.time_per_point = time;
    sweep_cfg.region = size;

    let mut saturate_cfg = saturate::SaturateConfig::new(dir.clone());
    saturate_cfg.direct = direct;
    saturate_cfg.max_concurrency = SATURATE_CAP;
    saturate_cfg.time_per_point = time;
    saturate_cfg.region = size;

    let mut modes_cfg = write_modes::WriteModesConfig::new(dir.clone());
    // Quick: the region once per mode, stopped after twice the point time; the full suite
    // writes a multiple of the dirty limit instead.
    modes_cfg.bytes = Some(size);
    modes_cfg.time_cap = Some(time * 2);

    // Under MPI: b_eff_io over MPI-IO, one partition of all ranks.
    let mut beff_cfg =
        beff_io::BeffIoConfig::new(if ranks > 1 { base.to_path_buf() } else { dir.clone() }, memory);
    beff_cfg.time = time * BEFF_IO_T_FACTOR;
    beff_cfg.mpart = beff_cfg.mpart.min(QUICK_MPART_CAP);
    beff_cfg.ranks = vec![ranks];
    (sweep_cfg, saturate_cfg, modes_cfg, beff_cfg)
}

/// Runs quick's parts in order; `Err` only when it cannot start (its scratch or results
/// directory), after which every rank ends (see [`PointRunner::failed_alone`]).
pub fn quick<P: QuickPresenter>(
    presenter: &P,
    runner: &dyn PointRunner,
    cfg: &QuickConfig,
    stop: &Arc<AtomicBool>,
    command: String,
) -> Result<QuickRun, SuiteError> {
    let started = Instant::now();
    let QuickConfig { base, time, time_text, size, results, keep, quiet } = cfg;
    let (base, time, size, results) = (base.clone(), *time, *size, results.clone());
    let rank0 = runner.rank() == 0;
    if rank0 {
        std::fs::create_dir_all(&results).map_err(|e| {
            runner.failed_alone(format!("cannot create the results directory {}: {e}", results.display()))
        })?;
    }
    // Removed when quick ends, however it ends; found and removed by a later run if killed.
    // Under MPI each rank has its own (file per process).
    let scratch = ScratchDir::create(&base, "iolens-quick-", *keep).map_err(|e| {
        runner.failed_alone(format!("cannot create a scratch directory in {}: {e}", base.display()))
    })?;
    let dir = scratch.path().to_path_buf();
    // Rank 0's answer for every rank, so all run the same parts the same way.
    let mut direct_flag = [u64::from(direct_supported(&dir))];
    runner.share(&mut direct_flag);
    let direct = direct_flag[0] != 0;
    let fs_type = iolens_device::filesystem_type(&dir).ok();
    let memory_backed = fs_type.is_some_and(|f| f.memory_backed());
    let filesystem = fs_type.map_or_else(|| "unknown".to_string(), |f| f.name.to_string());
    let device = iolens_device::device_for_path(&dir).ok().flatten().map(|d| d.name);
    let memory = iolens_device::memory_total().unwrap_or(1 << 30);
    let processes = Processes::of(runner);
    if rank0 {
        sayln!(
            "quick: {} on {} ({}), {} per point, {} files;\n  results in {}{}",
            dir.display(),
            device.as_deref().unwrap_or("no block device"),
            filesystem,
            time_text,
            format_bytes(size),
            results.display(),
            if direct { "" } else { ";\n  O_DIRECT unsupported here: everything runs buffered" }
        );
        if let Some(p) = &processes {
            sayln!(
                "quick: every rank runs each point in its own scratch directory; {} ranks on {}",
                p.ranks,
                p.hosts.join(", ")
            );
        }
    }

    let (sweep_cfg, saturate_cfg, modes_cfg, beff_cfg) =
        part_configs(&dir, &base, time, size, direct, memory, runner.ranks());

    let mut q = Quick {
        report: QuickReport {
            directory: dir.display().to_string(),
            filesystem: filesystem.clone(),
            memory_backed,
            device,
            direct_supported: direct,
            memory,
            processes,
            time_per_point_s: time.as_secs_f64(),
            results_dir: results.display().to_string(),
            parts: Vec::new(),
            headlines: Vec::new(),
            warnings: Vec::new(),
            interrupted: false,
            elapsed_s: 0.0,
        },
        results: results.clone(),
        stop,
        quiet: *quiet,
        command,
        runner,
        jobs: Vec::new(),
        plan: planned_seconds(&sweep_cfg, &saturate_cfg, &modes_cfg, &beff_cfg, runner.ranks()),
        started,
        presenter,
    };

    q.part("sweep", |_| sweep_cfg.job(), |ctx| sweep::sweep(&sweep_cfg, ctx), summarize_sweep);
    q.part(
        "saturate",
        |_| saturate_cfg.job(),
        |ctx| saturate::saturate(&saturate_cfg, ctx),
        summarize_saturate,
    );
    q.part(
        "write-modes",
        |r| modes_cfg.job_as_run(r),
        |ctx| write_modes::write_modes(&modes_cfg, ctx),
        summarize_write_modes,
    );

    // Collective under MPI: every rank takes part (or none does); rank 0 alone has the result.
    if !runner.any_stopped(stop.load(Ordering::SeqCst)) {
        if runner.rank() == 0 {
            let job = beff_cfg.job();
            let result = move |ctx: &SuiteContext| {
                runner
                    .beff_io(&beff_cfg, stop, ctx.observer)?
                    .ok_or_else(|| SuiteError::Config("no b_eff_io result".into()))
            };
            q.part("beff-io", |_| job, result, summarize_beff_io);
        } else {
            let _ = runner.beff_io(&beff_cfg, stop, &());
        }
    }

    let job = serde_json::json!({
        "suite": "quick",
        "dir": base.display().to_string(),
        "time_per_point_s": time.as_secs_f64(),
        "size_bytes": size,
        "direct": direct,
        "results": results.display().to_string(),
        "parts": q.jobs,
    });
    let mut report = q.report;
    if memory_backed {
        say_memory_backed(&mut report);
    }
    report.interrupted = runner.any_stopped(stop.load(Ordering::SeqCst));
    report.elapsed_s = started.elapsed().as_secs_f64();
    let errors =
        report.parts.iter().filter_map(|p| p.error.as_ref().map(|e| format!("{}: {e}", p.part))).collect();
    Ok(QuickRun { report, job, errors })
}

/// On tmpfs or ramfs every headline measures RAM: each says so, and one warning says it first
/// (instead of once per point of every part).
fn say_memory_backed(r: &mut QuickReport) {
    let note = format!("target in RAM ({}), not storage", r.filesystem);
    for h in &mut r.headlines {
        h.measured = format!("{}; {note}", h.measured);
    }
    r.warnings.retain(|w| w.code != "memory_backed_target");
    r.warnings.insert(
        0,
        Notice::new(
            "memory_backed_target",
            format!(
                "{} is on {}: every figure here measures memory, not storage{}",
                r.directory,
                r.filesystem,
                if r.direct_supported { " (O_DIRECT is accepted but bypasses no device)" } else { "" }
            ),
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PointWarning;

    fn report() -> QuickReport {
        QuickReport {
            directory: "/d".into(),
            filesystem: "ext4".into(),
            memory_backed: false,
            device: None,
            direct_supported: true,
            memory: 1 << 30,
            processes: None,
            time_per_point_s: 1.0,
            results_dir: "/r".into(),
            parts: Vec::new(),
            headlines: Vec::new(),
            warnings: Vec::new(),
            interrupted: false,
            elapsed_s: 1.0,
        }
    }

    #[test]
    fn a_points_warning_is_a_sentence_naming_the_point_then_its_code() {
        let point = sweep::SweepPoint {
            threads: 1,
            bs: 1 << 20,
            ops: 12,
            bytes: 12 << 20,
            iops: 120.0,
            bw_bytes_s: 120.0 * (1 << 20) as f64,
            bps: 0.0,
            lat_ns: Default::default(),
            device_util: None,
            warnings: vec![PointWarning::new("few_ops", ""), PointWarning::new("short_run", "ran 0.1 s")],
            per_rank: Vec::new(),
        };
        let curve = sweep::SweepCurve {
            threads: 1,
            points: vec![point],
            knee_bs: None,
            knee_note: None,
            bw90_bs: None,
            stopped_early: None,
        };
        let result = sweep::SweepResult {
            suite: "sweep",
            target: "/d/f".into(),
            rw: "randread".into(),
            direct: true,
            time_per_point_s: 0.1,
            processes: None,
            curves: vec![curve],
            interrupted: false,
        };
        let mut r = report();
        summarize_sweep(&result, &mut r.headlines, &mut r.warnings);
        // The sentence names the point and the code stays apart from it (the terminal shows
        // "warning: SENTENCE (CODE)": iolens_report::text::quick).
        let bs = format_bytes(1 << 20);
        let few =
            r.warnings.iter().find(|w| w.code == "few_ops").unwrap_or_else(|| panic!("{:?}", r.warnings));
        assert!(
            few.message.starts_with(&format!("sweep {bs}: fewer than 1000 operations measured")),
            "{few:?}"
        );
        assert!(!few.message.contains("few_ops"), "{few:?}");
        assert!(
            r.warnings.contains(&Notice::new("short_run", format!("sweep {bs}: ran 0.1 s"))),
            "{:?}",
            r.warnings
        );
    }

    /// quick's parts at 1 s per point on 16 MiB: 7 sweep sizes (4 KiB to 16 MiB by 4), 2 loads ×
    /// 6 concurrency levels (1 to 32), 3 write modes of at most 2 s, b_eff_io's T of 30 s.
    #[test]
    fn the_plan_counts_each_parts_points_at_their_time() {
        use std::time::Duration;
        let dir = PathBuf::from("/nonexistent");
        let time = Duration::from_secs(1);
        let mut sweep_cfg = sweep::SweepConfig::new(dir.clone());
        (sweep_cfg.min_size, sweep_cfg.max_size, sweep_cfg.growth, sweep_cfg.time_per_point) =
            (4 << 10, 16 << 20, 4, time);
        let mut saturate_cfg = saturate::SaturateConfig::new(dir.clone());
        (saturate_cfg.max_concurrency, saturate_cfg.time_per_point) = (SATURATE_CAP, time);
        let mut modes_cfg = write_modes::WriteModesConfig::new(dir.clone());
        modes_cfg.time_cap = Some(time * 2);
        let mut beff_cfg = beff_io::BeffIoConfig::new(dir, 1 << 30);
        (beff_cfg.time, beff_cfg.ranks) = (time * BEFF_IO_T_FACTOR, vec![1]);
        let plan = planned_seconds(&sweep_cfg, &saturate_cfg, &modes_cfg, &beff_cfg, 1);
        assert_eq!(plan, [("sweep", 7.0), ("saturate", 12.0), ("write-modes", 6.0), ("beff-io", 30.0)]);
        // Four ranks reach the cap of 32 in flight at 8 each: levels 1, 2, 4 and 8.
        let plan = planned_seconds(&sweep_cfg, &saturate_cfg, &modes_cfg, &beff_cfg, 4);
        assert_eq!(plan[1], ("saturate", 8.0));
    }
}
