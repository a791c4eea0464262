//! The one builder: a map of settings in, validated agents out (ranges, limits, combinations),
//! each error naming the setting it is about.

use std::path::{Path, PathBuf};
use std::time::Duration;

mod access;
mod reader;
mod verify;

use super::settings::*;
use crate::model::limits::*;
use crate::model::*;
use crate::units::format_bytes;
use access::{access_pattern, check_pattern_keys, operation, random_map, request_sizes};
pub(crate) use reader::Reader;
pub(crate) use verify::build_verify;

pub(crate) const NAME_HINT: &str =
    "use letters, digits and punctuation such as - _ . (no / or \\), at most 100 characters";

/// Why `name` is not usable as a job or agent name.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!("the name contains the control character U+{:04X}", c as u32));
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '/' | '\\')) {
        return Err(format!("the name contains {c:?}, a path separator; names become part of file names"));
    }
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        return Err(format!("the name has {n} characters; at most {MAX_NAME_CHARS} are allowed"));
    }
    Ok(())
}

/// A job name made from a file name, which may hold anything a name may not.
pub(crate) fn name_from_stem(stem: &str) -> String {
    let clean: String = stem
        .chars()
        .map(|c| if c.is_control() || c == '\\' { '_' } else { c })
        .take(MAX_NAME_CHARS)
        .collect();
    if clean.is_empty() {
        "job".into()
    } else {
        clean
    }
}

/// What the agents built so far add up to; checked as each agent is built, so an error points at
/// the agent that goes over.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    agents: usize,
    buffer_bytes: u64,
    region_bytes: u64,
    bytes: u64,
}

/// A default seed per agent index, so agents differ unless told otherwise.
pub(crate) fn default_seed(index: usize) -> u64 {
    0x10_1E25_u64.wrapping_add(index as u64 * 7919)
}

/// The job's `block_unit` (512 when not given).
pub(crate) fn build_block_unit(setting: Option<&Setting>) -> Result<u64, JobError> {
    let Some(s) = setting else { return Ok(512) };
    let none = Settings::new();
    let r = Reader { settings: &none, agent: "" };
    match r.size_of(s)? {
        0 => Err(r.err(s, "block_unit must be positive", Some("e.g. 512 (sectors) or 4k".into()))),
        b => Ok(b),
    }
}

/// Builds the agents one settings map describes: one, or `threads` of them named
/// `<name>.0`, `<name>.1`, ... with different seeds. `index` numbers the agent from 0 (default
/// name and seed), `agent` labels it in messages (`agent[1]`), relative targets are joined to
/// `base_dir`, `totals` accumulates over the job's agents (and is checked against
/// [`limits`](crate::limits)), and `missing_target` makes the error for an agent without one.
///
/// The settings are read group by group, in an order that decides which error comes first
/// when several settings are wrong.
pub(crate) fn build_agents(
    settings: &Settings,
    index: usize,
    agent: &str,
    base_dir: Option<&Path>,
    totals: &mut Totals,
    missing_target: impl FnOnce() -> JobError,
) -> Result<Vec<AgentSpec>, JobError> {
    let r = Reader { settings, agent };
    let (name, target) = identity(&r, index, base_dir, missing_target)?;
    let (op, pattern) = operation(&r)?;
    let (pattern, distribution, stride) = access_pattern(&r, pattern)?;
    check_pattern_keys(&r, op, &pattern)?;
    let random_map = random_map(&r, op, &pattern, distribution)?;
    let (sizes, bs) = request_sizes(&r, &pattern)?;
    let (engine, queue_depth, direct) = engine(&r)?;
    let rate = rate(&r)?;
    let fsync = fsync(&r, op)?;
    let region = region_and_alignment(&r, &sizes, bs.as_ref(), stride, &pattern, direct)?;
    let (termination, ramp, start_delay, phase) = schedule(&r)?;
    let seed = r.uint("seed")?.map_or_else(|| default_seed(index), |(v, _)| v);
    let verify = build_verify(&r, op, &pattern, &sizes, engine)?;
    let threads = count(&r, &sizes, bs.as_ref(), engine, queue_depth, region, totals)?;

    let base = AgentSpec {
        name: name.clone(),
        target,
        op,
        pattern,
        random_map,
        sizes,
        engine,
        queue_depth,
        direct,
        rate,
        fsync,
        region_size: region.map(|(n, _)| n),
        termination,
        ramp,
        seed,
        verify,
        phase,
        start_delay,
    };
    if threads == 1 {
        return Ok(vec![base]);
    }
    Ok((0..threads)
        .map(|k| AgentSpec {
            name: format!("{name}.{k}"),
            seed: seed.wrapping_add(k as u64 * 0x9E37_79B9),
            ..base.clone()
        })
        .collect())
}

/// `name` (default `agent<index>`) and `target` (joined to `base_dir` when relative).
fn identity(
    r: &Reader,
    index: usize,
    base_dir: Option<&Path>,
    missing_target: impl FnOnce() -> JobError,
) -> Result<(String, PathBuf), JobError> {
    let name = match r.string("name")? {
        Some((n, s)) => {
            r.name(s, n)?;
            n.to_string()
        }
        None => format!("agent{index}"),
    };
    let target = match r.string("target")? {
        Some(("", s)) => {
            return Err(r.err(
                s,
                "the target is empty",
                Some("give a file, a directory or a block device".into()),
            ))
        }
        Some((t, s)) if t.contains('\0') => {
            return Err(r.err(s, "the target contains a NUL byte, which no path can hold", None))
        }
        Some((t, _)) => match base_dir {
            Some(dir) => dir.join(t),
            None => PathBuf::from(t),
        },
        None => return Err(missing_target()),
    };
    Ok((name, target))
}

/// `engine`, `qd` (above 1 only with io_uring) and `direct`.
fn engine(r: &Reader) -> Result<(EngineKind, u32, bool), JobError> {
    let engine = match r.choice("engine", ENGINE_VALUES)?.map_or("sync", |(v, _)| v) {
        "io_uring" => EngineKind::IoUring,
        "null" => EngineKind::Null,
        _ => EngineKind::Sync,
    };
    let queue_depth = match r.uint("qd")? {
        Some((0, s)) => return Err(r.err(s, format!("{} must be at least 1", s.name()), None)),
        Some((q, s)) if q > 1 && engine != EngineKind::IoUring => {
            return Err(r.err(
                s,
                format!(
                    "qd = {q} needs engine = \"io_uring\"; the {} engine has one request in flight",
                    engine.name()
                ),
                Some(format!(
                    "add {}, or use {} for parallel {} agents",
                    s.spell("engine", "io_uring"),
                    s.spell("threads", &q.to_string()),
                    engine.name()
                )),
            ))
        }
        Some((q, s)) if q > 4096 => return Err(r.err(s, "qd above 4096 is not supported", None)),
        found => found.map_or(1, |(q, _)| q as u32),
    };
    let direct = r.boolean("direct")?.is_some_and(|(d, _)| d);
    Ok((engine, queue_depth, direct))
}

/// `rate` (operations per second, 0 for none) and its `arrival` process.
fn rate(r: &Reader) -> Result<Rate, JobError> {
    let rate = match r.float("rate")? {
        Some((v, s)) if v != 0.0 && !(MIN_RATE..=MAX_RATE).contains(&v) => {
            return Err(r.err(
                s,
                format!("{} = {v:?} is not a usable number of operations per second", s.name()),
                Some(format!(
                    "give {MIN_RATE} to {MAX_RATE:.0} operations per second, or 0 (the default) for no limit"
                )),
            ))
        }
        found => found.map_or(0.0, |(v, _)| v),
    };
    let arrival = match r.choice("arrival", ARRIVAL_VALUES)?.map_or("constant", |(v, _)| v) {
        "poisson" => Arrival::Poisson,
        _ => Arrival::Constant,
    };
    r.unused("arrival", rate > 0.0, "the agent is not rate-limited", |s| {
        format!("set a rate in operations per second, e.g. {}", s.spell("rate", "1000"))
    })?;
    Ok(Rate { ops_per_s: rate, arrival })
}

/// `fsync` (none, at the end, every N writes) or `fdatasync` (every N writes).
fn fsync(r: &Reader, op: OpMix) -> Result<FsyncPolicy, JobError> {
    let fsync = match r.get("fsync") {
        None => FsyncPolicy::None,
        Some(s) => {
            let every = |n: Option<u64>| n.filter(|n| *n > 0).map(FsyncPolicy::EveryN);
            let policy = match &s.value {
                Raw::Str(v) => match v.trim() {
                    "none" => Some(FsyncPolicy::None),
                    "end" => Some(FsyncPolicy::AtEnd),
                    n => every(n.parse().ok()),
                },
                Raw::Int(n) => every(u64::try_from(*n).ok()),
                _ => None,
            };
            policy.ok_or_else(|| {
                r.err(
                    s,
                    format!("unknown fsync policy {}", s.value.describe()),
                    Some(
                        "use \"none\", \"end\" (one fsync at the end, timed) or N (fsync every N writes)"
                            .into(),
                    ),
                )
            })?
        }
    };
    let fsync = match (fsync, r.uint("fdatasync")?) {
        (_, None) => fsync,
        (FsyncPolicy::None, Some((n, _))) if n > 0 => FsyncPolicy::DataEveryN(n),
        (FsyncPolicy::None, Some((_, s))) => {
            return Err(r.err(
                s,
                "fdatasync must be at least 1",
                Some("fdatasync = N: after every N writes".into()),
            ))
        }
        (_, Some((_, s))) => {
            return Err(r.err(
                s,
                "fsync and fdatasync are both set",
                Some("give one: fsync = N (data and metadata) or fdatasync = N (data)".into()),
            ))
        }
    };
    r.unused("fsync", op.writes() || fsync == FsyncPolicy::None, "the agent does not write", |s| {
        format!("fsync applies to writes, e.g. {}", s.spell("rw", "randwrite"))
    })?;
    Ok(fsync)
}

/// The region (`size`), which must hold the largest request, and with `direct` the 512-byte
/// alignment of every size and offset step.
fn region_and_alignment<'a>(
    r: &Reader<'a>,
    sizes: &SizeSpec,
    bs: Option<&(SizeSpec, &'a Setting)>,
    stride: Option<(u64, &'a Setting)>,
    pattern: &Pattern,
    direct: bool,
) -> Result<Option<(u64, &'a Setting)>, JobError> {
    let region = r.nonzero_size("size")?;
    if let Some((region, s)) = region {
        if sizes.max() > region {
            let (s, message) = match bs {
                Some((_, b)) => (
                    *b,
                    format!(
                        "requests of {} do not fit in the region (size = {})",
                        format_bytes(sizes.max()),
                        format_bytes(region)
                    ),
                ),
                None => (s, format!("{} is smaller than the default 4KiB request", format_bytes(region))),
            };
            return Err(r.err(s, message, None));
        }
    }
    if direct {
        let mut aligned: Vec<(u64, Option<&Setting>)> = match sizes {
            SizeSpec::Fixed(n) => vec![(*n, bs.map(|b| b.1))],
            SizeSpec::Weighted(l) => l.iter().map(|(n, _)| (*n, bs.map(|b| b.1))).collect(),
        };
        aligned.extend(stride.map(|(n, s)| (n, Some(s))));
        if let Pattern::Noncontiguous(n) = *pattern {
            for (key, v) in [("region_size", n.region_size), ("spacing", n.spacing)] {
                aligned.push((v, r.get(key)));
            }
            aligned.push((n.max_call(), r.get("sieve_buffer").or(r.get("region_size"))));
        }
        aligned.extend(region.map(|(n, s)| (n, Some(s))));
        if let Some((n, s)) = aligned.into_iter().find(|(n, _)| n % 512 != 0) {
            let s = s.or(r.get("direct")).expect("a misaligned size was given, so is direct");
            return Err(r.err(
                s,
                format!("{n} is not a multiple of 512 bytes, which O_DIRECT (direct = true) needs"),
                Some(
                    "direct I/O bypasses the page cache, so sizes and offsets must be multiples of the \
                     device's logical block size (512 bytes, or 4k on some devices); use sizes like 4k, \
                     or drop direct"
                        .into(),
                ),
            ));
        }
    }
    Ok(region)
}

/// When the agent runs and stops: `time`, `bytes`, `ramp`, `start_delay` and `phase`.
fn schedule(r: &Reader) -> Result<(Termination, Duration, Duration, u32), JobError> {
    let time = match r.duration("time")? {
        Some((Duration::ZERO, s)) => return Err(r.err(s, format!("{} must be positive", s.name()), None)),
        found => found.map(|(t, _)| t),
    };
    let bytes = r.nonzero_size("bytes")?.map(|(b, _)| b);
    let ramp = r.duration("ramp")?.map_or(Duration::ZERO, |(d, _)| d);
    let start_delay = r.duration("start_delay")?.map_or(Duration::ZERO, |(d, _)| d);
    let phase = match r.uint("phase")? {
        None => 1,
        Some((p, _)) if (1..=MAX_PHASES).contains(&p) => p as u32,
        Some((_, s)) => {
            return Err(r.err(
                s,
                format!("{} must be from 1 to {MAX_PHASES}", s.name()),
                Some("phases run in order: 1, then 2, …; agents of one phase run together".into()),
            ))
        }
    };
    Ok((Termination { time, bytes }, ramp, start_delay, phase))
}

/// `threads`, and what this agent adds to the job's totals (agents, request buffers, regions
/// and bytes), each checked against its limit.
fn count<'a>(
    r: &Reader<'a>,
    sizes: &SizeSpec,
    bs: Option<&(SizeSpec, &'a Setting)>,
    engine: EngineKind,
    queue_depth: u32,
    region: Option<(u64, &'a Setting)>,
    totals: &mut Totals,
) -> Result<usize, JobError> {
    let threads = match r.uint("threads")? {
        Some((0, s)) => return Err(r.err(s, format!("{} must be at least 1", s.name()), None)),
        Some((t, s)) if t > MAX_AGENTS as u64 => {
            return Err(r.err(
                s,
                format!("{} = {t}: a job runs at most {MAX_AGENTS} agents", s.name()),
                Some(format!(
                    "use at most {MAX_AGENTS} threads; deeper queues (io_uring qd) add concurrency"
                )),
            ))
        }
        found => found.map_or(1, |(t, _)| t as usize),
    };
    let whole_agent = r.get("threads").or(r.get("name")).or(r.get("target"));
    let whole_agent = whole_agent.expect("an agent without a target was refused above");
    totals.agents += threads;
    if totals.agents > MAX_AGENTS {
        return Err(r.err(
            whole_agent,
            format!(
                "this agent brings the job to {} agents; at most {MAX_AGENTS} are supported",
                totals.agents
            ),
            Some("lower threads, or split the work into several jobs".into()),
        ));
    }
    let depth = if engine == EngineKind::IoUring { u64::from(queue_depth) } else { 1 };
    let buffers = sizes.max().checked_mul(depth).and_then(|b| b.checked_mul(threads as u64));
    let buffers = buffers.and_then(|b| b.checked_add(totals.buffer_bytes)).filter(|b| *b <= MAX_BUFFER_BYTES);
    let Some(buffers) = buffers else {
        let s = bs.map(|b| b.1).or(r.get("sieve_buffer")).or(r.get("region_size"));
        let s = s.or(r.get("qd")).unwrap_or(whole_agent);
        return Err(r.err(
            s,
            format!(
                "request buffers (largest request × qd × threads, over all agents) exceed {}",
                format_bytes(MAX_BUFFER_BYTES)
            ),
            Some("lower bs, qd or threads".into()),
        ));
    };
    totals.buffer_bytes = buffers;
    let sum = |total: u64, each: Option<(u64, &Setting)>| -> Result<u64, JobError> {
        let Some((each, s)) = each else { return Ok(total) };
        each.checked_mul(threads as u64)
            .and_then(|v| v.checked_add(total))
            .filter(|v| *v <= MAX_OFFSET)
            .ok_or_else(|| {
                r.err(
                    s,
                    format!("the {} of all agents together exceed {MAX_OFFSET} bytes", s.name()),
                    Some("lower it: totals must fit a signed 64-bit byte count".into()),
                )
            })
    };
    totals.region_bytes = sum(totals.region_bytes, region)?;
    totals.bytes = sum(totals.bytes, r.nonzero_size("bytes")?)?;
    Ok(threads)
}
