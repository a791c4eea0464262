//! Targets of one of several processes (MPI): the path each rank's agents address (file per
//! process, or one shared file), the checks a shared-file job must pass, and how the other
//! ranks attach to the shared file rank 0 prepared.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use iolens_workload::{AgentSpec, Job};

use super::{io_err, rank_file_in_dir, resolve_path, shared_file_in_dir, Target, TargetKind, Targets};
use crate::placement::{Layout, Placement};
use crate::EngineError;

/// A shared file needs one target for every agent, and strided blocks of one request size.
pub(super) fn check_shared_job(job: &Job, p: &Placement) -> Result<(), EngineError> {
    let first = &job.agents[0];
    if let Some(other) = job.agents.iter().find(|a| a.target != first.target) {
        return Err(EngineError::BadTarget {
            path: other.target.clone(),
            reason: format!(
                "differs from agent {}'s target {}; with --shared-file every agent uses one target",
                first.name,
                first.target.display()
            ),
        });
    }
    if p.layout == Layout::Strided {
        for a in &job.agents {
            let fixed = matches!(a.sizes, iolens_workload::SizeSpec::Fixed(_));
            let contiguous = !matches!(a.pattern, iolens_workload::Pattern::Noncontiguous(_));
            if !fixed || !contiguous || a.sizes.max() != first.sizes.max() {
                return Err(EngineError::BadTarget {
                    path: a.target.clone(),
                    reason: format!(
                        "cannot be laid out strided for agent {}: the strided layout interleaves blocks of one \
                         request size, so every agent needs the same fixed --bs and a contiguous pattern",
                        a.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Where an agent's I/O goes when it is one of several processes' (see [`prepare_targets_placed`]).
pub(super) fn resolve_placed_path(
    job: &Job,
    agent: &AgentSpec,
    placement: Option<&Placement>,
) -> Result<(PathBuf, bool), EngineError> {
    let Some(p) = placement else { return resolve_path(job, agent) };
    let is_dir = std::fs::metadata(&agent.target).is_ok_and(|m| m.is_dir());
    let reads_only = agent.op == iolens_workload::OpMix::Read;
    let resolved = match (is_dir, p.shared_file) {
        (true, false) => {
            Ok((rank_file_in_dir(&agent.target, &job.name, &agent.name, p.data_rank(reads_only)), true))
        }
        (true, true) => Ok((shared_file_in_dir(&agent.target, &job.name), true)),
        (false, true) => resolve_path(job, agent),
        (false, false) if agent.engine == iolens_workload::EngineKind::Null => resolve_path(job, agent),
        (false, false) => Err(resolve_path(job, agent).err().unwrap_or_else(|| EngineError::BadTarget {
            path: agent.target.clone(),
            reason: format!(
                "is not a directory, so all {} ranks would use this one file as their own; give a \
                 directory (each rank gets its own files in it) or pass --shared-file",
                p.ranks
            ),
        })),
    }?;
    if p.reordered(reads_only) && std::fs::symlink_metadata(&resolved.0).is_err() {
        // Laid out here, the data would be this rank's own, in this node's page cache.
        return Err(EngineError::BadTarget {
            path: resolved.0,
            reason: format!(
                "does not exist: with --reorder-ranks {} rank {} reads what rank {} wrote there; write it \
                 first (mpirun … iolens run with the same job and agent names, a write and --keep)",
                p.reorder,
                p.rank,
                p.data_rank(reads_only)
            ),
        });
    }
    Ok(resolved)
}

/// The shared file rank 0 prepared, for another rank: opened by the same path, checked to be
/// the very file rank 0 has open (its inode, `ino`) and of the size rank 0 laid out (`region`).
/// This rank neither created nor owns it: it never removes or records it.
pub fn attach_shared(
    job: &Job,
    placement: &Placement,
    ino: u64,
    region: u64,
) -> Result<Targets, EngineError> {
    check_shared_job(job, placement)?;
    let (path, own_name) = resolve_placed_path(job, &job.agents[0], Some(placement))?;
    let null_only = job.agents.iter().all(|a| a.engine == iolens_workload::EngineKind::Null);
    let handle = if null_only {
        None
    } else {
        let writes = job.agents.iter().any(|a| a.op.writes());
        let nofollow = if own_name { libc::O_NOFOLLOW } else { 0 };
        let file = OpenOptions::new()
            .read(true)
            .write(writes)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY | nofollow)
            .open(&path)
            .map_err(io_err(&path, "open the shared file"))?;
        let meta = file.metadata().map_err(io_err(&path, "inspect"))?;
        if meta.ino() != ino || !(meta.is_file() || meta.file_type().is_block_device()) || meta.len() < region
        {
            return Err(EngineError::Refused {
                path: path.clone(),
                reason: format!(
                    "is not the file rank 0 prepared (inode {} size {}, expected inode {ino} size at least {region})",
                    meta.ino(),
                    meta.len()
                ),
                hint: "every rank must see the same file system at the target path".into(),
            });
        }
        Some(file)
    };
    let kind = match &handle {
        Some(f) if f.metadata().is_ok_and(|m| m.file_type().is_block_device()) => TargetKind::BlockDevice,
        _ => TargetKind::File,
    };
    let writes = job.agents.iter().any(|a| a.op.writes());
    Ok(Targets {
        targets: vec![Target {
            path,
            kind,
            region,
            created: false,
            owned: false,
            written: writes,
            handle,
            laid_out: region,
            fresh: false,
            laid_out_now: 0,
            cache_dropped: false,
        }],
        agent_target: vec![0; job.agents.len()],
        laid_out_bytes: 0,
        warnings: Vec::new(),
        shared: Some(*placement),
    })
}

/// The identity rank 0 shares with the other ranks: the shared file's inode and region.
pub fn shared_identity(targets: &Targets) -> [u64; 2] {
    let t = &targets.targets[0];
    let ino = t.handle.as_ref().and_then(|f| f.metadata().ok()).map_or(0, |m| m.ino());
    [ino, t.region]
}
