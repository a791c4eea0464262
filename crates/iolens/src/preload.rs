//! The preload library `iolens trace` loads into the traced program: `IOLENS_PRELOAD` when set,
//! else the copy built into this binary, written out on first use to a private cache directory.
//!
//! The written copy is found by the hash of its contents, so binaries of different versions
//! share the directory without mixing libraries, and nothing is trusted that it did not check:
//! the directory must be a real directory owned by the user with no access for others, the
//! file is created under an unpredictable name with O_EXCL (tempfile) before it is renamed into
//! place, and an existing copy is used only when its contents hash to the expected value.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The library, built by build.rs with this binary's profile.
static EMBEDDED: &[u8] = include_bytes!(env!("IOLENS_PRELOAD_EMBEDDED"));

/// The preload library's path: `IOLENS_PRELOAD`, or the embedded copy, written out if needed.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("IOLENS_PRELOAD") {
        return Ok(PathBuf::from(path));
    }
    let dir = cache_dir().ok_or(
        "no cache directory for the preload library: neither XDG_CACHE_HOME nor HOME is set\n  \
         hint: set HOME, or IOLENS_PRELOAD to a libiolens_preload.so",
    )?;
    let path = write_out(&dir, EMBEDDED).map_err(|e| {
        format!("{e}\n  hint: set XDG_CACHE_HOME to a directory of yours (HOME may be another user's after su or setpriv)")
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

/// `$XDG_CACHE_HOME/iolens`; else for root `/var/cache/iolens` (root's home is closed to the
/// users a traced program may switch to, whose loader must still read the library); else
/// `~/.cache/iolens`. The user's, never a shared /tmp name.
fn cache_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .map(|cache| cache.join("iolens"))
        .or_else(|| root.then(|| PathBuf::from("/var/cache/iolens")))
        .or_else(|| {
            std::env::var_os("HOME").and_then(absolute).map(|home| home.join(".cache").join("iolens"))
        })
}

/// Makes sure `dir` holds a copy of `library` and returns its path.
pub fn write_out(dir: &Path, library: &[u8]) -> Result<PathBuf, String> {
    private_dir(dir)?;
    let hash = xxhash_rust::xxh3::xxh3_128(library);
    let path = dir.join(format!("libiolens_preload-{hash:032x}.so"));
    if fs::read(&path).is_ok_and(|existing| xxhash_rust::xxh3::xxh3_128(&existing) == hash) {
        return Ok(path);
    }
    let failed = |e: std::io::Error| format!("cannot write the preload library into {}: {e}", dir.display());
    let mut temporary = tempfile::Builder::new().prefix(".preload-").tempfile_in(dir).map_err(failed)?;
    temporary.write_all(library).map_err(failed)?;
    temporary.as_file().set_permissions(fs::Permissions::from_mode(0o555)).map_err(failed)?;
    temporary.as_file().sync_all().map_err(failed)?;
    // Rename replaces a damaged copy atomically; a concurrent iolens writes the same bytes.
    temporary.persist(&path).map_err(|e| failed(e.error))?;
    let written = fs::read(&path).map_err(failed)?;
    if xxhash_rust::xxh3::xxh3_128(&written) != hash {
        return Err(format!("{}: the preload library written there reads back different", path.display()));
    }
    Ok(path)
}

/// Creates `dir` (0755: others may read the library, as their loader must after a traced
/// program changes user) if needed, and refuses one that others could write into or that is
/// not ours: a library loaded into every traced program must not be replaceable by them.
fn private_dir(dir: &Path) -> Result<(), String> {
    match fs::DirBuilder::new().recursive(true).mode(0o755).create(dir) {
        Ok(()) => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let meta = fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is not a directory of this user that only it can write (a symlink, another owner, or \
             write access for others): the preload library is not written there\n  hint: chmod 755 it, or \
             set XDG_CACHE_HOME",
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(error.contains("that only it can write"), "{error}");
        assert_eq!(fs::read_dir(&open).unwrap().count(), 0, "nothing written into it");

        let private = root.path().join("private");
        fs::create_dir(&private).unwrap();
        fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        assert!(write_out(&link, b"lib").unwrap_err().contains("that only it can write"));
    }

    #[test]
    fn the_embedded_library_is_a_shared_object() {
        assert!(EMBEDDED.starts_with(b"\x7fELF"), "build.rs embedded something else");
    }
}
