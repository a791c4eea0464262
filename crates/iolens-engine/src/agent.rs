//! The agent loop: issue requests, timestamp them, record completions.
//!
//! Per operation the loop takes two timestamps (submission, completion), records the latency in
//! the agent's own histogram, updates its own counters and in-flight tracker, and pushes a busy
//! period into its own single-producer ring. Everything it touches is owned by the agent, except
//! the ring (wait-free) and a progress counter stored every few thousand operations.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use iolens_metrics::{AgentRaw, CpuTime, IntervalRecorder, SeriesRaw};
use iolens_record::busy::{InFlightTracker, UnionSweep};
use iolens_record::clock::now_ns;
use iolens_record::trace::TraceBuffer;
use iolens_record::{Interval, OpKind, OpRecord, OpStatus};
use iolens_workload::{AgentSpec, FsyncPolicy};

use crate::backend::{Completion, Direction, IoBackend, Request};
use crate::offsets::{agent_rng, Calls, MixPicker};
use crate::pacing::Pacer;
use crate::verify::AgentVerify;

/// Busy periods longer than this are published in pieces so the collector can advance.
const SPLIT_PERIOD_NS: u64 = 2_000_000;
/// An idle agent re-publishes its watermark this often.
const IDLE_MARK_NS: u64 = 1_000_000;
/// Operations between progress publications.
const PROGRESS_EVERY: u64 = 1024;

/// Live counters one agent publishes for the progress display; padded to its own cache line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct AgentProgress {
    pub ops: AtomicU64,
    pub bytes: AtomicU64,
}

impl AgentProgress {
    /// Publishes the operations completed and the bytes issued so far.
    #[inline]
    fn publish(&self, ops: u64, bytes: u64) {
        self.ops.store(ops, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
    }
}

/// What an agent thread needs besides its backend.
pub(crate) struct AgentSetup<'a> {
    pub index: u16,
    pub spec: &'a AgentSpec,
    pub region: u64,
    /// Moves offsets into this agent's share of a file shared with other processes.
    pub map: crate::placement::OffsetMap,
    pub align: u64,
    pub stop: &'a AtomicBool,
    pub start: &'a Barrier,
    /// Holds the agent until the agents of earlier phases are done.
    pub gate: &'a PhaseGate,
    pub periods: rtrb::Producer<Interval>,
    pub trace: Option<TraceBuffer>,
    pub progress: &'a AgentProgress,
    /// Fills written blocks and checks read ones, outside the timed intervals.
    pub verify: Option<AgentVerify>,
    /// Per-interval series (`--log-interval`): the interval, and the run's origin, stored by the
    /// main thread before it releases the agents at `start`.
    pub series: Option<SeriesSetup<'a>>,
}

/// How an agent records its time series.
pub(crate) struct SeriesSetup<'a> {
    pub interval_ns: u64,
    pub origin_ns: &'a AtomicU64,
    /// Intervals to make room for before the first operation (0 when unknown).
    pub expected: usize,
}

/// Why an agent stopped before its termination condition.
#[derive(Debug)]
pub(crate) enum AgentFailure {
    /// A request failed with this errno.
    Op {
        errno: i32,
        offset: u64,
        dir: Direction,
    },
    Fsync(std::io::Error),
    Close(std::io::Error),
    Backend(std::io::Error),
}

impl AgentFailure {
    /// The failure of a request that completed with `-errno`.
    fn of_op(result: i64, op: &InFlight) -> AgentFailure {
        AgentFailure::Op {
            errno: (-result) as i32,
            offset: op.offset,
            dir: if op.write { Direction::Write } else { Direction::Read },
        }
    }
}

pub(crate) struct AgentOutcome {
    pub raw: AgentRaw,
    pub failure: Option<AgentFailure>,
    pub ring_stalls: u64,
    pub verify: Option<AgentVerify>,
    pub series: Option<SeriesRaw>,
}

#[derive(Clone, Copy, Default)]
struct InFlight {
    start: u64,
    offset: u64,
    len: u32,
    app_bytes: u32,
    write: bool,
    measured: bool,
}

impl InFlight {
    #[inline]
    fn new(start: u64, offset: u64, len: u32, app_bytes: u32, write: bool, measured: bool) -> InFlight {
        InFlight { start, offset, len, app_bytes, write, measured }
    }
}

fn thread_cpu() -> CpuTime {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    CpuTime { user_s: secs(ru.ru_utime), sys_s: secs(ru.ru_stime) }
}

/// Publishes busy periods to the collector and keeps the agent's own union.
struct PeriodSink {
    ring: rtrb::Producer<Interval>,
    own: UnionSweep,
    last_mark: u64,
    stalls: u64,
}

impl PeriodSink {
    #[inline]
    fn publish(&mut self, iv: Interval) {
        if !iv.is_empty() {
            self.own.push(iv);
        }
        self.last_mark = iv.end;
        let mut iv = iv;
        loop {
            match self.ring.push(iv) {
                Ok(()) => return,
                Err(rtrb::PushError::Full(back)) => {
                    iv = back;
                    self.stalls += 1;
                    std::thread::yield_now();
                }
            }
        }
    }

    #[inline]
    fn publish_opt(&mut self, iv: Option<Interval>) {
        if let Some(iv) = iv {
            self.publish(iv);
        }
    }

    /// While idle, tells the collector nothing of ours will start before `t`.
    #[inline]
    fn idle_mark(&mut self, t: u64) {
        if t.saturating_sub(self.last_mark) >= IDLE_MARK_NS {
            self.publish(Interval::new(t, t));
        }
    }
}

/// The job's phases: how many agents of each phase (in phase order) have not finished. An
/// agent starts once every earlier phase is done; waiting costs no I/O and is not measured.
pub(crate) struct PhaseGate {
    /// Index of each agent's phase.
    phase_of: Vec<usize>,
    running: Vec<AtomicU64>,
}

impl PhaseGate {
    pub(crate) fn new(job: &iolens_workload::Job) -> PhaseGate {
        let numbers = job.phase_numbers();
        let phase_of: Vec<usize> =
            job.agents.iter().map(|a| numbers.binary_search(&a.phase).expect("a phase of the job")).collect();
        let running = (0..numbers.len())
            .map(|k| AtomicU64::new(phase_of.iter().filter(|&&i| i == k).count() as u64))
            .collect();
        PhaseGate { phase_of, running }
    }

    fn open_for(&self, agent: usize) -> bool {
        self.running[..self.phase_of[agent]].iter().all(|r| r.load(Ordering::Acquire) == 0)
    }

    /// The agent is done (whatever its outcome): later phases may go once theirs is.
    pub(crate) fn finished(&self, agent: usize) {
        self.running[self.phase_of[agent]].fetch_sub(1, Ordering::AcqRel);
    }
}

/// Waits until `ready` or `stop`, telling the collector meanwhile that nothing of this agent is
/// in flight (so the other agents' periods keep flowing).
fn wait_idle(sink: &mut PeriodSink, stop: &AtomicBool, mut ready: impl FnMut(u64) -> bool) {
    loop {
        let now = now_ns();
        if ready(now) || stop.load(Ordering::Relaxed) {
            return;
        }
        sink.idle_mark(now);
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Sleeps until `due`, waking at least every 100 ms to honour `stop`.
fn sleep_until(due: u64, stop: &AtomicBool) {
    loop {
        let now = now_ns();
        if now >= due || stop.load(Ordering::Relaxed) {
            return;
        }
        let left = due - now;
        if left > 200_000 {
            std::thread::sleep(Duration::from_nanos((left - 100_000).min(100_000_000)));
        } else {
            std::hint::spin_loop();
        }
    }
}

pub(crate) fn run_agent<B: IoBackend>(mut backend: B, setup: AgentSetup) -> AgentOutcome {
    let spec = setup.spec;
    let depth = backend.depth();
    let mut rng = agent_rng(spec.seed);
    let mix = MixPicker::new(spec.op);
    let mut calls =
        Calls::new(&spec.pattern, &spec.sizes, setup.region, setup.align, spec.random_map, &mut rng);
    let mut free_slots: Vec<u16> = (0..depth as u16).rev().collect();
    let mut slots = vec![InFlight::default(); depth];
    let mut done: Vec<Completion> = Vec::with_capacity(depth);
    let mut rec = Recorders::new(spec, setup.periods, setup.trace, setup.index);
    let mut failure = None;
    let mut verify = setup.verify;

    if let Err(e) = backend.start() {
        failure = Some(AgentFailure::Backend(e));
    }
    rec.series = wait_for_start(
        &mut rec.sink,
        setup.start,
        setup.series,
        setup.stop,
        || setup.gate.open_for(setup.index as usize),
        spec.start_delay,
    );
    let t_start = now_ns();
    let Limits { ramp_end, deadline, byte_limit } = Limits::new(spec, setup.region, t_start);
    let mut pacer = Pacer::new(&spec.rate, t_start);
    let mut measuring = spec.ramp.is_zero();
    let mut cpu_start = if measuring { thread_cpu() } else { CpuTime::default() };
    rec.raw.window_start_ns = ramp_end;
    rec.sink.publish(Interval::new(t_start, t_start));

    let mut issuing = failure.is_none();
    let mut in_flight = 0usize;
    let mut issued_bytes = 0u64;
    let mut completed_ops = 0u64;
    let mut writes_since_fsync = 0u64;
    let mut wrote = false;
    let (fsync_every, data_only) = periodic_fsync(spec.fsync);

    loop {
        while issuing && in_flight < depth {
            if let Some(p) = &pacer {
                match pace(p, in_flight, &mut rec.sink, deadline, setup.stop) {
                    Pace::Go => {}
                    Pace::Later => break,
                    Pace::Stop => {
                        issuing = false;
                        break;
                    }
                }
            }
            let call = calls.next(&mut rng);
            let (offset, len) = (setup.map.apply(call.offset), call.len);
            let write = !mix.is_read(&mut rng);
            let slot = free_slots.pop().expect("a free slot while below depth");
            let dir = if write { Direction::Write } else { Direction::Read };
            if let (Some(v), true) = (&mut verify, write) {
                verify_fill(v, backend.buffer(slot), len, offset);
            }
            let t = now_ns();
            if let Err(e) = backend.submit(Request { dir, offset, len: len as u32, slot }) {
                failure = Some(AgentFailure::Backend(e));
                free_slots.push(slot);
                issuing = false;
                break;
            }
            let measured = t >= ramp_end;
            slots[slot as usize] =
                InFlight::new(t, offset, len as u32, call.app_bytes as u32, write, measured);
            in_flight += 1;
            if measured {
                rec.sink.publish_opt(rec.tracker.submit(t));
                issued_bytes += call.app_bytes;
                if issued_bytes >= byte_limit {
                    issuing = false;
                }
            }
            if let Some(p) = &mut pacer {
                p.issued(t, &mut rng);
            }
        }
        if in_flight == 0 {
            if issuing {
                continue;
            }
            break;
        }

        done.clear();
        if let Err(e) = backend.complete(1, |c| done.push(c)) {
            failure = Some(AgentFailure::Backend(e));
            break;
        }
        let t = now_ns();
        for c in &done {
            let op = slots[c.slot as usize];
            free_slots.push(c.slot);
            in_flight -= 1;
            let status = op_status(c.result, op.len);
            if op.measured {
                rec.record(&op, t, status);
            }
            if let Some(v) = &mut verify {
                verify_completion(v, &mut backend, &op, c, status);
            }
            if status == OpStatus::Error && failure.is_none() {
                failure = Some(AgentFailure::of_op(c.result, &op));
                issuing = false;
            }
            if op.write {
                wrote = true;
                writes_since_fsync += 1;
            }
        }
        completed_ops += done.len() as u64;
        if completed_ops % PROGRESS_EVERY < done.len() as u64 {
            setup.progress.publish(completed_ops, issued_bytes);
        }
        if fsync_every > 0 && writes_since_fsync >= fsync_every {
            writes_since_fsync = 0;
            if let Err(e) = rec.timed_fsync(&mut backend, data_only, ramp_end) {
                failure.get_or_insert(AgentFailure::Fsync(e));
                issuing = false;
            }
        }
        if !measuring && t >= ramp_end {
            measuring = true;
            cpu_start = thread_cpu();
        }
        if t >= deadline || setup.stop.load(Ordering::Relaxed) {
            issuing = false;
        }
        if rec.tracker.in_flight() == 0 {
            rec.sink.idle_mark(t);
        }
    }

    rec.close_target(&mut backend, spec.fsync == FsyncPolicy::AtEnd && wrote, &mut failure, ramp_end);
    rec.raw.window_end_ns = now_ns().max(ramp_end);
    if measuring {
        rec.raw.cpu = cpu_since(cpu_start);
    }
    setup.progress.publish(completed_ops, issued_bytes);
    rec.into_outcome(failure, verify)
}

/// Waits for the run's start (the barrier), then until `may_start` (the agent's phase is due)
/// and its start delay, telling the collector meanwhile that nothing of this agent is in
/// flight. Returns the agent's series recorder, whose origin the barrier publishes.
fn wait_for_start(
    sink: &mut PeriodSink,
    start: &Barrier,
    series: Option<SeriesSetup>,
    stop: &AtomicBool,
    mut may_start: impl FnMut() -> bool,
    start_delay: Duration,
) -> Option<IntervalRecorder> {
    start.wait();
    // After the barrier: the main thread stored the origin before reaching it.
    let series =
        series.map(|s| IntervalRecorder::new(s.origin_ns.load(Ordering::Relaxed), s.interval_ns, s.expected));
    wait_idle(sink, stop, |_| may_start());
    if !start_delay.is_zero() {
        let due = now_ns() + start_delay.as_nanos() as u64;
        wait_idle(sink, stop, |now| now >= due);
    }
    series
}

/// Writes between periodic syncs (0: none) and whether they are fdatasync.
fn periodic_fsync(policy: FsyncPolicy) -> (u64, bool) {
    match policy {
        FsyncPolicy::EveryN(n) => (n, false),
        FsyncPolicy::DataEveryN(n) => (n, true),
        _ => (0, false),
    }
}

/// The thread's CPU time since `start`.
fn cpu_since(start: CpuTime) -> CpuTime {
    let end = thread_cpu();
    CpuTime { user_s: end.user_s - start.user_s, sys_s: end.sys_s - start.sys_s }
}

/// When an agent's measurement starts and what ends it, from its start time.
struct Limits {
    /// The end of the ramp: operations submitted from here on are measured.
    ramp_end: u64,
    /// When a time-driven agent stops issuing (`u64::MAX` without a time limit).
    deadline: u64,
    /// Measured application bytes after which the agent stops issuing.
    byte_limit: u64,
}

impl Limits {
    fn new(spec: &AgentSpec, region: u64, t_start: u64) -> Limits {
        let ramp_end = t_start + spec.ramp.as_nanos() as u64;
        let deadline = spec.termination.time.map_or(u64::MAX, |d| ramp_end + d.as_nanos() as u64);
        let byte_limit = match spec.termination {
            iolens_workload::Termination { bytes: Some(b), .. } => b,
            iolens_workload::Termination { time: Some(_), .. } => u64::MAX,
            _ => region,
        };
        Limits { ramp_end, deadline, byte_limit }
    }
}

/// How a request ended: an error, fewer bytes than asked, or complete.
#[inline]
fn op_status(result: i64, len: u32) -> OpStatus {
    if result < 0 {
        OpStatus::Error
    } else if (result as u64) < len as u64 {
        OpStatus::Short
    } else {
        OpStatus::Complete
    }
}

/// What the pacer says before the next request.
enum Pace {
    /// Issue it now.
    Go,
    /// Not yet: complete what is in flight first.
    Later,
    /// The deadline or a stop came while waiting: issue nothing more.
    Stop,
}

/// Holds the next request until the pacer's due time: with requests in flight the agent
/// completes them meanwhile; idle, it sleeps (telling the collector it is idle).
#[inline]
fn pace(p: &Pacer, in_flight: usize, sink: &mut PeriodSink, deadline: u64, stop: &AtomicBool) -> Pace {
    let now = now_ns();
    if now < p.due() {
        if in_flight > 0 {
            return Pace::Later;
        }
        sink.idle_mark(now);
        sleep_until(p.due().min(deadline), stop);
        if now_ns() >= deadline || stop.load(Ordering::Relaxed) {
            return Pace::Stop;
        }
    }
    Pace::Go
}

/// Fills a block about to be written with what verification will expect of it.
#[inline]
fn verify_fill(v: &mut AgentVerify, buffer: &mut [u8], len: u64, offset: u64) {
    // Before the submission timestamp: filling is not I/O time.
    let t0 = now_ns();
    v.fill(&mut buffer[..len as usize], offset);
    v.counts.cost_ns += now_ns() - t0;
}

/// Verification of one completed request: a written block is noted, a read one checked.
#[inline]
fn verify_completion<B: IoBackend>(
    v: &mut AgentVerify,
    backend: &mut B,
    op: &InFlight,
    c: &Completion,
    status: OpStatus,
) {
    // After the completion timestamp: checking is not I/O time.
    if op.write && status == OpStatus::Complete {
        v.wrote(op.offset);
    } else if !op.write && c.result >= 0 {
        let t0 = now_ns();
        let buf = backend.buffer(c.slot);
        let n = (c.result as usize).min(op.len as usize).min(buf.len());
        v.check(&buf[..n], op.offset, false);
        v.counts.cost_ns += now_ns() - t0;
    }
}

/// What an agent records about its measured operations: its figures, its busy periods (its
/// own union and the ring to the collector), the in-flight tracker that makes them, and the
/// optional time series and trace.
struct Recorders {
    raw: AgentRaw,
    sink: PeriodSink,
    tracker: InFlightTracker,
    series: Option<IntervalRecorder>,
    trace: Option<TraceBuffer>,
    /// The agent's index: its stream in the trace.
    stream: u16,
}

impl Recorders {
    fn new(
        spec: &AgentSpec,
        periods: rtrb::Producer<Interval>,
        trace: Option<TraceBuffer>,
        stream: u16,
    ) -> Recorders {
        let mut raw = AgentRaw::default();
        if spec.op.reads() && spec.op.writes() {
            raw.split_directions(); // allocated here, not per operation
        }
        Recorders {
            raw,
            sink: PeriodSink { ring: periods, own: UnionSweep::new(), last_mark: 0, stalls: 0 },
            tracker: InFlightTracker::new(SPLIT_PERIOD_NS),
            series: None,
            trace,
            stream,
        }
    }

    /// Records one measured request completed at `t`.
    #[inline]
    fn record(&mut self, op: &InFlight, t: u64, status: OpStatus) {
        let lat = t - op.start;
        self.raw.record_latency(op.write, lat);
        let ctr = &mut self.raw.counters;
        ctr.latency_sum_ns += lat;
        ctr.moved_bytes += op.len as u64;
        if op.write {
            ctr.write_ops += 1;
            ctr.write_bytes += op.app_bytes as u64;
        } else {
            ctr.read_ops += 1;
            ctr.read_bytes += op.app_bytes as u64;
        }
        match status {
            OpStatus::Complete => {}
            OpStatus::Short => ctr.short_ops += 1,
            OpStatus::Error => ctr.errors += 1,
        }
        self.sink.publish_opt(self.tracker.complete(t));
        if let Some(s) = &mut self.series {
            s.record(t, op.app_bytes as u64, lat);
        }
        if let Some(tb) = &mut self.trace {
            tb.push(&OpRecord {
                start_ns: op.start,
                end_ns: t,
                offset: op.offset,
                bytes: op.len,
                stream: self.stream,
                kind: if op.write { OpKind::Write } else { OpKind::Read },
                status,
            });
        }
    }

    /// Ends the agent's writing: the sync at the end (`fsync_at_end`, unless it already failed)
    /// and the close, both timed; their failures join `failure` (the close's only if first).
    fn close_target<B: IoBackend>(
        &mut self,
        backend: &mut B,
        fsync_at_end: bool,
        failure: &mut Option<AgentFailure>,
        ramp_end: u64,
    ) {
        if fsync_at_end && failure.is_none() {
            if let Err(e) = self.timed_fsync(backend, false, ramp_end) {
                *failure = Some(AgentFailure::Fsync(e));
            }
        }
        if let Err(e) = self.timed_close(backend, ramp_end) {
            failure.get_or_insert(AgentFailure::Close(e));
        }
    }

    /// The agent's outcome once it is done: the trace buffer handed back, the busy union and
    /// the series closed.
    fn into_outcome(self, failure: Option<AgentFailure>, verify: Option<AgentVerify>) -> AgentOutcome {
        let mut raw = self.raw;
        if let Some(tb) = self.trace {
            // A failed trace write is counted by the writer and reported as a warning.
            let _ = tb.finish();
        }
        raw.busy = self.sink.own.finish();
        let series = self.series.map(|s| s.finish(raw.window_end_ns));
        AgentOutcome { raw, failure, ring_stalls: self.sink.stalls, verify, series }
    }

    /// The close of the target, timed: it ends the phase.
    fn timed_close<B: IoBackend>(&mut self, backend: &mut B, ramp_end: u64) -> std::io::Result<()> {
        let t0 = now_ns();
        let measured = t0 >= ramp_end;
        if measured {
            self.sink.publish_opt(self.tracker.submit(t0));
        }
        let result = backend.close();
        let t1 = now_ns();
        if measured {
            self.sink.publish_opt(self.tracker.complete(t1));
            self.raw.counters.close_ns += t1 - t0;
            if let Some(tb) = &mut self.trace {
                tb.push(&OpRecord {
                    start_ns: t0,
                    end_ns: t1,
                    offset: 0,
                    bytes: 0,
                    stream: self.stream,
                    kind: OpKind::Close,
                    status: if result.is_ok() { OpStatus::Complete } else { OpStatus::Error },
                });
            }
        }
        result
    }

    /// An fsync (or fdatasync) timed like any operation: it occupies the agent, so it counts in
    /// busy time.
    fn timed_fsync<B: IoBackend>(
        &mut self,
        backend: &mut B,
        data_only: bool,
        ramp_end: u64,
    ) -> std::io::Result<()> {
        let t0 = now_ns();
        let measured = t0 >= ramp_end;
        if measured {
            self.sink.publish_opt(self.tracker.submit(t0));
        }
        let result = backend.fsync(data_only);
        let t1 = now_ns();
        if measured {
            self.sink.publish_opt(self.tracker.complete(t1));
            self.raw.counters.fsyncs += 1;
            self.raw.counters.fsync_ns += t1 - t0;
            if let Some(tb) = &mut self.trace {
                tb.push(&OpRecord {
                    start_ns: t0,
                    end_ns: t1,
                    offset: 0,
                    bytes: 0,
                    stream: self.stream,
                    kind: OpKind::Fsync,
                    status: if result.is_ok() { OpStatus::Complete } else { OpStatus::Error },
                });
            }
        }
        result
    }
}
