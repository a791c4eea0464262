//! The block device behind a path, and whether a device may be written.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// A whole disk (or a device-mapper / md device, which have counters of their own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockDevice {
    /// Kernel name, as in `/proc/diskstats`: `vda`, `nvme0n1`, `dm-0`.
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub logical_sector: u64,
    pub physical_sector: u64,
    pub size_bytes: u64,
    pub rotational: Option<bool>,
    pub model: Option<String>,
}

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_u64(path: &Path) -> Option<u64> {
    read_trim(path)?.parse().ok()
}

/// The nearest existing ancestor of `path` (itself if it exists).
fn existing_ancestor(path: &Path) -> io::Result<PathBuf> {
    let mut p = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir()?.join(path) };
    loop {
        if p.symlink_metadata().is_ok() {
            return Ok(p);
        }
        if !p.pop() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} has no existing ancestor", path.display()),
            ));
        }
    }
}

/// The sysfs directory of the whole device behind `major:minor` (partitions map to their disk).
fn whole_device_sysfs(sys_dev_block: &Path, major: u32, minor: u32) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(sys_dev_block.join(format!("{major}:{minor}"))).ok()?;
    if dir.join("partition").exists() {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir)
    }
}

fn describe(sys: &Path) -> Option<BlockDevice> {
    let name = sys.file_name()?.to_string_lossy().into_owned();
    let dev = read_trim(&sys.join("dev"))?;
    let (major, minor) = dev.split_once(':')?;
    Some(BlockDevice {
        name,
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        logical_sector: read_u64(&sys.join("queue/logical_block_size")).unwrap_or(512),
        physical_sector: read_u64(&sys.join("queue/physical_block_size")).unwrap_or(512),
        size_bytes: read_u64(&sys.join("size")).unwrap_or(0) * 512,
        rotational: read_u64(&sys.join("queue/rotational")).map(|r| r == 1),
        model: read_trim(&sys.join("device/model")).filter(|m| !m.is_empty()),
    })
}

/// The whole block device holding `path` (a file, a directory, or a device node itself), or
/// `None` where no block device is behind it (tmpfs, proc, overlay, network file systems).
pub fn device_for_path(path: &Path) -> io::Result<Option<BlockDevice>> {
    let p = existing_ancestor(path)?;
    let meta = std::fs::metadata(&p)?;
    let dev = if meta.file_type().is_block_device() { meta.rdev() } else { meta.dev() };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return Ok(None);
    }
    Ok(whole_device_sysfs(Path::new("/sys/dev/block"), major, minor).and_then(|s| describe(&s)))
}

/// Why a block device must not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteRefusal {
    #[error("{0} is not a block device")]
    NotABlockDevice(PathBuf),
    #[error(
        "{device} is mounted at {mount_point} ({fstype}); iolens never writes to a mounted block device"
    )]
    Mounted { device: String, mount_point: String, fstype: String },
    #[error("{device} is in use as swap; iolens never writes to swap")]
    Swap { device: String },
    #[error(
        "{device} is held by {holders} (LVM, RAID or encryption); iolens never writes to a device in use"
    )]
    Held { device: String, holders: String },
    #[error(
        "{device} reads and writes {backing}, which also backs {other}; writing one corrupts what the other holds"
    )]
    SharedBacking { device: String, backing: String, other: String },
    #[error("cannot inspect {0}: {1}")]
    Io(PathBuf, io::Error),
}

/// Where the checks look; replaced by a fake tree in tests.
#[derive(Debug, Clone)]
pub struct SysRoots {
    pub mountinfo: PathBuf,
    pub swaps: PathBuf,
    pub sys_class_block: PathBuf,
    pub sys_dev_block: PathBuf,
}

impl Default for SysRoots {
    fn default() -> Self {
        SysRoots {
            mountinfo: "/proc/self/mountinfo".into(),
            swaps: "/proc/swaps".into(),
            sys_class_block: "/sys/class/block".into(),
            sys_dev_block: "/sys/dev/block".into(),
        }
    }
}

/// Refuses a block device that is mounted, used as swap, or held by another device — itself or
/// any of its partitions. Only reads /proc and /sys; never opens the device.
pub fn check_writable_block_device(dev_node: &Path) -> Result<(), WriteRefusal> {
    let meta = std::fs::metadata(dev_node).map_err(|e| WriteRefusal::Io(dev_node.to_path_buf(), e))?;
    if !meta.file_type().is_block_device() {
        return Err(WriteRefusal::NotABlockDevice(dev_node.to_path_buf()));
    }
    check_writable_device_number(meta.rdev())
}

/// [`check_writable_block_device`] for the device with this number (`st_rdev` of an open
/// descriptor, so no path is followed again).
pub fn check_writable_device_number(rdev: u64) -> Result<(), WriteRefusal> {
    let roots = SysRoots::default();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let link = roots.sys_dev_block.join(format!("{major}:{minor}"));
    let sys = std::fs::canonicalize(&link).map_err(|e| WriteRefusal::Io(link, e))?;
    let name = sys.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    check_writable_with(&roots, &name)
}

/// The file a loop device reads and writes (`None` for other devices or unbound loops).
fn loop_backing(roots: &SysRoots, name: &str) -> Option<String> {
    read_trim(&roots.sys_class_block.join(name).join("loop/backing_file")).filter(|b| !b.is_empty())
}

/// Identity of a backing file: device and inode where it still exists, else its name.
fn backing_identity(backing: &str) -> Result<(u64, u64), String> {
    let clean = backing.strip_suffix(" (deleted)").unwrap_or(backing);
    std::fs::metadata(clean).map(|m| (m.dev(), m.ino())).map_err(|_| clean.to_string())
}

/// Refuses a loop device whose backing file backs another loop device too (an alias of a
/// device that may be mounted), or whose backing object is itself a device in use.
fn check_loop_aliases(roots: &SysRoots, name: &str) -> Result<(), WriteRefusal> {
    let Some(backing) = loop_backing(roots, name) else { return Ok(()) };
    let mine = backing_identity(&backing);
    if let Ok(entries) = std::fs::read_dir(&roots.sys_class_block) {
        for e in entries.flatten() {
            let other = e.file_name().to_string_lossy().into_owned();
            if other == name {
                continue;
            }
            let Some(theirs) = loop_backing(roots, &other) else { continue };
            if backing_identity(&theirs) == mine {
                return Err(WriteRefusal::SharedBacking {
                    device: format!("/dev/{name}"),
                    backing,
                    other: format!("/dev/{other}"),
                });
            }
        }
    }
    // A loop over a block device (a partition, say) writes that device: it must be free too.
    let clean = backing.strip_suffix(" (deleted)").unwrap_or(&backing);
    if let Ok(m) = std::fs::metadata(clean) {
        if m.file_type().is_block_device() && roots.sys_class_block == Path::new("/sys/class/block") {
            return check_writable_device_number(m.rdev());
        }
    }
    Ok(())
}

/// The checks of [`check_writable_block_device`] for the device called `name` under `roots`.
pub fn check_writable_with(roots: &SysRoots, name: &str) -> Result<(), WriteRefusal> {
    let sys = roots.sys_class_block.join(name);
    // The device itself and each partition (subdirectories that have a `partition` file).
    let mut members = vec![name.to_string()];
    if let Ok(entries) = std::fs::read_dir(&sys) {
        for e in entries.flatten() {
            if e.path().join("partition").exists() {
                members.push(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    let mut numbers = Vec::new();
    for m in &members {
        let dir = roots.sys_class_block.join(m);
        if let Some(dev) = read_trim(&dir.join("dev")) {
            numbers.push((m.clone(), dev));
        }
        let holders: Vec<String> = std::fs::read_dir(dir.join("holders"))
            .map(|it| it.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        if !holders.is_empty() {
            return Err(WriteRefusal::Held { device: m.clone(), holders: holders.join(", ") });
        }
    }
    check_loop_aliases(roots, name)?;
    let mountinfo = std::fs::read_to_string(&roots.mountinfo)
        .map_err(|e| WriteRefusal::Io(roots.mountinfo.clone(), e))?;
    for line in mountinfo.lines() {
        // id parent major:minor root mount-point options ... - fstype source super-options
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else { continue };
        if fields.len() < 5 || fields.len() < sep + 3 {
            continue;
        }
        let source = fields[sep + 2];
        for (m, dev) in &numbers {
            let by_source = source.rsplit('/').next() == Some(m.as_str()) && source.starts_with("/dev/");
            if fields[2] == dev || by_source {
                return Err(WriteRefusal::Mounted {
                    device: format!("/dev/{m}"),
                    mount_point: fields[4].to_string(),
                    fstype: fields[sep + 1].to_string(),
                });
            }
        }
    }
    if let Ok(swaps) = std::fs::read_to_string(&roots.swaps) {
        for line in swaps.lines().skip(1) {
            if let Some(src) = line.split_whitespace().next() {
                if let Some(m) = members.iter().find(|m| src.rsplit('/').next() == Some(m.as_str())) {
                    return Err(WriteRefusal::Swap { device: format!("/dev/{m}") });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct FakeSys {
        dir: tempfile::TempDir,
    }

    impl FakeSys {
        fn new() -> FakeSys {
            let f = FakeSys { dir: tempfile::tempdir().unwrap() };
            f.device("sdz", "8:0", &[]);
            std::fs::write(f.dir.path().join("mountinfo"), "22 1 254:0 / / rw - ext4 /dev/vda rw\n").unwrap();
            std::fs::write(f.dir.path().join("swaps"), "Filename Type Size Used Priority\n").unwrap();
            f
        }
        fn device(&self, name: &str, dev: &str, holders: &[&str]) {
            let d = self.dir.path().join("class").join(name);
            std::fs::create_dir_all(d.join("holders")).unwrap();
            std::fs::write(d.join("dev"), dev).unwrap();
            for h in holders {
                std::fs::write(d.join("holders").join(h), "").unwrap();
            }
        }
        fn partition(&self, disk: &str, name: &str, dev: &str) {
            let d = self.dir.path().join("class").join(disk).join(name);
            std::fs::create_dir_all(d.join("holders")).unwrap();
            std::fs::write(d.join("dev"), dev).unwrap();
            std::fs::write(d.join("partition"), "1").unwrap();
            // sysfs lists partitions under /sys/class/block too
            let flat = self.dir.path().join("class").join(name);
            std::fs::create_dir_all(flat.join("holders")).unwrap();
            std::fs::write(flat.join("dev"), dev).unwrap();
        }
        fn roots(&self) -> SysRoots {
            SysRoots {
                mountinfo: self.dir.path().join("mountinfo"),
                swaps: self.dir.path().join("swaps"),
                sys_class_block: self.dir.path().join("class"),
                sys_dev_block: self.dir.path().join("dev"),
            }
        }
    }

    #[test]
    fn a_clean_device_may_be_written() {
        let f = FakeSys::new();
        assert!(check_writable_with(&f.roots(), "sdz").is_ok());
    }

    #[test]
    fn a_mounted_partition_protects_the_disk() {
        let f = FakeSys::new();
        f.partition("sdz", "sdz1", "8:1");
        std::fs::write(f.dir.path().join("mountinfo"), "30 1 8:1 / /data rw,relatime - xfs /dev/sdz1 rw\n")
            .unwrap();
        let e = check_writable_with(&f.roots(), "sdz").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("/dev/sdz1") && msg.contains("/data") && msg.contains("xfs"), "{msg}");
    }

    #[test]
    fn holders_and_swap_protect_the_disk() {
        let f = FakeSys::new();
        f.device("sdy", "8:16", &["dm-0"]);
        assert!(matches!(check_writable_with(&f.roots(), "sdy"), Err(WriteRefusal::Held { .. })));
        std::fs::write(
            f.dir.path().join("swaps"),
            "Filename Type Size Used Priority\n/dev/sdz partition 1 0 -2\n",
        )
        .unwrap();
        assert!(matches!(check_writable_with(&f.roots(), "sdz"), Err(WriteRefusal::Swap { .. })));
    }

    #[test]
    fn a_loop_device_sharing_its_backing_file_is_refused() {
        let f = FakeSys::new();
        let image = f.dir.path().join("fs.img");
        std::fs::write(&image, b"image").unwrap();
        for (name, dev) in [("loop7", "7:7"), ("loop8", "7:8"), ("loop9", "7:9")] {
            f.device(name, dev, &[]);
            std::fs::create_dir_all(f.dir.path().join("class").join(name).join("loop")).unwrap();
        }
        let backing = |name: &str, file: &Path| {
            std::fs::write(
                f.dir.path().join("class").join(name).join("loop/backing_file"),
                format!("{}\n", file.display()),
            )
            .unwrap()
        };
        backing("loop7", &image);
        assert!(check_writable_with(&f.roots(), "loop7").is_ok(), "sole user of its image");
        // The same image through a hard link is the same file.
        let link = f.dir.path().join("alias.img");
        std::fs::hard_link(&image, &link).unwrap();
        backing("loop8", &link);
        let e = check_writable_with(&f.roots(), "loop8").unwrap_err();
        assert!(matches!(e, WriteRefusal::SharedBacking { .. }), "{e}");
        assert!(e.to_string().contains("/dev/loop7"), "{e}");
        let other = f.dir.path().join("other.img");
        std::fs::write(&other, b"x").unwrap();
        backing("loop9", &other);
        assert!(check_writable_with(&f.roots(), "loop9").is_ok());
    }

    #[test]
    fn the_root_file_system_device_is_found_and_refused() {
        let dev = device_for_path(Path::new("/")).unwrap();
        let Some(dev) = dev else { return }; // root on a virtual file system: nothing to check
        assert!(!dev.name.is_empty());
        let stats = std::fs::read_to_string("/proc/diskstats").unwrap();
        assert!(stats.split_whitespace().any(|w| w == dev.name), "{} in /proc/diskstats", dev.name);
        let node = Path::new("/dev").join(&dev.name);
        if node.exists() {
            assert!(matches!(check_writable_block_device(&node), Err(WriteRefusal::Mounted { .. })));
        }
    }

    #[test]
    fn virtual_file_systems_have_no_device() {
        assert_eq!(device_for_path(Path::new("/proc/self")).unwrap(), None);
        assert_eq!(device_for_path(Path::new("/dev/shm/not-there-yet")).unwrap(), None);
    }

    #[test]
    fn not_a_block_device() {
        assert!(matches!(
            check_writable_block_device(Path::new("/dev/null")),
            Err(WriteRefusal::NotABlockDevice(_))
        ));
    }
}
