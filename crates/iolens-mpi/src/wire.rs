//! What ranks send to rank 0: a rank's figures and mergeable counters (never per-op records),
//! and its busy periods in bounded chunks.

use iolens_metrics::{AgentRaw, CpuTime, DirectionLatency, LatencyHistogram, OpCounters};
use iolens_record::busy::UnionTotals;
use iolens_record::Interval;
use serde::{Deserialize, Serialize};

/// Busy periods per chunk sent to rank 0 (16 bytes each: 64 KiB a chunk). Rank 0 holds one
/// chunk per rank while merging, whatever the length of the run.
pub const CHUNK_PERIODS: usize = 4096;

/// [`AgentRaw`] in a form that crosses processes: counters, CPU, window, the rank's own busy
/// totals and its latency histogram (HdrHistogram V2, so buckets merge exactly).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawTotals {
    pub counters: OpCounters,
    pub cpu: CpuTime,
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    pub busy_ns: u64,
    pub busy_periods: u64,
    pub busy_first_start: u64,
    pub busy_last_end: u64,
    pub latency: Vec<u8>,
    /// Reads and writes apart, when the rank's agents mixed both: (read histogram, write
    /// histogram, read latency sum, write latency sum).
    #[serde(default)]
    pub by_direction: Option<(Vec<u8>, Vec<u8>, u64, u64)>,
}

impl RawTotals {
    pub fn from_raw(r: &AgentRaw) -> RawTotals {
        RawTotals {
            counters: r.counters,
            cpu: r.cpu,
            window_start_ns: r.window_start_ns,
            window_end_ns: r.window_end_ns,
            busy_ns: r.busy.busy_ns,
            busy_periods: r.busy.periods,
            busy_first_start: r.busy.first_start,
            busy_last_end: r.busy.last_end,
            latency: r.latency.to_bytes(),
            by_direction: r
                .by_direction
                .as_deref()
                .map(|d| (d.read.to_bytes(), d.write.to_bytes(), d.read_sum_ns, d.write_sum_ns)),
        }
    }

    pub fn to_raw(&self) -> Result<AgentRaw, String> {
        Ok(AgentRaw {
            counters: self.counters,
            latency: LatencyHistogram::from_bytes(&self.latency)?,
            by_direction: match &self.by_direction {
                Some((read, write, read_sum_ns, write_sum_ns)) => Some(Box::new(DirectionLatency {
                    read: LatencyHistogram::from_bytes(read)?,
                    write: LatencyHistogram::from_bytes(write)?,
                    read_sum_ns: *read_sum_ns,
                    write_sum_ns: *write_sum_ns,
                })),
                None => None,
            },
            busy: UnionTotals {
                busy_ns: self.busy_ns,
                periods: self.busy_periods,
                first_start: self.busy_first_start,
                last_end: self.busy_last_end,
            },
            cpu: self.cpu,
            window_start_ns: self.window_start_ns,
            window_end_ns: self.window_end_ns,
        })
    }
}

/// One rank's report to rank 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    pub rank: usize,
    pub host: String,
    /// The kernel's boot id where the rank ran: hosts with the same one (containers, namespaces)
    /// share its disks. Empty when unreadable.
    #[serde(default)]
    pub boot: String,
    pub raw: RawTotals,
    /// The files (or devices) this rank's agents used.
    pub files: Vec<String>,
    /// The rank's own result (its agents, warnings, device, error), as JSON.
    pub result: serde_json::Value,
}

impl RankReport {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a report always serializes")
    }
    pub fn decode(bytes: &[u8]) -> Result<RankReport, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("a rank's report is unreadable: {e}"))
    }
}

/// What defines the measurement of one rank's job, as (field, value) pairs in a fixed order:
/// the resolved job and the flags that shape the run, without what may differ per rank (its
/// output paths, its own directory). Every rank must have the same; rank 0 compares their
/// [`hash`](JobFingerprint::hash)es and, for the first rank that differs, its fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFingerprint {
    pub fields: Vec<(String, String)>,
}

impl JobFingerprint {
    pub fn push(&mut self, field: impl Into<String>, value: impl ToString) {
        self.fields.push((field.into(), value.to_string()));
    }

    /// FNV-1a over every field and value: the same on every rank and every build.
    pub fn hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for (field, value) in &self.fields {
            for b in field.bytes().chain([0]).chain(value.bytes()).chain([0]) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("strings serialize")
    }
    pub fn decode(bytes: &[u8]) -> Result<JobFingerprint, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("a rank's job description is unreadable: {e}"))
    }

    /// The first field in which `other` (rank `rank`'s) differs from this one (rank 0's), as
    /// "FIELD OTHER on rank R, THIS on rank 0"; a field one of them lacks is "(none)" there.
    pub fn first_difference(&self, other: &JobFingerprint, rank: usize) -> Option<String> {
        let get = |fp: &JobFingerprint, field: &str| {
            fp.fields.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone())
        };
        let fields = self.fields.iter().chain(&other.fields).map(|(f, _)| f);
        fields.map(|f| (f, get(self, f), get(other, f))).find(|(_, mine, theirs)| mine != theirs).map(
            |(field, mine, theirs)| {
                let none = || "(none)".to_string();
                format!(
                    "{field} {} on rank {rank}, {} on rank 0",
                    theirs.unwrap_or_else(none),
                    mine.unwrap_or_else(none)
                )
            },
        )
    }
}

/// The ranks whose hash differs from rank 0's (`hashes` in rank order).
pub fn ranks_differing(hashes: &[u64]) -> Vec<usize> {
    hashes.iter().enumerate().filter(|(_, h)| Some(*h) != hashes.first()).map(|(r, _)| r).collect()
}

/// The error every rank reports when `differing` ranks (never empty) run another job than rank 0;
/// `what`: the first difference of the first of them, when known.
pub fn another_job_message(differing: &[usize], what: Option<&str>) -> String {
    let mut list = String::new();
    let mut i = 0;
    while i < differing.len() {
        let mut j = i;
        while j + 1 < differing.len() && differing[j + 1] == differing[j] + 1 {
            j += 1;
        }
        if !list.is_empty() {
            list.push(',');
        }
        list.push_str(&match j - i {
            0 => differing[i].to_string(),
            1 => format!("{},{}", differing[i], differing[j]),
            _ => format!("{}-{}", differing[i], differing[j]),
        });
        i = j + 1;
    }
    let who = if differing.len() == 1 { "rank" } else { "ranks" };
    let verb = if differing.len() == 1 { "runs" } else { "run" };
    format!(
        "{who} {list} {verb} another job than rank 0{}; every rank must be given the same job (one command \
         line, one job file)",
        what.map(|w| format!(": {w}")).unwrap_or_default()
    )
}

/// A chunk of periods as `[start, end, start, end, …]`; an empty chunk ends a stream.
pub fn encode_chunk(periods: &[Interval]) -> Vec<u64> {
    periods.iter().flat_map(|p| [p.start, p.end]).collect()
}

pub fn decode_chunk(words: &[u64]) -> Vec<Interval> {
    words.chunks_exact(2).map(|w| Interval::new(w[0], w[1].max(w[0]))).collect()
}

/// A stream of periods arriving in chunks from `next_chunk` (an empty chunk ends it), each
/// period moved by `correct` (monotone, so the stream stays sorted).
pub struct ChunkStream<F, C> {
    next_chunk: F,
    correct: C,
    buf: std::vec::IntoIter<Interval>,
    done: bool,
    last_start: u64,
}

impl<F: FnMut() -> Vec<Interval>, C: Fn(u64) -> u64> ChunkStream<F, C> {
    pub fn new(next_chunk: F, correct: C) -> Self {
        ChunkStream { next_chunk, correct, buf: Vec::new().into_iter(), done: false, last_start: 0 }
    }
}

impl<F: FnMut() -> Vec<Interval>, C: Fn(u64) -> u64> Iterator for ChunkStream<F, C> {
    type Item = Interval;
    fn next(&mut self) -> Option<Interval> {
        loop {
            if let Some(p) = self.buf.next() {
                // Rounding of the drift term may not move a start before the previous one.
                let start = (self.correct)(p.start).max(self.last_start);
                let end = (self.correct)(p.end).max(start);
                self.last_start = start;
                return Some(Interval::new(start, end));
            }
            if self.done {
                return None;
            }
            let chunk = (self.next_chunk)();
            if chunk.is_empty() {
                self.done = true;
                return None;
            }
            self.buf = chunk.into_iter();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolens_record::busy::{merge_sorted_streams, union_of};

    #[test]
    fn raw_totals_round_trip_and_histograms_merge_by_bucket() {
        let mut a = AgentRaw::default();
        a.counters.read_ops = 3;
        a.counters.read_bytes = 3 * 4096;
        for ns in [1_000, 2_000, 3_000] {
            a.latency.record(ns);
        }
        a.cpu.user_s = 0.25;
        a.window_start_ns = 10;
        a.window_end_ns = 99;
        a.busy = UnionTotals { busy_ns: 50, periods: 2, first_start: 10, last_end: 90 };
        let back = RawTotals::from_raw(&a).to_raw().unwrap();
        assert_eq!(back.counters, a.counters);
        assert_eq!(back.busy, a.busy);
        assert_eq!((back.window_start_ns, back.window_end_ns), (10, 99));
        assert_eq!(back.latency.count(), 3);
        let mut b = AgentRaw::default();
        for _ in 0..97 {
            b.latency.record(1_000_000);
        }
        let mut merged = back.clone();
        merged.merge_except_busy(&RawTotals::from_raw(&b).to_raw().unwrap());
        let s = merged.latency.summary();
        assert_eq!(merged.latency.count(), 100);
        assert!(s.p50 >= 999_000 && s.min <= 1_000, "{s:?}");
    }

    #[test]
    fn reads_and_writes_kept_apart_cross_ranks_apart() {
        let mut mixed = AgentRaw::default();
        mixed.split_directions();
        mixed.counters.read_ops = 2;
        mixed.counters.write_ops = 1;
        mixed.record_latency(false, 1_000);
        mixed.record_latency(false, 3_000);
        mixed.record_latency(true, 50_000);
        let back = RawTotals::from_raw(&mixed).to_raw().unwrap();
        let d = back.by_direction.as_deref().expect("the split crosses the wire");
        assert_eq!((d.read.count(), d.write.count()), (2, 1));
        assert_eq!((d.read_sum_ns, d.write_sum_ns), (4_000, 50_000));
        assert!(RawTotals::from_raw(&AgentRaw::default()).to_raw().unwrap().by_direction.is_none());
    }

    #[test]
    fn chunked_streams_merge_to_the_union_of_everything() {
        let rank_a: Vec<Interval> = (0..10_000u64).map(|i| Interval::new(i * 100, i * 100 + 60)).collect();
        let rank_b: Vec<Interval> =
            (0..7_000u64).map(|i| Interval::new(i * 150 + 30, i * 150 + 100)).collect();
        let mut all: Vec<Interval> = rank_a.iter().chain(&rank_b).copied().collect();
        let want = union_of(&mut all);
        let streams: Vec<_> = [rank_a, rank_b]
            .into_iter()
            .map(|periods| {
                let words = encode_chunk(&periods);
                let mut chunks: Vec<Vec<u64>> = words.chunks(2 * CHUNK_PERIODS).map(|c| c.to_vec()).collect();
                chunks.reverse();
                ChunkStream::new(move || chunks.pop().map(|c| decode_chunk(&c)).unwrap_or_default(), |t| t)
            })
            .collect();
        assert_eq!(merge_sorted_streams(streams), want);
    }

    #[test]
    fn correction_moves_a_skewed_rank_back() {
        let skewed = vec![Interval::new(5_000_100, 5_000_200)];
        let mut once = Some(skewed);
        let s = ChunkStream::new(move || once.take().unwrap_or_default(), |t| t - 5_000_000);
        assert_eq!(s.collect::<Vec<_>>(), vec![Interval::new(100, 200)]);
    }

    #[test]
    fn fingerprints_name_the_first_field_that_differs() {
        let of = |pairs: &[(&str, &str)]| JobFingerprint {
            fields: pairs.iter().map(|(f, v)| (f.to_string(), v.to_string())).collect(),
        };
        let zero = of(&[("agents", "1"), ("rw", "write"), ("bs", "65536")]);
        let two = of(&[("agents", "1"), ("rw", "write"), ("bs", "4096")]);
        assert_eq!(zero.hash(), zero.clone().hash());
        assert_ne!(zero.hash(), two.hash());
        assert_eq!(zero.first_difference(&zero, 1), None);
        assert_eq!(zero.first_difference(&two, 2).unwrap(), "bs 4096 on rank 2, 65536 on rank 0");
        let more = of(&[("agents", "1"), ("rw", "write"), ("bs", "65536"), ("shared_file", "true")]);
        assert_eq!(zero.first_difference(&more, 3).unwrap(), "shared_file true on rank 3, (none) on rank 0");
        assert_eq!(JobFingerprint::decode(&two.encode()).unwrap(), two);
        // Field and value are apart: ("ab", "c") is not ("a", "bc").
        assert_ne!(of(&[("ab", "c")]).hash(), of(&[("a", "bc")]).hash());
    }

    #[test]
    fn the_message_lists_the_differing_ranks_in_runs() {
        assert_eq!(ranks_differing(&[7, 7, 9, 9]), vec![2, 3]);
        assert!(ranks_differing(&[7, 7, 7]).is_empty());
        let m = another_job_message(&[2, 3], Some("rw read on rank 2, write on rank 0"));
        assert!(
            m.starts_with("ranks 2,3 run another job than rank 0: rw read on rank 2, write on rank 0;"),
            "{m}"
        );
        assert!(m.ends_with("every rank must be given the same job (one command line, one job file)"), "{m}");
        assert!(another_job_message(&[1, 2, 3, 5, 7, 8], None)
            .starts_with("ranks 1-3,5,7,8 run another job than rank 0;"));
        assert!(another_job_message(&[4], None).starts_with("rank 4 runs another job than rank 0;"));
    }
}
