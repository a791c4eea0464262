//! `iolens monitor`: `iostat -x` figures from /proc/diskstats.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolens_device::{read_all_diskstats, DiskStats};
use iolens_metrics::IostatRow;
use iolens_report::text::monitor::render;
use serde::Serialize;

use crate::cli::MonitorArgs;
use crate::cli::OutputArgs;
use crate::output::{fail, write_json_or_warn, EXIT_FAILED, EXIT_USAGE};

#[derive(Serialize)]
struct MonitorReport {
    #[serde(skip)]
    interrupted: bool,
    samples: Vec<IostatRow>,
}

impl iolens_report::Body for MonitorReport {
    fn interrupted(&self) -> bool {
        self.interrupted
    }
}

fn snapshot(devices: &[String]) -> std::io::Result<Vec<Option<DiskStats>>> {
    let all = read_all_diskstats()?;
    Ok(devices.iter().map(|d| all.iter().find(|(n, _)| n == d).map(|(_, s)| *s)).collect())
}

pub fn monitor(a: MonitorArgs, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    let out = OutputArgs { json: a.json.clone(), csv: None, keep: false, quiet: true };
    let interval =
        iolens_workload::parse_duration(&a.interval).ok().filter(|d| !d.is_zero()).ok_or_else(|| {
            fail(&out, &format!("--interval: {:?} is not a positive duration", a.interval), false, EXIT_USAGE)
        })?;
    let devices = if a.devices.is_empty() {
        iolens_device::active_disks()
            .map_err(|e| fail(&out, &format!("/proc/diskstats: {e}"), false, EXIT_FAILED))?
    } else {
        a.devices.clone()
    };
    let mut prev =
        snapshot(&devices).map_err(|e| fail(&out, &format!("/proc/diskstats: {e}"), false, EXIT_FAILED))?;
    if let Some(i) = prev.iter().position(Option::is_none) {
        let known = iolens_device::active_disks().unwrap_or_default().join(", ");
        return Err(fail(
            &out,
            &format!("no device {:?} in /proc/diskstats\n  hint: devices with I/O here: {known}", devices[i]),
            false,
            EXIT_USAGE,
        ));
    }
    let mut report = MonitorReport { interrupted: false, samples: vec![] };
    let mut last = Instant::now();
    let mut done = 0u64;
    while a.count.is_none_or(|c| done < c) {
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
        let cur = snapshot(&devices)
            .map_err(|e| fail(&out, &format!("/proc/diskstats: {e}"), false, EXIT_FAILED))?;
        let secs = (now - last).as_secs_f64();
        let rows: Vec<IostatRow> = devices
            .iter()
            .zip(cur.iter().zip(&prev))
            .filter_map(|(d, (c, p))| Some(IostatRow::from_delta(d, secs, &c.as_ref()?.delta(p.as_ref()?))))
            .collect();
        sayln!("{}", render(&rows));
        report.samples.extend(rows);
        prev = cur;
        last = now;
        done += 1;
    }
    if let Some(path) = &a.json {
        write_json_or_warn(path, &report);
    }
    Ok(())
}
