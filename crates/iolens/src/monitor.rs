//! `iolens monitor`: `iostat -x` figures from /proc/diskstats.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolens_device::{read_all_diskstats, DiskStats};
use iolens_metrics::IostatRow;
use iolens_report::table::Table;
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

fn render(rows: &[IostatRow]) -> String {
    // iostat -x's columns, in IEC units (MiB/s, KiB) and microseconds.
    let header = vec![
        "device",
        "r/s",
        "w/s",
        "rMiB/s",
        "wMiB/s",
        "rrqm/s",
        "wrqm/s",
        "avgrq KiB",
        "avgqu-sz",
        "r_await µs",
        "w_await µs",
        "%util",
    ];
    const MIB: f64 = (1u64 << 20) as f64;
    let mut t = Table::new(header);
    for r in rows {
        t.rows.push(vec![
            r.device.clone(),
            format!("{:.2}", r.read_iops),
            format!("{:.2}", r.write_iops),
            format!("{:.2}", r.read_bw_bytes_s / MIB),
            format!("{:.2}", r.write_bw_bytes_s / MIB),
            format!("{:.2}", r.read_merges_s),
            format!("{:.2}", r.write_merges_s),
            format!("{:.2}", r.avg_request_bytes / 1024.0),
            format!("{:.2}", r.avg_queue),
            format!("{:.1}", r.read_await_s * 1e6),
            format!("{:.1}", r.write_await_s * 1e6),
            format!("{:.2}", r.util * 100.0),
        ]);
    }
    let mut s = String::new();
    t.render(&mut s);
    s
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
