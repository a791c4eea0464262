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

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{run_job, LocalBarrier, RunObserver, RunOptions, TargetPolicy};
use iolens_metrics::RunResult;
use iolens_report::export::csv_field;
use iolens_workload::{parse_job_with_tables, Job, AGENT_KEYS};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use toml_edit::{DocumentMut, Item, Value};

use crate::repeat::{Metric, REPEATED_METRICS};
use crate::SuiteError;

/// Metrics written for every run, beyond those of [`REPEATED_METRICS`].
const COUNT_METRICS: &[Metric] =
    &[("ops", |f| f.ops as f64), ("bytes", |f| f.bytes as f64), ("moved_bytes", |f| f.moved_bytes as f64)];

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

fn plan_error(file: &Path, key: &str, message: impl std::fmt::Display, hint: &str) -> SuiteError {
    SuiteError::Config(format!("{}: [doe] {key}: {message}\n  hint: {hint}", file.display()))
}

fn level_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.value().clone(),
        other => other.to_string().trim().to_string(),
    }
}

impl Plan {
    pub fn load(path: &Path) -> Result<Plan, SuiteError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SuiteError::Config(format!("cannot read the plan {}: {e}", path.display())))?;
        // The job part first: its errors carry the plan's own lines.
        parse_job_with_tables(&text, &path.display().to_string(), path.parent(), &["doe"])?;
        let mut doc: DocumentMut =
            text.parse().map_err(|e| SuiteError::Config(format!("{}: {e}", path.display())))?;
        let Some(doe) = doc.remove("doe") else {
            return Err(plan_error(
                path,
                "",
                "the plan has no [doe] table",
                "add [doe] with factors = { qd = [1, 16] }",
            ));
        };
        let Some(doe) = doe.as_table_like() else {
            return Err(plan_error(path, "", "doe must be a table", "write it as [doe]"));
        };
        for (key, _) in doe.iter() {
            if !["response", "replicates", "seed", "factors"].contains(&key) {
                return Err(plan_error(
                    path,
                    key,
                    "unknown key",
                    "valid: response, replicates, seed, factors",
                ));
            }
        }
        let response = match doe.get("response") {
            None => "bw_bytes_s".to_string(),
            Some(v) => v.as_str().map(str::to_string).ok_or_else(|| {
                plan_error(path, "response", "expected a metric name", "e.g. response = \"bw_bytes_s\"")
            })?,
        };
        let metrics = metric_names();
        if !metrics.contains(&response.as_str()) {
            return Err(plan_error(
                path,
                "response",
                format!("unknown metric {response:?}"),
                &metrics.join(", "),
            ));
        }
        let int = |key: &str, default: i64| -> Result<i64, SuiteError> {
            match doe.get(key) {
                None => Ok(default),
                Some(v) => v
                    .as_integer()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| plan_error(path, key, "expected a positive integer", "e.g. 3")),
            }
        };
        let replicates = int("replicates", 1)? as u32;
        let seed = int("seed", 1)? as u64;
        let Some(table) = doe.get("factors").and_then(|f| f.as_table_like()) else {
            return Err(plan_error(
                path,
                "factors",
                "missing or not a table",
                "factors = { qd = [1, 16], direct = [false, true] }",
            ));
        };
        let mut factors = Vec::new();
        for (name, item) in table.iter() {
            if !AGENT_KEYS.contains(&name) || name == "name" {
                return Err(plan_error(
                    path,
                    &format!("factors.{name}"),
                    "not a workload key",
                    "factors are agent keys: bs, qd, threads, engine, direct, rw, pattern, size, rate, …",
                ));
            }
            let Some(levels) = item.as_array() else {
                return Err(plan_error(
                    path,
                    &format!("factors.{name}"),
                    "expected a list of levels",
                    "e.g. [1, 16]",
                ));
            };
            if levels.len() < 2 {
                return Err(plan_error(
                    path,
                    &format!("factors.{name}"),
                    "a factor needs two or more levels",
                    "add a level",
                ));
            }
            factors.push(Factor {
                name: name.to_string(),
                levels: levels.iter().map(|v| (v.clone(), level_text(v))).collect(),
            });
        }
        if factors.is_empty() {
            return Err(plan_error(path, "factors", "no factors", "factors = { qd = [1, 16] }"));
        }
        if let Some(Item::ArrayOfTables(agents)) = doc.get("agent") {
            for agent in agents.iter() {
                if let Some(f) = factors.iter().find(|f| agent.contains_key(&f.name)) {
                    return Err(plan_error(
                        path,
                        &format!("factors.{}", f.name),
                        "an [[agent]] sets this key itself, which would hide the factor",
                        "move the key to [defaults] or drop it from the agent",
                    ));
                }
            }
        }
        let plan = Plan { file: path.to_path_buf(), response, replicates, seed, factors, base: doc };
        // Every combination must make a valid job before anything runs.
        for combination in plan.combinations() {
            plan.job(&combination)?;
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
            .map_err(|e| SuiteError::Config(format!("{file}: with {}: {}", described.join(", "), e.message)))
    }

    pub fn header(&self) -> String {
        let mut cols = vec!["run_id".to_string(), "replicate".to_string()];
        cols.extend(self.factors.iter().map(|f| f.name.clone()));
        cols.extend(metric_names().iter().map(|m| m.to_string()));
        cols.push("interrupted".into());
        cols.join(",")
    }
}

/// Every metric a study row holds.
pub fn metric_names() -> Vec<&'static str> {
    COUNT_METRICS.iter().chain(REPEATED_METRICS).map(|(n, _)| *n).collect()
}

fn row(plan: &Plan, run: &PlannedRun, result: &RunResult) -> String {
    let mut cells = vec![run.run_id.to_string(), run.replicate.to_string()];
    cells.extend(plan.factors.iter().zip(&run.levels).map(|(f, &l)| csv_field(&f.levels[l].1).into_owned()));
    cells.extend(
        COUNT_METRICS.iter().chain(REPEATED_METRICS).map(|(_, read)| read(&result.aggregate).to_string()),
    );
    cells.push(result.interrupted.to_string());
    cells.join(",")
}

/// The run ids already in `csv`, after dropping a last line cut off by a crash. Errors when the
/// file belongs to another plan.
fn finished_runs(csv: &Path, header: &str) -> Result<Vec<u64>, SuiteError> {
    let err = |e: std::io::Error| SuiteError::Config(format!("{}: {e}", csv.display()));
    let Ok(file) = File::open(csv) else { return Ok(Vec::new()) };
    let mut done = Vec::new();
    let mut complete_len = 0u64;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(err)?;
        if n == 0 || !line.ends_with('\n') {
            break;
        }
        let text = line.trim_end();
        if first {
            if text != header {
                return Err(SuiteError::Config(format!(
                    "{} holds another study (its header differs from this plan's)\n  hint: give another --out file, or move this one away",
                    csv.display()
                )));
            }
            first = false;
        } else if let Some(id) = text.split(',').next().and_then(|v| v.parse().ok()) {
            done.push(id);
        }
        complete_len += n as u64;
    }
    let len = std::fs::metadata(csv).map_err(err)?.len();
    if len > complete_len {
        OpenOptions::new().write(true).open(csv).and_then(|f| f.set_len(complete_len)).map_err(err)?;
    }
    Ok(done)
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StudyOutcome {
    pub csv: String,
    pub total_runs: usize,
    pub already_done: usize,
    pub ran: usize,
    pub interrupted: bool,
}

/// Runs the plan's missing runs, appending each to `csv` as it finishes.
pub fn run_study(
    plan: &Plan,
    csv: &Path,
    policy: TargetPolicy,
    stop: &Arc<AtomicBool>,
    observer: &dyn RunObserver,
    mut on_run: impl FnMut(&PlannedRun, &RunResult, usize, usize),
) -> Result<StudyOutcome, SuiteError> {
    let header = plan.header();
    let done = finished_runs(csv, &header)?;
    let runs = plan.runs();
    let io = |e: std::io::Error| SuiteError::Config(format!("{}: {e}", csv.display()));
    let mut out = OpenOptions::new().create(true).append(true).open(csv).map_err(io)?;
    if out.metadata().map_err(io)?.len() == 0 {
        writeln!(out, "{header}").map_err(io)?;
        out.sync_data().map_err(io)?;
    }
    let todo: Vec<&PlannedRun> = runs.iter().filter(|r| !done.contains(&r.run_id)).collect();
    let mut ran = 0;
    for (i, run) in todo.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let job = plan.job(&run.levels)?;
        let opts = RunOptions {
            policy,
            stop: Arc::clone(stop),
            command: format!("doe {}", plan.file.display()),
            ..RunOptions::default()
        };
        let result = run_job(&job, &opts, observer, &LocalBarrier)?;
        if let Some(e) = &result.error {
            return Err(SuiteError::Config(format!("run {}: {e}", run.run_id)));
        }
        if result.interrupted || stop.load(Ordering::SeqCst) {
            break;
        }
        // One line per write, synced: a crash leaves at most one cut line, dropped on resume.
        writeln!(out, "{}", row(plan, run, &result)).map_err(io)?;
        out.sync_data().map_err(io)?;
        ran += 1;
        on_run(run, &result, i + 1, todo.len());
    }
    Ok(StudyOutcome {
        csv: csv.display().to_string(),
        total_runs: runs.len(),
        already_done: runs.len() - todo.len(),
        ran,
        interrupted: stop.load(Ordering::SeqCst),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<Plan, SuiteError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.toml");
        std::fs::write(&path, text).unwrap();
        Plan::load(&path)
    }

    const BASE: &str = "[defaults]\ntarget = \"/tmp/x\"\nrw = \"read\"\nengine = \"null\"\nbytes = \"64k\"\n[[agent]]\nname = \"a\"\n";

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
            p.header().split(',').take(5).collect::<Vec<_>>(),
            ["run_id", "replicate", "bs", "threads", "rate"]
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
    fn a_cut_last_line_is_dropped_and_another_study_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("d.csv");
        std::fs::write(&csv, "run_id,x\n3,1\n7,2\n9,").unwrap();
        assert_eq!(finished_runs(&csv, "run_id,x").unwrap(), [3, 7]);
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "run_id,x\n3,1\n7,2\n");
        assert!(finished_runs(&csv, "run_id,y").is_err());
    }
}
