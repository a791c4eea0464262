//! Job files (TOML) and the one builder that turns settings into agents.
//!
//! Settings reach the builder as [`Setting`]s, each remembering where it came from (a line of a
//! job file, or a command-line flag), so every error can point at its source. The flag path
//! (`FlagWorkload`) feeds the same builder; validation exists once.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml_edit::{Document, Item, Table, Value};

use crate::model::*;
use crate::units::{parse_duration, parse_size};

/// Keys an `[[agent]]` table (or `[defaults]`) may hold.
pub(crate) const AGENT_KEYS: &[&str] = &[
    "name",
    "target",
    "rw",
    "op",
    "read_pct",
    "pattern",
    "stride",
    "distribution",
    "hot_spot",
    "spread",
    "zipf_theta",
    "bs",
    "engine",
    "qd",
    "direct",
    "rate",
    "arrival",
    "fsync",
    "size",
    "time",
    "bytes",
    "ramp",
    "seed",
    "threads",
];
const TOP_KEYS: &[&str] = &["name", "block_unit", "defaults", "agent"];

/// Names other tools use for our keys: a user writing `blocksize` means `bs`.
const ALIASES: &[(&str, &str)] = &[
    ("blocksize", "bs"),
    ("block_size", "bs"),
    ("bsize", "bs"),
    ("iosize", "bs"),
    ("request_size", "bs"),
    ("iodepth", "qd"),
    ("queue_depth", "qd"),
    ("depth", "qd"),
    ("buffers", "qd"),
    ("ioengine", "engine"),
    ("numjobs", "threads"),
    ("jobs", "threads"),
    ("agents", "threads"),
    ("runtime", "time"),
    ("duration", "time"),
    ("filename", "target"),
    ("file", "target"),
    ("path", "target"),
    ("directory", "target"),
    ("device", "target"),
    ("rwmixread", "read_pct"),
    ("ramp_time", "ramp"),
    ("io_size", "bytes"),
    ("readwrite", "rw"),
    ("rate_iops", "rate"),
    ("random_distribution", "distribution"),
    ("filesize", "size"),
    ("o_direct", "direct"),
];

/// Where a setting or an error comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorSource {
    /// A position in a job file (1-based line and column).
    File { file: String, line: usize, column: usize },
    /// A command-line flag, e.g. `--bs`.
    Flag(String),
}

/// A job that cannot be built, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    pub source: ErrorSource,
    /// The key path, e.g. `agent[2].bs` or `defaults.engine`; empty for syntax errors.
    pub key: String,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            ErrorSource::File { file, line, column } => write!(f, "{file}:{line}:{column}: ")?,
            ErrorSource::Flag(flag) => write!(f, "{flag}: ")?,
        }
        if !self.key.is_empty() && !matches!(self.source, ErrorSource::Flag(_)) {
            write!(f, "{}: ", self.key)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for JobError {}

/// A raw setting value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Raw {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Raw {
    fn kind(&self) -> &'static str {
        match self {
            Raw::Str(_) => "a string",
            Raw::Int(_) => "an integer",
            Raw::Float(_) => "a float",
            Raw::Bool(_) => "a boolean",
        }
    }
}

/// One setting and where it was written.
#[derive(Debug, Clone)]
pub(crate) struct Setting {
    pub value: Raw,
    pub source: ErrorSource,
    /// Key path for messages, e.g. `agent[1].bs`.
    pub path: String,
}

/// The settings of one agent (defaults merged under its own).
pub(crate) type Settings = BTreeMap<String, Setting>;

fn err(s: &Setting, message: impl Into<String>, hint: Option<String>) -> JobError {
    JobError { source: s.source.clone(), key: s.path.clone(), message: message.into(), hint }
}

/// The closest valid key to an unknown one, by alias or by spelling.
pub(crate) fn suggest(unknown: &str, valid: &[&str]) -> Option<String> {
    let lower = unknown.to_ascii_lowercase().replace('-', "_");
    if let Some((_, to)) = ALIASES.iter().find(|(from, _)| *from == lower) {
        if valid.contains(to) {
            return Some((*to).to_string());
        }
    }
    valid
        .iter()
        .map(|k| (strsim::jaro_winkler(&lower, k), *k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k.to_string())
}

fn unknown_key_hint(unknown: &str, valid: &[&str]) -> String {
    match suggest(unknown, valid) {
        Some(k) => format!("did you mean `{k}`?"),
        None => format!("valid keys: {}", valid.join(", ")),
    }
}

struct Reader<'a> {
    settings: &'a Settings,
}

impl<'a> Reader<'a> {
    fn get(&self, key: &str) -> Option<&'a Setting> {
        self.settings.get(key)
    }

    fn string(&self, key: &str) -> Result<Option<(&'a str, &'a Setting)>, JobError> {
        match self.get(key) {
            None => Ok(None),
            Some(s) => match &s.value {
                Raw::Str(v) => Ok(Some((v.as_str(), s))),
                other => Err(err(s, format!("expected a string, found {}", other.kind()), None)),
            },
        }
    }

    fn choice(&self, key: &str, valid: &[&str]) -> Result<Option<(&'a str, &'a Setting)>, JobError> {
        let Some((v, s)) = self.string(key)? else { return Ok(None) };
        if valid.contains(&v) {
            return Ok(Some((v, s)));
        }
        let hint = match suggest(v, valid) {
            Some(k) => format!("did you mean \"{k}\"? valid: {}", valid.join(", ")),
            None => format!("valid: {}", valid.join(", ")),
        };
        Err(err(s, format!("unknown value \"{v}\""), Some(hint)))
    }

    fn size(&self, key: &str) -> Result<Option<u64>, JobError> {
        let Some(s) = self.get(key) else { return Ok(None) };
        match &s.value {
            Raw::Int(i) if *i >= 0 => Ok(Some(*i as u64)),
            Raw::Str(t) => parse_size(t).map(Some).map_err(|e| err(s, e.to_string(), None)),
            other => Err(err(s, format!("expected a size like \"4k\", found {}", other.kind()), None)),
        }
    }

    fn duration(&self, key: &str) -> Result<Option<Duration>, JobError> {
        let Some(s) = self.get(key) else { return Ok(None) };
        let secs = |v: f64| {
            Duration::try_from_secs_f64(v).map_err(|_| err(s, "expected a non-negative duration", None))
        };
        match &s.value {
            Raw::Int(i) => secs(*i as f64).map(Some),
            Raw::Float(v) => secs(*v).map(Some),
            Raw::Str(t) => parse_duration(t).map(Some).map_err(|e| err(s, e.to_string(), None)),
            other => Err(err(s, format!("expected a duration like \"10s\", found {}", other.kind()), None)),
        }
    }

    fn float(&self, key: &str) -> Result<Option<(f64, &'a Setting)>, JobError> {
        let Some(s) = self.get(key) else { return Ok(None) };
        match &s.value {
            Raw::Int(i) => Ok(Some((*i as f64, s))),
            Raw::Float(v) => Ok(Some((*v, s))),
            Raw::Str(t) => t
                .trim()
                .parse()
                .map(|v| Some((v, s)))
                .map_err(|_| err(s, format!("expected a number, found \"{t}\""), None)),
            other => Err(err(s, format!("expected a number, found {}", other.kind()), None)),
        }
    }

    fn uint(&self, key: &str) -> Result<Option<(u64, &'a Setting)>, JobError> {
        let Some(s) = self.get(key) else { return Ok(None) };
        match &s.value {
            Raw::Int(i) if *i >= 0 => Ok(Some((*i as u64, s))),
            Raw::Str(t) if t.trim().parse::<u64>().is_ok() => Ok(Some((t.trim().parse().unwrap(), s))),
            other => Err(err(s, format!("expected a non-negative integer, found {}", describe(other)), None)),
        }
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, JobError> {
        let Some(s) = self.get(key) else { return Ok(None) };
        match &s.value {
            Raw::Bool(b) => Ok(Some(*b)),
            other => Err(err(s, format!("expected true or false, found {}", describe(other)), None)),
        }
    }
}

fn describe(r: &Raw) -> String {
    match r {
        Raw::Str(s) => format!("\"{s}\""),
        Raw::Int(i) => i.to_string(),
        Raw::Float(v) => v.to_string(),
        Raw::Bool(b) => b.to_string(),
    }
}

fn parse_bs(text: &str, s: &Setting) -> Result<SizeSpec, JobError> {
    if !text.contains(':') && !text.contains(',') {
        return parse_size(text).map(SizeSpec::Fixed).map_err(|e| err(s, e.to_string(), None));
    }
    let mut list = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, weight) = part.split_once(':').ok_or_else(|| {
            err(
                s,
                format!("\"{part}\" has no weight"),
                Some("write a weighted list as \"4k:70,64k:30\"".into()),
            )
        })?;
        let size = parse_size(size).map_err(|e| err(s, e.to_string(), None))?;
        let weight: u32 = weight
            .trim()
            .parse()
            .map_err(|_| err(s, format!("weight \"{weight}\" is not a whole number"), None))?;
        list.push((size, weight));
    }
    if list.is_empty() || list.iter().all(|(_, w)| *w == 0) {
        return Err(err(s, "a weighted list needs at least one positive weight", None));
    }
    Ok(SizeSpec::Weighted(list))
}

/// Builds the agents described by one settings map (more than one with `threads`).
pub(crate) fn build_agents(
    settings: &Settings,
    index: usize,
    base_dir: Option<&Path>,
    missing_target: impl Fn() -> JobError,
) -> Result<Vec<AgentSpec>, JobError> {
    let r = Reader { settings };
    let name = match r.string("name")? {
        Some((n, _)) => n.to_string(),
        None => format!("agent{index}"),
    };
    let target = match r.string("target")? {
        Some((t, _)) => {
            let p = PathBuf::from(t);
            match base_dir {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p,
            }
        }
        None => return Err(missing_target()),
    };

    let from_rw =
        match r.choice("rw", &["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw"])? {
            Some((v, s)) => {
                let random = v.starts_with("rand");
                let op = match v.trim_start_matches("rand") {
                    "read" => "read",
                    "write" => "write",
                    _ => "mix",
                };
                Some((op, if random { "random" } else { "sequential" }, s))
            }
            None => None,
        };
    let op_key = r.choice("op", &["read", "write", "mix"])?;
    let pattern_key = r.choice("pattern", &["sequential", "strided", "random"])?;
    if let Some((op, pattern, rw)) = from_rw {
        for (given, implied) in [(op_key, op), (pattern_key, pattern)] {
            if let Some((v, s)) = given {
                if v != implied {
                    return Err(err(
                        s,
                        format!("\"{v}\" conflicts with rw = \"{}\"", rw_text(rw)),
                        Some("give either rw, or op and pattern".into()),
                    ));
                }
            }
        }
    }
    let op_name = op_key.map(|(v, _)| v).or(from_rw.map(|(o, _, _)| o)).unwrap_or("read");
    let pattern_name = pattern_key.map(|(v, _)| v).or(from_rw.map(|(_, p, _)| p)).unwrap_or("random");

    let read_pct = match r.uint("read_pct")? {
        Some((p, s)) if p > 100 => return Err(err(s, format!("{p} is not a percentage (0 to 100)"), None)),
        Some((p, _)) => p as u8,
        None => 50,
    };
    let op = match op_name {
        "read" => OpMix::Read,
        "write" => OpMix::Write,
        _ => OpMix::Mixed { read_pct },
    };

    let pattern = match pattern_name {
        "sequential" => Pattern::Sequential,
        "strided" => match (r.size("stride")?, r.get("stride")) {
            (Some(0), Some(s)) => return Err(err(s, "stride must be positive", None)),
            (Some(stride), _) => Pattern::Strided { stride },
            (None, _) => {
                let s =
                    pattern_key.map(|(_, s)| s).or(from_rw.map(|(_, _, s)| s)).expect("pattern was given");
                return Err(err(s, "a strided pattern needs a stride", Some("add stride = \"64k\"".into())));
            }
        },
        _ => {
            let dist =
                r.choice("distribution", &["uniform", "normal", "zipf"])?.map_or("uniform", |(v, _)| v);
            Pattern::Random(match dist {
                "normal" => {
                    let center = match r.float("hot_spot")? {
                        Some((c, s)) if !(0.0..=1.0).contains(&c) => {
                            return Err(err(s, format!("{c} is not a fraction of the region (0 to 1)"), None))
                        }
                        Some((c, _)) => c,
                        None => 0.5,
                    };
                    let spread = match r.float("spread")? {
                        Some((v, s)) if v <= 0.0 || !v.is_finite() => {
                            return Err(err(s, "spread must be a positive fraction of the region", None))
                        }
                        Some((v, _)) => v,
                        None => 0.1,
                    };
                    Distribution::Normal { center, spread }
                }
                "zipf" => match r.float("zipf_theta")? {
                    Some((t, s)) if t <= 0.0 || !t.is_finite() => {
                        return Err(err(
                            s,
                            "zipf_theta must be positive",
                            Some("typical values: 0.8 to 1.5".into()),
                        ))
                    }
                    Some((t, _)) => Distribution::Zipf { theta: t },
                    None => Distribution::Zipf { theta: 1.2 },
                },
                _ => Distribution::Uniform,
            })
        }
    };

    let sizes = match r.get("bs") {
        Some(s) => match &s.value {
            Raw::Str(t) => parse_bs(t, s)?,
            Raw::Int(i) if *i > 0 => SizeSpec::Fixed(*i as u64),
            other => {
                return Err(err(s, format!("expected a size like \"4k\", found {}", describe(other)), None))
            }
        },
        None => SizeSpec::Fixed(4096),
    };
    if sizes.min() == 0 {
        return Err(err(r.get("bs").expect("bs given"), "request sizes must be positive", None));
    }
    if sizes.max() > u32::MAX as u64 {
        return Err(err(r.get("bs").expect("bs given"), "request sizes above 4 GiB are not supported", None));
    }

    let engine = match r.choice("engine", &["sync", "io_uring", "null"])?.map_or("sync", |(v, _)| v) {
        "io_uring" => EngineKind::IoUring,
        "null" => EngineKind::Null,
        _ => EngineKind::Sync,
    };
    let queue_depth = match r.uint("qd")? {
        Some((0, s)) => return Err(err(s, "qd must be at least 1", None)),
        Some((q, s)) if q > 1 && engine == EngineKind::Sync => {
            return Err(err(
                s,
                format!("qd = {q} needs an asynchronous engine"),
                Some(
                    "add engine = \"io_uring\" (--engine io_uring), or use threads for sync concurrency"
                        .into(),
                ),
            ))
        }
        Some((q, s)) if q > 4096 => return Err(err(s, "qd above 4096 is not supported", None)),
        Some((q, _)) => q as u32,
        None => 1,
    };
    let direct = r.boolean("direct")?.unwrap_or(false);
    if direct {
        let bad = match &sizes {
            SizeSpec::Fixed(s) => (s % 512 != 0).then_some(*s),
            SizeSpec::Weighted(l) => l.iter().map(|(s, _)| *s).find(|s| s % 512 != 0),
        };
        if let Some(b) = bad {
            let s = r.get("bs").or(r.get("direct")).expect("bs or direct given");
            return Err(err(
                s,
                format!("O_DIRECT needs sizes that are multiples of 512 bytes; {b} is not"),
                Some("use sizes like 512, 4k, 64k, or drop direct".into()),
            ));
        }
    }

    let rate = match r.float("rate")? {
        Some((v, s)) if v < 0.0 || !v.is_finite() => {
            return Err(err(s, "rate must be a non-negative number of operations per second", None))
        }
        Some((v, _)) => v,
        None => 0.0,
    };
    let arrival = match r.choice("arrival", &["constant", "poisson"])?.map_or("constant", |(v, _)| v) {
        "poisson" => Arrival::Poisson,
        _ => Arrival::Constant,
    };
    let fsync = match r.get("fsync") {
        None => FsyncPolicy::None,
        Some(s) => match &s.value {
            Raw::Str(v) if v == "none" => FsyncPolicy::None,
            Raw::Str(v) if v == "end" => FsyncPolicy::AtEnd,
            Raw::Str(v) if v.parse::<u64>().is_ok_and(|n| n > 0) => FsyncPolicy::EveryN(v.parse().unwrap()),
            Raw::Int(n) if *n > 0 => FsyncPolicy::EveryN(*n as u64),
            other => {
                return Err(err(
                    s,
                    format!("unknown fsync policy {}", describe(other)),
                    Some("use \"none\", \"end\", or a positive N (fsync every N writes)".into()),
                ))
            }
        },
    };
    let region_size = match (r.size("size")?, r.get("size")) {
        (Some(0), Some(s)) => return Err(err(s, "size must be positive", None)),
        (v, _) => v,
    };
    let termination = Termination {
        time: r.duration("time")?,
        bytes: match (r.size("bytes")?, r.get("bytes")) {
            (Some(0), Some(s)) => return Err(err(s, "bytes must be positive", None)),
            (v, _) => v,
        },
    };
    if let (Some(Duration::ZERO), Some(s)) = (termination.time, r.get("time")) {
        return Err(err(s, "time must be positive", None));
    }
    let ramp = r.duration("ramp")?.unwrap_or(Duration::ZERO);
    let seed = r.uint("seed")?.map_or(0x10_1e25 + index as u64 * 7919, |(v, _)| v);
    let threads = match r.uint("threads")? {
        Some((0, s)) => return Err(err(s, "threads must be at least 1", None)),
        Some((t, s)) if t > 4096 => {
            return Err(err(s, "more than 4096 threads per agent is not supported", None))
        }
        Some((t, _)) => t as usize,
        None => 1,
    };

    let base = AgentSpec {
        name: name.clone(),
        target,
        op,
        pattern,
        sizes,
        engine,
        queue_depth,
        direct,
        rate: Rate { ops_per_s: rate, arrival },
        fsync,
        region_size,
        termination,
        ramp,
        seed,
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

fn rw_text(s: &Setting) -> String {
    match &s.value {
        Raw::Str(v) => v.clone(),
        other => describe(other),
    }
}

/// Line and column (1-based) of a byte offset.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.chars().count(), |nl| before[nl + 1..].chars().count()) + 1;
    (line, column)
}

struct FileCtx<'a> {
    text: &'a str,
    file: &'a str,
}

impl FileCtx<'_> {
    fn at(&self, span: Option<std::ops::Range<usize>>) -> ErrorSource {
        let (line, column) = position(self.text, span.map_or(0, |s| s.start));
        ErrorSource::File { file: self.file.to_string(), line, column }
    }

    fn error(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> JobError {
        JobError { source: self.at(span), key: key.to_string(), message: message.into(), hint }
    }

    fn raw(&self, item: &Item, path: &str) -> Result<Raw, JobError> {
        let value = match item {
            Item::Value(v) => v,
            _ => return Err(self.error(item.span(), path, "expected a value, found a table", None)),
        };
        Ok(match value {
            Value::String(s) => Raw::Str(s.value().clone()),
            Value::Integer(i) => Raw::Int(*i.value()),
            Value::Float(f) => Raw::Float(*f.value()),
            Value::Boolean(b) => Raw::Bool(*b.value()),
            _ => {
                return Err(self.error(
                    value.span(),
                    path,
                    "expected a string, number or boolean",
                    Some("weighted sizes are written as a string: bs = \"4k:70,64k:30\"".into()),
                ))
            }
        })
    }

    /// The settings of a table, each checked against the valid keys.
    fn settings(&self, table: &Table, prefix: &str, valid: &[&str]) -> Result<Settings, JobError> {
        let mut out = Settings::new();
        for (key, item) in table.iter() {
            let path = format!("{prefix}.{key}");
            let key_span = table.key(key).and_then(|k| k.span());
            if !valid.contains(&key) {
                return Err(self.error(key_span, &path, "unknown key", Some(unknown_key_hint(key, valid))));
            }
            let value = self.raw(item, &path)?;
            out.insert(key.to_string(), Setting { value, source: self.at(item.span().or(key_span)), path });
        }
        Ok(out)
    }
}

/// Parses a job file's text; `file_name` is used in error messages. Relative targets stay
/// relative (see [`load_job_file`] for resolution against the file's directory).
pub fn parse_job(text: &str, file_name: &str) -> Result<Job, JobError> {
    parse_job_in(text, file_name, None)
}

/// Reads and parses a job file; relative targets are taken relative to the file's directory.
pub fn load_job_file(path: &Path) -> Result<Job, JobError> {
    let file_name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| JobError {
        source: ErrorSource::File { file: file_name.clone(), line: 0, column: 0 },
        key: String::new(),
        message: format!("cannot read the job file: {e}"),
        hint: None,
    })?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut job = parse_job_in(&text, &file_name, Some(dir))?;
    if job.name == "job" {
        if let Some(stem) = path.file_stem() {
            job.name = stem.to_string_lossy().into_owned();
        }
    }
    Ok(job)
}

fn parse_job_in(text: &str, file_name: &str, base_dir: Option<&Path>) -> Result<Job, JobError> {
    let ctx = FileCtx { text, file: file_name };
    let doc = Document::parse(text).map_err(|e| {
        let message = e.message().lines().next().unwrap_or("invalid TOML").to_string();
        ctx.error(e.span(), "", format!("invalid TOML: {message}"), None)
    })?;
    let root = doc.as_table();
    for (key, _) in root.iter() {
        if !TOP_KEYS.contains(&key) {
            let span = root.key(key).and_then(|k| k.span());
            let mut hint = unknown_key_hint(key, TOP_KEYS);
            if AGENT_KEYS.contains(&key) || suggest(key, AGENT_KEYS).is_some() {
                hint = format!(
                    "agent settings go in [[agent]] or [defaults]; top-level keys: {}",
                    TOP_KEYS.join(", ")
                );
            }
            return Err(ctx.error(span, key, "unknown key", Some(hint)));
        }
    }
    let name = match root.get("name") {
        Some(item) => match ctx.raw(item, "name")? {
            Raw::Str(s) => s,
            other => {
                return Err(ctx.error(
                    item.span(),
                    "name",
                    format!("expected a string, found {}", other.kind()),
                    None,
                ))
            }
        },
        None => "job".to_string(),
    };
    let block_unit = match root.get("block_unit") {
        Some(item) => {
            let setting = Setting {
                value: ctx.raw(item, "block_unit")?,
                source: ctx.at(item.span()),
                path: "block_unit".into(),
            };
            let mut m = Settings::new();
            m.insert("block_unit".into(), setting);
            match (Reader { settings: &m }).size("block_unit")? {
                Some(0) => {
                    return Err(ctx.error(item.span(), "block_unit", "block_unit must be positive", None))
                }
                Some(b) => b,
                None => 512,
            }
        }
        None => 512,
    };

    let defaults = match root.get("defaults") {
        None => Settings::new(),
        Some(Item::Table(t)) => {
            let valid: Vec<&str> = AGENT_KEYS.iter().copied().filter(|k| *k != "name").collect();
            ctx.settings(t, "defaults", &valid)?
        }
        Some(other) => return Err(ctx.error(other.span(), "defaults", "expected a table: [defaults]", None)),
    };
    let agent_tables: Vec<&Table> = match root.get("agent") {
        None => vec![],
        Some(Item::ArrayOfTables(a)) => a.iter().collect(),
        Some(other) => {
            return Err(ctx.error(
                other.span(),
                "agent",
                "expected [[agent]] tables",
                Some("write each agent as a table array entry: [[agent]]".into()),
            ))
        }
    };
    if agent_tables.is_empty() {
        return Err(ctx.error(
            None,
            "agent",
            "the job has no agents",
            Some("add one, e.g.\n    [[agent]]\n    target = \"/mnt/scratch\"\n    rw = \"randread\"\n    bs = \"4k\"".into()),
        ));
    }
    let mut agents = Vec::new();
    for (i, table) in agent_tables.iter().enumerate() {
        let prefix = format!("agent[{}]", i + 1);
        let mut settings = defaults.clone();
        settings.extend(ctx.settings(table, &prefix, AGENT_KEYS)?);
        let header = table.span();
        agents.extend(build_agents(&settings, i, base_dir, || {
            ctx.error(
                header.clone(),
                &format!("{prefix}.target"),
                "no target",
                Some("add target = \"DIR\" to the agent or to [defaults]".into()),
            )
        })?);
    }
    check_unique_names(&agents).map_err(|n| {
        ctx.error(
            None,
            "agent",
            format!("two agents are named \"{n}\""),
            Some("give each agent its own name".into()),
        )
    })?;
    Ok(Job { name, block_unit, agents })
}

fn check_unique_names(agents: &[AgentSpec]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for a in agents {
        if !seen.insert(a.name.as_str()) {
            return Err(a.name.clone());
        }
    }
    Ok(())
}
