//! b_eff, the effective bandwidth of the communication network (section 4 of the b_eff_io
//! paper, seed `002`): the MPI-free part — message sizes, ring patterns, random patterns and
//! the averaging. The measurement itself is `iolens_mpi::beff_mpi`'s (feature `mpi`), the
//! terminal table `iolens_report::text::beff`'s.
//!
//! The definition, as the paper writes it:
//!
//! ```text
//! b_eff = logavg( logavg_ringpatterns  ( sum_L( max_mthd( max_rep( b(ringpat,  L, mthd, rep) ))) / 21 ),
//!                 logavg_randompatterns( sum_L( max_mthd( max_rep( b(randompat, L, mthd, rep) ))) / 21 ) )
//! b(pat, L, mthd, rep) = L * (total number of messages of pattern pat) * looplength
//!                        / (maximum time on each process for executing the pattern looplength times)
//! ```
//!
//! The average over message sizes is arithmetic (`sum_L(...)/21`); the averages over patterns
//! and of the two pattern kinds are logarithmic (geometric means).

use serde::{Deserialize, Serialize};

/// Number of message sizes: 1 B … 4 KiB doubling (13), then 8 geometric steps to Lmax.
pub const SIZES: usize = 21;
/// "Lmax must be less or equal 128 MB" (on systems with 32-bit int, as MPI counts are).
pub const LMAX_CAP: u64 = 128 << 20;
/// Loop length for the shortest message (the paper's 300); reduced dynamically.
pub const START_LOOPS: u64 = 300;
/// Each measurement's loop takes between these many seconds (2.5 and 5 ms).
pub const TARGET_MIN_S: f64 = 0.0025;
pub const TARGET_MAX_S: f64 = 0.005;
/// Repetitions of each measurement; the maximum bandwidth counts.
pub const REPS: usize = 3;

/// `Lmax = min(128 MB, (memory per processor) / 128)`, at least 4 KiB (the last doubling size).
pub fn lmax(memory_per_process: u64) -> u64 {
    (memory_per_process / 128).clamp(4096, LMAX_CAP)
}

/// Lmax of `--quick`.
pub const QUICK_LMAX: u64 = 64 << 10;

/// The Lmax `beff`'s flags ask for: from `--memory-per-process` (else `default_memory()`, the
/// node's memory over its ranks), capped by `--max-size` (at least 4 KiB, the 13th message size)
/// and by [`QUICK_LMAX`] with `--quick`. The message names the flag.
pub fn lmax_asked(
    memory_per_process: Option<&str>,
    max_size: Option<&str>,
    quick: bool,
    default_memory: impl FnOnce() -> u64,
) -> Result<u64, String> {
    let parse = |flag: &str, v: &str| iolens_workload::parse_size(v).map_err(|e| format!("{flag}: {e}"));
    let memory = match memory_per_process {
        Some(v) => parse("--memory-per-process", v)?,
        None => default_memory(),
    };
    let mut l = lmax(memory);
    if let Some(v) = max_size {
        let cap = parse("--max-size", v)?;
        if cap < 4096 {
            return Err("--max-size: Lmax must be at least 4 KiB (the 13th message size)".into());
        }
        l = l.min(cap);
    }
    Ok(if quick { l.min(QUICK_LMAX) } else { l })
}

/// The 21 message lengths: `1, 2, 4, … 4096, 4096·a, … 4096·a⁸ = Lmax`, with `a = (Lmax/4096)^(1/8)`
/// (rounded to whole bytes; the last is exactly Lmax).
pub fn message_sizes(lmax: u64) -> Vec<u64> {
    let lmax = lmax.max(4096);
    let mut v: Vec<u64> = (0..13).map(|i| 1u64 << i).collect();
    let a = (lmax as f64 / 4096.0).powf(1.0 / 8.0);
    for k in 1..=8 {
        let l = if k == 8 { lmax } else { (4096.0 * a.powi(k)).round() as u64 };
        v.push(l);
    }
    v
}

/// The three communication methods; the maximum bandwidth of all three counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// `MPI_Sendrecv` to the left, then `MPI_Sendrecv` to the right.
    Sendrecv,
    /// `MPI_Alltoallv` with nonzero counts only for the two ring neighbours.
    Alltoallv,
    /// `MPI_Irecv` ×2, `MPI_Isend` ×2, `MPI_Waitall`.
    Nonblocking,
}

pub const METHODS: [Method; 3] = [Method::Sendrecv, Method::Alltoallv, Method::Nonblocking];

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Sendrecv => "sendrecv",
            Method::Alltoallv => "alltoallv",
            Method::Nonblocking => "nonblocking",
        }
    }
}

/// Standard ring size of ring pattern `pattern` (1..=6) on `n` processes: 2, 4, 8,
/// `min(max(16, n/4), n)`, `min(max(32, n/2), n)`, `n`.
pub fn standard_ring_size(pattern: usize, n: usize) -> usize {
    match pattern {
        1 => 2,
        2 => 4,
        3 => 8,
        4 => (n / 4).max(16).min(n),
        5 => (n / 2).max(32).min(n),
        6 => n,
        _ => panic!("b_eff has ring patterns 1 to 6, not {pattern}"),
    }
}

/// Ring sizes of ring pattern `pattern` (1..=6) on `n` ≥ 2 processes, in rank order: the first
/// ring holds the lowest ranks. The paper's rule:
///
/// > 1. In the first ring pattern, all rings have the size 2, except the last ring which may
/// >    have the size 2 or three. […]
/// > 2. In the second ring pattern, the ring size is 4, except the last rings, that may have the
/// >    sizes 1*3, 1*5, or 2*5. If the number of processes is less or equal 7 then all processes
/// >    form one ring.
/// > 3. In the third ring pattern, the ring size is 8, except the last rings, that may have the
/// >    sizes 3*7, ... 1*7, 1*9, ... 4*9. This rule cannot be used for less than 29 processes.
/// >    In general the ring sizes are computed with ring_numbers.c [19]. […]
/// > 4. In the 4th ring pattern the standard ring size is min(max(16, size/4), size). […]
/// > 5. In the 5th ring pattern the standard ring size is min(max(32, size/2), size).
/// > 6. And in the last ring pattern, one ring includes all processes.
///
/// Generalized to every pattern with standard size `s`, `m = n / s` full rings and `r = n % s`
/// leftover ranks: `r == 0` gives `m` rings of `s`; `r ≤ s/2` (and `r ≤ m`) gives the last `r`
/// rings size `s+1`; otherwise the leftover forms one more ring and the last `s−r` rings have
/// size `s−1` (when `s−r ≤ m+1`). This reproduces patterns 1 and 2 and pattern 3 for n ≥ 29
/// exactly. Where that rule cannot be used (n < 29 in pattern 3, and similar small n in 4 and 5;
/// ring_numbers.c itself was not available to us) and for pattern 2 with n ≤ 7 (the paper's
/// "all processes form one ring"), iolens uses `max(1, n / s)` rings as equal in size as
/// possible, the larger ones last.
pub fn ring_sizes(pattern: usize, n: usize) -> Vec<usize> {
    assert!(n >= 2, "b_eff needs at least 2 processes");
    let s = standard_ring_size(pattern, n);
    if s >= n || (pattern == 2 && n <= 7) {
        return vec![n];
    }
    let (m, r) = (n / s, n % s);
    if r == 0 {
        return vec![s; m];
    }
    if r <= s / 2 && r <= m {
        let mut v = vec![s; m - r];
        v.extend(std::iter::repeat_n(s + 1, r));
        return v;
    }
    if r > s / 2 && s - r <= m + 1 {
        let mut v = vec![s; m + 1 - (s - r)];
        v.extend(std::iter::repeat_n(s - 1, s - r));
        return v;
    }
    // The rule cannot be used: floor(n/s) rings, sizes as equal as possible.
    let k = m.max(1);
    let (q, extra) = (n / k, n % k);
    let mut v = vec![q; k - extra];
    v.extend(std::iter::repeat_n(q + 1, extra));
    v
}

/// A pattern's rings as lists of ranks: consecutive positions of `order` (the identity for the
/// ring patterns, a random permutation for the random patterns) cut by `sizes`.
pub fn rings(order: &[usize], sizes: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::with_capacity(sizes.len());
    let mut at = 0;
    for &s in sizes {
        out.push(order[at..at + s].to_vec());
        at += s;
    }
    assert_eq!(at, order.len(), "ring sizes must add up to the number of processes");
    out
}

/// A seeded permutation of `0..n` (splitmix64 + Fisher–Yates): the same on every rank.
pub fn random_order(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// Ring or random pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Ring,
    Random,
}

/// One of the 12 averaged patterns: its kind, its ring pattern number (1..=6) and its rings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pattern {
    pub name: String,
    pub kind: Kind,
    pub number: usize,
    pub rings: Vec<Vec<usize>>,
}

impl Pattern {
    /// Messages one execution of the pattern sends: two per process (to the left and to the
    /// right neighbour).
    pub fn messages(&self) -> u64 {
        2 * self.rings.iter().map(|r| r.len() as u64).sum::<u64>()
    }

    /// `(left, right)` neighbours of `rank` in its ring.
    pub fn neighbours(&self, rank: usize) -> (usize, usize) {
        for ring in &self.rings {
            if let Some(i) = ring.iter().position(|&r| r == rank) {
                let k = ring.len();
                return (ring[(i + k - 1) % k], ring[(i + 1) % k]);
            }
        }
        panic!("rank {rank} is in no ring");
    }
}

/// The six ring patterns and the six random patterns (the same ring sizes on randomly permuted
/// ranks; random pattern `i` uses the permutation seeded `seed + i`).
pub fn patterns(n: usize, seed: u64) -> Vec<Pattern> {
    let identity: Vec<usize> = (0..n).collect();
    let mut v = Vec::new();
    for p in 1..=6 {
        v.push(Pattern {
            name: format!("ring{p}"),
            kind: Kind::Ring,
            number: p,
            rings: rings(&identity, &ring_sizes(p, n)),
        });
    }
    for p in 1..=6 {
        v.push(Pattern {
            name: format!("random{p}"),
            kind: Kind::Random,
            number: p,
            rings: rings(&random_order(n, seed.wrapping_add(p as u64)), &ring_sizes(p, n)),
        });
    }
    v
}

/// `b = L · messages · looplength / max time`, bytes/s.
pub fn bandwidth(size: u64, messages: u64, loops: u64, max_time_s: f64) -> f64 {
    size as f64 * messages as f64 * loops as f64 / max_time_s
}

/// The next loop length: scaled to aim at the middle of 2.5–5 ms, at least 1. Unlike the paper,
/// which only reduces the loop length from 300, a loop faster than 2.5 ms is lengthened too:
/// 300 exchanges of a short message take far less than 2.5 ms on current networks, and a timed
/// loop that short measures the timer more than the network (docs/mpi.md has the measurement).
pub fn next_loops(loops: u64, time_s: f64) -> u64 {
    if time_s <= 0.0 {
        return loops.saturating_mul(2).max(1);
    }
    let aim = (TARGET_MIN_S + TARGET_MAX_S) / 2.0;
    ((loops as f64 * aim / time_s).round() as u64).clamp(1, 1 << 30)
}

/// Logarithmic average (geometric mean); 0 when any value is 0 or the list is empty.
pub fn logavg(values: &[f64]) -> f64 {
    if values.is_empty() || values.iter().any(|&v| v <= 0.0) {
        return 0.0;
    }
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

/// One measurement of the protocol: every one is kept so b_eff can be recomputed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    pub pattern: String,
    pub kind: Kind,
    #[serde(rename = "size_bytes")]
    pub size: u64,
    pub method: Method,
    pub rep: usize,
    pub loops: u64,
    /// Maximum over ranks of the time for `loops` executions, seconds.
    pub time_s: f64,
    pub messages: u64,
    /// Bytes per second.
    #[serde(rename = "bw_bytes_s")]
    pub bandwidth: f64,
}

/// Per pattern, per size: the maximum over methods and repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PatternResult {
    pub pattern: String,
    pub kind: Kind,
    pub ring_sizes: Vec<usize>,
    /// Max over methods and repetitions, per message size (bytes/s), in the order of `sizes`.
    #[serde(rename = "by_size_bytes_s")]
    pub by_size: Vec<f64>,
    /// `sum_L(...)/21`: the arithmetic mean over the message sizes.
    #[serde(rename = "average_bytes_s")]
    pub average: f64,
    /// The value at Lmax.
    #[serde(rename = "at_lmax_bytes_s")]
    pub at_lmax: f64,
}

/// Table 1's columns (bytes/s).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub processes: usize,
    #[serde(rename = "b_eff_bytes_s")]
    pub b_eff: f64,
    #[serde(rename = "b_eff_per_process_bytes_s")]
    pub b_eff_per_process: f64,
    #[serde(rename = "lmax_bytes")]
    pub lmax: u64,
    #[serde(rename = "ping_pong_bytes_s")]
    pub ping_pong: Option<f64>,
    #[serde(rename = "b_eff_at_lmax_bytes_s")]
    pub b_eff_at_lmax: f64,
    #[serde(rename = "b_eff_at_lmax_per_process_bytes_s")]
    pub b_eff_at_lmax_per_process: f64,
    #[serde(rename = "ring_at_lmax_per_process_bytes_s")]
    pub ring_at_lmax_per_process: f64,
    #[serde(rename = "logavg_ring_bytes_s")]
    pub logavg_ring: f64,
    #[serde(rename = "logavg_random_bytes_s")]
    pub logavg_random: f64,
}

/// One repetition of the ping-pong (`MPI_Send`/`MPI_Recv`) between ranks 0 and 1.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PingPong {
    #[serde(rename = "size_bytes")]
    pub size: u64,
    pub rep: usize,
    pub loops: u64,
    pub time_s: f64,
    /// `2 · L · loops / time`, bytes/s.
    #[serde(rename = "bw_bytes_s")]
    pub bandwidth: f64,
}

/// The JSON of `iolens beff`: the result, Table 1's columns and the whole protocol, from which
/// b_eff can be recomputed with [`pattern_results`] and [`summarize`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BeffOutput {
    pub benchmark: String,
    pub mpi_library: String,
    /// Every bandwidth in this file is in bytes per second.
    pub units: String,
    pub formula: String,
    pub summary: Summary,
    #[serde(rename = "sizes_bytes")]
    pub sizes: Vec<u64>,
    pub patterns: Vec<Pattern>,
    pub results: Vec<PatternResult>,
    pub ping_pong: Vec<PingPong>,
    pub protocol: Vec<Measurement>,
}

impl iolens_output::contract::Body for BeffOutput {}

/// The definition, as written in the JSON.
pub const FORMULA: &str = "b_eff = logavg(logavg_ring(sum_L(max_method(max_rep(b)))/21), \
logavg_random(sum_L(max_method(max_rep(b)))/21)); b = L * messages * loops / max-over-ranks time";

/// Max over methods and repetitions of the measurements of one pattern at one size.
pub fn best(measurements: &[Measurement], pattern: &str, size: u64) -> f64 {
    measurements
        .iter()
        .filter(|m| m.pattern == pattern && m.size == size)
        .map(|m| m.bandwidth)
        .fold(0.0, f64::max)
}

/// Reduces a protocol to the per-pattern results.
pub fn pattern_results(
    patterns: &[Pattern],
    sizes: &[u64],
    measurements: &[Measurement],
) -> Vec<PatternResult> {
    patterns
        .iter()
        .map(|p| {
            let by_size: Vec<f64> = sizes.iter().map(|&l| best(measurements, &p.name, l)).collect();
            PatternResult {
                pattern: p.name.clone(),
                kind: p.kind,
                ring_sizes: p.rings.iter().map(|r| r.len()).collect(),
                average: by_size.iter().sum::<f64>() / by_size.len() as f64,
                at_lmax: *by_size.last().unwrap_or(&0.0),
                by_size,
            }
        })
        .collect()
}

/// b_eff and Table 1's columns from the per-pattern results.
pub fn summarize(results: &[PatternResult], processes: usize, lmax: u64, ping_pong: Option<f64>) -> Summary {
    let pick = |kind: Kind, f: fn(&PatternResult) -> f64| -> Vec<f64> {
        results.iter().filter(|r| r.kind == kind).map(f).collect()
    };
    let logavg_ring = logavg(&pick(Kind::Ring, |r| r.average));
    let logavg_random = logavg(&pick(Kind::Random, |r| r.average));
    let b_eff = logavg(&[logavg_ring, logavg_random]);
    let ring_lmax = logavg(&pick(Kind::Ring, |r| r.at_lmax));
    let random_lmax = logavg(&pick(Kind::Random, |r| r.at_lmax));
    let b_eff_at_lmax = logavg(&[ring_lmax, random_lmax]);
    let n = processes as f64;
    Summary {
        processes,
        b_eff,
        b_eff_per_process: b_eff / n,
        lmax,
        ping_pong,
        b_eff_at_lmax,
        b_eff_at_lmax_per_process: b_eff_at_lmax / n,
        ring_at_lmax_per_process: ring_lmax / n,
        logavg_ring,
        logavg_random,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_21_doubling_then_geometric_to_lmax() {
        let s = message_sizes(1 << 20);
        assert_eq!(s.len(), SIZES);
        assert_eq!(&s[..13], &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]);
        // a = (2^20 / 2^12)^(1/8) = 2 exactly.
        assert_eq!(&s[13..], &[8192, 16384, 32768, 65536, 131072, 262144, 524288, 1 << 20]);
        assert_eq!(*message_sizes(3_000_000).last().unwrap(), 3_000_000);
        assert!(message_sizes(3_000_000).windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn lmax_is_a_128th_of_memory_capped_at_128_mib() {
        assert_eq!(lmax(1 << 30), 8 << 20);
        assert_eq!(lmax(64 << 30), 128 << 20);
        assert_eq!(lmax(1 << 10), 4096);
    }

    fn check_rule(p: usize, n: usize) {
        let sizes = ring_sizes(p, n);
        let s = standard_ring_size(p, n);
        assert_eq!(sizes.iter().sum::<usize>(), n, "pattern {p}, n={n}: {sizes:?}");
        assert!(sizes.iter().all(|&k| k >= 2), "pattern {p}, n={n}: a ring below 2: {sizes:?}");
        // Every rank in exactly one ring, for the ring and for a random order.
        for order in [(0..n).collect::<Vec<_>>(), random_order(n, 7 + p as u64)] {
            let mut seen = vec![0; n];
            for ring in rings(&order, &sizes) {
                for r in ring {
                    seen[r] += 1;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "pattern {p}, n={n}");
        }
        // Standard-size rings come first, the deviating ones last.
        let first_odd = sizes.iter().position(|&k| k != s).unwrap_or(sizes.len());
        let deviating = &sizes[first_odd..];
        match p {
            1 => {
                // All rings 2, the last 2 or 3.
                assert!(sizes[..sizes.len() - 1].iter().all(|&k| k == 2), "n={n}: {sizes:?}");
                assert_eq!(*sizes.last().unwrap(), if n % 2 == 0 { 2 } else { 3 }, "n={n}");
                assert_eq!(sizes.len(), n / 2);
            }
            2 => {
                if n <= 7 {
                    assert_eq!(sizes, vec![n]);
                } else {
                    // Last rings 1*3, 1*5 or 2*5.
                    let expect: &[usize] = match n % 4 {
                        0 => &[],
                        1 => &[5],
                        2 => &[5, 5],
                        _ => &[3],
                    };
                    assert_eq!(deviating, expect, "n={n}: {sizes:?}");
                    assert_eq!(sizes.iter().filter(|&&k| k == 4).count(), sizes.len() - expect.len());
                }
            }
            3 if n >= 29 => {
                // Last rings 3*7 … 1*7 or 1*9 … 4*9.
                let r = n % 8;
                let expect: Vec<usize> = if r == 0 {
                    vec![]
                } else if r <= 4 {
                    vec![9; r]
                } else {
                    vec![7; 8 - r]
                };
                assert_eq!(deviating, &expect[..], "n={n}: {sizes:?}");
            }
            6 => assert_eq!(sizes, vec![n]),
            _ => {
                if s >= n {
                    assert_eq!(sizes, vec![n]);
                }
                // No ring is more than one rank off the standard size unless the rule could not
                // be used (then the rings are as equal as possible).
                let (lo, hi) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
                assert!(hi - lo <= 2, "pattern {p}, n={n}: {sizes:?}");
            }
        }
    }

    #[test]
    fn ring_size_rule_for_every_n_from_2_to_64() {
        for n in 2..=64 {
            for p in 1..=6 {
                check_rule(p, n);
            }
        }
        // Spot checks from the paper's text: 7 processes in pattern 1 are 0&1, 2&3, 4&5&6.
        assert_eq!(
            rings(&(0..7).collect::<Vec<_>>(), &ring_sizes(1, 7)),
            vec![vec![0, 1], vec![2, 3], vec![4, 5, 6]]
        );
        assert_eq!(ring_sizes(2, 11), vec![4, 4, 3]);
        assert_eq!(ring_sizes(3, 29), vec![8, 7, 7, 7]);
        assert_eq!(ring_sizes(3, 36), vec![9, 9, 9, 9]);
        assert_eq!(ring_sizes(4, 64), vec![16; 4]);
        assert_eq!(ring_sizes(5, 64), vec![32; 2]);
        assert_eq!(ring_sizes(4, 12), vec![12]);
    }

    #[test]
    fn patterns_are_six_rings_and_six_random_and_neighbours_wrap() {
        let ps = patterns(4, 1);
        assert_eq!(ps.len(), 12);
        assert_eq!(ps.iter().filter(|p| p.kind == Kind::Ring).count(), 6);
        assert_eq!(ps[0].neighbours(0), (1, 1));
        assert_eq!(ps[5].neighbours(0), (3, 1));
        assert_eq!(ps[5].messages(), 8);
        assert_eq!(random_order(10, 3), random_order(10, 3));
    }

    fn m(pattern: &str, kind: Kind, size: u64, method: Method, bandwidth: f64) -> Measurement {
        Measurement {
            pattern: pattern.into(),
            kind,
            size,
            method,
            rep: 0,
            loops: 1,
            time_s: 1.0,
            messages: 1,
            bandwidth,
        }
    }

    #[test]
    fn averaging_on_hand_made_numbers() {
        // Two sizes (1 and 2), one ring and one random pattern, on 2 processes.
        let ps = vec![
            Pattern { name: "ring1".into(), kind: Kind::Ring, number: 1, rings: vec![vec![0, 1]] },
            Pattern { name: "random1".into(), kind: Kind::Random, number: 1, rings: vec![vec![1, 0]] },
        ];
        let sizes = [1, 2];
        let ms = vec![
            // ring1, L=1: max(10, 30, 20) = 30; L=2: max(50, 70) = 70 → average (30+70)/2 = 50.
            m("ring1", Kind::Ring, 1, Method::Sendrecv, 10.0),
            m("ring1", Kind::Ring, 1, Method::Alltoallv, 30.0),
            m("ring1", Kind::Ring, 1, Method::Nonblocking, 20.0),
            m("ring1", Kind::Ring, 2, Method::Sendrecv, 50.0),
            m("ring1", Kind::Ring, 2, Method::Sendrecv, 70.0),
            // random1, L=1: 150; L=2: 250 → average 200.
            m("random1", Kind::Random, 1, Method::Nonblocking, 150.0),
            m("random1", Kind::Random, 2, Method::Alltoallv, 250.0),
        ];
        let r = pattern_results(&ps, &sizes, &ms);
        assert_eq!(r[0].by_size, vec![30.0, 70.0]);
        assert_eq!(r[0].average, 50.0);
        assert_eq!(r[1].average, 200.0);
        let s = summarize(&r, 2, 2, Some(5.0));
        // b_eff = sqrt(50 · 200) = 100; per process 50.
        assert!((s.b_eff - 100.0).abs() < 1e-9);
        assert!((s.b_eff_per_process - 50.0).abs() < 1e-9);
        // At Lmax: sqrt(70 · 250) = sqrt(17500) = 132.2875…; ring only at Lmax per process 35.
        assert!((s.b_eff_at_lmax - 17500f64.sqrt()).abs() < 1e-9);
        assert!((s.ring_at_lmax_per_process - 35.0).abs() < 1e-9);
        // logavg of 2, 8 and 32 is 8 (the cube root of 512).
        assert!((logavg(&[2.0, 8.0, 32.0]) - 8.0).abs() < 1e-9);
        // b = L · messages · loops / time: 1000 B · 8 · 10 / 0.004 s = 20 MB/s.
        assert!((bandwidth(1000, 8, 10, 0.004) - 2.0e7).abs() < 1e-3);
    }

    #[test]
    fn lmax_follows_memory_caps_and_quick() {
        assert_eq!(lmax_asked(Some("1m"), None, false, || unreachable!()), Ok(8 << 10));
        assert_eq!(lmax_asked(None, Some("64k"), false, || 1 << 30), Ok(64 << 10));
        assert_eq!(lmax_asked(None, None, true, || 1 << 30), Ok(QUICK_LMAX));
        assert!(lmax_asked(None, Some("1k"), false, || 1 << 30).unwrap_err().starts_with("--max-size"));
        assert!(lmax_asked(Some("x"), None, false, || 1 << 30)
            .unwrap_err()
            .starts_with("--memory-per-process"));
    }

    #[test]
    fn loop_length_aims_at_the_middle_of_2_5_to_5_ms() {
        // 300 loops in 7.5 ms → 150 loops for 3.75 ms.
        assert_eq!(next_loops(300, 0.0075), 150);
        assert_eq!(next_loops(1, 1.0), 1);
    }
}
