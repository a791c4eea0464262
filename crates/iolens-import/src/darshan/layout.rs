//! The modules a log may hold, by id, and how each version of a counter module lays out its
//! records: which counters are summed into the totals and where they sit.

use std::io::Read;

use super::{read_record, CounterTotal, DarshanModule, Header};
use crate::{Ctx, ImportError};

/// The module ids of log version 3.41 (earlier logs are renumbered to these).
pub(super) const MODULE_NAMES: [&str; 18] = [
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
pub(super) const POSIX: usize = 1;
pub(super) const MPIIO: usize = 2;
pub(super) const H5F: usize = 3;
pub(super) const H5D: usize = 4;
pub(super) const PNETCDF_FILE: usize = 5;
pub(super) const PNETCDF_VAR: usize = 6;
pub(super) const LUSTRE: usize = 8;
pub(super) const STDIO: usize = 9;
pub(super) const DXT_POSIX: usize = 10;
pub(super) const DXT_MPIIO: usize = 11;

pub(super) fn module_name(id: usize) -> String {
    MODULE_NAMES.get(id).map_or_else(|| format!("module #{id}"), |n| n.to_string())
}

/// How one version of a counter module lays out its record, and where the reported counters sit.
pub(super) struct CounterLayout {
    /// Bytes between the base record (id, rank) and the counters: the parent file's record id
    /// of HDF5 datasets and PnetCDF variables.
    pub(super) prefix: usize,
    pub(super) ints: usize,
    pub(super) floats: usize,
    /// (name, index) of the counters summed into the totals.
    pub(super) counters: &'static [(&'static str, usize)],
    /// Indexes of the read, write and metadata time counters among the floats, where kept.
    pub(super) times: [Option<usize>; 3],
}

/// What iolens makes of a module at a format version.
pub(super) enum Decoding {
    Counters(CounterLayout),
    /// Striping of files on Lustre, per file.
    Lustre,
    /// Listed by name and size only.
    Listed,
    /// A version newer than any darshan-util 3.x writes: the newest known.
    TooNew(u32),
}

pub(super) const POSIX_V1: &[(&str, usize)] = &[
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
pub(super) const POSIX_V2: &[(&str, usize)] = &[
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
pub(super) const POSIX_V4: &[(&str, usize)] = &[
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
pub(super) const MPIIO_ALL: &[(&str, usize)] = &[
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
pub(super) const STDIO_V1: &[(&str, usize)] = &[
    ("STDIO_OPENS", 0),
    ("STDIO_READS", 1),
    ("STDIO_WRITES", 2),
    ("STDIO_SEEKS", 3),
    ("STDIO_FLUSHES", 4),
    ("STDIO_BYTES_WRITTEN", 5),
    ("STDIO_BYTES_READ", 6),
];
/// Version 2 added FDOPENS after OPENS.
pub(super) const STDIO_V2: &[(&str, usize)] = &[
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
pub(super) const H5F_V1: &[(&str, usize)] = &[("H5F_OPENS", 0)];
pub(super) const H5F_V3: &[(&str, usize)] = &[("H5F_OPENS", 0), ("H5F_FLUSHES", 1)];
pub(super) const H5D_ALL: &[(&str, usize)] = &[
    ("H5D_OPENS", 0),
    ("H5D_READS", 1),
    ("H5D_WRITES", 2),
    ("H5D_FLUSHES", 3),
    ("H5D_BYTES_READ", 4),
    ("H5D_BYTES_WRITTEN", 5),
];
pub(super) const PNETCDF_FILE_V3: &[(&str, usize)] = &[
    ("PNETCDF_FILE_CREATES", 0),
    ("PNETCDF_FILE_OPENS", 1),
    ("PNETCDF_FILE_SYNCS", 5),
    ("PNETCDF_FILE_BYTES_READ", 6),
    ("PNETCDF_FILE_BYTES_WRITTEN", 7),
];
pub(super) const PNETCDF_VAR_V1: &[(&str, usize)] = &[
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
pub(super) fn decoding(module: usize, version: u32) -> Decoding {
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

pub(super) fn read_counters(
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
