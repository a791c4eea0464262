//! Directories iolens may trust: reached from `/` one component at a time through descriptors,
//! each component owned by the effective user or root, and none writable by anyone else unless
//! sticky (as ssh's StrictModes checks a user's `~/.ssh`). In such a directory no other user can
//! rename, replace or add anything, so what iolens checks there stays what it checked — the
//! ownership registry's home, and the preload library root loads into traced programs.
//!
//! `sudo -E` keeps the user's `HOME` and `XDG_*`: a path there belongs to the user, who could
//! swap a component between root's check and root's use. Such a directory is refused, with the
//! reason, and never written.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::fs_at::{euid, mkdir_at, open_at, open_dir_at};

/// A directory opened through a trusted walk, with the path it was reached by.
#[derive(Debug)]
pub struct TrustedDir {
    pub dir: File,
    pub path: PathBuf,
}

/// At most this many symbolic links are followed in one walk (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;

/// Why a directory is not trusted (or could not be reached).
#[derive(Debug)]
pub struct Untrusted(pub String);

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Opens `path` (absolute) as a trusted directory, creating missing components with `mode`
/// when `create` is set. The last component must also be owned by the effective user (not
/// merely root) and be writable by no one else.
pub fn open_trusted_dir(path: &Path, create: Option<libc::mode_t>) -> Result<TrustedDir, Untrusted> {
    walk(path, create, false)
}

/// [`open_trusted_dir`] for a directory only read from: the last component may be root's too
/// (a system library directory), never created.
pub fn open_trusted_dir_to_read(path: &Path) -> Result<TrustedDir, Untrusted> {
    walk(path, None, true)
}

fn walk(path: &Path, create: Option<libc::mode_t>, root_may_own: bool) -> Result<TrustedDir, Untrusted> {
    if !path.is_absolute() {
        return Err(Untrusted(format!("{} is not an absolute path", path.display())));
    }
    let me = euid();
    let root = File::open("/").map_err(|e| Untrusted(format!("cannot open /: {e}")))?;
    check_component(&root, Path::new("/"), me)?;
    let mut pending: Vec<PathBuf> = components(path);
    pending.reverse();
    let mut stack: Vec<(File, PathBuf)> = vec![(root, PathBuf::from("/"))];
    let mut links = 0;
    while let Some(name) = pending.pop() {
        let (dir, at) = stack.last().expect("the walk starts at /");
        if name.as_os_str() == ".." {
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        let here = at.join(&name);
        let opened = match open_dir_at(dir, name.as_os_str()) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && create.is_some() => {
                match mkdir_at(dir, name.as_os_str(), create.unwrap_or(0o700)) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                    Err(e) => return Err(Untrusted(format!("cannot create {}: {e}", here.display()))),
                }
                open_dir_at(dir, name.as_os_str())
            }
            other => other,
        };
        let opened = match opened {
            Ok(d) => d,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) => {
                // A link is followed only where it cannot be changed by others: it is itself
                // owned by the user or root, in a directory already trusted.
                let target = read_trusted_link(dir, name.as_os_str(), &here, me)?;
                links += 1;
                if links > MAX_LINKS {
                    return Err(Untrusted(format!("{}: too many symbolic links", path.display())));
                }
                let mut more = components(&target);
                more.reverse();
                if target.is_absolute() {
                    stack.truncate(1);
                }
                pending.extend(more);
                continue;
            }
            Err(e) => return Err(Untrusted(format!("cannot open {}: {e}", here.display()))),
        };
        check_component(&opened, &here, me)?;
        stack.push((opened, here));
    }
    let (dir, at) = stack.pop().expect("the walk starts at /");
    let meta = dir.metadata().map_err(|e| Untrusted(format!("{}: {e}", at.display())))?;
    let owner_ok = meta.uid() == me || (root_may_own && meta.uid() == 0);
    if !owner_ok || meta.mode() & 0o022 != 0 {
        return Err(Untrusted(format!(
            "{} is owned by uid {} with mode {:o}; it must be owned by uid {me} (this user) and writable by no one else",
            at.display(),
            meta.uid(),
            meta.mode() & 0o7777
        )));
    }
    Ok(TrustedDir { dir, path: path.to_path_buf() })
}

fn components(path: &Path) -> Vec<PathBuf> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(PathBuf::from(n)),
            Component::ParentDir => Some(PathBuf::from("..")),
            _ => None,
        })
        .collect()
}

/// A directory on the way: owned by the user or root; writable by others only if sticky (then
/// they cannot rename or remove what they do not own in it).
fn check_component(dir: &File, at: &Path, me: u32) -> Result<(), Untrusted> {
    let meta = dir.metadata().map_err(|e| Untrusted(format!("{}: {e}", at.display())))?;
    let owner_ok = meta.uid() == me || meta.uid() == 0;
    let sticky = meta.mode() & 0o1000 != 0;
    if !owner_ok || (meta.mode() & 0o022 != 0 && !sticky) {
        return Err(Untrusted(format!(
            "{} is owned by uid {} with mode {:o}: another user could replace what iolens keeps below it",
            at.display(),
            meta.uid(),
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

fn read_trusted_link(dir: &File, name: &OsStr, here: &Path, me: u32) -> Result<PathBuf, Untrusted> {
    let link = open_at(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)
        .map_err(|e| Untrusted(format!("cannot open {}: {e}", here.display())))?;
    let meta = link.metadata().map_err(|e| Untrusted(format!("{}: {e}", here.display())))?;
    if !meta.file_type().is_symlink() {
        return Err(Untrusted(format!("{} is not a directory", here.display())));
    }
    if meta.uid() != me && meta.uid() != 0 {
        return Err(Untrusted(format!(
            "{} is a symbolic link owned by uid {}: another user could point it elsewhere",
            here.display(),
            meta.uid()
        )));
    }
    // readlinkat with an empty name reads the link an O_PATH descriptor holds: the one checked.
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: valid descriptor, C string and buffer of the given length.
    let n = unsafe {
        libc::readlinkat(
            std::os::fd::AsRawFd::as_raw_fd(&link),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(Untrusted(format!(
            "cannot read the link {}: {}",
            here.display(),
            io::Error::last_os_error()
        )));
    }
    buf.truncate(n as usize);
    Ok(PathBuf::from(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&buf)))
}

/// The home directory of the effective user from the password database (never `$HOME`, which
/// `sudo -E` keeps as the invoking user's).
pub fn passwd_home() -> Option<PathBuf> {
    let mut buf = vec![0u8; 16 << 10];
    // SAFETY: a zeroed passwd is a valid out-parameter.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: valid out-parameters and buffer of the given length.
    let rc = unsafe { libc::getpwuid_r(euid(), &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points into buf, NUL-terminated.
    let dir = unsafe { std::ffi::CStr::from_ptr(pwd.pw_dir) };
    let dir = PathBuf::from(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(dir.to_bytes()));
    dir.is_absolute().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_directory_under_trusted_parents_is_trusted_and_created() {
        let base = tempfile::tempdir().unwrap();
        let want = base.path().join("a/b/c");
        let t = open_trusted_dir(&want, Some(0o700)).unwrap();
        assert!(t.dir.metadata().unwrap().is_dir());
        assert_eq!(std::fs::metadata(&want).unwrap().mode() & 0o777, 0o700);
        assert!(open_trusted_dir(&want, None).is_ok());
    }

    #[test]
    fn writable_by_others_or_foreign_owner_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let open = base.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let e = open_trusted_dir(&open.join("state"), Some(0o700)).unwrap_err();
        assert!(e.0.contains("another user could replace"), "{e}");
        assert!(!open.join("state").exists(), "nothing created below an untrusted directory");
        // Sticky, as /tmp: trusted as an ancestor.
        chmod(&open, 0o1777);
        assert!(open_trusted_dir(&open.join("state"), Some(0o700)).is_ok());
        // The last directory itself must be private to the user.
        chmod(&open.join("state"), 0o777);
        let e = open_trusted_dir(&open.join("state"), None).unwrap_err();
        assert!(e.0.contains("open/state") && e.0.contains("777"), "{e}");

        let foreign = base.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        if euid() == 0 {
            let e = open_trusted_dir(&foreign.join("x"), Some(0o700)).unwrap_err();
            assert!(e.0.contains("uid 65534"), "{e}");
        }
    }

    #[test]
    fn links_are_followed_only_when_no_one_else_can_change_them() {
        let base = tempfile::tempdir().unwrap();
        let real = base.path().join("real");
        std::fs::create_dir(&real).unwrap();
        chmod(&real, 0o700);
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(open_trusted_dir(&link, None).is_ok());
        let relative = base.path().join("rel");
        std::os::unix::fs::symlink("real", &relative).unwrap();
        assert!(open_trusted_dir(&relative.join("sub"), Some(0o700)).is_ok());
        assert!(real.join("sub").is_dir());
        if euid() == 0 {
            let theirs = base.path().join("theirs");
            std::os::unix::fs::symlink(&real, &theirs).unwrap();
            std::os::unix::fs::lchown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = open_trusted_dir(&theirs, None).unwrap_err();
            assert!(e.0.contains("symbolic link owned by uid 65534"), "{e}");
        }
    }
}
