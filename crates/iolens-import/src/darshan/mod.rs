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
//!
//! The parts: `header` reads the header (byte order, regions, module versions), `decompress`
//! turns a region into its bounded decompressed bytes, `records` reads the job and name
//! records, `layout` the counter modules by their versions' layouts, `lustre` the striping
//! records, `dxt` the DXT segments, and `model` is what comes out.

mod decompress;
mod dxt;
mod header;
mod layout;
mod lustre;
mod model;
mod records;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io::{self, BufReader, Read};

use flate2::Decompress;

use crate::{Ctx, ImportError};

pub use lustre::{LustreComponent, LustreFile};
pub use model::{CounterTotal, DarshanJob, DarshanLog, DarshanModule, DarshanMount, DxtTotals};

use decompress::region_reader;
use dxt::read_dxt;
pub(crate) use header::looks_like;
use header::{read_header, Header, Region};
use layout::{decoding, module_name, read_counters, Decoding, DXT_MPIIO, DXT_POSIX};
use records::{read_job, read_names};

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
