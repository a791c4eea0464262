//! The LUSTRE module: how each file the job opened on Lustre is striped over the object storage
//! targets (OSTs).
//!
//! Format version 1 (until darshan 3.4.5) records one layout per file: the file system's OST and
//! MDT counts, the index of the first OST, stripe size and stripe count, then that many OST ids.
//! Version 2 (since 3.4.6) records the components of a progressive file layout: after the record
//! id and rank, the number of components and of OST ids, each component (stripe size, count,
//! pattern, flags, extent start and end, mirror id and a 16-byte pool name), then the OST ids of
//! all components. A runtime that stopped early leaves unused components with stripe size −1;
//! they and what follows are not part of the layout.

use std::collections::HashMap;
use std::io::Read;

use serde::Serialize;

use super::header::Order;
use super::{read_record, DarshanModule, Header};
use crate::{Ctx, ImportError};

/// Lustre refuses layouts of more stripes than 65532 (its "insane" stripe count) and of more
/// components than a 16-bit count holds: larger claims are corruption.
const MAX_STRIPES: i64 = 1 << 16;
const MAX_COMPONENTS: i64 = 1 << 16;
/// Files and OST ids kept for the per-file table; past these, records are still checked and
/// counted. A job touching a million Lustre files is rare; their table would not be read.
const KEPT_FILES: usize = 1 << 20;
const KEPT_OST_IDS: usize = 1 << 22;

const COMPONENT_LEN: usize = 7 * 8 + 16;

/// One component of a file's layout (the whole file before progressive layouts).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LustreComponent {
    pub stripe_size: i64,
    pub stripe_count: i64,
    /// Lustre's layout pattern bits (0 = raid0); −1 where the log predates components.
    pub pattern: i64,
    /// Lustre's component flags (init, stale, …); −1 where the log predates components.
    pub flags: i64,
    /// The byte range of the file this component covers; an end of −1 is the end of the file.
    pub extent_start: i64,
    pub extent_end: i64,
    /// −1 where the log predates components.
    pub mirror_id: i64,
    /// The OST pool, empty when none.
    pub pool: String,
}

/// The striping of one file, as one rank (or all, rank −1) recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LustreFile {
    pub path: String,
    pub rank: i64,
    /// OST objects over all components: the file's stripe count when it has one component.
    pub stripe_count: i64,
    /// The first component's stripe size in bytes.
    pub stripe_size: i64,
    /// The index of the first OST: version 1 records it; since version 2, the first OST id.
    pub stripe_offset: Option<i64>,
    /// The OSTs the file is striped over, component after component.
    pub ost_ids: Vec<i64>,
    pub components: Vec<LustreComponent>,
    /// Version 1 only: how many OSTs and MDTs the file system has.
    pub fs_osts: Option<i64>,
    pub fs_mdts: Option<i64>,
}

impl LustreFile {
    /// A file record before its layout is read.
    fn unstriped(path: String, rank: i64) -> LustreFile {
        LustreFile {
            path,
            rank,
            stripe_count: 0,
            stripe_size: 0,
            stripe_offset: None,
            ost_ids: Vec::new(),
            components: Vec::new(),
            fs_osts: None,
            fs_mdts: None,
        }
    }
}

impl LustreComponent {
    /// A used layout component of a version 2 record: seven i64 fields, then the pool name
    /// (NUL-terminated).
    fn from_record(o: Order, comp: &[u8; COMPONENT_LEN]) -> LustreComponent {
        let v = |i: usize| o.i64(comp, 8 * i);
        let pool = &comp[56..];
        let pool = &pool[..pool.iter().position(|&b| b == 0).unwrap_or(pool.len())];
        LustreComponent {
            stripe_size: v(0),
            stripe_count: v(1),
            pattern: v(2),
            flags: v(3),
            extent_start: v(4),
            extent_end: v(5),
            mirror_id: v(6),
            pool: String::from_utf8_lossy(pool).into_owned(),
        }
    }
}

/// Reads the module's records into `files`, one per record.
pub(super) fn read(
    ctx: &mut Ctx,
    header: &Header,
    data: &mut dyn Read,
    module: &mut DarshanModule,
    names: &HashMap<u64, String>,
    files: &mut Vec<LustreFile>,
) -> Result<(), ImportError> {
    let o = header.order;
    let version = module.version;
    let mut kept_ids = files.iter().map(|f| f.ost_ids.len()).sum::<usize>();
    let mut dropped = 0u64;
    loop {
        let record = module.records;
        let fail = |ctx: &Ctx, what: String| {
            ctx.format_err(&ctx.path, format!("the LUSTRE module is corrupt: record {record} {what}"))
        };
        let read_exact =
            |ctx: &Ctx, data: &mut dyn Read, buf: &mut [u8], what: &str| match read_record(data, buf) {
                Ok(Ok(true)) => Ok(()),
                Ok(_) => Err(fail(ctx, format!("is cut short in its {what}"))),
                Err(e) => {
                    Err(ctx.format_err(&ctx.path, format!("the LUSTRE module cannot be decompressed: {e}")))
                }
            };
        // Version 1: id, rank and five counters; version 2: id, rank, components, OST ids.
        let mut fixed = [0u8; 56];
        let fixed = if version == 1 { &mut fixed[..] } else { &mut fixed[..32] };
        match read_record(data, fixed) {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => break,
            Ok(Err(got)) => {
                return Err(fail(ctx, format!("is cut short ({got} of its {} fixed bytes)", fixed.len())))
            }
            Err(e) => {
                return Err(
                    ctx.format_err(&ctx.path, format!("the LUSTRE module cannot be decompressed: {e}"))
                )
            }
        }
        let id = o.u64(fixed, 0);
        let rank = o.i64(fixed, 8);
        let path = names.get(&id).cloned().unwrap_or_else(|| format!("<record {id:#x}>"));
        let mut file = LustreFile::unstriped(path, rank);
        let keep = files.len() < KEPT_FILES;
        let mut id_buf = [0u8; 8];
        let mut read_ids = |ctx: &Ctx, data: &mut dyn Read, count: i64, kept: i64, out: &mut Vec<i64>| {
            for i in 0..count {
                read_exact(ctx, data, &mut id_buf, &format!("OST id {i} of {count}"))?;
                if i < kept && keep && kept_ids < KEPT_OST_IDS {
                    out.push(o.i64(&id_buf, 0));
                    kept_ids += 1;
                }
            }
            Ok(())
        };
        if version == 1 {
            let [osts, mdts, offset, size, count] = [16, 24, 32, 40, 48].map(|at| o.i64(fixed, at));
            if !(0..=MAX_STRIPES).contains(&count) {
                return Err(fail(ctx, format!("(file {}) claims a stripe count of {count}", file.path)));
            }
            file.fs_osts = Some(osts);
            file.fs_mdts = Some(mdts);
            file.stripe_offset = Some(offset);
            file.stripe_size = size;
            file.stripe_count = count;
            file.components.push(LustreComponent {
                stripe_size: size,
                stripe_count: count,
                pattern: -1,
                flags: -1,
                extent_start: 0,
                extent_end: -1,
                mirror_id: -1,
                pool: String::new(),
            });
            read_ids(ctx, data, count, count, &mut file.ost_ids)?;
        } else {
            let (comps, stripes) = (o.i64(fixed, 16), o.i64(fixed, 24));
            if !(0..=MAX_COMPONENTS).contains(&comps) || !(0..=MAX_STRIPES).contains(&stripes) {
                return Err(fail(
                    ctx,
                    format!("(file {}) claims {comps} layout components and {stripes} stripes", file.path),
                ));
            }
            // darshan-util reads no components and no OST ids of a record without components.
            let stripes = if comps == 0 { 0 } else { stripes };
            let mut comp = [0u8; COMPONENT_LEN];
            let mut used = true;
            let mut counted = 0i64;
            for c in 0..comps {
                read_exact(ctx, data, &mut comp, &format!("layout component {c} of {comps}"))?;
                let v = |i: usize| o.i64(&comp, 8 * i);
                // The runtime marks components it allocated but did not fill with size −1.
                used &= v(0) != -1;
                if !used {
                    continue;
                }
                let count = v(1);
                if count < 0 {
                    return Err(fail(
                        ctx,
                        format!("(file {}) component {c} has stripe count {count}", file.path),
                    ));
                }
                counted = counted.saturating_add(count);
                file.components.push(LustreComponent::from_record(o, &comp));
            }
            if counted > stripes {
                return Err(fail(
                    ctx,
                    format!(
                        "(file {}) has components of {counted} stripes but only {stripes} OST ids",
                        file.path
                    ),
                ));
            }
            read_ids(ctx, data, stripes, counted, &mut file.ost_ids)?;
            file.stripe_count = counted;
            file.stripe_size = file.components.first().map_or(0, |c| c.stripe_size);
            file.stripe_offset = file.ost_ids.first().copied();
        }
        module.records += 1;
        if keep {
            files.push(file);
        } else {
            dropped += 1;
        }
        if ctx.should_stop() {
            break;
        }
    }
    if dropped > 0 {
        ctx.report.notes.push(format!(
            "the LUSTRE module has {} records; the per-file striping table keeps the first {KEPT_FILES}",
            module.records
        ));
    }
    module.decoded = true;
    Ok(())
}
