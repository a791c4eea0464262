//! TOML job files: `[defaults]`, `[[agent]]` tables, phases; positions of every value kept
//! for errors.

use std::ops::Range;
use std::path::Path;

use toml_edit::{Document, Item, TableLike, Value};

use super::agents::*;
use super::settings::*;
use crate::model::*;

/// Line and column (1-based, in characters) of a byte offset.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |nl| nl + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

struct FileCtx<'a> {
    text: &'a str,
    file: &'a str,
}

impl FileCtx<'_> {
    fn at(&self, span: Option<Range<usize>>) -> ErrorSource {
        let (line, column) = position(self.text, span.map_or(0, |s| s.start));
        ErrorSource::File { file: self.file.to_string(), line, column }
    }

    fn error(
        &self,
        span: Option<Range<usize>>,
        key: &str,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> JobError {
        JobError { source: self.at(span), key: key.to_string(), message: message.into(), hint }
    }

    fn setting(&self, item: &Item, path: &str) -> Result<Setting, JobError> {
        let value = match item.as_value() {
            Some(Value::String(s)) => Raw::Str(s.value().clone()),
            Some(Value::Integer(i)) => Raw::Int(*i.value() as i128),
            Some(Value::Float(f)) => Raw::Float(*f.value()),
            Some(Value::Boolean(b)) => Raw::Bool(*b.value()),
            other => {
                let found = match other {
                    None => "a table",
                    Some(Value::Array(_)) => "an array",
                    Some(Value::InlineTable(_)) => "an inline table",
                    Some(_) => "a date",
                };
                let hint = path
                    .ends_with(".bs")
                    .then(|| "write weighted sizes as one string: bs = \"4k:70,64k:30\"".to_string());
                let message = format!("expected a string, number or boolean, found {found}");
                return Err(self.error(item.span(), path, message, hint));
            }
        };
        Ok(Setting { value, source: self.at(item.span()), path: path.to_string() })
    }

    /// The settings of a table, each key checked against `valid`.
    fn settings(&self, table: &dyn TableLike, prefix: &str, valid: &[&str]) -> Result<Settings, JobError> {
        let mut out = Settings::new();
        for (key, item) in table.iter() {
            let path = format!("{prefix}.{key}");
            if !valid.contains(&key) {
                let hint = match key {
                    "name" => "each agent's name goes in its own [[agent]] table".to_string(),
                    "block_unit" => "block_unit is a job setting: put it at the top, before any table".into(),
                    _ => unknown_key_hint(key, valid),
                };
                let span = table.key(key).and_then(|k| k.span());
                return Err(self.error(span, &path, "unknown key", Some(hint)));
            }
            out.insert(key.to_string(), self.setting(item, &path)?);
        }
        Ok(out)
    }
}

/// Parses a job file's text; `file_name` appears in error messages and names the job (its stem)
/// unless the file sets `name`. Relative targets stay relative (see [`load_job_file`]).
///
/// The file holds optional top-level `name` and `block_unit` (BPS unit, default 512), an
/// optional `[defaults]` table whose keys apply to every agent, and one or more `[[agent]]`
/// tables. Agent keys (all but `name` also in `[defaults]`):
///
/// - `name` (default `agent<i>`, counting from 0), `target` (required)
/// - `rw`: `read`, `write`, `randread`, `randwrite`, `rw`/`readwrite` (sequential mix), `randrw`;
///   or `op` (`read`, `write`, `mix`) and `pattern` (`sequential`, `strided`, `random`)
/// - `read_pct` (mix, default 50), `stride` (a stride also makes a sequential `rw` strided)
/// - `distribution` (`uniform`, `normal`, `zipf`), `hot_spot`, `spread`, `zipf_theta`
/// - `bs`: a size or a weighted list `"4k:70,64k:30"` (default 4k)
/// - `engine` (`sync`, `io_uring`, `null`), `qd` (above 1 only with io_uring), `direct`
/// - `rate` (ops/s from 0.001 to 1e9; 0, the default, is the explicit "unlimited"), `arrival`
///   (`constant`, `poisson`)
/// - `fsync` (`"none"`, `"end"` or N: every N writes)
/// - `size` (region), `time`, `bytes` (termination), `ramp`, `seed`
/// - `threads`: N copies named `<name>.0` ... `<name>.<N-1>` with different seeds
///
/// Names hold no control characters or path separators and at most 100 characters. A job has at
/// most [`MAX_AGENTS`](crate::limits::MAX_AGENTS) agents and its request buffers, region sizes
/// and byte counts are bounded (see [`limits`](crate::limits)), so the engine is never asked
/// for what it cannot allocate or address.
///
/// Sizes are integers (bytes) or strings for [`parse_size`](crate::parse_size); durations are
/// numbers (seconds) or strings for [`parse_duration`](crate::parse_duration).
pub fn parse_job(text: &str, file_name: &str) -> Result<Job, JobError> {
    let stem = Path::new(file_name).file_stem().map(|s| s.to_string_lossy().into_owned());
    parse_job_in(text, file_name, None, stem.as_deref().unwrap_or("job"), &[])
}

/// Reads and parses a job file (see [`parse_job`]); relative targets are taken relative to the
/// file's directory.
pub fn load_job_file(path: &Path) -> Result<Job, JobError> {
    let file_name = path.display().to_string();
    let text = super::read_job_file(path)?;
    let stem = path.file_stem().map_or("job".into(), |s| s.to_string_lossy());
    parse_job_in(&text, &file_name, Some(path.parent().unwrap_or(Path::new(""))), &stem, &[])
}

/// Parses the job of a file that also holds other top-level tables (`extra`, e.g. an
/// experiment plan's `[doe]`), which are left to the caller. Relative targets resolve against
/// `base_dir`.
pub fn parse_job_with_tables(
    text: &str,
    file_name: &str,
    base_dir: Option<&Path>,
    extra: &[&str],
) -> Result<Job, JobError> {
    let stem = Path::new(file_name).file_stem().map(|s| s.to_string_lossy().into_owned());
    parse_job_in(text, file_name, base_dir, stem.as_deref().unwrap_or("job"), extra)
}

fn parse_job_in(
    text: &str,
    file_name: &str,
    base_dir: Option<&Path>,
    default_name: &str,
    extra: &[&str],
) -> Result<Job, JobError> {
    let ctx = FileCtx { text, file: file_name };
    let doc = Document::parse(text).map_err(|e| {
        let message = e.message().lines().next().unwrap_or("syntax error").trim().to_string();
        ctx.error(e.span(), "", format!("invalid TOML: {message}"), None)
    })?;
    let root = doc.as_table();
    for (key, item) in root.iter() {
        if TOP_KEYS.contains(&key) || extra.contains(&key) {
            continue;
        }
        let table = item.is_table() || item.is_array_of_tables();
        let hint = match suggest(key, TOP_KEYS) {
            _ if !table && AGENT_KEYS.contains(&key) => agent_setting_hint(key),
            Some(k) if table && k == "agent" => "did you mean `[[agent]]`?".into(),
            Some(k) if table && k == "defaults" => "did you mean `[defaults]`?".into(),
            Some(k) => format!("did you mean `{k}`?"),
            None => match suggest(key, AGENT_KEYS) {
                Some(k) if !table => agent_setting_hint(&k),
                _ => "valid at the top: name, block_unit, [defaults], [[agent]]".into(),
            },
        };
        let span = root.key(key).and_then(|k| k.span());
        return Err(ctx.error(span, key, if table { "unknown table" } else { "unknown key" }, Some(hint)));
    }

    let name = match root.get("name") {
        None => name_from_stem(default_name),
        Some(item) => match ctx.setting(item, "name")?.value {
            Raw::Str(s) => match check_name(&s) {
                Ok(()) => s,
                Err(why) => return Err(ctx.error(item.span(), "name", why, Some(NAME_HINT.into()))),
            },
            other => {
                let message = format!("expected a string, found {}", other.kind());
                return Err(ctx.error(item.span(), "name", message, None));
            }
        },
    };
    let block_unit = root.get("block_unit").map(|item| ctx.setting(item, "block_unit")).transpose()?;
    let block_unit = build_block_unit(block_unit.as_ref())?;

    let defaults = match root.get("defaults") {
        None => Settings::new(),
        Some(item) => match item.as_table_like() {
            Some(t) => {
                let valid: Vec<&str> = AGENT_KEYS.iter().copied().filter(|k| *k != "name").collect();
                ctx.settings(t, "defaults", &valid)?
            }
            None => return Err(ctx.error(item.span(), "defaults", "expected a table: [defaults]", None)),
        },
    };
    let tables: Vec<(&dyn TableLike, Option<Range<usize>>)> = match root.get("agent") {
        None => vec![],
        Some(Item::ArrayOfTables(a)) => a.iter().map(|t| (t as &dyn TableLike, t.span())).collect(),
        Some(Item::Value(Value::Array(a))) if a.iter().all(Value::is_inline_table) => {
            a.iter().filter_map(|v| v.as_inline_table().map(|t| (t as &dyn TableLike, t.span()))).collect()
        }
        Some(other) => {
            return Err(ctx.error(
                other.span(),
                "agent",
                "expected [[agent]] tables",
                Some("each agent is a table in an array: write [[agent]], with two brackets".into()),
            ))
        }
    };
    if tables.is_empty() {
        return Err(ctx.error(
            None,
            "agent",
            "the job has no agents",
            Some(
                "add at least one, e.g.\n    [[agent]]\n    target = \"/mnt/scratch\"\n    rw = \"randread\"\n    \
                 bs = \"4k\""
                    .into(),
            ),
        ));
    }

    let mut agents = Vec::new();
    // For each built agent, the table it came from: duplicate names point there.
    let mut origins = Vec::new();
    let mut totals = Totals::default();
    for (i, (table, span)) in tables.into_iter().enumerate() {
        let label = format!("agent[{}]", i + 1);
        let mut settings = defaults.clone();
        settings.extend(ctx.settings(table, &label, AGENT_KEYS)?);
        let built = build_agents(&settings, i, &label, base_dir, &mut totals, || {
            ctx.error(
                span.clone(),
                &format!("{label}.target"),
                "no target",
                Some("add target = \"/path/to/dir-file-or-device\" to the agent or to [defaults]".into()),
            )
        })?;
        let origin = match settings.get("name") {
            Some(s) if !s.inherited() => (s.source.clone(), s.path.clone()),
            _ => (ctx.at(span), label),
        };
        origins.resize(origins.len() + built.len(), origin);
        agents.extend(built);
    }
    let mut seen = std::collections::BTreeSet::new();
    for (agent, (source, key)) in agents.iter().zip(origins) {
        if !seen.insert(agent.name.as_str()) {
            return Err(JobError {
                source,
                key,
                message: format!("two agents are named \"{}\"", agent.name),
                hint: Some("give each agent its own name (threads = N adds .0 to .<N-1>)".into()),
            });
        }
    }
    Ok(Job { name, block_unit, agents })
}

fn agent_setting_hint(key: &str) -> String {
    format!("`{key}` is an agent setting: put it in an [[agent]] table, or in [defaults] for every agent")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_and_aliases() {
        let cases = [
            ("blocksize", "bs"),
            ("BS", "bs"),
            ("engin", "engine"),
            ("egnine", "engine"),
            ("taregt", "target"),
            ("tagret", "target"),
            ("threds", "threads"),
            ("thread", "threads"),
            ("iodepth", "qd"),
            ("read-pct", "read_pct"),
            ("readpct", "read_pct"),
            ("hotspot", "hot_spot"),
            ("zipf-theta", "zipf_theta"),
            ("pattrn", "pattern"),
            ("distrib", "distribution"),
            ("arival", "arrival"),
            ("fsycn", "fsync"),
            ("strid", "stride"),
            ("sead", "seed"),
            ("ramp_time", "ramp"),
            ("runtime", "time"),
            ("numjobs", "threads"),
            ("direkt", "direct"),
            ("bz", "bs"),
            ("og", "op"),
            ("verfy", "verify"),
            ("do_verify", "verify_after_write"),
        ];
        for (typo, key) in cases {
            assert_eq!(suggest(typo, AGENT_KEYS).as_deref(), Some(key), "{typo}");
        }
        for far in ["xyzzy", "colour", "checksum", "latency_target"] {
            assert_eq!(suggest(far, AGENT_KEYS), None, "{far}");
        }
        assert_eq!(suggest("iouring", ENGINE_VALUES).as_deref(), Some("io_uring"));
        assert_eq!(suggest("libaio", ENGINE_VALUES).as_deref(), Some("io_uring"));
        assert_eq!(suggest("gaussian", DISTRIBUTION_VALUES).as_deref(), Some("normal"));
        assert_eq!(suggest("randomread", RW_VALUES).as_deref(), Some("randread"));
        assert_eq!(suggest("Randwrite", RW_VALUES).as_deref(), Some("randwrite"));
        assert_eq!(suggest("rw", OP_VALUES).as_deref(), Some("mix"));
    }

    #[test]
    fn positions_are_one_based_characters() {
        let text = "a = 1\nüb = 2\n";
        assert_eq!(position(text, 0), (1, 1));
        assert_eq!(position(text, 4), (1, 5));
        assert_eq!(position(text, 6), (2, 1));
        assert_eq!(position(text, 8), (2, 2), "ü is two bytes, one column");
        assert_eq!(position(text, 7), (2, 1), "inside a character");
        assert_eq!(position(text, 99), (3, 1));
    }

    #[test]
    fn display_forms() {
        let e = JobError {
            source: ErrorSource::File { file: "job.toml".into(), line: 7, column: 1 },
            key: "agent[2].blocksize".into(),
            message: "unknown key".into(),
            hint: Some("did you mean `bs`?".into()),
        };
        assert_eq!(
            e.to_string(),
            "job.toml:7:1: agent[2].blocksize: unknown key\n  hint: did you mean `bs`?"
        );
        assert_eq!(e.location(), Some(("job.toml", 7, 1)));
        let e = JobError { source: ErrorSource::Flag("--qd".into()), key: "qd".into(), hint: None, ..e };
        assert_eq!(e.to_string(), "--qd: unknown key");
        assert_eq!(e.location(), None);
        let e = JobError {
            source: ErrorSource::File { file: "x".into(), line: 0, column: 0 },
            key: "".into(),
            ..e
        };
        assert_eq!(e.to_string(), "x: unknown key");
    }
}
