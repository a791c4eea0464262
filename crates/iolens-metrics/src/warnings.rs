use serde::{Serialize, Serializer};

use crate::{DeviceReport, Figures};

/// What a warning is about; stable identifiers for scripts reading the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningCode {
    PageCacheReads,
    WritesNotDurable,
    DeviceCountersUnavailable,
    ShortRun,
    FewOps,
    Interrupted,
    OpErrors,
    ShortTransfers,
    TraceDropped,
    CleanupFailed,
    BusyLogIncomplete,
    /// Less data than the b_eff_io rule (20 times the file-system cache) per access method.
    BelowCacheRule,
    /// Repetitions of the same run vary more than the threshold (coefficient of variation).
    HighVariation,
    /// A read target iolens did not lay out has holes: reads of holes return zeros without
    /// touching the device.
    SparseTarget,
    /// `--size` asked for more than an existing file (or device) holds; the region is what is.
    SizeClamped,
    /// The target lives in RAM (tmpfs, ramfs): the figures measure memory, not storage.
    MemoryBackedTarget,
    /// The device counters show I/O this run cannot explain: other processes share the device.
    DeviceShared,
    /// Across MPI ranks: the clock offsets' total uncertainty exceeds 1% of the busy time.
    ClockUncertain,
    /// Across MPI ranks: a rank's warning, carried into the combined result.
    RankWarning,
    /// An agent achieved less than [`RATE_SHORTFALL`] of the rate it asked for.
    RateNotReached,
    /// A suite's schedule did not hold its scheduled time (b_eff_io's T).
    ScheduleOverrun,
}

impl Serialize for WarningCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl WarningCode {
    /// Every code, in declaration order.
    pub const ALL: [WarningCode; 21] = [
        WarningCode::PageCacheReads,
        WarningCode::WritesNotDurable,
        WarningCode::DeviceCountersUnavailable,
        WarningCode::ShortRun,
        WarningCode::FewOps,
        WarningCode::Interrupted,
        WarningCode::OpErrors,
        WarningCode::ShortTransfers,
        WarningCode::TraceDropped,
        WarningCode::CleanupFailed,
        WarningCode::BusyLogIncomplete,
        WarningCode::BelowCacheRule,
        WarningCode::HighVariation,
        WarningCode::SparseTarget,
        WarningCode::SizeClamped,
        WarningCode::MemoryBackedTarget,
        WarningCode::DeviceShared,
        WarningCode::ClockUncertain,
        WarningCode::RankWarning,
        WarningCode::RateNotReached,
        WarningCode::ScheduleOverrun,
    ];

    /// The code named `code` in JSON (the inverse of [`WarningCode::as_str`]).
    pub fn from_code(code: &str) -> Option<WarningCode> {
        WarningCode::ALL.into_iter().find(|c| c.as_str() == code)
    }

    /// What the warning means, in words, for where only the code is known; a run's own
    /// message (with its numbers) says more and is preferred wherever there is one.
    pub fn describe(self) -> String {
        match self {
            WarningCode::PageCacheReads => {
                "reads served mostly from the page cache: the figures measure memory, not storage".into()
            }
            WarningCode::WritesNotDurable => {
                "writes not on stable storage at the end of the phase: part sits in the page cache".into()
            }
            WarningCode::DeviceCountersUnavailable => {
                "no device counters: cache hits cannot be told apart from storage".into()
            }
            WarningCode::ShortRun => format!("ran under {MIN_TRUSTED_WALL_S} s: the figures are noisy"),
            WarningCode::FewOps => format!(
                "fewer than {MIN_TRUSTED_OPS} operations measured: percentiles above p99 are not meaningful"
            ),
            WarningCode::Interrupted => {
                "stopped before the end: the figures cover only the part that ran".into()
            }
            WarningCode::OpErrors => "some operations failed".into(),
            WarningCode::ShortTransfers => "some operations moved fewer bytes than requested".into(),
            WarningCode::TraceDropped => "trace records were lost: the trace file is incomplete".into(),
            WarningCode::CleanupFailed => "a file iolens created could not be removed".into(),
            WarningCode::BusyLogIncomplete => {
                "the busy-period log is incomplete: busy time and BPS undercount".into()
            }
            WarningCode::BelowCacheRule => {
                "less data than 20 times the file-system cache per access method (b_eff_io rule)".into()
            }
            WarningCode::HighVariation => "the repetitions vary more than the threshold".into(),
            WarningCode::SparseTarget => {
                "the read target has holes: reads of holes return zeros without touching the device".into()
            }
            WarningCode::SizeClamped => {
                "the region asked for is larger than the target: it is what is".into()
            }
            WarningCode::MemoryBackedTarget => {
                "the target lives in RAM: the figures measure memory, not storage".into()
            }
            WarningCode::DeviceShared => {
                "other I/O shares the device: the device figures are not this run's alone".into()
            }
            WarningCode::ClockUncertain => {
                "the ranks' clock offsets are uncertain beyond 1% of the busy time".into()
            }
            WarningCode::RankWarning => "a rank warned (see its own result)".into(),
            WarningCode::RateNotReached => "the asked rate was not reached: the load was lighter".into(),
            WarningCode::ScheduleOverrun => "the schedule did not hold its scheduled time".into(),
        }
    }

    /// The identifier used in JSON and in the terminal, e.g. `page_cache_reads`.
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::PageCacheReads => "page_cache_reads",
            WarningCode::WritesNotDurable => "writes_not_durable",
            WarningCode::DeviceCountersUnavailable => "device_counters_unavailable",
            WarningCode::ShortRun => "short_run",
            WarningCode::FewOps => "few_ops",
            WarningCode::Interrupted => "interrupted",
            WarningCode::OpErrors => "op_errors",
            WarningCode::ShortTransfers => "short_transfers",
            WarningCode::TraceDropped => "trace_dropped",
            WarningCode::CleanupFailed => "cleanup_failed",
            WarningCode::BusyLogIncomplete => "busy_log_incomplete",
            WarningCode::BelowCacheRule => "below_cache_rule",
            WarningCode::HighVariation => "high_variation",
            WarningCode::SparseTarget => "sparse_target",
            WarningCode::SizeClamped => "size_clamped",
            WarningCode::MemoryBackedTarget => "memory_backed_target",
            WarningCode::DeviceShared => "device_shared",
            WarningCode::ClockUncertain => "clock_uncertain",
            WarningCode::RankWarning => "rank_warning",
            WarningCode::RateNotReached => "rate_not_reached",
            WarningCode::ScheduleOverrun => "schedule_overrun",
        }
    }
}

/// A warning as a value: shown under the table and written into the JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    pub code: WarningCode,
    pub message: String,
}

impl Warning {
    pub fn new(code: WarningCode, message: impl Into<String>) -> Warning {
        Warning { code, message: message.into() }
    }

    /// `warnings` as the envelope's notices (what a result's `Body::warnings` tells).
    pub fn notices(warnings: &[Warning]) -> Vec<iolens_output::contract::Notice> {
        warnings
            .iter()
            .map(|w| iolens_output::contract::Notice::new(w.code.as_str(), w.message.clone()))
            .collect()
    }
}

/// The facts about a run the warning rules look at.
#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    pub aggregate: &'a Figures,
    pub device: Option<&'a DeviceReport>,
    /// Why there are no device counters, when there are none.
    pub no_device_reason: Option<String>,
    /// Some agent read through the page cache (no O_DIRECT).
    pub buffered_reads: bool,
    /// Some agent wrote through the page cache without fsync.
    pub unsynced_writes: bool,
    /// Every agent used the null engine: there is no storage to warn about.
    pub null_only: bool,
    pub interrupted: bool,
    pub trace_dropped: u64,
    /// Some agent reads / writes (real I/O, not the null engine).
    pub reads: bool,
    pub writes: bool,
    /// Every reading agent uses O_DIRECT: nothing (no read-ahead) makes the device read more.
    pub reads_direct_only: bool,
    /// Every writing agent uses O_DIRECT: only file-system metadata makes the device write more.
    pub writes_direct_only: bool,
    /// Why the targets live in RAM (e.g. "/dev/shm/x is on tmpfs"), when they do.
    pub memory_backed: Option<String>,
    /// Every rate-limited agent: what it asked for and what it did.
    pub rates: Vec<RateCheck>,
}

/// A rate-limited agent's asked rate against its operations over its measurement window.
#[derive(Debug, Clone, PartialEq)]
pub struct RateCheck {
    pub agent: String,
    /// Operations per second asked for.
    pub asked: f64,
    pub ops: u64,
    pub wall_s: f64,
    /// Poisson arrivals: the count itself is random, so chance shortfalls are allowed for.
    pub poisson: bool,
}

impl RateCheck {
    pub fn achieved(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.ops as f64 / self.wall_s
        } else {
            0.0
        }
    }

    /// Below [`RATE_SHORTFALL`] of the asked rate; for Poisson arrivals also more than three
    /// standard deviations of the count below its expectation, so chance alone rarely warns.
    pub fn short(&self) -> bool {
        if self.wall_s <= 0.0 || self.asked <= 0.0 {
            return false;
        }
        let expected = self.asked * self.wall_s;
        let below = (self.ops as f64) < RATE_SHORTFALL * expected;
        below && (!self.poisson || (self.ops as f64) < expected - 3.0 * expected.sqrt())
    }
}

impl<'a> RunFacts<'a> {
    /// Facts with nothing but the figures known.
    pub fn new(aggregate: &'a Figures) -> RunFacts<'a> {
        RunFacts {
            aggregate,
            device: None,
            no_device_reason: None,
            buffered_reads: false,
            unsynced_writes: false,
            null_only: false,
            interrupted: false,
            trace_dropped: 0,
            reads: false,
            writes: false,
            reads_direct_only: false,
            writes_direct_only: false,
            memory_backed: None,
            rates: Vec::new(),
        }
    }
}

/// Runs shorter than this are flagged as too short to trust.
pub const MIN_TRUSTED_WALL_S: f64 = 1.0;
/// Fewer data operations than this make high percentiles meaningless.
pub const MIN_TRUSTED_OPS: u64 = 1000;
/// An agent achieving less than this share of its asked rate is warned about.
pub const RATE_SHORTFALL: f64 = 0.95;
/// Device bytes below this share of application bytes mean the cache absorbed the traffic.
const CACHE_SHARE: f64 = 0.5;
/// Below this many application bytes, cache comparisons drown in device noise.
const MIN_BYTES_FOR_CACHE_CHECK: u64 = 1 << 20;
/// Device bytes the run cannot explain below this are noise (journal commits, atime, metadata).
const DEVICE_NOISE_BYTES: u64 = 1 << 20;
/// O_DIRECT reads reach the device as asked; beyond this share more, someone else read too.
const DIRECT_READ_SLACK: f64 = 1.1;
/// O_DIRECT writes add metadata and journal writes, but not as much again as the data.
const DIRECT_WRITE_SLACK: f64 = 2.0;
const DIRECT_WRITE_NOISE_BYTES: u64 = 4 << 20;

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// Why the device counters cannot be this run's alone, if they cannot.
fn device_shared(facts: &RunFacts, dev: &DeviceReport) -> Option<String> {
    let f = facts.aggregate;
    if !facts.writes && dev.write_bytes >= DEVICE_NOISE_BYTES {
        return Some(format!("the device wrote {} during a run that wrote nothing", mib(dev.write_bytes)));
    }
    // Buffered writes of partial pages read the rest of the page: at most what was written.
    if !facts.reads && dev.read_bytes >= DEVICE_NOISE_BYTES.max(f.write_bytes) {
        return Some(format!(
            "the device read {} during a run that read nothing (and wrote {})",
            mib(dev.read_bytes),
            mib(f.write_bytes)
        ));
    }
    // What the read calls moved (data sieving moves more than the application asked for).
    let moved_reads = f.moved_bytes.saturating_sub(f.write_bytes).max(f.read_bytes);
    if facts.reads
        && facts.reads_direct_only
        && dev.read_bytes as f64 > DIRECT_READ_SLACK * moved_reads as f64 + DEVICE_NOISE_BYTES as f64
    {
        return Some(format!(
            "the device read {} while this run's O_DIRECT reads moved {} ({:.2}x), and no read-ahead \
             or cache explains the difference",
            mib(dev.read_bytes),
            mib(moved_reads),
            dev.read_bytes as f64 / moved_reads.max(1) as f64
        ));
    }
    if facts.writes
        && facts.writes_direct_only
        && dev.write_bytes as f64
            > DIRECT_WRITE_SLACK * f.write_bytes as f64 + DIRECT_WRITE_NOISE_BYTES as f64
    {
        return Some(format!(
            "the device wrote {} while this run's O_DIRECT writes asked for {} ({:.2}x), more than \
             file-system metadata explains",
            mib(dev.write_bytes),
            mib(f.write_bytes),
            dev.write_bytes as f64 / f.write_bytes.max(1) as f64
        ));
    }
    None
}

/// Applies the honesty rules to a finished run.
pub fn evaluate_warnings(facts: &RunFacts) -> Vec<Warning> {
    let f = facts.aggregate;
    let mut out = Vec::new();
    if facts.interrupted {
        out.push(Warning::new(
            WarningCode::Interrupted,
            "run interrupted: the figures cover only the part that ran",
        ));
    }
    if let (Some(why), false) = (&facts.memory_backed, facts.null_only) {
        out.push(Warning::new(
            WarningCode::MemoryBackedTarget,
            format!(
                "{why}: the target lives in RAM, so these figures measure memory, not storage \
                 (O_DIRECT, where accepted, bypasses no device here)"
            ),
        ));
    }
    if !facts.null_only {
        if let Some(dev) = facts.device {
            if let Some(why) = device_shared(facts, dev) {
                out.push(Warning::new(
                    WarningCode::DeviceShared,
                    format!(
                        "{why}: device counters are whole-device and include other processes' I/O \
                         (and the file system's own); the device figures are not this run's alone"
                    ),
                ));
            }
        }
        match facts.device {
            Some(dev) => {
                if facts.buffered_reads
                    && f.read_bytes >= MIN_BYTES_FOR_CACHE_CHECK
                    && (dev.read_bytes as f64) < CACHE_SHARE * f.read_bytes as f64
                {
                    out.push(Warning::new(
                        WarningCode::PageCacheReads,
                        format!(
                            "reads served mostly from the page cache: the device read {} for {} requested ({:.0}%); \
                             this measures memory, not storage (use --direct, or a region larger than RAM)",
                            mib(dev.read_bytes),
                            mib(f.read_bytes),
                            100.0 * dev.read_bytes as f64 / f.read_bytes as f64
                        ),
                    ));
                }
                if facts.unsynced_writes
                    && f.write_bytes >= MIN_BYTES_FOR_CACHE_CHECK
                    && (dev.write_bytes as f64) < CACHE_SHARE * f.write_bytes as f64
                {
                    out.push(Warning::new(
                        WarningCode::WritesNotDurable,
                        format!(
                            "writes not on stable storage at the end of the phase: the device wrote {} of {} requested \
                             ({:.0}%); the rest sits in the page cache (use --fsync end or --direct)",
                            mib(dev.write_bytes),
                            mib(f.write_bytes),
                            100.0 * dev.write_bytes as f64 / f.write_bytes as f64
                        ),
                    ));
                }
            }
            None => {
                if facts.buffered_reads || facts.unsynced_writes {
                    out.push(Warning::new(
                        WarningCode::DeviceCountersUnavailable,
                        format!(
                            "no device counters ({}): cache hits and unsynced writes cannot be told apart from storage",
                            facts.no_device_reason.as_deref().unwrap_or("no block device behind the target")
                        ),
                    ));
                }
            }
        }
    }
    if !facts.interrupted && f.wall_s < MIN_TRUSTED_WALL_S {
        out.push(Warning::new(
            WarningCode::ShortRun,
            format!(
                "run lasted {:.3} s: figures from under {MIN_TRUSTED_WALL_S} s are noisy (use --time)",
                f.wall_s
            ),
        ));
    }
    if f.ops < MIN_TRUSTED_OPS {
        out.push(Warning::new(
            WarningCode::FewOps,
            format!(
                "{} operations measured, fewer than {MIN_TRUSTED_OPS}: percentiles above p99 are not meaningful",
                f.ops
            ),
        ));
    }
    if f.errors > 0 {
        out.push(Warning::new(WarningCode::OpErrors, format!("{} operations failed", f.errors)));
    }
    if f.short_ops > 0 {
        out.push(Warning::new(
            WarningCode::ShortTransfers,
            format!("{} operations moved fewer bytes than requested", f.short_ops),
        ));
    }
    let short: Vec<String> = facts
        .rates
        .iter()
        .filter(|r| r.short())
        .map(|r| {
            format!(
                "{} asked {} ops/s, achieved {:.1} ops/s ({:.0}%)",
                r.agent,
                r.asked,
                r.achieved(),
                100.0 * r.achieved() / r.asked
            )
        })
        .collect();
    if !facts.interrupted && !short.is_empty() {
        out.push(Warning::new(
            WarningCode::RateNotReached,
            format!(
                "rate not reached (below {:.0}% of the asked rate): {}; the load was lighter than asked, \
                 so the figures describe that lighter load",
                RATE_SHORTFALL * 100.0,
                short.join("; ")
            ),
        ));
    }
    if facts.trace_dropped > 0 {
        out.push(Warning::new(
            WarningCode::TraceDropped,
            format!(
                "{} trace records could not be written: the trace file is incomplete",
                facts.trace_dropped
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(read: u64, write: u64, wall_s: f64, ops: u64) -> Figures {
        Figures {
            read_bytes: read,
            write_bytes: write,
            bytes: read + write,
            wall_s,
            ops,
            ..Default::default()
        }
    }

    fn codes(w: &[Warning]) -> Vec<WarningCode> {
        w.iter().map(|w| w.code).collect()
    }

    #[test]
    fn cached_reads_and_unsynced_writes_are_flagged() {
        let f = figures(100 << 20, 100 << 20, 5.0, 10_000);
        let dev = DeviceReport { read_bytes: 1 << 20, write_bytes: 2 << 20, ..Default::default() };
        let facts = RunFacts {
            device: Some(&dev),
            buffered_reads: true,
            unsynced_writes: true,
            reads: true,
            writes: true,
            ..RunFacts::new(&f)
        };
        assert_eq!(
            codes(&evaluate_warnings(&facts)),
            vec![WarningCode::PageCacheReads, WarningCode::WritesNotDurable]
        );
    }

    #[test]
    fn direct_io_reaching_the_device_is_not_flagged() {
        let f = figures(100 << 20, 0, 5.0, 10_000);
        let dev = DeviceReport { read_bytes: 100 << 20, ..Default::default() };
        let facts = RunFacts { device: Some(&dev), buffered_reads: true, reads: true, ..RunFacts::new(&f) };
        assert!(evaluate_warnings(&facts).is_empty());
    }

    #[test]
    fn memory_backed_targets_are_named() {
        let f = figures(100 << 20, 0, 5.0, 10_000);
        let facts = RunFacts { memory_backed: Some("/dev/shm/x is on tmpfs".into()), ..RunFacts::new(&f) };
        let w = evaluate_warnings(&facts);
        assert_eq!(codes(&w), vec![WarningCode::MemoryBackedTarget]);
        assert!(w[0].message.contains("tmpfs") && w[0].message.contains("RAM"));
        let null = RunFacts { null_only: true, ..facts };
        assert!(evaluate_warnings(&null).is_empty(), "the null engine touches no target");
    }

    #[test]
    fn device_io_the_run_cannot_explain_is_blamed_on_others() {
        let f = figures(100 << 20, 0, 5.0, 10_000);
        let f = Figures { moved_bytes: 100 << 20, ..f };
        let read_only = RunFacts { reads: true, reads_direct_only: true, ..RunFacts::new(&f) };
        // Writes during a read-only run.
        let dev = DeviceReport { read_bytes: 100 << 20, write_bytes: 8 << 20, ..Default::default() };
        let w = evaluate_warnings(&RunFacts { device: Some(&dev), ..read_only.clone() });
        assert_eq!(codes(&w), vec![WarningCode::DeviceShared]);
        assert!(w[0].message.contains("wrote 8.0 MiB") && w[0].message.contains("whole-device"));
        // Twice the bytes O_DIRECT reads asked for.
        let dev = DeviceReport { read_bytes: 200 << 20, ..Default::default() };
        let w = evaluate_warnings(&RunFacts { device: Some(&dev), ..read_only.clone() });
        assert_eq!(codes(&w), vec![WarningCode::DeviceShared]);
        // Buffered reads may read ahead: not blamed on others.
        let buffered = RunFacts { device: Some(&dev), reads_direct_only: false, ..read_only.clone() };
        assert!(evaluate_warnings(&buffered).is_empty());
        // Journal-sized noise is not flagged.
        let dev = DeviceReport { read_bytes: 100 << 20, write_bytes: 64 << 10, ..Default::default() };
        assert!(evaluate_warnings(&RunFacts { device: Some(&dev), ..read_only.clone() }).is_empty());
        // Reads during a write-only run, beyond what partial pages explain.
        let w_only = figures(0, 4 << 20, 5.0, 10_000);
        let dev = DeviceReport { read_bytes: 50 << 20, write_bytes: 4 << 20, ..Default::default() };
        let facts = RunFacts { device: Some(&dev), writes: true, ..RunFacts::new(&w_only) };
        assert_eq!(codes(&evaluate_warnings(&facts)), vec![WarningCode::DeviceShared]);
        // O_DIRECT writes: metadata on top is fine, three times the data is not.
        let direct = RunFacts { writes: true, writes_direct_only: true, ..RunFacts::new(&w_only) };
        let dev = DeviceReport { write_bytes: 5 << 20, ..Default::default() };
        assert!(evaluate_warnings(&RunFacts { device: Some(&dev), ..direct.clone() }).is_empty());
        let dev = DeviceReport { write_bytes: 40 << 20, ..Default::default() };
        assert_eq!(
            codes(&evaluate_warnings(&RunFacts { device: Some(&dev), ..direct })),
            vec![WarningCode::DeviceShared]
        );
    }

    #[test]
    fn a_rate_shortfall_is_flagged_per_agent() {
        let f = figures(0, 100 << 20, 5.0, 10_000);
        let check = |asked: f64, ops: u64, poisson: bool| RateCheck {
            agent: format!("a{asked}"),
            asked,
            ops,
            wall_s: 2.0,
            poisson,
        };
        // 5000/s asked, 2801/s achieved: the case.
        let facts = RunFacts {
            rates: vec![check(5000.0, 5602, false), check(100.0, 200, false)],
            ..RunFacts::new(&f)
        };
        let w = evaluate_warnings(&facts);
        assert_eq!(codes(&w), vec![WarningCode::RateNotReached]);
        assert!(
            w[0].message.contains("a5000 asked 5000 ops/s, achieved 2801.0 ops/s (56%)"),
            "{}",
            w[0].message
        );
        assert!(!w[0].message.contains("a100"), "only the agent that fell short");
        // 95% is enough; 94% is not.
        assert!(!check(1000.0, 1900, false).short());
        assert!(check(1000.0, 1880, false).short());
        // Poisson counts vary: 40 of 50 expected is within chance, 20 is not.
        assert!(!check(25.0, 40, true).short());
        assert!(check(25.0, 20, true).short());
        // Interrupted runs stopped early by design.
        let facts =
            RunFacts { rates: vec![check(5000.0, 10, false)], interrupted: true, ..RunFacts::new(&f) };
        assert!(!codes(&evaluate_warnings(&facts)).contains(&WarningCode::RateNotReached));
    }

    #[test]
    fn every_code_has_a_description_and_reads_back() {
        for code in WarningCode::ALL {
            // A new variant stops this match compiling: a reminder to list it in ALL.
            match code {
                WarningCode::PageCacheReads
                | WarningCode::WritesNotDurable
                | WarningCode::DeviceCountersUnavailable
                | WarningCode::ShortRun
                | WarningCode::FewOps
                | WarningCode::Interrupted
                | WarningCode::OpErrors
                | WarningCode::ShortTransfers
                | WarningCode::TraceDropped
                | WarningCode::CleanupFailed
                | WarningCode::BusyLogIncomplete
                | WarningCode::BelowCacheRule
                | WarningCode::HighVariation
                | WarningCode::SparseTarget
                | WarningCode::SizeClamped
                | WarningCode::MemoryBackedTarget
                | WarningCode::DeviceShared
                | WarningCode::ClockUncertain
                | WarningCode::RankWarning
                | WarningCode::RateNotReached
                | WarningCode::ScheduleOverrun => {}
            }
            assert_eq!(WarningCode::from_code(code.as_str()), Some(code));
            let words = code.describe();
            assert!(words.len() > 20 && !words.contains(code.as_str()), "{code:?}: {words}");
        }
        let distinct: std::collections::HashSet<&str> = WarningCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(distinct.len(), WarningCode::ALL.len());
        assert_eq!(WarningCode::from_code("no_such_code"), None);
        assert!(WarningCode::FewOps
            .describe()
            .starts_with(&format!("fewer than {MIN_TRUSTED_OPS} operations")));
    }

    #[test]
    fn short_runs_few_ops_and_missing_device() {
        let f = figures(1 << 20, 0, 0.2, 10);
        let facts =
            RunFacts { buffered_reads: true, no_device_reason: Some("tmpfs".into()), ..RunFacts::new(&f) };
        let w = evaluate_warnings(&facts);
        assert_eq!(
            codes(&w),
            vec![WarningCode::DeviceCountersUnavailable, WarningCode::ShortRun, WarningCode::FewOps]
        );
        assert!(w[0].message.contains("tmpfs"));
        assert!(w[2].message.starts_with("10 operations measured, fewer than 1000: "), "{}", w[2].message);
    }
}
