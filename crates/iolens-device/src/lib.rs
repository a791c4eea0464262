//! Facts about the storage behind a path: which block device holds it, its `/proc/diskstats`
//! counters, the file system type and free space, and whether a device may be written.
//!
//! iolens reports device counters beside the application's to show cache hits and
//! amplification, and it never writes to a device in use; both rest on this crate. It only
//! reads `/proc` and `/sys` and issues read-only ioctls.

mod block;
mod diskstats;
mod fs;

pub use block::{
    check_writable_block_device, check_writable_device_number, check_writable_with, device_for_path,
    BlockDevice, SysRoots, WriteRefusal,
};
pub use diskstats::{
    active_disks, parse_diskstats, read_all_diskstats, read_diskstats, read_diskstats_from, DiskStats,
};
pub use fs::{
    block_device_logical_sector, block_device_size, filesystem_type, free_bytes, memory_total, FsType,
};
