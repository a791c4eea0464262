//! The records of a b_eff_io run (per pattern, pattern type, access method, partition and
//! system) and the weighted values computed from them.

use iolens_metrics::Warning;
use serde::Serialize;

use super::{Method, PatternDef, TYPE_WEIGHTS};

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
    /// Told to the envelope (see `iolens_output::contract::Body`).
    #[serde(skip)]
    pub interrupted: bool,
    /// What a rank was: "threads of one process" or "MPI processes".
    pub ranks_are: &'static str,
    /// The MPI library and the hints of an MPI-IO run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mpi: Option<MpiIoInfo>,
}

impl iolens_output::contract::Body for BeffIoResult {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
    fn warnings(&self) -> Vec<iolens_output::contract::Notice> {
        iolens_metrics::Warning::notices(&self.warnings)
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
pub(super) fn mb_s(bytes: u64, seconds: f64) -> f64 {
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

pub(super) fn pattern_record(
    method: Method,
    def: &PatternDef,
    calls: u64,
    bytes: u64,
    ns: u64,
) -> PatternRecord {
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
