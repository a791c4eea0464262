//! How a partition keeps to its scheduled time T: the time-driven patterns' budgets, the plan of
//! the size-driven pattern types 3 and 4, and the notes that say why a pattern or a partition
//! did not keep to the schedule.

use std::time::Duration;

use iolens_workload::format_bytes;

use super::rank::RankPattern;
use super::table2::{listed_chunks, MIB};
use super::{share, Method, PatternDef, PatternRecord};

/// How many calls a pattern of types 3 and 4 makes, and the segment size, from the bytes per
/// rank types 0–2 moved with the same chunk size (position in the chunk list).
pub(super) fn size_driven_plan(write: &[PatternRecord], ranks: u64, mpart: u64) -> (Vec<u64>, u64) {
    let per_rank = |pattern_type: u8, position: usize| -> Option<u64> {
        // Type 0 has one more pattern (1 MB chunks gathered from 2 MB of memory) with no
        // counterpart in the other types.
        let index = if pattern_type == 0 && position >= 2 { position + 1 } else { position };
        write.iter().filter(|p| p.pattern_type == pattern_type).nth(index).map(|p| p.bytes / ranks.max(1))
    };
    let mut calls = Vec::new();
    let mut segment = 0;
    for (position, (chunk, _, _)) in listed_chunks(mpart).iter().enumerate() {
        let moved: Vec<u64> = (0..=2).filter_map(|t| per_rank(t, position)).collect();
        let mean = if moved.is_empty() { 0 } else { moved.iter().sum::<u64>() / moved.len() as u64 };
        let n = mean.div_ceil(*chunk).max(1);
        calls.push(n);
        segment += n * chunk;
    }
    (calls, segment.div_ceil(MIB) * MIB)
}

/// The partition's schedule. A time-driven pattern (types 0–2, U > 0) gets its share of the
/// time left: `(T − elapsed − reserve) · share / (shares of the time-driven patterns left)`. On
/// schedule that is its share `T/3 · U/ΣU`; behind (a one-call minimum, a sync, a slow call ran
/// over) every pattern after shrinks alike, instead of the next ones starving; ahead (a capped
/// rewrite or read ended early) they get the time. The reserve is what the size-driven
/// patterns still to come (types 3 and 4, and the U = 0 and fill-up calls) are expected to take:
/// in the write, [`SIZE_DRIVEN_ESTIMATE`] × their shares; in rewrite and read, the same
/// pattern's write time scaled by how much faster or slower the method's time-driven patterns
/// moved their bytes than the write's.
pub(super) struct Schedule {
    /// (method, table index, share in ns, time-driven) in the order the patterns run.
    order: Vec<(Method, usize, u64, bool)>,
    t_ns: u64,
    /// Time of each finished pattern, by position in `order`.
    took: Vec<Option<u64>>,
    /// ns and bytes of each method's finished time-driven patterns.
    moved: [(u64, u64); 3],
}

/// How much longer than their shares the write's size-driven patterns are expected to take:
/// types 3 and 4 repeat, per chunk size, the mean of what types 0–2 moved, about 2/3 of the time
/// of types 0–2 at equal bandwidth where their 20 of 64 units give them 20/44 of it.
pub const SIZE_DRIVEN_ESTIMATE: f64 = 1.5;

fn method_slot(m: Method) -> usize {
    match m {
        Method::Write => 0,
        Method::Rewrite => 1,
        Method::Read => 2,
    }
}

impl Schedule {
    pub(super) fn new(table: &[PatternDef], t: Duration) -> Schedule {
        let mut order = Vec::new();
        for method in [Method::Write, Method::Rewrite, Method::Read] {
            for pattern_type in 0..=4u8 {
                for (index, def) in table.iter().enumerate().filter(|(_, p)| p.pattern_type == pattern_type) {
                    let timed = pattern_type <= 2 && def.units > 0;
                    order.push((method, index, share(t, def).as_nanos() as u64, timed));
                }
            }
        }
        let took = vec![None; order.len()];
        Schedule { order, t_ns: t.as_nanos() as u64, took, moved: [(0, 0); 3] }
    }

    pub(super) fn position(&self, method: Method, index: usize) -> usize {
        self.order
            .iter()
            .position(|(m, i, _, _)| *m == method && *i == index)
            .expect("every pattern is scheduled")
    }

    pub(super) fn done(&mut self, step: usize, r: &RankPattern) {
        self.took[step] = Some(r.ns);
        let (method, _, _, timed) = self.order[step];
        if timed && r.bytes > 0 {
            let m = &mut self.moved[method_slot(method)];
            m.0 += r.ns;
            m.1 += r.bytes;
        }
    }

    /// Time per byte of `method`'s time-driven patterns against the write's (1 until known).
    fn speed_factor(&self, method: Method) -> f64 {
        let per_byte = |(ns, bytes): (u64, u64)| (bytes > 0).then(|| ns as f64 / bytes as f64);
        match (per_byte(self.moved[method_slot(method)]), per_byte(self.moved[0])) {
            (Some(m), Some(w)) if w > 0.0 => (m / w).clamp(0.01, 100.0),
            _ => 1.0,
        }
    }

    /// What the size-driven pattern at `step` is expected to take.
    fn expected_ns(&self, step: usize) -> f64 {
        let (method, index, share_ns, _) = self.order[step];
        if method != Method::Write {
            let write = self.order.iter().position(|(m, i, _, _)| *m == Method::Write && *i == index);
            if let Some(ns) = write.and_then(|w| self.took[w]) {
                return ns as f64 * self.speed_factor(method);
            }
        }
        share_ns as f64 * SIZE_DRIVEN_ESTIMATE
    }

    pub(super) fn budget_ns(&self, step: usize, elapsed_ns: u64) -> u64 {
        let later = &self.order[step..];
        let shares: u64 = later.iter().filter(|p| p.3).map(|p| p.2).sum();
        let reserve: f64 =
            (step + 1..self.order.len()).filter(|&j| !self.order[j].3).map(|j| self.expected_ns(j)).sum();
        let left = (self.t_ns.saturating_sub(elapsed_ns) as f64 - reserve).max(0.0);
        (left * self.order[step].2 as f64 / shares.max(1) as f64) as u64
    }
}

/// A partition holds T when it runs at most this share of T over it.
pub const SCHEDULE_TOLERANCE: f64 = 0.1;

/// A partition that ran more than [`SCHEDULE_TOLERANCE`] past T: the case that warns.
pub fn overran_schedule(elapsed_s: f64, t: f64) -> bool {
    elapsed_s > (1.0 + SCHEDULE_TOLERANCE) * t
}

/// Why a pattern's time differs from what the schedule gave it: only deviations above 10% of
/// its time, and above 0.5% of T (tiny shares jitter by more than 10%), are explained.
pub(super) fn schedule_note(p: &PatternRecord, capped: bool, t: f64) -> Option<String> {
    let given = p.budget_s.unwrap_or(p.scheduled_s);
    let slack = (SCHEDULE_TOLERANCE * given).max(0.005 * t);
    let over = p.time_s > given + slack;
    let under = p.time_s < given - slack;
    let sync = if p.sync_s > 0.0 { format!(" (sync {:.3} s)", p.sync_s) } else { String::new() };
    match p.budget_s {
        Some(b) if over && p.calls <= 1 => Some(format!(
            "one call is the minimum: a call of {} took {:.3} s{sync}, the schedule left {b:.3} s",
            format_bytes(p.memory),
            p.time_s
        )),
        Some(b) if over && p.sync_s > p.time_s - b => Some(format!(
            "the closing sync took {:.3} s: {:.3} s against {b:.3} s left",
            p.sync_s, p.time_s
        )),
        Some(b) if over => Some(format!("{:.3} s against {b:.3} s left: calls slower than the estimate", p.time_s)),
        Some(b) if under && capped => Some(format!(
            "stopped at the write's {} calls (rewrite and read only touch written data): {:.3} s of {b:.3} s",
            p.calls, p.time_s
        )),
        Some(_) => None,
        None if p.units == 0 && over => {
            Some(format!("U = 0: one call outside the schedule, {:.3} s{sync}", p.time_s))
        }
        None if over || under => Some(format!(
            "size-driven (moves what types 0–2 moved with this chunk): {:.3} s against a share of {:.3} s{sync}",
            p.time_s, p.scheduled_s
        )),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::beff_io::results::pattern_record;
    use crate::beff_io::table2::{table2, KIB};

    #[test]
    fn size_driven_plan_uses_the_mean_of_types_0_to_2() {
        let table = table2(2 * MIB);
        let records: Vec<PatternRecord> = table
            .iter()
            .filter(|p| p.pattern_type <= 2)
            .map(|p| pattern_record(Method::Write, p, 3, 3 * p.memory * 2, 1))
            .collect();
        let (calls, segment) = size_driven_plan(&records, 2, 2 * MIB);
        // 1 KiB chunks: types 1 and 2 moved 3 KiB per rank; type 0 moved 3 MiB (1 MiB calls).
        let mean = (3 * MIB + 3 * KIB + 3 * KIB) / 3;
        assert_eq!(calls[4], mean.div_ceil(KIB));
        assert_eq!(segment % MIB, 0);
        let sum: u64 = calls.iter().zip(listed_chunks(2 * MIB)).map(|(c, (l, _, _))| c * l).sum();
        assert!(segment >= sum && segment - sum < MIB);
    }

    #[test]
    fn the_schedule_spreads_delays_and_reserves_for_size_driven_patterns() {
        let table = table2(2 * MIB);
        let t = Duration::from_secs(64 * 3);
        let mut s = Schedule::new(&table, t);
        // Pattern 1 (type 0, MPART, U = 4): a share of T/3 · 4/64 = 4 s.
        let first = s.position(Method::Write, 1);
        let on_time = s.budget_ns(first, 0);
        assert_eq!(s.order[first].2, 4_000_000_000);
        // Less than the share: the write's types 3 and 4 are expected to take longer than theirs.
        assert!(on_time < 4_000_000_000 && on_time > 3_000_000_000, "{on_time}");
        // 10 s behind: the delay is spread over all time-driven patterns left, by their shares,
        // rather than taken from this one alone.
        let behind = s.budget_ns(first, 10_000_000_000);
        let shares_left: u64 = s.order[first..].iter().filter(|p| p.3).map(|p| p.2).sum();
        let expected = on_time as f64 - 10e9 * 4e9 / shares_left as f64;
        assert!((behind as f64 - expected).abs() < 10.0, "{behind} vs {expected}");
        let later = s.position(Method::Read, 1);
        // Once the write's size-driven patterns have run, rewrite and read reserve their times.
        for step in 0..s.position(Method::Rewrite, 0) {
            let (_, _, share_ns, timed) = s.order[step];
            let ns = if timed { share_ns } else { 20_000_000_000 };
            s.done(step, &RankPattern { ns, bytes: if timed { ns } else { 0 }, ..RankPattern::default() });
        }
        let rewrite = s.position(Method::Rewrite, 1);
        assert_eq!(s.budget_ns(rewrite, 128_000_000_000), 0, "the reserve exceeds the time left");
        // Past T entirely: nothing but the one-call minimum.
        assert_eq!(s.budget_ns(later, 300_000_000_000), 0);
    }
}
