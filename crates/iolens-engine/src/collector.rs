//! The collector thread: merges the agents' busy-period rings into the global busy time, takes
//! the device counters at the start of the measurement window (the end of the ramp, slept to
//! exactly), once a second inside it and (by the caller) at its end, and reports progress.

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
    /// The device over the measurement window so far: its start snapshot and samples.
    pub device: DeviceTimeline,
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

/// The device counters over the measurement window: the snapshot at its start, per-second
/// samples inside it. Readings before the window (the ramp) count nowhere.
#[derive(Debug, Default)]
pub(crate) struct DeviceTimeline {
    /// The reading at the start of the window, and when it was taken.
    start: Option<(u64, DiskStats)>,
    last: Option<(u64, DiskStats)>,
    samples: Vec<DeviceSample>,
}

impl DeviceTimeline {
    /// A timeline whose window starts with this reading.
    pub fn starting(at_ns: u64, stats: DiskStats) -> DeviceTimeline {
        DeviceTimeline { start: Some((at_ns, stats)), last: Some((at_ns, stats)), samples: Vec::new() }
    }

    pub fn started(&self) -> bool {
        self.start.is_some()
    }

    /// A reading at `now_ns`: the window's start if none is set yet (the caller takes it at the
    /// window's start), else a sample once a second has passed since the last one.
    pub fn observe(&mut self, now_ns: u64, stats: DiskStats) {
        let Some((start_ns, _)) = self.start else {
            *self = DeviceTimeline::starting(now_ns, stats);
            return;
        };
        let Some((last_ns, last)) = self.last else { return };
        if now_ns.saturating_sub(last_ns) >= SAMPLE_EVERY_NS {
            let interval_s = (now_ns - last_ns) as f64 / 1e9;
            let t_s = (now_ns - start_ns) as f64 / 1e9;
            self.samples.push(DeviceSample::from_delta(t_s, interval_s, &stats.delta(&last)));
            self.last = Some((now_ns, stats));
        }
    }

    /// Whether a sample is due at `now_ns`.
    fn sample_due(&self, now_ns: u64) -> bool {
        self.last.is_some_and(|(t, _)| now_ns.saturating_sub(t) >= SAMPLE_EVERY_NS)
    }

    /// The counters over the window ended by `end` (read at `end_ns`): the delta, the window's
    /// length in seconds, and the samples. `None` when the window never started.
    pub fn finish(self, end_ns: u64, end: &DiskStats) -> Option<(DiskStats, f64, Vec<DeviceSample>)> {
        let (start_ns, start) = self.start?;
        Some((end.delta(&start), end_ns.saturating_sub(start_ns) as f64 / 1e9, self.samples))
    }
}

/// Merges the agents' rings until every agent is done. The device's window starts at
/// `window_start_ns` (the end of the ramp): `timeline` is taken then, unless it is already
/// started (no ramp: the caller read the device as the agents were released).
pub(crate) fn collect(
    mut rings: Vec<rtrb::Consumer<Interval>>,
    device: Option<&DeviceWatch>,
    busy_log: Option<PeriodLogWriter>,
    window_start_ns: u64,
    mut timeline: DeviceTimeline,
    mut tick: impl FnMut(),
) -> CollectorOutcome {
    let mut union = StreamingUnion::new(rings.len());
    if busy_log.is_some() {
        union = union.keeping_periods();
    }
    let mut log = PeriodLog { writer: busy_log, error: None };
    let mut closed = vec![false; rings.len()];
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
        if let Some(d) = device {
            if !timeline.started() {
                // Sleep to the ramp's end exactly rather than to the next drain, so the
                // window's first reading is taken at its start.
                let left = window_start_ns.saturating_sub(now);
                if open > 0 && left > 0 && left <= DRAIN_EVERY.as_nanos() as u64 {
                    std::thread::sleep(Duration::from_nanos(left));
                }
                if now_ns() >= window_start_ns {
                    if let Some(cur) = d.read() {
                        timeline.observe(now_ns(), cur);
                    }
                }
            } else if timeline.sample_due(now) {
                if let Some(cur) = d.read() {
                    timeline.observe(now_ns(), cur);
                }
            }
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
    CollectorOutcome { union: totals, peak_pending, device: timeline, log_error: log.finish() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(sectors: u64) -> DiskStats {
        DiskStats { read_ios: sectors / 8, read_sectors: sectors, ..Default::default() }
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn ramp_readings_are_outside_the_window() {
        // The ramp moved 64 MiB (131072 sectors) before the window; the window moves 4 MiB.
        let ramp_end = 10 * S;
        let mut t = DeviceTimeline::default();
        t.observe(ramp_end, reads(131_072));
        t.observe(ramp_end + S / 2, reads(131_072 + 4096)); // not a second yet: no sample
        t.observe(ramp_end + S, reads(131_072 + 8192));
        let (delta, window_s, samples) = t.finish(ramp_end + 2 * S, &reads(131_072 + 8192)).unwrap();
        assert_eq!(delta.read_bytes(), 4 << 20, "only what the window moved");
        assert_eq!(window_s, 2.0);
        assert_eq!(samples.len(), 1);
        assert_eq!((samples[0].t_s, samples[0].interval_s), (1.0, 1.0), "sample time from the window start");
        assert_eq!(samples[0].read_bytes, 4 << 20);
    }

    #[test]
    fn a_window_that_never_started_has_no_counters() {
        assert!(DeviceTimeline::default().finish(5, &reads(8)).is_none());
        let t = DeviceTimeline::starting(3 * S, reads(800));
        let (delta, window_s, samples) = t.finish(4 * S, &reads(808)).unwrap();
        assert_eq!((delta.read_sectors, window_s, samples.len()), (8, 1.0, 0));
    }
}
