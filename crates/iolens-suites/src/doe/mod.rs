//! Full-factorial experiments: a plan names factors (workload keys) with levels, replicates and
//! a response; every combination runs `replicates` times in a randomized (seeded) order, and each
//! finished run is appended to a CSV at once. Re-running the same plan skips the runs already in
//! the CSV, so an interrupted study loses nothing.
//!
//! A plan is a job file (`[defaults]`, `[[agent]]`) plus a `[doe]` table:
//!
//! ```toml
//! [doe]
//! response = "bw_bytes_s"   # the default: transfer rate
//! replicates = 3
//! seed = 1                  # of the run order
//! factors = { direct = [false, true], qd = [1, 16], bs = ["64k", "1m"] }
//! ```
//!
//! Each factor is a workload key set in `[defaults]` for every agent (an agent that sets the key
//! itself would hide the factor, so that is an error).
//!
//! This module reads and validates plans; `study` runs them ([`run_study`]) and keeps the study CSV.

mod study;

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use iolens_workload::{parse_job_with_tables, suggest, Job, AGENT_KEYS};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use toml_edit::{DocumentMut, Item, Value};

use crate::SuiteError;

pub use study::{metric_names, parse_study_csv, run_study, StudyOutcome, StudyRows};

#[derive(Debug, Clone)]
pub struct Factor {
    pub name: String,
    /// Levels as TOML values (as written in the plan) and as CSV text.
    pub levels: Vec<(Value, String)>,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub file: PathBuf,
    pub response: String,
    pub replicates: u32,
    pub seed: u64,
    pub factors: Vec<Factor>,
    /// The plan without `[doe]`, to which each run's levels are added.
    base: DocumentMut,
}

/// One run of the study: a combination of levels and a replicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    /// Stable over re-runs: combination index × replicates + replicate.
    pub run_id: u64,
    pub replicate: u32,
    /// Level index per factor.
    pub levels: Vec<usize>,
}

/// Bounds on a plan, checked before anything is allocated or run: a study beyond them would not
/// finish in any reasonable time, and the run list is built in memory.
pub const MAX_REPLICATES: i64 = 1000;
pub const MAX_LEVELS: usize = 64;
pub const MAX_FACTORS: usize = 16;
pub const MAX_COMBINATIONS: u64 = 10_000;
pub const MAX_RUNS: u64 = 100_000;
/// Plans are short text files; anything larger is not one.
const MAX_PLAN_BYTES: u64 = 16 << 20;
/// A level is a workload value (a size, a path, ...), written into every row of the study CSV.
const MAX_LEVEL_CHARS: usize = 4096;

/// The plan's text with positions, so errors can give the line of a `[doe]` key.
struct Source<'a> {
    file: &'a Path,
    text: &'a str,
    doc: Option<toml_edit::Document<&'a str>>,
}

impl<'a> Source<'a> {
    fn new(file: &'a Path, text: &'a str) -> Self {
        Source { file, text, doc: toml_edit::Document::parse(text).ok() }
    }

    /// The 1-based line of the key at `path` under `[doe]` (or of `[doe]` itself); 0 if unknown.
    fn line(&self, path: &[&str]) -> usize {
        let Some(doc) = &self.doc else { return 0 };
        let mut item = doc.as_item().get("doe");
        let mut span = item.and_then(|i| i.span());
        for key in path {
            let Some(table) = item.and_then(|i| i.as_table_like()) else { break };
            span = table.key(key).and_then(|k| k.span()).or(span);
            item = table.get(key);
        }
        span.map_or(0, |s| self.text[..s.start.min(self.text.len())].matches('\n').count() + 1)
    }

    fn error(&self, path: &[&str], message: impl std::fmt::Display, hint: &str) -> SuiteError {
        let file = self.file.display();
        let key = match path.join(".") {
            k if k.is_empty() => "[doe]".to_string(),
            k => format!("[doe] {k}"),
        };
        let at = match self.line(path) {
            0 => format!("{file}"),
            line => format!("{file}:{line}"),
        };
        SuiteError::Config(format!("{at}: {key}: {message}\n  hint: {hint}"))
    }
}

/// The keys of a plan's [doe] table.
const DOE_KEYS: &[&str] = &["response", "replicates", "seed", "factors"];

/// The hint for an unknown key or value: the closest valid one, if any, then all of them.
fn did_you_mean(unknown: &str, valid: &[&str]) -> String {
    match suggest(unknown, valid) {
        Some(k) => format!("did you mean `{k}`? valid: {}", valid.join(", ")),
        None => format!("valid: {}", valid.join(", ")),
    }
}

fn level_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.value().clone(),
        other => other.to_string().trim().to_string(),
    }
}

/// Refuses a factor that is not an agent key (`name` names an agent, so it is no factor).
fn check_factor_name(src: &Source, name: &str) -> Result<(), SuiteError> {
    if !AGENT_KEYS.contains(&name) || name == "name" {
        let keys: Vec<&str> = AGENT_KEYS.iter().copied().filter(|k| *k != "name").collect();
        let hint = match suggest(name, &keys) {
            Some(k) => format!("did you mean `{k}`? factors are agent keys"),
            None => {
                "factors are agent keys: bs, qd, threads, engine, direct, rw, pattern, size, rate, …".into()
            }
        };
        return Err(src.error(&["factors", name], "not a workload key", &hint));
    }
    Ok(())
}

/// A factor's levels, as written and as CSV text: two to [`MAX_LEVELS`], each once, each a text
/// a CSV field can hold.
fn factor_levels(src: &Source, at: &[&str], item: &Item) -> Result<Vec<(Value, String)>, SuiteError> {
    let Some(levels) = item.as_array() else {
        return Err(src.error(at, "expected a list of levels", "e.g. [1, 16]"));
    };
    if levels.len() < 2 {
        return Err(src.error(at, "a factor needs two or more levels", "add a level"));
    }
    if levels.len() > MAX_LEVELS {
        return Err(src.error(
            at,
            format!("{} levels; at most {MAX_LEVELS} are supported", levels.len()),
            "pick fewer levels, e.g. powers of two",
        ));
    }
    let mut texts: Vec<(Value, String)> = Vec::new();
    for v in levels.iter() {
        let text = level_text(v);
        if let Some(c) = text.chars().find(|c| c.is_control()) {
            let message = format!("level {text:?} holds the control character U+{:04X}", c as u32);
            return Err(src.error(at, message, "levels are written into CSV rows: use plain text"));
        }
        if text.chars().count() > MAX_LEVEL_CHARS {
            let message = format!("a level is longer than {MAX_LEVEL_CHARS} characters");
            return Err(src.error(at, message, "use shorter levels"));
        }
        if texts.iter().any(|(_, t)| *t == text) {
            let message = format!("level {text:?} is listed twice");
            return Err(src.error(at, message, "list each level once; replicates repeat runs"));
        }
        texts.push((v.clone(), text));
    }
    Ok(texts)
}

impl Plan {
    pub fn load(path: &Path) -> Result<Plan, SuiteError> {
        let cannot = |e: String| SuiteError::Config(format!("cannot read the plan {}: {e}", path.display()));
        // A FIFO or a device would block or never end: look before reading.
        let meta = std::fs::metadata(path).map_err(|e| cannot(e.to_string()))?;
        if !meta.is_file() || meta.len() > MAX_PLAN_BYTES {
            return Err(cannot(format!(
                "not a plan file (a regular file of at most {} MiB)",
                MAX_PLAN_BYTES >> 20
            )));
        }
        let mut text = String::new();
        File::open(path)
            .and_then(|f| f.take(MAX_PLAN_BYTES).read_to_string(&mut text))
            .map_err(|e| cannot(e.to_string()))?;
        Plan::parse(&text, path)
    }

    /// Parses a plan's text; `path` names it in errors and relative targets resolve against its
    /// directory. Validates every combination's job; touches no file.
    pub fn parse(text: &str, path: &Path) -> Result<Plan, SuiteError> {
        // The job part first: its errors carry the plan's own lines.
        parse_job_with_tables(text, &path.display().to_string(), path.parent(), &["doe"])?;
        let src = Source::new(path, text);
        let mut doc: DocumentMut =
            text.parse().map_err(|e| SuiteError::Config(format!("{}: {e}", path.display())))?;
        let Some(doe) = doc.remove("doe") else {
            return Err(src.error(
                &[],
                "the plan has no [doe] table",
                "add [doe] with factors = { qd = [1, 16] }",
            ));
        };
        let Some(doe) = doe.as_table_like() else {
            return Err(src.error(&[], "doe must be a table", "write it as [doe]"));
        };
        for (key, _) in doe.iter() {
            if !DOE_KEYS.contains(&key) {
                return Err(src.error(&[key], "unknown key", &did_you_mean(key, DOE_KEYS)));
            }
        }
        let response = match doe.get("response") {
            None => "bw_bytes_s".to_string(),
            Some(v) => v.as_str().map(str::to_string).ok_or_else(|| {
                src.error(&["response"], "expected a metric name", "e.g. response = \"bw_bytes_s\"")
            })?,
        };
        let metrics = metric_names();
        if !metrics.contains(&response.as_str()) {
            return Err(src.error(
                &["response"],
                format!("unknown metric {response:?}"),
                &did_you_mean(&response, &metrics),
            ));
        }
        let int = |key: &str, default: i64, max: i64, hint: &str| -> Result<i64, SuiteError> {
            match doe.get(key) {
                None => Ok(default),
                Some(v) => match v.as_integer() {
                    Some(n) if (1..=max).contains(&n) => Ok(n),
                    Some(n) => Err(src.error(&[key], format!("{n} is not between 1 and {max}"), hint)),
                    None => Err(src.error(&[key], "expected a positive integer", hint)),
                },
            }
        };
        let replicates = int(
            "replicates",
            1,
            MAX_REPLICATES,
            &format!("e.g. replicates = 3; at most {MAX_REPLICATES}, as a study repeats each run that often"),
        )?;
        let replicates = u32::try_from(replicates).expect("bounded by MAX_REPLICATES");
        let seed = int("seed", 1, i64::MAX, "e.g. seed = 1")?.unsigned_abs();
        let Some(table) = doe.get("factors").and_then(|f| f.as_table_like()) else {
            return Err(src.error(
                &["factors"],
                "missing or not a table",
                "factors = { qd = [1, 16], direct = [false, true] }",
            ));
        };
        let mut factors = Vec::new();
        let mut combinations: u64 = 1;
        for (name, item) in table.iter() {
            let at = ["factors", name];
            check_factor_name(&src, name)?;
            if factors.len() == MAX_FACTORS {
                return Err(src.error(
                    &at,
                    format!("more than {MAX_FACTORS} factors"),
                    "study fewer factors at a time",
                ));
            }
            let texts = factor_levels(&src, &at, item)?;
            combinations = combinations.saturating_mul(texts.len() as u64);
            if combinations > MAX_COMBINATIONS {
                return Err(src.error(
                    &at,
                    format!("the factors so far make more than {MAX_COMBINATIONS} combinations of levels"),
                    "study fewer factors or levels at a time (e.g. screen factors with two levels first)",
                ));
            }
            factors.push(Factor { name: name.to_string(), levels: texts });
        }
        if factors.is_empty() {
            return Err(src.error(&["factors"], "no factors", "factors = { qd = [1, 16] }"));
        }
        let runs = combinations.saturating_mul(u64::from(replicates));
        if runs > MAX_RUNS {
            return Err(src.error(
                &["replicates"],
                format!("{combinations} combinations × {replicates} replicates = {runs} runs, more than {MAX_RUNS}"),
                "lower replicates, or study fewer factors or levels at a time",
            ));
        }
        if let Some(Item::ArrayOfTables(agents)) = doc.get("agent") {
            for agent in agents.iter() {
                if let Some(f) = factors.iter().find(|f| agent.contains_key(&f.name)) {
                    return Err(src.error(
                        &["factors", &f.name],
                        "an [[agent]] sets this key itself, which would hide the factor",
                        "move the key to [defaults] or drop it from the agent",
                    ));
                }
            }
        }
        let plan = Plan { file: path.to_path_buf(), response, replicates, seed, factors, base: doc };
        // Every combination must make a valid job before anything runs.
        for combination in plan.combinations() {
            plan.combination_job(&combination).map_err(|b| {
                let (e, described) = *b;
                // The error is about the generated job: point at the factor it names, if any.
                let factor = e.key.rsplit('.').next().filter(|k| plan.factors.iter().any(|f| f.name == *k));
                let path: Vec<&str> = ["factors"].into_iter().chain(factor).collect();
                let message = format!("with {described}: {}: {}", e.key, e.message);
                let hint =
                    e.hint.as_deref().unwrap_or("change the levels or the job so every combination is valid");
                src.error(&path, message, hint)
            })?;
        }
        Ok(plan)
    }

    /// Every combination of levels, the last factor varying fastest.
    pub fn combinations(&self) -> Vec<Vec<usize>> {
        let mut out = vec![vec![]];
        for f in &self.factors {
            out = out
                .into_iter()
                .flat_map(|c| (0..f.levels.len()).map(move |l| [c.clone(), vec![l]].concat()))
                .collect();
        }
        out
    }

    /// All runs in their randomized order (the same for the same seed).
    pub fn runs(&self) -> Vec<PlannedRun> {
        let mut runs: Vec<PlannedRun> = self
            .combinations()
            .into_iter()
            .enumerate()
            .flat_map(|(i, levels)| {
                (0..self.replicates).map(move |r| PlannedRun {
                    run_id: i as u64 * self.replicates as u64 + r as u64,
                    replicate: r + 1,
                    levels: levels.clone(),
                })
            })
            .collect();
        runs.shuffle(&mut rand::rngs::StdRng::seed_from_u64(self.seed));
        runs
    }

    /// The job of one combination.
    pub fn job(&self, levels: &[usize]) -> Result<Job, SuiteError> {
        self.combination_job(levels).map_err(|b| {
            let (e, described) = *b;
            let hint = e.hint.as_deref().map(|h| format!("\n  hint: {h}")).unwrap_or_default();
            let file = self.file.display();
            SuiteError::Config(format!("{file}: with {described}: {}: {}{hint}", e.key, e.message))
        })
    }

    /// The job of one combination, or the job's error and the levels that made it.
    fn combination_job(&self, levels: &[usize]) -> Result<Job, Box<(iolens_workload::JobError, String)>> {
        let mut doc = self.base.clone();
        if !doc.contains_key("defaults") {
            doc["defaults"] = toml_edit::table();
        }
        let described: Vec<String> = self
            .factors
            .iter()
            .zip(levels)
            .map(|(f, &l)| format!("{} = {}", f.name, f.levels[l].1))
            .collect();
        for (f, &l) in self.factors.iter().zip(levels) {
            doc["defaults"][f.name.as_str()] = Item::Value(f.levels[l].0.clone());
        }
        let file = self.file.display().to_string();
        parse_job_with_tables(&doc.to_string(), &file, self.file.parent(), &[])
            .map_err(|e| Box::new((e, described.join(", "))))
    }

    /// The number of runs of the study (combinations × replicates).
    pub fn runs_total(&self) -> u64 {
        let combinations = self.factors.iter().fold(1u64, |n, f| n.saturating_mul(f.levels.len() as u64));
        combinations.saturating_mul(u64::from(self.replicates))
    }

    /// The study CSV's header: `row_kind` (always `run`: one row shape, as the other CSVs), the
    /// run, its factor levels, every metric and whether the run was interrupted.
    pub fn header(&self) -> String {
        let mut cols = vec!["row_kind".to_string(), "run_id".to_string(), "replicate".to_string()];
        cols.extend(self.factors.iter().map(|f| f.name.clone()));
        cols.extend(metric_names().iter().map(|m| m.to_string()));
        cols.push("interrupted".into());
        cols.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn plan(text: &str) -> Result<Plan, SuiteError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.toml");
        std::fs::write(&path, text).unwrap();
        Plan::load(&path)
    }

    pub(super) const BASE: &str = "[defaults]\ntarget = \"/tmp/x\"\nrw = \"read\"\nengine = \"null\"\nbytes = \"64k\"\n[[agent]]\nname = \"a\"\n";

    #[test]
    fn full_factorial_in_a_seeded_order() {
        let p = plan(&format!("{BASE}[doe]\nreplicates = 2\nseed = 5\nfactors = {{ bs = [\"4k\", \"16k\"], threads = [1, 2], rate = [0, 100] }}\n")).unwrap();
        assert_eq!(p.combinations().len(), 8);
        let runs = p.runs();
        assert_eq!(runs.len(), 16);
        let mut ids: Vec<u64> = runs.iter().map(|r| r.run_id).collect();
        assert_ne!(ids, (0..16).collect::<Vec<_>>(), "randomized");
        assert_eq!(runs, p.runs(), "the same order for the same seed");
        ids.sort();
        assert_eq!(ids, (0..16).collect::<Vec<_>>());
        let job = p.job(&[1, 1, 1]).unwrap();
        assert_eq!(job.agents.len(), 2);
        assert_eq!(job.agents[0].sizes, iolens_workload::SizeSpec::Fixed(16384));
        assert_eq!(job.agents[0].rate.ops_per_s, 100.0);
        assert_eq!(
            p.header().split(',').take(6).collect::<Vec<_>>(),
            ["row_kind", "run_id", "replicate", "bs", "threads", "rate"]
        );
    }

    #[test]
    fn bad_plans_are_named() {
        let e = plan(&format!("{BASE}[doe]\nfactors = {{ qdd = [1, 2] }}\n")).unwrap_err().to_string();
        assert!(e.contains("factors.qdd") && e.contains("not a workload key"), "{e}");
        let e = plan(&format!("{BASE}[doe]\nfactors = {{ qd = [1, 4] }}\n")).unwrap_err().to_string();
        assert!(e.contains("qd = 4") && e.contains("io_uring"), "a level making an invalid job: {e}");
        let e = plan(&format!("{BASE}[doe]\nresponse = \"speed\"\nfactors = {{ bs = [\"4k\", \"8k\"] }}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown metric"), "{e}");
        let e = plan(&format!("{BASE}bs = \"4k\"\n[doe]\nfactors = {{ bs = [\"4k\", \"8k\"] }}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hide the factor"), "{e}");
        let e = plan(&format!("{BASE}[doe]\nfactors = {{ bs = [\"4k\"] }}\n")).unwrap_err().to_string();
        assert!(e.contains("two or more levels"), "{e}");
        let e = plan("[defaults]\ntarget = \"/x\"\nbsz = 4\n[[agent]]\n[doe]\nfactors = { bs = [1, 2] }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("plan.toml:3:"), "job errors point into the plan: {e}");
    }

    #[test]
    fn a_misspelt_key_metric_or_factor_gets_a_did_you_mean_with_file_line_and_key() {
        let lines = BASE.lines().count();
        let e = plan(&format!("{BASE}[doe]\nreplicate = 2\nfactors = {{ qd = [1, 2] }}\n"))
            .unwrap_err()
            .to_string();
        let at = format!("plan.toml:{}: [doe] replicate: unknown key", lines + 2);
        assert!(e.contains(&at), "{e}");
        assert!(e.contains("did you mean `replicates`?"), "{e}");
        let e = plan(&format!("{BASE}[doe]\nresponse = \"bw_byte_s\"\nfactors = {{ qd = [1, 2] }}\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[doe] response: unknown metric") && e.contains("did you mean `bw_bytes_s`?"),
            "{e}"
        );
        let e = plan(&format!("{BASE}[doe]\nfactors = {{ thread = [1, 2] }}\n")).unwrap_err().to_string();
        assert!(e.contains("[doe] factors.thread: not a workload key"), "{e}");
        assert!(e.contains("did you mean `threads`?"), "{e}");
    }

    #[test]
    fn counts_are_bounded_with_line_and_hint() {
        let e =
            plan(&format!("{BASE}[doe]\nreplicates = 2147483648\nfactors = {{ bs = [\"4k\", \"8k\"] }}\n"))
                .unwrap_err()
                .to_string();
        assert!(e.contains("plan.toml:9: [doe] replicates") && e.contains("hint"), "{e}");
        let e = plan(&format!("{BASE}[doe]\nreplicates = 0\nfactors = {{ bs = [\"4k\", \"8k\"] }}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("replicates"), "{e}");
        let many: Vec<String> = (1..=65).map(|i| format!("\"{i}k\"")).collect();
        let e = plan(&format!("{BASE}[doe]\nfactors = {{ bs = [{}] }}\n", many.join(", ")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("plan.toml:9: [doe] factors.bs") && e.contains("64"), "{e}");
        let e = plan(&format!(
            "{BASE}[doe]\nreplicates = 1000\n[doe.factors]\nbs = [\"4k\", \"8k\", \"16k\"]\nramp = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\nseed = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("plan.toml:9: [doe] replicates") && e.contains("runs"), "{e}");
        let levels: Vec<String> = (0..25).map(|i| i.to_string()).collect();
        let factors: Vec<String> =
            ["ramp", "seed", "rate"].iter().map(|f| format!("{f} = [{}]", levels.join(","))).collect();
        let e = plan(&format!("{BASE}[doe.factors]\n{}\n", factors.join("\n"))).unwrap_err().to_string();
        assert!(e.contains("plan.toml:11: [doe] factors.rate") && e.contains("combinations"), "{e}");
    }

    #[test]
    fn levels_that_cannot_be_a_csv_field_are_refused() {
        let e = plan(&format!("{BASE}[doe]\nfactors = {{ target = [\"/tmp/a\\n\", \"/tmp/b\"] }}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("plan.toml:9: [doe] factors.target") && e.contains("U+000A"), "{e}");
        let e = plan(&format!("{BASE}[doe]\nfactors = {{ qd = [1, 1] }}\n")).unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
        let e = plan(BASE).unwrap_err().to_string();
        assert!(e.contains("plan.toml: [doe]: the plan has no [doe] table"), "{e}");
    }

    #[test]
    fn a_level_that_makes_a_bad_job_points_at_its_factor() {
        let e = plan(&format!("{BASE}[doe]\nreplicates = 2\nfactors = {{ qd = [1, 4] }}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("plan.toml:10: [doe] factors.qd: with qd = 4: defaults.qd:"), "{e}");
        assert!(e.contains("hint: add engine = "), "{e}");
    }
}
