//! `iolens monitor`'s sampling: `/proc/diskstats` read every interval and each watched device's
//! change turned into an [`IostatRow`], until the count is reached or the user stops it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use iolens_device::{active_disks, read_all_diskstats, DiskStats};
use serde::Serialize;

use crate::IostatRow;

/// What `monitor --json` writes: every sample of every device, in order.
#[derive(Debug, Default, Serialize)]
pub struct MonitorReport {
    #[serde(skip)]
    pub interrupted: bool,
    pub samples: Vec<IostatRow>,
}

impl iolens_output::contract::Body for MonitorReport {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
}

/// Why monitoring could not start or go on; `usage` when the user named a device that is not
/// there (bad input, exit 2), else the system failed (exit 1).
#[derive(Debug)]
pub struct MonitorError {
    pub message: String,
    pub usage: bool,
}

fn diskstats_failed(e: std::io::Error) -> MonitorError {
    MonitorError { message: format!("/proc/diskstats: {e}"), usage: false }
}

/// The counters of `devices` now, `None` for one that is not listed.
fn snapshot(devices: &[String]) -> Result<Vec<Option<DiskStats>>, MonitorError> {
    let all = read_all_diskstats().map_err(diskstats_failed)?;
    Ok(devices.iter().map(|d| all.iter().find(|(n, _)| n == d).map(|(_, s)| *s)).collect())
}

/// Samples `devices` (none: every device with I/O) every `interval`, `count` times (none: until
/// `stop`), handing each interval's rows to `each` as they come; returns them all.
pub fn monitor(
    devices: &[String],
    interval: Duration,
    count: Option<u64>,
    stop: &AtomicBool,
    mut each: impl FnMut(&[IostatRow]),
) -> Result<MonitorReport, MonitorError> {
    let devices =
        if devices.is_empty() { active_disks().map_err(diskstats_failed)? } else { devices.to_vec() };
    let mut prev = snapshot(&devices)?;
    if let Some(i) = prev.iter().position(Option::is_none) {
        let known = active_disks().unwrap_or_default().join(", ");
        return Err(MonitorError {
            message: format!(
                "no device {:?} in /proc/diskstats\n  hint: devices with I/O here: {known}",
                devices[i]
            ),
            usage: true,
        });
    }
    let mut report = MonitorReport::default();
    let mut last = Instant::now();
    let mut done = 0u64;
    while count.is_none_or(|c| done < c) {
        // Sleep in short steps so Ctrl-C ends the loop promptly.
        let due = last + interval;
        while Instant::now() < due && !stop.load(Ordering::SeqCst) {
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
        }
        if stop.load(Ordering::SeqCst) {
            report.interrupted = true;
            break;
        }
        let now = Instant::now();
        let cur = snapshot(&devices)?;
        let secs = (now - last).as_secs_f64();
        let rows: Vec<IostatRow> = devices
            .iter()
            .zip(cur.iter().zip(&prev))
            .filter_map(|(d, (c, p))| Some(IostatRow::from_delta(d, secs, &c.as_ref()?.delta(p.as_ref()?))))
            .collect();
        each(&rows);
        report.samples.extend(rows);
        prev = cur;
        last = now;
        done += 1;
    }
    Ok(report)
}
