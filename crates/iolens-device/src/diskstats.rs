//! `/proc/diskstats`: the kernel's per-device I/O counters, the source of `iostat -x`.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Counters of one block device. Sectors are always 512 bytes in this file, whatever the
/// device's sector size. Fields missing on older kernels read as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskStats {
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub read_ticks_ms: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    pub write_ticks_ms: u64,
    pub in_flight: u64,
    pub io_ticks_ms: u64,
    pub time_in_queue_ms: u64,
    pub discard_ios: u64,
    pub discard_merges: u64,
    pub discard_sectors: u64,
    pub discard_ticks_ms: u64,
    pub flush_ios: u64,
    pub flush_ticks_ms: u64,
}

const SECTOR: u64 = 512;

impl DiskStats {
    fn from_fields(v: &[u64]) -> DiskStats {
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        DiskStats {
            read_ios: g(0),
            read_merges: g(1),
            read_sectors: g(2),
            read_ticks_ms: g(3),
            write_ios: g(4),
            write_merges: g(5),
            write_sectors: g(6),
            write_ticks_ms: g(7),
            in_flight: g(8),
            io_ticks_ms: g(9),
            time_in_queue_ms: g(10),
            discard_ios: g(11),
            discard_merges: g(12),
            discard_sectors: g(13),
            discard_ticks_ms: g(14),
            flush_ios: g(15),
            flush_ticks_ms: g(16),
        }
    }

    /// Counter increase since `earlier` (counters that went backwards, e.g. on wrap, read 0);
    /// `in_flight` is a level, taken from `self`.
    pub fn delta(&self, earlier: &DiskStats) -> DiskStats {
        DiskStats {
            read_ios: self.read_ios.saturating_sub(earlier.read_ios),
            read_merges: self.read_merges.saturating_sub(earlier.read_merges),
            read_sectors: self.read_sectors.saturating_sub(earlier.read_sectors),
            read_ticks_ms: self.read_ticks_ms.saturating_sub(earlier.read_ticks_ms),
            write_ios: self.write_ios.saturating_sub(earlier.write_ios),
            write_merges: self.write_merges.saturating_sub(earlier.write_merges),
            write_sectors: self.write_sectors.saturating_sub(earlier.write_sectors),
            write_ticks_ms: self.write_ticks_ms.saturating_sub(earlier.write_ticks_ms),
            in_flight: self.in_flight,
            io_ticks_ms: self.io_ticks_ms.saturating_sub(earlier.io_ticks_ms),
            time_in_queue_ms: self.time_in_queue_ms.saturating_sub(earlier.time_in_queue_ms),
            discard_ios: self.discard_ios.saturating_sub(earlier.discard_ios),
            discard_merges: self.discard_merges.saturating_sub(earlier.discard_merges),
            discard_sectors: self.discard_sectors.saturating_sub(earlier.discard_sectors),
            discard_ticks_ms: self.discard_ticks_ms.saturating_sub(earlier.discard_ticks_ms),
            flush_ios: self.flush_ios.saturating_sub(earlier.flush_ios),
            flush_ticks_ms: self.flush_ticks_ms.saturating_sub(earlier.flush_ticks_ms),
        }
    }

    /// Adds another device's (or process's) counters, for totals over several devices.
    pub fn add(&mut self, o: &DiskStats) {
        self.read_ios += o.read_ios;
        self.read_merges += o.read_merges;
        self.read_sectors += o.read_sectors;
        self.read_ticks_ms += o.read_ticks_ms;
        self.write_ios += o.write_ios;
        self.write_merges += o.write_merges;
        self.write_sectors += o.write_sectors;
        self.write_ticks_ms += o.write_ticks_ms;
        self.in_flight += o.in_flight;
        self.io_ticks_ms += o.io_ticks_ms;
        self.time_in_queue_ms += o.time_in_queue_ms;
        self.discard_ios += o.discard_ios;
        self.discard_merges += o.discard_merges;
        self.discard_sectors += o.discard_sectors;
        self.discard_ticks_ms += o.discard_ticks_ms;
        self.flush_ios += o.flush_ios;
        self.flush_ticks_ms += o.flush_ticks_ms;
    }

    pub fn read_bytes(&self) -> u64 {
        self.read_sectors * SECTOR
    }

    pub fn write_bytes(&self) -> u64 {
        self.write_sectors * SECTOR
    }
}

/// Parses the text of `/proc/diskstats` (major, minor, name, then 11, 15 or 17 counters).
/// Malformed lines are skipped.
pub fn parse_diskstats(text: &str) -> Vec<(String, DiskStats)> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace();
            it.next()?.parse::<u32>().ok()?;
            it.next()?.parse::<u32>().ok()?;
            let name = it.next()?.to_string();
            let fields: Vec<u64> = it.map(|f| f.parse::<u64>()).collect::<Result<_, _>>().ok()?;
            (fields.len() >= 11).then(|| (name, DiskStats::from_fields(&fields)))
        })
        .collect()
}

/// Counters of `device_name` (e.g. `vda`) from `/proc/diskstats`.
pub fn read_diskstats(device_name: &str) -> io::Result<DiskStats> {
    read_diskstats_from(Path::new("/proc/diskstats"), device_name)
}

/// As [`read_diskstats`], from another file (tests).
pub fn read_diskstats_from(path: &Path, device_name: &str) -> io::Result<DiskStats> {
    let text = std::fs::read_to_string(path)?;
    parse_diskstats(&text).into_iter().find(|(n, _)| n == device_name).map(|(_, s)| s).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("device {device_name} not found in {}", path.display()),
        )
    })
}

/// Every device in `/proc/diskstats` with its counters.
pub fn read_all_diskstats() -> io::Result<Vec<(String, DiskStats)>> {
    Ok(parse_diskstats(&std::fs::read_to_string("/proc/diskstats")?))
}

/// Whole disks (not partitions) that have done any I/O since boot, by name.
pub fn active_disks() -> io::Result<Vec<String>> {
    let mut out: Vec<String> = read_all_diskstats()?
        .into_iter()
        .filter(|(name, s)| s.read_ios + s.write_ios > 0 && Path::new("/sys/block").join(name).exists())
        .map(|(name, _)| name)
        .collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
 254       0 vda 25961 4984 1551434 3729 5140 5785 553432 1563 0 2288 5383 3167 17 140920 85 238 5
 254       1 vda1 100 2 800 10 50 5 400 7 1 30 20
   8      16 sdb 1 2 3 4 5 6 7 8 0 10 11 12 13 14 15
 garbage line
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
";

    #[test]
    fn parses_all_field_counts() {
        let all = parse_diskstats(SAMPLE);
        assert_eq!(all.len(), 4);
        let vda = &all[0].1;
        assert_eq!(all[0].0, "vda");
        assert_eq!(vda.read_ios, 25961);
        assert_eq!(vda.read_bytes(), 1551434 * 512);
        assert_eq!(vda.io_ticks_ms, 2288);
        assert_eq!(vda.flush_ios, 238);
        assert_eq!(vda.flush_ticks_ms, 5);
        let old = &all[1].1;
        assert_eq!((old.write_sectors, old.time_in_queue_ms, old.discard_ios), (400, 20, 0));
        let mid = &all[2].1;
        assert_eq!((mid.discard_ticks_ms, mid.flush_ios), (15, 0));
    }

    #[test]
    fn delta_and_add() {
        let a = DiskStats { read_ios: 10, write_sectors: 100, in_flight: 3, ..Default::default() };
        let b = DiskStats { read_ios: 15, write_sectors: 90, in_flight: 1, ..Default::default() };
        let d = b.delta(&a);
        assert_eq!((d.read_ios, d.write_sectors, d.in_flight), (5, 0, 1));
        let mut t = a;
        t.add(&b);
        assert_eq!(t.read_ios, 25);
    }

    #[test]
    fn reads_from_a_file_and_names_missing_devices() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("diskstats");
        std::fs::write(&p, SAMPLE).unwrap();
        assert_eq!(read_diskstats_from(&p, "sdb").unwrap().read_ios, 1);
        let e = read_diskstats_from(&p, "nvme9n9").unwrap_err();
        assert!(e.to_string().contains("nvme9n9"));
    }
}
