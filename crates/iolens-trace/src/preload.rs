//! The preload library `iolens trace` loads into the traced program: `IOLENS_PRELOAD` when set,
//! else the copy built into this binary, written out on first use to a cache directory.
//!
//! The loader opens the library by path, after iolens has checked it: nothing on that path may
//! be changeable by anyone but this user or root, or the library checked is not the one loaded
//! (an unprivileged user who owns a directory on the way could swap it in between — with
//! `sudo -E` root would then run the user's code). So the directory is reached through a trusted
//! walk ([`iolens_ownership::trusted`]): every component owned by this user or root and
//! writable by no one else (unless sticky), the last one this user's. A directory that fails is
//! refused — for root, `XDG_CACHE_HOME` under the user's home falls back to `/var/cache/iolens`.
//! The library itself is checked on its descriptor: a regular file of this user with one link,
//! writable by no one else, whose contents hash to the embedded library's. It is written under
//! an unpredictable `O_EXCL` name and renamed into place, through the directory's descriptor.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use iolens_ownership::fs_at::{euid, open_at, open_file_at, rename_at, unlink_at};
use iolens_ownership::trusted::{open_trusted_dir, open_trusted_dir_to_read};

/// The library, built by build.rs with this binary's profile.
static EMBEDDED: &[u8] = include_bytes!(env!("IOLENS_PRELOAD_EMBEDDED"));

/// The preload library's path: `IOLENS_PRELOAD` (checked as the written copy is), or the
/// embedded copy, written out if needed.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("IOLENS_PRELOAD") {
        return check_given(Path::new(&path));
    }
    let path = cache_dirs()
        .into_iter()
        .map(|dir| write_out(&dir, EMBEDDED))
        .reduce(|first, next| first.or_else(|why| next.map_err(|e| format!("{why}\n  and {e}"))))
        .unwrap_or_else(|| {
            Err("no cache directory for the preload library: neither XDG_CACHE_HOME nor HOME is set".into())
        })
        .map_err(|e| {
            format!(
                "{e}\n  hint: set XDG_CACHE_HOME to a directory of yours that only you can write (HOME may be \
                 another user's after su, sudo -E or setpriv), or IOLENS_PRELOAD to a libiolens_preload.so"
            )
        })?;
    // The dynamic loader splits LD_PRELOAD at spaces and colons.
    if path.to_string_lossy().contains([' ', ':']) {
        return Err(format!(
            "{}: LD_PRELOAD cannot hold a path with spaces or colons\n  hint: set XDG_CACHE_HOME to a \
             directory without them, or IOLENS_PRELOAD to a copy of the library",
            path.display()
        ));
    }
    Ok(path)
}

/// `$XDG_CACHE_HOME/iolens`, then for root `/var/cache/iolens` (root's home is closed to the
/// users a traced program may switch to, whose loader must still read the library), else
/// `~/.cache/iolens`: tried in this order, the first trusted one is used.
fn cache_dirs() -> Vec<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let xdg = std::env::var_os("XDG_CACHE_HOME").and_then(absolute).map(|cache| cache.join("iolens"));
    let home = std::env::var_os("HOME").and_then(absolute).map(|home| home.join(".cache").join("iolens"));
    let fallback = if root { Some(PathBuf::from("/var/cache/iolens")) } else { home };
    xdg.into_iter().chain(fallback).collect()
}

/// A library the user named: used only where root (or this user) could be sure of loading what
/// was named — every directory on its path trusted, the file this user's or root's, writable by
/// no one else.
fn check_given(path: &Path) -> Result<PathBuf, String> {
    let refuse = |why: String| {
        format!(
            "IOLENS_PRELOAD={}: {why}\n  hint: unset IOLENS_PRELOAD to use the library built into iolens",
            path.display()
        )
    };
    let path = std::path::absolute(path).map_err(|e| refuse(e.to_string()))?;
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(refuse("not a file".into()));
    };
    let dir = open_trusted_dir_to_read(parent).map_err(|e| refuse(e.0))?;
    let file = open_file_at(&dir.dir, name, false).map_err(|e| refuse(format!("cannot open it: {e}")))?;
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() || (meta.uid() != euid() && meta.uid() != 0) || meta.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "not a regular file of this user or root that no one else can write (uid {}, mode {:o})",
            meta.uid(),
            meta.mode() & 0o7777
        )));
    }
    Ok(path)
}

/// Makes sure the trusted directory `dir` holds a copy of `library` and returns its path.
pub fn write_out(dir: &Path, library: &[u8]) -> Result<PathBuf, String> {
    let trusted = open_trusted_dir(dir, Some(0o755))
        .map_err(|e| format!("the preload library is not written into {}: {e}", dir.display()))?;
    let hash = xxhash_rust::xxh3::xxh3_128(library);
    let name = format!("libiolens_preload-{hash:032x}.so");
    let path = trusted.path.join(&name);
    if intact(&trusted.dir, OsStr::new(&name), hash) {
        return Ok(path);
    }
    let failed = |e: std::io::Error| format!("cannot write the preload library into {}: {e}", dir.display());
    let temporary = format!(".preload-{:032x}", rand::random::<u128>());
    let mut file = open_at(
        &trusted.dir,
        OsStr::new(&temporary),
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
        0o600,
    )
    .map_err(failed)?;
    let written = file
        .write_all(library)
        .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(0o555)))
        .and_then(|()| file.sync_all())
        .and_then(|()| rename_at(&trusted.dir, OsStr::new(&temporary), OsStr::new(&name)));
    if let Err(e) = written {
        let _ = unlink_at(&trusted.dir, OsStr::new(&temporary), false);
        return Err(failed(e));
    }
    // Rename replaced a damaged copy atomically; a concurrent iolens writes the same bytes.
    if !intact(&trusted.dir, OsStr::new(&name), hash) {
        return Err(format!("{}: the preload library written there reads back different", path.display()));
    }
    Ok(path)
}

/// Whether `name` in `dir` is the library: checked on its descriptor.
fn intact(dir: &File, name: &OsStr, hash: u128) -> bool {
    let Ok(mut file) = open_file_at(dir, name, false) else { return false };
    let Ok(meta) = file.metadata() else { return false };
    if !meta.is_file() || meta.uid() != euid() || meta.mode() & 0o022 != 0 || meta.nlink() != 1 {
        return false;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes).is_ok() && xxhash_rust::xxh3::xxh3_128(&bytes) == hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn scratch() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn writes_a_private_copy_once_and_reuses_it() {
        let root = scratch();
        let dir = root.path().join("cache/iolens");
        let path = write_out(&dir, b"library v1").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"library v1");
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o755);
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o555);
        let modified = fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(write_out(&dir, b"library v1").unwrap(), path);
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), modified, "an intact copy is kept");
        let other = write_out(&dir, b"library v2").unwrap();
        assert_ne!(other, path, "another build gets its own file");
        let names: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
    }

    #[test]
    fn a_damaged_copy_is_replaced() {
        let root = scratch();
        let dir = root.path().join("iolens");
        let path = write_out(&dir, b"the real library").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&path, b"truncat").unwrap();
        assert_eq!(write_out(&dir, b"the real library").unwrap(), path);
        assert_eq!(fs::read(&path).unwrap(), b"the real library");
    }

    #[test]
    fn refuses_directories_others_can_write_or_symlinks() {
        let root = scratch();
        let open = root.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let error = write_out(&open, b"lib").unwrap_err();
        assert!(error.contains("another user could replace"), "{error}");
        assert_eq!(fs::read_dir(&open).unwrap().count(), 0, "nothing written into it");

        // A link is followed only where no one else can change it (this user's, in a trusted
        // directory), and never into a directory others can write.
        let private = root.path().join("private");
        fs::create_dir(&private).unwrap();
        fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        assert!(write_out(&link, b"lib").is_ok());
        let to_open = root.path().join("to-open");
        std::os::unix::fs::symlink(&open, &to_open).unwrap();
        assert!(write_out(&to_open, b"lib").unwrap_err().contains("another user could replace"));
    }

    /// `sudo -E` keeps a user's XDG_CACHE_HOME: a directory that user owns on the way would let
    /// them swap the library between root's check and the loader's open.
    #[test]
    fn a_directory_another_user_controls_on_the_way_is_refused() {
        let root = scratch();
        let theirs = root.path().join("home");
        fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        if euid() != 0 {
            return; // chown above needed root; as a user every foreign directory is refused alike
        }
        let error = write_out(&theirs.join(".cache/iolens"), b"lib").unwrap_err();
        assert!(error.contains("uid 65534"), "{error}");
        assert!(!theirs.join(".cache").exists(), "nothing created below it");
        // A library named by IOLENS_PRELOAD there is refused too, as is one others can write.
        fs::write(theirs.join("lib.so"), b"lib").unwrap();
        assert!(check_given(&theirs.join("lib.so")).unwrap_err().contains("uid 65534"));
        let writable = root.path().join("lib.so");
        fs::write(&writable, b"lib").unwrap();
        fs::set_permissions(&writable, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(check_given(&writable).unwrap_err().contains("no one else can write"));
        fs::set_permissions(&writable, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(check_given(&writable).unwrap(), writable);
    }

    #[test]
    fn the_embedded_library_is_a_shared_object() {
        assert!(EMBEDDED.starts_with(b"\x7fELF"), "build.rs embedded something else");
    }
}
