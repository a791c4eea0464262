//! Laying out target data: the free-space check before anything is written, new files filled
//! with incompressible data (or sized sparse), the holes a read target has, and the page cache
//! dropped so a run starts cold.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use iolens_metrics::{Warning, WarningCode};
use iolens_workload::format_bytes;

use super::{io_err, Target, TargetKind, Targets, Use, LAYOUT_CHUNK};
use crate::buffers::fill_random;
use crate::EngineError;

pub(super) fn check_free_space(targets: &Targets) -> Result<(), EngineError> {
    // Group new bytes by the file system (device) they land on.
    let mut need: BTreeMap<u64, (PathBuf, u64)> = BTreeMap::new();
    for t in &targets.targets {
        if t.kind != TargetKind::File || !t.owned {
            continue;
        }
        let Some(f) = &t.handle else { continue };
        let meta = f.metadata().map_err(io_err(&t.path, "inspect"))?;
        let extra = t.region.saturating_sub(meta.len());
        let dir = t.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let e = need.entry(meta.dev()).or_insert((dir.to_path_buf(), 0));
        e.1 = e.1.checked_add(extra).ok_or_else(|| EngineError::NoSpace {
            path: dir.to_path_buf(),
            need: u64::MAX,
            free: 0,
        })?;
    }
    for (_, (dir, bytes)) in need {
        let Some(free) = iolens_device::free_bytes(&dir).map_err(io_err(&dir, "check free space on"))? else {
            continue; // no space accounting (ramfs): nothing to check against
        };
        // Keep a margin so the run does not fill the file system to the last block.
        let margin = (free / 20).min(64 << 20);
        if bytes > 0 && bytes.saturating_add(margin) > free {
            return Err(EngineError::NoSpace { path: dir, need: bytes, free });
        }
    }
    Ok(())
}

/// Lays out a new file target, or sizes it for writers; returns the bytes of data written.
pub(super) fn materialize(
    t: &mut Target,
    usage: &Use,
    sparse: bool,
    stop: &AtomicBool,
) -> Result<u64, EngineError> {
    if t.kind != TargetKind::File || !t.owned {
        return Ok(0); // foreign files and devices are used as they are
    }
    if !t.fresh && !usage.writes {
        return Ok(0); // a file found and only read is read as it is: no layout, no growth
    }
    let Some(file) = t.handle.as_ref() else { return Ok(0) };
    let path = t.path.clone();
    let mut written = 0;
    if usage.verify_reads && !usage.writes {
        // Verifying readers check the data as it is: neither laid out nor extended.
    } else if usage.reads && !usage.verify_reads && t.laid_out < t.region {
        // A file found that is also written keeps its data as it is (its region is at most its
        // size); only new files are laid out.
        if t.fresh {
            written = lay_out(file, &path, t.laid_out, t.region, stop)?;
            t.laid_out = t.region;
        }
    } else if sparse {
        // Sized, not allocated: reads past the written blocks see zeros, as in any new file.
        if file.metadata().map_err(io_err(&path, "inspect"))?.len() < t.region {
            file.set_len(t.region).map_err(io_err(&path, "size"))?;
        }
    } else if file.metadata().map_err(io_err(&path, "inspect"))?.len() < t.region {
        // Write-only: reserve the blocks so writes overwrite allocated space, as on a
        // laid-out file; fall back to a sparse size where fallocate is unsupported.
        let len = i64::try_from(t.region).map_err(|_| EngineError::NoSpace {
            path: path.clone(),
            need: t.region,
            free: 0,
        })?;
        // SAFETY: plain syscall on our fd.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
        if rc == libc::ENOSPC || rc == libc::EFBIG {
            return Err(EngineError::NoSpace { path, need: t.region, free: 0 });
        }
        if rc != 0 {
            file.set_len(t.region).map_err(io_err(&path, "size"))?;
        }
    }
    if t.created {
        iolens_ownership::claim_file(file, &path, t.region, t.laid_out);
    }
    Ok(written)
}

/// Bytes of `[0, len)` that hold data (not holes) in `file`: SEEK_DATA/SEEK_HOLE where the file
/// system supports them (unwritten extents count as holes there), else the allocated blocks.
pub fn data_bytes(file: &File, len: u64) -> io::Result<u64> {
    let fd = file.as_raw_fd();
    let mut data = 0u64;
    let mut at = 0u64;
    while at < len {
        // SAFETY: plain syscalls on a descriptor we own; they only move its offset.
        let start = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_DATA) };
        if start < 0 {
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::ENXIO) => break, // no data after `at`
                Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => return allocated_bytes(file, len),
                _ => return Err(io::Error::last_os_error()),
            }
        }
        let start = start as u64;
        if start >= len {
            break;
        }
        // SAFETY: as above.
        let end = unsafe { libc::lseek(fd, start as libc::off_t, libc::SEEK_HOLE) };
        if end < 0 {
            return Err(io::Error::last_os_error());
        }
        let end = (end as u64).min(len);
        data += end.saturating_sub(start);
        at = end.max(start + 1);
    }
    Ok(data)
}

pub(super) fn allocated_bytes(file: &File, len: u64) -> io::Result<u64> {
    Ok((file.metadata()?.blocks() * 512).min(len))
}

/// A `sparse_target` warning when the part of `t` agents read has holes.
pub(super) fn sparse_warning(t: &Target) -> Option<Warning> {
    let file = t.handle.as_ref()?;
    let data = data_bytes(file, t.region).ok()?;
    let holes = t.region.saturating_sub(data);
    (holes > 0).then(|| {
        Warning::new(
            WarningCode::SparseTarget,
            format!(
                "{} is sparse: {} of the {} read ({:.0}%) are holes, which read as zeros without touching \
                 the device; the figures overstate the storage (fill the file with data, or give a \
                 directory and let iolens lay out its own file)",
                t.path.display(),
                format_bytes(holes),
                format_bytes(t.region),
                100.0 * holes as f64 / t.region as f64
            ),
        )
    })
}

/// Fills `[from, to)` with incompressible data and flushes it (the caller drops it from the page
/// cache, unless `--keep-cache`, so the run starts cold).
pub(super) fn lay_out(
    file: &File,
    path: &Path,
    from: u64,
    to: u64,
    stop: &AtomicBool,
) -> Result<u64, EngineError> {
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
            if matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EFBIG)) {
                EngineError::NoSpace { path: path.to_path_buf(), need: to - at, free: 0 }
            } else {
                io_err(path, "lay out")(e)
            }
        })?;
        at += n as u64;
    }
    file.sync_data().map_err(io_err(path, "flush"))?;
    Ok(to - from)
}

/// Writes back and evicts the target's cached pages: advice that never changes data, so it is
/// applied to foreign files and devices too.
pub(super) fn drop_cached_pages(t: &Target) {
    if let Some(f) = &t.handle {
        // SAFETY: plain syscalls on a descriptor we own.
        unsafe {
            libc::fdatasync(f.as_raw_fd());
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
}
