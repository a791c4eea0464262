//! One rank's loop over a partition: every pattern with every access method, the collective
//! decisions that end a time-driven pattern, and the log the rank keeps of what it measured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::results::pattern_record;
use super::schedule::{size_driven_plan, Schedule};
use super::table2::MIB;
use super::{
    BeffIoConfig, Method, PatternDef, PatternFile, PatternIo, PatternRecord, PatternStep, Placement, Ranks,
};

/// What one rank did in one pattern.
#[derive(Clone, Copy, Default)]
pub(super) struct RankPattern {
    pub(super) calls: u64,
    pub(super) bytes: u64,
    pub(super) ns: u64,
    /// Time-driven patterns: the time the schedule left the pattern (agreed by all ranks).
    pub(super) budget_ns: Option<u64>,
    /// The closing sync of a write pattern (inside `ns`).
    pub(super) sync_ns: u64,
    /// Stopped at its call cap (rewrite and read at the write's calls) before its time was up.
    pub(super) capped: bool,
}

struct RankContext<'a> {
    ranks: &'a dyn Ranks,
    stop: &'a AtomicBool,
    buffer: Vec<u8>,
    /// The first I/O error of this rank. The rank keeps taking part in every barrier and
    /// decision without doing I/O, so the others stop at the next decision instead of waiting
    /// for it forever.
    failed: Option<std::io::Error>,
    /// The closing sync of this rank's last write pattern: the next one keeps that much of its
    /// time for its own sync, which the batch decisions cannot see coming.
    last_sync_ns: u64,
}

impl RankContext<'_> {
    fn record(&mut self, result: std::io::Result<()>) {
        if let (Err(e), None) = (result, &self.failed) {
            self.failed = Some(e);
        }
    }

    /// Whether any rank was interrupted or failed: decided together, so all ranks agree.
    fn any_stopping(&self) -> bool {
        let mine = self.stop.load(Ordering::SeqCst) || self.failed.is_some();
        self.ranks.all_gather(mine as u64).contains(&1)
    }

    /// The collective decision after a batch: stop when any rank was interrupted, when the slowest
    /// rank used up the pattern's time, or at the call cap; otherwise the size of the next batch.
    fn next_batch(&self, done: u64, elapsed_ns: u64, budget_ns: u64, batch: u64, cap: u64) -> Option<u64> {
        let stop = (self.stop.load(Ordering::SeqCst) || self.failed.is_some()) as u64;
        let all = self.ranks.all_gather(elapsed_ns << 1 | stop);
        if all.iter().any(|v| v & 1 == 1) {
            return None;
        }
        let slowest = all.iter().map(|v| v >> 1).max().unwrap_or(0);
        if slowest >= budget_ns || done >= cap {
            return None;
        }
        let per_call = (slowest / done.max(1)).max(1);
        let fits = (budget_ns - slowest).div_ceil(per_call);
        Some((batch * 2).min(fits).min(cap - done).max(1))
    }

    fn run_pattern(
        &mut self,
        mut file: Option<&mut (dyn PatternFile + '_)>,
        method: Method,
        place: &Placement,
        calls: CallPlan,
    ) -> RankPattern {
        if place.chunk == 0 {
            return RankPattern::default();
        }
        let collective = matches!(place.pattern_type, 0 | 1 | 4);
        if let (Some(f), None) = (file.as_deref_mut(), &self.failed) {
            let result = f.begin(place);
            self.record(result);
        }
        let start = Instant::now();
        let mut done = 0u64;
        let mut batch = 1u64;
        let (budget_ns, cap) = match calls {
            // Calls stop early enough for the closing sync (ranks agree on the reserve).
            CallPlan::Timed { budget, cap } if method != Method::Read => {
                let reserve = self.ranks.all_gather(self.last_sync_ns).into_iter().max().unwrap_or(0);
                ((budget.as_nanos() as u64).saturating_sub(reserve), cap)
            }
            CallPlan::Timed { budget, cap } => (budget.as_nanos() as u64, cap),
            CallPlan::Exactly(n) => (u64::MAX, n),
        };
        // Out of `self` while the loop runs, so the decisions can borrow the rest.
        let mut buffer = std::mem::take(&mut self.buffer);
        let buf = &mut buffer[..place.memory as usize];
        loop {
            let end = (done + batch).min(cap);
            for call in done..end {
                if let (Some(f), None) = (file.as_deref_mut(), &self.failed) {
                    if let Err(e) = f.transfer(method, call, buf) {
                        self.failed = Some(e);
                    }
                }
                if collective {
                    self.ranks.collective_call_done();
                }
            }
            done = end;
            if matches!(calls, CallPlan::Exactly(_)) {
                if done >= cap {
                    break;
                }
                continue;
            }
            match self.next_batch(done, start.elapsed().as_nanos() as u64, budget_ns, batch, cap) {
                Some(next) => batch = next,
                None => break,
            }
        }
        self.buffer = buffer;
        let synced = Instant::now();
        if let (Some(f), None, true) = (file, &self.failed, method != Method::Read) {
            let result = f.sync();
            self.record(result);
        }
        let ns = start.elapsed().as_nanos() as u64;
        if method != Method::Read {
            self.last_sync_ns = synced.elapsed().as_nanos() as u64;
        }
        let (budget_ns, capped) = match calls {
            CallPlan::Timed { budget, cap } => {
                (Some(budget.as_nanos() as u64), done >= cap && cap < u64::MAX)
            }
            CallPlan::Exactly(_) => (None, false),
        };
        RankPattern {
            calls: done,
            bytes: done * place.memory,
            ns,
            budget_ns,
            sync_ns: if method != Method::Read { self.last_sync_ns } else { 0 },
            capped,
        }
    }
}

#[derive(Clone, Copy)]
enum CallPlan {
    /// Time-driven: as many calls as fit in `budget`, at most `cap`.
    Timed { budget: Duration, cap: u64 },
    /// Size-driven.
    Exactly(u64),
}

/// Everything one rank measured in one partition, per method, in Table 2 order.
#[derive(Default)]
pub struct RankLog {
    pub(super) patterns: Vec<(Method, usize, RankPattern)>,
    /// (method, type, open-to-close ns).
    pub(super) types: Vec<(Method, u8, u64)>,
    pub(super) segment: u64,
}

/// Numbers per pattern in [`RankLog::numbers`].
const NUMBERS_PER_PATTERN: usize = 6;

impl RankLog {
    /// This rank's measurements as plain numbers, to send to another process: per pattern its
    /// calls, bytes, ns, budget (u64::MAX for none), sync ns and capped flag, then per type its
    /// open-to-close ns. Which pattern and type each is comes from the receiver's own log: every
    /// rank runs the same patterns in the same order (the decisions are collective).
    pub fn numbers(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.patterns.len() * NUMBERS_PER_PATTERN + self.types.len());
        for (_, _, p) in &self.patterns {
            out.extend([p.calls, p.bytes, p.ns, p.budget_ns.unwrap_or(u64::MAX), p.sync_ns, p.capped as u64]);
        }
        out.extend(self.types.iter().map(|t| t.2));
        out
    }

    /// Another rank's log from its [`numbers`](RankLog::numbers), laid out as this one.
    pub fn with_numbers(&self, numbers: &[u64]) -> Result<RankLog, String> {
        let expected = self.patterns.len() * NUMBERS_PER_PATTERN + self.types.len();
        if numbers.len() != expected {
            return Err(format!(
                "a rank reported {} numbers where {expected} were expected: the ranks ran different patterns",
                numbers.len()
            ));
        }
        let (per_pattern, per_type) = numbers.split_at(self.patterns.len() * NUMBERS_PER_PATTERN);
        let patterns = self
            .patterns
            .iter()
            .zip(per_pattern.chunks_exact(NUMBERS_PER_PATTERN))
            .map(|((method, index, _), n)| {
                let p = RankPattern {
                    calls: n[0],
                    bytes: n[1],
                    ns: n[2],
                    budget_ns: (n[3] != u64::MAX).then_some(n[3]),
                    sync_ns: n[4],
                    capped: n[5] != 0,
                };
                (*method, *index, p)
            })
            .collect();
        let types = self.types.iter().zip(per_type).map(|((m, t, _), ns)| (*m, *t, *ns)).collect();
        Ok(RankLog { patterns, types, segment: self.segment })
    }
}

/// One rank's part of a partition: every pattern of Table 2 with every access method, through
/// `io`, in step with the other `ranks`. `started` is the partition's start (after a barrier).
/// Rank 0 tells `on_pattern` each pattern as it starts.
pub fn run_rank(
    ranks: &dyn Ranks,
    io: &mut dyn PatternIo,
    table: &[PatternDef],
    cfg: &BeffIoConfig,
    stop: &AtomicBool,
    started: Instant,
    on_pattern: &(dyn Fn(&PatternStep) + Sync),
) -> std::io::Result<RankLog> {
    let size = ranks.size() as u64;
    let rank = ranks.rank();
    let largest = table.iter().map(|p| p.memory).max().unwrap_or(MIB).max(MIB);
    let mut buffer = vec![0u8; largest as usize];
    iolens_engine::buffers::fill_random(&mut buffer, 0xbeff_0000 + rank as u64);
    let mut ctx = RankContext { ranks, stop, buffer, failed: None, last_sync_ns: 0 };
    let mut log = RankLog::default();
    let mut written: Vec<u64> = vec![0; table.len()];
    let mut plan: Option<(Vec<u64>, u64)> = None;
    // The schedule is one clock over the partition (see `Schedule`).
    let mut schedule = Schedule::new(table, cfg.time);
    let mut steps_started = 0usize;
    for method in [Method::Write, Method::Rewrite, Method::Read] {
        for pattern_type in 0..=4u8 {
            if pattern_type == 3 && plan.is_none() {
                // Gather the write counts of types 0–2 from this rank's own log: every rank
                // moved the same calls (collective decisions), so the plan is the same on all.
                let records: Vec<PatternRecord> = log
                    .patterns
                    .iter()
                    .filter(|(m, _, _)| *m == Method::Write)
                    .map(|(_, i, p)| pattern_record(Method::Write, &table[*i], p.calls, p.bytes * size, 0))
                    .collect();
                let p = size_driven_plan(&records, size, cfg.mpart);
                log.segment = p.1;
                plan = Some(p);
            }
            ranks.barrier();
            let opened = Instant::now();
            let mut file = match io.open(pattern_type, method) {
                Ok(f) => Some(f),
                Err(e) => {
                    ctx.record(Err(e));
                    None
                }
            };
            let mut base = 0u64;
            let of_type = table.iter().enumerate().filter(|(_, p)| p.pattern_type == pattern_type);
            for (position, (index, def)) in of_type.enumerate() {
                if ctx.any_stopping() {
                    break;
                }
                let step = schedule.position(method, index);
                let segment = plan.as_ref().map_or(0, |p| p.1);
                let mut place = Placement {
                    pattern_type,
                    ranks: size,
                    rank: rank as u64,
                    base,
                    segment,
                    chunk: def.chunk,
                    memory: def.memory,
                };
                let calls = if pattern_type >= 3 {
                    let (counts, _) = plan.as_ref().expect("planned before type 3");
                    if def.fill {
                        // The rest of the segment, in one call.
                        place.chunk = segment.saturating_sub(base);
                        place.memory = place.chunk;
                        CallPlan::Exactly(1)
                    } else {
                        CallPlan::Exactly(counts[position])
                    }
                } else if def.units == 0 {
                    CallPlan::Exactly(1)
                } else {
                    let mine = schedule.budget_ns(step, started.elapsed().as_nanos() as u64);
                    // The ranks' clocks and logs differ a little: all take the least.
                    let budget = ranks.all_gather(mine).into_iter().min().unwrap_or(0);
                    let budget = Duration::from_nanos(budget);
                    let cap = if method == Method::Write { u64::MAX } else { written[index] };
                    CallPlan::Timed { budget, cap }
                };
                if rank == 0 {
                    on_pattern(&PatternStep {
                        method,
                        pattern_type,
                        chunk: place.chunk,
                        done_fraction: steps_started as f64 / (3 * table.len()).max(1) as f64,
                    });
                }
                steps_started += 1;
                let result = ctx.run_pattern(file.as_deref_mut(), method, &place, calls);
                if method == Method::Write {
                    written[index] = result.calls;
                }
                base += place.advance(result.calls);
                schedule.done(step, &result);
                log.patterns.push((method, index, result));
            }
            drop(file);
            ranks.barrier();
            log.types.push((method, pattern_type, opened.elapsed().as_nanos() as u64));
        }
    }
    match ctx.failed {
        Some(e) => Err(e),
        None => Ok(log),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_log_travels_as_numbers() {
        let pattern = |calls| RankPattern {
            calls,
            bytes: calls * 10,
            ns: 7,
            budget_ns: (calls > 1).then_some(9),
            sync_ns: 3,
            capped: calls == 2,
        };
        let log = RankLog {
            patterns: vec![(Method::Write, 0, pattern(1)), (Method::Read, 4, pattern(2))],
            types: vec![(Method::Write, 0, 11), (Method::Read, 0, 12)],
            segment: 5,
        };
        let numbers = log.numbers();
        let back = log.with_numbers(&numbers).unwrap();
        assert_eq!(back.numbers(), numbers);
        assert_eq!(back.patterns[1].0, Method::Read);
        assert_eq!(back.patterns[1].1, 4);
        assert_eq!(back.patterns[1].2.budget_ns, Some(9));
        assert_eq!(back.patterns[0].2.budget_ns, None);
        assert!(back.patterns[1].2.capped && !back.patterns[0].2.capped);
        assert_eq!(back.types[1], (Method::Read, 0, 12));
        let err = log.with_numbers(&numbers[1..]).err().unwrap();
        assert!(err.contains("different patterns"), "{err}");
    }
}
