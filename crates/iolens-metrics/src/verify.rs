//! What a run's data verification found, as the JSON result reports it.

use serde::{Deserialize, Serialize};

/// Header fields of a block, as expected or as found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockFields {
    /// The 8 magic bytes, hex.
    pub magic: String,
    pub offset: u64,
    pub size: u64,
    /// Expected generation: `None` when the reader had not settled one yet.
    pub generation: Option<u64>,
}

/// One block that failed verification.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyFailure {
    pub agent: String,
    pub file: String,
    /// File offset of the block.
    pub offset: u64,
    /// `corrupt`, `misplaced`, `stale`, `newer`, `torn`, `unwritten` or `short`.
    pub kind: String,
    /// `read` (the workload's reads) or `read_back` (the pass after the writes).
    pub phase: String,
    pub expected: BlockFields,
    /// `None` when the block holds no header (never written with verification, or too short).
    pub found: Option<BlockFields>,
    /// First byte differing from the expected block, from the block's start and in the file.
    pub first_bad_byte: Option<u64>,
    pub first_bad_offset: Option<u64>,
    pub bytes_read: u64,
}

/// The verification of a run: counts over all agents, the first failures of each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// The methods in use (`crc32c`, `xxh3`, `pattern`; several joined by `+`).
    pub kind: String,
    /// Generation stamped into the blocks this run wrote (`None` without verified writes).
    pub generation_written: Option<u64>,
    pub blocks_written: u64,
    pub blocks_checked: u64,
    pub failures_total: u64,
    /// At most a few per agent; `failures_total` counts them all.
    pub failures: Vec<VerifyFailure>,
    /// Time filling and checking blocks during the workload, summed over agents.
    pub cost_s: f64,
    /// Time of the read-back pass after the writes (`verify_after_write`), summed over agents.
    pub read_back_s: f64,
    /// Always false: fill and check happen outside the timed intervals, so latencies, busy
    /// time and BPS exclude them; wall-time rates (IOPS, bandwidth) include `cost_s`, since
    /// it is spent inside the measurement window; the read-back pass is after the window.
    pub included_in_io_time: bool,
}
