//! fio job files: the common subset of fio's options, read as fio reads them and translated into
//! iolens settings, so the one builder of [`crate::jobfile`] validates fio jobs exactly as it
//! validates TOML jobs — and `iolens convert` prints those same settings as a TOML job.
//!
//! Read as fio does: `[global]` sections apply to the jobs after them; `;` and `#` start
//! comments (also after a value); a key without `=` is a flag; `${VAR}` takes the environment;
//! `include FILE` reads another file in place. Phases follow `stonewall` and `wait_for`. Every
//! option outside the supported subset is an error naming the file, line and key: a fio job
//! silently run differently would be a wrong measurement.

use std::collections::BTreeMap;
use std::path::Path;

mod translate;
mod values;

use super::{build_agents, ErrorSource, JobError, Raw, Setting, Settings, Totals};
use crate::model::limits::MAX_PHASES;
use crate::model::Job;
use translate::translate;
use values::flag;

/// fio options iolens runs; anything else in a fio job file is refused.
pub const FIO_KEYS: &[&str] = &[
    "filename",
    "directory",
    "size",
    "filesize",
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "bsrange",
    "blocksize_range",
    "bssplit",
    "blockalign",
    "ba",
    "ioengine",
    "iodepth",
    "direct",
    "buffered",
    "numjobs",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "startdelay",
    "rate",
    "rate_iops",
    "rate_process",
    "fsync",
    "fdatasync",
    "end_fsync",
    "random_distribution",
    "norandommap",
    "randrepeat",
    "randseed",
    "verify",
    "stonewall",
    "wait_on_stonewall",
    "new_group",
    "wait_for",
    "group_reporting",
    "name",
    "description",
];

/// fio's alternative spellings, folded before translation.
const FIO_ALIASES: &[(&str, &str)] = &[
    ("readwrite", "rw"),
    ("blocksize", "bs"),
    ("blocksize_range", "bsrange"),
    ("ba", "blockalign"),
    ("timeout", "runtime"),
    ("wait_on_stonewall", "stonewall"),
];

/// The "key" of settings that are fio's defaults rather than a line of the file.
const DEFAULT_MARK: &str = "(fio default)";

/// Nesting of `include` directives.
const MAX_INCLUDE_DEPTH: usize = 8;
/// A job file, included files together: fio job files are short text.
const MAX_FIO_BYTES: usize = super::MAX_JOB_FILE_BYTES as usize;
/// Sizes a `bsrange` may expand to (multiples of its minimum).
const MAX_RANGE_SIZES: u64 = 4096;

/// Reads files named by `include`: the text of `path`, or why not.
pub type IncludeLoader<'a> = dyn Fn(&Path) -> Result<String, String> + 'a;

/// One `key[=value]` line as written.
#[derive(Debug, Clone)]
struct FioOption {
    key: String,
    value: Option<String>,
    file: String,
    line: usize,
    column: usize,
}

impl FioOption {
    fn source(&self) -> ErrorSource {
        ErrorSource::File { file: self.file.clone(), line: self.line, column: self.column }
    }
    fn error(&self, section: &str, message: impl Into<String>, hint: Option<String>) -> JobError {
        JobError {
            source: self.source(),
            key: format!("[{section}].{}", self.key),
            message: message.into(),
            hint,
        }
    }
    fn text(&self) -> &str {
        self.value.as_deref().unwrap_or("")
    }
}

/// A job section with the options it holds (the globals before it, then its own).
#[derive(Debug, Clone)]
struct FioSection {
    name: String,
    file: String,
    line: usize,
    options: Vec<FioOption>,
}

/// One fio job translated: the iolens settings of its agents and the comments `convert` keeps.
#[derive(Debug, Clone)]
pub struct TranslatedJob {
    /// The section name (or the job's `name`).
    pub name: String,
    pub description: Option<String>,
    /// iolens key, value and the fio line it came from, in a stable order.
    settings: Vec<(String, Setting)>,
}

/// A fio job file read and translated: the iolens job, and the translated sections that make it.
#[derive(Debug, Clone)]
pub struct FioJob {
    pub job: Job,
    pub sections: Vec<TranslatedJob>,
}

/// Reads a fio job file (see the module docs). Relative paths in it are relative to the current
/// directory, as for fio; `include`d files are relative to the including file.
pub fn load_fio_file(path: &Path) -> Result<FioJob, JobError> {
    let file_name = path.display().to_string();
    let text = super::read_job_file(path)?;
    let stem = path.file_stem().map_or("job".into(), |s| s.to_string_lossy().into_owned());
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let loader = move |p: &Path| {
        let included = base.join(p);
        super::read_job_text(&included).map_err(|e| format!("{}: {e}", included.display()))
    };
    parse_fio(&text, &file_name, &stem, &|v| std::env::var(v).ok(), &loader)
}

/// Reads a job file of either format: fio's when it is named `*.fio`, TOML when it is named
/// `*.toml`; otherwise TOML, or fio's when the text is not TOML but reads as a fio job.
pub fn load_job(path: &Path) -> Result<Job, JobError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("fio") => return load_fio_file(path).map(|f| f.job),
        Some("toml") => return super::load_job_file(path),
        _ => {}
    }
    match super::load_job_file(path) {
        Err(toml) if toml.message.starts_with("invalid TOML") => match load_fio_file(path) {
            Ok(f) => Ok(f.job),
            // Text that has no fio job section either: the TOML error says more.
            Err(fio)
                if fio.message.contains("no job section") || fio.message.contains("before any section") =>
            {
                Err(toml)
            }
            Err(fio) => Err(fio),
        },
        other => other,
    }
}

/// Parses and translates fio job text. `env` answers `${VAR}`, `include` reads included files.
pub fn parse_fio(
    text: &str,
    file_name: &str,
    job_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
    include: &IncludeLoader,
) -> Result<FioJob, JobError> {
    let mut reader =
        IniReader { env, include, sections: Vec::new(), globals: Vec::new(), in_global: None, bytes: 0 };
    reader.read(text, file_name, 0)?;
    if reader.sections.is_empty() {
        return Err(JobError {
            source: ErrorSource::File { file: file_name.into(), line: 0, column: 0 },
            key: String::new(),
            message: "the fio job file has no job section".into(),
            hint: Some("add a section such as [myjob] after [global]".into()),
        });
    }
    let phases = assign_phases(&reader.sections)?;
    let mut translated = Vec::new();
    for (section, phase) in reader.sections.iter().zip(phases) {
        translated.push(translate(section, phase)?);
    }
    let job = build_job(&translated, job_name)?;
    Ok(FioJob { job, sections: translated })
}

fn build_job(sections: &[TranslatedJob], job_name: &str) -> Result<Job, JobError> {
    let mut totals = Totals::default();
    let mut agents = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, t) in sections.iter().enumerate() {
        let settings: Settings = t.settings.iter().map(|(k, s)| (k.clone(), s.clone())).collect();
        let label = format!("[{}]", t.name);
        let origin =
            || settings.get("name").map(|s| s.source.clone()).unwrap_or(ErrorSource::Flag(label.clone()));
        // Every translated job has a target (the current directory when fio would use it).
        let built = build_agents(&settings, i, &label, None, &mut totals, || JobError {
            source: origin(),
            key: label.clone(),
            message: "no target".into(),
            hint: None,
        })?;
        for a in &built {
            if !seen.insert(a.name.clone()) {
                return Err(JobError {
                    source: origin(),
                    key: label.clone(),
                    message: format!("two jobs are named \"{}\"", a.name),
                    hint: Some("give each job section its own name".into()),
                });
            }
        }
        agents.extend(built);
    }
    let name = super::name_from_stem(job_name);
    Ok(Job { name, block_unit: 512, agents })
}

struct IniReader<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    include: &'a IncludeLoader<'a>,
    sections: Vec<FioSection>,
    /// The options of `[global]` sections so far; a job section starts with a copy.
    globals: Vec<FioOption>,
    /// Where options go: `[global]` (true), the last job section (false), nowhere yet (None).
    in_global: Option<bool>,
    bytes: usize,
}

impl IniReader<'_> {
    fn read(&mut self, text: &str, file: &str, depth: usize) -> Result<(), JobError> {
        self.bytes += text.len();
        let at = |line: usize, column: usize| ErrorSource::File { file: file.into(), line, column };
        if self.bytes > MAX_FIO_BYTES {
            return Err(JobError {
                source: at(0, 0),
                key: String::new(),
                message: "the job file and its includes exceed 16 MiB".into(),
                hint: Some("an include loop?".into()),
            });
        }
        for (i, raw_line) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = strip_comment(raw_line);
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            let column = line.len() - line.trim_start().len() + 1;
            if let Some(rest) = trimmed.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(JobError {
                        source: at(line_no, column),
                        key: String::new(),
                        message: format!("section header {trimmed:?} has no closing ]"),
                        hint: Some("write [jobname]".into()),
                    });
                };
                let name = name.trim();
                if name.is_empty() {
                    return Err(JobError {
                        source: at(line_no, column),
                        key: String::new(),
                        message: "a section without a name".into(),
                        hint: Some("write [global] or [jobname]".into()),
                    });
                }
                self.in_global = Some(name == "global");
                if name != "global" {
                    self.sections.push(FioSection {
                        name: name.into(),
                        file: file.into(),
                        line: line_no,
                        options: self.globals.clone(),
                    });
                }
                continue;
            }
            if let Some(path) = trimmed.strip_prefix("include").filter(|r| r.starts_with([' ', '\t'])) {
                let path = path.trim();
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(JobError {
                        source: at(line_no, column),
                        key: "include".into(),
                        message: format!("includes nest deeper than {MAX_INCLUDE_DEPTH} files"),
                        hint: Some("an include loop?".into()),
                    });
                }
                let text = (self.include)(Path::new(path)).map_err(|why| JobError {
                    source: at(line_no, column),
                    key: "include".into(),
                    message: format!("cannot include {path:?}: {why}"),
                    hint: None,
                })?;
                let included = Path::new(file).parent().unwrap_or(Path::new("")).join(path);
                self.read(&text, &included.display().to_string(), depth + 1)?;
                continue;
            }
            let (key, value) = match trimmed.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (trimmed, None),
            };
            let value = match value {
                Some(v) => Some(substitute_env(v, self.env).map_err(|var| JobError {
                    source: at(line_no, column),
                    key: key.into(),
                    message: format!("${{{var}}} is not set in the environment"),
                    hint: Some(format!("export {var}=… before running, or write the value")),
                })?),
                None => None,
            };
            let option =
                FioOption { key: key.to_ascii_lowercase(), value, file: file.into(), line: line_no, column };
            match self.in_global {
                None => {
                    return Err(JobError {
                        source: at(line_no, column),
                        key: key.into(),
                        message: "an option before any section".into(),
                        hint: Some("put options under [global] or a [jobname] section".into()),
                    })
                }
                Some(true) => self.globals.push(option),
                Some(false) => self.sections.last_mut().expect("a job section is open").options.push(option),
            }
        }
        Ok(())
    }
}

/// The line without its comment: fio ends a line at `;` or `#` outside a value's `${…}`.
fn strip_comment(line: &str) -> &str {
    match line.find([';', '#']) {
        Some(i) => &line[..i],
        None => line,
    }
}

/// `${VAR}` replaced from the environment; the name of the first unset variable otherwise.
fn substitute_env(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else { break };
        let var = &rest[start + 2..start + 2 + len];
        out.push_str(&rest[..start]);
        out.push_str(&env(var).ok_or_else(|| var.to_string())?);
        rest = &rest[start + 3 + len..];
        if out.len() > MAX_FIO_BYTES {
            return Err(var.to_string());
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The last value of each (alias-folded) key of a section, and where it was written.
fn last_values(section: &FioSection) -> Result<BTreeMap<&'static str, &FioOption>, JobError> {
    let mut map = BTreeMap::new();
    for o in &section.options {
        let folded =
            FIO_ALIASES.iter().find(|(from, _)| *from == o.key).map_or(o.key.as_str(), |(_, to)| *to);
        let Some(key) = FIO_KEYS.iter().find(|k| **k == folded) else {
            if super::AGENT_KEYS.contains(&o.key.as_str()) {
                let hint = "this is an iolens TOML key; in a fio job file use fio's option names";
                return Err(o.error(&section.name, "fio option not supported by iolens", Some(hint.into())));
            }
            // A misspelt option (`iodepht`) is most likely one iolens runs: named, as a
            // misspelt TOML key is.
            if let Some(near) = super::settings::suggest(&o.key, FIO_KEYS) {
                let hint = format!("did you mean `{near}`?");
                return Err(o.error(&section.name, "unknown fio option", Some(hint)));
            }
            let hint = format!(
                "iolens runs these fio options: {}; remove this one or run the job with fio",
                FIO_KEYS.join(", ")
            );
            return Err(o.error(&section.name, "fio option not supported by iolens", Some(hint)));
        };
        map.insert(*key, o);
    }
    Ok(map)
}

/// Phase of each job: `stonewall` waits for every job before it, `wait_for=NAME` for one.
fn assign_phases(sections: &[FioSection]) -> Result<Vec<u32>, JobError> {
    let mut phases: Vec<u32> = Vec::with_capacity(sections.len());
    let (mut current, mut highest) = (1u32, 1u32);
    for (i, s) in sections.iter().enumerate() {
        let values = last_values(s)?;
        let mut phase = current;
        if let Some(o) = values.get("stonewall") {
            if flag(o, &s.name)? && i > 0 {
                phase = highest + 1;
                current = phase;
            }
        }
        if let Some(o) = values.get("wait_for") {
            let target = o.text();
            let earlier = sections[..i].iter().position(|e| job_name(e) == target).ok_or_else(|| {
                o.error(
                    &s.name,
                    format!("no job before this one is named {target:?}"),
                    Some("wait_for names an earlier job section".into()),
                )
            })?;
            phase = phase.max(phases[earlier] + 1);
        }
        if u64::from(phase) > MAX_PHASES {
            return Err(JobError {
                source: ErrorSource::File { file: s.file.clone(), line: s.line, column: 1 },
                key: format!("[{}]", s.name),
                message: format!("more than {MAX_PHASES} phases"),
                hint: None,
            });
        }
        highest = highest.max(phase);
        phases.push(phase);
    }
    Ok(phases)
}

fn job_name(s: &FioSection) -> &str {
    s.options.iter().rev().find(|o| o.key == "name").map_or(s.name.as_str(), |o| o.text())
}

/// The TOML job equivalent to a fio job: one `[[agent]]` table per job section, each fio line
/// noted beside the key it became. Relative targets are made absolute against `cwd`, since fio
/// reads them against the current directory and TOML against the job file's.
pub fn to_toml(fio: &FioJob, cwd: &Path, source_name: &str) -> String {
    let mut out = format!(
        "# Converted from the fio job file {source_name} by iolens convert.\nname = \"{}\"\n",
        fio.job.name
    );
    for t in &fio.sections {
        out.push_str("\n[[agent]]\n");
        if let Some(d) = &t.description {
            out.push_str(&format!("# {}\n", d.replace('\n', " ")));
        }
        for (key, s) in &t.settings {
            let value = match (&s.value, key.as_str()) {
                (Raw::Str(p), "target") if Path::new(p).is_relative() => {
                    toml_string(&cwd.join(p).display().to_string())
                }
                (Raw::Str(v), _) => toml_string(v),
                (Raw::Int(i), _) => i.to_string(),
                (Raw::Float(f), _) => format!("{f:?}"),
                (Raw::Bool(b), _) => b.to_string(),
            };
            let from = match &s.source {
                _ if s.path.ends_with(DEFAULT_MARK) => "  # fio's default".to_string(),
                ErrorSource::File { file, line, .. } => format!("  # {file}:{line} {}", s.path),
                ErrorSource::Flag(f) => format!("  # {f}"),
            };
            out.push_str(&format!("{key} = {value}{from}\n"));
        }
    }
    out
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
