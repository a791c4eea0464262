use iolens_device::DiskStats;
use serde::{Deserialize, Serialize};

/// One per-second sample of the device, as a delta over the sample's interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeviceSample {
    /// Seconds since the measurement window started (end of the sample's interval).
    pub t_s: f64,
    pub interval_s: f64,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Share of the interval the device had requests in flight (io_ticks).
    pub util: f64,
    /// Mean requests queued or in service (weighted time / interval).
    pub avg_queue: f64,
}

impl DeviceSample {
    pub fn from_delta(t_s: f64, interval_s: f64, d: &DiskStats) -> DeviceSample {
        let per = |ms: u64| if interval_s > 0.0 { ms as f64 / 1e3 / interval_s } else { 0.0 };
        DeviceSample {
            t_s,
            interval_s,
            read_ops: d.read_ios,
            write_ops: d.write_ios,
            read_bytes: d.read_bytes(),
            write_bytes: d.write_bytes(),
            util: per(d.io_ticks_ms).min(1.0),
            avg_queue: per(d.time_in_queue_ms),
        }
    }
}

/// Device-side counters over the measurement window, beside the application's.
///
/// Device figures count what reached the block device: cache hits never show up here, and
/// read-ahead, metadata and journal writes do. The counters are device-wide, so other activity
/// on the same device during the run is included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceReport {
    pub device: String,
    pub filesystem: String,
    /// Seconds between the two readings of the counters: the measurement window (from the end
    /// of the ramp to the end of the phase), within the few microseconds a reading takes.
    pub window_s: f64,
    /// Always true: the counters are the whole device's, so I/O of other processes on it
    /// during the window is included (see the `device_shared` warning).
    pub whole_device: bool,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub flushes: u64,
    /// io_ticks / wall: share of the window with requests in flight on the device.
    pub util: f64,
    /// Weighted time in queue / wall: mean number of requests queued or in service.
    pub avg_queue: f64,
    /// Device bytes / application bytes, per direction and in total (`None` without app bytes).
    pub read_amplification: Option<f64>,
    pub write_amplification: Option<f64>,
    pub amplification: Option<f64>,
    pub samples: Vec<DeviceSample>,
}

impl DeviceReport {
    /// Builds the report from the window's counter delta (over `window_s` seconds) and the
    /// application's byte counts.
    pub fn new(
        device: String,
        filesystem: String,
        delta: &DiskStats,
        window_s: f64,
        app_read_bytes: u64,
        app_write_bytes: u64,
        samples: Vec<DeviceSample>,
    ) -> DeviceReport {
        let whole = DeviceSample::from_delta(window_s, window_s, delta);
        let amp = |dev: u64, app: u64| (app > 0).then(|| dev as f64 / app as f64);
        DeviceReport {
            device,
            filesystem,
            window_s,
            whole_device: true,
            read_ops: delta.read_ios,
            write_ops: delta.write_ios,
            read_bytes: delta.read_bytes(),
            write_bytes: delta.write_bytes(),
            read_merges: delta.read_merges,
            write_merges: delta.write_merges,
            flushes: delta.flush_ios,
            util: whole.util,
            avg_queue: whole.avg_queue,
            read_amplification: amp(delta.read_bytes(), app_read_bytes),
            write_amplification: amp(delta.write_bytes(), app_write_bytes),
            amplification: amp(delta.read_bytes() + delta.write_bytes(), app_read_bytes + app_write_bytes),
            samples,
        }
    }
}

/// One device over one interval, with `iostat -x`'s figures (sysstat's definitions) under the
/// keys and units of every other iolens result: bytes, seconds, fractions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IostatRow {
    pub device: String,
    pub interval_s: f64,
    /// Completed reads and writes per second (iostat's r/s, w/s).
    pub read_iops: f64,
    pub write_iops: f64,
    /// Bytes read and written per second (iostat's rMB/s, wMB/s, there in MiB).
    pub read_bw_bytes_s: f64,
    pub write_bw_bytes_s: f64,
    /// Requests merged into others per second (rrqm/s, wrqm/s).
    pub read_merges_s: f64,
    pub write_merges_s: f64,
    /// Mean request size (avgrq-sz, there in 512-byte sectors).
    pub avg_request_bytes: f64,
    /// Mean number of requests queued or in service (avgqu-sz).
    pub avg_queue: f64,
    /// Mean time of a read / write request, queue included (r_await, w_await, there in ms).
    pub read_await_s: f64,
    pub write_await_s: f64,
    /// Share of the interval the device was busy, 0 to 1 (%util / 100).
    pub util: f64,
}

impl IostatRow {
    pub fn from_delta(device: &str, interval_s: f64, d: &DiskStats) -> IostatRow {
        let per_s = |v: u64| if interval_s > 0.0 { v as f64 / interval_s } else { 0.0 };
        let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
        let ios = d.read_ios + d.write_ios;
        IostatRow {
            device: device.to_string(),
            interval_s,
            read_iops: per_s(d.read_ios),
            write_iops: per_s(d.write_ios),
            read_bw_bytes_s: per_s(d.read_bytes()),
            write_bw_bytes_s: per_s(d.write_bytes()),
            read_merges_s: per_s(d.read_merges),
            write_merges_s: per_s(d.write_merges),
            avg_request_bytes: ratio(d.read_sectors + d.write_sectors, ios) * 512.0,
            avg_queue: per_s(d.time_in_queue_ms) / 1e3,
            read_await_s: ratio(d.read_ticks_ms, d.read_ios) / 1e3,
            write_await_s: ratio(d.write_ticks_ms, d.write_ios) / 1e3,
            util: (per_s(d.io_ticks_ms) / 1e3).min(1.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iostat_definitions() {
        // 2 s interval: 200 reads of 8 sectors (3 merged) in 400 ms of read time, 50 writes of
        // 16 sectors, device busy 1 s, 3 s of weighted queue time.
        let d = DiskStats {
            read_ios: 200,
            read_merges: 3,
            read_sectors: 1600,
            read_ticks_ms: 400,
            write_ios: 50,
            write_sectors: 800,
            write_ticks_ms: 100,
            io_ticks_ms: 1000,
            time_in_queue_ms: 3000,
            ..Default::default()
        };
        let r = IostatRow::from_delta("sda", 2.0, &d);
        assert_eq!((r.read_iops, r.write_iops, r.read_merges_s), (100.0, 25.0, 1.5));
        assert!((r.read_bw_bytes_s - 1600.0 * 512.0 / 2.0).abs() < 1e-9);
        assert_eq!(r.avg_request_bytes, 2400.0 / 250.0 * 512.0);
        assert_eq!(r.avg_queue, 1.5);
        assert_eq!((r.read_await_s, r.write_await_s), (0.002, 0.002));
        assert_eq!(r.util, 0.5);
        let idle = IostatRow::from_delta("sda", 1.0, &DiskStats::default());
        assert_eq!((idle.avg_request_bytes, idle.read_await_s, idle.util), (0.0, 0.0, 0.0));
    }

    #[test]
    fn amplification_and_utilization() {
        let delta = DiskStats {
            read_ios: 10,
            read_sectors: 2048, // 1 MiB
            write_ios: 4,
            write_sectors: 4096, // 2 MiB
            io_ticks_ms: 500,
            time_in_queue_ms: 2000,
            ..Default::default()
        };
        let r = DeviceReport::new("vda".into(), "ext4".into(), &delta, 1.0, 4 << 20, 1 << 20, vec![]);
        assert_eq!(r.read_bytes, 1 << 20);
        assert_eq!(r.write_bytes, 2 << 20);
        assert_eq!(r.read_amplification, Some(0.25), "most reads came from cache");
        assert_eq!(r.write_amplification, Some(2.0));
        assert_eq!(r.amplification, Some(3.0 / 5.0));
        assert!((r.util - 0.5).abs() < 1e-12);
        assert!((r.avg_queue - 2.0).abs() < 1e-12);
        let none = DeviceReport::new("vda".into(), "ext4".into(), &delta, 1.0, 0, 0, vec![]);
        assert_eq!(none.amplification, None);
    }
}
