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
    fn empty_histogram_summarizes_to_zeros() {
        assert_eq!(LatencyHistogram::new().summary(), LatencySummary::default());
    }
}
