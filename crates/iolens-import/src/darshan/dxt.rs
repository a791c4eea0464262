//! DXT_POSIX and DXT_MPIIO: every traced segment becomes an [`IoEvent`] of its layer, with the
//! file named through the name records and the times at the binary's full precision.

use std::collections::HashMap;
use std::io::{self, Read};

use iolens_record::event::{IoEvent, IoOp, Layer, UNKNOWN_OFFSET};

use super::layout::DXT_POSIX;
use super::{read_record, DarshanModule, DxtTotals, Header};
use crate::{Ctx, ImportError};

/// Newest DXT format versions; POSIX v2 and MPI-IO v3 added a thread id to each segment.
pub(super) const DXT_POSIX_MAX: u32 = 2;
pub(super) const DXT_MPIIO_MAX: u32 = 3;
pub(super) const DXT_RECORD_LEN: usize = 104;

pub(super) fn seconds_to_ns(t: f64) -> u64 {
    if t.is_finite() && t > 0.0 {
        (t * 1e9).round() as u64
    } else {
        0
    }
}

pub(super) fn read_dxt(
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
