//! What iolens owns, and how it proves it: the one place every crate asks before it writes
//! into, replaces or removes a file it did not just create.
//!
//! Two kinds of claim, each proved on an open descriptor, never on a path that could name
//! something else by the time it is used:
//! - **The registry** (the crate root): the files and scratch directories iolens created, recorded
//!   so that it writes only into its own files and can remove what a killed run left behind —
//!   and nothing else. Used by the engine's targets, the suites' scratch directories, tracing,
//!   MPI runs and `iolens clean`.
//! - **The result mark** ([`result_mark`]): the `user.iolens.output` attribute on the result
//!   files a user names (`--json`, `--csv`, …), which says an existing file may be *replaced* by
//!   a new result. Used by `iolens-output`. It proves much less than the registry, and is used
//!   for less: see that module for why it is enough to replace a result and never to remove.
//!
//! This crate depends on no other iolens crate, so every crate that writes files can use it.
//!
//! The registry's model (docs/safety.md, "Killed runs and `iolens clean`"):
//! - **Where.** The registry lives in a *trusted* directory ([`trusted`]): `$IOLENS_STATE_DIR`,
//!   else `$XDG_STATE_HOME/iolens`, else `~/.local/state/iolens`, reached from `/` through
//!   descriptors with every component owned by this user or root and writable by no one else
//!   (unless sticky). One that is not — `sudo -E` keeps the user's `HOME` — is refused, and the
//!   effective user's own home from the password database is used instead. Everything below is
//!   then reached through that directory's descriptor (`openat`), never by path.
//! - **Whose.** Below it, `hosts/HOST.BOOT.PIDNS.MNTNS/` belongs to one host, boot, PID and
//!   mount namespace: a home directory shared by the nodes of a cluster holds one such directory
//!   per node, and a process reads and judges only its own.
//! - **Alive.** Each process that creates something holds a *lease*: `runs/TOKEN.run`, locked
//!   (`flock`) for the process's whole life and listing what it created. A lease that can be
//!   locked belongs to a process that is gone, whatever `/proc` says; a locked one is alive.
//! - **Proof.** An entry is removed only when the object at its path, opened without following
//!   links, is the one recorded (device and inode), is owned by this user, carries the run's
//!   random token (its `user.iolens` attribute, or for directories without attributes a marker
//!   file iolens made with `O_EXCL`), has not grown past what the run made it, and has not changed
//!   after the run last recorded it (a heartbeat records the identity of files being written
//!   once a second). Anything else is left in place and said. Directories are never removed
//!   recursively: their files go one by one, then `rmdir` if empty.
//! - **Kept** files (`--keep`) move from the lease to `kept`, with their exact identity: a later
//!   run writes into them only while they are exactly as left.

mod clean;
mod entry;
pub mod fs_at;
pub mod result_mark;
mod scratch;
pub mod trusted;

pub use clean::{clean_in, clean_leftovers, Cleaned};
use clean::{is_type, unlink_checked, Outcome};
pub use entry::{format_document, parse_document, Document, Entry, EntryKind, Identity, TokenPlace};
pub use scratch::{claim_made_dir, remove_made_dir, Claimed, ScratchDir};

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fs_at::{euid, open_at, open_dir_at, open_file_at, open_parent, stat_at, unlink_at};

const OWNER_XATTR: &str = "user.iolens";
/// Name of the marker holding a directory's token where user attributes are not kept.
pub(crate) const DIR_MARKER: &str = ".iolens-owner";
const RUN_HEADER: &str = "iolens-run-v2";
const KEPT_HEADER: &str = "iolens-kept-v2";
const KEPT_FILE: &str = "kept";
/// A registry document larger than this is not read past it (the rest counts as absent, so its
/// objects are foreign — the safe side).
const MAX_DOCUMENT_BYTES: u64 = 16 << 20;
/// How often a live run records the identity of the files it holds.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long after its last record a dead run's file may have changed (its own last writes,
/// before it died): the heartbeat interval and a second of margin for coarse timestamps.
const GRACE_NS: i128 = 2_000_000_000;

/// The directory configured for the registry (before any trust check).
pub fn configured_state_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = nonempty("IOLENS_STATE_DIR") {
        return Some(std::path::absolute(&d).unwrap_or(d));
    }
    if let Some(d) = nonempty("XDG_STATE_HOME").filter(|d| d.is_absolute()) {
        return Some(d.join("iolens"));
    }
    nonempty("HOME").filter(|d| d.is_absolute()).map(|h| h.join(".local/state/iolens"))
}

/// This host's part of a registry: `ROOT/hosts/KEY`, with its `runs` directory.
#[derive(Debug)]
pub struct HostDir {
    pub path: PathBuf,
    dir: File,
    runs: File,
    /// The registry's `hosts` directory (to count other hosts' parts).
    hosts: File,
    key: String,
}

impl HostDir {
    /// Opens (creating) this host's part of the registry rooted at `root`, a trusted directory.
    pub fn open_under(root: &Path) -> Result<HostDir, String> {
        let top = trusted::open_trusted_dir(root, Some(0o700)).map_err(|e| e.0)?;
        let key = host_key();
        let sub = |dir: &File, name: &str, at: &Path| -> Result<File, String> {
            match fs_at::mkdir_at(dir, OsStr::new(name), 0o700) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                Err(e) => return Err(format!("cannot create {}: {e}", at.join(name).display())),
            }
            let d = open_dir_at(dir, OsStr::new(name))
                .map_err(|e| format!("{}: {e}", at.join(name).display()))?;
            let m = d.metadata().map_err(|e| e.to_string())?;
            if m.uid() != euid() || m.mode() & 0o022 != 0 {
                return Err(format!("{} is not private to this user", at.join(name).display()));
            }
            Ok(d)
        };
        let hosts = sub(&top.dir, "hosts", root)?;
        let dir = sub(&hosts, &key, &root.join("hosts"))?;
        let path = root.join("hosts").join(&key);
        let runs = sub(&dir, "runs", &path)?;
        Ok(HostDir { path, dir, runs, hosts, key })
    }
}

/// The running kernel's boot id (hex digits, without dashes): processes that share it share one
/// kernel, and so its disks and its process ids; `None` when it cannot be read.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|b| b.trim().replace('-', ""))
        .ok()
        .filter(|b| !b.is_empty() && b.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `HOSTNAME.BOOTID.PIDNS.MNTNS`: what makes a process id and a path mean the same thing.
fn host_key() -> String {
    let mut name = [0u8; 256];
    // SAFETY: buffer of the given length.
    let host = if unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len() - 1) } == 0 {
        let end = name.iter().position(|&b| b == 0).unwrap_or(0);
        String::from_utf8_lossy(&name[..end]).into_owned()
    } else {
        String::new()
    };
    let host: String =
        host.chars().take(64).map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let boot = boot_id().unwrap_or_else(|| "noboot".into());
    let ns = |kind: &str| std::fs::metadata(format!("/proc/self/ns/{kind}")).map_or(0, |m| m.ino());
    format!("{}.{boot}.{}.{}", if host.is_empty() { "nohost" } else { &host }, ns("pid"), ns("mnt"))
}

struct Resolved {
    host: Option<Arc<HostDir>>,
    /// Why the configured directory is not the one in use (or why there is none).
    notice: Option<String>,
}

static RESOLVED: OnceLock<Resolved> = OnceLock::new();

fn resolved() -> &'static Resolved {
    RESOLVED.get_or_init(|| {
        let configured = configured_state_dir();
        let mut notice = None;
        if let Some(c) = &configured {
            match HostDir::open_under(c) {
                Ok(h) => return Resolved { host: Some(Arc::new(h)), notice: None },
                Err(why) => {
                    notice = Some(format!("the ownership registry is not kept in {}: {why}", c.display()))
                }
            }
        }
        let fallback = trusted::passwd_home().map(|h| h.join(".local/state/iolens"));
        match fallback.filter(|f| Some(f) != configured.as_ref()) {
            Some(f) => match HostDir::open_under(&f) {
                Ok(h) => Resolved {
                    host: Some(Arc::new(h)),
                    notice: notice.map(|n| format!("{n}; using {} instead", f.display())),
                },
                Err(why) => Resolved {
                    host: None,
                    notice: Some(format!(
                        "{}; nor in {}: {why}; a killed run's files cannot be found later",
                        notice.unwrap_or_else(|| "no ownership registry".into()),
                        f.display()
                    )),
                },
            },
            None => Resolved {
                host: None,
                notice: Some(
                    notice.unwrap_or_else(|| "no ownership registry: no state directory (set HOME)".into()),
                ),
            },
        }
    })
}

/// This host's part of the registry in use, if there is one.
pub fn host_dir() -> Option<Arc<HostDir>> {
    resolved().host.clone()
}

/// Why the configured state directory is not used (say it once, on stderr).
pub fn registry_notice() -> Option<&'static str> {
    resolved().notice.as_deref()
}

/// The path of this host's registry, for messages.
pub fn state_dir() -> Option<PathBuf> {
    host_dir().map(|h| h.path.clone())
}

// ---- tokens ----

pub(crate) fn read_token(file: &File) -> Option<u128> {
    let name = CString::new(OWNER_XATTR).ok()?;
    let mut buf = [0u8; 64];
    // SAFETY: valid fd, C string and buffer of the given length.
    let n = unsafe { libc::fgetxattr(file.as_raw_fd(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return None;
    }
    parse_token(&buf[..n as usize])
}

fn parse_token(bytes: &[u8]) -> Option<u128> {
    let text = std::str::from_utf8(bytes).ok()?;
    let hex = text.strip_prefix("iolens token=")?.trim();
    (hex.len() == 32).then(|| u128::from_str_radix(hex, 16).ok()).flatten()
}

/// Sets the token attribute; whether it is there afterwards (file systems without user
/// attributes keep none).
fn write_token(file: &File, token: u128) -> bool {
    let Ok(name) = CString::new(OWNER_XATTR) else { return false };
    let value = format!("iolens token={token:032x}");
    // SAFETY: valid fd, C string and buffer.
    unsafe { libc::fsetxattr(file.as_raw_fd(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
    read_token(file) == Some(token)
}

/// The token in a directory's marker: a regular file owned by this user with one link, read
/// without following links or blocking.
fn marker_token(dir: &File) -> Option<u128> {
    let marker = open_file_at(dir, OsStr::new(DIR_MARKER), false).ok()?;
    let m = marker.metadata().ok()?;
    if !m.is_file() || m.uid() != euid() || m.nlink() != 1 {
        return None;
    }
    let mut buf = [0u8; 64];
    let n = (&marker).read(&mut buf).ok()?;
    parse_token(&buf[..n])
}

fn write_marker(dir: &File, token: u128) -> bool {
    let made = open_at(
        dir,
        OsStr::new(DIR_MARKER),
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
        0o600,
    );
    match made {
        Ok(mut f) => {
            io::Write::write_all(&mut f, format!("iolens token={token:032x}\n").as_bytes()).is_ok()
                && marker_token(dir) == Some(token)
        }
        Err(_) => false,
    }
}

/// Whether the object's token agrees with the entry: where the entry says the attribute holds
/// it, the attribute must; elsewhere, an attribute naming another run's token disowns it.
fn token_agrees(e: &Entry, token: Option<u128>) -> bool {
    match e.place {
        TokenPlace::Xattr => token == Some(e.token),
        TokenPlace::Marker | TokenPlace::None => token.is_none_or(|t| t == e.token),
    }
}

// ---- the lease: this process's record of what it created ----

struct Held {
    entry: Entry,
    /// The object itself, held open: its inode cannot be freed and reused while the run goes on,
    /// and the heartbeat reads its identity through it.
    handle: File,
}

struct Lease {
    file: File,
    /// The lease's name in this host's `runs` directory.
    name: OsString,
    host: Arc<HostDir>,
    held: Vec<Held>,
}

static LEASE: Mutex<Option<Lease>> = Mutex::new(None);
static HEARTBEAT_STARTED: std::sync::Once = std::sync::Once::new();

impl Lease {
    fn create() -> Option<Lease> {
        let host = host_dir()?;
        for _ in 0..8 {
            let name = format!("{:032x}", rand::random::<u128>());
            let temporary = OsString::from(format!(".new-{name}"));
            let Ok(file) = open_at(
                &host.runs,
                &temporary,
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                0o600,
            ) else {
                continue;
            };
            // Locked before it carries a name a cleaner reads: a `.run` is never seen unlocked
            // while its process lives.
            if fs_at::lock(&file).is_err() {
                let _ = unlink_at(&host.runs, &temporary, false);
                return None;
            }
            let final_name = OsString::from(format!("{name}.run"));
            let lease = Lease { file, name: final_name, host: Arc::clone(&host), held: Vec::new() };
            if lease.write().is_err() {
                let _ = unlink_at(&host.runs, &temporary, false);
                return None;
            }
            match fs_at::rename_at(&host.runs, &temporary, &lease.name) {
                Ok(()) => return Some(lease),
                // A cleaner took the unlocked-looking temporary away in between: try again.
                Err(_) => continue,
            }
        }
        None
    }

    fn header() -> String {
        format!("{RUN_HEADER} pid={}", std::process::id())
    }

    /// Rewrites the lease in place (one write, then the length): a cut write leaves lines of
    /// the old text after `end`, which the reader ignores.
    fn write(&self) -> io::Result<()> {
        let entries: Vec<&Entry> = self.held.iter().map(|h| &h.entry).collect();
        let text = format_document(&Lease::header(), &entries);
        self.file.write_all_at(text.as_bytes(), 0)?;
        self.file.set_len(text.len() as u64)
    }
}

fn with_lease<R>(f: impl FnOnce(&mut Lease) -> R) -> Option<R> {
    let mut guard = LEASE.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() {
        *guard = Lease::create();
        if guard.is_some() {
            HEARTBEAT_STARTED.call_once(|| {
                let _ = std::thread::Builder::new().name("iolens-lease".into()).spawn(heartbeat);
            });
        }
    }
    guard.as_mut().map(f)
}

/// Records the identity of held files that changed (the run's own writes), so that a killed
/// run's files are known as they were at most a heartbeat before it died.
fn heartbeat() {
    loop {
        std::thread::sleep(HEARTBEAT);
        let mut guard = LEASE.lock().unwrap_or_else(|p| p.into_inner());
        let Some(lease) = guard.as_mut() else { continue };
        let mut changed = false;
        for h in lease.held.iter_mut().filter(|h| h.entry.kind == EntryKind::File) {
            if let Ok(now) = Identity::of(&h.handle) {
                if now != h.entry.identity {
                    h.entry.limit = h.entry.limit.max(now.size);
                    h.entry.identity = now;
                    changed = true;
                }
            }
        }
        if changed {
            let _ = lease.write();
        }
    }
}

fn hold(lease: &mut Lease, entry: Entry, handle: File) {
    lease.held.retain(|h| !h.entry.identity.same_object(&entry.identity));
    lease.held.push(Held { entry, handle });
    let _ = lease.write();
}

/// Records a file this process created (or laid out, or wrote) as its own: removed by the next
/// cleaner if the process dies without removing it. `limit`: the most bytes the run makes it
/// hold. The file gets the run's token first.
pub fn claim_file(file: &File, path: &Path, limit: u64, laid_out: u64) {
    let Ok(handle) = file.try_clone() else { return };
    let existing = read_token(file);
    let token = existing.unwrap_or_else(rand::random::<u128>);
    let place =
        if existing.is_some() || write_token(file, token) { TokenPlace::Xattr } else { TokenPlace::None };
    // Setting the token changed ctime: the identity is taken after it.
    let Ok(identity) = Identity::of(file) else { return };
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let entry = Entry {
        kind: EntryKind::File,
        place,
        token,
        identity,
        limit: limit.max(identity.size),
        laid_out,
        path,
    };
    with_lease(|lease| hold(lease, entry, handle));
}

/// Records a scratch directory this process created, with a token in its attribute or, where
/// attributes are not kept, in a marker file inside it.
pub(crate) fn claim_dir(dir: &File, path: &Path) {
    let Ok(handle) = dir.try_clone() else { return };
    let token = rand::random::<u128>();
    let place = if write_token(dir, token) {
        TokenPlace::Xattr
    } else if write_marker(dir, token) {
        TokenPlace::Marker
    } else {
        return; // nothing proves it is ours later: never removed by a cleaner
    };
    let Ok(identity) = Identity::of(dir) else { return };
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let entry = Entry { kind: EntryKind::Dir, place, token, identity, limit: 0, laid_out: 0, path };
    with_lease(|lease| hold(lease, entry, handle));
}

/// Takes the object with this identity out of this process's lease, and returns its entry. A
/// lease left holding nothing goes (a later claim takes a new one).
fn take_from_lease(identity: &Identity) -> Option<Entry> {
    let mut guard = LEASE.lock().unwrap_or_else(|p| p.into_inner());
    let lease = guard.as_mut()?;
    let at = lease.held.iter().position(|h| h.entry.identity.same_object(identity))?;
    let entry = lease.held.remove(at).entry;
    if lease.held.is_empty() {
        let _ = unlink_at(&lease.host.runs, &lease.name, false);
        *guard = None;
    } else {
        let _ = lease.write();
    }
    Some(entry)
}

/// Forgets the object with this identity: this process's and the kept list's records of it.
pub fn release(identity: &Identity) {
    take_from_lease(identity);
    if let Some(host) = host_dir() {
        let _ = with_kept(&host, |kept| {
            let before = kept.len();
            kept.retain(|e| !e.identity.same_object(identity));
            kept.len() != before
        });
    }
}

/// Moves a file this run leaves in place for the user (`--keep`) from the lease to the kept
/// list, with its exact identity now: a later run writes into it only while it is just as left.
/// (Out of the lease first: a process killed in between leaves the file unrecorded — foreign
/// — rather than a kept file listed for removal.)
pub fn keep_file(file: &File, path: &Path, laid_out: u64) -> io::Result<()> {
    let identity = Identity::of(file)?;
    let held = take_from_lease(&identity);
    let Some(host) = host_dir() else { return Ok(()) };
    let token = read_token(file);
    let (place, token) = match (token, held.as_ref()) {
        (Some(t), _) => (TokenPlace::Xattr, t),
        (None, Some(e)) => (TokenPlace::None, e.token),
        (None, None) => {
            let t = rand::random::<u128>();
            (if write_token(file, t) { TokenPlace::Xattr } else { TokenPlace::None }, t)
        }
    };
    let identity = Identity::of(file)?;
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let entry = Entry { kind: EntryKind::File, place, token, identity, limit: identity.size, laid_out, path };
    with_kept(&host, |kept| {
        // A file read as it was is recorded as it was: nothing to write.
        if kept.contains(&entry) {
            return false;
        }
        kept.retain(|e| !e.identity.same_object(&identity));
        kept.push(entry);
        true
    })
}

/// How a file is iolens's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owned {
    /// Bytes from offset 0 holding laid-out data.
    pub laid_out: u64,
    /// Created by this process (in this run or an earlier run of the same suite), not kept from
    /// an earlier command.
    pub this_process: bool,
}

/// Whether the open regular file is iolens's: this process's own (same inode, held open since,
/// with its token), or kept by an earlier run and exactly as it was left.
pub fn owned(file: &File) -> Option<Owned> {
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != euid() {
        return None;
    }
    let id = Identity::from_meta(&meta);
    let token = read_token(file);
    let mine = {
        let guard = LEASE.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_ref().and_then(|lease| {
            lease
                .held
                .iter()
                .find(|h| h.entry.kind == EntryKind::File && h.entry.identity.same_object(&id))
                .filter(|h| token_agrees(&h.entry, token))
                .map(|h| Owned { laid_out: h.entry.laid_out, this_process: true })
        })
    };
    if mine.is_some() {
        return mine;
    }
    let host = host_dir()?;
    let kept = read_kept(&host).ok()?;
    kept.iter()
        .find(|e| e.kind == EntryKind::File && e.identity == id && token_agrees(e, token))
        .map(|e| Owned { laid_out: e.laid_out, this_process: false })
}

// ---- the kept list ----

fn read_document(file: &File, header: &str) -> io::Result<Document> {
    let mut text = Vec::new();
    file.take(MAX_DOCUMENT_BYTES).read_to_end(&mut text)?;
    Ok(parse_document(&text, header))
}

fn read_kept(host: &HostDir) -> io::Result<Vec<Entry>> {
    match open_file_at(&host.dir, OsStr::new(KEPT_FILE), false) {
        Ok(f) => {
            let m = f.metadata()?;
            if !m.is_file() || m.uid() != euid() {
                return Ok(Vec::new());
            }
            Ok(read_document(&f, KEPT_HEADER)?.entries)
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Changes the kept list under its lock; `change` says whether to write it back (atomically: a
/// fresh `O_EXCL` file renamed over the old one).
fn with_kept(host: &HostDir, change: impl FnOnce(&mut Vec<Entry>) -> bool) -> io::Result<()> {
    let lock = open_at(
        &host.dir,
        OsStr::new("kept.lock"),
        libc::O_RDWR | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        0o600,
    )?;
    fs_at::lock(&lock)?;
    let mut kept = read_kept(host)?;
    if !change(&mut kept) {
        return Ok(());
    }
    let entries: Vec<&Entry> = kept.iter().collect();
    let text = format_document(KEPT_HEADER, &entries);
    let temporary = OsString::from(format!(".kept.{:032x}", rand::random::<u128>()));
    let file = open_at(
        &host.dir,
        &temporary,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
        0o600,
    )?;
    let written = file.write_all_at(text.as_bytes(), 0).and_then(|()| file.sync_data());
    match written.and_then(|()| fs_at::rename_at(&host.dir, &temporary, OsStr::new(KEPT_FILE))) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = unlink_at(&host.dir, &temporary, false);
            Err(e)
        }
    }
}

/// Opens `path` without following a final symbolic link and without blocking on a FIFO.
pub fn open_nofollow(path: &Path, write: bool) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// Removes `path` only if it is a regular file this process made or iolens kept (unchanged),
/// checked on its descriptor; never follows or removes anything else.
pub fn remove_owned_file(path: &Path) -> io::Result<bool> {
    let (dir, name) = match open_parent(path) {
        Ok(x) => x,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let file = match open_file_at(&dir, &name, false) {
        Ok(f) => f,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ELOOP) | Some(libc::ENXIO)) => {
            return Ok(false)
        }
        Err(e) => return Err(e),
    };
    if owned(&file).is_none() {
        return Ok(false);
    }
    let id = Identity::of(&file)?;
    release(&id);
    match unlink_checked(&dir, &name, &id, false) {
        Outcome::Removed => Ok(true),
        Outcome::Failed(e) => Err(e),
        _ => Ok(false),
    }
}

/// Removes `path` if it still names the regular file `id` (same device and inode), checked
/// through its directory's descriptor, and forgets it. For what this process itself created.
pub fn remove_created_file(path: &Path, id: &Identity) -> io::Result<bool> {
    release(id);
    let (dir, name) = match open_parent(path) {
        Ok(x) => x,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    match stat_at(&dir, &name) {
        Ok(st) if is_type(&st, libc::S_IFREG) => {}
        Ok(_) => return Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    }
    match unlink_checked(&dir, &name, id, false) {
        Outcome::Removed => Ok(true),
        Outcome::Failed(e) => Err(e),
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests;
