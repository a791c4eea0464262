//! b_eff_io over MPI-IO (feature `mpi`): the rank loop, schedule and values of
//! `iolens_suites::beff_io`, with MPI processes as ranks and the five pattern types making the
//! calls section 5.1 of the paper defines:
//!
//! - type 0: `MPI_File_write_all`/`read_all` through a noncontiguous file view: L bytes in
//!   memory scattered to l-byte chunks, the ranks' chunks interleaved (an hvector of L/l blocks
//!   of l bytes, stride ranks · l, resized to tile call after call);
//! - type 1: the shared file pointer, collective (`MPI_File_write_ordered`/`read_ordered`);
//! - type 2: one file per rank opened on `MPI_COMM_SELF`, `MPI_File_write`/`read`;
//! - type 3: segments of one file, `MPI_File_write_at`/`read_at`;
//! - type 4: the same, collective: `MPI_File_write_at_all`/`read_at_all`.
//!
//! Files are opened with `MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR` for the first write
//! (nonatomic, the default), never `MPI_MODE_UNIQUE_OPEN`: it would let the library delay every
//! `MPI_File_sync` until the close (section 5.4). Every write loop ends with `MPI_File_sync`
//! inside its timed region. A partition runs on a communicator of its first ranks
//! (`MPI_Comm_split`); the others wait at a barrier. Every decision of the loop is an
//! all-gather over the partition, so all ranks make the same calls.
//!
//! An MPI-IO call that fails would leave the other ranks waiting in a collective call forever:
//! a failure therefore ends the job through the caller's `fatal` (which names the rank and host
//! and calls `MPI_Abort`), after rank 0 removed the partition's directory.

use std::cell::RefCell;
use std::convert::Infallible;
use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use mpi::collective::SystemOperation;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;

use iolens_ownership::ScratchDir;
use iolens_suites::beff_io::{
    assemble_partition, system_result, table2, BeffIoConfig, BeffIoResult, BeffIoStep, Method, MpiIoInfo,
    Partition, PatternFile, PatternIo, PatternStep, Placement, Ranks,
};

use crate::world::World;

const TAG_HOST: i32 = 201;
const TAG_LOG: i32 = 202;

/// What ends the job on an error: names the rank and host, calls `MPI_Abort`. It never returns
/// (`Infallible`, as `!` is not a type in stable Rust).
pub type Fatal<'a> = &'a dyn Fn(&str) -> Infallible;

/// Ends the job through `fatal`.
pub fn die(fatal: Fatal, message: &str) -> ! {
    match fatal(message) {}
}

/// This rank's way out: removes what rank 0 made, then [`die`]s.
type Fail<'a> = &'a dyn Fn(String) -> Infallible;

fn abort(fail: Fail, message: String) -> ! {
    match fail(message) {}
}

/// The ranks of one partition: its communicator.
pub struct CommRanks {
    comm: SimpleCommunicator,
}

impl Ranks for CommRanks {
    fn rank(&self) -> usize {
        self.comm.rank() as usize
    }
    fn size(&self) -> usize {
        self.comm.size() as usize
    }
    fn barrier(&self) {
        self.comm.barrier();
    }
    fn all_gather(&self, value: u64) -> Vec<u64> {
        let mut all = vec![0u64; self.size()];
        self.comm.all_gather_into(&value, &mut all[..]);
        all
    }
    /// The collective MPI-IO call itself kept the ranks in step.
    fn collective_call_done(&self) {}
}

/// `--hint key=value` pairs as an `MPI_Info`, freed on drop.
struct Hints {
    info: ffi::MPI_Info,
}

impl Hints {
    fn new(pairs: &[(String, String)]) -> Result<Hints, String> {
        let mut info = unsafe { ffi::RSMPI_INFO_NULL };
        if pairs.is_empty() {
            return Ok(Hints { info });
        }
        // SAFETY: MPI is initialized; the strings are NUL-terminated and outlive the calls.
        unsafe {
            check(ffi::MPI_Info_create(&mut info), "MPI_Info_create")?;
            for (k, v) in pairs {
                let (ck, cv) = (cstring(k)?, cstring(v)?);
                check(ffi::MPI_Info_set(info, ck.as_ptr(), cv.as_ptr()), &format!("MPI_Info_set {k}={v}"))?;
            }
        }
        Ok(Hints { info })
    }
}

impl Drop for Hints {
    fn drop(&mut self) {
        // SAFETY: an info this struct created, freed once.
        unsafe {
            if self.info != ffi::RSMPI_INFO_NULL {
                ffi::MPI_Info_free(&mut self.info);
            }
        }
    }
}

fn cstring(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s:?} contains a NUL byte"))
}

/// The text of an MPI error code.
fn error_text(code: i32) -> String {
    let mut buf = vec![0u8; 512];
    let mut len = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING (256 in Open MPI and MPICH) bytes and more.
    unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr() as *mut _, &mut len) };
    buf.truncate(len.clamp(0, 512) as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

fn check(code: i32, what: &str) -> Result<(), String> {
    if code == 0 {
        Ok(())
    } else {
        Err(format!("{what}: {}", error_text(code)))
    }
}

fn byte() -> ffi::MPI_Datatype {
    u8::equivalent_datatype().as_raw()
}

/// A byte count as the `int` MPI's calls take.
fn count(bytes: u64, what: &str) -> Result<i32, String> {
    i32::try_from(bytes).map_err(|_| {
        format!("{what} of {bytes} bytes exceeds MPI's int count (2 GiB - 1): give a smaller --mpart")
    })
}

/// Pattern-type files over MPI-IO in the partition's directory.
struct MpiIo<'a> {
    comm: &'a SimpleCommunicator,
    dir: &'a Path,
    rank: usize,
    hints: &'a Hints,
    fail: Fail<'a>,
}

struct MpiFile<'a> {
    fh: ffi::MPI_File,
    path: PathBuf,
    place: Option<Placement>,
    fail: Fail<'a>,
}

impl PatternIo for MpiIo<'_> {
    fn open(&mut self, pattern_type: u8, method: Method) -> std::io::Result<Box<dyn PatternFile + '_>> {
        let (name, comm) = if pattern_type == 2 {
            (format!("iolens-type2-rank{}.dat", self.rank), unsafe { ffi::RSMPI_COMM_SELF })
        } else {
            (format!("iolens-type{pattern_type}.dat"), self.comm.as_raw())
        };
        let path = self.dir.join(name);
        let amode = match method {
            // EXCL: the write creates the file, it never takes over one that exists.
            Method::Write => ffi::MPI_MODE_CREATE | ffi::MPI_MODE_EXCL | ffi::MPI_MODE_RDWR,
            Method::Rewrite => ffi::MPI_MODE_RDWR,
            Method::Read => ffi::MPI_MODE_RDONLY,
        } as i32;
        let c = cstring(&path.to_string_lossy()).unwrap_or_else(|e| abort(self.fail, e));
        let mut fh = unsafe { ffi::RSMPI_FILE_NULL };
        // SAFETY: a valid communicator, a NUL-terminated path, an info or MPI_INFO_NULL.
        let code = unsafe { ffi::MPI_File_open(comm, c.as_ptr(), amode, self.hints.info, &mut fh) };
        if let Err(e) = check(code, &format!("MPI_File_open {}", path.display())) {
            abort(self.fail, e);
        }
        Ok(Box::new(MpiFile { fh, path, place: None, fail: self.fail }))
    }

    fn call_name(&self, pattern_type: u8, method: Method) -> String {
        call_name(pattern_type, method)
    }
}

/// The MPI-IO call of a pattern type, as the protocol lists it.
pub fn call_name(pattern_type: u8, method: Method) -> String {
    let rw = if method == Method::Read { "read" } else { "write" };
    match pattern_type {
        0 => format!("MPI_File_{rw}_all (view: hvector)"),
        1 => format!("MPI_File_{rw}_ordered"),
        2 => format!("MPI_File_{rw} (own file, MPI_COMM_SELF)"),
        3 => format!("MPI_File_{rw}_at"),
        _ => format!("MPI_File_{rw}_at_all"),
    }
}

impl MpiFile<'_> {
    fn or_fail(&self, code: i32, what: &str) {
        if let Err(e) = check(code, &format!("{what} on {}", self.path.display())) {
            abort(self.fail, e);
        }
    }

    /// Type 0's view: this rank's l-byte chunks of every call, interleaved with the other ranks'.
    fn set_strided_view(&self, place: &Placement) -> Result<(), String> {
        let chunk = count(place.chunk, "a chunk")?;
        let pieces = count(place.pieces(), "chunks per call")?;
        let stride = (place.ranks * place.chunk) as ffi::MPI_Aint;
        let extent = (place.ranks * place.memory) as ffi::MPI_Aint;
        let disp = (place.base + place.rank * place.chunk) as ffi::MPI_Offset;
        let native = cstring("native")?;
        // SAFETY: datatypes built here, committed before use and freed after the view holds them
        // (MPI keeps what a view still uses).
        unsafe {
            let mut vector = ffi::RSMPI_DATATYPE_NULL;
            let mut tiled = ffi::RSMPI_DATATYPE_NULL;
            check(
                ffi::MPI_Type_create_hvector(pieces, chunk, stride, byte(), &mut vector),
                "MPI_Type_create_hvector",
            )?;
            check(ffi::MPI_Type_create_resized(vector, 0, extent, &mut tiled), "MPI_Type_create_resized")?;
            check(ffi::MPI_Type_commit(&mut tiled), "MPI_Type_commit")?;
            let set =
                ffi::MPI_File_set_view(self.fh, disp, byte(), tiled, native.as_ptr(), ffi::RSMPI_INFO_NULL);
            ffi::MPI_Type_free(&mut tiled);
            ffi::MPI_Type_free(&mut vector);
            check(set, "MPI_File_set_view")
        }
    }
}

impl PatternFile for MpiFile<'_> {
    fn begin(&mut self, place: &Placement) -> std::io::Result<()> {
        self.place = Some(*place);
        let seek = ffi::MPI_SEEK_SET as i32;
        // SAFETY: an open file handle; offsets within MPI_Offset (checked sizes below 2^63).
        unsafe {
            match place.pattern_type {
                0 => {
                    if let Err(e) = self.set_strided_view(place) {
                        abort(self.fail, format!("{e} on {}", self.path.display()));
                    }
                }
                1 => self.or_fail(
                    ffi::MPI_File_seek_shared(self.fh, place.base as _, seek),
                    "MPI_File_seek_shared",
                ),
                2 => self.or_fail(ffi::MPI_File_seek(self.fh, place.base as _, seek), "MPI_File_seek"),
                _ => {}
            }
        }
        Ok(())
    }

    fn transfer(&mut self, method: Method, call: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let Some(place) = self.place else { abort(self.fail, "an MPI-IO call before its pattern".into()) };
        let n = count(buf.len() as u64, "a call").unwrap_or_else(|e| abort(self.fail, e));
        let offset = place.offset(call, 0) as ffi::MPI_Offset;
        let (w, r) = (buf.as_ptr() as *const c_void, buf.as_mut_ptr() as *mut c_void);
        let fh = self.fh;
        // SAFETY: `buf` holds n bytes; blocking calls on an open handle; status is written by MPI.
        let (code, status) = unsafe {
            let mut status: ffi::MPI_Status = std::mem::zeroed();
            let code = match (place.pattern_type, method == Method::Read) {
                (0, false) => ffi::MPI_File_write_all(fh, w, n, byte(), &mut status),
                (0, true) => ffi::MPI_File_read_all(fh, r, n, byte(), &mut status),
                (1, false) => ffi::MPI_File_write_ordered(fh, w, n, byte(), &mut status),
                (1, true) => ffi::MPI_File_read_ordered(fh, r, n, byte(), &mut status),
                (2, false) => ffi::MPI_File_write(fh, w, n, byte(), &mut status),
                (2, true) => ffi::MPI_File_read(fh, r, n, byte(), &mut status),
                (3, false) => ffi::MPI_File_write_at(fh, offset, w, n, byte(), &mut status),
                (3, true) => ffi::MPI_File_read_at(fh, offset, r, n, byte(), &mut status),
                (_, false) => ffi::MPI_File_write_at_all(fh, offset, w, n, byte(), &mut status),
                (_, true) => ffi::MPI_File_read_at_all(fh, offset, r, n, byte(), &mut status),
            };
            (code, status)
        };
        let what = call_name(place.pattern_type, method);
        self.or_fail(code, &what);
        let mut moved = 0;
        // SAFETY: the status of the call that just completed.
        unsafe { ffi::MPI_Get_count(&status, byte(), &mut moved) };
        if moved != n {
            abort(
                self.fail,
                format!(
                    "{what} on {} moved {moved} of {n} bytes (call {call} of pattern type {})",
                    self.path.display(),
                    place.pattern_type
                ),
            );
        }
        Ok(())
    }

    fn sync(&mut self) -> std::io::Result<()> {
        // SAFETY: an open handle.
        let code = unsafe { ffi::MPI_File_sync(self.fh) };
        self.or_fail(code, "MPI_File_sync");
        Ok(())
    }
}

impl Drop for MpiFile<'_> {
    fn drop(&mut self) {
        // SAFETY: the handle MPI_File_open gave, closed once (collective, as every rank drops it
        // at the same point of the loop).
        let code = unsafe { ffi::MPI_File_close(&mut self.fh) };
        self.or_fail(code, "MPI_File_close");
    }
}

/// Whether any rank of `world` was interrupted: all ranks agree.
fn any_rank(world: &World, mine: bool) -> bool {
    let mut any = 0u32;
    world.comm().all_reduce_into(&(mine as u32), &mut any, SystemOperation::max());
    any != 0
}

/// Rank 0 of the partition makes its directory (as the thread version: a scratch directory of
/// its own, registered, removed at the end) and tells the others where it is.
fn partition_dir(
    comm: &SimpleCommunicator,
    cfg: &BeffIoConfig,
    fatal: Fatal,
) -> (Option<ScratchDir>, PathBuf) {
    let size = comm.size();
    let root = comm.process_at_rank(0);
    let (scratch, mut bytes) = if comm.rank() == 0 {
        let s =
            ScratchDir::create(&cfg.dir, &format!("iolens-beffio-mpi-{size}-"), false).unwrap_or_else(|e| {
                die(fatal, &format!("cannot create a scratch directory in {}: {e}", cfg.dir.display()))
            });
        let bytes = s.path().as_os_str().as_encoded_bytes().to_vec();
        (Some(s), bytes)
    } else {
        (None, Vec::new())
    };
    let mut len = bytes.len() as u64;
    root.broadcast_into(&mut len);
    bytes.resize(len as usize, 0);
    root.broadcast_into(&mut bytes[..]);
    let dir = PathBuf::from(String::from_utf8_lossy(&bytes).into_owned());
    if !dir.is_dir() {
        die(
            fatal,
            &format!(
                "{} (made by rank 0) is not visible here: b_eff_io needs a directory all ranks share",
                dir.display()
            ),
        );
    }
    (scratch, dir)
}

/// One partition on `comm`; rank 0 gets its record.
fn run_partition(
    comm: SimpleCommunicator,
    cfg: &BeffIoConfig,
    hints: &Hints,
    stop: &AtomicBool,
    fatal: Fatal,
    on_pattern: &(dyn Fn(&PatternStep) + Sync),
) -> Option<Partition> {
    let (scratch, dir) = partition_dir(&comm, cfg, fatal);
    let scratch = RefCell::new(scratch);
    // Remove what this run made before ending the job: rank 0 holds the directory.
    let fail = |message: String| -> Infallible {
        drop(scratch.borrow_mut().take());
        die(fatal, &message)
    };
    let rank = comm.rank() as usize;
    let ranks = CommRanks { comm };
    let table = table2(cfg.mpart);
    let mut io = MpiIo { comm: &ranks.comm, dir: &dir, rank, hints, fail: &fail };
    ranks.barrier();
    let started = Instant::now();
    let log = iolens_suites::beff_io::run_rank(&ranks, &mut io, &table, cfg, stop, started, on_pattern)
        .unwrap_or_else(|e| abort(&fail, e.to_string()));
    ranks.barrier();
    let elapsed_s = started.elapsed().as_secs_f64();
    if rank != 0 {
        ranks.comm.process_at_rank(0).send_with_tag(&log.numbers()[..], TAG_LOG);
        return None;
    }
    let mut logs = Vec::with_capacity(ranks.size());
    for r in 1..ranks.size() {
        let (numbers, _) = ranks.comm.process_at_rank(r as i32).receive_vec_with_tag::<u64>(TAG_LOG);
        logs.push(log.with_numbers(&numbers).unwrap_or_else(|e| abort(&fail, format!("rank {r}: {e}"))));
    }
    logs.insert(0, log);
    drop(scratch);
    Some(assemble_partition(cfg, &table, &logs, elapsed_s, &call_name))
}

/// Every rank's host, on rank 0 (distinct, in rank order).
fn hosts(world: &World) -> Vec<String> {
    if world.rank() != 0 {
        world.comm().process_at_rank(0).send_with_tag(world.host().as_bytes(), TAG_HOST);
        return Vec::new();
    }
    let mut out = vec![world.host().to_string()];
    for r in 1..world.size() {
        let (bytes, _) = world.comm().process_at_rank(r as i32).receive_vec_with_tag::<u8>(TAG_HOST);
        let host = String::from_utf8_lossy(&bytes).into_owned();
        if !out.contains(&host) {
            out.push(host);
        }
    }
    out
}

/// Runs every partition of `cfg.ranks` (each at most the world's size) over MPI-IO with
/// `hints`. Collective: every rank calls it; rank 0 gets the result.
pub fn run(
    world: &World,
    cfg: &BeffIoConfig,
    hints: &[(String, String)],
    stop: &AtomicBool,
    fatal: Fatal,
    on_step: &(dyn Fn(&BeffIoStep) + Sync),
) -> Option<BeffIoResult> {
    let info = Hints::new(hints).unwrap_or_else(|e| die(fatal, &e));
    let hosts = hosts(world);
    let mut partitions = Vec::new();
    let mut interrupted = false;
    for (partition, &n) in cfg.ranks.iter().enumerate() {
        if any_rank(world, stop.load(Ordering::SeqCst)) {
            interrupted = true;
            break;
        }
        let color = if world.rank() < n { Color::with_value(0) } else { Color::undefined() };
        if let Some(comm) = world.comm().split_by_color(color) {
            let partitions_n = cfg.ranks.len();
            let on_pattern = |pattern: &PatternStep| {
                on_step(&BeffIoStep { partition, partitions: partitions_n, ranks: n, pattern: *pattern })
            };
            partitions.extend(run_partition(comm, cfg, &info, stop, fatal, &on_pattern));
        }
        // The ranks outside the partition wait here.
        world.comm().barrier();
    }
    interrupted |= any_rank(world, stop.load(Ordering::SeqCst));
    if world.rank() != 0 {
        return None;
    }
    let mpi = MpiIoInfo { library: world.library(), hints: hints.to_vec(), hosts };
    Some(system_result(cfg, partitions, interrupted, "MPI processes", Some(mpi)))
}
