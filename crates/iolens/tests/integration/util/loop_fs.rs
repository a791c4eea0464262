//! A small ext4 file system on a loop device, mounted in a scratch directory: a real block
//! device under a test's target whatever the machine's own disks are (a virtual disk may have
//! no counters iolens can map, a container none at all). Root, losetup, mkfs.ext4 and mount
//! are prerequisites ([`super::prerequisite::require_some`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs a tool; its trimmed stdout when it succeeded.
fn sh(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Mounted while it lives; unmounted and detached when dropped.
pub struct LoopFs {
    /// The loop device, e.g. `/dev/loop3`.
    pub device: String,
    mount: PathBuf,
    mounted: bool,
    _dir: tempfile::TempDir,
}

impl LoopFs {
    /// An ext4 of `bytes` on a fresh loop device; `None` where one cannot be made here.
    pub fn new(bytes: u64) -> Option<LoopFs> {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).ok()?;
        let image = dir.path().join("fs.img");
        std::fs::File::create(&image).ok()?.set_len(bytes).ok()?;
        let device = sh("losetup", &["-f", "--show", image.to_str()?])?;
        let mount = dir.path().join("mnt");
        let mut fs = LoopFs { device, mount, mounted: false, _dir: dir };
        std::fs::create_dir(&fs.mount).ok()?;
        sh("mkfs.ext4", &["-q", &fs.device])?;
        sh("mount", &[&fs.device, fs.mount.to_str()?])?;
        fs.mounted = true;
        Some(fs)
    }

    /// Where the file system is mounted.
    pub fn path(&self) -> &Path {
        &self.mount
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = sh("umount", &[self.mount.to_str().unwrap_or_default()]);
        }
        let _ = sh("losetup", &["-d", &self.device]);
    }
}
