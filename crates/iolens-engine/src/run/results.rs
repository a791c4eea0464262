//! From the agents' outcomes to a [`RunResult`](iolens_metrics::RunResult): each agent's figures
//! and failure, verification merged, the device counters over the measurement window, and the
//! facts the warnings are judged from. Also the logs a run writes beside its result.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use iolens_device::DiskStats;
use iolens_metrics::{
    AgentInfo, AgentRaw, AgentResult, AgentSeries, BlockFields, DeviceReport, DeviceSample, Figures,
    RateCheck, RunFacts, RunSeries, SeriesRaw, VerifyFailure, VerifyReport, Warning, WarningCode,
};
use iolens_record::busy::PeriodLogWriter;
use iolens_record::clock::now_ns;
use iolens_record::trace::TraceWriter;
use iolens_workload::{format_bytes, AgentSpec, EngineKind, Job, OpMix, Pattern, SizeSpec};

use super::{Progress, RunObserver, RunOptions};
use crate::agent::{AgentFailure, AgentOutcome, AgentProgress};
use crate::backend::Direction;
use crate::collector::DeviceWatch;
use crate::target::{TargetKind, Targets};
use crate::verify::{AgentVerify, Fields};
use crate::EngineError;

/// Creates the trace and busy-period log files the options ask for, before any agent starts.
pub(super) fn create_logs(
    job: &Job,
    opts: &RunOptions,
) -> Result<(Option<Arc<TraceWriter>>, Option<PeriodLogWriter>), EngineError> {
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
    Ok((trace, busy_log))
}

/// Tells the observer how far the run is: operations and bytes so far, and the share done where
/// the job says how long or how much.
pub(super) fn report_progress(
    observer: &dyn RunObserver,
    progress: &[AgentProgress],
    t_start: u64,
    expected_s: Option<f64>,
    expected_bytes: Option<u64>,
) {
    let ops = progress.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum();
    let bytes = progress.iter().map(|p| p.bytes.load(Ordering::Relaxed)).sum();
    let elapsed_s = (now_ns() - t_start) as f64 / 1e9;
    let fraction = match (expected_s, expected_bytes) {
        (Some(s), _) => Some(elapsed_s / s),
        (None, Some(b)) => Some(bytes as f64 / b as f64),
        _ => None,
    };
    observer.progress(&Progress { elapsed_s, fraction: fraction.map(|f| f.min(1.0)), ops, bytes });
}

/// The agents' outcomes taken together.
pub(super) struct AgentSummary {
    /// Every agent's figures merged (busy time apart: that is the union of their periods).
    pub(super) total: AgentRaw,
    pub(super) agents: Vec<AgentResult>,
    /// The first agent failure, described.
    pub(super) error: Option<String>,
    pub(super) ring_stalls: u64,
    pub(super) verify: Option<VerifyReport>,
}

pub(super) fn summarize_agents(
    outcomes: &[AgentOutcome],
    job: &Job,
    targets: &Targets,
    generation: u64,
) -> AgentSummary {
    let mut total = AgentRaw::default();
    let mut agents = Vec::with_capacity(outcomes.len());
    let mut error = None;
    let mut ring_stalls = 0;
    let mut verify: Option<VerifyReport> = None;
    for (i, out) in outcomes.iter().enumerate() {
        let spec = &job.agents[i];
        let target = &targets.for_agent(i).path;
        total.merge_except_busy(&out.raw);
        ring_stalls += out.ring_stalls;
        if let (None, Some(f)) = (&error, &out.failure) {
            error = Some(describe_failure(f, &spec.name, target));
        }
        if let Some(v) = &out.verify {
            merge_verify(&mut verify, v, spec, target, generation);
        }
        agents.push(AgentResult { info: agent_info(spec, target), figures: out.raw.figures(job.block_unit) });
    }
    AgentSummary { total, agents, error, ring_stalls, verify }
}

/// The device counters over the measurement window, or why there are none.
pub(super) fn device_report(
    watch: Option<&DeviceWatch>,
    filesystem: &str,
    window: Option<(DiskStats, f64, Vec<DeviceSample>)>,
    aggregate: &Figures,
    no_device_reason: Option<String>,
) -> (Option<DeviceReport>, Option<String>) {
    let device = match (watch, window) {
        (Some(w), Some((delta, window_s, samples))) => Some(DeviceReport::new(
            w.devices.join("+"),
            filesystem.to_string(),
            &delta,
            window_s,
            aggregate.read_bytes,
            aggregate.write_bytes,
            samples,
        )),
        _ => None,
    };
    let no_device_reason = match (watch, &device) {
        (Some(_), None) => Some("the run ended before its measurement window started".to_string()),
        _ => no_device_reason,
    };
    (device, no_device_reason)
}

/// How the run went, besides its figures: what the warnings are judged from too.
pub(super) struct RunFlags {
    pub(super) null_only: bool,
    pub(super) interrupted: bool,
    pub(super) trace_dropped: u64,
}

/// What the warnings are judged from: the run's figures and device window, and what its agents
/// asked for.
pub(super) fn run_facts<'a>(
    job: &Job,
    targets: &Targets,
    agents: &[AgentResult],
    aggregate: &'a Figures,
    device: Option<&'a DeviceReport>,
    no_device_reason: Option<String>,
    flags: RunFlags,
) -> RunFacts<'a> {
    RunFacts {
        aggregate,
        device,
        no_device_reason: if device.is_none() { no_device_reason } else { None },
        buffered_reads: job.agents.iter().any(|a| a.op.reads() && !a.direct && a.engine != EngineKind::Null),
        unsynced_writes: job.agents.iter().any(|a| {
            a.op.writes()
                && !a.direct
                && a.engine != EngineKind::Null
                && a.fsync == iolens_workload::FsyncPolicy::None
        }),
        null_only: flags.null_only,
        interrupted: flags.interrupted,
        trace_dropped: flags.trace_dropped,
        reads: job.agents.iter().any(|a| a.op.reads() && a.engine != EngineKind::Null),
        writes: job.agents.iter().any(|a| a.op.writes() && a.engine != EngineKind::Null),
        reads_direct_only: job
            .agents
            .iter()
            .filter(|a| a.op.reads() && a.engine != EngineKind::Null)
            .all(|a| a.direct),
        writes_direct_only: job
            .agents
            .iter()
            .filter(|a| a.op.writes() && a.engine != EngineKind::Null)
            .all(|a| a.direct),
        memory_backed: memory_backed(targets),
        rates: job
            .agents
            .iter()
            .zip(agents)
            .filter(|(spec, _)| spec.rate.ops_per_s > 0.0)
            .map(|(spec, a)| RateCheck {
                agent: spec.name.clone(),
                asked: spec.rate.ops_per_s,
                ops: a.figures.ops,
                wall_s: a.figures.wall_s,
                poisson: spec.rate.arrival == iolens_workload::Arrival::Poisson,
            })
            .collect(),
    }
}

/// Warnings of a run stopped because another process's run failed (`peer_failed`: how many
/// processes ran), and of a busy-period log that could not be written whole.
pub(super) fn stop_and_log_warnings(
    peer_failed: Option<usize>,
    log_error: Option<&std::io::Error>,
    opts: &RunOptions,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if let Some(processes) = peer_failed {
        warnings.push(Warning::new(
            WarningCode::Interrupted,
            format!(
                "stopped early: the run of another of the {processes} processes failed; the figures cover what ran"
            ),
        ));
    }
    if let (Some(e), Some(path)) = (log_error, &opts.busy_log) {
        warnings.push(Warning::new(
            WarningCode::BusyLogIncomplete,
            format!("could not write the busy-period log {}: {e}", path.display()),
        ));
    }
    warnings
}

/// Puts the trace in place; its file name, or `None` (and a warning) when that failed.
pub(super) fn finish_trace(
    trace: Option<Arc<TraceWriter>>,
    opts: &RunOptions,
    warnings: &mut Vec<Warning>,
) -> Option<String> {
    let mut trace_file = opts.trace.as_ref().map(|p| p.display().to_string());
    if let (Some(writer), Some(path)) = (trace, &opts.trace) {
        if let Err(e) = writer.finish() {
            trace_file = None;
            warnings.push(Warning::new(
                WarningCode::TraceDropped,
                format!("the trace {} could not be put in place: {e}", path.display()),
            ));
        }
    }
    trace_file
}

pub(super) fn rw_label(spec: &AgentSpec) -> String {
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

pub(super) fn bs_label(sizes: &SizeSpec) -> String {
    match sizes {
        SizeSpec::Fixed(s) => format_bytes(*s),
        SizeSpec::Weighted(list) => {
            list.iter().map(|(s, w)| format!("{}:{w}", format_bytes(*s))).collect::<Vec<_>>().join(",")
        }
    }
}

pub(super) fn agent_info(spec: &AgentSpec, target: &std::path::Path) -> AgentInfo {
    AgentInfo {
        name: spec.name.clone(),
        target: target.display().to_string(),
        rw: rw_label(spec),
        bs: bs_label(&spec.sizes),
        bs_bytes: match spec.sizes {
            iolens_workload::SizeSpec::Fixed(size) => Some(size),
            iolens_workload::SizeSpec::Weighted(_) => None,
        },
        engine: spec.engine.name().to_string(),
        qd: if spec.engine == EngineKind::IoUring { spec.queue_depth } else { 1 },
        direct: spec.direct,
        random_map: spec.random_map,
        rate: spec.rate.ops_per_s,
    }
}

pub(super) fn describe_failure(f: &AgentFailure, agent: &str, target: &std::path::Path) -> String {
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

/// Which targets live in RAM, in words ("/dev/shm/x is on tmpfs"), if any do.
pub(super) fn memory_backed(targets: &Targets) -> Option<String> {
    let on_ram: Vec<String> = targets
        .targets
        .iter()
        .filter(|t| t.kind == TargetKind::File)
        .filter_map(|t| {
            let fs = iolens_device::filesystem_type(&t.path).ok()?;
            fs.memory_backed().then(|| format!("{} is on {}", t.path.display(), fs.name))
        })
        .collect();
    (!on_ram.is_empty()).then(|| on_ram.join(", "))
}

/// Every agent's series and their aggregate, on the run's intervals.
pub(super) fn run_series(outcomes: &[AgentOutcome], job: &Job, interval_ns: u64) -> RunSeries {
    let mut total = SeriesRaw::default();
    let mut agents = Vec::with_capacity(outcomes.len());
    for (out, spec) in outcomes.iter().zip(&job.agents) {
        let Some(s) = &out.series else { continue };
        total.merge(s);
        agents.push(AgentSeries { name: spec.name.clone(), intervals: s.figures() });
    }
    RunSeries { interval_s: interval_ns as f64 / 1e9, aggregate: total.figures(), agents }
}

pub(super) fn fields(f: &Fields) -> BlockFields {
    BlockFields {
        magic: f.magic.iter().map(|b| format!("{b:02x}")).collect(),
        offset: f.offset,
        size: f.size,
        generation: f.generation,
    }
}

pub(super) fn merge_verify(
    report: &mut Option<VerifyReport>,
    v: &AgentVerify,
    spec: &AgentSpec,
    target: &std::path::Path,
    generation: u64,
) {
    let r = report.get_or_insert_with(VerifyReport::default);
    let kind = v.kind.name();
    if !r.kind.split('+').any(|k| k == kind) {
        r.kind = if r.kind.is_empty() { kind.to_string() } else { format!("{}+{kind}", r.kind) };
    }
    if v.counts.blocks_written > 0 {
        // Agents with their own verify_generation write that one; the run's otherwise.
        r.generation_written = Some(spec.verify.and_then(|s| s.generation).unwrap_or(generation));
    }
    r.blocks_written += v.counts.blocks_written;
    r.blocks_checked += v.counts.blocks_checked;
    r.failures_total += v.counts.failures_total;
    r.cost_s += v.counts.cost_ns as f64 / 1e9;
    r.read_back_s += v.counts.readback_ns as f64 / 1e9;
    r.included_in_io_time = false;
    r.failures.extend(v.failures.iter().map(|(f, read_back)| VerifyFailure {
        agent: spec.name.clone(),
        file: target.display().to_string(),
        offset: f.offset,
        kind: f.kind.name().to_string(),
        phase: if *read_back { "read_back" } else { "read" }.to_string(),
        expected: fields(&f.expected),
        found: f.found.as_ref().map(fields),
        first_bad_byte: f.first_bad_byte,
        first_bad_offset: f.first_bad_byte.map(|b| f.offset + b),
        bytes_read: f.bytes_read,
    }));
}
