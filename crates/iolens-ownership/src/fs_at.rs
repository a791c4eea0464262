//! Directory-relative file operations (`openat`, `fstatat`, `unlinkat`, …): once a directory is
//! open, everything below it is reached through its descriptor, never by a path someone could
//! change between a check and its use.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub fn cstring(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`.
pub fn open_at(dir: &File, name: &OsStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<File> {
    let name = cstring(name)?;
    // SAFETY: valid directory descriptor and C string; the result is a new descriptor we own.
    let fd = check(unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC, mode) })?;
    // SAFETY: fd was just opened and nothing else owns it.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Opens the directory `name` inside `dir`, never following a link.
pub fn open_dir_at(dir: &File, name: &OsStr) -> io::Result<File> {
    open_at(dir, name, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)
}

/// Opens `name` inside `dir` for reading without following a link, blocking on a FIFO or
/// taking a terminal.
pub fn open_file_at(dir: &File, name: &OsStr, write: bool) -> io::Result<File> {
    let access = if write { libc::O_RDWR } else { libc::O_RDONLY };
    open_at(dir, name, access | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY, 0)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub fn stat_at(dir: &File, name: &OsStr) -> io::Result<libc::stat> {
    let name = cstring(name)?;
    // SAFETY: a zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, C string and out-parameter.
    check(unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

pub fn unlink_at(dir: &File, name: &OsStr, remove_dir: bool) -> io::Result<()> {
    let name = cstring(name)?;
    let flags = if remove_dir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: valid descriptor and C string.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

pub fn mkdir_at(dir: &File, name: &OsStr, mode: libc::mode_t) -> io::Result<()> {
    let name = cstring(name)?;
    // SAFETY: valid descriptor and C string.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) }).map(drop)
}

pub fn rename_at(dir: &File, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (from, to) = (cstring(from)?, cstring(to)?);
    // SAFETY: valid descriptor and C strings.
    check(unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) }).map(drop)
}

/// `flock(LOCK_EX | LOCK_NB)`: `Ok(false)` when another open file description holds a lock.
pub fn try_lock(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// `flock(LOCK_EX)`, waiting.
pub fn lock(file: &File) -> io::Result<()> {
    // SAFETY: flock on a descriptor we own.
    check(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) }).map(drop)
}

/// The names in an open directory (read through its descriptor, so the directory read is the
/// one opened, whatever its path now names).
pub fn names_in(dir: &File) -> io::Result<Vec<std::ffi::OsString>> {
    let mut names: Vec<_> = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    names.sort();
    Ok(names)
}

/// The directory holding `path` and the last component's name: what `*_at` calls need. The
/// parent is opened by path (following links): every decision is then taken on the object found
/// through that descriptor.
pub fn open_parent(path: &Path) -> io::Result<(File, std::ffi::OsString)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a path without a final name"))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(parent)?;
    Ok((dir, name.to_os_string()))
}

use std::os::unix::fs::OpenOptionsExt;

/// This process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
