//! File-system facts: type, free space, and sizes of open device nodes.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A file system type from `statfs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsType {
    pub magic: i64,
    pub name: &'static str,
}

const MAGICS: &[(i64, &str)] = &[
    (0xEF53, "ext4"),
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0x0102_1994, "tmpfs"),
    (0x794C_7630, "overlayfs"),
    (0x6969, "nfs"),
    (0x2FC1_2FC1, "zfs"),
    (0xF2F5_2010, "f2fs"),
    (0x6573_5546, "fuse"),
    (0x8584_58F6, "ramfs"),
    (0x9FA0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x0BD0_0BD0, "lustre"),
    (0x4750_4653, "gpfs"),
    (0xFF53_4D42, "cifs"),
    (0xFE53_4D42, "smb2"),
    (0x0102_1997, "9p"),
    (0x7371_7368, "squashfs"),
    (0x4d44, "vfat"),
    (0x1373, "devfs"),
    (0x6462_6720, "debugfs"),
    (0x5346_544e, "ntfs"),
];

impl FsType {
    /// Whether files on this file system live in RAM (tmpfs, ramfs): no storage behind them.
    pub fn memory_backed(&self) -> bool {
        matches!(self.name, "tmpfs" | "ramfs")
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

fn nearest_existing(path: &Path) -> &Path {
    let mut p = path;
    while !p.exists() {
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => return Path::new("."),
        }
    }
    p
}

/// The type of the file system holding `path` (or its nearest existing ancestor).
pub fn filesystem_type(path: &Path) -> io::Result<FsType> {
    let c = c_path(nearest_existing(path))?;
    // SAFETY: statfs fills the struct we own from a valid C string.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let magic = st.f_type as i64 & 0xFFFF_FFFF;
    let name = MAGICS.iter().find(|(m, _)| *m == magic).map_or("unknown", |(_, n)| n);
    Ok(FsType { magic, name })
}

/// Bytes available to unprivileged writers on the file system holding `path`, or `None` for
/// file systems that keep no account of space (ramfs reports a size of 0).
pub fn free_bytes(path: &Path) -> io::Result<Option<u64>> {
    let c = c_path(nearest_existing(path))?;
    // SAFETY: statvfs fills the struct we own from a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.f_blocks > 0).then_some(st.f_bavail * st.f_frsize))
}

/// Size in bytes of an open block device.
pub fn block_device_size(fd: RawFd) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 into `size`.
    if unsafe { libc::ioctl(fd, BLKGETSIZE64, &mut size) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

/// Logical sector size of an open block device: the O_DIRECT alignment unit.
pub fn block_device_logical_sector(fd: RawFd) -> io::Result<u64> {
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int into `size`.
    if unsafe { libc::ioctl(fd, BLKSSZGET, &mut size) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size as u64)
}

// From <linux/fs.h>: _IOR(0x12, 114, size_t) and _IO(0x12, 104).
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKSSZGET: libc::c_ulong = 0x1268;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_shm_types() {
        let root = filesystem_type(Path::new("/")).unwrap();
        assert!(!root.name.is_empty());
        assert_eq!(filesystem_type(Path::new("/proc")).unwrap().name, "proc");
        assert_eq!(filesystem_type(Path::new("/dev/shm/missing/file")).unwrap().name, "tmpfs");
    }

    #[test]
    fn free_space_is_positive() {
        assert!(free_bytes(Path::new("/")).unwrap().unwrap() > 0);
        assert!(
            free_bytes(Path::new("/no/such/dir/file")).unwrap().unwrap() > 0,
            "nearest existing ancestor"
        );
    }

    #[test]
    fn device_ioctls_fail_cleanly_on_a_regular_file() {
        let f = tempfile::tempfile().unwrap();
        use std::os::fd::AsRawFd;
        assert!(block_device_size(f.as_raw_fd()).is_err());
    }
}

/// The machine's memory (`MemTotal` of /proc/meminfo), in bytes.
pub fn memory_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_total(&text)
}

fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod meminfo_tests {
    #[test]
    fn mem_total_in_bytes() {
        assert_eq!(super::parse_mem_total("MemFree: 5 kB\nMemTotal:  2048 kB\n"), Some(2 << 20));
        assert_eq!(super::parse_mem_total("nothing"), None);
        assert!(super::memory_total().unwrap() > 0);
    }
}
