//! What iolens owns: a registry of the files and scratch directories it created, each with the
//! identity it had when iolens last touched it.
//!
//! An extended attribute alone cannot prove ownership: any user may set one, and `cp -a` or
//! `rsync -X` copy it. The registry lives where only the user running iolens can write
//! (`$IOLENS_STATE_DIR`, else `$XDG_STATE_HOME/iolens`, else `~/.local/state/iolens`; directory
//! 0700, file 0600) and records, per entry, device, inode, size, mtime and ctime, plus a random
//! token also stored in the file's `user.iolens` attribute. A file is iolens's only while an
//! open descriptor of it (`fstat`, never the path) matches an entry exactly: a copy has another
//! inode, and content written by anyone else changes mtime and ctime, which no user can set
//! back (ctime cannot be set at all). Entries are checked and updated under `flock`, so
//! concurrent runs do not lose each other's records.
//!
//! Entries of a run still going carry the run's process id and start time. When that process is
//! gone (killed with SIGKILL, say), the entry marks a leftover that [`clean_leftovers`] removes —
//! after checking the object at the path is still the one recorded. A directory's times change
//! with its content and inode numbers are reused at once, so a leftover directory must also
//! carry the run's token (attribute, or a marker file inside where attributes are not kept).

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

const OWNER_XATTR: &str = "user.iolens";
const REGISTRY_FILE: &str = "owned";
/// A registry larger than this is not read: entries past it are treated as absent (so the
/// objects count as foreign — the safe side).
const MAX_REGISTRY_BYTES: u64 = 16 << 20;
const FORMAT: &str = "iolens-owned-v1";

/// Whether an entry is a file target or a scratch directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
}

/// The identity of an object as `fstat` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl Identity {
    pub fn of(file: &File) -> io::Result<Identity> {
        Ok(Identity::from_meta(&file.metadata()?))
    }

    pub fn from_meta(m: &std::fs::Metadata) -> Identity {
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        }
    }

    fn same_object(&self, other: &Identity) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// The process that holds an entry while its run goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// Start time of the process in clock ticks since boot (`/proc/PID/stat` field 22), so a
    /// recycled pid is not taken for the run that made the entry.
    pub start: u64,
}

impl Holder {
    pub fn current() -> Holder {
        let pid = std::process::id();
        Holder { pid, start: process_start(pid).unwrap_or(0) }
    }

    pub fn alive(&self) -> bool {
        process_start(self.pid) == Some(self.start)
    }
}

fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// One owned object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// `Some` while the run that made it goes on (or was killed): a leftover if not alive.
    pub holder: Option<Holder>,
    pub token: u128,
    pub identity: Identity,
    /// Bytes from offset 0 holding laid-out (incompressible) data.
    pub laid_out: u64,
    pub path: PathBuf,
}

impl Entry {
    fn to_line(&self) -> String {
        let kind = match self.kind {
            EntryKind::File => "f",
            EntryKind::Dir => "d",
        };
        let (pid, start) = self.holder.map_or((0, 0), |h| (h.pid, h.start));
        let id = &self.identity;
        format!(
            "{kind} {pid} {start} {:032x} {} {} {} {} {} {} {}",
            self.token,
            id.dev,
            id.ino,
            id.size,
            id.mtime_ns,
            id.ctime_ns,
            self.laid_out,
            hex(self.path.as_os_str().as_bytes())
        )
    }

    fn from_line(line: &str) -> Option<Entry> {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() != 11 {
            return None;
        }
        let kind = match f[0] {
            "f" => EntryKind::File,
            "d" => EntryKind::Dir,
            _ => return None,
        };
        let pid: u32 = f[1].parse().ok()?;
        let start: u64 = f[2].parse().ok()?;
        Some(Entry {
            kind,
            holder: (pid != 0).then_some(Holder { pid, start }),
            token: u128::from_str_radix(f[3], 16).ok()?,
            identity: Identity {
                dev: f[4].parse().ok()?,
                ino: f[5].parse().ok()?,
                size: f[6].parse().ok()?,
                mtime_ns: f[7].parse().ok()?,
                ctime_ns: f[8].parse().ok()?,
            },
            laid_out: f[9].parse().ok()?,
            path: PathBuf::from(std::ffi::OsStr::from_bytes(&unhex(f[10])?)),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// The registry's directory, or `None` where no private place for it can be named (no HOME):
/// then nothing counts as owned beyond the run that creates it.
pub fn state_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = nonempty("IOLENS_STATE_DIR") {
        return Some(d);
    }
    if let Some(d) = nonempty("XDG_STATE_HOME").filter(|d| d.is_absolute()) {
        return Some(d.join("iolens"));
    }
    nonempty("HOME").filter(|d| d.is_absolute()).map(|h| h.join(".local/state/iolens"))
}

/// The registry, locked for the lifetime of this value.
pub struct Registry {
    dir: PathBuf,
    /// Holds the `flock` for as long as the registry is open.
    _lock: File,
    pub entries: Vec<Entry>,
}

fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} must be a directory owned by uid {uid} and writable only by it to hold iolens's registry",
                dir.display()
            ),
        ));
    }
    Ok(())
}

impl Registry {
    /// Opens and locks the registry; `Ok(None)` where there is no state directory.
    pub fn open() -> io::Result<Option<Registry>> {
        let Some(dir) = state_dir() else { return Ok(None) };
        Registry::open_in(&dir).map(Some)
    }

    pub fn open_in(dir: &Path) -> io::Result<Registry> {
        private_dir(dir)?;
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir.join("lock"))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut entries = Vec::new();
        match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(dir.join(REGISTRY_FILE))
        {
            Ok(f) if f.metadata()?.is_file() => {
                let mut text = String::new();
                f.take(MAX_REGISTRY_BYTES).read_to_string(&mut text).ok();
                let mut lines = text.lines();
                if lines.next() == Some(FORMAT) {
                    entries.extend(lines.filter_map(Entry::from_line));
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        Ok(Registry { dir: dir.to_path_buf(), _lock: lock, entries })
    }

    /// Writes the entries back (atomically: a fresh temp file renamed over the old one).
    pub fn save(&self) -> io::Result<()> {
        let mut tmp = tempfile::Builder::new().prefix(".owned.").tempfile_in(&self.dir)?;
        let mut text = String::with_capacity(64 + 128 * self.entries.len());
        text.push_str(FORMAT);
        text.push('\n');
        for e in &self.entries {
            text.push_str(&e.to_line());
            text.push('\n');
        }
        tmp.write_all(text.as_bytes())?;
        tmp.as_file().sync_data()?;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o600))?;
        tmp.persist(self.dir.join(REGISTRY_FILE)).map_err(|e| e.error)?;
        Ok(())
    }

    /// The entry matching the open object exactly (inode, size, times, token), if any.
    pub fn owned(&self, file: &File) -> Option<&Entry> {
        let id = Identity::of(file).ok()?;
        let token = read_token(file);
        self.entries.iter().find(|e| e.identity == id && token.is_none_or(|t| t == e.token))
    }

    /// Adds or replaces the entry of the object behind `file`.
    pub fn record(
        &mut self,
        file: &File,
        path: &Path,
        kind: EntryKind,
        holder: Option<Holder>,
        laid_out: u64,
    ) {
        let Ok(identity) = Identity::of(file) else { return };
        let token = read_token(file).unwrap_or_else(|| {
            let t = rand::random::<u128>();
            write_token(file, t);
            t
        });
        // Setting the token changed ctime: take the identity after it.
        let identity = Identity::of(file).unwrap_or(identity);
        self.entries.retain(|e| !e.identity.same_object(&identity));
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.entries.push(Entry { kind, holder, token, identity, laid_out, path });
    }

    /// Adds or replaces the entry of a directory. A directory that may be cleaned up as a
    /// leftover (it has a holder) gets a token: in its `user.iolens` attribute, or where the file
    /// system keeps no user attributes, in a marker file inside it.
    pub fn record_dir(&mut self, dir: &File, path: &Path, holder: Option<Holder>) {
        let Ok(identity) = Identity::of(dir) else { return };
        let token = match holder {
            Some(_) => dir_token(dir).unwrap_or_else(|| {
                let t = rand::random::<u128>();
                write_dir_token(dir, t);
                t
            }),
            None => 0,
        };
        self.entries.retain(|e| !e.identity.same_object(&identity));
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.entries.push(Entry { kind: EntryKind::Dir, holder, token, identity, laid_out: 0, path });
    }

    /// The holder of the entry for the object with this identity.
    pub fn holder_of(&self, identity: &Identity) -> Option<Holder> {
        self.entries.iter().find(|e| e.identity.same_object(identity)).and_then(|e| e.holder)
    }

    /// Drops the entry of the object with this identity.
    pub fn forget(&mut self, identity: &Identity) {
        self.entries.retain(|e| !e.identity.same_object(identity));
    }
}

fn read_token(file: &File) -> Option<u128> {
    let name = CString::new(OWNER_XATTR).ok()?;
    let mut buf = [0u8; 64];
    // SAFETY: valid fd, C string and buffer of the given length.
    let n = unsafe { libc::fgetxattr(file.as_raw_fd(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return None;
    }
    let text = std::str::from_utf8(&buf[..n as usize]).ok()?;
    u128::from_str_radix(text.strip_prefix("iolens token=")?.trim(), 16).ok()
}

/// File systems without user xattrs keep no token: the registry's identity alone then decides.
fn write_token(file: &File, token: u128) {
    let Ok(name) = CString::new(OWNER_XATTR) else { return };
    let value = format!("iolens token={token:032x}");
    // SAFETY: valid fd, C string and buffer.
    unsafe { libc::fsetxattr(file.as_raw_fd(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
}

/// Name of the marker holding a directory's token where user attributes are not kept.
const DIR_MARKER: &str = ".iolens-owner";

/// The token of a directory: its attribute, else its marker file (a regular file, read without
/// following links or blocking).
fn dir_token(dir: &File) -> Option<u128> {
    if let Some(t) = read_token(dir) {
        return Some(t);
    }
    let name = CString::new(DIR_MARKER).ok()?;
    // SAFETY: valid directory fd and C string.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd was just opened and is owned here alone.
    let marker = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    if !marker.metadata().ok()?.is_file() {
        return None;
    }
    let mut buf = [0u8; 64];
    let n = (&marker).read(&mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    u128::from_str_radix(text.strip_prefix("iolens token=")?.trim(), 16).ok()
}

/// Stores a directory's token in its attribute, or, where that does not stick, in a new marker
/// file (never one that already exists).
fn write_dir_token(dir: &File, token: u128) {
    write_token(dir, token);
    if read_token(dir) != Some(token) {
        write_marker(dir, token);
    }
}

fn write_marker(dir: &File, token: u128) {
    let Ok(name) = CString::new(DIR_MARKER) else { return };
    // SAFETY: valid directory fd and C string.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd >= 0 {
        // SAFETY: fd was just opened and is owned here alone.
        let mut marker = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let _ = marker.write_all(format!("iolens token={token:032x}\n").as_bytes());
    }
}

/// What [`clean_leftovers`] did.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub removed: Vec<PathBuf>,
    /// Entries dropped without removing anything: the object at the path is not the one recorded.
    pub forgotten: Vec<PathBuf>,
    pub failed: Vec<(PathBuf, io::Error)>,
}

/// Removes what runs that no longer exist left behind (files and scratch directories whose
/// holder is dead), after checking that each path still holds the very object recorded.
pub fn clean_leftovers() -> io::Result<Cleaned> {
    let mut cleaned = Cleaned::default();
    let Some(mut reg) = Registry::open()? else { return Ok(cleaned) };
    let mut keep = Vec::with_capacity(reg.entries.len());
    for e in std::mem::take(&mut reg.entries) {
        match e.holder {
            Some(h) if !h.alive() => match remove_if_same(&e) {
                Ok(true) => cleaned.removed.push(e.path),
                Ok(false) => cleaned.forgotten.push(e.path),
                Err(err) => {
                    cleaned.failed.push((e.path.clone(), err));
                    keep.push(e);
                }
            },
            _ => keep.push(e),
        }
    }
    reg.entries = keep;
    if !cleaned.removed.is_empty() || !cleaned.forgotten.is_empty() {
        reg.save()?;
    }
    Ok(cleaned)
}

/// Removes the object at `e.path` if it is still the recorded one (same device and inode, and
/// the token: for files where one is kept, for directories always — a directory's times change
/// with its content, so device and inode alone would also match a newcomer reusing the inode).
/// Returns whether something was removed.
fn remove_if_same(e: &Entry) -> io::Result<bool> {
    if e.kind == EntryKind::Dir {
        let dir = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&e.path)
        {
            Ok(d) => d,
            Err(err) if matches!(err.raw_os_error(), Some(libc::ENOENT | libc::ELOOP | libc::ENOTDIR)) => {
                return Ok(false)
            }
            Err(err) => return Err(err),
        };
        let recorded = Identity::of(&dir).is_ok_and(|id| id.same_object(&e.identity));
        if !recorded || e.token == 0 || dir_token(&dir) != Some(e.token) {
            return Ok(false);
        }
    }
    if e.kind == EntryKind::File {
        // Nothing but the recorded regular file is ever opened (an open may act on a device).
        let recorded = std::fs::symlink_metadata(&e.path)
            .is_ok_and(|m| m.is_file() && Identity::from_meta(&m).same_object(&e.identity));
        if !recorded || read_token(&open_nofollow(&e.path, false)?).is_some_and(|t| t != e.token) {
            return Ok(false);
        }
    }
    remove_if_same_object(&e.path, &e.identity, e.kind)
}

/// Removes what `path` names — a regular file or a directory tree, as `kind` says — only if it
/// is the object `id` (same device and inode), checked on the path itself without following
/// it. The one place iolens deletes anything it made. Returns whether something was removed.
pub fn remove_if_same_object(path: &Path, id: &Identity, kind: EntryKind) -> io::Result<bool> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    };
    if !Identity::from_meta(&meta).same_object(id) {
        return Ok(false);
    }
    let removed = match kind {
        // remove_dir_all never follows symbolic links inside the tree.
        EntryKind::Dir if meta.is_dir() => std::fs::remove_dir_all(path),
        EntryKind::File if meta.is_file() => std::fs::remove_file(path),
        _ => return Ok(false),
    };
    match removed {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
    }
}

/// Opens `path` without following a final symbolic link and without blocking on a FIFO.
pub fn open_nofollow(path: &Path, write: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// Removes `path` only if it is a regular file the registry says iolens owns. Never follows or
/// removes anything else.
pub fn remove_owned_file(path: &Path) -> io::Result<bool> {
    let f = match open_nofollow(path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(false),
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Ok(false);
    }
    let id = Identity::from_meta(&meta);
    let mut reg = Registry::open().ok().flatten();
    let ours = reg
        .as_ref()
        .is_some_and(|r| r.entries.iter().any(|e| e.identity.same_object(&id) && e.kind == EntryKind::File));
    // The path must still name the object checked.
    if !ours || !remove_if_same_object(path, &id, EntryKind::File)? {
        return Ok(false);
    }
    if let Some(r) = reg.as_mut() {
        r.forget(&id);
        let _ = r.save();
    }
    Ok(true)
}

/// A scratch directory of iolens's own: created with a random name (`mkdtemp`, never a name
/// another user could squat), mode 0700, registered with this process as holder so that a
/// killed run's directory is found and removed later ([`clean_leftovers`]); removed on drop
/// unless kept.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    identity: Option<Identity>,
    /// Held open so the inode cannot be freed and handed to another directory at this path
    /// while the run goes on: the identity check on drop then cannot match a newcomer.
    _pinned: File,
    keep: bool,
}

impl ScratchDir {
    /// Creates `BASE/PREFIXxxxxxx`.
    pub fn create(base: &Path, prefix: &str, keep: bool) -> io::Result<ScratchDir> {
        let path = tempfile::Builder::new()
            .prefix(prefix)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(base)?
            .keep();
        let dir = File::open(&path)?;
        let identity = Identity::of(&dir).ok();
        if let Ok(Some(mut reg)) = Registry::open() {
            // Kept directories are the user's to remove: no holder, so never cleaned as leftovers.
            let holder = (!keep).then(Holder::current);
            reg.record_dir(&dir, &path, holder);
            let _ = reg.save();
        }
        Ok(ScratchDir { path, identity, _pinned: dir, keep })
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
        let Some(id) = self.identity else { return };
        let _ = remove_if_same_object(&self.path, &id, EntryKind::Dir);
        if let Ok(Some(mut reg)) = Registry::open() {
            reg.forget(&id);
            let _ = reg.save();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_lines() {
        let e = Entry {
            kind: EntryKind::File,
            holder: Some(Holder { pid: 42, start: 7 }),
            token: 0xdead_beef,
            identity: Identity { dev: 1, ino: 2, size: 3, mtime_ns: -4, ctime_ns: 5 },
            laid_out: 6,
            path: PathBuf::from("/tmp/a b\nc"),
        };
        assert_eq!(Entry::from_line(&e.to_line()), Some(e));
        assert_eq!(Entry::from_line("f 1 2 zz 1 2 3 4 5 6 0"), None);
        assert_eq!(Entry::from_line(""), None);
    }

    #[test]
    fn a_copy_or_a_changed_file_is_not_owned() {
        let state = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let path = data.path().join("f.dat");
        std::fs::write(&path, b"ours").unwrap();
        let f = File::open(&path).unwrap();
        {
            let mut reg = Registry::open_in(state.path()).unwrap();
            reg.record(&f, &path, EntryKind::File, None, 4);
            reg.save().unwrap();
        }
        let reg = Registry::open_in(state.path()).unwrap();
        assert!(reg.owned(&File::open(&path).unwrap()).is_some());
        drop(reg);

        // A copy carrying the attribute is another inode.
        let copy = data.path().join("copy.dat");
        std::fs::copy(&path, &copy).unwrap();
        if let Some(t) = read_token(&f) {
            write_token(&File::open(&copy).unwrap(), t);
        }
        let reg = Registry::open_in(state.path()).unwrap();
        assert!(reg.owned(&File::open(&copy).unwrap()).is_none());
        drop(reg);

        // Content written by someone else changes the identity.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, b"user data").unwrap();
        let reg = Registry::open_in(state.path()).unwrap();
        assert!(reg.owned(&File::open(&path).unwrap()).is_none());
    }

    #[test]
    fn leftovers_of_dead_runs_are_removed_and_nothing_else() {
        let state = tempfile::tempdir().unwrap();
        let base = tempfile::tempdir().unwrap();
        // SAFETY: tests in this module that read IOLENS_STATE_DIR run only here.
        unsafe { std::env::set_var("IOLENS_STATE_DIR", state.path()) };
        let dead = Holder { pid: std::process::id(), start: Holder::current().start + 1 };
        let leftover = base.path().join("iolens-quick-dead");
        std::fs::create_dir(&leftover).unwrap();
        std::fs::write(leftover.join("f"), b"x").unwrap();
        let replaced = base.path().join("iolens-quick-replaced");
        std::fs::create_dir(&replaced).unwrap();
        let live = ScratchDir::create(base.path(), "iolens-quick-", false).unwrap();
        {
            let mut reg = Registry::open().unwrap().unwrap();
            reg.record_dir(&File::open(&leftover).unwrap(), &leftover, Some(dead));
            reg.record_dir(&File::open(&replaced).unwrap(), &replaced, Some(dead));
            reg.save().unwrap();
        }
        // Someone else's directory now stands where the recorded one was.
        std::fs::remove_dir(&replaced).unwrap();
        std::fs::create_dir(&replaced).unwrap();
        let cleaned = clean_leftovers().unwrap();
        assert_eq!(cleaned.removed, vec![leftover.clone()]);
        assert_eq!(cleaned.forgotten, vec![replaced.clone()]);
        assert!(!leftover.exists() && replaced.is_dir() && live.path().is_dir());
        let path = live.path().to_path_buf();
        drop(live);
        assert!(!path.exists());
        assert!(Registry::open().unwrap().unwrap().entries.is_empty());
        unsafe { std::env::remove_var("IOLENS_STATE_DIR") };
    }

    /// Inode numbers are reused at once on ext4 and tmpfs, and directory times are coarse: a
    /// directory that took a dead run's place can match its recorded device, inode and times.
    /// Only the run's token tells them apart.
    #[test]
    fn a_directory_reusing_a_leftovers_inode_is_not_removed() {
        let state = tempfile::tempdir().unwrap();
        let base = tempfile::tempdir().unwrap();
        let dead = Holder { pid: std::process::id(), start: Holder::current().start + 1 };
        let ours = base.path().join("iolens-quick-ours");
        std::fs::create_dir(&ours).unwrap();
        let theirs = base.path().join("iolens-quick-theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join("precious"), b"user data").unwrap();
        let mut reg = Registry::open_in(state.path()).unwrap();
        reg.record_dir(&File::open(&ours).unwrap(), &ours, Some(dead));
        // As if `theirs` had been made in our directory's place and got its inode and times.
        let mut entry = reg.entries.pop().unwrap();
        entry.identity = Identity::of(&File::open(&theirs).unwrap()).unwrap();
        entry.path = theirs.clone();
        drop(reg);
        assert!(!remove_if_same(&entry).unwrap());
        assert!(theirs.join("precious").is_file());
        // The recorded directory itself, token and all, is removed.
        let mut reg = Registry::open_in(state.path()).unwrap();
        reg.record_dir(&File::open(&ours).unwrap(), &ours, Some(dead));
        let entry = reg.entries.pop().unwrap();
        assert!(remove_if_same(&entry).unwrap());
        assert!(!ours.exists());
    }

    /// A registry written before directories carried tokens: its directory entries cannot be
    /// told from a newcomer, so they are forgotten rather than removed.
    #[test]
    fn a_directory_entry_without_token_is_never_removed() {
        let base = tempfile::tempdir().unwrap();
        let old = base.path().join("iolens-quick-old");
        std::fs::create_dir(&old).unwrap();
        let entry = Entry {
            kind: EntryKind::Dir,
            holder: None,
            token: 0,
            identity: Identity::of(&File::open(&old).unwrap()).unwrap(),
            laid_out: 0,
            path: old.clone(),
        };
        assert!(!remove_if_same(&entry).unwrap());
        assert!(old.is_dir());
    }

    /// Where user attributes are not kept (tmpfs before Linux 6.6, some NFS), the marker file
    /// holds the token; a link or FIFO in its place is neither followed nor waited on.
    #[test]
    fn the_marker_holds_a_directorys_token_and_nothing_planted_counts() {
        let base = tempfile::tempdir().unwrap();
        let dir = File::open(base.path()).unwrap();
        assert_eq!(dir_token(&dir), None);
        write_marker(&dir, 0x1234);
        assert_eq!(dir_token(&dir), Some(0x1234));
        // An existing marker is never overwritten.
        write_marker(&dir, 0x5678);
        assert_eq!(dir_token(&dir), Some(0x1234));

        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("token"), "iolens token=00000000000000000000000000001234")
            .unwrap();
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("token"), linked.path().join(DIR_MARKER)).unwrap();
        assert_eq!(dir_token(&File::open(linked.path()).unwrap()), None);
        let fifo = tempfile::tempdir().unwrap();
        let fifo_path = CString::new(fifo.path().join(DIR_MARKER).as_os_str().as_bytes()).unwrap();
        // SAFETY: valid C string.
        assert_eq!(unsafe { libc::mkfifo(fifo_path.as_ptr(), 0o600) }, 0);
        assert_eq!(dir_token(&File::open(fifo.path()).unwrap()), None);
    }

    #[test]
    fn process_start_identifies_this_process() {
        assert!(Holder::current().alive());
        assert!(!Holder { pid: std::process::id(), start: Holder::current().start + 1 }.alive());
    }
}
