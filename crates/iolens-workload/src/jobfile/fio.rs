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
use std::path::{Path, PathBuf};

use super::{build_agents, ErrorSource, JobError, Raw, Setting, Settings, Totals};
use crate::model::limits::MAX_PHASES;
use crate::model::Job;
use crate::units::{parse_duration, parse_size};

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

fn flag(o: &FioOption, section: &str) -> Result<bool, JobError> {
    match o.value.as_deref().map(|v| v.to_ascii_lowercase()).as_deref() {
        None | Some("1") | Some("true") | Some("yes") | Some("on") => Ok(true),
        Some("0") | Some("false") | Some("no") | Some("off") => Ok(false),
        Some(other) => Err(o.error(section, format!("expected 0 or 1, found {other:?}"), None)),
    }
}

/// A fio size: `4k`, `4KiB`, `4KB` (fio's default kb_base=1024 makes all three 4096).
fn fio_size(o: &FioOption, text: &str, section: &str) -> Result<u64, JobError> {
    if text.ends_with('%') {
        return Err(o.error(
            section,
            format!("{text:?}: sizes as a share of the file are not supported by iolens"),
            Some("give the size in bytes, e.g. 1g".into()),
        ));
    }
    parse_size(text.trim()).map_err(|e| o.error(section, e.to_string(), Some("e.g. 4k, 64m, 1g".into())))
}

fn fio_uint(o: &FioOption, section: &str) -> Result<u64, JobError> {
    o.text()
        .trim()
        .parse::<u64>()
        .map_err(|_| o.error(section, format!("{:?} is not a whole number", o.text()), None))
}

/// A fio duration: a bare number is seconds; us, ms, s, m, h as iolens reads them.
fn fio_duration(o: &FioOption, section: &str) -> Result<String, JobError> {
    let text = o.text().trim();
    parse_duration(text)
        .map_err(|e| o.error(section, e.to_string(), Some("e.g. 30, 30s, 500ms, 2m".into())))?;
    Ok(text.to_string())
}

fn unsupported(o: &FioOption, section: &str, what: &str, hint: &str) -> JobError {
    o.error(section, format!("{what}: fio option not supported by iolens"), Some(hint.into()))
}

/// One value for reads and writes: fio's `a,b` forms set them apart, which iolens does not.
fn one_for_both<'o>(o: &'o FioOption, section: &str) -> Result<&'o str, JobError> {
    let text = o.text();
    let mut parts = text.split(',').map(str::trim).filter(|p| !p.is_empty());
    let first = parts.next().unwrap_or("");
    if parts.any(|p| p != first) {
        return Err(unsupported(
            o,
            section,
            &format!("{text:?} sets reads and writes apart"),
            "give one value for both",
        ));
    }
    Ok(first)
}

fn translate(section: &FioSection, phase: u32) -> Result<TranslatedJob, JobError> {
    let name = job_name(section).to_string();
    let v = last_values(section)?;
    let sec = section.name.as_str();
    let mut out: Vec<(String, Setting)> = Vec::new();
    let mut put = |key: &str, value: Raw, from: &FioOption| {
        let setting = Setting { value, source: from.source(), path: format!("[{sec}].{}", from.key) };
        out.retain(|(k, _)| k != key);
        out.push((key.to_string(), setting));
    };

    let section_header = FioOption {
        key: "section".into(),
        value: None,
        file: section.file.clone(),
        line: section.line,
        column: 1,
    };
    put("name", Raw::Str(name.clone()), v.get("name").copied().unwrap_or(&section_header));

    // Target: directory and file name as fio joins them; without a file name, a file of
    // iolens's own in the directory (fio would name it JOB.N.0). `header` stands for what
    // fio does without the option.
    let header = FioOption {
        key: DEFAULT_MARK.into(),
        value: None,
        file: section.file.clone(),
        line: section.line,
        column: 1,
    };
    let dir = v.get("directory");
    let file = v.get("filename");
    for o in [dir, file].into_iter().flatten() {
        if o.text().contains(':') && !o.text().starts_with("/dev/") {
            return Err(unsupported(o, sec, "several files or directories per job", "give one path"));
        }
    }
    let target = match (dir, file) {
        (Some(d), Some(f)) => (Path::new(d.text()).join(f.text()), *f),
        (None, Some(f)) => (PathBuf::from(f.text()), *f),
        (Some(d), None) => (PathBuf::from(d.text()), *d),
        (None, None) => (PathBuf::from("."), &header),
    };
    put("target", Raw::Str(target.0.display().to_string()), target.1);

    let rw = match v.get("rw") {
        Some(o) => {
            let text = o.text().trim();
            if text.contains(':') {
                return Err(unsupported(
                    o,
                    sec,
                    &format!("rw={text} (skips between requests)"),
                    "drop the :N suffix",
                ));
            }
            match text {
                "read" | "write" | "randread" | "randwrite" | "randrw" => text,
                "rw" | "readwrite" => "rw",
                t if t.contains("trim") => {
                    return Err(unsupported(
                        o,
                        sec,
                        &format!("rw={t}"),
                        "iolens reads and writes; it does not trim",
                    ))
                }
                t => {
                    return Err(o.error(
                        sec,
                        format!("unknown rw value {t:?}"),
                        Some("read, write, randread, randwrite, rw, randrw".into()),
                    ))
                }
            };
            put("rw", Raw::Str(text.replace("readwrite", "rw")), o);
            text
        }
        None => "read", // fio's default
    };
    if !v.contains_key("rw") {
        put("rw", Raw::Str("read".into()), &header);
    }
    let mixed = matches!(rw, "rw" | "readwrite" | "randrw");
    if mixed {
        match (v.get("rwmixread"), v.get("rwmixwrite")) {
            (Some(o), _) => put("read_pct", Raw::Int(fio_uint(o, sec)?.into()), o),
            (None, Some(o)) => {
                let w = fio_uint(o, sec)?;
                if w > 100 {
                    return Err(o.error(sec, "a percentage from 0 to 100", None));
                }
                put("read_pct", Raw::Int((100 - w).into()), o)
            }
            // fio mixes half and half by default.
            (None, None) => put("read_pct", Raw::Int(50), &header),
        }
    }

    // Request sizes: bssplit over bsrange over bs, as fio picks them.
    let mut min_size = 4096u64;
    let mut fixed_size = Some(4096u64);
    if let Some(o) = v.get("bssplit") {
        let text = one_for_both(o, sec)?;
        let entries: Vec<&str> = text.split(':').map(str::trim).filter(|e| !e.is_empty()).collect();
        let mut list: Vec<(u64, Option<u64>)> = Vec::new();
        for e in entries {
            let (size, pct) = match e.split_once('/') {
                Some((s, p)) => (s, Some(p.trim())),
                None => (e, None),
            };
            let size = fio_size(o, size, sec)?;
            let pct = match pct.filter(|p| !p.is_empty()) {
                Some(p) => Some(p.parse::<u64>().ok().filter(|p| *p <= 100).ok_or_else(|| {
                    o.error(
                        sec,
                        format!("{p:?} is not a percentage"),
                        Some("e.g. bssplit=4k/70:64k/30".into()),
                    )
                })?),
                None => None,
            };
            list.push((size, pct));
        }
        let given: u64 = list.iter().filter_map(|(_, p)| *p).sum();
        if list.is_empty() || given > 100 {
            return Err(o.error(
                sec,
                "the shares of a bssplit add up to more than 100%",
                Some("e.g. bssplit=4k/70:64k/30".into()),
            ));
        }
        // fio splits what is left evenly among entries without a share.
        let open = list.iter().filter(|(_, p)| p.is_none()).count() as u64;
        let each = (100 - given).checked_div(open).unwrap_or(0);
        let weighted: Vec<String> = list.iter().map(|(s, p)| format!("{s}:{}", p.unwrap_or(each))).collect();
        min_size = list.iter().map(|(s, _)| *s).min().unwrap_or(4096);
        fixed_size = (list.len() == 1).then_some(min_size);
        put("bs", Raw::Str(weighted.join(",")), o);
    } else if let Some(o) = v.get("bsrange") {
        let text = one_for_both(o, sec)?;
        let (lo, hi) = text.split_once(['-', ':']).ok_or_else(|| {
            o.error(sec, format!("{text:?} is not a range"), Some("e.g. bsrange=4k-64k".into()))
        })?;
        let (lo, hi) = (fio_size(o, lo, sec)?, fio_size(o, hi, sec)?);
        if lo == 0 || lo > hi {
            return Err(o.error(
                sec,
                "the range's low end must be positive and not above its high end",
                None,
            ));
        }
        // fio draws uniformly among the multiples of the low end.
        let count = hi / lo;
        if count > MAX_RANGE_SIZES {
            return Err(o.error(
                sec,
                format!("the range holds {count} sizes; iolens takes at most {MAX_RANGE_SIZES}"),
                Some("narrow it or use bssplit".into()),
            ));
        }
        let list: Vec<String> = (1..=count).map(|k| format!("{}:1", k * lo)).collect();
        min_size = lo;
        fixed_size = (count == 1).then_some(lo);
        put("bs", Raw::Str(list.join(",")), o);
    } else if let Some(o) = v.get("bs") {
        let size = fio_size(o, one_for_both(o, sec)?, sec)?;
        min_size = size;
        fixed_size = Some(size);
        put("bs", Raw::Int(size.into()), o);
    }
    if let Some(o) = v.get("blockalign") {
        let align = fio_size(o, one_for_both(o, sec)?, sec)?;
        if align != min_size {
            return Err(unsupported(
                o,
                sec,
                &format!("blockalign={} (other than the smallest request, {min_size})", o.text()),
                "iolens aligns requests to the smallest request size; drop blockalign",
            ));
        }
    }

    let engine = match v.get("ioengine") {
        Some(o) => {
            let e = match o.text().trim() {
                "sync" | "psync" | "pvsync" => "sync",
                "libaio" | "io_uring" | "posixaio" => "io_uring",
                "null" => "null",
                other => {
                    return Err(unsupported(o, sec, &format!("ioengine={other}"), "iolens runs sync, psync, pvsync (as sync), libaio, io_uring, posixaio (as io_uring) and null"))
                }
            };
            put("engine", Raw::Str(e.into()), o);
            e
        }
        None => {
            put("engine", Raw::Str("sync".into()), &header); // fio's default, psync
            "sync"
        }
    };
    // fio's synchronous engines have one request in flight whatever iodepth says.
    if let (Some(o), "io_uring") = (v.get("iodepth"), engine) {
        put("qd", Raw::Int(fio_uint(o, sec)?.into()), o);
    }
    match (v.get("direct"), v.get("buffered")) {
        (Some(d), Some(b)) if flag(d, sec)? == flag(b, sec)? => {
            return Err(d.error(
                sec,
                "direct and buffered contradict each other",
                Some("give one of them".into()),
            ))
        }
        (Some(o), _) => put("direct", Raw::Bool(flag(o, sec)?), o),
        (None, Some(o)) => put("direct", Raw::Bool(!flag(o, sec)?), o),
        (None, None) => {}
    }
    if let Some(o) = v.get("numjobs") {
        put("threads", Raw::Int(fio_uint(o, sec)?.into()), o);
    }

    // How much and how long: fio moves `size` (or the file) once, stopping early at `runtime`;
    // `time_based` keeps going until `runtime`.
    let region = v.get("filesize").or(v.get("size"));
    if let Some(o) = region {
        put("size", Raw::Int(fio_size(o, o.text(), sec)?.into()), o);
    }
    let time_based = match v.get("time_based") {
        Some(o) => flag(o, sec)?,
        None => false,
    };
    match (v.get("runtime"), time_based) {
        (Some(o), _) => {
            put("time", Raw::Str(fio_duration(o, sec)?), o);
            if !time_based {
                if let (Some(total), Some(_)) = (v.get("size"), v.get("filesize")) {
                    put("bytes", Raw::Int(fio_size(total, total.text(), sec)?.into()), total);
                } else if let Some(o) = region {
                    put("bytes", Raw::Int(fio_size(o, o.text(), sec)?.into()), o);
                }
            }
        }
        (None, true) => {
            let o = v["time_based"];
            return Err(o.error(sec, "time_based without a runtime", Some("add runtime=30s".into())));
        }
        (None, false) => {
            if let (Some(total), Some(_)) = (v.get("size"), v.get("filesize")) {
                put("bytes", Raw::Int(fio_size(total, total.text(), sec)?.into()), total);
            }
        }
    }
    if let Some(o) = v.get("ramp_time") {
        put("ramp", Raw::Str(fio_duration(o, sec)?), o);
    }
    if let Some(o) = v.get("startdelay") {
        if o.text().contains('-') {
            return Err(unsupported(o, sec, "a random start delay range", "give one delay"));
        }
        put("start_delay", Raw::Str(fio_duration(o, sec)?), o);
    }

    match (v.get("rate"), v.get("rate_iops")) {
        (Some(o), Some(_)) => {
            return Err(o.error(sec, "rate and rate_iops are both set", Some("give one of them".into())))
        }
        (Some(o), None) => {
            let bytes_per_s = fio_size(o, one_for_both(o, sec)?, sec)?;
            let Some(bs) = fixed_size else {
                return Err(unsupported(
                    o,
                    sec,
                    "a rate in bytes/s with several request sizes",
                    "use rate_iops",
                ));
            };
            put("rate", Raw::Float(bytes_per_s as f64 / bs as f64), o);
        }
        (None, Some(o)) => {
            let iops = one_for_both(o, sec)?;
            let n = iops
                .parse::<u64>()
                .map_err(|_| o.error(sec, format!("{iops:?} is not a whole number"), None))?;
            put("rate", Raw::Float(n as f64), o);
        }
        (None, None) => {}
    }
    if let Some(o) = v.get("rate_process") {
        let arrival = match o.text().trim() {
            "linear" => "constant",
            "poisson" => "poisson",
            other => {
                return Err(o.error(
                    sec,
                    format!("unknown rate_process {other:?}"),
                    Some("linear or poisson".into()),
                ))
            }
        };
        if v.contains_key("rate") || v.contains_key("rate_iops") {
            put("arrival", Raw::Str(arrival.into()), o);
        }
    }

    let end_fsync = match v.get("end_fsync") {
        Some(o) => flag(o, sec)?.then_some(*o),
        None => None,
    };
    let every = |o: &FioOption| fio_uint(o, sec).map(|n| (n > 0).then_some(n));
    let fsync = match v.get("fsync") {
        Some(o) => every(o)?.map(|n| (n, *o)),
        None => None,
    };
    let fdatasync = match v.get("fdatasync") {
        Some(o) => every(o)?.map(|n| (n, *o)),
        None => None,
    };
    match (fsync, fdatasync, end_fsync) {
        (Some(_), Some((_, o)), _) | (Some(_), _, Some(o)) | (_, Some(_), Some(o)) => {
            return Err(unsupported(
                o,
                sec,
                "several sync policies in one job",
                "iolens takes one: fsync, fdatasync or end_fsync",
            ))
        }
        (Some((n, o)), None, None) => put("fsync", Raw::Int(n.into()), o),
        (None, Some((n, o)), None) => put("fdatasync", Raw::Int(n.into()), o),
        (None, None, Some(o)) => put("fsync", Raw::Str("end".into()), o),
        (None, None, None) => {}
    }

    let random = rw.starts_with("rand");
    if let (Some(o), true) = (v.get("random_distribution"), random) {
        let text = o.text().trim();
        let (kind, params) = match text.split_once(':') {
            Some((k, p)) => (k, Some(p)),
            None => (text, None),
        };
        let number = |p: Option<&str>| -> Result<f64, JobError> {
            let p = p.ok_or_else(|| {
                o.error(sec, format!("{kind} needs a parameter"), Some(format!("e.g. {kind}:1.2")))
            })?;
            if p.contains(':') {
                return Err(unsupported(
                    o,
                    sec,
                    "a distribution centre",
                    "iolens centres normal at the middle and zipf at the start",
                ));
            }
            p.trim().parse::<f64>().map_err(|_| o.error(sec, format!("{p:?} is not a number"), None))
        };
        match kind {
            "random" => put("distribution", Raw::Str("uniform".into()), o),
            "zipf" => {
                put("distribution", Raw::Str("zipf".into()), o);
                put("zipf_theta", Raw::Float(number(params)?), o);
            }
            "normal" | "gauss" => {
                put("distribution", Raw::Str("normal".into()), o);
                put("hot_spot", Raw::Float(0.5), o);
                put("spread", Raw::Float(number(params)? / 100.0), o);
            }
            other => {
                return Err(unsupported(
                    o,
                    sec,
                    &format!("random_distribution={other}"),
                    "iolens has random, zipf:θ and normal:P",
                ))
            }
        }
    }
    if let (Some(o), true) = (v.get("norandommap"), random) {
        if flag(o, sec)? {
            put("random_map", Raw::Bool(false), o);
        }
    }
    match (v.get("randseed"), v.get("randrepeat")) {
        (Some(o), _) => put("seed", Raw::Int(fio_uint(o, sec)?.into()), o),
        (None, Some(o)) if !flag(o, sec)? => {
            // Not repeatable: a seed of this run's own, written out so the run can be repeated.
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            put("seed", Raw::Int((now.as_nanos() as u64).into()), o);
        }
        _ => {}
    }
    if let Some(o) = v.get("verify") {
        let kind = match o.text().trim() {
            "0" | "" => None,
            "crc32c" | "crc32c-intel" => Some("crc32c"),
            "xxhash" => Some("xxh3"),
            "pattern" => Some("pattern"),
            other => {
                return Err(unsupported(
                    o,
                    sec,
                    &format!("verify={other}"),
                    "iolens verifies with crc32c, xxhash (as xxh3) or pattern",
                ))
            }
        };
        if let Some(kind) = kind {
            put("verify", Raw::Str(kind.into()), o);
            if matches!(rw, "write" | "randwrite") {
                // fio's do_verify=1: a writing job reads its blocks back when done.
                put("verify_after_write", Raw::Bool(true), o);
            }
        }
    }
    for key in ["new_group", "group_reporting"] {
        if let Some(o) = v.get(key) {
            flag(o, sec)?; // iolens reports every agent and the total anyway
        }
    }
    if phase > 1 {
        let from = v.get("stonewall").or(v.get("wait_for")).copied().unwrap_or(&header);
        put("phase", Raw::Int(phase.into()), from);
    }
    let description = v.get("description").map(|o| o.text().trim_matches('"').to_string());
    Ok(TranslatedJob { name, description, settings: out })
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
