//! Scratch directories: made with a random name (`mkdtemp`, 0700), recorded in this process's
//! lease, and removed — never recursively — by emptying them of what iolens makes in them, one
//! file at a time, then `rmdir`.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::fs_at::{euid, names_in, open_dir_at, open_parent, stat_at, unlink_at};
use super::{claim_dir, release, unlink_checked, Identity, Outcome, TokenPlace, DIR_MARKER};

/// A scratch directory of iolens's own, removed on drop unless kept.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    /// Held open: its inode cannot be freed and handed to another directory at this path while
    /// the run goes on, and emptying it reads this very directory.
    dir: File,
    identity: Identity,
    keep: bool,
}

impl ScratchDir {
    /// Creates `BASE/PREFIXxxxxxx`. A kept directory is the user's: it is not recorded for
    /// removal.
    pub fn create(base: &Path, prefix: &str, keep: bool) -> io::Result<ScratchDir> {
        let path = tempfile::Builder::new()
            .prefix(prefix)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(base)?
            .keep();
        let path = std::path::absolute(&path).unwrap_or(path);
        let (parent, name) = open_parent(&path)?;
        let dir = open_dir_at(&parent, &name)?;
        let identity = Identity::of(&dir)?;
        if !keep {
            claim_dir(&dir, &path);
        }
        Ok(ScratchDir { path, dir, identity, keep })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Ok((parent, name)) = open_parent(&self.path) {
            let still_ours =
                stat_at(&parent, &name).is_ok_and(|st| Identity::from_stat(&st).same_object(&self.identity));
            if still_ours {
                let _ = empty_and_remove(
                    &parent,
                    &name,
                    &self.dir,
                    &self.path,
                    own_place(&self.dir),
                    &mut Vec::new(),
                );
            }
        }
        release(&self.identity);
    }
}

/// A directory this process made at a name of its choosing (shared with other processes of the
/// same job), recorded in its lease; forgotten when dropped, whoever removes it.
#[derive(Debug)]
pub struct Claimed {
    identity: Identity,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        release(&self.identity);
    }
}

/// Records the directory at `path`, just made by this process, in its lease.
pub fn claim_made_dir(path: &Path) -> io::Result<Claimed> {
    let (parent, name) = open_parent(path)?;
    let dir = open_dir_at(&parent, &name)?;
    claim_dir(&dir, path);
    Ok(Claimed { identity: Identity::of(&dir)? })
}

/// Removes a private directory of this user that iolens made at `path`: what iolens makes in it,
/// one by one, then the directory if nothing else is left. Returns whether it is gone.
pub fn remove_made_dir(path: &Path) -> io::Result<bool> {
    let (parent, name) = open_parent(path)?;
    let dir = open_dir_at(&parent, &name)?;
    let meta = dir.metadata()?;
    if meta.uid() != euid() || meta.mode() & 0o077 != 0 {
        return Ok(false);
    }
    match empty_and_remove(&parent, &name, &dir, path, own_place(&dir), &mut Vec::new()) {
        Outcome::Removed => Ok(true),
        Outcome::Failed(e) => Err(e),
        _ => Ok(false),
    }
}

/// Where a directory this process made keeps its token: a marker inside it (removed with it),
/// else its attribute.
fn own_place(dir: &File) -> TokenPlace {
    if super::marker_token(dir).is_some() {
        TokenPlace::Marker
    } else {
        TokenPlace::Xattr
    }
}

/// Whether `name` is one iolens gives what it makes in its scratch directories: its own files
/// (`iolens-…`, and `.iolens-…` while they are written under a temporary name), and what the
/// preload writes in traced programs: event streams (`PID.START.evt`) and, beside an MPI rank's,
/// its clock (`PID.START.mpi`).
fn made_by_iolens(name: &str) -> bool {
    name.starts_with("iolens-")
        || name.starts_with(".iolens-")
        || name.ends_with(".evt")
        || name.ends_with(".mpi")
}

/// Subdirectories of a trace directory: per user id a traced program switched to, per MPI rank.
fn numbered(name: &str, prefix: &str) -> Option<u32> {
    name.strip_prefix(prefix)?.parse().ok()
}

/// Empties `dir` (named `name` in `parent`, reached at `path`) of what iolens makes there and
/// removes it if nothing else is left; what stays is named in the outcome.
pub(super) fn empty_and_remove(
    parent: &File,
    name: &OsStr,
    dir: &File,
    path: &Path,
    place: TokenPlace,
    removed: &mut Vec<PathBuf>,
) -> Outcome {
    let mut left = Vec::new();
    if let Err(e) = empty(dir, path, euid(), 0, removed, &mut left) {
        return Outcome::Failed(e);
    }
    if !left.is_empty() {
        let shown: Vec<String> = left.iter().take(5).map(|p: &PathBuf| p.display().to_string()).collect();
        return Outcome::Left(format!(
            "it holds {} thing(s) iolens did not make, left with it: {}{}",
            left.len(),
            shown.join(", "),
            if left.len() > shown.len() { ", …" } else { "" }
        ));
    }
    if place == TokenPlace::Marker {
        // The marker was proven iolens's (this user's, one link, the run's token) on the way in.
        let _ = unlink_at(dir, OsStr::new(DIR_MARKER), false);
    }
    let Ok(id) = Identity::of(dir) else { return Outcome::Forgotten };
    unlink_checked(parent, name, &id, true)
}

/// Removes from `dir` the regular files iolens names as its own, owned by `owner` with a single
/// link, and the subdirectories it makes (at most three levels); lists everything else in `left`.
fn empty(
    dir: &File,
    path: &Path,
    owner: u32,
    depth: u32,
    removed: &mut Vec<PathBuf>,
    left: &mut Vec<PathBuf>,
) -> io::Result<()> {
    for name in names_in(dir)? {
        if name == DIR_MARKER && depth == 0 {
            continue;
        }
        let here = path.join(&name);
        let text = name.to_string_lossy();
        let st = match stat_at(dir, &name) {
            Ok(st) => st,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(e),
        };
        let kind = st.st_mode & libc::S_IFMT;
        if kind == libc::S_IFREG && made_by_iolens(&text) && st.st_uid == owner && st.st_nlink == 1 {
            match unlink_checked(dir, &name, &Identity::from_stat(&st), false) {
                Outcome::Removed => removed.push(here),
                Outcome::Forgotten => {}
                Outcome::Failed(_) | Outcome::Left(_) => left.push(here),
            }
            continue;
        }
        let user_dir = numbered(&text, "uid-");
        let subdir = made_by_iolens(&text) || user_dir.is_some() || numbered(&text, "rank-").is_some();
        let sub_owner = user_dir.unwrap_or(owner);
        if kind == libc::S_IFDIR && subdir && depth < 3 && st.st_uid == sub_owner {
            let Ok(sub) = open_dir_at(dir, &name) else {
                left.push(here);
                continue;
            };
            if !sub.metadata().is_ok_and(|m| m.ino() == st.st_ino && m.dev() == st.st_dev) {
                left.push(here);
                continue;
            }
            let before = left.len();
            empty(&sub, &here, sub_owner, depth + 1, removed, left)?;
            if left.len() == before {
                match unlink_checked(dir, &name, &Identity::from_stat(&st), true) {
                    Outcome::Removed => removed.push(here),
                    Outcome::Forgotten => {}
                    _ => left.push(here),
                }
            }
            continue;
        }
        left.push(here);
    }
    Ok(())
}
