//! The one builder: a map of settings in, validated agents out (ranges, limits, combinations),
//! each error naming the setting it is about.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::settings::*;
use crate::model::limits::*;
use crate::model::*;
use crate::units::{format_bytes, parse_duration, parse_size, UnitError};

/// Typed access to one agent's settings; every error names the setting it is about.
pub(crate) struct Reader<'a> {
    settings: &'a Settings,
    /// The agent, e.g. `agent[2]`, for errors about inherited settings; empty for flags.
    agent: &'a str,
}

pub(crate) type Found<'a, T> = Result<Option<(T, &'a Setting)>, JobError>;

impl<'a> Reader<'a> {
    fn get(&self, key: &str) -> Option<&'a Setting> {
        self.settings.get(key)
    }

    fn err(&self, s: &Setting, message: impl Into<String>, hint: Option<String>) -> JobError {
        let mut message = message.into();
        // A default is fine for one agent and wrong for another: say which.
        if s.inherited() && !self.agent.is_empty() {
            message.push_str(&format!(" (in {})", self.agent));
        }
        JobError { source: s.source.clone(), key: s.path.clone(), message, hint }
    }

    fn unit_err(&self, s: &Setting, e: UnitError) -> JobError {
        self.err(
            s,
            format!("cannot read {:?} as a {}: {}", e.text, e.what, e.reason),
            Some(format!("e.g. {}", e.examples)),
        )
    }

    fn expected(&self, s: &Setting, what: &str) -> JobError {
        self.err(s, format!("expected {what}, found {}", s.value.kind()), None)
    }

    fn read<T>(&self, key: &str, f: impl FnOnce(&'a Setting) -> Result<T, JobError>) -> Found<'a, T> {
        self.get(key).map(|s| f(s).map(|v| (v, s))).transpose()
    }

    fn string(&self, key: &str) -> Found<'a, &'a str> {
        self.read(key, |s| match &s.value {
            Raw::Str(v) => Ok(v.as_str()),
            _ => Err(self.expected(s, "a string")),
        })
    }

    fn choice(&self, key: &str, valid: &[&str]) -> Found<'a, &'a str> {
        let Some((v, s)) = self.string(key)? else { return Ok(None) };
        if valid.contains(&v) {
            return Ok(Some((v, s)));
        }
        let hint = match suggest(v, valid) {
            Some(k) => format!("did you mean \"{k}\"? valid values: {}", quoted(valid)),
            None => format!("valid values: {}", quoted(valid)),
        };
        Err(self.err(s, format!("unknown {} \"{v}\"", s.key()), Some(hint)))
    }

    fn size_of(&self, s: &Setting) -> Result<u64, JobError> {
        let n = match &s.value {
            Raw::Int(i) => u64::try_from(*i)
                .map_err(|_| self.err(s, format!("a size cannot be negative, found {i}"), None))?,
            Raw::Str(t) => parse_size(t).map_err(|e| self.unit_err(s, e))?,
            _ => return Err(self.expected(s, "a size like \"4k\"")),
        };
        if n > MAX_OFFSET {
            return Err(self.err(
                s,
                format!("{} is too large: {n} bytes is past the largest file offset", s.value.describe()),
                Some(format!(
                    "sizes must fit a signed 64-bit file offset: at most {MAX_OFFSET} bytes (8EiB - 1)"
                )),
            ));
        }
        Ok(n)
    }

    fn size(&self, key: &str) -> Found<'a, u64> {
        self.read(key, |s| self.size_of(s))
    }

    /// A positive size.
    fn nonzero_size(&self, key: &str) -> Found<'a, u64> {
        match self.size(key)? {
            Some((0, s)) => Err(self.err(s, format!("{} must be positive", s.name()), None)),
            found => Ok(found),
        }
    }

    fn duration(&self, key: &str) -> Found<'a, Duration> {
        self.read(key, |s| {
            let hint = || Some("e.g. \"500ms\", \"10s\", \"2h\"; at most 366 days".to_string());
            let negative = || self.err(s, "a duration cannot be negative", hint());
            let d = match &s.value {
                Raw::Int(i) => u64::try_from(*i).map(Duration::from_secs).map_err(|_| negative())?,
                Raw::Float(v) if *v < 0.0 => return Err(negative()),
                Raw::Float(v) => Duration::try_from_secs_f64(*v)
                    .map_err(|_| self.err(s, format!("{v} is not a usable number of seconds"), hint()))?,
                Raw::Str(t) => parse_duration(t).map_err(|e| self.unit_err(s, e))?,
                Raw::Bool(_) => return Err(self.expected(s, "a duration like \"10s\"")),
            };
            if d > MAX_DURATION {
                return Err(self.err(s, format!("{} is longer than a year", s.value.describe()), hint()));
            }
            Ok(d)
        })
    }

    /// A job or agent name: it becomes part of file and thread names, and shows in reports.
    fn name(&self, s: &Setting, text: &str) -> Result<(), JobError> {
        check_name(text).map_err(|why| self.err(s, why, Some(NAME_HINT.into())))
    }

    fn float(&self, key: &str) -> Found<'a, f64> {
        self.read(key, |s| {
            let v = match &s.value {
                Raw::Int(i) => *i as f64,
                Raw::Float(v) => *v,
                Raw::Str(t) => t
                    .trim()
                    .parse()
                    .map_err(|_| self.err(s, format!("expected a number, found \"{t}\""), None))?,
                Raw::Bool(_) => return Err(self.expected(s, "a number")),
            };
            if v.is_finite() {
                Ok(v)
            } else {
                Err(self.err(s, format!("expected a finite number, found {v}"), None))
            }
        })
    }

    fn uint(&self, key: &str) -> Found<'a, u64> {
        self.read(key, |s| {
            let value = match &s.value {
                Raw::Int(i) => u64::try_from(*i).ok(),
                Raw::Str(t) => t.trim().parse().ok(),
                _ => None,
            };
            value.ok_or_else(|| {
                self.err(s, format!("expected a non-negative integer, found {}", s.value.describe()), None)
            })
        })
    }

    fn boolean(&self, key: &str) -> Found<'a, bool> {
        self.read(key, |s| match &s.value {
            Raw::Bool(b) => Ok(*b),
            other => Err(self.err(s, format!("expected true or false, found {}", other.describe()), None)),
        })
    }

    /// Rejects a setting the agent itself gives (not one inherited from `[defaults]`, which may
    /// serve other agents) when it would have no effect: that is almost always a mistake.
    fn unused(
        &self,
        key: &str,
        applies: bool,
        why: &str,
        hint: impl FnOnce(&Setting) -> String,
    ) -> Result<(), JobError> {
        match self.get(key) {
            Some(s) if !applies && !s.inherited() => {
                Err(self.err(s, format!("{} has no effect here: {why}", s.name()), Some(hint(s))))
            }
            _ => Ok(()),
        }
    }

    /// Settles `op` or `pattern` against what `rw` implies: an agent's own setting beats an
    /// inherited one, and two at the same level must agree.
    fn pick(
        &self,
        given: Option<(&'a str, &'a Setting)>,
        implied: Option<(&'a str, &'a Setting)>,
        fits: impl Fn(&str, &str) -> bool,
    ) -> Result<Option<(&'a str, &'a Setting)>, JobError> {
        match (given, implied) {
            (Some(g), Some(i)) if g.1.inherited() == i.1.inherited() => {
                if fits(g.0, i.0) {
                    Ok(Some(g))
                } else {
                    Err(self.err(
                        g.1,
                        format!("{} = \"{}\" conflicts with rw = {}", g.1.key(), g.0, i.1.value.describe()),
                        Some("give either rw, or op and pattern".into()),
                    ))
                }
            }
            (Some(g), Some(i)) => Ok(Some(if g.1.inherited() { i } else { g })),
            (g, i) => Ok(g.or(i)),
        }
    }

    /// `bs`: one size, or a weighted list "4k:70,64k:30".
    fn sizes(&self) -> Found<'a, SizeSpec> {
        self.read("bs", |s| {
            let text = match &s.value {
                Raw::Str(t) if t.contains(':') || t.contains(',') => t,
                _ => return self.size_of(s).map(SizeSpec::Fixed),
            };
            let mut list = Vec::new();
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (size, weight) = part.split_once(':').ok_or_else(|| {
                    self.err(
                        s,
                        format!("\"{part}\" in a weighted list has no weight"),
                        Some("write size:weight pairs, e.g. \"4k:70,64k:30\"".into()),
                    )
                })?;
                let size = parse_size(size).map_err(|e| self.unit_err(s, e))?;
                let weight = weight.trim().parse::<u32>().map_err(|_| {
                    self.err(s, format!("weight \"{}\" is not a whole number", weight.trim()), None)
                })?;
                list.push((size, weight));
            }
            if list.iter().all(|(_, w)| *w == 0) {
                return Err(self.err(s, "a weighted list needs at least one positive weight", None));
            }
            Ok(SizeSpec::Weighted(list))
        })
    }
}

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
pub(crate) fn build_agents(
    settings: &Settings,
    index: usize,
    agent: &str,
    base_dir: Option<&Path>,
    totals: &mut Totals,
    missing_target: impl FnOnce() -> JobError,
) -> Result<Vec<AgentSpec>, JobError> {
    let r = Reader { settings, agent };
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

    // Operation and pattern: `rw` (fio's shorthand) or `op` + `pattern`.
    let rw = r.choice("rw", RW_VALUES)?;
    let rw_op = rw.map(|(v, s)| {
        let op = match v.trim_start_matches("rand") {
            "read" => "read",
            "write" => "write",
            _ => "mix",
        };
        (op, s)
    });
    let rw_pattern = rw.map(|(v, s)| (if v.starts_with("rand") { "random" } else { "sequential" }, s));
    let op = r.pick(r.choice("op", OP_VALUES)?, rw_op, |given, implied| given == implied)?;
    let pattern = r.pick(r.choice("pattern", PATTERN_VALUES)?, rw_pattern, |given, implied| {
        // A noncontig access places its own calls, so it fits either access order rw implies.
        given == implied || given == "noncontig" || (given == "strided" && implied == "sequential")
    })?;

    let read_pct = match r.uint("read_pct")? {
        Some((p, s)) if p > 100 => {
            return Err(r.err(
                s,
                format!("read_pct = {p} is not a percentage"),
                Some("give 0 to 100: the share of reads in a read/write mix".into()),
            ))
        }
        found => found.map_or(50, |(p, _)| p as u8),
    };
    let op = match op.map_or("read", |(v, _)| v) {
        "read" => OpMix::Read,
        "write" => OpMix::Write,
        _ => OpMix::Mixed { read_pct },
    };

    let stride = r.nonzero_size("stride")?;
    let distribution = r.choice("distribution", DISTRIBUTION_VALUES)?;
    let center = match r.float("hot_spot")? {
        Some((c, s)) if !(0.0..=1.0).contains(&c) => {
            return Err(r.err(s, format!("hot_spot = {c} is not a fraction of the region (0 to 1)"), None))
        }
        found => found.map_or(0.5, |(c, _)| c),
    };
    let spread = match r.float("spread")? {
        Some((v, s)) if v <= 0.0 || v > MAX_SPREAD => {
            return Err(r.err(
                s,
                format!("{} = {v:?} is not a positive fraction of the region up to {MAX_SPREAD}", s.name()),
                Some("e.g. 0.1; a spread of 1 or more is already close to uniform".into()),
            ))
        }
        found => found.map_or(0.1, |(v, _)| v),
    };
    let theta = match r.float("zipf_theta")? {
        Some((t, s)) if t <= 0.0 || t > MAX_ZIPF_THETA => {
            return Err(r.err(
                s,
                format!("{} = {t:?} is not between 0 (exclusive) and {MAX_ZIPF_THETA}", s.name()),
                Some("typical values: 0.8 to 1.5".into()),
            ))
        }
        found => found.map_or(1.2, |(t, _)| t),
    };
    let pattern = match pattern {
        // A stride turns a sequential rw into a strided pattern (the only way to get one from flags).
        Some(("sequential", s)) if s.key() == "rw" && stride.is_some() => "strided",
        Some((p, _)) => p,
        None if stride.is_some() => "strided",
        None => "random",
    };
    let pattern = match pattern {
        "sequential" => Pattern::Sequential,
        "strided" => match stride {
            Some((stride, _)) => Pattern::Strided { stride },
            None => {
                let s = r.get("pattern").expect("only an explicit pattern is strided without a stride");
                return Err(r.err(
                    s,
                    "a strided pattern needs a stride",
                    Some(format!("add {}", s.spell("stride", "64k"))),
                ));
            }
        },
        "noncontig" => {
            let s = r.get("pattern").expect("noncontig is only chosen explicitly");
            let regions = match r.uint("regions")? {
                Some((0, rs)) => return Err(r.err(rs, format!("{} must be at least 1", rs.name()), None)),
                Some((n, rs)) if n > MAX_REGIONS => {
                    return Err(r.err(
                        rs,
                        format!(
                            "{} = {n}: at most {MAX_REGIONS} regions per access are supported",
                            rs.name()
                        ),
                        Some("fewer, larger regions make the same access pattern".into()),
                    ))
                }
                Some((n, _)) => n,
                None => {
                    return Err(r.err(
                        s,
                        "a noncontig pattern needs the number of regions per access",
                        Some(format!("add {}", s.spell("regions", "64"))),
                    ))
                }
            };
            let Some((region_size, _)) = r.nonzero_size("region_size")? else {
                return Err(r.err(
                    s,
                    "a noncontig pattern needs the size of each region",
                    Some(format!("add {}", s.spell("region_size", "8"))),
                ));
            };
            let spacing = r.size("spacing")?.map_or(0, |(v, _)| v);
            let sieve = r.boolean("sieve")?.is_some_and(|(v, _)| v);
            let buffer = r.nonzero_size("sieve_buffer")?;
            // ROMIO's default ind_rd_buffer_size.
            let sieve_buffer = sieve.then(|| buffer.map_or(4 << 20, |(b, _)| b));
            let n = Noncontiguous { regions, region_size, spacing, sieve_buffer };
            // Offsets run to the access's end plus one spacing to the next access.
            let rs = r.get("regions").expect("regions was read above");
            let reach = n.checked_span().and_then(|v| v.checked_add(spacing)).filter(|v| *v <= MAX_OFFSET);
            let Some(reach) = reach else {
                return Err(r.err(
                    rs,
                    format!(
                        "{regions} regions of {region_size} bytes, {spacing} apart, reach past the largest file offset"
                    ),
                    Some("lower regions, region_size or spacing".into()),
                ));
            };
            if let Some((region, size)) = r.nonzero_size("size")? {
                if reach - spacing > region {
                    return Err(r.err(
                        rs,
                        format!(
                            "one access of {regions} regions spans {}, more than the region ({} = {})",
                            format_bytes(reach - spacing),
                            size.name(),
                            format_bytes(region)
                        ),
                        Some("lower regions, region_size or spacing, or raise size".into()),
                    ));
                }
            }
            Pattern::Noncontiguous(n)
        }
        _ => Pattern::Random(match distribution.map_or("uniform", |(v, _)| v) {
            "normal" => Distribution::Normal { center, spread },
            "zipf" => Distribution::Zipf { theta },
            _ => Distribution::Uniform,
        }),
    };
    r.unused(
        "read_pct",
        matches!(op, OpMix::Mixed { .. }),
        "the agent does not mix reads and writes",
        |s| format!("for a mix, use {}", s.spell("rw", "randrw")),
    )?;
    r.unused("stride", matches!(pattern, Pattern::Strided { .. }), "the pattern is not sequential", |s| {
        format!("a stride applies to sequential access, e.g. {}", s.spell("rw", "read"))
    })?;
    let random = matches!(pattern, Pattern::Random(_));
    r.unused("distribution", random, "offsets are not random", |s| {
        format!("distributions apply to random access, e.g. {}", s.spell("rw", "randread"))
    })?;
    let normal = matches!(pattern, Pattern::Random(Distribution::Normal { .. }));
    for key in ["hot_spot", "spread"] {
        r.unused(key, normal, "it shapes the normal distribution", |s| {
            format!("add {}", s.spell("distribution", "normal"))
        })?;
    }
    let noncontig = match pattern {
        Pattern::Noncontiguous(n) => Some(n),
        _ => None,
    };
    for key in ["regions", "region_size", "spacing", "sieve"] {
        r.unused(key, noncontig.is_some(), "it shapes the noncontig pattern", |s| {
            format!("add {}", s.spell("pattern", "noncontig"))
        })?;
    }
    r.unused(
        "sieve_buffer",
        noncontig.is_some_and(|n| n.sieve_buffer.is_some()),
        "data sieving is off",
        |s| format!("add {}", s.spell("sieve", "true")),
    )?;
    if let Some(n) = noncontig {
        if op != OpMix::Read {
            let s = r.get("rw").or(r.get("op")).or(r.get("pattern")).expect("a pattern was given");
            return Err(r.err(
                s,
                "the noncontig pattern reads (sieving writes would need read-modify-write)",
                Some(format!("use {}", s.spell("rw", "read"))),
            ));
        }
        r.unused("bs", false, "request sizes of a noncontig pattern follow from its regions", |s| {
            format!("set {} instead", s.spell("region_size", "8"))
        })?;
        if n.max_call() > u32::MAX as u64 {
            let s = r.get("sieve_buffer").or(r.get("region_size")).expect("one of them is large");
            return Err(r.err(s, "calls of 4GiB or more are not supported", None));
        }
    }
    let zipf = matches!(pattern, Pattern::Random(Distribution::Zipf { .. }));
    r.unused("zipf_theta", zipf, "it shapes the zipf distribution", |s| {
        format!("add {}", s.spell("distribution", "zipf"))
    })?;
    let random_map = r.boolean("random_map")?;
    r.unused("random_map", random, "offsets are not random", |s| {
        format!("a random map applies to random access, e.g. {}", s.spell("rw", "randwrite"))
    })?;
    let uniform = pattern == Pattern::Random(Distribution::Uniform);
    let random_map = match random_map {
        // A permutation visits every block once per pass: a skewed distribution would be flat.
        Some((true, s)) if random && !uniform && !s.inherited() => {
            return Err(r.err(
                s,
                format!(
                    "{} = true needs uniform offsets: without replacement every block is visited once \
                     per pass, which would flatten the {} distribution",
                    s.name(),
                    distribution.map_or("uniform", |(v, _)| v)
                ),
                Some(format!(
                    "drop {} (skewed offsets are drawn with replacement), or use {}",
                    s.name(),
                    s.spell("distribution", "uniform")
                )),
            ))
        }
        Some((v, _)) => v && uniform,
        // As fio keeps a random map for writes: each block written once before any is rewritten.
        None => uniform && op == OpMix::Write,
    };

    let bs = r.sizes()?;
    let sizes = match (&pattern, &bs) {
        // The engine sizes its buffers by the largest call.
        (Pattern::Noncontiguous(n), _) => SizeSpec::Fixed(n.max_call()),
        (_, Some((v, _))) => v.clone(),
        (_, None) => SizeSpec::Fixed(4096),
    };
    if let Some((_, s)) = bs {
        if sizes.min() == 0 {
            return Err(r.err(s, "request sizes must be positive", None));
        }
        if sizes.max() > u32::MAX as u64 {
            return Err(r.err(s, "request sizes of 4GiB or more are not supported", None));
        }
    }

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

    let region = r.nonzero_size("size")?;
    if let Some((region, s)) = region {
        if sizes.max() > region {
            let (s, message) = match &bs {
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
        let mut aligned: Vec<(u64, Option<&Setting>)> = match &sizes {
            SizeSpec::Fixed(n) => vec![(*n, bs.as_ref().map(|b| b.1))],
            SizeSpec::Weighted(l) => l.iter().map(|(n, _)| (*n, bs.as_ref().map(|b| b.1))).collect(),
        };
        aligned.extend(stride.map(|(n, s)| (n, Some(s))));
        if let Pattern::Noncontiguous(n) = pattern {
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
    let seed = r.uint("seed")?.map_or_else(|| default_seed(index), |(v, _)| v);
    let verify = build_verify(&r, op, &pattern, &sizes, engine)?;
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
        let s = bs.as_ref().map(|b| b.1).or(r.get("sieve_buffer")).or(r.get("region_size"));
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
        rate: Rate { ops_per_s: rate, arrival },
        fsync,
        region_size: region.map(|(n, _)| n),
        termination: Termination { time, bytes },
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

/// The `verify`, `verify_after_write` and `verify_generation` keys: blocks of one size that
/// start at multiples of it, written or read (not mixed), by an engine that moves data.
pub(crate) fn build_verify(
    r: &Reader,
    op: OpMix,
    pattern: &Pattern,
    sizes: &SizeSpec,
    engine: EngineKind,
) -> Result<Option<Verify>, JobError> {
    let kind = r.choice("verify", VERIFY_VALUES)?;
    r.unused(
        "verify_after_write",
        kind.is_some() && op == OpMix::Write,
        "it needs a verifying write agent",
        |s| format!("add {} to an agent with {}", s.spell("verify", "crc32c"), s.spell("rw", "write")),
    )?;
    r.unused("verify_generation", kind.is_some(), "the agent does not verify", |s| {
        format!("add {}", s.spell("verify", "crc32c"))
    })?;
    let Some((kind, s)) = kind else { return Ok(None) };
    let refuse = |message: String, hint: String| Err(r.err(s, message, Some(hint)));
    if let OpMix::Mixed { .. } = op {
        return refuse(
            "verification checks blocks a write agent wrote or a read agent reads, not a mix".into(),
            format!(
                "verify with a write agent ({}, {}), then a read agent on the same file",
                s.spell("rw", "write"),
                s.spell("verify_after_write", "true")
            ),
        );
    }
    if engine == EngineKind::Null {
        return refuse(
            "the null engine moves no data to verify".into(),
            format!("use {}", s.spell("engine", "sync")),
        );
    }
    let bs = match (pattern, sizes) {
        (Pattern::Noncontiguous(_), _) => {
            return refuse(
                "the noncontig pattern reads pieces of blocks, which cannot be verified".into(),
                format!("verify with {} or {}", s.spell("rw", "read"), s.spell("rw", "randread")),
            )
        }
        (_, SizeSpec::Weighted(_)) => {
            return refuse(
                "verification needs one request size (each block is one request)".into(),
                format!("give a single size, e.g. {}", s.spell("bs", "4k")),
            )
        }
        (_, SizeSpec::Fixed(bs)) => *bs,
    };
    if bs < MIN_VERIFY_BLOCK {
        return refuse(
            format!(
                "requests of {bs} bytes cannot hold a block header and trailer ({MIN_VERIFY_BLOCK} bytes)"
            ),
            format!("use {} or larger", s.spell("bs", "4k")),
        );
    }
    if let Pattern::Strided { stride } = pattern {
        if stride % bs != 0 {
            return refuse(
                format!("a stride of {stride} bytes is not a multiple of the {bs}-byte blocks"),
                "with verification, blocks start at multiples of the request size; use a stride that is one"
                    .into(),
            );
        }
    }
    let kind = match kind {
        "xxh3" => VerifyKind::Xxh3,
        "pattern" => VerifyKind::Pattern,
        _ => VerifyKind::Crc32c,
    };
    let after_write = r.boolean("verify_after_write")?.is_some_and(|(v, _)| v);
    let generation = match r.uint("verify_generation")? {
        Some((0, gs)) => {
            return Err(r.err(
                gs,
                format!("{} must be at least 1", gs.name()),
                Some("generations start at 1".into()),
            ))
        }
        found => found.map(|(g, _)| g),
    };
    Ok(Some(Verify { kind, after_write, generation }))
}
