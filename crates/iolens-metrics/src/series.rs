//! Per-interval time series (`--log-interval`): what each agent did in each interval of fixed
//! length since the run started, for plotting throughput and latency over time.
//!
//! An agent owns an [`IntervalRecorder`]. Per operation it adds to the current interval's
//! counters and latency histogram (no allocation, nothing shared); when an operation completes
//! past the interval's end, the interval is closed: its histogram (two significant digits, so
//! a small one) is copied out as compact (value, count) pairs and cleared for the next one. Intervals of all agents share one origin,
//! so the aggregate series merges the agents' interval `k`s.

use serde::Serialize;

use crate::LatencyHistogram;

/// One closed interval of one agent: raw and mergeable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IntervalRaw {
    pub ops: u64,
    pub bytes: u64,
    /// The latency histogram of the interval as (value, count) pairs.
    pub latency: Vec<(u64, u64)>,
}

/// The intervals one agent (or a merge of agents) recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesRaw {
    /// Start of interval 0, on the monotonic clock (ns).
    pub origin_ns: u64,
    pub interval_ns: u64,
    /// Interval `k` covers `[origin + k·interval, origin + (k+1)·interval)`.
    pub intervals: Vec<IntervalRaw>,
    /// When the recording ended: the last interval ends here, not at its full length.
    pub end_ns: u64,
}

/// Accumulates one agent's intervals while it runs.
#[derive(Debug)]
pub struct IntervalRecorder {
    series: SeriesRaw,
    /// End of the current interval (the one `intervals.len()` will hold).
    boundary_ns: u64,
    ops: u64,
    bytes: u64,
    latency: LatencyHistogram,
}

impl IntervalRecorder {
    /// Intervals of `interval_ns` from `origin_ns`; room for `expected` intervals is made now.
    pub fn new(origin_ns: u64, interval_ns: u64, expected: usize) -> IntervalRecorder {
        let interval_ns = interval_ns.max(1);
        IntervalRecorder {
            series: SeriesRaw {
                origin_ns,
                interval_ns,
                intervals: Vec::with_capacity(expected),
                end_ns: origin_ns,
            },
            boundary_ns: origin_ns.saturating_add(interval_ns),
            ops: 0,
            bytes: 0,
            latency: LatencyHistogram::coarse(),
        }
    }

    /// One operation that completed at `t_ns` after `latency_ns`, moving `bytes`.
    #[inline]
    pub fn record(&mut self, t_ns: u64, bytes: u64, latency_ns: u64) {
        if t_ns >= self.boundary_ns {
            self.advance(t_ns);
        }
        self.ops += 1;
        self.bytes += bytes;
        self.latency.record(latency_ns);
    }

    /// Closes the current interval and any empty ones up to the one holding `t_ns`.
    #[cold]
    fn advance(&mut self, t_ns: u64) {
        while t_ns >= self.boundary_ns {
            self.close_current();
            self.boundary_ns = self.boundary_ns.saturating_add(self.series.interval_ns);
        }
    }

    fn close_current(&mut self) {
        let latency = if self.ops > 0 { self.latency.recorded() } else { Vec::new() };
        self.series.intervals.push(IntervalRaw { ops: self.ops, bytes: self.bytes, latency });
        self.latency.clear();
        self.ops = 0;
        self.bytes = 0;
    }

    /// The intervals up to `end_ns` (the end of the agent's run). A last interval cut short by
    /// the end is kept only if operations completed in it: a sliver of the closing moments with
    /// nothing in it would plot as a drop to zero.
    pub fn finish(mut self, end_ns: u64) -> SeriesRaw {
        let end_ns = end_ns.max(self.series.origin_ns);
        // Completions recorded so far all lie before `end_ns`: closing up to it keeps them.
        if end_ns >= self.boundary_ns {
            self.advance(end_ns - 1);
        }
        if self.ops > 0 || end_ns == self.boundary_ns {
            self.close_current();
        }
        self.series.end_ns = end_ns;
        self.series
    }
}

/// Latency figures of one interval, nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IntervalLatency {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// One interval's figures (`series` in JSON): times in seconds since the run started.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IntervalFigures {
    pub start_s: f64,
    pub end_s: f64,
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bw_bytes_s: f64,
    pub lat_ns: IntervalLatency,
}

/// One agent's series.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentSeries {
    pub name: String,
    pub intervals: Vec<IntervalFigures>,
}

/// A run's time series: every agent's and their aggregate, on the same intervals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunSeries {
    pub interval_s: f64,
    pub aggregate: Vec<IntervalFigures>,
    pub agents: Vec<AgentSeries>,
}

impl SeriesRaw {
    /// Adds `other`'s intervals to the same-numbered ones here (same origin and length).
    pub fn merge(&mut self, other: &SeriesRaw) {
        if self.intervals.is_empty() && self.end_ns <= self.origin_ns {
            self.origin_ns = other.origin_ns;
            self.interval_ns = other.interval_ns;
        }
        if self.intervals.len() < other.intervals.len() {
            self.intervals.resize(other.intervals.len(), IntervalRaw::default());
        }
        for (mine, theirs) in self.intervals.iter_mut().zip(&other.intervals) {
            mine.ops += theirs.ops;
            mine.bytes += theirs.bytes;
            if !theirs.latency.is_empty() {
                let mut h = LatencyHistogram::new();
                for &(v, n) in mine.latency.iter().chain(&theirs.latency) {
                    h.record_n(v, n);
                }
                mine.latency = h.recorded();
            }
        }
        self.end_ns = self.end_ns.max(other.end_ns);
    }

    /// The figures of each interval; the last one ends at `end_ns`.
    pub fn figures(&self) -> Vec<IntervalFigures> {
        let mut hist = LatencyHistogram::new();
        let ns_to_s = |ns: u64| ns as f64 / 1e9;
        self.intervals
            .iter()
            .enumerate()
            .map(|(k, iv)| {
                let start = (k as u64).saturating_mul(self.interval_ns);
                let end =
                    start.saturating_add(self.interval_ns).min(self.end_ns.saturating_sub(self.origin_ns));
                let len_s = ns_to_s(end.saturating_sub(start));
                let per_s = |x: u64| if len_s > 0.0 { x as f64 / len_s } else { 0.0 };
                hist.clear();
                for &(v, n) in &iv.latency {
                    hist.record_n(v, n);
                }
                let s = hist.summary();
                IntervalFigures {
                    start_s: ns_to_s(start),
                    end_s: ns_to_s(end.max(start)),
                    ops: iv.ops,
                    bytes: iv.bytes,
                    iops: per_s(iv.ops),
                    bw_bytes_s: per_s(iv.bytes),
                    lat_ns: IntervalLatency { p50: s.p50, p99: s.p99, max: s.max },
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    // Latencies below 256 ns are exact in the interval histograms (two significant digits).

    #[test]
    fn operations_land_in_the_interval_of_their_completion() {
        let origin = 5 * MS;
        let mut r = IntervalRecorder::new(origin, 100 * MS, 4);
        r.record(origin + 10 * MS, 4096, 100);
        r.record(origin + 99 * MS, 4096, 150);
        // Nothing completes in interval 1; interval 2 has one op.
        r.record(origin + 250 * MS, 8192, 50_000);
        let s = r.finish(origin + 260 * MS);
        assert_eq!(s.intervals.len(), 3);
        assert_eq!((s.intervals[0].ops, s.intervals[0].bytes), (2, 8192));
        assert_eq!(s.intervals[1], IntervalRaw::default());
        assert_eq!((s.intervals[2].ops, s.intervals[2].bytes), (1, 8192));
        let f = s.figures();
        assert_eq!((f[0].start_s, f[0].end_s), (0.0, 0.1));
        assert!((f[0].iops - 20.0).abs() < 1e-9);
        assert_eq!(f[0].lat_ns.max, 150);
        assert_eq!(f[0].lat_ns.p50, 100);
        assert_eq!(f[1].iops, 0.0);
        // The last interval is cut at the end of the run: 1 op in 60 ms.
        assert!((f[2].end_s - 0.26).abs() < 1e-12);
        assert!((f[2].iops - 1.0 / 0.06).abs() < 1e-6);
        assert!((f[2].bw_bytes_s - 8192.0 / 0.06).abs() < 1e-6);
        assert!(f.iter().map(|i| i.ops).sum::<u64>() == 3);
    }

    #[test]
    fn the_last_interval_ends_with_the_run() {
        let mut r = IntervalRecorder::new(0, 100, 0);
        r.record(50, 1, 10);
        let s = r.finish(100);
        assert_eq!(s.intervals.len(), 1);
        let idle = IntervalRecorder::new(0, 100, 0).finish(300);
        assert_eq!(idle.intervals.len(), 3, "idle intervals are kept, with zeros");
        let cut = IntervalRecorder::new(0, 100, 0).finish(250);
        assert_eq!(cut.intervals.len(), 2, "an empty sliver at the end is not");
        let mut busy_end = IntervalRecorder::new(0, 100, 0);
        busy_end.record(220, 1, 10);
        assert_eq!(busy_end.finish(250).intervals.len(), 3, "a cut interval with operations is kept");
        assert_eq!(IntervalRecorder::new(0, 100, 0).finish(0).intervals.len(), 0);
    }

    #[test]
    fn merged_series_add_ops_and_latencies_per_interval() {
        let mut a = IntervalRecorder::new(0, 1_000, 2);
        let mut b = IntervalRecorder::new(0, 1_000, 2);
        for t in 0..10 {
            a.record(t * 100, 10, 100);
            b.record(t * 200, 20, 200);
        }
        let (a, b) = (a.finish(1_500), b.finish(2_000));
        let mut all = SeriesRaw::default();
        all.merge(&a);
        all.merge(&b);
        assert_eq!(all.intervals.len(), 2);
        assert_eq!(all.intervals[0].ops, 10 + 5);
        assert_eq!(all.intervals[1].ops, 5);
        let f = all.figures();
        assert_eq!(f[0].lat_ns.p50, 100);
        assert_eq!(f[0].lat_ns.max, 200);
        assert_eq!(f[1].lat_ns.p50, 200);
        assert_eq!(f[1].end_s, 2e-6);
    }
}
