use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latencies in nanoseconds, 3 significant digits, from 1 ns to one hour (longer values clamp).
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
}

const MAX_TRACKED_NS: u64 = 3_600 * 1_000_000_000;

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        let hist = Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("valid histogram bounds");
        LatencyHistogram { hist }
    }

    /// Two significant digits (1 % precision) instead of three: an eighth of the memory (about
    /// 36 KB), so clearing and copying it out is cheap. For one histogram per interval of a
    /// series, where the agent pays for it between two operations.
    pub fn coarse() -> Self {
        let hist = Histogram::new_with_bounds(1, MAX_TRACKED_NS, 2).expect("valid histogram bounds");
        LatencyHistogram { hist }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.hist.add(&other.hist).expect("histograms with equal bounds always add");
    }

    pub fn summary(&self) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        let q = |p: f64| self.hist.value_at_quantile(p);
        LatencySummary {
            min: self.hist.min(),
            mean: self.hist.mean().round() as u64,
            max: self.hist.max(),
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
        }
    }

    /// The counts in fio-style bins ([`BIN_EDGES_NS`] and an overflow bin); they sum to
    /// [`LatencyHistogram::count`]. A recorded value belongs to the first bin whose edge is at
    /// least the lowest value the histogram cannot tell it apart from, so a value within the
    /// histogram's precision (0.1 %) above an edge may land in the bin below.
    pub fn bins(&self) -> Vec<LatencyBin> {
        let mut bins: Vec<LatencyBin> = BIN_EDGES_NS
            .iter()
            .map(|&edge| LatencyBin { le_ns: Some(edge), count: 0 })
            .chain(std::iter::once(LatencyBin { le_ns: None, count: 0 }))
            .collect();
        for v in self.hist.iter_recorded() {
            let value = self.hist.lowest_equivalent(v.value_iterated_to());
            let k = BIN_EDGES_NS.partition_point(|&edge| edge < value);
            bins[k].count += v.count_at_value();
        }
        bins
    }

    /// Every value recorded, as (value, count) pairs of the histogram's buckets: a compact
    /// copy for histograms that are kept many times over (one per interval of a series).
    pub fn recorded(&self) -> Vec<(u64, u64)> {
        self.hist.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    }

    /// Adds `count` values equal to `value` (as [`LatencyHistogram::recorded`] lists them).
    pub fn record_n(&mut self, value: u64, count: u64) {
        self.hist.saturating_record_n(value.max(1), count);
    }

    /// Forgets every value, keeping the allocation.
    pub fn clear(&mut self) {
        self.hist.reset();
    }

    /// Portable encoding (HdrHistogram V2), for sending a histogram to another process.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        V2Serializer::new().serialize(&self.hist, &mut out).expect("writing to a Vec cannot fail");
        out
    }

    pub fn from_bytes(mut bytes: &[u8]) -> Result<LatencyHistogram, String> {
        let hist: Histogram<u64> =
            Deserializer::new().deserialize(&mut bytes).map_err(|e| format!("{e:?}"))?;
        let mut h = LatencyHistogram::new();
        h.hist.add(&hist).map_err(|e| format!("{e:?}"))?;
        Ok(h)
    }
}

/// Upper edges of the latency bins, nanoseconds: 1-2-5 per decade from 1 µs to 100 s, as fio
/// reports its latency distribution. Values above the last edge fall in an overflow bin.
pub const BIN_EDGES_NS: [u64; 25] = {
    let mut edges = [0u64; 25];
    let mut decade = 1_000u64;
    let mut i = 0;
    while i < 24 {
        edges[i] = decade;
        edges[i + 1] = 2 * decade;
        edges[i + 2] = 5 * decade;
        decade *= 10;
        i += 3;
    }
    edges[24] = decade;
    edges
};

/// One latency bin: the operations whose latency is at most `le_ns` and above the previous
/// bin's edge; `le_ns` is null in JSON for the overflow bin (above 100 s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LatencyBin {
    pub le_ns: Option<u64>,
    pub count: u64,
}

/// Latency percentiles in nanoseconds (`lat_ns` in JSON, the same keys in every command).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub min: u64,
    /// Rounded to the nanosecond.
    pub mean: u64,
    pub max: u64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub p99_99: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_within_precision() {
        let mut h = LatencyHistogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 10);
        }
        let s = h.summary();
        let close = |got: u64, want: u64| (got as f64 - want as f64).abs() / want as f64 <= 0.001;
        assert!(close(s.p50, 500_000), "{}", s.p50);
        assert!(close(s.p99, 990_000), "{}", s.p99);
        assert!(close(s.p99_9, 999_000), "{}", s.p99_9);
        assert_eq!(s.min, 10);
        assert!(close(s.max, 1_000_000));
    }

    #[test]
    fn merge_and_serialize_round_trip() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        (0..1000).for_each(|v| a.record(1000 + v));
        (0..3000).for_each(|v| b.record(50_000 + v));
        let b2 = LatencyHistogram::from_bytes(&b.to_bytes()).unwrap();
        a.merge(&b2);
        assert_eq!(a.count(), 4000);
        let s = a.summary();
        assert!(s.p50 >= 50_000 && s.min <= 1000);
    }

    #[test]
    fn bin_edges_are_1_2_5_per_decade_from_1us_to_100s() {
        assert_eq!(&BIN_EDGES_NS[..4], &[1_000, 2_000, 5_000, 10_000]);
        assert_eq!(BIN_EDGES_NS[24], 100_000_000_000);
        assert!(BIN_EDGES_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn bins_count_every_value_once() {
        let mut h = LatencyHistogram::new();
        // Below the first edge, on edges, between edges, and beyond the last (clamped at 1 h).
        let values = [1, 999, 1_000, 1_001, 1_999, 4_999, 5_000, 7_000, 123_456_789, 99_000_000_000];
        for v in values {
            h.record(v);
        }
        h.record_n(3_000_000_000_000, 2); // 50 min: overflow
        let bins = h.bins();
        assert_eq!(bins.len(), BIN_EDGES_NS.len() + 1);
        assert_eq!(bins.iter().map(|b| b.count).sum::<u64>(), h.count());
        let count = |le: Option<u64>| bins.iter().find(|b| b.le_ns == le).unwrap().count;
        assert_eq!(count(Some(1_000)), 3, "1, 999 and 1000 are at most 1 µs");
        assert_eq!(count(Some(2_000)), 2);
        assert_eq!(count(Some(5_000)), 2);
        assert_eq!(count(Some(10_000)), 1);
        assert_eq!(count(Some(200_000_000)), 1);
        assert_eq!(count(Some(100_000_000_000)), 1);
        assert_eq!(count(None), 2);
        assert!(LatencyHistogram::new().bins().iter().all(|b| b.count == 0));
    }

    #[test]
    fn recorded_pairs_rebuild_the_histogram() {
        let mut h = LatencyHistogram::new();
        (1..5000u64).for_each(|v| h.record(v * 37));
        let mut copy = LatencyHistogram::new();
        for (v, n) in h.recorded() {
            copy.record_n(v, n);
        }
        assert_eq!(copy.count(), h.count());
        assert_eq!(copy.summary(), h.summary());
        h.clear();
        assert_eq!(h.count(), 0);
    }

    #[test]
    fn coarse_histograms_are_within_one_percent() {
        let mut h = LatencyHistogram::coarse();
        (1..=10_000u64).for_each(|v| h.record(v * 1000));
        let s = h.summary();
        let close = |got: u64, want: u64| (got as f64 - want as f64).abs() / want as f64 <= 0.01;
        assert!(close(s.p50, 5_000_000) && close(s.p99, 9_900_000) && close(s.max, 10_000_000), "{s:?}");
        let mut fine = LatencyHistogram::new();
        for (v, n) in h.recorded() {
            fine.record_n(v, n);
        }
        assert_eq!(fine.count(), h.count(), "a coarse copy adds into a fine histogram");
    }

    #[test]
    fn empty_histogram_summarizes_to_zeros() {
        assert_eq!(LatencyHistogram::new().summary(), LatencySummary::default());
    }
}
