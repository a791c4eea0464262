//! One owned object as the registry writes it: a line of text, and the documents made of them
//! (a run's lease, the kept list). The parser takes anything — these files sit on disk where a
//! crash can cut them — and keeps only lines it fully understands.

use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

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

    pub(crate) fn from_stat(st: &libc::stat) -> Identity {
        Identity {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size as u64,
            mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
            ctime_ns: i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec),
        }
    }

    /// Same device and inode.
    pub fn same_object(&self, other: &Identity) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }
}

/// Whether an entry is a file target or a scratch directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
}

/// Where the object keeps the run's token, as a proof beside the registry's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenPlace {
    /// Its `user.iolens` attribute.
    Xattr,
    /// A marker file inside it (directories on file systems without user attributes), made with
    /// `O_EXCL` by iolens and owned by iolens's user.
    Marker,
    /// Nowhere: the file system keeps no user attributes; the registry's record alone decides.
    None,
}

/// One owned object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    pub place: TokenPlace,
    pub token: u128,
    /// As last recorded: at creation, after layout, and by the run's heartbeat while it writes.
    pub identity: Identity,
    /// The most bytes the run itself makes the file hold (its region): a larger file was grown
    /// by someone else.
    pub limit: u64,
    /// Bytes from offset 0 holding laid-out (incompressible) data.
    pub laid_out: u64,
    pub path: PathBuf,
}

impl Entry {
    pub fn to_line(&self) -> String {
        let kind = match self.kind {
            EntryKind::File => "f",
            EntryKind::Dir => "d",
        };
        let place = match self.place {
            TokenPlace::Xattr => "x",
            TokenPlace::Marker => "m",
            TokenPlace::None => "n",
        };
        let id = &self.identity;
        format!(
            "{kind} {place} {:032x} {} {} {} {} {} {} {} {}",
            self.token,
            id.dev,
            id.ino,
            id.size,
            id.mtime_ns,
            id.ctime_ns,
            self.limit,
            self.laid_out,
            hex(self.path.as_os_str().as_bytes())
        )
    }

    pub fn from_line(line: &str) -> Option<Entry> {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() != 11 {
            return None;
        }
        let kind = match f[0] {
            "f" => EntryKind::File,
            "d" => EntryKind::Dir,
            _ => return None,
        };
        let place = match f[1] {
            "x" => TokenPlace::Xattr,
            "m" => TokenPlace::Marker,
            "n" => TokenPlace::None,
            _ => return None,
        };
        if f[2].len() != 32 {
            return None;
        }
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(&unhex(f[10])?));
        // Only absolute paths are ever recorded; anything else is not a line iolens wrote.
        if !path.is_absolute() || path.file_name().is_none() {
            return None;
        }
        Some(Entry {
            kind,
            place,
            token: u128::from_str_radix(f[2], 16).ok()?,
            identity: Identity {
                dev: f[3].parse().ok()?,
                ino: f[4].parse().ok()?,
                size: f[5].parse().ok()?,
                mtime_ns: f[6].parse().ok()?,
                ctime_ns: f[7].parse().ok()?,
            },
            limit: f[8].parse().ok()?,
            laid_out: f[9].parse().ok()?,
            path,
        })
    }
}

/// A document of entries: a header line naming its kind, entry lines, and `end` (a document
/// cut before `end` keeps the entries read so far: each is still proven before use).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Document {
    pub entries: Vec<Entry>,
    /// Lines that are not entries (damaged, or of another version).
    pub unreadable: usize,
    pub complete: bool,
}

/// Reads a document whose first line is `header` (anything may follow it on that line).
pub fn parse_document(text: &[u8], header: &str) -> Document {
    let mut doc = Document::default();
    let text = String::from_utf8_lossy(text);
    let mut lines = text.split('\n');
    if lines.next().is_none_or(|first| first.split(' ').next() != Some(header)) {
        return doc;
    }
    for line in lines {
        if line == "end" {
            doc.complete = true;
            break;
        }
        if line.is_empty() {
            continue;
        }
        match Entry::from_line(line) {
            Some(e) => doc.entries.push(e),
            None => doc.unreadable += 1,
        }
    }
    doc
}

/// Writes a document (see [`parse_document`]).
pub fn format_document(header: &str, entries: &[&Entry]) -> String {
    let mut text = String::with_capacity(64 + 160 * entries.len());
    text.push_str(header);
    text.push('\n');
    for e in entries {
        text.push_str(&e.to_line());
        text.push('\n');
    }
    text.push_str("end\n");
    text
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            kind: EntryKind::File,
            place: TokenPlace::Xattr,
            token: 0xdead_beef,
            identity: Identity { dev: 1, ino: 2, size: 3, mtime_ns: -4, ctime_ns: 5 },
            limit: 7,
            laid_out: 6,
            path: PathBuf::from("/tmp/a b\nc"),
        }
    }

    #[test]
    fn entries_round_trip_through_lines_and_documents() {
        let e = entry();
        assert_eq!(Entry::from_line(&e.to_line()), Some(e.clone()));
        let text = format_document("iolens-run-v2 pid=1", &[&e, &e]);
        let doc = parse_document(text.as_bytes(), "iolens-run-v2");
        assert_eq!(doc.entries, vec![e.clone(), e.clone()]);
        assert!(doc.complete);
        assert_eq!(parse_document(text.as_bytes(), "iolens-kept-v2"), Document::default());
    }

    #[test]
    fn damaged_lines_are_skipped_and_a_cut_document_is_incomplete() {
        let e = entry();
        let text = format!("iolens-run-v2\n{}\nf x zz 1 2 3 4 5 6 7 2f\n{}", e.to_line(), &e.to_line()[..20]);
        let doc = parse_document(text.as_bytes(), "iolens-run-v2");
        assert_eq!(doc.entries, vec![e]);
        assert_eq!(doc.unreadable, 2);
        assert!(!doc.complete);
        // A relative path, or a path without a name, is not something iolens recorded.
        let relative = Entry { path: PathBuf::from("x"), ..entry() };
        assert_eq!(Entry::from_line(&relative.to_line()), None);
        let root = Entry { path: PathBuf::from("/"), ..entry() };
        assert_eq!(Entry::from_line(&root.to_line()), None);
        assert_eq!(Entry::from_line(""), None);
        assert_eq!(Entry::from_line("f x 1 2 3"), None);
    }
}
