//! One run of a job, from target preparation to a [`RunResult`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use iolens_metrics::{
    evaluate_warnings, AgentInfo, AgentRaw, AgentResult, DeviceReport, RateCheck, RunFacts, RunResult,
    Warning, WarningCode, SCHEMA_VERSION,
};
use iolens_record::busy::PeriodLogWriter;
use iolens_record::clock::now_ns;
use iolens_record::trace::TraceWriter;
use iolens_workload::{format_bytes, AgentSpec, EngineKind, Job, OpMix, Pattern, SizeSpec};

use crate::agent::{run_agent, AgentFailure, AgentOutcome, AgentProgress, AgentSetup};
use crate::backend::{BackendTarget, Direction, NullBackend, SyncBackend, UringBackend};
use crate::buffers::AlignedBuffers;
use crate::collector::{collect, DeviceWatch};
use crate::target::{open_for_agent, prepare_targets, TargetKind, TargetPolicy, Targets};
use crate::{EngineError, PhaseBarrier};

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
pub trait RunObserver {
    fn phase(&self, _what: &str) {}
    fn progress(&self, _p: &Progress) {}
}

impl RunObserver for () {}

/// Built before the agents start, so setup errors surface before any measurement.
enum AnyBackend {
    Sync(SyncBackend),
    Uring(Box<UringBackend>),
    Null(NullBackend),
}

fn rw_label(spec: &AgentSpec) -> String {
    let prefix = match spec.pattern {
        Pattern::Sequential => "",
        Pattern::Strided { .. } => "strided-",
        Pattern::Noncontiguous(n) if n.sieve_buffer.is_some() => "noncontig-sieved-",
        Pattern::Noncontiguous(_) => "noncontig-",
        Pattern::Random(_) => "rand",
    };
    match spec.op {
        OpMix::Read => format!("{prefix}read"),
        OpMix::Write => format!("{prefix}write"),
        OpMix::Mixed { read_pct } => format!("{prefix}rw {read_pct}% read"),
    }
}

fn bs_label(sizes: &SizeSpec) -> String {
    match sizes {
        SizeSpec::Fixed(s) => format_bytes(*s),
        SizeSpec::Weighted(list) => {
            list.iter().map(|(s, w)| format!("{}:{w}", format_bytes(*s))).collect::<Vec<_>>().join(",")
        }
    }
}

fn agent_info(spec: &AgentSpec, target: &std::path::Path) -> AgentInfo {
    AgentInfo {
        name: spec.name.clone(),
        target: target.display().to_string(),
        rw: rw_label(spec),
        bs: bs_label(&spec.sizes),
        engine: spec.engine.name().to_string(),
        qd: if spec.engine == EngineKind::IoUring { spec.queue_depth } else { 1 },
        direct: spec.direct,
        random_map: spec.random_map,
        rate: spec.rate.ops_per_s,
    }
}

fn open_backend(spec: &AgentSpec, targets: &Targets, index: usize) -> Result<AnyBackend, EngineError> {
    let depth = if spec.engine == EngineKind::IoUring { spec.queue_depth.max(1) as usize } else { 1 };
    if spec.engine == EngineKind::Null {
        return Ok(AnyBackend::Null(NullBackend::new(depth)));
    }
    let target = targets.for_agent(index);
    if spec.sizes.max() > target.region {
        return Err(EngineError::BadTarget {
            path: target.path.clone(),
            reason: format!(
                "holds {} but agent {} asks for requests of {}; give a larger --size",
                format_bytes(target.region),
                spec.name,
                format_bytes(spec.sizes.max())
            ),
        });
    }
    let file = open_for_agent(target, spec.op.writes(), spec.direct)?;
    let buffers = AlignedBuffers::new(depth, spec.sizes.max() as usize, spec.seed ^ 0xb0ff_e125);
    let bt = BackendTarget { fd: std::os::fd::IntoRawFd::into_raw_fd(file), buffers };
    Ok(match spec.engine {
        EngineKind::Sync => AnyBackend::Sync(SyncBackend::new(bt)),
        EngineKind::IoUring => {
            AnyBackend::Uring(Box::new(UringBackend::new(bt, depth).map_err(EngineError::UringUnavailable)?))
        }
        EngineKind::Null => unreachable!(),
    })
}

/// Offsets are multiples of this: the request size for a fixed size (as fio's default block
/// alignment), the smallest size for a mix.
fn alignment(sizes: &SizeSpec) -> u64 {
    sizes.min().max(1)
}

fn describe_failure(f: &AgentFailure, agent: &str, target: &std::path::Path) -> String {
    match f {
        AgentFailure::Op { errno, offset, dir } => {
            let what = if *dir == Direction::Write { "writing" } else { "reading" };
            let err = std::io::Error::from_raw_os_error(*errno);
            let hint = match *errno {
                libc::ENOSPC => "\n  hint: free space or use a smaller --size; the results so far are kept",
                libc::EINVAL => "\n  hint: with --direct, sizes and offsets must be multiples of the device's logical sector",
                _ => "",
            };
            format!("agent {agent}: {what} {} at offset {offset} failed: {err}{hint}", target.display())
        }
        AgentFailure::Fsync(e) => format!("agent {agent}: fsync of {} failed: {e}", target.display()),
        AgentFailure::Close(e) => format!("agent {agent}: close of {} failed: {e}", target.display()),
        AgentFailure::Backend(e) => format!("agent {agent}: I/O backend failed: {e}"),
    }
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
    observer.phase("preparing targets");
    let targets = prepare_targets(job, opts.policy, &opts.stop)?;
    let mut result = measure(job, opts, observer, barrier, &targets);
    let mut cleanup_failures = Vec::new();
    if !opts.keep {
        cleanup_failures = targets.remove_created();
    }
    // What stays (kept, or owned from an earlier run) is recorded with its identity now.
    let keep_record =
        targets.record_kept(!opts.keep, opts.scratch).err().map(|e| (PathBuf::from("ownership registry"), e));
    if let Ok(r) = &mut result {
        for (path, e) in cleanup_failures.into_iter().chain(keep_record) {
            r.warnings.push(Warning::new(
                WarningCode::CleanupFailed,
                format!("could not remove or record {}: {e}", path.display()),
            ));
        }
    }
    result
}

fn measure(
    job: &Job,
    opts: &RunOptions,
    observer: &dyn RunObserver,
    barrier: &dyn PhaseBarrier,
    targets: &Targets,
) -> Result<RunResult, EngineError> {
    let n = job.agents.len();
    let backends: Vec<AnyBackend> = job
        .agents
        .iter()
        .enumerate()
        .map(|(i, spec)| open_backend(spec, targets, i))
        .collect::<Result<_, _>>()?;
    let trace = match &opts.trace {
        Some(path) => {
            let names: Vec<String> = job.agents.iter().map(|a| a.name.clone()).collect();
            Some(TraceWriter::create(path, &names).map_err(|source| EngineError::Io {
                path: path.clone(),
                action: "create trace",
                source,
            })?)
        }
        None => None,
    };
    let busy_log = match &opts.busy_log {
        Some(path) => Some(PeriodLogWriter::create(path).map_err(|source| EngineError::Io {
            path: path.clone(),
            action: "create busy log",
            source,
        })?),
        None => None,
    };
    let null_only = job.agents.iter().all(|a| a.engine == EngineKind::Null);
    let (watch, filesystem, no_device_reason) =
        if null_only { (None, String::new(), Some("null engine".into())) } else { watch_devices(targets) };

    let halt = AtomicBool::new(false);
    let start = Barrier::new(n + 1);
    let progress: Vec<AgentProgress> = (0..n).map(|_| AgentProgress::default()).collect();
    let mut producers = Vec::with_capacity(n);
    let mut consumers = Vec::with_capacity(n);
    for _ in 0..n {
        let (p, c) = rtrb::RingBuffer::new(RING_CAPACITY);
        producers.push(p);
        consumers.push(c);
    }

    barrier.wait("start");
    observer.phase("running");
    let (outcomes, collected, dev_before, dev_after) = std::thread::scope(|scope| {
        let handles: Vec<_> = backends
            .into_iter()
            .zip(producers)
            .enumerate()
            .map(|(i, (backend, periods))| {
                let spec = &job.agents[i];
                let setup = AgentSetup {
                    index: i as u16,
                    spec,
                    region: targets.for_agent(i).region,
                    align: alignment(&spec.sizes),
                    stop: &halt,
                    start: &start,
                    periods,
                    trace: trace.as_ref().map(|w| w.buffer()),
                    progress: &progress[i],
                };
                let halt = &halt;
                std::thread::Builder::new()
                    .name(format!("agent-{}", spec.name))
                    .spawn_scoped(scope, move || {
                        let out = match backend {
                            AnyBackend::Sync(b) => run_agent(b, setup),
                            AnyBackend::Uring(b) => run_agent(*b, setup),
                            AnyBackend::Null(b) => run_agent(b, setup),
                        };
                        if out.failure.is_some() {
                            halt.store(true, Ordering::Relaxed);
                        }
                        out
                    })
                    .expect("spawning an agent thread")
            })
            .collect();
        let dev_before = watch.as_ref().and_then(|w| w.read());
        start.wait();
        let t_start = now_ns();
        let expected_s = expected_duration_s(job);
        let expected_bytes = expected_bytes(job, targets);
        let collected = collect(consumers, watch.as_ref(), busy_log, t_start, || {
            if opts.stop.load(Ordering::Relaxed) {
                halt.store(true, Ordering::Relaxed);
            }
            let ops = progress.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum();
            let bytes = progress.iter().map(|p| p.bytes.load(Ordering::Relaxed)).sum();
            let elapsed_s = (now_ns() - t_start) as f64 / 1e9;
            let fraction = match (expected_s, expected_bytes) {
                (Some(s), _) => Some(elapsed_s / s),
                (None, Some(b)) => Some(bytes as f64 / b as f64),
                _ => None,
            };
            observer.progress(&super::Progress {
                elapsed_s,
                fraction: fraction.map(|f| f.min(1.0)),
                ops,
                bytes,
            });
        });
        let outcomes: Vec<AgentOutcome> =
            handles.into_iter().map(|h| h.join().expect("agent thread panicked")).collect();
        let dev_after = watch.as_ref().and_then(|w| w.read());
        (outcomes, collected, dev_before, dev_after)
    });
    barrier.wait("end");

    let mut total = AgentRaw::default();
    let mut agents = Vec::with_capacity(n);
    let mut error = None;
    let mut ring_stalls = 0;
    for (i, out) in outcomes.iter().enumerate() {
        let spec = &job.agents[i];
        let target = &targets.for_agent(i).path;
        total.merge_except_busy(&out.raw);
        ring_stalls += out.ring_stalls;
        if let (None, Some(f)) = (&error, &out.failure) {
            error = Some(describe_failure(f, &spec.name, target));
        }
        agents.push(AgentResult { info: agent_info(spec, target), figures: out.raw.figures(job.block_unit) });
    }
    total.busy = collected.union;
    let aggregate = total.figures(job.block_unit);
    let device = match (&watch, dev_before, dev_after) {
        (Some(w), Some(before), Some(after)) => Some(DeviceReport::new(
            w.devices.join("+"),
            filesystem.clone(),
            &after.delta(&before),
            aggregate.wall_s,
            aggregate.read_bytes,
            aggregate.write_bytes,
            collected.samples,
        )),
        _ => None,
    };
    let interrupted = opts.stop.load(Ordering::Relaxed);
    let trace_dropped = trace.as_ref().map_or(0, |t| t.dropped());
    let facts = RunFacts {
        aggregate: &aggregate,
        device: device.as_ref(),
        no_device_reason: if device.is_none() { no_device_reason } else { None },
        buffered_reads: job.agents.iter().any(|a| a.op.reads() && !a.direct && a.engine != EngineKind::Null),
        unsynced_writes: job.agents.iter().any(|a| {
            a.op.writes()
                && !a.direct
                && a.engine != EngineKind::Null
                && a.fsync == iolens_workload::FsyncPolicy::None
        }),
        null_only,
        interrupted,
        trace_dropped,
        rates: job
            .agents
            .iter()
            .zip(&agents)
            .filter(|(spec, _)| spec.rate.ops_per_s > 0.0)
            .map(|(spec, a)| RateCheck {
                agent: spec.name.clone(),
                asked: spec.rate.ops_per_s,
                ops: a.figures.ops,
                wall_s: a.figures.wall_s,
                poisson: spec.rate.arrival == iolens_workload::Arrival::Poisson,
            })
            .collect(),
    };
    let mut warnings = evaluate_warnings(&facts);
    if let (Some(e), Some(path)) = (&collected.log_error, &opts.busy_log) {
        warnings.push(Warning::new(
            WarningCode::BusyLogIncomplete,
            format!("could not write the busy-period log {}: {e}", path.display()),
        ));
    }
    Ok(RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "iolens".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command: opts.command.clone(),
        job: job.name.clone(),
        interrupted,
        error,
        aggregate,
        agents,
        device,
        warnings,
        union_peak_pending: collected.peak_pending as u64,
        trace_file: opts.trace.as_ref().map(|p| p.display().to_string()),
        trace_dropped_records: trace_dropped,
        union_ring_stalls: ring_stalls,
    })
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
            iolens_workload::Termination { time: None, bytes: None } => Some(targets.for_agent(i).region),
            _ => None,
        })
        .sum()
}
