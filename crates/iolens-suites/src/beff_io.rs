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

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use iolens_engine::RunObserver;
use iolens_metrics::{Warning, WarningCode};
use iolens_report::table::Table;
use iolens_workload::format_bytes;
use serde::Serialize;

use crate::SuiteError;

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

/// ΣU of Table 2.
pub const TOTAL_UNITS: u64 = 64;
/// The weights of the access methods in a partition's value.
pub const METHOD_WEIGHTS: [(Method, f64); 3] =
    [(Method::Write, 0.25), (Method::Rewrite, 0.25), (Method::Read, 0.5)];
/// The weights of pattern types 0–4 in an access method's value (type 0 counted twice).
pub const TYPE_WEIGHTS: [f64; 5] = [2.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Write,
    Rewrite,
    Read,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Write => "write",
            Method::Rewrite => "rewrite",
            Method::Read => "read",
        }
    }
}

/// One row of Table 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PatternDef {
    /// The pattern number of Table 2 (0–41; 33 and 42 are the segment fill-ups).
    pub number: u32,
    pub pattern_type: u8,
    /// Contiguous chunk on disk, bytes.
    pub chunk: u64,
    /// Contiguous chunk in memory moved by one call, bytes (= chunk except for type 0).
    pub memory: u64,
    pub units: u64,
    /// The "fill up segments" call of types 3 and 4: its size comes from the segment size.
    pub fill: bool,
}

/// The eight chunk sizes types 1 and 2 use (and, through them, types 3 and 4), with their U in
/// type 1 and in type 2.
fn listed_chunks(mpart: u64) -> [(u64, u64, u64); 8] {
    [
        (MIB, 0, 0),
        (mpart, 4, 2),
        (MIB, 2, 2),
        (32 * KIB, 1, 1),
        (KIB, 1, 1),
        (32 * KIB + 8, 1, 1),
        (KIB + 8, 1, 1),
        (MIB + 8, 2, 2),
    ]
}

/// Table 2, with MPART = max(2 MB, memory of a node / 128).
pub fn table2(mpart: u64) -> Vec<PatternDef> {
    let mut out = Vec::new();
    let type0 = [
        (MIB, MIB, 0),
        (mpart, mpart, 4),
        (MIB, 2 * MIB, 4),
        (MIB, MIB, 4),
        (32 * KIB, MIB, 2),
        (KIB, MIB, 2),
        (32 * KIB + 8, MIB + 256, 2),
        (KIB + 8, MIB + 8 * KIB, 2),
        (MIB + 8, MIB + 8, 2),
    ];
    let mut number = 0;
    let mut push = |pattern_type, chunk, memory, units, fill| {
        out.push(PatternDef { number, pattern_type, chunk, memory, units, fill });
        number += 1;
    };
    for (l, big_l, u) in type0 {
        push(0, l, big_l, u, false);
    }
    for (l, u1, _) in listed_chunks(mpart) {
        push(1, l, l, u1, false);
    }
    for pattern_type in 2..=4u8 {
        for (l, _, u2) in listed_chunks(mpart) {
            push(pattern_type, l, l, u2, false);
        }
        if pattern_type >= 3 {
            push(pattern_type, 0, 0, 0, true);
        }
    }
    out
}

/// A pattern's share of the scheduled time T: `T/3 · U/ΣU` (each access method gets a third).
/// Types 3 and 4 are size-driven, but their units are part of ΣU: their share is the time the
/// schedule expects them to take.
pub fn share(t: Duration, def: &PatternDef) -> Duration {
    t.mul_f64(def.units as f64 / TOTAL_UNITS as f64 / 3.0)
}

/// MPART for a node with `memory` bytes.
pub fn mpart_for(memory: u64) -> u64 {
    (2 * MIB).max(memory / 128)
}

/// What ranks need from each other: a barrier and an all-gather of one number. Threads of one
/// process implement it with [`ThreadRanks`]; MPI ranks (in `iolens-mpi`) with MPI_Barrier and
/// MPI_Allgather on the partition's communicator.
pub trait Ranks {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    fn barrier(&self);
    /// Every rank's `value`, in rank order, on every rank.
    fn all_gather(&self, value: u64) -> Vec<u64>;
    /// After every call of a collective pattern type (0, 1, 4). A collective MPI-IO call
    /// synchronizes the ranks by itself; threads stand in for it with a barrier.
    fn collective_call_done(&self) {
        self.barrier();
    }
}

/// Where one pattern's calls go: its pattern type, the ranks, where it starts, and how one call's
/// L bytes of memory map to l-byte chunks on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub pattern_type: u8,
    pub ranks: u64,
    pub rank: u64,
    /// Where the pattern starts: in the shared file (types 0, 1), the rank's file (type 2), or
    /// inside the rank's segment (types 3, 4).
    pub base: u64,
    /// Segment size per rank of types 3 and 4.
    pub segment: u64,
    /// Contiguous chunk on disk (l).
    pub chunk: u64,
    /// Bytes in memory per call (L, a whole number of chunks).
    pub memory: u64,
}

impl Placement {
    /// Chunks per call: L / l.
    pub fn pieces(&self) -> u64 {
        self.memory / self.chunk.max(1)
    }

    /// Where a rank's call `call` puts its chunk `piece`.
    pub fn offset(&self, call: u64, piece: u64) -> u64 {
        let chunk = self.chunk;
        match self.pattern_type {
            // Chunk by chunk, the ranks interleave across the file.
            0 => self.base + ((call * self.pieces() + piece) * self.ranks + self.rank) * chunk,
            1 => self.base + (call * self.ranks + self.rank) * chunk,
            2 => self.base + call * chunk,
            _ => self.rank * self.segment + self.base + call * chunk,
        }
    }

    /// Bytes of the file the pattern covered in `calls` calls, to place the next pattern after it.
    pub fn advance(&self, calls: u64) -> u64 {
        match self.pattern_type {
            0 | 1 => calls * self.memory * self.ranks,
            _ => calls * self.memory,
        }
    }
}

/// One open pattern-type file of one rank: POSIX here, MPI-IO in `iolens-mpi`. Calls come in
/// the same order on every rank (the decisions are collective), so an implementation may make
/// collective calls in any of them.
pub trait PatternFile {
    /// Before a pattern's first call: set up where its calls go (a file view, a file pointer).
    fn begin(&mut self, place: &Placement) -> std::io::Result<()>;
    /// Call `call` of the pattern begun last: writes `buf` (L bytes) or reads into it.
    fn transfer(&mut self, method: Method, call: u64, buf: &mut [u8]) -> std::io::Result<()>;
    /// Closes a write loop, inside its timed region.
    fn sync(&mut self) -> std::io::Result<()>;
}

/// Opens the files of the pattern types and names the calls they make.
pub trait PatternIo {
    /// The file of `pattern_type` for `method`: one per rank for type 2, one shared otherwise.
    /// The write creates it; rewrite and read open what the write made.
    fn open(&mut self, pattern_type: u8, method: Method) -> std::io::Result<Box<dyn PatternFile + '_>>;
    /// The call a pattern type makes for `method`, for the protocol.
    fn call_name(&self, pattern_type: u8, method: Method) -> String;
}

/// Pattern files of threads: POSIX `pwrite`/`pread` per chunk, `fdatasync` to close a write loop.
pub struct PosixIo<'a> {
    pub dir: &'a Path,
    pub rank: usize,
}

struct PosixFile {
    file: File,
    place: Option<Placement>,
}

impl PatternFile for PosixFile {
    fn begin(&mut self, place: &Placement) -> std::io::Result<()> {
        self.place = Some(*place);
        Ok(())
    }
    fn transfer(&mut self, method: Method, call: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let Some(place) = self.place else { return Err(std::io::Error::other("a call before its pattern")) };
        let chunk = place.chunk as usize;
        for (piece, part) in buf.chunks_exact_mut(chunk).enumerate() {
            let offset = place.offset(call, piece as u64);
            match method {
                Method::Read => self.file.read_exact_at(part, offset)?,
                _ => self.file.write_all_at(part, offset)?,
            }
        }
        Ok(())
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync_data()
    }
}

impl PatternIo for PosixIo<'_> {
    fn open(&mut self, pattern_type: u8, method: Method) -> std::io::Result<Box<dyn PatternFile + '_>> {
        let file = open_type_file(self.dir, pattern_type, self.rank, method)?;
        Ok(Box::new(PosixFile { file, place: None }))
    }
    fn call_name(&self, pattern_type: u8, method: Method) -> String {
        let call = if method == Method::Read { "pread" } else { "pwrite" };
        match pattern_type {
            0 => format!("{call} per l-byte chunk of L, strided over ranks"),
            1 => format!("{call} at the rank's turn in a shared order"),
            2 => format!("{call} on the rank's own file"),
            3 => format!("{call} in the rank's segment"),
            _ => format!("{call} in the rank's segment, ranks in step"),
        }
    }
}

struct Shared {
    barrier: Barrier,
    values: Mutex<Vec<u64>>,
}

/// Ranks that are threads of this process.
pub struct ThreadRanks {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
}

impl ThreadRanks {
    /// One handle per rank.
    pub fn group(size: usize) -> Vec<ThreadRanks> {
        let shared = Arc::new(Shared { barrier: Barrier::new(size), values: Mutex::new(vec![0; size]) });
        (0..size).map(|rank| ThreadRanks { rank, size, shared: Arc::clone(&shared) }).collect()
    }
}

impl Ranks for ThreadRanks {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn barrier(&self) {
        self.shared.barrier.wait();
    }
    fn all_gather(&self, value: u64) -> Vec<u64> {
        if let Ok(mut v) = self.shared.values.lock() {
            v[self.rank] = value;
        }
        self.shared.barrier.wait();
        let all = self.shared.values.lock().map(|v| v.clone()).unwrap_or_default();
        // Nobody overwrites a value before everyone has read it.
        self.shared.barrier.wait();
        all
    }
}

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

/// One pattern of one access method, summed over ranks.
#[derive(Debug, Clone, Serialize)]
pub struct PatternRecord {
    pub method: Method,
    pub number: u32,
    pub pattern_type: u8,
    #[serde(rename = "chunk_bytes")]
    pub chunk: u64,
    #[serde(rename = "memory_bytes")]
    pub memory: u64,
    pub units: u64,
    /// Calls per rank.
    pub calls: u64,
    pub bytes: u64,
    /// From the first call to the end of the sync (writes), slowest rank.
    pub time_s: f64,
    /// MB/s with the paper's MB = 10^6 bytes (b_eff_io keeps its definition's unit).
    pub bw_mb_s: f64,
    /// The pattern's share of T (`T/3 · U/ΣU`).
    pub scheduled_s: f64,
    /// Time-driven patterns: what the running schedule left the pattern when it started.
    pub budget_s: Option<f64>,
    /// The closing sync of a write pattern, slowest rank (part of `time_s`).
    pub sync_s: f64,
    /// Why the pattern's time differs from what the schedule gave it, when it does.
    pub note: Option<String>,
}

/// One pattern type of one access method: bytes over open-to-close time.
#[derive(Debug, Clone, Serialize)]
pub struct TypeRecord {
    pub method: Method,
    pub pattern_type: u8,
    /// The call the type makes, e.g. "MPI_File_write_all (view: hvector)".
    pub call: String,
    pub bytes: u64,
    pub time_s: f64,
    /// MB/s with the paper's MB = 10^6 bytes (b_eff_io keeps its definition's unit).
    pub bw_mb_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct MethodValue {
    pub method: Method,
    pub weight: f64,
    /// Types 0–4 weighted by [`TYPE_WEIGHTS`]; MB/s with MB = 10^6 bytes.
    pub bw_mb_s: f64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Partition {
    pub ranks: usize,
    /// MB/s, MB = 10^6 bytes.
    #[serde(rename = "b_eff_io_mb_s")]
    pub b_eff_io: f64,
    pub methods: Vec<MethodValue>,
    pub types: Vec<TypeRecord>,
    pub patterns: Vec<PatternRecord>,
    /// Segment size per rank of types 3 and 4.
    pub segment_bytes: u64,
    /// The scheduled time T.
    pub scheduled_s: f64,
    /// From the start of the first pattern to the end of the last, by the partition's clock.
    pub elapsed_s: f64,
    /// `elapsed_s` within 10% of T, either way. A partition that ran more than 10% over T
    /// (minimum work: one call and one sync per pattern, the size-driven types) or ended more
    /// than 10% before it (rewrite and read repeat the write's calls, so they only touch written
    /// data, and end early where they are faster than the write) did not hold T, and
    /// `schedule_note` and the patterns' notes say why.
    pub schedule_held: bool,
    /// Why the partition ran more than 10% over T, or ended more than 10% before it (the
    /// patterns' notes say which and why).
    pub schedule_note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BeffIoResult {
    pub suite: &'static str,
    pub dir: String,
    /// MB/s (the paper's MB = 10^6 bytes): the maximum over the partitions.
    #[serde(rename = "b_eff_io_mb_s")]
    pub b_eff_io: f64,
    pub best_ranks: usize,
    pub time_s: f64,
    #[serde(rename = "mpart_bytes")]
    pub mpart: u64,
    #[serde(rename = "memory_bytes")]
    pub memory: u64,
    pub method_weights: Vec<(Method, f64)>,
    pub type_weights: Vec<f64>,
    /// Seconds to write this node's memory at b_eff_io.
    pub coffee_cup_s: f64,
    pub partitions: Vec<Partition>,
    #[serde(skip)]
    pub warnings: Vec<Warning>,
    /// Told to the envelope (see `iolens_report::Body`).
    #[serde(skip)]
    pub interrupted: bool,
    /// What a rank was: "threads of one process" or "MPI processes".
    pub ranks_are: &'static str,
    /// The MPI library and the hints of an MPI-IO run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mpi: Option<MpiIoInfo>,
}

impl iolens_report::Body for BeffIoResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    fn warnings(&self) -> Vec<iolens_report::Notice> {
        self.warnings.iter().map(|w| iolens_report::Notice::new(w.code.as_str(), w.message.clone())).collect()
    }
}

/// What an MPI-IO run of b_eff_io used besides the file system.
#[derive(Debug, Clone, Serialize)]
pub struct MpiIoInfo {
    /// `MPI_Get_library_version`, first line.
    pub library: String,
    /// The `--hint key=value` pairs passed to every `MPI_File_open` (an MPI_Info).
    pub hints: Vec<(String, String)>,
    /// The hosts of the ranks, in rank order (one entry per distinct host).
    pub hosts: Vec<String>,
}

/// Bandwidth in MB/s (10^6 bytes per second).
fn mb_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / seconds / 1e6
    } else {
        0.0
    }
}

/// An access method's value from its five type records.
pub fn method_value(types: &[TypeRecord]) -> f64 {
    types.iter().map(|t| TYPE_WEIGHTS[t.pattern_type as usize] * t.bw_mb_s).sum()
}

/// A partition's value from its method values.
pub fn partition_value(methods: &[MethodValue]) -> f64 {
    methods.iter().map(|m| m.weight * m.bw_mb_s).sum()
}

/// How many calls a pattern of types 3 and 4 makes, and the segment size, from the bytes per
/// rank types 0–2 moved with the same chunk size (position in the chunk list).
fn size_driven_plan(write: &[PatternRecord], ranks: u64, mpart: u64) -> (Vec<u64>, u64) {
    let per_rank = |pattern_type: u8, position: usize| -> Option<u64> {
        // Type 0 has one more pattern (1 MB chunks gathered from 2 MB of memory) with no
        // counterpart in the other types.
        let index = if pattern_type == 0 && position >= 2 { position + 1 } else { position };
        write.iter().filter(|p| p.pattern_type == pattern_type).nth(index).map(|p| p.bytes / ranks.max(1))
    };
    let mut calls = Vec::new();
    let mut segment = 0;
    for (position, (chunk, _, _)) in listed_chunks(mpart).iter().enumerate() {
        let moved: Vec<u64> = (0..=2).filter_map(|t| per_rank(t, position)).collect();
        let mean = if moved.is_empty() { 0 } else { moved.iter().sum::<u64>() / moved.len() as u64 };
        let n = mean.div_ceil(*chunk).max(1);
        calls.push(n);
        segment += n * chunk;
    }
    (calls, segment.div_ceil(MIB) * MIB)
}

/// What one rank did in one pattern.
#[derive(Clone, Copy, Default)]
struct RankPattern {
    calls: u64,
    bytes: u64,
    ns: u64,
    /// Time-driven patterns: the time the schedule left the pattern (agreed by all ranks).
    budget_ns: Option<u64>,
    /// The closing sync of a write pattern (inside `ns`).
    sync_ns: u64,
    /// Stopped at its call cap (rewrite and read at the write's calls) before its time was up.
    capped: bool,
}

struct RankContext<'a> {
    ranks: &'a dyn Ranks,
    stop: &'a AtomicBool,
    buffer: Vec<u8>,
    /// The first I/O error of this rank. The rank keeps taking part in every barrier and
    /// decision without doing I/O, so the others stop at the next decision instead of waiting
    /// for it forever.
    failed: Option<std::io::Error>,
    /// The closing sync of this rank's last write pattern: the next one keeps that much of its
    /// time for its own sync, which the batch decisions cannot see coming.
    last_sync_ns: u64,
}

impl RankContext<'_> {
    fn record(&mut self, result: std::io::Result<()>) {
        if let (Err(e), None) = (result, &self.failed) {
            self.failed = Some(e);
        }
    }

    /// Whether any rank was interrupted or failed: decided together, so all ranks agree.
    fn any_stopping(&self) -> bool {
        let mine = self.stop.load(Ordering::SeqCst) || self.failed.is_some();
        self.ranks.all_gather(mine as u64).contains(&1)
    }

    /// The collective decision after a batch: stop when any rank was interrupted, when the slowest
    /// rank used up the pattern's time, or at the call cap; otherwise the size of the next batch.
    fn next_batch(&self, done: u64, elapsed_ns: u64, budget_ns: u64, batch: u64, cap: u64) -> Option<u64> {
        let stop = (self.stop.load(Ordering::SeqCst) || self.failed.is_some()) as u64;
        let all = self.ranks.all_gather(elapsed_ns << 1 | stop);
        if all.iter().any(|v| v & 1 == 1) {
            return None;
        }
        let slowest = all.iter().map(|v| v >> 1).max().unwrap_or(0);
        if slowest >= budget_ns || done >= cap {
            return None;
        }
        let per_call = (slowest / done.max(1)).max(1);
        let fits = (budget_ns - slowest).div_ceil(per_call);
        Some((batch * 2).min(fits).min(cap - done).max(1))
    }

    fn run_pattern(
        &mut self,
        mut file: Option<&mut (dyn PatternFile + '_)>,
        method: Method,
        place: &Placement,
        calls: CallPlan,
    ) -> RankPattern {
        if place.chunk == 0 {
            return RankPattern::default();
        }
        let collective = matches!(place.pattern_type, 0 | 1 | 4);
        if let (Some(f), None) = (file.as_deref_mut(), &self.failed) {
            let result = f.begin(place);
            self.record(result);
        }
        let start = Instant::now();
        let mut done = 0u64;
        let mut batch = 1u64;
        let (budget_ns, cap) = match calls {
            // Calls stop early enough for the closing sync (ranks agree on the reserve).
            CallPlan::Timed { budget, cap } if method != Method::Read => {
                let reserve = self.ranks.all_gather(self.last_sync_ns).into_iter().max().unwrap_or(0);
                ((budget.as_nanos() as u64).saturating_sub(reserve), cap)
            }
            CallPlan::Timed { budget, cap } => (budget.as_nanos() as u64, cap),
            CallPlan::Exactly(n) => (u64::MAX, n),
        };
        // Out of `self` while the loop runs, so the decisions can borrow the rest.
        let mut buffer = std::mem::take(&mut self.buffer);
        let buf = &mut buffer[..place.memory as usize];
        loop {
            let end = (done + batch).min(cap);
            for call in done..end {
                if let (Some(f), None) = (file.as_deref_mut(), &self.failed) {
                    if let Err(e) = f.transfer(method, call, buf) {
                        self.failed = Some(e);
                    }
                }
                if collective {
                    self.ranks.collective_call_done();
                }
            }
            done = end;
            if matches!(calls, CallPlan::Exactly(_)) {
                if done >= cap {
                    break;
                }
                continue;
            }
            match self.next_batch(done, start.elapsed().as_nanos() as u64, budget_ns, batch, cap) {
                Some(next) => batch = next,
                None => break,
            }
        }
        self.buffer = buffer;
        let synced = Instant::now();
        if let (Some(f), None, true) = (file, &self.failed, method != Method::Read) {
            let result = f.sync();
            self.record(result);
        }
        let ns = start.elapsed().as_nanos() as u64;
        if method != Method::Read {
            self.last_sync_ns = synced.elapsed().as_nanos() as u64;
        }
        let (budget_ns, capped) = match calls {
            CallPlan::Timed { budget, cap } => {
                (Some(budget.as_nanos() as u64), done >= cap && cap < u64::MAX)
            }
            CallPlan::Exactly(_) => (None, false),
        };
        RankPattern {
            calls: done,
            bytes: done * place.memory,
            ns,
            budget_ns,
            sync_ns: if method != Method::Read { self.last_sync_ns } else { 0 },
            capped,
        }
    }
}

#[derive(Clone, Copy)]
enum CallPlan {
    /// Time-driven: as many calls as fit in `budget`, at most `cap`.
    Timed { budget: Duration, cap: u64 },
    /// Size-driven.
    Exactly(u64),
}

/// Everything one rank measured in one partition, per method, in Table 2 order.
#[derive(Default)]
pub struct RankLog {
    patterns: Vec<(Method, usize, RankPattern)>,
    /// (method, type, open-to-close ns).
    types: Vec<(Method, u8, u64)>,
    segment: u64,
}

/// Numbers per pattern in [`RankLog::numbers`].
const NUMBERS_PER_PATTERN: usize = 6;

impl RankLog {
    /// This rank's measurements as plain numbers, to send to another process: per pattern its
    /// calls, bytes, ns, budget (u64::MAX for none), sync ns and capped flag, then per type its
    /// open-to-close ns. Which pattern and type each is comes from the receiver's own log: every
    /// rank runs the same patterns in the same order (the decisions are collective).
    pub fn numbers(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.patterns.len() * NUMBERS_PER_PATTERN + self.types.len());
        for (_, _, p) in &self.patterns {
            out.extend([p.calls, p.bytes, p.ns, p.budget_ns.unwrap_or(u64::MAX), p.sync_ns, p.capped as u64]);
        }
        out.extend(self.types.iter().map(|t| t.2));
        out
    }

    /// Another rank's log from its [`numbers`](RankLog::numbers), laid out as this one.
    pub fn with_numbers(&self, numbers: &[u64]) -> Result<RankLog, String> {
        let expected = self.patterns.len() * NUMBERS_PER_PATTERN + self.types.len();
        if numbers.len() != expected {
            return Err(format!(
                "a rank reported {} numbers where {expected} were expected: the ranks ran different patterns",
                numbers.len()
            ));
        }
        let (per_pattern, per_type) = numbers.split_at(self.patterns.len() * NUMBERS_PER_PATTERN);
        let patterns = self
            .patterns
            .iter()
            .zip(per_pattern.chunks_exact(NUMBERS_PER_PATTERN))
            .map(|((method, index, _), n)| {
                let p = RankPattern {
                    calls: n[0],
                    bytes: n[1],
                    ns: n[2],
                    budget_ns: (n[3] != u64::MAX).then_some(n[3]),
                    sync_ns: n[4],
                    capped: n[5] != 0,
                };
                (*method, *index, p)
            })
            .collect();
        let types = self.types.iter().zip(per_type).map(|((m, t, _), ns)| (*m, *t, *ns)).collect();
        Ok(RankLog { patterns, types, segment: self.segment })
    }
}

fn type_file(dir: &Path, pattern_type: u8, rank: usize) -> PathBuf {
    if pattern_type == 2 {
        dir.join(format!("iolens-type2-rank{rank}.dat"))
    } else {
        dir.join(format!("iolens-type{pattern_type}.dat"))
    }
}

fn open_type_file(dir: &Path, pattern_type: u8, rank: usize, method: Method) -> std::io::Result<File> {
    let path = type_file(dir, pattern_type, rank);
    let mut o = OpenOptions::new();
    match method {
        // The files live in a directory of this run's own: creating them cannot clobber anything.
        Method::Write => o.read(true).write(true).create(true),
        Method::Rewrite => o.read(true).write(true),
        Method::Read => o.read(true),
    };
    o.open(&path).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The partition's schedule. A time-driven pattern (types 0–2, U > 0) gets its share of the
/// time left: `(T − elapsed − reserve) · share / (shares of the time-driven patterns left)`. On
/// schedule that is its share `T/3 · U/ΣU`; behind (a one-call minimum, a sync, a slow call ran
/// over) every pattern after shrinks alike, instead of the next ones starving; ahead (a capped
/// rewrite or read ended early) they get the time. The reserve is what the size-driven
/// patterns still to come (types 3 and 4, and the U = 0 and fill-up calls) are expected to take:
/// in the write, [`SIZE_DRIVEN_ESTIMATE`] × their shares; in rewrite and read, the same
/// pattern's write time scaled by how much faster or slower the method's time-driven patterns
/// moved their bytes than the write's.
struct Schedule {
    /// (method, table index, share in ns, time-driven) in the order the patterns run.
    order: Vec<(Method, usize, u64, bool)>,
    t_ns: u64,
    /// Time of each finished pattern, by position in `order`.
    took: Vec<Option<u64>>,
    /// ns and bytes of each method's finished time-driven patterns.
    moved: [(u64, u64); 3],
}

/// How much longer than their shares the write's size-driven patterns are expected to take:
/// types 3 and 4 repeat, per chunk size, the mean of what types 0–2 moved, about 2/3 of the time
/// of types 0–2 at equal bandwidth where their 20 of 64 units give them 20/44 of it.
pub const SIZE_DRIVEN_ESTIMATE: f64 = 1.5;

fn method_slot(m: Method) -> usize {
    match m {
        Method::Write => 0,
        Method::Rewrite => 1,
        Method::Read => 2,
    }
}

impl Schedule {
    fn new(table: &[PatternDef], t: Duration) -> Schedule {
        let mut order = Vec::new();
        for method in [Method::Write, Method::Rewrite, Method::Read] {
            for pattern_type in 0..=4u8 {
                for (index, def) in table.iter().enumerate().filter(|(_, p)| p.pattern_type == pattern_type) {
                    let timed = pattern_type <= 2 && def.units > 0;
                    order.push((method, index, share(t, def).as_nanos() as u64, timed));
                }
            }
        }
        let took = vec![None; order.len()];
        Schedule { order, t_ns: t.as_nanos() as u64, took, moved: [(0, 0); 3] }
    }

    fn position(&self, method: Method, index: usize) -> usize {
        self.order
            .iter()
            .position(|(m, i, _, _)| *m == method && *i == index)
            .expect("every pattern is scheduled")
    }

    fn done(&mut self, step: usize, r: &RankPattern) {
        self.took[step] = Some(r.ns);
        let (method, _, _, timed) = self.order[step];
        if timed && r.bytes > 0 {
            let m = &mut self.moved[method_slot(method)];
            m.0 += r.ns;
            m.1 += r.bytes;
        }
    }

    /// Time per byte of `method`'s time-driven patterns against the write's (1 until known).
    fn speed_factor(&self, method: Method) -> f64 {
        let per_byte = |(ns, bytes): (u64, u64)| (bytes > 0).then(|| ns as f64 / bytes as f64);
        match (per_byte(self.moved[method_slot(method)]), per_byte(self.moved[0])) {
            (Some(m), Some(w)) if w > 0.0 => (m / w).clamp(0.01, 100.0),
            _ => 1.0,
        }
    }

    /// What the size-driven pattern at `step` is expected to take.
    fn expected_ns(&self, step: usize) -> f64 {
        let (method, index, share_ns, _) = self.order[step];
        if method != Method::Write {
            let write = self.order.iter().position(|(m, i, _, _)| *m == Method::Write && *i == index);
            if let Some(ns) = write.and_then(|w| self.took[w]) {
                return ns as f64 * self.speed_factor(method);
            }
        }
        share_ns as f64 * SIZE_DRIVEN_ESTIMATE
    }

    fn budget_ns(&self, step: usize, elapsed_ns: u64) -> u64 {
        let later = &self.order[step..];
        let shares: u64 = later.iter().filter(|p| p.3).map(|p| p.2).sum();
        let reserve: f64 =
            (step + 1..self.order.len()).filter(|&j| !self.order[j].3).map(|j| self.expected_ns(j)).sum();
        let left = (self.t_ns.saturating_sub(elapsed_ns) as f64 - reserve).max(0.0);
        (left * self.order[step].2 as f64 / shares.max(1) as f64) as u64
    }
}

/// Where a partition is, for a progress display: rank 0 tells it as each pattern starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PatternStep {
    pub method: Method,
    pub pattern_type: u8,
    /// The pattern's chunk (0 for the fill-up pattern of types 3 and 4, whose size is decided
    /// then).
    pub chunk: u64,
    /// The share of the partition's patterns (over all methods) started before this one, 0 to
    /// 1: the schedule's time shares are estimates, and small T overruns them.
    pub done_fraction: f64,
}

/// Where a whole b_eff_io run is: the partition and its current pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeffIoStep {
    /// Index of the partition in `BeffIoConfig::ranks`, and how many there are.
    pub partition: usize,
    pub partitions: usize,
    pub ranks: usize,
    pub pattern: PatternStep,
}

impl BeffIoStep {
    /// The share of the whole run gone, 0 to 1: partitions are scheduled alike (T each).
    pub fn fraction(&self) -> f64 {
        ((self.partition as f64 + self.pattern.done_fraction.clamp(0.0, 1.0)) / self.partitions.max(1) as f64)
            .clamp(0.0, 1.0)
    }

    /// Shows the step on a progress display: the share done and what runs now.
    pub fn show(&self, observer: &dyn RunObserver) {
        observer.step(self.fraction(), &self.describe());
    }

    /// "write, type 2, chunk 1 MiB, 4 ranks".
    pub fn describe(&self) -> String {
        let chunk =
            if self.pattern.chunk == 0 { "fill-up".to_string() } else { format_bytes(self.pattern.chunk) };
        format!(
            "{}, type {}, chunk {chunk}, {} rank{}",
            self.pattern.method.name(),
            self.pattern.pattern_type,
            self.ranks,
            if self.ranks == 1 { "" } else { "s" }
        )
    }
}

/// One rank's part of a partition: every pattern of Table 2 with every access method, through
/// `io`, in step with the other `ranks`. `started` is the partition's start (after a barrier).
/// Rank 0 tells `on_pattern` each pattern as it starts.
pub fn run_rank(
    ranks: &dyn Ranks,
    io: &mut dyn PatternIo,
    table: &[PatternDef],
    cfg: &BeffIoConfig,
    stop: &AtomicBool,
    started: Instant,
    on_pattern: &(dyn Fn(&PatternStep) + Sync),
) -> std::io::Result<RankLog> {
    let size = ranks.size() as u64;
    let rank = ranks.rank();
    let largest = table.iter().map(|p| p.memory).max().unwrap_or(MIB).max(MIB);
    let mut buffer = vec![0u8; largest as usize];
    iolens_engine::buffers::fill_random(&mut buffer, 0xbeff_0000 + rank as u64);
    let mut ctx = RankContext { ranks, stop, buffer, failed: None, last_sync_ns: 0 };
    let mut log = RankLog::default();
    let mut written: Vec<u64> = vec![0; table.len()];
    let mut plan: Option<(Vec<u64>, u64)> = None;
    // The schedule is one clock over the partition (see `Schedule`).
    let mut schedule = Schedule::new(table, cfg.time);
    let mut steps_started = 0usize;
    for method in [Method::Write, Method::Rewrite, Method::Read] {
        for pattern_type in 0..=4u8 {
            if pattern_type == 3 && plan.is_none() {
                // Gather the write counts of types 0–2 from this rank's own log: every rank
                // moved the same calls (collective decisions), so the plan is the same on all.
                let records: Vec<PatternRecord> = log
                    .patterns
                    .iter()
                    .filter(|(m, _, _)| *m == Method::Write)
                    .map(|(_, i, p)| pattern_record(Method::Write, &table[*i], p.calls, p.bytes * size, 0))
                    .collect();
                let p = size_driven_plan(&records, size, cfg.mpart);
                log.segment = p.1;
                plan = Some(p);
            }
            ranks.barrier();
            let opened = Instant::now();
            let mut file = match io.open(pattern_type, method) {
                Ok(f) => Some(f),
                Err(e) => {
                    ctx.record(Err(e));
                    None
                }
            };
            let mut base = 0u64;
            let of_type = table.iter().enumerate().filter(|(_, p)| p.pattern_type == pattern_type);
            for (position, (index, def)) in of_type.enumerate() {
                if ctx.any_stopping() {
                    break;
                }
                let step = schedule.position(method, index);
                let segment = plan.as_ref().map_or(0, |p| p.1);
                let mut place = Placement {
                    pattern_type,
                    ranks: size,
                    rank: rank as u64,
                    base,
                    segment,
                    chunk: def.chunk,
                    memory: def.memory,
                };
                let calls = if pattern_type >= 3 {
                    let (counts, _) = plan.as_ref().expect("planned before type 3");
                    if def.fill {
                        // The rest of the segment, in one call.
                        place.chunk = segment.saturating_sub(base);
                        place.memory = place.chunk;
                        CallPlan::Exactly(1)
                    } else {
                        CallPlan::Exactly(counts[position])
                    }
                } else if def.units == 0 {
                    CallPlan::Exactly(1)
                } else {
                    let mine = schedule.budget_ns(step, started.elapsed().as_nanos() as u64);
                    // The ranks' clocks and logs differ a little: all take the least.
                    let budget = ranks.all_gather(mine).into_iter().min().unwrap_or(0);
                    let budget = Duration::from_nanos(budget);
                    let cap = if method == Method::Write { u64::MAX } else { written[index] };
                    CallPlan::Timed { budget, cap }
                };
                if rank == 0 {
                    on_pattern(&PatternStep {
                        method,
                        pattern_type,
                        chunk: place.chunk,
                        done_fraction: steps_started as f64 / (3 * table.len()).max(1) as f64,
                    });
                }
                steps_started += 1;
                let result = ctx.run_pattern(file.as_deref_mut(), method, &place, calls);
                if method == Method::Write {
                    written[index] = result.calls;
                }
                base += place.advance(result.calls);
                schedule.done(step, &result);
                log.patterns.push((method, index, result));
            }
            drop(file);
            ranks.barrier();
            log.types.push((method, pattern_type, opened.elapsed().as_nanos() as u64));
        }
    }
    match ctx.failed {
        Some(e) => Err(e),
        None => Ok(log),
    }
}

fn pattern_record(method: Method, def: &PatternDef, calls: u64, bytes: u64, ns: u64) -> PatternRecord {
    let time_s = ns as f64 / 1e9;
    PatternRecord {
        scheduled_s: 0.0,
        budget_s: None,
        sync_s: 0.0,
        note: None,
        method,
        number: def.number,
        pattern_type: def.pattern_type,
        chunk: def.chunk,
        memory: def.memory,
        units: def.units,
        calls,
        bytes,
        time_s,
        bw_mb_s: mb_s(bytes, time_s),
    }
}

/// A partition holds T when it runs at most this share of T over it.
pub const SCHEDULE_TOLERANCE: f64 = 0.1;

/// A partition that ran more than [`SCHEDULE_TOLERANCE`] past T: the case that warns.
fn overran_schedule(elapsed_s: f64, t: f64) -> bool {
    elapsed_s > (1.0 + SCHEDULE_TOLERANCE) * t
}

/// Why a pattern's time differs from what the schedule gave it: only deviations above 10% of
/// its time, and above 0.5% of T (tiny shares jitter by more than 10%), are explained.
fn schedule_note(p: &PatternRecord, capped: bool, t: f64) -> Option<String> {
    let given = p.budget_s.unwrap_or(p.scheduled_s);
    let slack = (SCHEDULE_TOLERANCE * given).max(0.005 * t);
    let over = p.time_s > given + slack;
    let under = p.time_s < given - slack;
    let sync = if p.sync_s > 0.0 { format!(" (sync {:.3} s)", p.sync_s) } else { String::new() };
    match p.budget_s {
        Some(b) if over && p.calls <= 1 => Some(format!(
            "one call is the minimum: a call of {} took {:.3} s{sync}, the schedule left {b:.3} s",
            format_bytes(p.memory),
            p.time_s
        )),
        Some(b) if over && p.sync_s > p.time_s - b => Some(format!(
            "the closing sync took {:.3} s: {:.3} s against {b:.3} s left",
            p.sync_s, p.time_s
        )),
        Some(b) if over => Some(format!("{:.3} s against {b:.3} s left: calls slower than the estimate", p.time_s)),
        Some(b) if under && capped => Some(format!(
            "stopped at the write's {} calls (rewrite and read only touch written data): {:.3} s of {b:.3} s",
            p.calls, p.time_s
        )),
        Some(_) => None,
        None if p.units == 0 && over => {
            Some(format!("U = 0: one call outside the schedule, {:.3} s{sync}", p.time_s))
        }
        None if over || under => Some(format!(
            "size-driven (moves what types 0–2 moved with this chunk): {:.3} s against a share of {:.3} s{sync}",
            p.time_s, p.scheduled_s
        )),
        None => None,
    }
}

/// Runs one partition: `n` ranks through all patterns and methods.
fn run_partition(
    cfg: &BeffIoConfig,
    n: usize,
    stop: &AtomicBool,
    on_pattern: &(dyn Fn(&PatternStep) + Sync),
) -> Result<Partition, SuiteError> {
    let scratch =
        iolens_engine::ownership::ScratchDir::create(&cfg.dir, &format!("iolens-beffio-{n}-"), false)
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

/// A partition's record from every rank's log (rank order): a pattern's bytes are summed over
/// the ranks and its time is the slowest rank's; likewise a type's open-to-close time.
/// `elapsed_s` is the partition's time by its clock; `call_name` names each type's call.
pub fn assemble_partition(
    cfg: &BeffIoConfig,
    table: &[PatternDef],
    logs: &[RankLog],
    elapsed_s: f64,
    call_name: &dyn Fn(u8, Method) -> String,
) -> Partition {
    let n = logs.len();
    let mut patterns = Vec::new();
    for (k, (method, index, first)) in logs[0].patterns.iter().enumerate() {
        let all: Vec<RankPattern> = logs.iter().map(|l| l.patterns[k].2).collect();
        let bytes = all.iter().map(|p| p.bytes).sum();
        let ns = all.iter().map(|p| p.ns).max().unwrap_or(0);
        let def = &table[*index];
        let mut record = pattern_record(*method, def, first.calls, bytes, ns);
        record.scheduled_s = share(cfg.time, def).as_secs_f64();
        record.budget_s = first.budget_ns.map(|b| b as f64 / 1e9);
        record.sync_s = all.iter().map(|p| p.sync_ns).max().unwrap_or(0) as f64 / 1e9;
        record.note = schedule_note(&record, first.capped, cfg.time.as_secs_f64());
        patterns.push(record);
    }
    let mut types = Vec::new();
    for (k, (method, pattern_type, _)) in logs[0].types.iter().enumerate() {
        let ns = logs.iter().map(|l| l.types[k].2).max().unwrap_or(0);
        let bytes = patterns
            .iter()
            .filter(|p| p.method == *method && p.pattern_type == *pattern_type)
            .map(|p| p.bytes)
            .sum();
        let time_s = ns as f64 / 1e9;
        types.push(TypeRecord {
            method: *method,
            pattern_type: *pattern_type,
            call: call_name(*pattern_type, *method),
            bytes,
            time_s,
            bw_mb_s: mb_s(bytes, time_s),
        });
    }
    let methods: Vec<MethodValue> = METHOD_WEIGHTS
        .iter()
        .map(|(method, weight)| {
            let of_method: Vec<TypeRecord> = types.iter().filter(|t| t.method == *method).cloned().collect();
            MethodValue {
                method: *method,
                weight: *weight,
                bw_mb_s: method_value(&of_method),
                bytes: of_method.iter().map(|t| t.bytes).sum(),
            }
        })
        .collect();
    let t = cfg.time.as_secs_f64();
    let overran = overran_schedule(elapsed_s, t);
    let schedule_held = !overran && elapsed_s >= (1.0 - SCHEDULE_TOLERANCE) * t;
    let schedule_note = (!schedule_held).then(|| {
        let noted = patterns.iter().filter(|p| p.note.is_some()).count();
        if overran {
            format!(
                "ran {elapsed_s:.2} s for T = {t:.2} s: {noted} pattern(s) took longer than the schedule left them \
                 (each runs at least one call, and types 3 and 4 move what types 0–2 moved); \
                 a smaller --mpart or a longer --time holds T"
            )
        } else {
            format!(
                "ran {elapsed_s:.2} s for T = {t:.2} s: {noted} pattern(s) finished early (rewrite and read stop at \
                 the calls the write made, so they only touch written data)"
            )
        }
    });
    Partition {
        ranks: n,
        b_eff_io: partition_value(&methods),
        methods,
        types,
        patterns,
        segment_bytes: logs.first().map_or(0, |l| l.segment),
        scheduled_s: t,
        elapsed_s,
        schedule_held,
        schedule_note,
    }
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

/// The system's b_eff_io from its partitions (the best one), with the warnings the paper's rules
/// call for. `ranks_are` says what a rank was; `mpi` describes an MPI-IO run.
pub fn system_result(
    cfg: &BeffIoConfig,
    partitions: Vec<Partition>,
    interrupted: bool,
    ranks_are: &'static str,
    mpi: Option<MpiIoInfo>,
) -> BeffIoResult {
    let mut warnings = Vec::new();
    if cfg.time < Duration::from_secs(15 * 60) {
        warnings.push(Warning::new(
            WarningCode::ShortRun,
            format!(
                "T = {:.0} s is shorter than the paper's 15 minutes: the value is not comparable to published b_eff_io figures",
                cfg.time.as_secs_f64()
            ),
        ));
    }
    let best = partitions.iter().max_by(|a, b| a.b_eff_io.total_cmp(&b.b_eff_io));
    let (b_eff_io, best_ranks) = best.map_or((0.0, 0), |p| (p.b_eff_io, p.ranks));
    for p in partitions.iter().filter(|p| overran_schedule(p.elapsed_s, p.scheduled_s)) {
        if let Some(note) = &p.schedule_note {
            warnings.push(Warning::new(WarningCode::ScheduleOverrun, format!("{} ranks: {note}", p.ranks)));
        }
    }
    for p in &partitions {
        let least = p.methods.iter().map(|m| m.bytes).min().unwrap_or(0);
        if least < 20 * cfg.cache {
            warnings.push(Warning::new(
                WarningCode::BelowCacheRule,
                format!(
                    "{} ranks: as little as {} per access method, below the paper's rule of 20 × the file-system cache ({}): caching inflates the value",
                    p.ranks,
                    format_bytes(least),
                    format_bytes(20 * cfg.cache)
                ),
            ));
        }
    }
    BeffIoResult {
        suite: "beff-io",
        dir: cfg.dir.display().to_string(),
        b_eff_io,
        best_ranks,
        time_s: cfg.time.as_secs_f64(),
        mpart: cfg.mpart,
        memory: cfg.memory,
        method_weights: METHOD_WEIGHTS.to_vec(),
        type_weights: TYPE_WEIGHTS.to_vec(),
        coffee_cup_s: if b_eff_io > 0.0 { cfg.memory as f64 / (b_eff_io * 1e6) } else { f64::INFINITY },
        partitions,
        warnings,
        interrupted,
        ranks_are,
        mpi,
    }
}

pub fn render(r: &BeffIoResult) -> String {
    let mut out = format!(
        "b_eff_io {} (T = {:.0} s per partition, MPART = {}; ranks are {}):\n",
        r.dir,
        r.time_s,
        format_bytes(r.mpart),
        r.ranks_are
    );
    if let Some(mpi) = &r.mpi {
        let hints: Vec<String> = mpi.hints.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!(
            "MPI-IO: {} on {}; hints: {}\n",
            mpi.library,
            mpi.hosts.join(", "),
            if hints.is_empty() { "none".to_string() } else { hints.join(" ") }
        ));
    }
    for p in &r.partitions {
        out.push_str(&format!(
            "\n{} ranks: b_eff_io {:.1} MB/s ({:.1} s for T = {:.1} s: {})\n",
            p.ranks,
            p.b_eff_io,
            p.elapsed_s,
            p.scheduled_s,
            if p.schedule_held {
                "T held"
            } else if overran_schedule(p.elapsed_s, p.scheduled_s) {
                "T not held: overran"
            } else {
                "T not held: ended early"
            }
        ));
        if let Some(note) = &p.schedule_note {
            out.push_str(&format!("  {note}\n"));
        }
        let mut t = Table::new(vec![
            "method", "weight", "type 0", "type 1", "type 2", "type 3", "type 4", "MB/s", "moved",
        ]);
        for m in &p.methods {
            let mut row = vec![m.method.name().to_string(), format!("{:.0}%", m.weight * 100.0)];
            for ty in 0..=4u8 {
                let v = p.types.iter().find(|t| t.method == m.method && t.pattern_type == ty);
                row.push(v.map_or("-".into(), |t| format!("{:.1}", t.bw_mb_s)));
            }
            row.push(format!("{:.1}", m.bw_mb_s));
            row.push(format_bytes(m.bytes));
            t.rows.push(row);
        }
        t.render(&mut out);
    }
    if let Some(p) = r.partitions.iter().find(|p| p.ranks == r.best_ranks) {
        out.push_str("\ncalls per pattern type (write and rewrite / read):\n");
        for ty in 0..=4u8 {
            let call =
                |m: Method| p.types.iter().find(|t| t.pattern_type == ty && t.method == m).map(|t| &t.call);
            if let (Some(w), Some(rd)) = (call(Method::Write), call(Method::Read)) {
                out.push_str(&format!("  type {ty}: {w} / {rd}\n"));
            }
        }
        out.push_str(&format!("\nprotocol of the best partition ({} ranks), MB/s per pattern:\n", p.ranks));
        let mut t =
            Table::new(vec!["no", "type", "l", "L", "U", "write", "rewrite", "read", "calls/rank (write)"]);
        let numbers: Vec<u32> =
            p.patterns.iter().filter(|x| x.method == Method::Write).map(|x| x.number).collect();
        for no in numbers {
            let of = |m: Method| p.patterns.iter().find(|x| x.method == m && x.number == no);
            let Some(w) = of(Method::Write) else { continue };
            let cell = |m: Method| of(m).map_or("-".into(), |x| format!("{:.1}", x.bw_mb_s));
            let (l, big_l) = if w.chunk == 0 {
                ("fill".to_string(), String::new())
            } else {
                (format_bytes(w.chunk), format_bytes(w.memory))
            };
            t.rows.push(vec![
                no.to_string(),
                w.pattern_type.to_string(),
                l,
                big_l,
                w.units.to_string(),
                cell(Method::Write),
                cell(Method::Rewrite),
                cell(Method::Read),
                w.calls.to_string(),
            ]);
        }
        t.render(&mut out);
        let notes: Vec<String> = p
            .patterns
            .iter()
            .filter_map(|x| x.note.as_ref().map(|n| format!("  {} {}: {n}\n", x.method.name(), x.number)))
            .collect();
        if !notes.is_empty() {
            out.push_str("schedule (pattern number: why its time differs from its share of T):\n");
            out.extend(notes);
        }
    }
    out.push_str(&format!(
        "\nb_eff_io = {:.1} MB/s (max over partitions, best at {} ranks; MB = 10^6 bytes)\n\
         coffee cup: writing this node's memory ({}) at b_eff_io takes {:.0} s\n",
        r.b_eff_io,
        r.best_ranks,
        format_bytes(r.memory),
        r.coffee_cup_s
    ));
    for w in &r.warnings {
        out.push_str(&format!("warning [{}]: {}\n", w.code.as_str(), w.message));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table2_has_the_papers_units_and_sizes() {
        let t = table2(192 * MIB);
        assert_eq!(t.len(), 43, "patterns 0–42");
        assert_eq!(t.iter().map(|p| p.units).sum::<u64>(), TOTAL_UNITS);
        let units_of = |ty: u8| t.iter().filter(|p| p.pattern_type == ty).map(|p| p.units).sum::<u64>();
        assert_eq!([0, 1, 2, 3, 4].map(units_of), [22, 12, 10, 10, 10]);
        assert_eq!((t[6].chunk, t[6].memory), (32 * KIB + 8, MIB + 256));
        assert_eq!((t[7].chunk, t[7].memory), (KIB + 8, MIB + 8 * KIB));
        assert_eq!(t[10].chunk, 192 * MIB, "pattern 10 is MPART");
        assert!(t[33].fill && t[42].fill);
        for p in t.iter().filter(|p| !p.fill) {
            assert_eq!(p.memory % p.chunk, 0, "pattern {}: whole chunks per call", p.number);
        }
    }

    #[test]
    fn weights_sum_to_one() {
        assert!((TYPE_WEIGHTS.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((METHOD_WEIGHTS.iter().map(|(_, w)| w).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(TYPE_WEIGHTS[0], 2.0 * TYPE_WEIGHTS[1]);
    }

    #[test]
    fn mpart_rule() {
        assert_eq!(mpart_for(64 * MIB), 2 * MIB);
        assert_eq!(mpart_for(24 << 30), 192 * MIB);
    }

    #[test]
    fn placements_do_not_overlap() {
        // Two ranks, type 0 with 4 pieces per call, 3 calls: every chunk at its own offset.
        let mut seen = std::collections::BTreeSet::new();
        for rank in 0..2 {
            let p =
                Placement { pattern_type: 0, ranks: 2, rank, base: 100, segment: 0, chunk: 10, memory: 40 };
            for call in 0..3 {
                for piece in 0..4 {
                    assert!(seen.insert(p.offset(call, piece)));
                }
            }
            assert_eq!(p.advance(3), 240);
        }
        assert_eq!(seen.first(), Some(&100));
        assert_eq!(seen.last(), Some(&(100 + 23 * 10)));
        let seg =
            Placement { pattern_type: 3, ranks: 2, rank: 1, base: 5, segment: 1000, chunk: 10, memory: 10 };
        assert_eq!(seg.offset(2, 0), 1000 + 5 + 20);
    }

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
    fn a_rank_log_travels_as_numbers() {
        let pattern = |calls| RankPattern {
            calls,
            bytes: calls * 10,
            ns: 7,
            budget_ns: (calls > 1).then_some(9),
            sync_ns: 3,
            capped: calls == 2,
        };
        let log = RankLog {
            patterns: vec![(Method::Write, 0, pattern(1)), (Method::Read, 4, pattern(2))],
            types: vec![(Method::Write, 0, 11), (Method::Read, 0, 12)],
            segment: 5,
        };
        let numbers = log.numbers();
        let back = log.with_numbers(&numbers).unwrap();
        assert_eq!(back.numbers(), numbers);
        assert_eq!(back.patterns[1].0, Method::Read);
        assert_eq!(back.patterns[1].1, 4);
        assert_eq!(back.patterns[1].2.budget_ns, Some(9));
        assert_eq!(back.patterns[0].2.budget_ns, None);
        assert!(back.patterns[1].2.capped && !back.patterns[0].2.capped);
        assert_eq!(back.types[1], (Method::Read, 0, 12));
        let err = log.with_numbers(&numbers[1..]).err().unwrap();
        assert!(err.contains("different patterns"), "{err}");
    }

    #[test]
    fn size_driven_plan_uses_the_mean_of_types_0_to_2() {
        let table = table2(2 * MIB);
        let records: Vec<PatternRecord> = table
            .iter()
            .filter(|p| p.pattern_type <= 2)
            .map(|p| pattern_record(Method::Write, p, 3, 3 * p.memory * 2, 1))
            .collect();
        let (calls, segment) = size_driven_plan(&records, 2, 2 * MIB);
        // 1 KiB chunks: types 1 and 2 moved 3 KiB per rank; type 0 moved 3 MiB (1 MiB calls).
        let mean = (3 * MIB + 3 * KIB + 3 * KIB) / 3;
        assert_eq!(calls[4], mean.div_ceil(KIB));
        assert_eq!(segment % MIB, 0);
        let sum: u64 = calls.iter().zip(listed_chunks(2 * MIB)).map(|(c, (l, _, _))| c * l).sum();
        assert!(segment >= sum && segment - sum < MIB);
    }

    #[test]
    fn the_schedule_spreads_delays_and_reserves_for_size_driven_patterns() {
        let table = table2(2 * MIB);
        let t = Duration::from_secs(64 * 3);
        let mut s = Schedule::new(&table, t);
        // Pattern 1 (type 0, MPART, U = 4): a share of T/3 · 4/64 = 4 s.
        let first = s.position(Method::Write, 1);
        let on_time = s.budget_ns(first, 0);
        assert_eq!(s.order[first].2, 4_000_000_000);
        // Less than the share: the write's types 3 and 4 are expected to take longer than theirs.
        assert!(on_time < 4_000_000_000 && on_time > 3_000_000_000, "{on_time}");
        // 10 s behind: the delay is spread over all time-driven patterns left, by their shares,
        // rather than taken from this one alone.
        let behind = s.budget_ns(first, 10_000_000_000);
        let shares_left: u64 = s.order[first..].iter().filter(|p| p.3).map(|p| p.2).sum();
        let expected = on_time as f64 - 10e9 * 4e9 / shares_left as f64;
        assert!((behind as f64 - expected).abs() < 10.0, "{behind} vs {expected}");
        let later = s.position(Method::Read, 1);
        // Once the write's size-driven patterns have run, rewrite and read reserve their times.
        for step in 0..s.position(Method::Rewrite, 0) {
            let (_, _, share_ns, timed) = s.order[step];
            let ns = if timed { share_ns } else { 20_000_000_000 };
            s.done(step, &RankPattern { ns, bytes: if timed { ns } else { 0 }, ..RankPattern::default() });
        }
        let rewrite = s.position(Method::Rewrite, 1);
        assert_eq!(s.budget_ns(rewrite, 128_000_000_000), 0, "the reserve exceeds the time left");
        // Past T entirely: nothing but the one-call minimum.
        assert_eq!(s.budget_ns(later, 300_000_000_000), 0);
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

    #[test]
    fn thread_ranks_gather_in_rank_order() {
        let group = ThreadRanks::group(3);
        let got: Vec<Vec<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> =
                group.iter().map(|r| s.spawn(move || r.all_gather(10 + r.rank() as u64))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|v| v == &[10, 11, 12]));
    }
}
