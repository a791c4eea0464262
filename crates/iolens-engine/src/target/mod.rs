//! Targets: resolving what each agent addresses, refusing what must not be written, laying out
//! files with real data, and removing what this run created.
//!
//! The rules that keep data safe:
//! - every target is opened once, here, without blocking (`O_NONBLOCK`: a FIFO cannot hang the
//!   run) and — under iolens's own names in a directory — without following a final symbolic
//!   link (`O_NOFOLLOW`); new files are created with `O_CREAT|O_EXCL`. Every decision is taken
//!   on that descriptor (`fstat`), and agents reopen the same object through
//!   `/proc/self/fd/N`, so swapping the path between check and use changes nothing;
//! - only regular files and block devices are used: FIFOs, sockets, character devices and
//!   directories are refused;
//! - iolens writes only into files it created in this run, or files the ownership registry
//!   ([`iolens_ownership`]) says it created and nobody changed since; any other existing file,
//!   and any block device, is written only with `allow_overwrite`;
//! - a block device that is mounted, used as swap, held by another device, or a loop device
//!   sharing its backing file with another loop device, is never written, flag or not; while it
//!   is written, an `O_EXCL` descriptor of it is held, so the kernel refuses to mount it meanwhile.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use iolens_metrics::{TargetReport, Warning, WarningCode};
use iolens_workload::{format_bytes, AgentSpec, Job, DEFAULT_REGION_SIZE};

use crate::placement::{Layout, OffsetMap, Placement};
use crate::EngineError;
use iolens_ownership::Identity;

mod layout;
mod ranks;

pub use layout::data_bytes;
use layout::{check_free_space, drop_cached_pages, materialize, sparse_warning};
pub use ranks::{attach_shared, shared_identity};
use ranks::{check_shared_job, resolve_placed_path};

const LAYOUT_CHUNK: usize = 1 << 20;

/// What kind of object a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    File,
    BlockDevice,
}

/// A resolved target shared by one or more agents.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Bytes agents address: `[0, region)`.
    pub region: u64,
    /// Created by this run (removed at the end unless kept).
    pub created: bool,
    /// Created by iolens, in this run or (per the registry, unchanged since) an earlier one.
    pub owned: bool,
    /// Created by this run, or by an earlier run of this same process (a suite's earlier point,
    /// an earlier repetition) and still owned: laid out and sized as a new file. Any other file
    /// existed before: it is read as it is — never laid out, extended or (unless asked) dropped
    /// from the cache.
    pub fresh: bool,
    pub written: bool,
    /// The object itself, opened once; `None` only for null-engine jobs on missing paths.
    handle: Option<File>,
    /// Bytes from offset 0 holding laid-out data.
    laid_out: u64,
    /// Bytes this run laid out.
    laid_out_now: u64,
    /// Its cached pages were dropped before the run.
    cache_dropped: bool,
}

impl Target {
    fn fd_path(&self) -> Option<PathBuf> {
        self.handle.as_ref().map(|f| PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd())))
    }
}

/// The targets of a job and which agent uses which.
#[derive(Debug, Default)]
pub struct Targets {
    pub targets: Vec<Target>,
    /// `agent_target[i]` indexes `targets` for agent `i`.
    pub agent_target: Vec<usize>,
    /// Bytes of incompressible data written to lay out files before the run.
    pub laid_out_bytes: u64,
    /// What preparation found that the figures depend on (clamped sizes, sparse files).
    pub warnings: Vec<Warning>,
    /// Set when processes share one file: each agent addresses its share of it.
    pub shared: Option<Placement>,
}

impl Targets {
    pub fn for_agent(&self, agent: usize) -> &Target {
        &self.targets[self.agent_target[agent]]
    }

    /// Bytes agent `agent` (of `agents`) addresses: its target's region, or in a shared file its
    /// share of it (a multiple of `align`).
    pub fn agent_region(&self, agent: usize, agents: usize, align: u64) -> u64 {
        let region = self.for_agent(agent).region;
        match &self.shared {
            Some(p) => region / p.participants(agents) / align.max(1) * align.max(1),
            None => region,
        }
    }

    /// Where agent `agent` (of `agents`, with requests of `block` bytes; `reads_only`: it only
    /// reads, so `reorder` applies) puts its offsets.
    pub fn offset_map(&self, agent: usize, agents: usize, block: u64, reads_only: bool) -> OffsetMap {
        match &self.shared {
            None => OffsetMap::IDENTITY,
            Some(p) => {
                let index = p.participant(agent, agents, reads_only);
                match p.layout {
                    Layout::Segmented => OffsetMap::segmented(index, self.agent_region(agent, agents, 1)),
                    Layout::Strided => OffsetMap::strided(index, p.participants(agents), block),
                }
            }
        }
    }

    /// Removes the files this run created — each only if its path still names the very file
    /// created — and drops them from the registry; returns the ones that could not be removed.
    pub fn remove_created(&self) -> Vec<(PathBuf, io::Error)> {
        let mut failed = Vec::new();
        for t in self.targets.iter().filter(|t| t.created) {
            let Some(id) = t.handle.as_ref().and_then(|f| Identity::of(f).ok()) else { continue };
            // Gone, or replaced by something else: not ours to remove.
            if let Err(e) = iolens_ownership::remove_created_file(&t.path, &id) {
                failed.push((t.path.clone(), e));
            }
        }
        failed
    }

    /// Records the files this run leaves in place (kept, or owned from an earlier run) with
    /// their identity now, so a later run recognizes them — and nothing changed by others.
    /// `created_removed`: the files this run created were removed, so only earlier ones stay.
    /// `scratch`: files this process created stay in its lease (see `RunOptions::scratch`);
    /// otherwise they move to the kept list, for the user.
    pub fn record_kept(&self, created_removed: bool, scratch: bool) -> io::Result<()> {
        let stays = |t: &&Target| t.owned && t.kind == TargetKind::File && !(created_removed && t.created);
        for t in self.targets.iter().filter(stays) {
            let Some(f) = &t.handle else { continue };
            let this_process = t.created || iolens_ownership::owned(f).is_some_and(|o| o.this_process);
            if scratch && this_process {
                iolens_ownership::claim_file(f, &t.path, t.region, t.laid_out);
            } else {
                iolens_ownership::keep_file(f, &t.path, t.laid_out)?;
            }
        }
        Ok(())
    }

    /// What preparation did to each target, for the result.
    pub fn reports(&self) -> Vec<TargetReport> {
        self.targets
            .iter()
            .map(|t| TargetReport {
                path: t.path.display().to_string(),
                created: t.created,
                laid_out_bytes: t.laid_out_now,
                cache_dropped: t.cache_dropped,
            })
            .collect()
    }

    pub fn created_paths(&self) -> Vec<PathBuf> {
        self.targets.iter().filter(|t| t.created).map(|t| t.path.clone()).collect()
    }
}

/// Options that change what preparation may do.
#[derive(Debug, Clone, Copy, Default)]
pub struct TargetPolicy {
    pub allow_overwrite: bool,
    /// Leave the cached pages of the files laid out here in memory. By default they are dropped
    /// after layout (as fio's `invalidate=1`), so reads start from the device.
    pub keep_cache: bool,
    /// Drop the cached pages of targets that existed before the run (fdatasync, then
    /// `POSIX_FADV_DONTNEED`: advice only). By default those are used as they are, cache and all.
    pub drop_cache: bool,
    /// Write-only files iolens creates are not preallocated: their blocks are allocated as the
    /// cache writes them back, as for a program writing a new file (IOR, a checkpoint). By
    /// default they are (posix_fallocate), so writes overwrite allocated space.
    pub sparse: bool,
}

fn io_err(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> EngineError {
    let path = path.to_path_buf();
    move |source| EngineError::Io { path, action, source }
}

fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}

/// The file an agent uses when its target is a directory.
pub fn agent_file_in_dir(dir: &Path, job: &str, agent: &str) -> PathBuf {
    dir.join(format!("iolens-{}-{}.dat", sanitize(job), sanitize(agent)))
}

/// The file an agent of MPI rank `rank` uses when its target is a directory (file per process).
pub fn rank_file_in_dir(dir: &Path, job: &str, agent: &str, rank: usize) -> PathBuf {
    dir.join(format!("iolens-{}-{}-r{rank}.dat", sanitize(job), sanitize(agent)))
}

/// The one file every rank's agents share when their target is a directory.
pub fn shared_file_in_dir(dir: &Path, job: &str) -> PathBuf {
    dir.join(format!("iolens-{}-shared.dat", sanitize(job)))
}

/// Whether `path` is a regular file the registry says iolens created and nobody changed since.
pub fn is_own_file(path: &Path) -> bool {
    let Ok(f) = iolens_ownership::open_nofollow(path, false) else { return false };
    iolens_ownership::owned(&f).is_some()
}

struct Use {
    reads: bool,
    writes: bool,
    direct: bool,
    /// Some agent checks what it reads (`verify`): the data must stay as found — no layout —
    /// and a given size is the size the file should have.
    verify_reads: bool,
    region: Option<u64>,
    /// A name iolens chose inside a directory the user gave: never follow a link there.
    own_name: bool,
}

/// Resolves every agent's target, checks safety, and lays out data. Stops early (removing what
/// it created) when `stop` is set.
pub fn prepare_targets(job: &Job, policy: TargetPolicy, stop: &AtomicBool) -> Result<Targets, EngineError> {
    prepare_targets_placed(job, policy, stop, None)
}

/// [`prepare_targets`] for one of several processes. File per process: names in a directory
/// carry the rank, and a file or device target is refused (every rank would write the same
/// bytes). Shared file (called on rank 0 only; the others [`attach_shared`]): one file for all
/// agents of all ranks, sized for all of them.
pub fn prepare_targets_placed(
    job: &Job,
    policy: TargetPolicy,
    stop: &AtomicBool,
    placement: Option<&Placement>,
) -> Result<Targets, EngineError> {
    if let Some(p) = placement.filter(|p| p.shared_file) {
        check_shared_job(job, p)?;
    }
    let mut by_path: BTreeMap<PathBuf, Use> = BTreeMap::new();
    let mut agent_path = Vec::with_capacity(job.agents.len());
    for agent in &job.agents {
        let (path, own_name) = resolve_placed_path(job, agent, placement)?;
        let usage = by_path.entry(path.clone()).or_insert(Use {
            reads: false,
            writes: false,
            direct: false,
            verify_reads: false,
            region: None,
            own_name,
        });
        let real = agent.engine != iolens_workload::EngineKind::Null;
        usage.reads |= agent.op.reads() && real;
        usage.writes |= agent.op.writes() && real;
        usage.direct |= agent.direct;
        usage.verify_reads |= agent.op.reads() && agent.verify.is_some() && real;
        if let Some(r) = agent.region_size {
            usage.region = Some(usage.region.map_or(r, |x| x.max(r)));
        }
        agent_path.push(path);
    }
    let shared = placement.filter(|p| p.shared_file).copied();
    if let Some(p) = &shared {
        // The one file holds every participant's share.
        for usage in by_path.values_mut() {
            let per = usage.region.unwrap_or(DEFAULT_REGION_SIZE);
            usage.region = Some(per.saturating_mul(p.participants(job.agents.len())));
        }
    }
    let null_only = job.agents.iter().all(|a| a.engine == iolens_workload::EngineKind::Null);

    let mut targets = Targets { shared, ..Targets::default() };
    let mut index = BTreeMap::new();
    for (i, (path, usage)) in by_path.iter().enumerate() {
        index.insert(path.clone(), i);
        match open_target(path, usage, policy, null_only) {
            Ok(t) => targets.targets.push(t),
            Err(e) => {
                targets.remove_created();
                return Err(e);
            }
        }
    }
    targets.agent_target = agent_path.iter().map(|p| index[p]).collect();
    for (t, usage) in targets.targets.iter().zip(by_path.values()) {
        if let Some(asked) = usage.region.filter(|&r| r > t.region) {
            targets.warnings.push(Warning::new(
                WarningCode::SizeClamped,
                format!(
                    "--size {} ({asked} bytes) is more than {} holds ({} = {} bytes); {}, so the run \
                     addresses only the {}",
                    format_bytes(asked),
                    t.path.display(),
                    format_bytes(t.region),
                    t.region,
                    if t.kind == TargetKind::BlockDevice {
                        "a device does not grow"
                    } else if t.owned {
                        "iolens reads a file that existed before the run as it is, never extending it"
                    } else {
                        "iolens never extends a file it did not create"
                    },
                    format_bytes(t.region)
                ),
            ));
        }
    }
    if let Err(e) = check_free_space(&targets) {
        targets.remove_created();
        return Err(e);
    }

    if null_only {
        return Ok(targets);
    }
    let mut sparse = Vec::new();
    for (t, usage) in targets.targets.iter_mut().zip(by_path.values()) {
        let step = materialize(t, usage, policy.sparse, stop).and_then(|bytes| {
            if t.kind == TargetKind::File && usage.direct {
                check_direct(t)?;
            }
            // New files start cold (their layout is not what is measured); files found are used
            // as they are, cache included, unless the user asks.
            if (t.fresh && !policy.keep_cache) || (!t.fresh && policy.drop_cache) {
                drop_cached_pages(t);
                t.cache_dropped = true;
            }
            Ok(bytes)
        });
        if t.kind == TargetKind::File && usage.reads && t.laid_out < t.region {
            sparse.extend(sparse_warning(t));
        }
        match step {
            Ok(bytes) => {
                t.laid_out_now = bytes;
                targets.laid_out_bytes += bytes;
            }
            Err(e) => {
                targets.remove_created();
                return Err(e);
            }
        }
    }
    targets.warnings.extend(sparse);
    Ok(targets)
}

/// The path an agent addresses, and whether iolens chose its last component.
fn resolve_path(job: &Job, agent: &AgentSpec) -> Result<(PathBuf, bool), EngineError> {
    match std::fs::metadata(&agent.target) {
        Ok(m) if m.is_dir() => Ok((agent_file_in_dir(&agent.target, &job.name, &agent.name), true)),
        Ok(_) => Ok((agent.target.clone(), false)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent =
                agent.target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if parent.is_dir() {
                Ok((agent.target.clone(), false))
            } else {
                Err(EngineError::BadTarget {
                    path: agent.target.clone(),
                    reason: format!("does not exist, and neither does its directory {}", parent.display()),
                })
            }
        }
        Err(e) => Err(io_err(&agent.target, "inspect")(e)),
    }
}

/// Opens (or creates) one target and decides, on the descriptor, what the run may do with it.
fn open_target(
    path: &Path,
    usage: &Use,
    policy: TargetPolicy,
    null_only: bool,
) -> Result<Target, EngineError> {
    let writes = usage.writes && !null_only;
    // A device is refused before it is even opened (some devices refuse being opened at all by
    // an unprivileged sandbox); the descriptor is then checked to be that same device.
    let device_checked = match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_block_device() && !usage.own_name => {
            if writes {
                check_block_device_write(path, m.rdev(), policy)?;
            }
            Some(m.rdev())
        }
        _ => None,
    };
    let nofollow = if usage.own_name { libc::O_NOFOLLOW } else { 0 };
    let inspect = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY | nofollow)
        .open(path);
    let file = match inspect {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return if null_only {
                Ok(Target {
                    path: path.to_path_buf(),
                    kind: TargetKind::File,
                    region: usage.region.unwrap_or(DEFAULT_REGION_SIZE),
                    created: false,
                    owned: false,
                    written: false,
                    handle: None,
                    laid_out: 0,
                    fresh: false,
                    laid_out_now: 0,
                    cache_dropped: false,
                })
            } else {
                create_target(path, usage)
            };
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(EngineError::Refused {
                path: path.to_path_buf(),
                reason: "is a symbolic link iolens did not create; iolens never follows links under its own file names"
                    .into(),
                hint: "remove the link, or give its target as --target".into(),
            });
        }
        Err(e) => return Err(io_err(path, "open")(e)),
    };
    let meta = file.metadata().map_err(io_err(path, "inspect"))?;
    let ft = meta.file_type();
    if device_checked.is_some_and(|rdev| !ft.is_block_device() || meta.rdev() != rdev) {
        return Err(EngineError::Refused {
            path: path.to_path_buf(),
            reason: "changed while iolens was opening it (another object now stands at the path)".into(),
            hint: "run again once nothing else changes the path".into(),
        });
    }
    if ft.is_block_device() {
        if usage.own_name {
            return Err(EngineError::Refused {
                path: path.to_path_buf(),
                reason: "is a device node under iolens's own file name; iolens did not create it".into(),
                hint: "remove it, or give the device itself as --target".into(),
            });
        }
        return open_block_device(path, file, &meta, usage, writes, policy);
    }
    if !ft.is_file() {
        return Err(EngineError::Refused {
            path: path.to_path_buf(),
            reason: format!(
                "is {}; iolens reads and writes only regular files and block devices",
                iolens_output::describe_file_type(&ft)
            ),
            hint: "give a directory, a regular file or a block device as target".into(),
        });
    }
    let owned_entry = iolens_ownership::owned(&file);
    let owned = owned_entry.is_some();
    // Made by this process (a suite's earlier point): still new, not found.
    let fresh = owned_entry.is_some_and(|o| o.this_process);
    if writes && !owned && !policy.allow_overwrite {
        return Err(EngineError::Refused {
            path: path.to_path_buf(),
            reason: "exists and was not created by iolens (or was changed since); writing would overwrite its data"
                .into(),
            hint: "give a directory or a new file name as target, or pass --allow-overwrite".into(),
        });
    }
    // A foreign file is never extended, nor is any file found that is read (owned or not: it is
    // read as it is); the region is then at most its size — except for verifying readers, which
    // report the blocks past the end (a truncated file) instead of skipping them.
    let as_found = usage.reads && !usage.verify_reads && !fresh;
    let region = match (usage.region, (owned || (writes && policy.allow_overwrite)) && !as_found) {
        (Some(r), true) => r,
        (Some(r), false) if usage.verify_reads && !writes => r,
        (Some(r), false) => r.min(meta.len()),
        (None, _) => meta.len(),
    };
    if region == 0 {
        return Err(EngineError::BadTarget {
            path: path.to_path_buf(),
            reason: "is empty; give a size (--size) to use it".into(),
        });
    }
    // Writing (or laying out a new file) needs a writable descriptor of the same object.
    let handle = if (writes || fresh) && !null_only { reopen(&file, path, true, 0)? } else { file };
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::File,
        region,
        created: false,
        owned,
        written: writes,
        handle: Some(handle),
        laid_out: owned_entry.map_or(0, |e| e.laid_out),
        fresh,
        laid_out_now: 0,
        cache_dropped: false,
    })
}

fn create_target(path: &Path, usage: &Use) -> Result<Target, EngineError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                EngineError::Refused {
                    path: path.to_path_buf(),
                    reason: "appeared while iolens was creating it (another program made it)".into(),
                    hint: "run again, or give another target".into(),
                }
            } else {
                io_err(path, "create")(e)
            }
        })?;
    // In this process's lease at once: if the run is killed, the next run (or `iolens clean`)
    // knows the file is a leftover of its own.
    iolens_ownership::claim_file(&file, path, usage.region.unwrap_or(DEFAULT_REGION_SIZE), 0);
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::File,
        region: usage.region.unwrap_or(DEFAULT_REGION_SIZE),
        created: true,
        owned: true,
        written: usage.writes,
        handle: Some(file),
        laid_out: 0,
        fresh: true,
        laid_out_now: 0,
        cache_dropped: false,
    })
}

fn open_block_device(
    path: &Path,
    file: File,
    meta: &std::fs::Metadata,
    usage: &Use,
    writes: bool,
    policy: TargetPolicy,
) -> Result<Target, EngineError> {
    let handle = if writes {
        check_block_device_write(path, meta.rdev(), policy)?;
        let refused = |reason: String| EngineError::Refused {
            path: path.to_path_buf(),
            reason,
            hint: "iolens never writes to a device in use, whatever the flags".into(),
        };
        // Held for the whole run: the kernel refuses to mount, or exclusively open, the device
        // while this descriptor exists, and refuses it now if it is in use.
        reopen(&file, path, true, libc::O_EXCL).map_err(|e| match e {
            EngineError::Io { source, .. } if source.raw_os_error() == Some(libc::EBUSY) => {
                refused("is in use (the kernel refused exclusive access)".into())
            }
            other => other,
        })?
    } else {
        file
    };
    let size = iolens_device::block_device_size(handle.as_raw_fd()).map_err(io_err(path, "size"))?;
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::BlockDevice,
        region: usage.region.map_or(size, |r| r.min(size)),
        created: false,
        owned: false,
        written: writes,
        handle: Some(handle),
        laid_out: 0,
        fresh: false,
        laid_out_now: 0,
        cache_dropped: false,
    })
}

fn check_block_device_write(path: &Path, rdev: u64, policy: TargetPolicy) -> Result<(), EngineError> {
    if !policy.allow_overwrite {
        return Err(EngineError::Refused {
            path: path.to_path_buf(),
            reason: "is a block device; writing to it destroys its contents".into(),
            hint: "pass --allow-overwrite if this device holds nothing you need".into(),
        });
    }
    iolens_device::check_writable_device_number(rdev).map_err(|e| EngineError::Refused {
        path: path.to_path_buf(),
        reason: e.to_string(),
        hint: "iolens never writes to a device in use, whatever the flags".into(),
    })
}

/// Opens the object behind `file` again (not its path) with other flags.
fn reopen(file: &File, path: &Path, write: bool, flags: i32) -> Result<File, EngineError> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(flags | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(io_err(path, "open"))
}

/// Fails early, with the file system's name, where O_DIRECT is refused.
fn check_direct(t: &Target) -> Result<(), EngineError> {
    let Some(fd_path) = t.fd_path() else { return Ok(()) };
    match OpenOptions::new().read(true).custom_flags(libc::O_DIRECT | libc::O_CLOEXEC).open(fd_path) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Err(direct_refused(&t.path)),
        Err(e) => Err(io_err(&t.path, "open")(e)),
    }
}

pub(crate) fn direct_refused(path: &Path) -> EngineError {
    let fs =
        iolens_device::filesystem_type(path).map(|f| f.name.to_string()).unwrap_or_else(|_| "unknown".into());
    EngineError::DirectUnsupported { path: path.to_path_buf(), filesystem: fs }
}

/// Opens a target for an agent: the object prepared, reopened through its descriptor, never
/// the path again.
pub fn open_for_agent(t: &Target, writes: bool, direct: bool) -> Result<File, EngineError> {
    let Some(fd_path) = t.fd_path() else {
        return Err(EngineError::BadTarget { path: t.path.clone(), reason: "was not prepared".into() });
    };
    if writes && !t.written {
        return Err(EngineError::BadTarget {
            path: t.path.clone(),
            reason: "was prepared for reading only".into(),
        });
    }
    let mut flags = libc::O_CLOEXEC;
    if direct {
        flags |= libc::O_DIRECT;
    }
    OpenOptions::new().read(true).write(writes).custom_flags(flags).open(&fd_path).map_err(|e| {
        match e.raw_os_error() {
            Some(libc::EINVAL) if direct => direct_refused(&t.path),
            _ => io_err(&t.path, "open")(e),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolens_workload::FlagWorkload;
    use std::os::unix::fs::FileExt;

    fn job(target: &Path, rw: &str) -> Job {
        FlagWorkload {
            target: target.to_path_buf(),
            rw: rw.into(),
            bs: "4k".into(),
            size: Some("64k".into()),
            ..FlagWorkload::default()
        }
        .to_job()
        .unwrap()
    }

    fn owned_file(dir: &Path, name: &str, region: u64) -> Target {
        let path = dir.join(name);
        Target {
            handle: Some(File::create(&path).unwrap()),
            path,
            kind: TargetKind::File,
            region,
            created: true,
            owned: true,
            written: true,
            laid_out: 0,
            fresh: true,
            laid_out_now: 0,
            cache_dropped: false,
        }
    }

    #[test]
    fn free_space_sums_every_new_file_on_a_file_system_without_overflowing() {
        let dir = tempfile::tempdir().unwrap();
        let free =
            iolens_device::free_bytes(dir.path()).unwrap().expect("a file system with space accounting");
        // Files of 45% and 90% of the free space: each fits alone, together they do not (with room
        // for other processes to change the free space by a third in between).
        let (small, large) = (free / 100 * 45, free / 100 * 90);
        let mut targets = Targets { targets: vec![owned_file(dir.path(), "a", small)], ..Targets::default() };
        assert!(check_free_space(&targets).is_ok(), "one file fits");
        targets.targets.push(owned_file(dir.path(), "b", large));
        match check_free_space(&targets) {
            Err(EngineError::NoSpace { need, .. }) => assert_eq!(need, small + large),
            other => panic!("{other:?}"),
        }
        // Regions whose sum passes u64::MAX are refused, not wrapped around to a small number.
        let huge = u64::MAX / 2 + 1;
        let targets = Targets {
            targets: vec![owned_file(dir.path(), "c", huge), owned_file(dir.path(), "d", huge)],
            ..Targets::default()
        };
        match check_free_space(&targets) {
            Err(EngineError::NoSpace { need, .. }) => assert_eq!(need, u64::MAX),
            other => panic!("{other:?}"),
        }
        // Files that are not the run's own are not counted.
        let mut foreign = owned_file(dir.path(), "e", u64::MAX);
        foreign.owned = false;
        assert!(check_free_space(&Targets { targets: vec![foreign], ..Targets::default() }).is_ok());
    }

    #[test]
    fn swapping_the_path_after_preparation_does_not_redirect_writes() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, vec![7u8; 65536]).unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let job = job(&data, "write");
        let targets = prepare_targets(&job, TargetPolicy::default(), &AtomicBool::new(false)).unwrap();
        let t = targets.for_agent(0);
        // Between preparation and the agents' open, the attacker puts a link to the victim there.
        std::fs::rename(&t.path, dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&victim, &t.path).unwrap();
        let f = open_for_agent(t, true, false).unwrap();
        f.write_all_at(&[0u8; 4096], 0).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), vec![7u8; 65536]);
        // Removal does not touch the link (it is not the file created) nor the victim.
        assert!(targets.remove_created().is_empty());
        assert!(std::fs::symlink_metadata(&t.path).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&victim).unwrap(), vec![7u8; 65536]);
    }

    #[test]
    fn fifos_and_links_under_own_names_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let job = job(dir.path(), "read");
        let own = agent_file_in_dir(dir.path(), &job.name, &job.agents[0].name);
        let c = std::ffi::CString::new(own.as_os_str().as_bytes()).unwrap();
        // SAFETY: valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let e = prepare_targets(&job, TargetPolicy::default(), &AtomicBool::new(false)).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        assert!(std::fs::symlink_metadata(&own).unwrap().file_type().is_fifo());
        std::fs::remove_file(&own).unwrap();
        std::os::unix::fs::symlink("/dev/null", &own).unwrap();
        let e = prepare_targets(&job, TargetPolicy::default(), &AtomicBool::new(false)).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(std::fs::symlink_metadata(&own).unwrap().file_type().is_symlink());
    }

    use std::os::unix::ffi::OsStrExt;
}
