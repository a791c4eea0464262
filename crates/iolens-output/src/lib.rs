//! The files a user names for results (`--json`, `--csv`, `--parquet`, `--busy-log`, ...).
//!
//! What a path is decides how it is written:
//! - `-`, or a path that already is this process's stdout (`/dev/stdout`, `/proc/self/fd/1`, the
//!   file stdout is redirected to): written into stdout, never replaced.
//! - a regular file, or nothing yet: written to an unpredictable temporary file created with
//!   `O_EXCL` beside it, then renamed over it. Readers see the old or the new complete file, and
//!   nothing another user planted under a guessable name is ever written through.
//! - a symlink to a regular file: the same, beside the final target, so the link stays a link.
//! - a character device or FIFO, directly or through a symlink: written straight into it
//!   (renaming over it would replace the device node or the pipe with a regular file).
//! - a directory, block device, socket or dangling symlink: refused with an error.
//!
//! An existing regular file is replaced only if it holds a result iolens wrote, or nothing at
//! all. A result is one it marked (the `user.iolens.output` attribute, set on every result file
//! it writes); only on a file system that keeps no user attributes, where no file can carry the
//! mark, does an iolens JSON document count as one. Where attributes are kept, an unmarked file
//! is not iolens's, whatever it holds: a plain copy of a result (`cp` drops the mark) is the
//! user's. Any other file — a trace named by mistake where an output belongs — and any read-only
//! file (no write bit, which root could otherwise ignore) is refused before anything is written:
//! iolens writes only to files it created. The mark is one of the two kinds of claim
//! `iolens_ownership` holds ([`iolens_ownership::result_mark`]): setting it, and reading it and
//! the file's head from a descriptor of the very file that was looked at (opened without
//! following links or blocking, same device and inode), so a file swapped in at the path
//! meanwhile, or another file's mark, never decides. It lets a result be *replaced*, never
//! anything be removed.
//!
//! This crate sits below every crate that writes such files (of iolens it depends only on
//! `iolens-ownership`), so the same rules hold everywhere; `iolens_report` re-exports it.

pub mod console;
pub mod contract;
pub mod csv;
pub mod hint;

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use iolens_ownership::result_mark::{self, ExistingFile, Mark, Opened};

/// Where an output's bytes go until [`OutputFile::commit`].
enum Dest {
    Stdout(io::Stdout),
    Direct(File),
    Atomic { temp: tempfile::NamedTempFile, target: PathBuf },
}

/// An output being written. Dropped without [`OutputFile::commit`], a temporary file is removed
/// and the destination is left as it was.
pub struct OutputFile {
    dest: Dest,
}

impl std::fmt::Debug for OutputFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.dest {
            Dest::Stdout(_) => f.write_str("OutputFile(stdout)"),
            Dest::Direct(file) => write!(f, "OutputFile(direct {file:?})"),
            Dest::Atomic { temp, target } => {
                write!(f, "OutputFile({} via {})", target.display(), temp.path().display())
            }
        }
    }
}

/// Whether `path` means this process's stdout: `-`, or the very file stdout is open on.
pub fn is_stdout(path: &Path) -> bool {
    path == Path::new("-") || same_file_as_stdout(path)
}

fn same_file_as_stdout(path: &Path) -> bool {
    let Ok(m) = fs::metadata(path) else { return false };
    // SAFETY: fstat writes into the zeroed struct we own; fd 1 may be closed, then it fails.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(1, &mut st) } != 0 {
        return false;
    }
    m.dev() == st.st_dev as u64 && m.ino() == st.st_ino as u64
}

fn refused(what: &str) -> io::Error {
    io::Error::other(format!("{what}: refusing to write results into it"))
}

fn needs_regular(what: &str) -> io::Error {
    io::Error::other(format!(
        "{what}: this output is written at positions by several threads and needs a regular file path"
    ))
}

/// What a file that is not a regular file is, for messages: "a FIFO", "a directory", ….
pub fn describe_file_type(ft: &fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

impl OutputFile {
    /// Opens `path` for writing results, by the rules in the crate documentation.
    pub fn create(path: &Path) -> io::Result<OutputFile> {
        match plan(path)? {
            Plan::Stdout => Ok(OutputFile { dest: Dest::Stdout(io::stdout()) }),
            Plan::Atomic { target, mode } => atomic(&target, mode),
            Plan::Direct { through_symlink, .. } => direct(path, through_symlink),
        }
    }

    /// Opens `path` for an output written at positions, by several threads at once (a trace):
    /// a regular file or a new path, written to an `O_EXCL` temporary beside it and renamed over
    /// it at [`commit`](Self::commit), by the same rules as [`create`](Self::create). Stdout,
    /// FIFOs and character devices cannot take positional writes and are refused before they
    /// are opened (opening a FIFO without a reader would block).
    pub fn create_positional(path: &Path) -> io::Result<OutputFile> {
        match plan(path)? {
            Plan::Atomic { target, mode } => atomic(&target, mode),
            Plan::Stdout => Err(needs_regular("stdout")),
            Plan::Direct { fifo: true, .. } => Err(needs_regular("a FIFO")),
            Plan::Direct { fifo: false, .. } => Err(needs_regular("a character device")),
        }
    }

    /// The file to write at positions, for an output from
    /// [`create_positional`](Self::create_positional).
    pub fn positional(&self) -> Option<&File> {
        match &self.dest {
            Dest::Atomic { temp, .. } => Some(temp.as_file()),
            _ => None,
        }
    }

    /// Finishes the output: flushed (and, for a file, synced and renamed into place).
    pub fn commit(self) -> io::Result<()> {
        match self.dest {
            Dest::Stdout(mut s) => s.flush(),
            Dest::Direct(mut f) => f.flush(),
            Dest::Atomic { temp, target } => {
                temp.as_file().sync_all()?;
                temp.persist(&target).map_err(|e| e.error)?;
                Ok(())
            }
        }
    }
}

/// How an output path is written, decided from what it is before anything is opened.
enum Plan {
    Stdout,
    /// `target`: the path itself, or a symlink's resolved regular file.
    Atomic {
        target: PathBuf,
        mode: Option<u32>,
    },
    Direct {
        through_symlink: bool,
        fifo: bool,
    },
}

fn plan(path: &Path) -> io::Result<Plan> {
    if is_stdout(path) {
        return Ok(Plan::Stdout);
    }
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Plan::Atomic { target: path.to_path_buf(), mode: None })
        }
        Err(e) => return Err(e),
        Ok(m) => m,
    };
    let ft = meta.file_type();
    if ft.is_file() {
        replaceable(path, &meta)?;
        return Ok(Plan::Atomic { target: path.to_path_buf(), mode: Some(meta.permissions().mode()) });
    }
    if ft.is_char_device() || ft.is_fifo() {
        return Ok(Plan::Direct { through_symlink: false, fifo: ft.is_fifo() });
    }
    if !ft.is_symlink() {
        return Err(refused(describe_file_type(&ft)));
    }
    let target = fs::metadata(path)
        .map_err(|e| io::Error::other(format!("a symlink whose target cannot be reached ({e})")))?;
    let tft = target.file_type();
    if tft.is_file() {
        let resolved = fs::canonicalize(path)?;
        replaceable(&resolved, &target)?;
        return Ok(Plan::Atomic { target: resolved, mode: Some(target.permissions().mode()) });
    }
    if tft.is_char_device() || tft.is_fifo() {
        return Ok(Plan::Direct { through_symlink: true, fifo: tft.is_fifo() });
    }
    Err(refused(&format!("a symlink to {}", describe_file_type(&tft))))
}

/// Whether the existing regular file `path` (`seen`: its metadata, as [`plan`] looked at it)
/// may be replaced by a result. It is judged on a descriptor of that very file
/// ([`result_mark`]): a file swapped in at the path after the look, or another file's mark,
/// never decides for it.
fn replaceable(path: &Path, seen: &fs::Metadata) -> io::Result<()> {
    let existing = match ExistingFile::open(path, seen) {
        Opened::Same(file) => Some(file),
        Opened::Changed => return Err(io::Error::other(
            "the file changed while iolens was checking it: iolens does not replace it\n  hint: run the command again, or choose another path",
        )),
        // Neither its mark nor its content can be read: only empty is it known to hold nothing.
        Opened::Unreadable(_) => None,
    };
    let meta = existing.as_ref().map_or(seen, ExistingFile::metadata);
    let mode = meta.permissions().mode();
    if mode & 0o222 == 0 {
        return Err(io::Error::other(format!(
            "the file is read-only (mode {:04o}): iolens does not replace it; make it writable, remove it, or choose another path",
            mode & 0o7777
        )));
    }
    if meta.len() == 0 {
        return Ok(());
    }
    match existing.as_ref().map_or(Mark::NotKept, ExistingFile::mark) {
        Mark::Marked => Ok(()),
        Mark::NotKept if existing.as_ref().is_some_and(ExistingFile::holds_iolens_json) => Ok(()),
        Mark::NotKept => Err(io::Error::other(
            "the file exists and is not a result iolens wrote (not an iolens JSON document): iolens does not replace it\n  hint: remove it first or choose another path",
        )),
        Mark::Unmarked => Err(io::Error::other(
            "the file exists and is not a result iolens wrote (no user.iolens.output attribute, which this file system keeps on every result; a copy made with cp has none): iolens does not replace it\n  hint: remove it first or choose another path",
        )),
    }
}

/// A temporary file beside `target` (random name, `O_EXCL`) that `commit` renames over it.
/// `mode`: the permissions of the file replaced, so replacing does not change who may read it.
fn atomic(target: &Path, mode: Option<u32>) -> io::Result<OutputFile> {
    let name =
        target.file_name().ok_or_else(|| io::Error::other("not a file name"))?.to_string_lossy().into_owned();
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(mode.unwrap_or(0o666) & 0o777))
        .tempfile_in(dir)
        .map_err(plain)?;
    result_mark::set(temp.as_file());
    Ok(OutputFile { dest: Dest::Atomic { temp, target: target.to_path_buf() } })
}

/// tempfile names its random temporary in errors; the user knows only the path they gave.
fn plain(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => e,
    }
}

/// Opens a device or FIFO in place. Checked again after opening, as the path may have changed.
fn direct(path: &Path, through_symlink: bool) -> io::Result<OutputFile> {
    let mut flags = libc::O_NOCTTY;
    if !through_symlink {
        flags |= libc::O_NOFOLLOW;
    }
    let f = fs::OpenOptions::new().write(true).custom_flags(flags).open(path)?;
    let ft = f.metadata()?.file_type();
    if !(ft.is_char_device() || ft.is_fifo()) {
        return Err(io::Error::other("changed while being opened: refusing to write into it"));
    }
    Ok(OutputFile { dest: Dest::Direct(f) })
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.dest {
            Dest::Stdout(s) => s.write(buf),
            Dest::Direct(f) => f.write(buf),
            Dest::Atomic { temp, .. } => temp.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.dest {
            Dest::Stdout(s) => s.flush(),
            Dest::Direct(f) => f.flush(),
            Dest::Atomic { temp, .. } => temp.flush(),
        }
    }
}

/// Writes an output in one go through a buffer, then commits it.
pub fn write_output(path: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let mut w = BufWriter::new(OutputFile::create(path)?);
    fill(&mut w)?;
    w.into_inner().map_err(|e| e.into_error())?.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The mark of the regular file at `path`.
    fn mark_of(path: &Path) -> Mark {
        match ExistingFile::open(path, &fs::symlink_metadata(path).unwrap()) {
            Opened::Same(file) => file.mark(),
            other => panic!("{}: {other:?}", path.display()),
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn new_and_existing_regular_files_are_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_output(&p, |w| w.write_all(b"one")).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
        write_output(&p, |w| w.write_all(b"two")).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640, "mode kept");
        assert_eq!(names(dir.path()), ["r.json"]);
    }

    /// A user's file named as an output (say, the trace given to `--json` by mistake) is left
    /// as it is: iolens replaces only results it wrote (marked, or an iolens JSON document) and
    /// empty files, and never a read-only file, root or not.
    #[test]
    fn files_iolens_did_not_write_and_read_only_files_are_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace.txt");
        fs::write(&trace, "precious\n").unwrap();
        let e = write_output(&trace, |w| w.write_all(b"{}")).unwrap_err();
        assert!(e.to_string().contains("not a result iolens wrote"), "{e}");
        let link = dir.path().join("link.json");
        symlink(&trace, &link).unwrap();
        assert!(write_output(&link, |w| w.write_all(b"{}")).is_err(), "nor through a symlink");
        assert_eq!(fs::read_to_string(&trace).unwrap(), "precious\n");
        assert_eq!(names(dir.path()), ["link.json", "trace.txt"], "no temporary left");

        let ours = dir.path().join("r.json");
        write_output(&ours, |w| w.write_all(b"one")).unwrap();
        fs::set_permissions(&ours, fs::Permissions::from_mode(0o444)).unwrap();
        let e = write_output(&ours, |w| w.write_all(b"two")).unwrap_err();
        assert!(e.to_string().contains("read-only"), "{e}");
        assert_eq!(fs::read_to_string(&ours).unwrap(), "one");

        let empty = dir.path().join("empty.csv");
        fs::write(&empty, "").unwrap();
        write_output(&empty, |w| w.write_all(b"a,b")).unwrap();
        assert_eq!(fs::read_to_string(&empty).unwrap(), "a,b", "an empty file holds nothing to lose");
        // An iolens JSON document without the mark (a copy of a result): a result only where
        // no file can carry the mark.
        let earlier = dir.path().join("earlier.json");
        let document = "{\n  \"schema_version\": 2,\n  \"tool\": {\n    \"name\": \"iolens\",";
        fs::write(&earlier, document).unwrap();
        let outcome = write_output(&earlier, |w| w.write_all(b"{}"));
        match mark_of(&earlier) {
            Mark::Unmarked => {
                let e = outcome.unwrap_err().to_string();
                assert!(e.contains("no user.iolens.output attribute") && e.contains("hint:"), "{e}");
                assert_eq!(fs::read_to_string(&earlier).unwrap(), document, "left as it was");
            }
            Mark::NotKept => {
                outcome.unwrap();
                assert_eq!(
                    fs::read_to_string(&earlier).unwrap(),
                    "{}",
                    "an iolens JSON document is a result"
                );
            }
            Mark::Marked => panic!("nothing marked it"),
        }
        assert_eq!(mark_of(&ours), Mark::Marked);
    }

    /// The file judged is the one `plan` looked at: a user's file swapped, after the look, for
    /// an earlier result (another name for it, or a link to it) is not vouched for by that
    /// result's mark or content. (Read by path, the mark and the content were the swapped-in
    /// result's, and the user's file counted as replaceable.)
    #[test]
    fn a_result_swapped_in_after_the_look_does_not_vouch_for_the_file_looked_at() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("earlier.json");
        let document = "{\n  \"schema_version\": 2,\n  \"tool\": {\n    \"name\": \"iolens\",";
        write_output(&result, |w| w.write_all(document.as_bytes())).unwrap();
        let path = dir.path().join("r.json");
        fs::write(&path, "precious\n").unwrap();
        let seen = fs::symlink_metadata(&path).unwrap();
        assert!(replaceable(&path, &seen).is_err(), "the user's file is not a result");
        replaceable(&result, &fs::symlink_metadata(&result).unwrap()).unwrap();

        fs::rename(&path, dir.path().join("precious")).unwrap();
        fs::hard_link(&result, &path).unwrap();
        let e = replaceable(&path, &seen).unwrap_err().to_string();
        assert!(e.contains("changed while iolens was checking it") && e.contains("hint:"), "{e}");

        fs::remove_file(&path).unwrap();
        symlink(&result, &path).unwrap();
        let e = replaceable(&path, &seen).unwrap_err().to_string();
        assert!(e.contains("changed while iolens was checking it"), "a link is not followed: {e}");
    }

    #[test]
    fn a_failed_fill_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_output(&p, |w| w.write_all(b"old")).unwrap();
        let e = write_output(&p, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("boom"))
        });
        assert!(e.is_err());
        assert_eq!(fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(names(dir.path()), ["r.json"]);
    }

    #[test]
    fn the_old_pid_named_temporary_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        symlink(&victim, dir.path().join(format!(".r.json.{}.tmp", std::process::id()))).unwrap();
        let p = dir.path().join("r.json");
        write_output(&p, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
    }

    #[test]
    fn a_symlink_to_a_file_stays_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let real = sub.join("real");
        write_output(&real, |w| w.write_all(b"old")).unwrap();
        let link = dir.path().join("link");
        symlink(&real, &link).unwrap();
        write_output(&link, |w| w.write_all(b"new")).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(names(&sub), ["real"]);
    }

    #[test]
    fn devices_are_written_in_place_and_directories_refused() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("null");
        symlink("/dev/null", &link).unwrap();
        write_output(&link, |w| w.write_all(b"gone")).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        let full = dir.path().join("full");
        symlink("/dev/full", &full).unwrap();
        assert!(write_output(&full, |w| w.write_all(b"x")).is_err(), "ENOSPC is reported");

        let e = write_output(dir.path(), |w| w.write_all(b"x")).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let dangling = dir.path().join("dangling");
        symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(write_output(&dangling, |w| w.write_all(b"x")).is_err());
        assert!(!dir.path().join("nowhere").exists());
        let e = write_output(&dir.path().join("missing/r.json"), |w| w.write_all(b"x")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    }
}
