//! What a Darshan log import yields besides the events: the job, its mounts, the modules with
//! their counter totals and DXT segment counts.

use serde::Serialize;

use super::LustreFile;

/// A job's metadata, from the job record.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DarshanJob {
    pub uid: i64,
    pub jobid: i64,
    pub nprocs: i64,
    /// Seconds since the epoch, and nanoseconds (zero before log version 3.41, which kept
    /// whole seconds only).
    pub start_time_s: i64,
    pub start_time_ns: i64,
    pub end_time_s: i64,
    pub end_time_ns: i64,
    /// As darshan-parser prints it: end − start, to the nanosecond since log version 3.41;
    /// before it, whole seconds plus one (the times were truncated to seconds).
    pub runtime_s: f64,
    pub exe: String,
    /// `key=value` lines the runtime recorded (library version, hints).
    pub metadata: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DarshanMount {
    pub path: String,
    pub fs_type: String,
}

/// One counter summed over all records of a module. As in darshan-util, −1 means the runtime
/// could not monitor it (a sum that turns negative is set to −1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterTotal {
    pub name: &'static str,
    pub total: i64,
}

/// What a DXT module held.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DxtTotals {
    pub read_segments: u64,
    pub write_segments: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

impl DxtTotals {
    pub fn segments(&self) -> u64 {
        self.read_segments.saturating_add(self.write_segments)
    }
}

/// One module region of the log.
#[derive(Debug, Clone, Serialize)]
pub struct DarshanModule {
    pub name: String,
    /// The module's own format version (each module numbers its record layouts).
    pub version: u32,
    pub compressed_bytes: u64,
    /// The runtime ran out of memory for this module: its records are not all there.
    pub partial: bool,
    /// Whether iolens decodes this module's records (POSIX, MPI-IO, STDIO, HDF5, PnetCDF since
    /// its version 3, Lustre, DXT); the others (heatmaps, APMPI, …) are only listed.
    pub decoded: bool,
    pub records: u64,
    /// Exact sums of the module's counters (decoded counter modules).
    pub counters: Vec<CounterTotal>,
    /// Summed time counters in seconds (read, write, metadata), as darshan-parser sums them;
    /// None where the module (or its format version) has no such counter.
    pub read_time_s: Option<f64>,
    pub write_time_s: Option<f64>,
    pub meta_time_s: Option<f64>,
    /// DXT modules: segments and bytes.
    pub dxt: Option<DxtTotals>,
}

impl DarshanModule {
    pub(super) fn new(name: String, version: u32, compressed_bytes: u64, partial: bool) -> DarshanModule {
        DarshanModule {
            name,
            version,
            compressed_bytes,
            partial,
            decoded: false,
            records: 0,
            counters: Vec::new(),
            read_time_s: None,
            write_time_s: None,
            meta_time_s: None,
            dxt: None,
        }
    }
}

/// Everything of a Darshan log except the DXT segments, which go to the event sink.
#[derive(Debug, Clone, Serialize)]
pub struct DarshanLog {
    pub log_version: String,
    pub compression: &'static str,
    pub big_endian: bool,
    pub job: DarshanJob,
    pub mounts: Vec<DarshanMount>,
    pub modules: Vec<DarshanModule>,
    /// The LUSTRE module's records: how each file on Lustre is striped (file order of the log).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lustre: Vec<LustreFile>,
    /// Some counter module (not DXT) is partial: its totals are lower bounds.
    pub incomplete: bool,
    /// Some DXT module is partial, or holds fewer segments than its counter module counted
    /// operations: the segment-based figures miss operations the counters have.
    pub dxt_incomplete: bool,
}

impl DarshanLog {
    pub fn module(&self, name: &str) -> Option<&DarshanModule> {
        self.modules.iter().find(|m| m.name == name)
    }

    /// A counter total by its darshan name (`POSIX_READS`), if its module was decoded.
    pub fn counter(&self, name: &str) -> Option<i64> {
        self.modules.iter().flat_map(|m| &m.counters).find(|c| c.name == name).map(|c| c.total)
    }

    /// Job runtime in nanoseconds (the wall time of the job).
    pub fn runtime_ns(&self) -> u64 {
        let s = self.job.runtime_s;
        if s.is_finite() && s > 0.0 {
            (s * 1e9).round() as u64
        } else {
            0
        }
    }
}
