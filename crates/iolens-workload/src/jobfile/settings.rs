//! A setting as the builder receives it: its raw value and where it came from, the keys a job
//! may hold, and the errors that point back at a setting's source.

use std::collections::BTreeMap;
use std::fmt;

/// Keys an `[[agent]]` table may hold; `[defaults]` takes the same except `name`.
pub const AGENT_KEYS: &[&str] = &[
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
    "random_map",
    "regions",
    "region_size",
    "spacing",
    "sieve",
    "sieve_buffer",
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
    "verify",
    "verify_after_write",
    "verify_generation",
    "fdatasync",
    "phase",
    "start_delay",
];
pub(crate) const TOP_KEYS: &[&str] = &["name", "block_unit", "defaults", "agent"];

pub(crate) const RW_VALUES: &[&str] =
    &["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw"];
pub(crate) const OP_VALUES: &[&str] = &["read", "write", "mix"];
pub(crate) const PATTERN_VALUES: &[&str] = &["sequential", "strided", "random", "noncontig"];
pub(crate) const DISTRIBUTION_VALUES: &[&str] = &["uniform", "normal", "zipf"];
pub(crate) const ENGINE_VALUES: &[&str] = &["sync", "io_uring", "null"];
pub(crate) const ARRIVAL_VALUES: &[&str] = &["constant", "poisson"];
pub(crate) const VERIFY_VALUES: &[&str] = &["crc32c", "xxh3", "pattern"];

/// What users of other tools write for our keys and values: `blocksize` means `bs`, `libaio`
/// means `io_uring`. An alias is only offered where its target is valid.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("blocksize", "bs"),
    ("block_size", "bs"),
    ("bsize", "bs"),
    ("iosize", "bs"),
    ("request_size", "bs"),
    ("bssplit", "bs"),
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
    ("randommap", "random_map"),
    ("norandommap", "random_map"),
    ("readwrite", "rw"),
    ("rate_iops", "rate"),
    ("random_distribution", "distribution"),
    ("filesize", "size"),
    ("o_direct", "direct"),
    ("libaio", "io_uring"),
    ("uring", "io_uring"),
    ("psync", "sync"),
    ("pvsync", "sync"),
    ("gauss", "normal"),
    ("gaussian", "normal"),
    ("poisson", "normal"),
    ("hotspot", "normal"),
    ("random", "uniform"),
    ("seq", "sequential"),
    ("rand", "random"),
    ("stride", "strided"),
    ("rw", "mix"),
    ("readwrite", "mix"),
    ("randrw", "mix"),
    ("mixed", "mix"),
    ("exponential", "poisson"),
    ("fixed", "constant"),
    ("seqread", "read"),
    ("seqwrite", "write"),
    ("crc32", "crc32c"),
    ("crc", "crc32c"),
    ("xxhash", "xxh3"),
    ("do_verify", "verify_after_write"),
];

/// Where a setting or an error comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorSource {
    /// A position in a job file: 1-based line and column, both 0 when the file could not be read.
    File { file: String, line: usize, column: usize },
    /// A command-line flag, e.g. `--bs`.
    Flag(String),
}

/// A job that cannot be built, with where and why.
///
/// Displays as `job.toml:7:1: agent[2].blocksize: unknown key` plus, when there is a hint, a
/// second line `  hint: did you mean `bs`?`; errors from flags start with the flag instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    pub source: ErrorSource,
    /// The key path, e.g. `agent[2].bs` or `defaults.engine` (agents count from 1); the bare
    /// key for flags; empty for syntax and I/O errors.
    pub key: String,
    pub message: String,
    pub hint: Option<String>,
}

impl JobError {
    /// File name, line and column, for errors in a job file.
    pub fn location(&self) -> Option<(&str, usize, usize)> {
        match &self.source {
            ErrorSource::File { file, line, column } => Some((file, *line, *column)),
            ErrorSource::Flag(_) => None,
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            ErrorSource::File { file, line: 0, .. } => write!(f, "{file}: ")?,
            ErrorSource::File { file, line, column } => write!(f, "{file}:{line}:{column}: ")?,
            ErrorSource::Flag(flag) => write!(f, "{flag}: ")?,
        }
        // A flag already names its key.
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

/// A raw setting value, before it is read as a size, duration, choice, ...
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Raw {
    Str(String),
    /// Wide enough for TOML's i64 and for u64 flags.
    Int(i128),
    Float(f64),
    Bool(bool),
}

impl Raw {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Raw::Str(_) => "a string",
            Raw::Int(_) => "an integer",
            Raw::Float(_) => "a float",
            Raw::Bool(_) => "a boolean",
        }
    }

    /// The value as written, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Raw::Str(s) => format!("{s:?}"),
            Raw::Int(i) => i.to_string(),
            Raw::Float(v) => format!("{v:?}"),
            Raw::Bool(b) => b.to_string(),
        }
    }
}

/// One setting and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting {
    pub value: Raw,
    pub source: ErrorSource,
    /// Key path for messages, e.g. `agent[1].bs`, `defaults.qd`, or `bs` for a flag.
    pub path: String,
}

impl Setting {
    pub(crate) fn key(&self) -> &str {
        self.path.rsplit('.').next().unwrap_or(&self.path)
    }

    /// The key as the user wrote it: `--read-pct` for a flag, `read_pct` in a file.
    pub(crate) fn name(&self) -> String {
        match &self.source {
            ErrorSource::Flag(flag) => flag.clone(),
            ErrorSource::File { .. } => self.key().to_string(),
        }
    }

    /// Whether the agent got this setting from `[defaults]` rather than its own table.
    pub(crate) fn inherited(&self) -> bool {
        self.path.starts_with("defaults.")
    }

    /// How to write `key` = `value` where this setting came from, for hints.
    pub(crate) fn spell(&self, key: &str, value: &str) -> String {
        match self.source {
            ErrorSource::Flag(_) => format!("--{} {value}", key.replace('_', "-")),
            ErrorSource::File { .. } if value.parse::<f64>().is_ok() => format!("{key} = {value}"),
            ErrorSource::File { .. } => format!("{key} = \"{value}\""),
        }
    }
}

/// The settings of one agent (its own over the defaults), by key.
pub(crate) type Settings = BTreeMap<String, Setting>;

/// The closest valid key or value to an unknown one: by alias, then by spelling; `None` when
/// nothing is close. For every parser of user input that names what it does not know (job
/// files, fio files, DOE plans, flag values).
pub fn suggest(unknown: &str, valid: &[&str]) -> Option<String> {
    let wanted = unknown.trim().to_lowercase().replace('-', "_");
    if valid.contains(&wanted.as_str()) {
        return Some(wanted);
    }
    if let Some((_, to)) = ALIASES.iter().find(|(from, to)| *from == wanted && valid.contains(to)) {
        return Some(to.to_string());
    }
    iolens_output::hint::closest(&wanted, valid)
}

pub(crate) fn unknown_key_hint(unknown: &str, valid: &[&str]) -> String {
    match suggest(unknown, valid) {
        Some(k) => format!("did you mean `{k}`?"),
        None => format!("valid keys: {}", valid.join(", ")),
    }
}

pub(crate) fn quoted(values: &[&str]) -> String {
    values.iter().map(|v| format!("\"{v}\"")).collect::<Vec<_>>().join(", ")
}
