//! Removing what dead runs left: each recorded object proven to be only the run's (identity,
//! owner, token, size, change time) on its descriptor before it goes, and left in place — with
//! why — when it cannot be.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;

use super::fs_at::{self, euid, names_in, open_dir_at, open_file_at, open_parent, stat_at, unlink_at};
use super::{
    format_document, host_dir, marker_token, read_document, read_token, scratch, token_agrees, with_kept,
    Document, Entry, EntryKind, HostDir, Identity, TokenPlace, GRACE_NS, RUN_HEADER,
};

/// What became of one recorded object.
#[derive(Debug)]
pub(super) enum Outcome {
    Removed,
    /// Nothing of the run's stands at the path any more (gone, or something else is there).
    Forgotten,
    /// The object is there but cannot be proven to be only the run's: left in place, with why.
    Left(String),
    Failed(io::Error),
}

/// What [`clean_leftovers`] did.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub removed: Vec<PathBuf>,
    /// Entries dropped without removing anything: the path no longer holds the recorded object.
    pub forgotten: Vec<PathBuf>,
    /// Objects left in place because they cannot be proven to be only iolens's, with why.
    pub left: Vec<(PathBuf, String)>,
    pub failed: Vec<(PathBuf, io::Error)>,
    /// Runs still going on this host (their leases are locked): not touched.
    pub live_runs: usize,
    /// Parts of the registry belonging to other hosts, boots or namespaces: never judged here.
    pub other_hosts: usize,
}

/// Removes what dead runs of this host left behind, proving each object first.
pub fn clean_leftovers() -> io::Result<Cleaned> {
    match host_dir() {
        Some(host) => clean_in(&host),
        None => Ok(Cleaned::default()),
    }
}

/// [`clean_leftovers`] in one host's part of a registry.
pub fn clean_in(host: &HostDir) -> io::Result<Cleaned> {
    let mut cleaned = Cleaned::default();
    for name in names_in(&host.runs)? {
        let text = name.to_string_lossy();
        let temporary = text.starts_with(".new-");
        if !temporary && !text.ends_with(".run") {
            continue;
        }
        let Ok(file) = open_file_at(&host.runs, &name, true) else { continue };
        let Ok(meta) = file.metadata() else { continue };
        if !meta.is_file() || meta.uid() != euid() {
            continue;
        }
        match fs_at::try_lock(&file) {
            Ok(true) => {}
            Ok(false) => {
                cleaned.live_runs += usize::from(!temporary);
                continue;
            }
            Err(e) => {
                cleaned.failed.push((host.path.join("runs").join(&name), e));
                continue;
            }
        }
        let doc = if temporary { Document::default() } else { read_document(&file, RUN_HEADER)? };
        let remaining = clean_entries(doc.entries, &mut cleaned);
        if remaining.is_empty() {
            unlink_at(&host.runs, &name, false)?;
        } else {
            let entries: Vec<&Entry> = remaining.iter().collect();
            let text = format_document(RUN_HEADER, &entries);
            file.write_all_at(text.as_bytes(), 0)?;
            file.set_len(text.len() as u64)?;
        }
    }
    cleaned.other_hosts = names_in(&host.hosts)?.iter().filter(|n| n.to_string_lossy() != host.key).count();
    // Kept entries whose object is gone or replaced are dropped (they can never match again).
    let _ = with_kept(host, |kept| {
        let before = kept.len();
        kept.retain(|e| {
            let Ok((dir, name)) = open_parent(&e.path) else { return false };
            stat_at(&dir, &name).is_ok_and(|st| {
                let id = Identity::from_stat(&st);
                id.same_object(&e.identity)
            })
        });
        kept.len() != before
    });
    Ok(cleaned)
}

/// Removes a dead run's entries (files, then directories deepest first); returns those to try
/// again later (removal failed).
fn clean_entries(mut entries: Vec<Entry>, cleaned: &mut Cleaned) -> Vec<Entry> {
    entries.sort_by_key(|e| (e.kind == EntryKind::Dir, std::cmp::Reverse(e.path.as_os_str().len())));
    let mut again = Vec::new();
    for e in entries {
        let outcome = match e.kind {
            EntryKind::File => remove_dead_file(&e),
            EntryKind::Dir => remove_dead_dir(&e, &mut cleaned.removed),
        };
        match outcome {
            Outcome::Removed => cleaned.removed.push(e.path),
            Outcome::Forgotten => cleaned.forgotten.push(e.path),
            Outcome::Left(why) => cleaned.left.push((e.path, why)),
            Outcome::Failed(err) => {
                cleaned.failed.push((e.path.clone(), err));
                again.push(e);
            }
        }
    }
    again
}

pub(super) fn is_type(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

/// Where the path's parent and the object are, or why there is nothing to remove.
fn locate(e: &Entry) -> Result<(File, OsString, libc::stat), Outcome> {
    let gone = |err: &io::Error| matches!(err.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR));
    let (dir, name) = match open_parent(&e.path) {
        Ok(x) => x,
        Err(err) if gone(&err) => return Err(Outcome::Forgotten),
        Err(err) => return Err(Outcome::Failed(err)),
    };
    match stat_at(&dir, &name) {
        Ok(st) if Identity::from_stat(&st).same_object(&e.identity) => Ok((dir, name, st)),
        Ok(_) => Err(Outcome::Forgotten),
        Err(err) if gone(&err) => Err(Outcome::Forgotten),
        Err(err) => Err(Outcome::Failed(err)),
    }
}

/// A dead run's file: removed only with every proof on its descriptor.
fn remove_dead_file(e: &Entry) -> Outcome {
    let (dir, name, st) = match locate(e) {
        Ok(x) => x,
        Err(outcome) => return outcome,
    };
    if !is_type(&st, libc::S_IFREG) {
        return Outcome::Forgotten;
    }
    let file = match open_file_at(&dir, &name, false) {
        Ok(f) => f,
        Err(err) => return Outcome::Failed(err),
    };
    let Ok(meta) = file.metadata() else { return Outcome::Forgotten };
    let now = Identity::from_meta(&meta);
    if !now.same_object(&e.identity) || !meta.is_file() {
        return Outcome::Forgotten;
    }
    if let Some(why) = disowned(e, &meta, read_token(&file)) {
        return Outcome::Left(why);
    }
    unlink_checked(&dir, &name, &now, false)
}

/// Why a dead run's file, still the recorded inode, is not (only) the run's any more.
fn disowned(e: &Entry, meta: &std::fs::Metadata, token: Option<u128>) -> Option<String> {
    let now = Identity::from_meta(meta);
    if meta.uid() != euid() {
        return Some(format!("it is owned by uid {}, not by this user", meta.uid()));
    }
    if !token_agrees(e, token) {
        return Some("it does not carry the token of the run that made it".into());
    }
    let most = e.limit.max(e.identity.size);
    if now.size > most {
        return Some(format!(
            "it grew to {} bytes after its run ended (the run never made it larger than {most}): someone else wrote to it",
            now.size
        ));
    }
    if now.ctime_ns > e.identity.ctime_ns + GRACE_NS {
        let after = (now.ctime_ns - e.identity.ctime_ns) as f64 / 1e9;
        return Some(format!(
            "it changed {after:.1} s after its run last recorded it: someone else may have written to it"
        ));
    }
    if meta.nlink() != 1 {
        return Some(format!("it has {} names (hard links): another one holds it too", meta.nlink()));
    }
    None
}

/// Removes `name` in `dir` if it still is the object `id` (a rename in between leaves it).
pub(super) fn unlink_checked(dir: &File, name: &OsStr, id: &Identity, directory: bool) -> Outcome {
    match stat_at(dir, name) {
        Ok(st) if Identity::from_stat(&st).same_object(id) => {}
        Ok(_) => return Outcome::Forgotten,
        Err(err) if err.raw_os_error() == Some(libc::ENOENT) => return Outcome::Forgotten,
        Err(err) => return Outcome::Failed(err),
    }
    match unlink_at(dir, name, directory) {
        Ok(()) => Outcome::Removed,
        Err(err) if err.raw_os_error() == Some(libc::ENOENT) => Outcome::Forgotten,
        Err(err) if matches!(err.raw_os_error(), Some(libc::ENOTEMPTY) | Some(libc::EEXIST)) => {
            Outcome::Left("something was added to it meanwhile".into())
        }
        Err(err) => Outcome::Failed(err),
    }
}

/// A dead run's scratch directory: proven by inode, owner, mode and token, then emptied of what
/// iolens makes there, one file at a time, and removed if nothing else is left.
fn remove_dead_dir(e: &Entry, removed: &mut Vec<PathBuf>) -> Outcome {
    let (parent, name, st) = match locate(e) {
        Ok(x) => x,
        Err(outcome) => return outcome,
    };
    if !is_type(&st, libc::S_IFDIR) {
        return Outcome::Forgotten;
    }
    let dir = match open_dir_at(&parent, &name) {
        Ok(d) => d,
        Err(err) => return Outcome::Failed(err),
    };
    let Ok(meta) = dir.metadata() else { return Outcome::Forgotten };
    let id = Identity::from_meta(&meta);
    if !id.same_object(&e.identity) {
        return Outcome::Forgotten;
    }
    let token = match e.place {
        TokenPlace::Xattr => read_token(&dir),
        TokenPlace::Marker => marker_token(&dir),
        TokenPlace::None => None,
    };
    if token != Some(e.token) {
        // Inode numbers are reused at once: without the run's token this is another directory.
        return Outcome::Forgotten;
    }
    if meta.uid() != euid() || meta.mode() & 0o022 != 0 {
        return Outcome::Left(format!(
            "it is owned by uid {} with mode {:o}: not the private directory iolens made",
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    scratch::empty_and_remove(&parent, &name, &dir, &e.path, e.place, removed)
}
