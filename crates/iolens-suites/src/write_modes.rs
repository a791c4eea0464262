//! Random writes measured three ways ("IOPS are dumb"): timing only the write calls (naive),
//! timing the final fsync inside the phase, and bypassing the cache with O_DIRECT. The naive
//! figure measures how fast memory absorbs writes; the device bytes inside each window show it.
//!
//! The effect only shows when the writes outgrow the page cache's dirty limit: below it, the
//! naive phase never waits for the device and the fsync phase flushes at most the limit. So the
//! suite is size-driven: by default each mode writes [`DIRTY_MULTIPLE`] × the dirty limit
//! ([`dirty_limit`]), each 4 KiB block once (random offsets without replacement, a permutation
//! of the blocks as fio's random map or IOR `-z`), and each mode on fresh files (in a directory
//! target, a new scratch directory per mode, removed after it, so one mode's dirty pages are
//! discarded instead of landing in the next one's window).
//!
//! Under MPI every rank writes the bytes per mode into its own fresh files; the default bytes
//! divide the node's dirty limit and free space among the ranks on the node, so the node as a
//! whole writes [`DIRTY_MULTIPLE`] × its limit. Rank 0's choice is used by every rank.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use iolens_engine::TargetPolicy;
use iolens_ownership::ScratchDir;
use iolens_workload::{format_bytes, FlagWorkload};
use serde::Serialize;

use crate::{run_point, PointWarning, Processes, RankShare, SuiteContext, SuiteError, SuiteTarget};

/// Default data per mode, in multiples of the dirty limit: with twice the limit, at least half
/// of what the naive mode writes must reach the device while its write calls are timed.
pub const DIRTY_MULTIPLE: u64 = 2;

#[derive(Debug, Clone)]
pub struct WriteModesConfig {
    pub target: PathBuf,
    pub bs: u64,
    /// Bytes each mode writes (over all threads); `None`: [`DIRTY_MULTIPLE`] × the dirty limit,
    /// within the free space of the target's file system.
    pub bytes: Option<u64>,
    /// Writers (threads) per mode; in a directory each has its own file (file per process).
    pub threads: u32,
    /// Region (file size) per thread; `None`: the bytes each thread writes (one pass), or for a
    /// file target, which all threads share, the bytes of all threads.
    pub region: Option<u64>,
    /// Stops each mode after this long even if it has not written its bytes (reported).
    pub time_cap: Option<Duration>,
}

impl WriteModesConfig {
    pub fn new(target: PathBuf) -> WriteModesConfig {
        WriteModesConfig { target, bs: 4096, bytes: None, threads: 1, region: None, time_cap: None }
    }

    /// The write modes as asked, the `job` of the result's envelope; what `None` resolved to
    /// (bytes per mode, region) is in the result's `sizing`.
    pub fn job(&self) -> serde_json::Value {
        serde_json::json!({
            "suite": "write-modes",
            "target": self.target.display().to_string(),
            "modes": MODES.map(|(mode, _, _)| mode),
            "bs_bytes": self.bs,
            "bytes_per_mode": self.bytes,
            "threads": self.threads,
            "region_per_thread_bytes": self.region,
            "time_cap_s": self.time_cap.map(|t| t.as_secs_f64()),
        })
    }

    /// [`WriteModesConfig::job`] with what its `None`s resolved to in the run that gave `r`
    /// (bytes per mode, region per thread); the job as asked without a result.
    pub fn job_as_run(&self, r: Option<&WriteModesResult>) -> serde_json::Value {
        let mut job = self.job();
        if let Some(r) = r {
            job["bytes_per_mode"] = r.bytes_per_mode.into();
            job["region_per_thread_bytes"] = r.region_per_thread.into();
        }
        job
    }
}

/// The kernel's dirty limit: `vm.dirty_bytes` when set, else `vm.dirty_ratio` percent of the
/// dirtyable memory. The kernel takes the ratio of free plus reclaimable page-cache memory,
/// which `MemAvailable` approximates; `MemTotal` (without MemAvailable) overstates it.
pub fn dirty_limit(dirty_bytes: u64, dirty_ratio: u64, memory: u64) -> u64 {
    if dirty_bytes > 0 {
        dirty_bytes
    } else {
        (memory as u128 * dirty_ratio.min(100) as u128 / 100) as u64
    }
}

/// How the bytes per mode were chosen.
#[derive(Debug, Clone, Serialize)]
pub struct Sizing {
    pub dirty_limit_bytes: u64,
    /// Where the limit comes from, e.g. "vm.dirty_ratio 20% of MemAvailable 22.6GiB".
    pub dirty_source: String,
    pub multiple: u64,
    /// Free space on the target's file system before the suite (None: no accounting).
    pub free_bytes: Option<u64>,
    pub reason: String,
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn meminfo(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// The dirty limit of this machine and where it comes from.
pub fn system_dirty_limit() -> (u64, String) {
    let dirty_bytes = read_u64("/proc/sys/vm/dirty_bytes").unwrap_or(0);
    if dirty_bytes > 0 {
        return (dirty_bytes, format!("vm.dirty_bytes {}", format_bytes(dirty_bytes)));
    }
    let ratio = read_u64("/proc/sys/vm/dirty_ratio").unwrap_or(20);
    let (memory, basis) = match meminfo("MemAvailable") {
        Some(m) => (m, "MemAvailable"),
        None => (meminfo("MemTotal").unwrap_or(1 << 30), "MemTotal"),
    };
    (dirty_limit(0, ratio, memory), format!("vm.dirty_ratio {ratio}% of {basis} {}", format_bytes(memory)))
}

/// Bytes per mode: `asked`, or [`DIRTY_MULTIPLE`] × `limit` kept within `free` (minus a tenth,
/// at least 64 MiB, for everything else on the file system); whole requests per thread.
pub fn choose_bytes(
    asked: Option<u64>,
    limit: u64,
    source: &str,
    free: Option<u64>,
    unit: u64,
) -> (u64, String) {
    let unit = unit.max(1);
    let whole = |b: u64| (b - b % unit).max(unit);
    if let Some(b) = asked {
        return (whole(b), format!("--bytes {}", format_bytes(b)));
    }
    let want = limit.saturating_mul(DIRTY_MULTIPLE);
    let why = format!("{DIRTY_MULTIPLE} × the dirty limit {} ({source})", format_bytes(limit));
    match free {
        Some(free) if want > free.saturating_sub((free / 10).max(64 << 20)) => {
            let room = whole(free.saturating_sub((free / 10).max(64 << 20)));
            (
                room,
                format!(
                    "{why} would be {}, but the file system has {} free: clamped to {}{}",
                    format_bytes(want),
                    format_bytes(free),
                    format_bytes(room),
                    if room < limit {
                        "; that is below the dirty limit, so the cache can absorb the writes: \
                         the naive figure stays a memory figure (use a larger file system)"
                    } else {
                        ""
                    }
                ),
            )
        }
        _ => (whole(want), why),
    }
}

/// One mode's phase, broken down.
#[derive(Debug, Clone, Serialize)]
pub struct ModeResult {
    pub mode: &'static str,
    pub ops: u64,
    pub bytes: u64,
    /// Time inside write calls, mean per thread.
    pub write_s: f64,
    pub fsync_s: f64,
    pub close_s: f64,
    /// The whole timed phase: from the first write to the end of close.
    pub phase_s: f64,
    /// ops / time in write calls: what timing only the calls reports.
    pub apparent_iops: f64,
    /// ops / whole phase, fsync and close included.
    pub effective_iops: f64,
    /// Bytes per second of time in write calls, and of the whole phase.
    pub apparent_bw_bytes_s: f64,
    pub effective_bw_bytes_s: f64,
    /// Bytes the device wrote inside the phase (None without a block device).
    pub device_write_bytes: Option<u64>,
    /// The mode stopped at the time cap before writing its bytes.
    pub capped_by_time: bool,
    /// The mode's warnings; its JSON lists their codes, the envelope their messages.
    #[serde(rename = "warning_codes", serialize_with = "crate::warning_codes")]
    pub warnings: Vec<PointWarning>,
    /// Under MPI: each rank's part (the figures above are the aggregate over all ranks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_rank: Vec<RankShare>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WriteModesResult {
    pub suite: &'static str,
    pub target: String,
    #[serde(rename = "bs_bytes")]
    pub bs: u64,
    /// Bytes each mode was to write, over all threads (of all ranks under MPI).
    pub bytes_per_mode: u64,
    /// Under MPI: the bytes each rank was to write per mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_rank: Option<u64>,
    /// Under MPI: the ranks (each wrote into fresh files of its own) and their hosts.
    #[serde(flatten)]
    pub processes: Option<Processes>,
    pub threads: u32,
    #[serde(rename = "region_per_thread_bytes")]
    pub region_per_thread: u64,
    /// Random offsets without replacement: each block once per pass.
    pub random_map: bool,
    /// Each mode wrote new files (false for a file or device target, which every mode reuses).
    pub fresh_files: bool,
    pub time_cap_s: Option<f64>,
    pub sizing: Sizing,
    pub modes: Vec<ModeResult>,
    /// Told to the envelope (see `iolens_output::contract::Body`).
    #[serde(skip)]
    pub interrupted: bool,
}

impl iolens_output::contract::Body for WriteModesResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    /// Each mode's warnings, named by the mode.
    fn warnings(&self) -> Vec<iolens_output::contract::Notice> {
        let mut all = Vec::new();
        for m in &self.modes {
            all.extend(m.warnings.iter().map(|w| w.notice(m.mode)));
        }
        all
    }
}

const MODES: [(&str, bool, &str); 3] =
    [("naive", false, "none"), ("fsync", false, "end"), ("direct", true, "none")];

/// Modes measured, one after the other (each at most `time_cap` long, when set).
pub const MODE_COUNT: usize = MODES.len();

/// Where one mode writes: a fresh scratch directory in a directory target, else the target.
enum ModeTarget {
    Fresh(ScratchDir),
    Reused(PathBuf),
}

impl ModeTarget {
    fn path(&self) -> &Path {
        match self {
            ModeTarget::Fresh(d) => d.path(),
            ModeTarget::Reused(p) => p,
        }
    }
}

pub fn write_modes(cfg: &WriteModesConfig, ctx: &SuiteContext) -> Result<WriteModesResult, SuiteError> {
    let threads = cfg.threads.max(1);
    let fresh = cfg.target.is_dir();
    let (limit, mut source) = system_dirty_limit();
    let mut free = iolens_device::free_bytes(&cfg.target).ok().flatten();
    let ranks = ctx.runner.ranks().max(1);
    let hosts = ctx.runner.hosts();
    let node_ranks = hosts.get(ctx.runner.rank()).map_or(1, |me| hosts.iter().filter(|h| *h == me).count());
    let mut rank_limit = limit;
    if node_ranks > 1 {
        // The node's ranks share its page cache and its file system.
        rank_limit = limit / node_ranks as u64;
        free = free.map(|f| f / node_ranks as u64);
        source = format!("{source}, shared by the node's {node_ranks} ranks");
    }
    let (bytes, reason) = choose_bytes(cfg.bytes, rank_limit, &source, free, cfg.bs * threads as u64);
    // Every rank writes what rank 0 chose, so the ranks' parts add up to one plan.
    let mut chosen = [bytes];
    ctx.runner.share(&mut chosen);
    let per_thread = chosen[0] / threads as u64;
    // Own files: each thread's file is what it writes, once. A shared file: every thread
    // addresses all of it (their permutations are independent, so blocks may be written twice).
    let region = cfg.region.unwrap_or(if fresh { per_thread } else { per_thread * threads as u64 });
    let sizing = Sizing {
        dirty_limit_bytes: limit,
        dirty_source: source,
        multiple: DIRTY_MULTIPLE,
        free_bytes: free,
        reason,
    };
    // A file target is shared by every mode; made once (and removed at the end) if it is new.
    let shared = if fresh { None } else { Some(SuiteTarget::new(&cfg.target, "write-modes", ctx)?) };
    let mut modes = Vec::new();
    for (mode, direct, fsync) in MODES {
        if ctx.stopped() {
            break;
        }
        let target = match &shared {
            Some(t) => ModeTarget::Reused(t.path.clone()),
            None => ModeTarget::Fresh(
                ScratchDir::create(&cfg.target, &format!("iolens-write-modes-{mode}-"), ctx.keep).map_err(
                    |e| {
                        ctx.runner.failed_alone(format!(
                            "cannot create a scratch directory in {}: {e}",
                            cfg.target.display()
                        ))
                    },
                )?,
            ),
        };
        let flags = FlagWorkload {
            target: target.path().to_path_buf(),
            rw: "randwrite".into(),
            bs: cfg.bs.to_string(),
            threads,
            direct,
            fsync: Some(fsync.into()),
            size: Some(region.to_string()),
            bytes: Some(per_thread.to_string()),
            time: cfg.time_cap.map(|t| format!("{}ms", t.as_millis().max(1))),
            random_map: Some(true),
            ..FlagWorkload::default()
        };
        // New files as a program writes them (IOR, a checkpoint): not preallocated, so the
        // cache allocates blocks as it writes back, as it would for the program.
        let sparse = SuiteContext {
            stop: Arc::clone(&ctx.stop),
            observer: ctx.observer,
            policy: TargetPolicy { sparse: fresh, ..ctx.policy },
            keep: ctx.keep,
            command: ctx.command.clone(),
            runner: ctx.runner,
        };
        let f = run_point(&flags, &sparse)?;
        if let Some(e) = f.error {
            return Err(SuiteError::Config(e));
        }
        if let ModeTarget::Reused(path) = &target {
            // Write back what this mode left dirty, untimed, so it does not land in the next window.
            if let Ok(f) = std::fs::File::open(path) {
                let _ = f.sync_all();
            }
        }
        // A fresh directory goes with its files: their dirty pages are dropped, not written.
        drop(target);
        // Mean per writer: every thread of every rank.
        let write_s = f.arpt_s * f.ops as f64 / (threads as usize * ranks) as f64;
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
            apparent_bw_bytes_s: per(f.bytes as f64, write_s),
            effective_bw_bytes_s: per(f.bytes as f64, f.wall_s),
            device_write_bytes: f.device_write_bytes,
            capped_by_time: f.bytes < per_thread * threads as u64 * ranks as u64 && !f.interrupted,
            warnings: f.warnings,
            per_rank: f.per_rank,
        });
    }
    drop(shared);
    Ok(WriteModesResult {
        suite: "write-modes",
        target: cfg.target.display().to_string(),
        bs: cfg.bs,
        bytes_per_mode: per_thread * threads as u64 * ranks as u64,
        bytes_per_rank: (ranks > 1).then_some(per_thread * threads as u64),
        processes: ctx.processes(),
        threads,
        region_per_thread: region,
        random_map: true,
        fresh_files: fresh,
        time_cap_s: cfg.time_cap.map(|t| t.as_secs_f64()),
        sizing,
        modes,
        interrupted: ctx.stopped(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirty_limit_from_bytes_or_ratio() {
        assert_eq!(dirty_limit(64 << 20, 20, 10 << 30), 64 << 20, "dirty_bytes wins when set");
        assert_eq!(dirty_limit(0, 20, 10 << 30), 2 << 30);
        assert_eq!(dirty_limit(0, 250, 1 << 30), 1 << 30, "at most all memory");
    }

    #[test]
    fn bytes_per_mode_follow_the_limit_within_free_space() {
        let (b, why) = choose_bytes(None, 1 << 30, "x", Some(100 << 30), 8192);
        assert_eq!(b, 2 << 30);
        assert!(why.contains("2 × the dirty limit"), "{why}");
        let (b, why) = choose_bytes(None, 1 << 30, "x", Some(1 << 30), 4096);
        assert!(b < 1 << 30 && b % 4096 == 0 && b > 0, "{b}");
        assert!(why.contains("clamped") && why.contains("below the dirty limit"), "{why}");
        let (b, why) = choose_bytes(None, 1 << 30, "x", Some(2 << 30), 4096);
        assert!(b > 1 << 30 && b < 2 << 30, "{b}");
        assert!(why.contains("clamped") && !why.contains("below"), "{why}");
        let (b, why) = choose_bytes(Some(10_000), 1 << 30, "x", Some(1 << 20), 4096);
        assert_eq!(b, 8192, "--bytes wins, in whole requests per thread");
        assert!(why.contains("--bytes"));
    }
}
