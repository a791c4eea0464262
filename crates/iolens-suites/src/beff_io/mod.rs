//! b_eff_io, the effective I/O bandwidth benchmark (Rabenseifner et al., section 5.1 and
//! Table 2): five pattern types, each a list of chunk sizes with time units U (ΣU = 64), run
//! with the access methods initial write, rewrite and read, by N ranks at once.
//!
//! Definitions, as the paper gives them:
//! - a pattern runs for `T/3 · U/ΣU`; its loop is time-driven, ended by a geometric series of
//!   repeat factors (1, 2, 4, … calls, the last one cut to what the measured rate says still
//!   fits) with one collective decision per batch instead of a check after every call (the fix
//!   proposed in 5.4); patterns with U = 0 run one call;
//! - pattern types 3 and 4 are size-driven: each chunk size repeats as often as the mean of the
//!   bytes per rank types 0–2 moved with it allows; the segment of each rank is the sum, rounded
//!   up to whole MiB, and a last "fill up" call completes it;
//! - write loops end with a sync inside the timed region;
//! - a pattern type's bandwidth is its bytes over the time from opening to closing its file;
//!   an access method's value averages the types with type 0 counted twice; a partition's value
//!   weighs write 25%, rewrite 25%, read 50%; the system's b_eff_io is the maximum over the
//!   partitions (rank counts) run.
//!
//! The partition holds its scheduled time T on one clock (see `Schedule`): a pattern's time is
//! its share of what is left of T, so overruns (a pattern's one-call minimum, its sync, the
//! size-driven types) shrink every later time-driven pattern alike. The protocol gives each
//! pattern's share, budget and sync, and says why a pattern, or the partition, did not keep to
//! them.
//!
//! Rewrite and read repeat at most as many calls as the initial write made, so they always
//! touch written data. Collective access (types 0, 1 and 4) synchronizes the ranks after
//! every call, as a collective MPI-IO call does. The rank loop ([`run_rank`]) speaks to the other
//! ranks through [`Ranks`] and to files through [`PatternIo`] and [`PatternFile`], one call of a
//! pattern at a time: here ranks are threads making `pwrite`/`pread` calls ([`run`]); in
//! `iolens-mpi` they are MPI processes making the paper's MPI-IO calls, and the same
//! [`assemble_partition`] and [`system_result`] turn their logs into the protocol and the value.
//!
//! Bandwidths are in MB/s of 10^6 bytes, as the paper reports them; chunk sizes are binary
//! (1 MB = 2^20 bytes in Table 2).
//!
//! The parts: [`table2`] defines the patterns and the weights, `backend` the ranks and pattern
//! files a rank loop runs on, `rank` that loop, `schedule` how the partition keeps to T,
//! `results` the records, `assemble` the records and the system value from the ranks' logs,
//! and `progress` what a progress display is told; the terminal report is
//! `iolens_report::text::beff_io`'s.

mod assemble;
mod backend;
mod progress;
mod rank;
mod results;
mod schedule;
mod table2;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::SuiteError;

pub use assemble::{assemble_partition, system_result};
pub use backend::{PatternFile, PatternIo, Placement, PosixIo, Ranks, ThreadRanks};
pub use progress::{BeffIoStep, PatternStep};
pub use rank::{run_rank, RankLog};
pub use results::{
    method_value, partition_value, BeffIoResult, MethodValue, MpiIoInfo, Partition, PatternRecord, TypeRecord,
};
pub use schedule::{overran_schedule, SCHEDULE_TOLERANCE, SIZE_DRIVEN_ESTIMATE};
pub use table2::{mpart_for, share, table2, Method, PatternDef, METHOD_WEIGHTS, TOTAL_UNITS, TYPE_WEIGHTS};

#[derive(Debug, Clone)]
pub struct BeffIoConfig {
    pub dir: PathBuf,
    /// Rank counts of the partitions to run.
    pub ranks: Vec<usize>,
    /// The scheduled time T of one partition.
    pub time: Duration,
    /// Memory of the node (for MPART and the coffee-cup figure).
    pub memory: u64,
    pub mpart: u64,
    /// File-system cache size for the 20× rule (default: the node's memory).
    pub cache: u64,
}

impl BeffIoConfig {
    pub fn new(dir: PathBuf, memory: u64) -> BeffIoConfig {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        BeffIoConfig {
            dir,
            ranks: vec![cores],
            time: Duration::from_secs(15 * 60),
            memory,
            mpart: mpart_for(memory),
            cache: memory,
        }
    }

    /// b_eff_io as run, every default filled in: the `job` of its result's envelope.
    pub fn job(&self) -> serde_json::Value {
        serde_json::json!({
            "suite": "beff-io",
            "dir": self.dir.display().to_string(),
            "ranks": self.ranks,
            "time_s": self.time.as_secs_f64(),
            "memory_bytes": self.memory,
            "mpart_bytes": self.mpart,
            "cache_bytes": self.cache,
        })
    }
}

/// Runs one partition: `n` ranks through all patterns and methods.
fn run_partition(
    cfg: &BeffIoConfig,
    n: usize,
    stop: &AtomicBool,
    on_pattern: &(dyn Fn(&PatternStep) + Sync),
) -> Result<Partition, SuiteError> {
    let scratch = iolens_ownership::ScratchDir::create(&cfg.dir, &format!("iolens-beffio-{n}-"), false)
        .map_err(|e| {
            SuiteError::Config(format!("cannot create a scratch directory in {}: {e}", cfg.dir.display()))
        })?;
    let dir = scratch.path().to_path_buf();
    let table = table2(cfg.mpart);
    let started = Instant::now();
    let logs: Vec<std::io::Result<RankLog>> = std::thread::scope(|s| {
        let handles: Vec<_> = ThreadRanks::group(n)
            .into_iter()
            .map(|ranks| {
                let (dir, table) = (&dir, &table);
                s.spawn(move || {
                    let mut io = PosixIo { dir, rank: ranks.rank() };
                    run_rank(&ranks, &mut io, table, cfg, stop, started, on_pattern)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("rank panicked"))))
            .collect()
    });
    let elapsed_s = started.elapsed().as_secs_f64();
    drop(scratch);
    let logs: Vec<RankLog> = logs
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(|e| SuiteError::Config(format!("b_eff_io with {n} ranks: {e}")))?;
    let io = PosixIo { dir: &dir, rank: 0 };
    Ok(assemble_partition(cfg, &table, &logs, elapsed_s, &|t, m| io.call_name(t, m)))
}

/// An MPI-IO hint as `--hint KEY=VALUE` gives it: the key is everything before the first `=`.
pub fn parse_hint(s: &str) -> Result<(String, String), String> {
    let hint = "give KEY=VALUE, e.g. --hint romio_cb_write=enable";
    let (key, value) = s.split_once('=').ok_or_else(|| format!("--hint {s:?}: no '=': {hint}"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("--hint {s:?}: the key is empty: {hint}"));
    }
    if s.contains('\0') {
        return Err(format!("--hint {s:?}: contains a NUL byte"));
    }
    Ok((key.to_string(), value.to_string()))
}

/// Refuses a configuration b_eff_io cannot run: no directory, or no or zero rank counts.
pub fn check(cfg: &BeffIoConfig) -> Result<(), SuiteError> {
    if !cfg.dir.is_dir() {
        return Err(SuiteError::Config(format!(
            "{} is not a directory: b_eff_io writes its own files into a directory",
            cfg.dir.display()
        )));
    }
    if cfg.ranks.is_empty() || cfg.ranks.contains(&0) {
        return Err(SuiteError::Config("--ranks: give one or more positive rank counts, e.g. 1,2,4".into()));
    }
    Ok(())
}

/// Runs every partition of `cfg` with threads as ranks and derives the system value, telling
/// `on_step` each pattern as it starts.
pub fn run(
    cfg: &BeffIoConfig,
    stop: &AtomicBool,
    on_step: &(dyn Fn(&BeffIoStep) + Sync),
) -> Result<BeffIoResult, SuiteError> {
    check(cfg)?;
    let mut partitions = Vec::new();
    for (partition, &n) in cfg.ranks.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let partitions_n = cfg.ranks.len();
        let on_pattern = |pattern: &PatternStep| {
            on_step(&BeffIoStep { partition, partitions: partitions_n, ranks: n, pattern: *pattern })
        };
        partitions.push(run_partition(cfg, n, stop, &on_pattern)?);
    }
    Ok(system_result(cfg, partitions, stop.load(Ordering::SeqCst), "threads of one process", None))
}

#[cfg(test)]
mod tests {
    use super::table2::MIB;
    use super::*;

    #[test]
    fn hints_split_at_the_first_equals_sign() {
        assert_eq!(parse_hint("cb_nodes=2").unwrap(), ("cb_nodes".into(), "2".into()));
        assert_eq!(parse_hint("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(parse_hint("striping_unit=").unwrap(), ("striping_unit".into(), String::new()));
        assert!(parse_hint("novalue").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_hint("=1").unwrap_err().contains("key is empty"));
        assert!(parse_hint("a=\0").unwrap_err().contains("NUL"));
    }

    #[test]
    fn progress_names_every_method_and_pattern_type_in_order_once_per_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = BeffIoConfig::new(dir.path().to_path_buf(), 64 * MIB);
        cfg.ranks = vec![1, 2];
        cfg.time = Duration::from_millis(300);
        cfg.mpart = 2 * MIB;
        let steps = std::sync::Mutex::new(Vec::new());
        let result = run(&cfg, &AtomicBool::new(false), &|s| steps.lock().unwrap().push(*s)).unwrap();
        let steps = steps.into_inner().unwrap();
        let patterns = table2(cfg.mpart).len();
        // Rank 0 alone tells: one step per pattern and method in each partition.
        assert_eq!(steps.len(), 2 * 3 * patterns, "{steps:?}");
        for (partition, of_partition) in steps.chunks(3 * patterns).enumerate() {
            let order: Vec<(Method, u8)> =
                of_partition.iter().map(|s| (s.pattern.method, s.pattern.pattern_type)).collect();
            let mut sorted = order.clone();
            sorted.sort_by_key(|(m, t)| (*m as u8, *t));
            assert_eq!(order, sorted, "write, rewrite, read, each type 0 to 4 in turn");
            assert!(of_partition.iter().all(|s| s.partition == partition && s.partitions == 2));
            assert!(of_partition.iter().all(|s| s.ranks == cfg.ranks[partition]));
        }
        let fractions: Vec<f64> = steps.iter().map(BeffIoStep::fraction).collect();
        assert!(
            fractions.windows(2).all(|w| w[0] <= w[1]) && fractions.iter().all(|f| (0.0..=1.0).contains(f))
        );
        assert!(steps[0].describe().starts_with("write, type 0, chunk "), "{}", steps[0].describe());
        assert_eq!(result.partitions.len(), 2);
    }
}
