//! One run of a job, from target preparation to a [`RunResult`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use iolens_metrics::{evaluate_warnings, AgentRaw, RunResult, Warning, WarningCode};
use iolens_record::clock::now_ns;
use iolens_workload::{format_bytes, AgentSpec, EngineKind, Job, OpMix, SizeSpec};

use crate::agent::{run_agent, AgentOutcome, AgentProgress, AgentSetup, PhaseGate, SeriesSetup};
use crate::backend::{BackendTarget, NullBackend, SyncBackend, UringBackend};
use crate::buffers::AlignedBuffers;
use crate::collector::{collect, DeviceTimeline, DeviceWatch};
use crate::placement::Placement;
use crate::target::{
    attach_shared, open_for_agent, prepare_targets_placed, shared_identity, TargetKind, TargetPolicy, Targets,
};
use crate::verify::{read_back, AgentVerify, Expect};
use crate::{EngineError, PhaseBarrier};

mod results;

use results::{
    create_logs, device_report, finish_trace, report_progress, run_facts, run_series, stop_and_log_warnings,
    summarize_agents, AgentSummary, RunFlags,
};

/// Capacity of each agent's busy-period ring (16 bytes an entry).
const RING_CAPACITY: usize = 1 << 16;

/// How a run is carried out, beyond the job itself.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub policy: TargetPolicy,
    /// Keep the files this run created.
    pub keep: bool,
    /// The kept files are this process's scratch (a suite's later points use them): if the
    /// process dies, they are leftovers for the next run to remove.
    pub scratch: bool,
    /// Write every operation to this trace file.
    pub trace: Option<PathBuf>,
    /// Write this process's busy periods here, so unions can be merged across processes
    /// (`iolens_record::busy::read_period_log`, `merge_sorted_streams`).
    pub busy_log: Option<PathBuf>,
    /// Set (by a signal handler) to stop the run early; results so far are kept.
    pub stop: Arc<AtomicBool>,
    /// The command line, recorded in the result.
    pub command: String,
    /// This process's place when several processes (MPI ranks) run the job; `None` alone.
    pub placement: Option<Placement>,
    /// Record per-interval figures of this length (`--log-interval`); at least
    /// [`MIN_LOG_INTERVAL`].
    pub log_interval: Option<std::time::Duration>,
}

/// The shortest `--log-interval`: each interval keeps a few hundred bytes per agent.
pub const MIN_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// `--log-interval DUR`, at least [`MIN_LOG_INTERVAL`]; the message names the flag, with a hint.
pub fn parse_log_interval(text: Option<&str>) -> Result<Option<std::time::Duration>, String> {
    let Some(text) = text else { return Ok(None) };
    let d = iolens_workload::parse_duration(text).map_err(|e| format!("--log-interval {text}: {e}"))?;
    let min = MIN_LOG_INTERVAL;
    if d < min {
        return Err(format!(
            "--log-interval {text}: shorter than {} ms\n  hint: give 10ms or more (e.g. 250ms, 1s)",
            min.as_millis()
        ));
    }
    Ok(Some(d))
}

/// Most intervals an agent makes room for up front; longer series grow once per interval.
const MAX_RESERVED_INTERVALS: usize = 1 << 16;

/// A run's result with the mergeable data behind its aggregate, for combining processes.
#[derive(Debug, Clone)]
pub struct RunDetail {
    pub result: RunResult,
    /// Counters, histogram, CPU and window of all agents, and their busy-time union.
    pub total: AgentRaw,
    /// The files (or devices) the agents used.
    pub files: Vec<PathBuf>,
}

/// Progress of a running job.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub elapsed_s: f64,
    /// Share done, when the termination condition tells it.
    pub fraction: Option<f64>,
    pub ops: u64,
    pub bytes: u64,
}

/// Receives what happens during a run, for display.
/// Shared by the threads of a suite (b_eff_io's ranks), hence `Sync`.
pub trait RunObserver: Sync {
    fn phase(&self, _what: &str) {}
    fn progress(&self, _p: &Progress) {}
    /// A step of a suite that counts no operations of its own (b_eff_io's patterns): the share
    /// done and what runs now.
    fn step(&self, _fraction: f64, _what: &str) {}
}

impl RunObserver for () {}

/// Built before the agents start, so setup errors surface before any measurement.
enum AnyBackend {
    Sync(SyncBackend),
    Uring(Box<UringBackend>),
    Null(NullBackend),
}

/// An agent's backend, and a second descriptor of its target for the read-back pass after the
/// measurement (`verify_after_write`).
fn open_backend(
    spec: &AgentSpec,
    targets: &Targets,
    index: usize,
    agents: usize,
) -> Result<(AnyBackend, Option<std::fs::File>), EngineError> {
    let depth = if spec.engine == EngineKind::IoUring { spec.queue_depth.max(1) as usize } else { 1 };
    if spec.engine == EngineKind::Null {
        return Ok((AnyBackend::Null(NullBackend::new(depth)), None));
    }
    let target = targets.for_agent(index);
    let region = targets.agent_region(index, agents, alignment(&spec.sizes));
    if spec.sizes.max() > region {
        return Err(EngineError::BadTarget {
            path: target.path.clone(),
            reason: format!(
                "holds {} for agent {} but it asks for requests of {}; give a larger --size",
                format_bytes(region),
                spec.name,
                format_bytes(spec.sizes.max())
            ),
        });
    }
    let file = open_for_agent(target, spec.op.writes(), spec.direct)?;
    let read_back = match spec.verify {
        Some(v) if v.after_write && spec.op == OpMix::Write => Some(file.try_clone().map_err(|source| {
            EngineError::Io { path: target.path.clone(), action: "open for the verify read-back", source }
        })?),
        _ => None,
    };
    let buffers = AlignedBuffers::new(depth, spec.sizes.max() as usize, spec.seed ^ 0xb0ff_e125);
    let bt = BackendTarget { fd: std::os::fd::IntoRawFd::into_raw_fd(file), buffers };
    let backend = match spec.engine {
        EngineKind::Sync => AnyBackend::Sync(SyncBackend::new(bt)),
        EngineKind::IoUring => {
            AnyBackend::Uring(Box::new(UringBackend::new(bt, depth).map_err(EngineError::UringUnavailable)?))
        }
        EngineKind::Null => unreachable!(),
    };
    Ok((backend, read_back))
}

/// Offsets are multiples of this: the request size for a fixed size (as fio's default block
/// alignment), the smallest size for a mix.
fn alignment(sizes: &SizeSpec) -> u64 {
    sizes.min().max(1)
}

/// The devices behind the targets, and why there are none when there are none.
fn watch_devices(targets: &Targets) -> (Option<DeviceWatch>, String, Option<String>) {
    let mut devices = Vec::new();
    let mut filesystems = Vec::new();
    let mut missing = None;
    for t in &targets.targets {
        let fs = if t.kind == TargetKind::BlockDevice {
            "raw device".to_string()
        } else {
            iolens_device::filesystem_type(&t.path)
                .map(|f| f.name.to_string())
                .unwrap_or_else(|_| "unknown".into())
        };
        match iolens_device::device_for_path(&t.path) {
            Ok(Some(dev)) => {
                if !devices.contains(&dev.name) {
                    devices.push(dev.name);
                }
            }
            _ => missing = Some(format!("{} is on {fs}, which has no block device", t.path.display())),
        }
        if !filesystems.contains(&fs) {
            filesystems.push(fs);
        }
    }
    let fs = filesystems.join("+");
    if devices.is_empty() || missing.is_some() {
        return (None, fs, missing.or(Some("no target".into())));
    }
    (Some(DeviceWatch { devices }), fs, None)
}

/// Runs `job` and returns its result. Errors before measurement starts are `Err`; an error
/// during measurement ends the run early and is reported in `RunResult::error`, with the
/// figures of what ran.
pub fn run_job(
    job: &Job,
    opts: &RunOptions,
    observer: &dyn RunObserver,
    barrier: &dyn PhaseBarrier,
) -> Result<RunResult, EngineError> {
    run_job_detailed(job, opts, observer, barrier).map(|d| d.result)
}

/// Prepares the targets of this process. With one file shared by all processes, rank 0 creates
/// and lays it out, then tells the others which file it is; they open that same file.
fn prepare(job: &Job, opts: &RunOptions, barrier: &dyn PhaseBarrier) -> Result<Targets, EngineError> {
    match &opts.placement {
        Some(p) if p.shared_file && p.ranks > 1 => {
            if p.rank == 0 {
                let targets = prepare_targets_placed(job, opts.policy, &opts.stop, Some(p))?;
                barrier.share(&mut shared_identity(&targets));
                Ok(targets)
            } else {
                let mut id = [0u64; 2];
                barrier.share(&mut id);
                attach_shared(job, p, id[0], id[1])
            }
        }
        p => prepare_targets_placed(job, opts.policy, &opts.stop, p.as_ref()),
    }
}

/// [`run_job`], also giving the raw data behind the aggregate and the files used.
pub fn run_job_detailed(
    job: &Job,
    opts: &RunOptions,
    observer: &dyn RunObserver,
    barrier: &dyn PhaseBarrier,
) -> Result<RunDetail, EngineError> {
    observer.phase("preparing targets");
    let targets = prepare(job, opts, barrier)?;
    let files = targets.targets.iter().map(|t| t.path.clone()).collect();
    let mut result = measure(job, opts, observer, barrier, &targets);
    let mut cleanup_failures = Vec::new();
    if !opts.keep {
        cleanup_failures = targets.remove_created();
    }
    // What stays (kept, or owned from an earlier run) is recorded with its identity now.
    let keep_record =
        targets.record_kept(!opts.keep, opts.scratch).err().map(|e| (PathBuf::from("ownership registry"), e));
    if let Ok((r, _)) = &mut result {
        for (path, e) in cleanup_failures.into_iter().chain(keep_record) {
            r.warnings.push(Warning::new(
                WarningCode::CleanupFailed,
                format!("could not remove or record {}: {e}", path.display()),
            ));
        }
    }
    result.map(|(result, total)| RunDetail { result, total, files })
}

fn measure(
    job: &Job,
    opts: &RunOptions,
    observer: &dyn RunObserver,
    barrier: &dyn PhaseBarrier,
    targets: &Targets,
) -> Result<(RunResult, AgentRaw), EngineError> {
    let n = job.agents.len();
    let (backends, read_back_files): (Vec<AnyBackend>, Vec<Option<std::fs::File>>) = job
        .agents
        .iter()
        .enumerate()
        .map(|(i, spec)| open_backend(spec, targets, i, n))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let generation = new_generation();
    let (trace, busy_log) = create_logs(job, opts)?;
    let null_only = job.agents.iter().all(|a| a.engine == EngineKind::Null);
    let (watch, filesystem, no_device_reason) =
        if null_only { (None, String::new(), Some("null engine".into())) } else { watch_devices(targets) };

    let halt = AtomicBool::new(false);
    let start = Barrier::new(n + 1);
    let gate = PhaseGate::new(job);
    let progress: Vec<AgentProgress> = (0..n).map(|_| AgentProgress::default()).collect();
    let (producers, consumers): (Vec<_>, Vec<_>) =
        (0..n).map(|_| rtrb::RingBuffer::new(RING_CAPACITY)).unzip();

    barrier.wait("start");
    observer.phase("running");
    let min_ramp = job.agents.iter().map(|a| a.ramp).min().unwrap_or_default();
    let peer_failed = AtomicBool::new(false);
    let series_origin = std::sync::atomic::AtomicU64::new(0);
    let log_interval_ns = opts.log_interval.map(|d| (d.max(MIN_LOG_INTERVAL).as_nanos() as u64).max(1));
    let (outcomes, mut collected, dev_after) = std::thread::scope(|scope| {
        let handles: Vec<_> = backends
            .into_iter()
            .zip(producers)
            .enumerate()
            .map(|(i, (backend, periods))| {
                let spec = &job.agents[i];
                let setup = AgentSetup {
                    index: i as u16,
                    spec,
                    region: targets.agent_region(i, n, alignment(&spec.sizes)),
                    map: targets.offset_map(i, n, spec.sizes.max(), spec.op == OpMix::Read),
                    align: alignment(&spec.sizes),
                    stop: &halt,
                    start: &start,
                    gate: &gate,
                    periods,
                    trace: trace.as_ref().map(|w| w.buffer()),
                    progress: &progress[i],
                    verify: agent_verify(spec, generation, targets.for_agent(i).region),
                    series: log_interval_ns.map(|interval_ns| SeriesSetup {
                        interval_ns,
                        origin_ns: &series_origin,
                        expected: expected_intervals(spec, interval_ns),
                    }),
                };
                spawn_agent(scope, i, backend, setup, &halt, &gate)
            })
            .collect();
        // The device window is the measurement window: it opens at the end of the (shortest)
        // ramp. Without a ramp, the reading just before the agents are released opens it.
        let timeline = match (&watch, min_ramp.is_zero()) {
            (Some(w), true) => {
                w.read().map_or_else(DeviceTimeline::default, |d| DeviceTimeline::starting(now_ns(), d))
            }
            _ => DeviceTimeline::default(),
        };
        // Published to the agents by the barrier.
        series_origin.store(now_ns(), Ordering::Relaxed);
        start.wait();
        let t_start = now_ns();
        let expected_s = expected_duration_s(job);
        let expected_bytes = expected_bytes(job, targets);
        let window_start = t_start + min_ramp.as_nanos() as u64;
        let collected = collect(consumers, watch.as_ref(), busy_log, window_start, timeline, || {
            if opts.stop.load(Ordering::Relaxed) {
                halt.store(true, Ordering::Relaxed);
            }
            if !peer_failed.load(Ordering::Relaxed) && barrier.peer_failed() {
                peer_failed.store(true, Ordering::Relaxed);
                halt.store(true, Ordering::Relaxed);
            }
            report_progress(observer, &progress, t_start, expected_s, expected_bytes);
        });
        let outcomes: Vec<AgentOutcome> =
            handles.into_iter().map(|h| h.join().expect("agent thread panicked")).collect();
        let dev_after = watch.as_ref().and_then(|w| w.read()).map(|d| (now_ns(), d));
        (outcomes, collected, dev_after)
    });
    if outcomes.iter().any(|o| o.failure.is_some()) {
        barrier.announce_failure();
    }
    barrier.wait("end");
    let mut outcomes = outcomes;
    let read_back_error = read_back_all(&mut outcomes, read_back_files, &opts.stop, job, targets);

    let AgentSummary { mut total, agents, mut error, ring_stalls, verify } =
        summarize_agents(&outcomes, job, targets, generation);
    if error.is_none() {
        error = read_back_error;
    }
    total.busy = collected.union;
    let aggregate = total.figures(job.block_unit);
    let timeline = std::mem::take(&mut collected.device);
    let window = dev_after.and_then(|(at, after)| timeline.finish(at, &after));
    let (device, no_device_reason) =
        device_report(watch.as_ref(), &filesystem, window, &aggregate, no_device_reason);
    let series = log_interval_ns.map(|interval_ns| run_series(&outcomes, job, interval_ns));
    let interrupted = opts.stop.load(Ordering::Relaxed);
    let trace_dropped = trace.as_ref().map_or(0, |t| t.dropped());
    let facts = run_facts(
        job,
        targets,
        &agents,
        &aggregate,
        device.as_ref(),
        no_device_reason,
        RunFlags { null_only, interrupted, trace_dropped },
    );
    let mut warnings = targets.warnings.clone();
    warnings.extend(evaluate_warnings(&facts));
    let peer_failed = peer_failed.load(Ordering::Relaxed).then(|| barrier.size());
    warnings.extend(stop_and_log_warnings(peer_failed, collected.log_error.as_ref(), opts));
    // Every agent's buffer is finished with its thread, so the trace can be put in place.
    let trace_file = finish_trace(trace, opts, &mut warnings);
    let result = RunResult {
        job: job.name.clone(),
        interrupted,
        error,
        aggregate,
        agents,
        targets: targets.reports(),
        device,
        warnings,
        union_peak_pending: collected.peak_pending as u64,
        trace_file,
        trace_dropped_records: trace_dropped,
        union_ring_stalls: ring_stalls,
        verify,
        series,
    };
    Ok((result, total))
}

/// Starts agent `i` on a thread of its own; a failing agent halts the others.
fn spawn_agent<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    i: usize,
    backend: AnyBackend,
    setup: AgentSetup<'env>,
    halt: &'env AtomicBool,
    gate: &'env PhaseGate,
) -> std::thread::ScopedJoinHandle<'scope, AgentOutcome> {
    std::thread::Builder::new()
        .name(format!("agent-{}", setup.spec.name))
        .spawn_scoped(scope, move || {
            let out = match backend {
                AnyBackend::Sync(b) => run_agent(b, setup),
                AnyBackend::Uring(b) => run_agent(*b, setup),
                AnyBackend::Null(b) => run_agent(b, setup),
            };
            if out.failure.is_some() {
                halt.store(true, Ordering::Relaxed);
            }
            gate.finished(i);
            out
        })
        .expect("spawning an agent thread")
}

/// Intervals a time-driven agent will fill (its delay, ramp and run), bounded; 0 otherwise.
fn expected_intervals(spec: &AgentSpec, interval_ns: u64) -> usize {
    let Some(time) = spec.termination.time else { return 0 };
    let total_ns = (spec.start_delay + spec.ramp + time).as_nanos();
    (total_ns / u128::from(interval_ns.max(1)) + 2).min(MAX_RESERVED_INTERVALS as u128) as usize
}

/// A generation for this run's verified writes: the time in nanoseconds since the epoch, so a
/// later run's blocks carry a larger one than an earlier run's.
fn new_generation() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (now.as_nanos() as u64).max(1)
}

fn agent_verify(spec: &AgentSpec, generation: u64, region: u64) -> Option<AgentVerify> {
    let v = spec.verify?;
    if spec.engine == EngineKind::Null || spec.sizes.max() < iolens_workload::limits::MIN_VERIFY_BLOCK {
        return None; // the parser refuses these; hand-built jobs run unverified
    }
    let expect = v.generation.map_or(Expect::FirstSeen(None), Expect::Exactly);
    Some(AgentVerify::new(
        v.kind,
        v.generation.unwrap_or(generation),
        expect,
        spec.sizes.max() as usize,
        region,
        v.after_write && spec.op == OpMix::Write,
    ))
}

/// The `verify_after_write` passes, one thread per agent, after every agent finished (and the
/// device counters were read): nothing measured overlaps them. Returns the first read error.
fn read_back_all(
    outcomes: &mut [AgentOutcome],
    files: Vec<Option<std::fs::File>>,
    halt: &AtomicBool,
    job: &Job,
    targets: &Targets,
) -> Option<String> {
    let errors: Vec<Option<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = outcomes
            .iter_mut()
            .zip(files)
            .enumerate()
            .filter_map(|(i, (out, file))| {
                let file = file?;
                let v = out.verify.as_mut()?;
                let failed = out.failure.is_some();
                Some(scope.spawn(move || {
                    if failed {
                        return None; // the write phase failed: its error is the one reported
                    }
                    read_back(v, &file, halt).err().map(|(offset, e)| {
                        format!(
                            "agent {}: verify read-back of {} at offset {offset} failed: {e}",
                            job.agents[i].name,
                            targets.for_agent(i).path.display()
                        )
                    })
                }))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("read-back thread panicked")).collect()
    });
    errors.into_iter().flatten().next()
}

/// Length of a time-driven job (ramp included), if every agent is time-driven.
fn expected_duration_s(job: &Job) -> Option<f64> {
    job.agents
        .iter()
        .map(|a| a.termination.time.map(|t| (t + a.ramp).as_secs_f64()))
        .try_fold(0.0f64, |acc, t| t.map(|t| acc.max(t)))
}

fn expected_bytes(job: &Job, targets: &Targets) -> Option<u64> {
    job.agents
        .iter()
        .enumerate()
        .map(|(i, a)| match a.termination {
            iolens_workload::Termination { time: None, bytes: Some(b) } => Some(b),
            iolens_workload::Termination { time: None, bytes: None } => {
                Some(targets.agent_region(i, job.agents.len(), alignment(&a.sizes)))
            }
            _ => None,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use iolens_workload::FlagWorkload;

    use super::*;

    /// A process among others whose peer fails after a few polls.
    struct FailingPeer {
        polls: AtomicUsize,
        announced: AtomicBool,
    }

    impl PhaseBarrier for FailingPeer {
        fn wait(&self, _phase: &str) {}
        fn size(&self) -> usize {
            2
        }
        fn peer_failed(&self) -> bool {
            self.polls.fetch_add(1, Ordering::Relaxed) >= 3
        }
        fn announce_failure(&self) {
            self.announced.store(true, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_peer_failure_ends_the_phase_early_with_valid_partial_figures() {
        let dir = tempfile::tempdir().unwrap();
        let job = FlagWorkload {
            target: dir.path().to_path_buf(),
            engine: "null".into(),
            time: Some("30s".into()),
            ..FlagWorkload::default()
        }
        .to_job()
        .unwrap();
        let peer = FailingPeer { polls: AtomicUsize::new(0), announced: AtomicBool::new(false) };
        let t = std::time::Instant::now();
        let r = run_job(&job, &RunOptions::default(), &(), &peer).unwrap();
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "took {:?}", t.elapsed());
        assert!(r.error.is_none(), "the failure was the peer's: {:?}", r.error);
        assert!(r.aggregate.ops > 0);
        assert!(r
            .warnings
            .iter()
            .any(|w| w.code == WarningCode::Interrupted && w.message.contains("another")));
        assert!(!peer.announced.load(Ordering::Relaxed), "this process did not fail");
    }
}
