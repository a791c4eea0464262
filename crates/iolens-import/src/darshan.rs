//! Binary Darshan logs (`*.darshan`, the formats darshan-util 3.x reads: log versions 3.00, 3.10,
//! 3.20, 3.21 and 3.41), read natively and streamed: the uncompressed header, then each region —
//! job record (with the executable and mount table), name records, one per module — in file
//! order, each a run of zlib or bzip2 streams (or stored uncompressed).
//!
//! What comes out: the job (nprocs, executable, start and end with nanoseconds where the log
//! has them, runtime as darshan-parser defines it), the mounts, exact counter totals of the
//! POSIX, MPI-IO, STDIO, HDF5 (H5F, H5D) and PnetCDF modules (the sums `darshan-parser --total`
//! prints), the Lustre striping of each file (stripe size and count, OST ids, layout
//! components), the other modules by name, version and size, and every DXT_POSIX and DXT_MPIIO
//! segment as an [`IoEvent`] with the binary's full time precision and its layer. Counter totals stay exact when DXT ran out
//! of memory: a note then says how many operations the segments miss.
//!
//! Nothing read from the file sizes an allocation unchecked: names are bounded, records and
//! segments are read one at a time from the decompressing stream, and a region that decompresses
//! to far more than real logs do is refused as a decompression bomb.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};

use bzip2::bufread::MultiBzDecoder;
use flate2::{Decompress, FlushDecompress, Status};
use iolens_record::event::{IoEvent, IoOp, Layer, UNKNOWN_OFFSET};
use serde::Serialize;

use crate::{Ctx, ImportError};

mod lustre;
pub use lustre::{LustreComponent, LustreFile};

const MAGIC: u64 = 6_567_223;
/// Header sizes: 16 module slots before log version 3.41, 64 since.
const HEADER_LEN_OLD: usize = 360;
const HEADER_LEN_341: usize = 1328;
/// darshan-runtime writes at most this much job data (job struct, exe line, mount lines).
const JOB_RECORD_LEN: u64 = 4096;
/// A record name is a path; nothing real comes near this.
const MAX_NAME: usize = 64 * 1024;
/// Decompressed bytes of name records held in memory at most.
const MAX_NAME_BYTES: u64 = 256 << 20;
/// A compressed region may decompress to at most this many times its size, and to this floor
/// whatever its size. Every Darshan record carries an 8-byte hash of its file name, so real
/// regions shrink ~50× at most (the public sample logs: 52×); deflate cannot exceed ~1032×, but a
/// bzip2 stream of zeros reaches a million, and streams may follow one another without end.
const MAX_INFLATION: u64 = 1024;
const MIN_REGION_LIMIT: u64 = 64 << 20;

/// Whether a file starts like a Darshan log: a "3.NN" version string and the magic number.
pub(crate) fn looks_like(head: &[u8]) -> bool {
    head.len() >= 16
        && head.starts_with(b"3.")
        && head[2..4].iter().all(u8::is_ascii_digit)
        && head[4..8].iter().all(|&b| b == 0)
        && {
            let m = u64::from_le_bytes(head[8..16].try_into().unwrap());
            m == MAGIC || m.swap_bytes() == MAGIC
        }
}

/// The module ids of log version 3.41 (earlier logs are renumbered to these).
const MODULE_NAMES: [&str; 18] = [
    "NULL",
    "POSIX",
    "MPI-IO",
    "H5F",
    "H5D",
    "PNETCDF_FILE",
    "PNETCDF_VAR",
    "BG/Q",
    "LUSTRE",
    "STDIO",
    "DXT_POSIX",
    "DXT_MPIIO",
    "MDHIM",
    "APXC",
    "APMPI",
    "HEATMAP",
    "DFS",
    "DAOS",
];
const POSIX: usize = 1;
const MPIIO: usize = 2;
const H5F: usize = 3;
const H5D: usize = 4;
const PNETCDF_FILE: usize = 5;
const PNETCDF_VAR: usize = 6;
const LUSTRE: usize = 8;
const STDIO: usize = 9;
const DXT_POSIX: usize = 10;
const DXT_MPIIO: usize = 11;

fn module_name(id: usize) -> String {
    MODULE_NAMES.get(id).map_or_else(|| format!("module #{id}"), |n| n.to_string())
}

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
    fn new(name: String, version: u32, compressed_bytes: u64, partial: bool) -> DarshanModule {
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

/// How one version of a counter module lays out its record, and where the reported counters sit.
struct CounterLayout {
    /// Bytes between the base record (id, rank) and the counters: the parent file's record id
    /// of HDF5 datasets and PnetCDF variables.
    prefix: usize,
    ints: usize,
    floats: usize,
    /// (name, index) of the counters summed into the totals.
    counters: &'static [(&'static str, usize)],
    /// Indexes of the read, write and metadata time counters among the floats, where kept.
    times: [Option<usize>; 3],
}

/// What iolens makes of a module at a format version.
enum Decoding {
    Counters(CounterLayout),
    /// Striping of files on Lustre, per file.
    Lustre,
    /// Listed by name and size only.
    Listed,
    /// A version newer than any darshan-util 3.x writes: the newest known.
    TooNew(u32),
}

const POSIX_V1: &[(&str, usize)] = &[
    ("POSIX_OPENS", 0),
    ("POSIX_READS", 1),
    ("POSIX_WRITES", 2),
    ("POSIX_SEEKS", 3),
    ("POSIX_STATS", 4),
    ("POSIX_MMAPS", 5),
    ("POSIX_FSYNCS", 10),
    ("POSIX_FDSYNCS", 11),
    ("POSIX_BYTES_READ", 13),
    ("POSIX_BYTES_WRITTEN", 14),
];
/// Versions 2 and 3: the stdio counters of version 1 (indexes 6–9) left the POSIX module.
const POSIX_V2: &[(&str, usize)] = &[
    ("POSIX_OPENS", 0),
    ("POSIX_READS", 1),
    ("POSIX_WRITES", 2),
    ("POSIX_SEEKS", 3),
    ("POSIX_STATS", 4),
    ("POSIX_MMAPS", 5),
    ("POSIX_FSYNCS", 6),
    ("POSIX_FDSYNCS", 7),
    ("POSIX_BYTES_READ", 9),
    ("POSIX_BYTES_WRITTEN", 10),
];
/// Version 4 added FILENOS and DUPS after OPENS, and three rename counters after FDSYNCS.
const POSIX_V4: &[(&str, usize)] = &[
    ("POSIX_OPENS", 0),
    ("POSIX_FILENOS", 1),
    ("POSIX_DUPS", 2),
    ("POSIX_READS", 3),
    ("POSIX_WRITES", 4),
    ("POSIX_SEEKS", 5),
    ("POSIX_STATS", 6),
    ("POSIX_MMAPS", 7),
    ("POSIX_FSYNCS", 8),
    ("POSIX_FDSYNCS", 9),
    ("POSIX_BYTES_READ", 14),
    ("POSIX_BYTES_WRITTEN", 15),
];
const MPIIO_ALL: &[(&str, usize)] = &[
    ("MPIIO_INDEP_OPENS", 0),
    ("MPIIO_COLL_OPENS", 1),
    ("MPIIO_INDEP_READS", 2),
    ("MPIIO_INDEP_WRITES", 3),
    ("MPIIO_COLL_READS", 4),
    ("MPIIO_COLL_WRITES", 5),
    ("MPIIO_SPLIT_READS", 6),
    ("MPIIO_SPLIT_WRITES", 7),
    ("MPIIO_NB_READS", 8),
    ("MPIIO_NB_WRITES", 9),
    ("MPIIO_SYNCS", 10),
    ("MPIIO_BYTES_READ", 14),
    ("MPIIO_BYTES_WRITTEN", 15),
];
const STDIO_V1: &[(&str, usize)] = &[
    ("STDIO_OPENS", 0),
    ("STDIO_READS", 1),
    ("STDIO_WRITES", 2),
    ("STDIO_SEEKS", 3),
    ("STDIO_FLUSHES", 4),
    ("STDIO_BYTES_WRITTEN", 5),
    ("STDIO_BYTES_READ", 6),
];
/// Version 2 added FDOPENS after OPENS.
const STDIO_V2: &[(&str, usize)] = &[
    ("STDIO_OPENS", 0),
    ("STDIO_FDOPENS", 1),
    ("STDIO_READS", 2),
    ("STDIO_WRITES", 3),
    ("STDIO_SEEKS", 4),
    ("STDIO_FLUSHES", 5),
    ("STDIO_BYTES_WRITTEN", 6),
    ("STDIO_BYTES_READ", 7),
];

/// HDF5 files: versions 1 and 2 kept only OPENS (and no metadata time).
const H5F_V1: &[(&str, usize)] = &[("H5F_OPENS", 0)];
const H5F_V3: &[(&str, usize)] = &[("H5F_OPENS", 0), ("H5F_FLUSHES", 1)];
const H5D_ALL: &[(&str, usize)] = &[
    ("H5D_OPENS", 0),
    ("H5D_READS", 1),
    ("H5D_WRITES", 2),
    ("H5D_FLUSHES", 3),
    ("H5D_BYTES_READ", 4),
    ("H5D_BYTES_WRITTEN", 5),
];
const PNETCDF_FILE_V3: &[(&str, usize)] = &[
    ("PNETCDF_FILE_CREATES", 0),
    ("PNETCDF_FILE_OPENS", 1),
    ("PNETCDF_FILE_SYNCS", 5),
    ("PNETCDF_FILE_BYTES_READ", 6),
    ("PNETCDF_FILE_BYTES_WRITTEN", 7),
];
const PNETCDF_VAR_V1: &[(&str, usize)] = &[
    ("PNETCDF_VAR_OPENS", 0),
    ("PNETCDF_VAR_INDEP_READS", 1),
    ("PNETCDF_VAR_INDEP_WRITES", 2),
    ("PNETCDF_VAR_COLL_READS", 3),
    ("PNETCDF_VAR_COLL_WRITES", 4),
    ("PNETCDF_VAR_NB_READS", 5),
    ("PNETCDF_VAR_NB_WRITES", 6),
    ("PNETCDF_VAR_BYTES_READ", 7),
    ("PNETCDF_VAR_BYTES_WRITTEN", 8),
];

/// What to make of `module` at `version` (module ids of log version 3.41).
fn decoding(module: usize, version: u32) -> Decoding {
    let l = |prefix, ints, floats, counters, times| {
        Decoding::Counters(CounterLayout { prefix, ints, floats, counters, times })
    };
    let rwm = |r, w, m| [Some(r), Some(w), Some(m)];
    match (module, version) {
        (POSIX, 1) => l(0, 68, 15, POSIX_V1, rwm(6, 7, 8)),
        (POSIX, 2) => l(0, 64, 15, POSIX_V2, rwm(6, 7, 8)),
        (POSIX, 3) => l(0, 64, 17, POSIX_V2, rwm(8, 9, 10)),
        (POSIX, 4) => l(0, 69, 17, POSIX_V4, rwm(8, 9, 10)),
        (MPIIO, 1 | 2) => l(0, 51, 15, MPIIO_ALL, rwm(6, 7, 8)),
        (MPIIO, 3) => l(0, 51, 17, MPIIO_ALL, rwm(8, 9, 10)),
        (STDIO, 1) => l(0, 13, 15, STDIO_V1, rwm(2, 1, 0)),
        (STDIO, 2) => l(0, 14, 15, STDIO_V2, rwm(2, 1, 0)),
        (H5F, 1) => l(0, 1, 2, H5F_V1, [None; 3]),
        (H5F, 2) => l(0, 1, 4, H5F_V1, [None; 3]),
        (H5F, 3) => l(0, 3, 5, H5F_V3, [None, None, Some(4)]),
        // Version 2 added the parent file's record id.
        (H5D, 1) => l(0, 94, 17, H5D_ALL, rwm(8, 9, 10)),
        (H5D, 2) => l(8, 94, 17, H5D_ALL, rwm(8, 9, 10)),
        // Versions 1 and 2 split opens in two and lack the byte counters: listed only.
        (PNETCDF_FILE, 1 | 2) => Decoding::Listed,
        (PNETCDF_FILE, 3) => l(0, 9, 8, PNETCDF_FILE_V3, [None, None, Some(6)]),
        (PNETCDF_VAR, 1) => l(8, 120, 17, PNETCDF_VAR_V1, rwm(8, 9, 10)),
        (LUSTRE, 1 | 2) => Decoding::Lustre,
        (POSIX, _) => Decoding::TooNew(4),
        (MPIIO, _) => Decoding::TooNew(3),
        (STDIO, _) => Decoding::TooNew(2),
        (H5F, _) => Decoding::TooNew(3),
        (H5D, _) => Decoding::TooNew(2),
        (PNETCDF_FILE, _) => Decoding::TooNew(3),
        (PNETCDF_VAR, _) => Decoding::TooNew(1),
        (LUSTRE, _) => Decoding::TooNew(2),
        _ => Decoding::Listed,
    }
}

/// Newest DXT format versions; POSIX v2 and MPI-IO v3 added a thread id to each segment.
const DXT_POSIX_MAX: u32 = 2;
const DXT_MPIIO_MAX: u32 = 3;
const DXT_RECORD_LEN: usize = 104;

/// Reads integers of the log's byte order.
#[derive(Clone, Copy)]
struct Order {
    big: bool,
}

impl Order {
    fn u64(self, b: &[u8], at: usize) -> u64 {
        let raw: [u8; 8] = b[at..at + 8].try_into().unwrap();
        if self.big {
            u64::from_be_bytes(raw)
        } else {
            u64::from_le_bytes(raw)
        }
    }
    fn i64(self, b: &[u8], at: usize) -> i64 {
        self.u64(b, at) as i64
    }
    fn u32(self, b: &[u8], at: usize) -> u32 {
        let raw: [u8; 4] = b[at..at + 4].try_into().unwrap();
        if self.big {
            u32::from_be_bytes(raw)
        } else {
            u32::from_le_bytes(raw)
        }
    }
    fn f64(self, b: &[u8], at: usize) -> f64 {
        f64::from_bits(self.u64(b, at))
    }
}

/// A region of the file: the job record, the name records or a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    Job,
    Names,
    Module(usize),
}

impl Region {
    fn name(self) -> String {
        match self {
            Region::Job => "job".into(),
            Region::Names => "name-record".into(),
            Region::Module(id) => format!("{} module", module_name(id)),
        }
    }
}

/// The parsed header.
struct Header {
    version: String,
    minor: u32,
    order: Order,
    compression: u8,
    /// (region, offset, length) with a non-zero length.
    regions: Vec<(Region, u64, u64)>,
    module_versions: HashMap<usize, u32>,
    partial: u64,
    len: u64,
}

/// Maps a module slot of an older header to the 3.41 numbering: H5D was inserted at 3.20 and
/// PNETCDF_VAR at 3.41, each shifting the modules after it by one.
fn renumber(slot: usize, minor: u32) -> usize {
    let mut id = slot;
    if minor < 20 && id >= H5D {
        id += 1;
    }
    if minor < 41 && id >= PNETCDF_VAR {
        id += 1;
    }
    id
}

fn read_header(ctx: &Ctx, input: &mut impl Read) -> Result<Header, ImportError> {
    let err = |m: String| ctx.format_err(&ctx.path, m);
    let mut buf = vec![0u8; HEADER_LEN_341];
    read_full(input, &mut buf[..8])
        .map_err(|e| ctx.io(e))?
        .then_some(())
        .ok_or_else(|| err("not a Darshan log: shorter than the 8-byte version string".into()))?;
    let version: String = buf[..8].iter().take_while(|&&b| b != 0).map(|&b| char::from(b)).collect();
    let minor = match version.split_once('.') {
        Some(("3", m)) if m.len() == 2 && m.bytes().all(|b| b.is_ascii_digit()) => m.parse::<u32>().ok(),
        _ => None,
    };
    let minor = match minor {
        Some(m @ (0 | 10 | 20 | 21 | 41)) => m,
        _ => {
            return Err(err(format!(
                "unknown Darshan log version {version:?}: iolens reads log versions 3.00, 3.10, 3.20, 3.21 and 3.41 (darshan 3.0–3.5); convert newer logs with darshan-convert"
            )))
        }
    };
    let len = if minor >= 41 { HEADER_LEN_341 } else { HEADER_LEN_OLD };
    if !read_full(input, &mut buf[8..len]).map_err(|e| ctx.io(e))? {
        return Err(err(format!("the header is cut short (a {version} header is {len} bytes)")));
    }
    let magic = u64::from_le_bytes(buf[8..16].try_into().unwrap());
    let order = match magic {
        MAGIC => Order { big: false },
        m if m.swap_bytes() == MAGIC => Order { big: true },
        m => {
            return Err(err(format!("bad magic number {m:#x} in the header: not a Darshan log, or corrupt")))
        }
    };
    let compression = buf[16];
    // Offsets of partial_flag, name_map, the module maps and versions, and the slot count.
    let (partial, names_at, slots) =
        if minor >= 41 { (order.u64(&buf, 24), 32, 64) } else { (u64::from(order.u32(&buf, 20)), 24, 16) };
    let maps_at = names_at + 16;
    let versions_at = maps_at + 16 * slots;
    let mut regions = Vec::new();
    let names = (order.u64(&buf, names_at), order.u64(&buf, names_at + 8));
    if names.1 > 0 {
        regions.push((Region::Names, names.0, names.1));
    }
    let mut module_versions = HashMap::new();
    let mut partial_flags = 0u64;
    for slot in 0..slots {
        let id = renumber(slot, minor);
        if partial & (1 << slot) != 0 && id < 64 {
            partial_flags |= 1 << id;
        }
        let (off, mlen) = (order.u64(&buf, maps_at + 16 * slot), order.u64(&buf, maps_at + 16 * slot + 8));
        module_versions.insert(id, order.u32(&buf, versions_at + 4 * slot));
        if mlen > 0 {
            regions.push((Region::Module(id), off, mlen));
        }
    }
    // The job record runs from the header to the first region after it (or to the end).
    let job_end = regions.iter().map(|r| r.1).filter(|&o| o > len as u64).min();
    regions.push((Region::Job, len as u64, job_end.map_or(u64::MAX, |e| e - len as u64)));
    regions.sort_by_key(|r| r.1);
    for pair in regions.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.1.saturating_add(a.2) > b.1 {
            return Err(err(format!(
                "corrupt header: the {} region (bytes {}+{}) overlaps the {} region at byte {}",
                a.0.name(),
                a.1,
                a.2,
                b.0.name(),
                b.1
            )));
        }
    }
    if let Some(r) = regions.iter().find(|r| r.1 < len as u64) {
        return Err(err(format!(
            "corrupt header: the {} region starts at byte {}, inside the header",
            r.0.name(),
            r.1
        )));
    }
    Ok(Header {
        version,
        minor,
        order,
        compression,
        regions,
        module_versions,
        partial: partial_flags,
        len: len as u64,
    })
}

/// Fills `buf`; false when the input ends first (having read some or none of it).
fn read_full(r: &mut (impl Read + ?Sized), buf: &mut [u8]) -> io::Result<bool> {
    Ok(read_record(r, buf)? == Ok(true))
}

/// Reads one fixed-size record: Ok(true) when whole, Ok(false) at a clean end, and an error
/// message with the byte count when the data ends inside it.
fn read_record(r: &mut (impl Read + ?Sized), buf: &mut [u8]) -> io::Result<Result<bool, usize>> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => return Ok(if got == 0 { Ok(false) } else { Err(got) }),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Ok(true))
}

/// A region compressed as zlib streams one after another (darshan-runtime starts a new
/// stream for each flush): decodes them in turn until the input ends. One decompressor serves
/// every stream of every region, reset between them: a log has hundreds of streams, and a new
/// decompressor (its 32 KiB window and tables) for each was most of the time a small log took.
struct ZlibStreams<'d, R: BufRead> {
    input: R,
    state: &'d mut Decompress,
    /// The current stream has ended: the next byte, if any, starts another.
    stream_ended: bool,
}

impl<'d, R: BufRead> ZlibStreams<'d, R> {
    fn new(input: R, state: &'d mut Decompress) -> Self {
        state.reset(true);
        ZlibStreams { input, state, stream_ended: false }
    }
}

impl<R: BufRead> Read for ZlibStreams<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let input = self.input.fill_buf()?;
            if self.stream_ended {
                if input.is_empty() {
                    return Ok(0);
                }
                self.state.reset(true);
                self.stream_ended = false;
            }
            let eof = input.is_empty();
            let (in_before, out_before) = (self.state.total_in(), self.state.total_out());
            let flush = if eof { FlushDecompress::Finish } else { FlushDecompress::None };
            let status = self
                .state
                .decompress(input, buf, flush)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("corrupt zlib data: {e}")))?;
            let consumed = (self.state.total_in() - in_before) as usize;
            let produced = (self.state.total_out() - out_before) as usize;
            self.input.consume(consumed);
            self.stream_ended = status == Status::StreamEnd;
            if produced > 0 {
                return Ok(produced);
            }
            if eof {
                // A stream cut short ends the data: the record it leaves incomplete is reported
                // by whoever reads the records.
                return Ok(0);
            }
            if consumed == 0 && !self.stream_ended {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt zlib data: no progress"));
            }
        }
    }
}

/// Decompressed data that may not outgrow `left` bytes: past it, reading fails (a
/// decompression bomb) instead of going on for as long as the streams repeat.
struct Inflation<R: Read> {
    inner: R,
    left: u64,
    limit: u64,
    compressed: u64,
}

impl<R: Read> Read for Inflation<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // Exactly at the limit is allowed; one byte more is not.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "its {} compressed bytes decompress to more than {} MiB (over {MAX_INFLATION}x): a decompression bomb, or corrupt",
                        self.compressed,
                        self.limit >> 20
                    ),
                )),
            };
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// The decompressed bytes of one region of `compressed` bytes.
fn region_reader<'r>(
    compression: u8,
    raw: &'r mut dyn Read,
    compressed: u64,
    zlib: &'r mut Decompress,
) -> Box<dyn Read + 'r> {
    let limit = compressed.saturating_mul(MAX_INFLATION).max(MIN_REGION_LIMIT);
    let bounded = |inner: Box<dyn Read + 'r>| -> Box<dyn Read + 'r> {
        Box::new(Inflation { inner, left: limit, limit, compressed })
    };
    match compression {
        0 => bounded(Box::new(ZlibStreams::new(BufReader::new(raw), zlib))),
        // darshan-util ends a bzip2 stream at each flush and starts another.
        1 => bounded(Box::new(MultiBzDecoder::new(BufReader::new(raw)))),
        _ => Box::new(raw),
    }
}

pub(crate) fn import(ctx: &mut Ctx, input: impl Read) -> Result<(), ImportError> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let header = read_header(ctx, &mut input)?;
    let compression = match header.compression {
        0 => "zlib",
        1 => "bzip2",
        2 => "none",
        c => return Err(ctx.format_err(&ctx.path, format!("corrupt header: unknown compression type {c}"))),
    };
    let mut log = DarshanLog {
        log_version: header.version.clone(),
        compression,
        big_endian: header.order.big,
        job: DarshanJob::default(),
        mounts: Vec::new(),
        modules: Vec::new(),
        lustre: Vec::new(),
        incomplete: false,
        dxt_incomplete: false,
    };
    let mut names: HashMap<u64, String> = HashMap::new();
    // One path id per file, whichever DXT module names it first.
    let mut paths: HashMap<u64, u32> = HashMap::new();
    let mut pos = header.len;
    let mut zlib = Decompress::new(true);
    for &(region, off, len) in &header.regions {
        if ctx.report.interrupted {
            break;
        }
        let skip = off - pos;
        let skipped = io::copy(&mut (&mut input).take(skip), &mut io::sink()).map_err(|e| ctx.io(e))?;
        if skipped < skip {
            return Err(ctx.format_err(
                &ctx.path,
                format!(
                    "the file ends at byte {} before the {} region (byte {off})",
                    pos + skipped,
                    region.name()
                ),
            ));
        }
        let mut raw = (&mut input).take(len);
        let mut data = region_reader(header.compression, &mut raw, len, &mut zlib);
        let outcome =
            read_region(ctx, &header, (region, off, len), &mut data, &mut log, &mut names, &mut paths);
        drop(data);
        // What the decompressor left of the region (padding) is skipped. A file that ends inside
        // the region is the reason for any error reading it, and is named as such.
        let rest = raw.limit();
        let drained = io::copy(&mut raw, &mut io::sink()).map_err(|e| ctx.io(e))?;
        if drained < rest && len != u64::MAX {
            return Err(ctx.format_err(
                &ctx.path,
                format!(
                    "the file ends inside the {} region (bytes {off}+{len}): the log is truncated",
                    region.name()
                ),
            ));
        }
        outcome?;
        pos = off.saturating_add(len - rest + drained);
    }
    // Modules flagged partial that wrote no region still count as partial.
    for id in 0..64usize {
        if header.partial & (1 << id) != 0 && !log.modules.iter().any(|m| m.name == module_name(id)) {
            let version = header.module_versions.get(&id).copied().unwrap_or(0);
            log.modules.push(DarshanModule::new(module_name(id), version, 0, true));
        }
    }
    judge_completeness(ctx, &mut log);
    ctx.report.darshan = Some(Box::new(log));
    Ok(())
}

/// Reads one region's decompressed `data` into the log, the names or the event sink.
fn read_region(
    ctx: &mut Ctx,
    header: &Header,
    (region, off, len): (Region, u64, u64),
    data: &mut dyn Read,
    log: &mut DarshanLog,
    names: &mut HashMap<u64, String>,
    paths: &mut HashMap<u64, u32>,
) -> Result<(), ImportError> {
    match region {
        Region::Job => read_job(header, data, log).map_err(|e| {
            ctx.format_err(&ctx.path, format!("the job region (byte {off}) cannot be decompressed: {e}"))
        }),
        Region::Names => read_names(ctx, header, data, names),
        Region::Module(id) => {
            let version = header.module_versions.get(&id).copied().unwrap_or(0);
            let partial = header.partial & (1 << id.min(63)) != 0;
            let mut module = DarshanModule::new(module_name(id), version, len, partial);
            if id == DXT_POSIX || id == DXT_MPIIO {
                read_dxt(ctx, header, id, data, &mut module, names, paths)?;
            } else {
                match decoding(id, version) {
                    Decoding::Counters(layout) => read_counters(ctx, header, &layout, data, &mut module)?,
                    Decoding::Lustre => lustre::read(ctx, header, data, &mut module, names, &mut log.lustre)?,
                    Decoding::Listed => {}
                    Decoding::TooNew(newest) => {
                        return Err(ctx.format_err(
                            &ctx.path,
                            format!(
                                "the {} module has format version {version}; iolens reads versions 1 to {newest} (corrupt, or a newer Darshan)",
                                module.name
                            ),
                        ))
                    }
                }
            }
            log.modules.push(module);
            Ok(())
        }
    }
}

/// Read and write operations a counter module counted: what its DXT module should hold.
fn counted_ops(log: &DarshanLog, dxt: &str) -> Option<i64> {
    let names: &[&str] = match dxt {
        "DXT_POSIX" => &["POSIX_READS", "POSIX_WRITES"],
        _ => &[
            "MPIIO_INDEP_READS",
            "MPIIO_INDEP_WRITES",
            "MPIIO_COLL_READS",
            "MPIIO_COLL_WRITES",
            "MPIIO_SPLIT_READS",
            "MPIIO_SPLIT_WRITES",
            "MPIIO_NB_READS",
            "MPIIO_NB_WRITES",
        ],
    };
    names.iter().map(|n| log.counter(n)).sum()
}

fn judge_completeness(ctx: &mut Ctx, log: &mut DarshanLog) {
    for m in &log.modules {
        if !m.partial || m.name.starts_with("DXT_") {
            continue;
        }
        log.incomplete = true;
        ctx.report.notes.push(format!(
            "the Darshan {} module ran out of memory: it holds only some of the files, so its totals are lower bounds",
            m.name
        ));
    }
    if !log.modules.iter().any(|m| m.name.starts_with("DXT_")) {
        ctx.report.notes.push(
            "the Darshan log has no DXT trace (DXT was not enabled): there are no operations to time, only the module counter totals".into(),
        );
    }
    for m in log.modules.iter().filter(|m| m.name.starts_with("DXT_")) {
        let segments = m.dxt.as_ref().map_or(0, DxtTotals::segments);
        let counted = counted_ops(log, &m.name).unwrap_or(0).max(0) as u64;
        if m.partial || segments < counted {
            log.dxt_incomplete = true;
            ctx.report.notes.push(format!(
                "the {} trace is incomplete (the runtime ran out of trace memory): it holds {segments} segments, the counters count {counted} read/write operations; the timing figures come from the segments, the module counter totals are exact",
                m.name
            ));
        }
    }
}

fn read_job(header: &Header, data: &mut dyn Read, log: &mut DarshanLog) -> io::Result<()> {
    let mut buf = Vec::new();
    data.take(JOB_RECORD_LEN).read_to_end(&mut buf)?;
    let o = header.order;
    // Since 3.41 the start and end times carry nanoseconds.
    let fixed = if header.minor >= 41 { 56 } else { 40 };
    let meta_len = 1024;
    if buf.len() < fixed + meta_len {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the job record has {} bytes, fewer than the {} of its fixed part",
                buf.len(),
                fixed + meta_len
            ),
        ));
    }
    let j = &mut log.job;
    j.uid = o.i64(&buf, 0);
    j.start_time_s = o.i64(&buf, 8);
    if header.minor >= 41 {
        j.start_time_ns = o.i64(&buf, 16);
        j.end_time_s = o.i64(&buf, 24);
        j.end_time_ns = o.i64(&buf, 32);
        j.nprocs = o.i64(&buf, 40);
        j.jobid = o.i64(&buf, 48);
        j.runtime_s = (j.end_time_s as f64 + j.end_time_ns as f64 / 1e9)
            - (j.start_time_s as f64 + j.start_time_ns as f64 / 1e9);
    } else {
        j.end_time_s = o.i64(&buf, 16);
        j.nprocs = o.i64(&buf, 24);
        j.jobid = o.i64(&buf, 32);
        j.runtime_s = (j.end_time_s.saturating_sub(j.start_time_s)).saturating_add(1) as f64;
    }
    let text = |b: &[u8]| {
        String::from_utf8_lossy(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]).into_owned()
    };
    j.metadata =
        text(&buf[fixed..fixed + meta_len]).lines().filter(|l| !l.is_empty()).map(String::from).collect();
    let rest = text(&buf[fixed + meta_len..]);
    let mut lines = rest.split('\n');
    j.exe = lines.next().unwrap_or("").to_string();
    for line in lines.filter(|l| !l.is_empty()) {
        // Mount lines are "fs_type<TAB>mount point".
        let (fs_type, path) = line.split_once('\t').unwrap_or(("?", line));
        log.mounts.push(DarshanMount { path: path.to_string(), fs_type: fs_type.to_string() });
    }
    Ok(())
}

fn read_names(
    ctx: &Ctx,
    header: &Header,
    data: &mut dyn Read,
    names: &mut HashMap<u64, String>,
) -> Result<(), ImportError> {
    let err = |m: String| ctx.format_err(&ctx.path, m);
    let decompress = |e: io::Error| err(format!("the name-record region cannot be decompressed: {e}"));
    let mut r = BufReader::new(data.take(MAX_NAME_BYTES + 1));
    let mut id_buf = [0u8; 8];
    let mut name = Vec::new();
    let mut count = 0u64;
    loop {
        match read_record(&mut r, &mut id_buf).map_err(decompress)? {
            Ok(true) => {}
            Ok(false) => break,
            Err(got) => {
                return Err(err(format!("name record {count} is cut short ({got} of its 8 id bytes)")))
            }
        }
        let id = header.order.u64(&id_buf, 0);
        name.clear();
        if header.minor == 0 {
            // 3.00: a u32 length, then the path without terminator.
            let mut len_buf = [0u8; 4];
            if read_record(&mut r, &mut len_buf).map_err(decompress)? != Ok(true) {
                return Err(err(format!("name record {count} (id {id:#x}) is cut short in its length")));
            }
            let len = header.order.u32(&len_buf, 0) as usize;
            if len > MAX_NAME {
                return Err(err(format!(
                    "name record {count} (id {id:#x}) claims a {len}-byte name (more than {MAX_NAME}): corrupt"
                )));
            }
            name.resize(len, 0);
            if read_record(&mut r, &mut name).map_err(decompress)? != Ok(true) {
                return Err(err(format!("name record {count} (id {id:#x}) is cut short in its name")));
            }
        } else {
            (&mut r).take(MAX_NAME as u64 + 1).read_until(0, &mut name).map_err(decompress)?;
            if name.last() != Some(&0) {
                return Err(err(format!(
                    "name record {count} (id {id:#x}) has no terminated name (cut short, or longer than {MAX_NAME} bytes)"
                )));
            }
            name.pop();
        }
        if r.get_ref().limit() == 0 {
            return Err(err(format!("the name records exceed {} MiB: corrupt", MAX_NAME_BYTES >> 20)));
        }
        // A later non-empty name replaces an empty one, as darshan-util does.
        let entry = names.entry(id).or_default();
        if entry.is_empty() {
            *entry = String::from_utf8_lossy(&name).into_owned();
        }
        count += 1;
    }
    Ok(())
}

fn read_counters(
    ctx: &mut Ctx,
    header: &Header,
    layout: &CounterLayout,
    data: &mut dyn Read,
    module: &mut DarshanModule,
) -> Result<(), ImportError> {
    let o = header.order;
    let ints_at = 16 + layout.prefix;
    let len = ints_at + 8 * (layout.ints + layout.floats);
    let mut buf = vec![0u8; len];
    let mut sums = vec![0i64; layout.counters.len()];
    let mut times = [0f64; 3];
    loop {
        let whole = read_record(data, &mut buf).map_err(|e| {
            ctx.format_err(&ctx.path, format!("the {} module cannot be decompressed: {e}", module.name))
        })?;
        match whole {
            Ok(true) => {}
            Ok(false) => break,
            Err(got) => {
                return Err(ctx.format_err(
                    &ctx.path,
                    format!(
                        "the {} module is corrupt: record {} is cut short ({got} of {len} bytes)",
                        module.name, module.records
                    ),
                ))
            }
        }
        for (sum, &(_, index)) in sums.iter_mut().zip(layout.counters) {
            *sum = sum.saturating_add(o.i64(&buf, ints_at + 8 * index));
            if *sum < 0 {
                *sum = -1;
            }
        }
        let floats = ints_at + 8 * layout.ints;
        for (t, index) in times.iter_mut().zip(layout.times) {
            if let Some(index) = index {
                *t += o.f64(&buf, floats + 8 * index);
            }
        }
        module.records += 1;
        if ctx.should_stop() {
            break;
        }
    }
    module.decoded = true;
    module.counters =
        layout.counters.iter().zip(sums).map(|(&(name, _), total)| CounterTotal { name, total }).collect();
    let kept = |i: usize| layout.times[i].map(|_| times[i]);
    [module.read_time_s, module.write_time_s, module.meta_time_s] = [kept(0), kept(1), kept(2)];
    Ok(())
}

fn seconds_to_ns(t: f64) -> u64 {
    if t.is_finite() && t > 0.0 {
        (t * 1e9).round() as u64
    } else {
        0
    }
}

fn read_dxt(
    ctx: &mut Ctx,
    header: &Header,
    id: usize,
    data: &mut dyn Read,
    module: &mut DarshanModule,
    names: &HashMap<u64, String>,
    paths: &mut HashMap<u64, u32>,
) -> Result<(), ImportError> {
    let o = header.order;
    let (layer, newest, with_thread) = if id == DXT_POSIX {
        (Layer::Posix, DXT_POSIX_MAX, module.version >= 2)
    } else {
        (Layer::MpiIo, DXT_MPIIO_MAX, module.version >= 3)
    };
    if module.version == 0 || module.version > newest {
        return Err(ctx.format_err(
            &ctx.path,
            format!(
                "the {} module has format version {}; iolens reads versions 1 to {newest} (corrupt, or a newer Darshan)",
                module.name, module.version
            ),
        ));
    }
    let name = module.name.clone();
    let corrupt =
        |ctx: &Ctx, m: String| ctx.format_err(&ctx.path, format!("the {name} module is corrupt: {m}"));
    let decompress = |ctx: &Ctx, e: io::Error| {
        ctx.format_err(&ctx.path, format!("the {name} module cannot be decompressed: {e}"))
    };
    let mut totals = DxtTotals::default();
    let mut rec = [0u8; DXT_RECORD_LEN];
    let seg_len = if with_thread { 40 } else { 32 };
    let mut seg = [0u8; 40];
    loop {
        let record = module.records;
        match read_record(data, &mut rec).map_err(|e| decompress(ctx, e))? {
            Ok(true) => {}
            Ok(false) => break,
            Err(got) => {
                return Err(corrupt(
                    ctx,
                    format!("record {record} is cut short ({got} of {DXT_RECORD_LEN} bytes)"),
                ))
            }
        }
        let file_id = o.u64(&rec, 0);
        let rank = o.i64(&rec, 8);
        let (writes, reads) = (o.i64(&rec, 88), o.i64(&rec, 96));
        if writes < 0 || reads < 0 {
            return Err(corrupt(
                ctx,
                format!("record {record} (file id {file_id:#x}) has negative segment counts"),
            ));
        }
        let file = match paths.get(&file_id) {
            Some(&f) => f,
            None => {
                let path = names.get(&file_id).cloned().unwrap_or_else(|| format!("<record {file_id:#x}>"));
                let f = ctx.new_path(&path);
                paths.insert(file_id, f);
                f
            }
        };
        let total = (writes as u64).saturating_add(reads as u64);
        for i in 0..total {
            match read_record(data, &mut seg[..seg_len]).map_err(|e| decompress(ctx, e))? {
                Ok(true) => {}
                _ => {
                    return Err(corrupt(
                        ctx,
                        format!(
                            "record {record} (file {}, rank {rank}) is cut short at segment {i} of {total}",
                            names.get(&file_id).map_or("?", String::as_str)
                        ),
                    ))
                }
            }
            let write = i < writes as u64;
            let offset = o.i64(&seg, 0);
            let length = o.i64(&seg, 8).max(0) as u64;
            let start = seconds_to_ns(o.f64(&seg, 16));
            let end = seconds_to_ns(o.f64(&seg, 24)).max(start);
            let tid = if with_thread { o.u64(&seg, 32) as u32 } else { 0 };
            if write {
                totals.write_segments += 1;
                totals.write_bytes = totals.write_bytes.saturating_add(length);
            } else {
                totals.read_segments += 1;
                totals.read_bytes = totals.read_bytes.saturating_add(length);
            }
            ctx.event(&IoEvent {
                // Shared-file records (rank −1) do not occur in DXT; they would show as u32::MAX.
                pid: rank as u32,
                tid,
                file,
                op: if write { IoOp::Write } else { IoOp::Read },
                layer,
                flags: 0,
                // Darshan 3.1 wrote −1 for MPI-IO offsets it did not know.
                offset: u64::try_from(offset).unwrap_or(UNKNOWN_OFFSET),
                requested: length,
                result: i64::try_from(length).unwrap_or(i64::MAX),
                start_ns: start,
                end_ns: end,
            });
            if ctx.should_stop() {
                module.dxt = Some(totals);
                return Ok(());
            }
        }
        module.records += 1;
    }
    module.decoded = true;
    module.dxt = Some(totals);
    Ok(())
}

#[cfg(test)]
mod tests;
