//! The header of a Darshan log: its version and byte order, where each region lies, the
//! modules' format versions and which modules ran out of memory (partial).

use std::collections::HashMap;
use std::io::Read;

use super::layout::{module_name, H5D, PNETCDF_VAR};
use super::read_full;
use crate::{Ctx, ImportError};

pub(super) const MAGIC: u64 = 6_567_223;
/// Header sizes: 16 module slots before log version 3.41, 64 since.
pub(super) const HEADER_LEN_OLD: usize = 360;
pub(super) const HEADER_LEN_341: usize = 1328;
/// darshan-runtime writes at most this much job data (job struct, exe line, mount lines).
pub(super) const JOB_RECORD_LEN: u64 = 4096;
/// A record name is a path; nothing real comes near this.
pub(super) const MAX_NAME: usize = 64 * 1024;
/// Decompressed bytes of name records held in memory at most.
pub(super) const MAX_NAME_BYTES: u64 = 256 << 20;

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

/// Reads integers of the log's byte order.
#[derive(Clone, Copy)]
pub(super) struct Order {
    pub(super) big: bool,
}

impl Order {
    pub(super) fn u64(self, b: &[u8], at: usize) -> u64 {
        let raw: [u8; 8] = b[at..at + 8].try_into().unwrap();
        if self.big {
            u64::from_be_bytes(raw)
        } else {
            u64::from_le_bytes(raw)
        }
    }
    pub(super) fn i64(self, b: &[u8], at: usize) -> i64 {
        self.u64(b, at) as i64
    }
    pub(super) fn u32(self, b: &[u8], at: usize) -> u32 {
        let raw: [u8; 4] = b[at..at + 4].try_into().unwrap();
        if self.big {
            u32::from_be_bytes(raw)
        } else {
            u32::from_le_bytes(raw)
        }
    }
    pub(super) fn f64(self, b: &[u8], at: usize) -> f64 {
        f64::from_bits(self.u64(b, at))
    }
}

/// A region of the file: the job record, the name records or a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Region {
    Job,
    Names,
    Module(usize),
}

impl Region {
    pub(super) fn name(self) -> String {
        match self {
            Region::Job => "job".into(),
            Region::Names => "name-record".into(),
            Region::Module(id) => format!("{} module", module_name(id)),
        }
    }
}

/// The parsed header.
pub(super) struct Header {
    pub(super) version: String,
    pub(super) minor: u32,
    pub(super) order: Order,
    pub(super) compression: u8,
    /// (region, offset, length) with a non-zero length.
    pub(super) regions: Vec<(Region, u64, u64)>,
    pub(super) module_versions: HashMap<usize, u32>,
    pub(super) partial: u64,
    pub(super) len: u64,
}

/// Maps a module slot of an older header to the 3.41 numbering: H5D was inserted at 3.20 and
/// PNETCDF_VAR at 3.41, each shifting the modules after it by one.
pub(super) fn renumber(slot: usize, minor: u32) -> usize {
    let mut id = slot;
    if minor < 20 && id >= H5D {
        id += 1;
    }
    if minor < 41 && id >= PNETCDF_VAR {
        id += 1;
    }
    id
}

pub(super) fn read_header(ctx: &Ctx, input: &mut impl Read) -> Result<Header, ImportError> {
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
