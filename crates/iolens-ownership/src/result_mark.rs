//! The second kind of claim: the mark on the result files a user names (`--json`, `--csv`,
//! `--trace`, …), which says that an existing file at such a path is an earlier result iolens
//! wrote and may be replaced by a new one.
//!
//! Every result is written to a fresh temporary that gets the mark ([`set`]) before it is
//! renamed into place; the attribute travels with the inode through the rename, and `cp` drops
//! it, so a copy of a result is the user's file. Before a result replaces an existing regular
//! file, the file is judged on a descriptor ([`ExistingFile::open`]): opened without following a
//! link or blocking, checked to be the very file (device and inode) whose metadata the caller
//! looked at, and only then asked for its mark and, where the file system keeps no user
//! attributes, for the head of its content. What is judged is the file the caller decided
//! about, never whatever the path names a moment later.
//!
//! **Why the mark is enough to replace a result, and never to remove anything.** A `user.*`
//! attribute can be set only by someone who may write the file (for a regular file: its owner,
//! or anyone its mode lets write it). Whoever planted the mark on a file could therefore already
//! overwrite or truncate it: the mark grants them nothing they lack, and replacing a marked file
//! at a path the user named loses only what its writers chose to lose. Removal is different: the
//! registry removes files in shared places (scratch directories, leftovers of killed runs) that
//! no user named, where a forged mark would turn iolens into a tool for deleting another user's
//! files. That needs the run's own random token, the recorded identity and the lease of the
//! crate root, and the result mark never stands in for them.
//!
//! The rename that replaces a judged file acts on the path, later: no system call renames only
//! over a given inode. Whoever swaps the file in between can write that directory and so could
//! remove the file anyway; judging on the descriptor closes the gap where a file the user cares
//! about would be judged by *another* file's mark.

use std::ffi::CStr;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The extended attribute that marks a file as a result iolens wrote (kept across the rename).
pub const ATTRIBUTE: &CStr = c"user.iolens.output";

/// How many bytes of an unmarked file are read to tell an iolens JSON document.
const HEAD_BYTES: usize = 256;

/// Marks a result file being written (its open temporary) as iolens's, where the file system
/// keeps user attributes; elsewhere nothing can carry the mark and the file stays unmarked.
pub fn set(file: &File) {
    // SAFETY: the name is NUL-terminated, the one-byte value ours; a failure leaves no mark.
    unsafe { libc::fsetxattr(file.as_raw_fd(), ATTRIBUTE.as_ptr(), b"1".as_ptr().cast(), 1, 0) };
}

/// What [`ATTRIBUTE`] says of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Marked,
    /// The file system keeps user attributes, and this file has no mark.
    Unmarked,
    /// The file system keeps no user attributes (or they cannot be read): no file has the mark.
    NotKept,
}

/// The mark of the open file.
pub fn mark_of(file: &File) -> Mark {
    let mut value = [0u8; 8];
    // SAFETY: valid descriptor, NUL-terminated name; the value buffer is ours and its length given.
    let n = unsafe {
        libc::fgetxattr(file.as_raw_fd(), ATTRIBUTE.as_ptr(), value.as_mut_ptr().cast(), value.len())
    };
    if n >= 0 {
        return Mark::Marked;
    }
    match io::Error::last_os_error().raw_os_error() {
        // The attribute is missing (or too long to be ours): the file system has attributes.
        Some(libc::ENODATA) | Some(libc::ERANGE) => Mark::Unmarked,
        _ => Mark::NotKept,
    }
}

/// An existing regular file at a result path, open for judging.
#[derive(Debug)]
pub struct ExistingFile {
    file: File,
    meta: Metadata,
}

/// What opening the file a caller looked at found.
#[derive(Debug)]
pub enum Opened {
    /// The same regular file, open.
    Same(ExistingFile),
    /// The path no longer names that regular file: it is gone, a link now, or another file.
    Changed,
    /// It could not be opened for reading (say, no read permission): neither its mark nor its
    /// content can be read, so nothing shows it is a result.
    Unreadable(io::Error),
}

impl ExistingFile {
    /// Opens the regular file at `path` that `seen` (its metadata, taken without following a
    /// final link) describes: read-only, without following a final link, without blocking (a
    /// FIFO swapped in has no writer) and without becoming a controlling terminal, then checks
    /// on the descriptor that it is still that file (same device and inode, a regular file).
    pub fn open(path: &Path, seen: &Metadata) -> Opened {
        let opened = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
            .open(path);
        let file = match opened {
            Ok(f) => f,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ELOOP)) => {
                return Opened::Changed
            }
            Err(e) => return Opened::Unreadable(e),
        };
        match file.metadata() {
            Ok(meta) if meta.is_file() && meta.dev() == seen.dev() && meta.ino() == seen.ino() => {
                Opened::Same(ExistingFile { file, meta })
            }
            Ok(_) => Opened::Changed,
            Err(e) => Opened::Unreadable(e),
        }
    }

    /// The file's metadata as of opening it (from the descriptor).
    pub fn metadata(&self) -> &Metadata {
        &self.meta
    }

    /// Its mark.
    pub fn mark(&self) -> Mark {
        mark_of(&self.file)
    }

    /// Whether it begins as every iolens JSON document does (an envelope naming the tool):
    /// results written where attributes are not kept, or by an iolens before the mark.
    pub fn holds_iolens_json(&self) -> bool {
        let mut head = [0u8; HEAD_BYTES];
        let Ok(n) = self.file.read_at(&mut head, 0) else { return false };
        let head = String::from_utf8_lossy(&head[..n]);
        let compact: String = head.split_whitespace().collect();
        compact.starts_with("{\"schema_version\":") && compact.contains("\"tool\":{\"name\":\"iolens\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn marked_result(path: &Path) {
        let file = File::create(path).unwrap();
        std::io::Write::write_all(&mut &file, b"{\"schema_version\": 2, \"tool\": {\"name\": \"iolens\"}}")
            .unwrap();
        set(&file);
    }

    fn opened_same(path: &Path, seen: &Metadata) -> ExistingFile {
        match ExistingFile::open(path, seen) {
            Opened::Same(f) => f,
            other => panic!("{}: {other:?}", path.display()),
        }
    }

    #[test]
    fn a_result_is_known_by_its_mark_or_where_none_is_kept_by_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("r.json");
        marked_result(&result);
        let seen = std::fs::symlink_metadata(&result).unwrap();
        let judged = opened_same(&result, &seen);
        assert!(judged.holds_iolens_json());
        assert_ne!(judged.mark(), Mark::Unmarked, "set marks it where attributes are kept");

        let user = dir.path().join("notes.txt");
        std::fs::write(&user, "{\"schema_version\": 2}").unwrap();
        let judged = opened_same(&user, &std::fs::symlink_metadata(&user).unwrap());
        assert!(!judged.holds_iolens_json(), "no envelope naming iolens");
        assert_ne!(judged.mark(), Mark::Marked);
    }

    /// The file judged is the one the caller looked at: a marked result moved to the path, or
    /// a link to one put there, after the caller's look does not vouch for what it looked at.
    #[test]
    fn a_file_swapped_after_the_look_is_not_judged_in_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, "precious\n").unwrap();
        let seen = std::fs::symlink_metadata(&path).unwrap();
        let other = dir.path().join("other.json");
        marked_result(&other);

        std::fs::rename(&path, dir.path().join("moved")).unwrap();
        std::fs::hard_link(&other, &path).unwrap();
        assert!(matches!(ExistingFile::open(&path, &seen), Opened::Changed), "another inode");

        std::fs::remove_file(&path).unwrap();
        symlink(&other, &path).unwrap();
        assert!(matches!(ExistingFile::open(&path, &seen), Opened::Changed), "a link, not followed");

        std::fs::remove_file(&path).unwrap();
        assert!(matches!(ExistingFile::open(&path, &seen), Opened::Changed), "gone");
    }

    /// A FIFO put at the path is opened without waiting for a writer, and is not the file seen.
    #[test]
    fn a_fifo_swapped_in_is_never_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, "").unwrap();
        let seen = std::fs::symlink_metadata(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert!(matches!(ExistingFile::open(&path, &seen), Opened::Changed));
    }
}
