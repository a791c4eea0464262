//! Targets: resolving what each agent addresses, refusing what must not be written, laying out
//! files with real data, and removing what this run created.
//!
//! The rules that keep data safe:
//! - iolens writes only into files it created in this run, or files carrying its ownership mark
//!   (the `user.iolens` extended attribute, set when it creates a file);
//! - any other existing file, and any block device, is written only with `allow_overwrite`;
//! - a block device that is mounted, used as swap, or held by another device (or has such a
//!   partition) is never written, flag or not; it is also opened with `O_EXCL`, so the kernel
//!   refuses it if it got mounted meanwhile.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use iolens_workload::{AgentSpec, Job, DEFAULT_REGION_SIZE};

use crate::buffers::fill_random;
use crate::EngineError;

const OWNER_XATTR: &str = "user.iolens";
const LAYOUT_CHUNK: usize = 1 << 20;

/// What kind of object a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    File,
    BlockDevice,
}

/// A resolved target shared by one or more agents.
#[derive(Debug, Clone)]
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Bytes agents address: `[0, region)`.
    pub region: u64,
    /// Does not exist yet: this run creates it.
    pub new: bool,
    /// Created by this run (removed at the end unless kept).
    pub created: bool,
    pub written: bool,
}

/// The targets of a job and which agent uses which.
#[derive(Debug, Default)]
pub struct Targets {
    pub targets: Vec<Target>,
    /// `agent_target[i]` indexes `targets` for agent `i`.
    pub agent_target: Vec<usize>,
    /// Bytes of incompressible data written to lay out files before the run.
    pub laid_out_bytes: u64,
}

impl Targets {
    pub fn for_agent(&self, agent: usize) -> &Target {
        &self.targets[self.agent_target[agent]]
    }

    /// Removes the files this run created; returns the ones that could not be removed.
    pub fn remove_created(&self) -> Vec<(PathBuf, io::Error)> {
        self.targets
            .iter()
            .filter(|t| t.created)
            .filter_map(|t| std::fs::remove_file(&t.path).err().map(|e| (t.path.clone(), e)))
            .filter(|(_, e)| e.kind() != io::ErrorKind::NotFound)
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
    /// Leave the targets' cached pages in memory. By default they are dropped before the run
    /// (as fio's `invalidate=1`), so reads start from the device.
    pub keep_cache: bool,
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

fn read_owner_mark(path: &Path) -> Option<u64> {
    let cpath = CString::new(path.as_os_str().as_bytes()).ok()?;
    let name = CString::new(OWNER_XATTR).unwrap();
    let mut buf = [0u8; 64];
    // SAFETY: valid C strings and a buffer of the given length.
    let n = unsafe { libc::getxattr(cpath.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return None;
    }
    let text = std::str::from_utf8(&buf[..n as usize]).ok()?;
    text.strip_prefix("iolens laid_out=")?.trim().parse().ok()
}

/// Marks a file as iolens's own, remembering how many bytes hold laid-out data. File systems
/// without user xattrs simply keep no mark: the file then counts as foreign in later runs.
fn write_owner_mark(file: &File, laid_out: u64) {
    let name = CString::new(OWNER_XATTR).unwrap();
    let value = format!("iolens laid_out={laid_out}");
    // SAFETY: valid fd, C string and buffer.
    unsafe { libc::fsetxattr(file.as_raw_fd(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
}

/// Whether `path` is a file iolens created (in any run).
pub fn is_own_file(path: &Path) -> bool {
    read_owner_mark(path).is_some()
}

struct Use {
    reads: bool,
    writes: bool,
    direct: bool,
    region: Option<u64>,
}

/// Resolves every agent's target, checks safety, and lays out data. Stops early (leaving what
/// it created listed for removal) when `stop` is set.
pub fn prepare_targets(job: &Job, policy: TargetPolicy, stop: &AtomicBool) -> Result<Targets, EngineError> {
    let mut by_path: BTreeMap<PathBuf, Use> = BTreeMap::new();
    let mut agent_path = Vec::with_capacity(job.agents.len());
    for agent in &job.agents {
        let path = resolve_path(job, agent)?;
        let usage = by_path.entry(path.clone()).or_insert(Use {
            reads: false,
            writes: false,
            direct: false,
            region: None,
        });
        usage.reads |= agent.op.reads();
        usage.writes |= agent.op.writes() && agent.engine != iolens_workload::EngineKind::Null;
        usage.direct |= agent.direct;
        if let Some(r) = agent.region_size {
            usage.region = Some(usage.region.map_or(r, |x| x.max(r)));
        }
        agent_path.push(path);
    }
    let null_only = job.agents.iter().all(|a| a.engine == iolens_workload::EngineKind::Null);

    let mut targets = Targets::default();
    let mut index = BTreeMap::new();
    for (i, (path, usage)) in by_path.iter().enumerate() {
        index.insert(path.clone(), i);
        targets.targets.push(plan_target(path, usage, policy, null_only)?);
    }
    targets.agent_target = agent_path.iter().map(|p| index[p]).collect();
    check_free_space(&targets)?;

    if null_only {
        return Ok(targets);
    }
    for (t, usage) in targets.targets.iter_mut().zip(by_path.values()) {
        let step = materialize(t, usage, stop).and_then(|bytes| {
            if t.kind == TargetKind::File && usage.direct {
                check_direct(&t.path)?;
            }
            if !policy.keep_cache {
                drop_cached_pages(&t.path);
            }
            Ok(bytes)
        });
        match step {
            Ok(bytes) => targets.laid_out_bytes += bytes,
            Err(e) => {
                targets.remove_created();
                return Err(e);
            }
        }
    }
    Ok(targets)
}

fn resolve_path(job: &Job, agent: &AgentSpec) -> Result<PathBuf, EngineError> {
    match std::fs::metadata(&agent.target) {
        Ok(m) if m.is_dir() => Ok(agent_file_in_dir(&agent.target, &job.name, &agent.name)),
        Ok(m) if m.is_file() || m.file_type().is_block_device() => Ok(agent.target.clone()),
        Ok(_) => Err(EngineError::BadTarget {
            path: agent.target.clone(),
            reason: "is neither a regular file, a directory nor a block device".into(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent =
                agent.target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if parent.is_dir() {
                Ok(agent.target.clone())
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

fn plan_target(
    path: &Path,
    usage: &Use,
    policy: TargetPolicy,
    null_only: bool,
) -> Result<Target, EngineError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(path, "inspect")(e)),
    };
    let writes = usage.writes && !null_only;
    match meta {
        None => Ok(Target {
            path: path.to_path_buf(),
            kind: TargetKind::File,
            region: usage.region.unwrap_or(DEFAULT_REGION_SIZE),
            new: !null_only,
            created: false,
            written: writes,
        }),
        Some(m) if m.file_type().is_block_device() => {
            if writes {
                if !policy.allow_overwrite {
                    return Err(EngineError::Refused {
                        path: path.to_path_buf(),
                        reason: "is a block device; writing to it destroys its contents".into(),
                        hint: "pass --allow-overwrite if this device holds nothing you need".into(),
                    });
                }
                iolens_device::check_writable_block_device(path).map_err(|e| EngineError::Refused {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                    hint: "iolens never writes to a device in use, whatever the flags".into(),
                })?;
            }
            let file = File::open(path).map_err(io_err(path, "open"))?;
            let size = iolens_device::block_device_size(file.as_raw_fd()).map_err(io_err(path, "size"))?;
            Ok(Target {
                path: path.to_path_buf(),
                kind: TargetKind::BlockDevice,
                region: usage.region.map_or(size, |r| r.min(size)),
                new: false,
                created: false,
                written: writes,
            })
        }
        Some(m) => {
            let own = is_own_file(path);
            if writes && !own && !policy.allow_overwrite {
                return Err(EngineError::Refused {
                    path: path.to_path_buf(),
                    reason: "exists and was not created by iolens; writing would overwrite its data".into(),
                    hint: "give a directory or a new file name as target, or pass --allow-overwrite".into(),
                });
            }
            // A foreign file is never extended; its region is at most its size.
            let region = match (usage.region, own || (writes && policy.allow_overwrite)) {
                (Some(r), true) => r,
                (Some(r), false) => r.min(m.len()),
                (None, _) => m.len(),
            };
            if region == 0 {
                return Err(EngineError::BadTarget {
                    path: path.to_path_buf(),
                    reason: "is empty; give a size (--size) to use it".into(),
                });
            }
            Ok(Target {
                path: path.to_path_buf(),
                kind: TargetKind::File,
                region,
                new: false,
                created: false,
                written: writes,
            })
        }
    }
}

fn check_free_space(targets: &Targets) -> Result<(), EngineError> {
    // Group new bytes by the file system (device) they land on.
    let mut need: BTreeMap<u64, (PathBuf, u64)> = BTreeMap::new();
    for t in &targets.targets {
        if t.kind != TargetKind::File {
            continue;
        }
        let current = std::fs::metadata(&t.path).map(|m| m.len()).unwrap_or(0);
        if !t.new && !is_own_file(&t.path) {
            continue;
        }
        let extra = t.region.saturating_sub(current);
        let dir = t.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let dev =
            std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(dir).map_err(io_err(dir, "inspect"))?);
        let e = need.entry(dev).or_insert((dir.to_path_buf(), 0));
        e.1 += extra;
    }
    for (_, (dir, bytes)) in need {
        let Some(free) = iolens_device::free_bytes(&dir).map_err(io_err(&dir, "check free space on"))? else {
            continue; // no space accounting (ramfs): nothing to check against
        };
        // Keep a margin so the run does not fill the file system to the last block.
        let margin = (free / 20).min(64 << 20);
        if bytes > 0 && bytes + margin > free {
            return Err(EngineError::NoSpace { path: dir, need: bytes, free });
        }
    }
    Ok(())
}

/// Creates and lays out a file target; returns the bytes of data written.
fn materialize(t: &mut Target, usage: &Use, stop: &AtomicBool) -> Result<u64, EngineError> {
    if t.kind != TargetKind::File {
        return Ok(0);
    }
    let path = t.path.clone();
    let file = if t.new {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_err(&path, "create"))?;
        t.created = true;
        f
    } else if is_own_file(&path) {
        OpenOptions::new().read(true).write(true).open(&path).map_err(io_err(&path, "open"))?
    } else {
        return Ok(0); // foreign file: used as it is
    };
    let laid_out = read_owner_mark(&path).unwrap_or(0);
    if t.new {
        write_owner_mark(&file, 0);
    }
    let mut written = 0;
    if usage.reads && laid_out < t.region {
        written = lay_out(&file, &path, laid_out, t.region, stop)?;
        write_owner_mark(&file, t.region);
    } else if file.metadata().map_err(io_err(&path, "inspect"))?.len() < t.region {
        // Write-only: reserve the blocks so writes overwrite allocated space, as on a
        // laid-out file; fall back to a sparse size where fallocate is unsupported.
        // SAFETY: plain syscall on our fd.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, t.region as i64) };
        if rc == libc::ENOSPC {
            return Err(EngineError::NoSpace { path, need: t.region, free: 0 });
        }
        if rc != 0 {
            file.set_len(t.region).map_err(io_err(&path, "size"))?;
        }
    }
    Ok(written)
}

/// Fills `[from, to)` with incompressible data, flushes it, and drops it from the page cache so
/// the run starts cold.
fn lay_out(file: &File, path: &Path, from: u64, to: u64, stop: &AtomicBool) -> Result<u64, EngineError> {
    use std::os::unix::fs::FileExt;
    let mut chunk = vec![0u8; LAYOUT_CHUNK];
    let mut at = from;
    while at < to {
        if stop.load(Ordering::Relaxed) {
            return Err(EngineError::Interrupted);
        }
        let n = (to - at).min(LAYOUT_CHUNK as u64) as usize;
        fill_random(&mut chunk[..n], at ^ 0x5eed_1a7e);
        file.write_all_at(&chunk[..n], at).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOSPC) {
                EngineError::NoSpace { path: path.to_path_buf(), need: to - at, free: 0 }
            } else {
                io_err(path, "lay out")(e)
            }
        })?;
        at += n as u64;
    }
    file.sync_data().map_err(io_err(path, "flush"))?;
    // SAFETY: plain syscall on our fd; advice only.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(to - from)
}

/// Writes back and evicts the target's cached pages: advice that never changes data, so it is
/// applied to foreign files and devices too.
fn drop_cached_pages(path: &Path) {
    if let Ok(f) = File::open(path) {
        // SAFETY: plain syscalls on a descriptor we own.
        unsafe {
            libc::fdatasync(f.as_raw_fd());
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
}

/// Fails early, with the file system's name, where O_DIRECT is refused.
fn check_direct(path: &Path) -> Result<(), EngineError> {
    match OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Err(direct_refused(path)),
        Err(e) => Err(io_err(path, "open")(e)),
    }
}

pub(crate) fn direct_refused(path: &Path) -> EngineError {
    let fs =
        iolens_device::filesystem_type(path).map(|f| f.name.to_string()).unwrap_or_else(|_| "unknown".into());
    EngineError::DirectUnsupported { path: path.to_path_buf(), filesystem: fs }
}

/// Opens a target for an agent.
pub fn open_for_agent(t: &Target, writes: bool, direct: bool) -> Result<File, EngineError> {
    let mut flags = 0;
    if direct {
        flags |= libc::O_DIRECT;
    }
    if t.kind == TargetKind::BlockDevice && writes {
        flags |= libc::O_EXCL;
    }
    OpenOptions::new().read(true).write(writes).custom_flags(flags).open(&t.path).map_err(|e| {
        match e.raw_os_error() {
            Some(libc::EINVAL) if direct => direct_refused(&t.path),
            Some(libc::EBUSY) => EngineError::Refused {
                path: t.path.clone(),
                reason: "is in use (the kernel refused exclusive access)".into(),
                hint: "iolens never writes to a device in use".into(),
            },
            _ => io_err(&t.path, "open")(e),
        }
    })
}
