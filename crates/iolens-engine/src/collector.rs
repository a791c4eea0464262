//! The collector thread: merges the agents' busy-period rings into the global busy time, samples
//! the device once a second, and reports progress.

use std::time::Duration;

use iolens_device::DiskStats;
use iolens_metrics::DeviceSample;
use iolens_record::busy::{PeriodLogWriter, StreamingUnion, UnionTotals};
use iolens_record::clock::now_ns;
use iolens_record::Interval;

/// How often the collector drains the rings.
const DRAIN_EVERY: Duration = Duration::from_millis(2);
const SAMPLE_EVERY_NS: u64 = 1_000_000_000;
const TICK_EVERY_NS: u64 = 100_000_000;

pub(crate) struct CollectorOutcome {
    pub union: UnionTotals,
    pub peak_pending: usize,
    pub samples: Vec<DeviceSample>,
    /// Why the busy-period log is incomplete, if it is.
    pub log_error: Option<std::io::Error>,
}

/// Writes the union's final periods to a log, remembering the first failure.
struct PeriodLog {
    writer: Option<PeriodLogWriter>,
    error: Option<std::io::Error>,
}

impl PeriodLog {
    fn write(&mut self, periods: &[Interval]) {
        if let Some(w) = &mut self.writer {
            if let Err(e) = w.write(periods) {
                self.error = Some(e);
                self.writer = None;
            }
        }
    }

    fn finish(mut self) -> Option<std::io::Error> {
        if let Some(w) = self.writer.take() {
            if let Err(e) = w.finish() {
                self.error.get_or_insert(e);
            }
        }
        self.error
    }
}

/// Device counters to sample: the whole disks behind the targets.
pub(crate) struct DeviceWatch {
    pub devices: Vec<String>,
}

impl DeviceWatch {
    pub fn read(&self) -> Option<DiskStats> {
        let mut total = DiskStats::default();
        for d in &self.devices {
            total.add(&iolens_device::read_diskstats(d).ok()?);
        }
        Some(total)
    }
}

pub(crate) fn collect(
    mut rings: Vec<rtrb::Consumer<Interval>>,
    device: Option<&DeviceWatch>,
    busy_log: Option<PeriodLogWriter>,
    window_start_ns: u64,
    mut tick: impl FnMut(),
) -> CollectorOutcome {
    let mut union = StreamingUnion::new(rings.len());
    if busy_log.is_some() {
        union = union.keeping_periods();
    }
    let mut log = PeriodLog { writer: busy_log, error: None };
    let mut closed = vec![false; rings.len()];
    let mut samples = Vec::new();
    let mut last_sample = (now_ns(), device.and_then(|d| d.read()));
    let mut last_tick = now_ns();
    loop {
        let mut open = 0;
        for (i, ring) in rings.iter_mut().enumerate() {
            if closed[i] {
                continue;
            }
            // Check abandonment before draining: whatever was pushed before the agent
            // finished is then drained in this pass.
            let finished = ring.is_abandoned();
            while let Ok(iv) = ring.pop() {
                union.push(i, iv);
            }
            if finished {
                union.close(i);
                closed[i] = true;
            } else {
                open += 1;
            }
        }
        union.settle();
        log.write(&union.take_closed());
        let now = now_ns();
        if now - last_sample.0 >= SAMPLE_EVERY_NS {
            if let (Some(d), Some(prev)) = (device, last_sample.1) {
                if let Some(cur) = d.read() {
                    let interval_s = (now - last_sample.0) as f64 / 1e9;
                    let t_s = now.saturating_sub(window_start_ns) as f64 / 1e9;
                    samples.push(DeviceSample::from_delta(t_s, interval_s, &cur.delta(&prev)));
                    last_sample.1 = Some(cur);
                }
            }
            last_sample.0 = now;
        }
        if now - last_tick >= TICK_EVERY_NS {
            last_tick = now;
            tick();
        }
        if open == 0 {
            break;
        }
        std::thread::sleep(DRAIN_EVERY);
    }
    let peak_pending = union.peak_pending();
    let (totals, rest) = union.finish();
    log.write(&rest);
    CollectorOutcome { union: totals, peak_pending, samples, log_error: log.finish() }
}
