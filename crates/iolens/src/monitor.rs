//! `iolens monitor`: `iostat -x` figures from /proc/diskstats ([`iolens_metrics::monitor`]),
//! a table per sample.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolens_report::text::monitor::render;

use crate::cli::{MonitorArgs, OutputArgs};
use crate::output::{fail, write_json_or_warn, EXIT_FAILED, EXIT_USAGE};

pub fn monitor(a: MonitorArgs, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    let out = OutputArgs { json: a.json.clone(), csv: None, keep: false, quiet: true };
    let interval =
        iolens_workload::parse_duration(&a.interval).ok().filter(|d| !d.is_zero()).ok_or_else(|| {
            fail(&out, &format!("--interval: {:?} is not a positive duration", a.interval), false, EXIT_USAGE)
        })?;
    let report = iolens_metrics::monitor::monitor(&a.devices, interval, a.count, stop, |rows| {
        sayln!("{}", render(rows));
    })
    .map_err(|e| fail(&out, &e.message, false, if e.usage { EXIT_USAGE } else { EXIT_FAILED }))?;
    if let Some(path) = &a.json {
        write_json_or_warn(path, &report);
    }
    Ok(())
}
