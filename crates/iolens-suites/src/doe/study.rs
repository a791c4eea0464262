//! Running a study: the row each run appends to the study CSV, and reading back (and resuming
//! from) a CSV this plan wrote, without ever touching a file it did not write.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{run_job, LocalBarrier, RunObserver, RunOptions, TargetPolicy};
use iolens_metrics::RunResult;
use iolens_output::csv::{csv_field, float};
use iolens_stats::csv::split_csv_line;

use super::{Plan, PlannedRun, MAX_RUNS};
use crate::repeat::{Metric, REPEATED_METRICS};
use crate::SuiteError;

/// Metrics written for every run, beyond those of [`REPEATED_METRICS`].
const COUNT_METRICS: &[Metric] =
    &[("ops", |f| f.ops as f64), ("bytes", |f| f.bytes as f64), ("moved_bytes", |f| f.moved_bytes as f64)];

/// Every metric a study row holds.
pub fn metric_names() -> Vec<&'static str> {
    COUNT_METRICS.iter().chain(REPEATED_METRICS).map(|(n, _)| *n).collect()
}

/// Whether a study metric is a whole number (a count, a latency in ns), written without a
/// decimal point; every other metric is a float, written with one (`2.0`, never `2`).
fn whole_metric(name: &str) -> bool {
    COUNT_METRICS.iter().any(|(n, _)| *n == name) || name.starts_with("lat_")
}

fn row(plan: &Plan, run: &PlannedRun, result: &RunResult) -> String {
    let mut cells = vec!["run".to_string(), run.run_id.to_string(), run.replicate.to_string()];
    cells.extend(plan.factors.iter().zip(&run.levels).map(|(f, &l)| csv_field(&f.levels[l].1).into_owned()));
    cells.extend(COUNT_METRICS.iter().chain(REPEATED_METRICS).map(|(name, read)| {
        let x = read(&result.aggregate);
        if whole_metric(name) {
            format!("{}", x as u64)
        } else {
            float(x)
        }
    }));
    cells.push(result.interrupted.to_string());
    cells.join(",")
}

/// What a study CSV already holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudyRows {
    /// Run ids of the complete rows.
    pub done: Vec<u64>,
    /// Bytes up to the end of the last complete line: a crash may leave a cut line after it.
    pub complete_len: usize,
}

fn not_this_study(csv: &str, why: impl std::fmt::Display) -> SuiteError {
    SuiteError::Config(format!(
        "{csv}: {why}; refusing to write to a file this plan did not write\n  hint: move the file away, \
         or pass another --out file"
    ))
}

/// Reads the text of a study CSV (`csv` names it in errors): the header must be `header` exactly
/// and every complete line a row of a study with `total_runs` runs. Only the last line may be
/// cut (no line end): a crash while writing it; it is not counted. Empty text is a new study.
pub fn parse_study_csv(
    text: &[u8],
    csv: &str,
    header: &str,
    total_runs: u64,
) -> Result<StudyRows, SuiteError> {
    let Some(header_end) = text.iter().position(|b| *b == b'\n') else {
        // Nothing, or the start of our header cut by a crash; anything else is not ours.
        let ours = header.as_bytes().starts_with(text);
        return if ours {
            Ok(StudyRows { done: Vec::new(), complete_len: 0 })
        } else {
            Err(not_this_study(csv, "its first line is not this plan's header"))
        };
    };
    if text[..header_end].strip_suffix(b"\r").unwrap_or(&text[..header_end]) != header.as_bytes() {
        return Err(not_this_study(csv, "its first line is not this plan's header"));
    }
    let columns = header.split(',').count();
    let id_at = header.split(',').position(|c| c == "run_id").unwrap_or(0);
    let mut done = Vec::new();
    let mut complete_len = header_end + 1;
    let mut line_no = 1;
    while let Some(len) = text[complete_len..].iter().position(|b| *b == b'\n') {
        line_no += 1;
        let line = &text[complete_len..complete_len + len];
        let row = std::str::from_utf8(line).ok().and_then(|l| split_csv_line(l.trim_end_matches('\r')).ok());
        let row = row.filter(|fields| fields.len() == columns);
        let id =
            row.as_ref().and_then(|fields| fields[id_at].parse::<u64>().ok()).filter(|id| *id < total_runs);
        let Some(id) = id else {
            return Err(not_this_study(csv, format!("line {line_no} is not a row of this study")));
        };
        done.push(id);
        complete_len += len + 1;
    }
    Ok(StudyRows { done, complete_len })
}

/// Opens the study CSV to append rows and says which runs it already holds. A new file is
/// created exclusively; an existing one must be a regular file (never a symbolic link, which is
/// not followed) that this plan wrote. Only then is a cut last line dropped.
fn open_study_csv(csv: &Path, plan: &Plan) -> Result<(File, Vec<u64>), SuiteError> {
    let name = csv.display().to_string();
    let io = |e: std::io::Error| SuiteError::Config(format!("{name}: {e}"));
    let header = plan.header();
    let flags = libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK;
    let create = OpenOptions::new().read(true).append(true).create_new(true).custom_flags(flags).open(csv);
    match create {
        Ok(mut file) => {
            writeln!(file, "{header}").and_then(|()| file.sync_data()).map_err(io)?;
            return Ok((file, Vec::new()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    let mut file = match OpenOptions::new().read(true).append(true).custom_flags(flags).open(csv) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(not_this_study(&name, "it is a symbolic link, which is not followed"))
        }
        Err(e) => return Err(io(e)),
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_this_study(&name, "it is not a regular file"));
    }
    // A full study is MAX_RUNS rows of a few hundred bytes; far more than that is not ours.
    let limit = MAX_RUNS * 4096;
    if meta.len() > limit {
        return Err(not_this_study(&name, "it is far larger than any study"));
    }
    let mut text = Vec::new();
    (&mut file).take(limit).read_to_end(&mut text).map_err(io)?;
    let rows = parse_study_csv(&text, &name, &header, plan.runs_total())?;
    if text.len() > rows.complete_len {
        file.set_len(rows.complete_len as u64).map_err(io)?;
    }
    if rows.complete_len == 0 {
        writeln!(file, "{header}").and_then(|()| file.sync_data()).map_err(io)?;
    }
    Ok((file, rows.done))
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
    let (mut out, done) = open_study_csv(csv, plan)?;
    let done: std::collections::HashSet<u64> = done.into_iter().collect();
    let runs = plan.runs();
    let io = |e: std::io::Error| SuiteError::Config(format!("{}: {e}", csv.display()));
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
    use crate::doe::tests::{plan, BASE};

    #[test]
    fn a_study_row_is_typed_floats_with_a_point_counts_and_latencies_without() {
        let p = plan(&format!("{BASE}[doe]\nfactors = {{ bs = [\"4k\", \"16k\"] }}\n")).unwrap();
        let run = p.runs()[0].clone();
        let mut result = RunResult::default();
        result.aggregate.ops = 3;
        result.aggregate.iops = 2.0;
        result.aggregate.lat_ns.summary.p50 = 100;
        let header: Vec<String> = p.header().split(',').map(String::from).collect();
        let cells: Vec<String> = row(&p, &run, &result).split(',').map(String::from).collect();
        assert_eq!(cells.len(), header.len());
        let at = |name: &str| &cells[header.iter().position(|h| h == name).unwrap()];
        assert_eq!(header[0], "row_kind");
        assert_eq!(at("row_kind"), "run");
        assert_eq!(at("ops"), "3");
        assert_eq!(at("iops"), "2.0");
        assert_eq!(at("cpu_per_op_ns"), "0.0", "a float even when whole");
        assert_eq!(at("lat_p50_ns"), "100");
        assert_eq!(at("interrupted"), "false");
    }

    #[test]
    fn a_cut_last_line_is_dropped_and_another_study_is_refused() {
        let text = b"run_id,x\n3,1\n7,2\n9,";
        let rows = parse_study_csv(text, "d.csv", "run_id,x", 10).unwrap();
        assert_eq!((rows.done, rows.complete_len), (vec![3, 7], 17));
        let e = parse_study_csv(text, "d.csv", "run_id,y", 10).unwrap_err().to_string();
        assert!(e.contains("d.csv") && e.contains("--out"), "{e}");
        assert!(
            parse_study_csv(b"run_id,x\n3,1\n12,2\n", "d.csv", "run_id,x", 10).is_err(),
            "id beyond the plan"
        );
        assert_eq!(
            parse_study_csv(b"run_i", "d.csv", "run_id,x", 10).unwrap().complete_len,
            0,
            "a cut header"
        );
        assert!(parse_study_csv(b"hello", "d.csv", "run_id,x", 10).is_err());
        let e = parse_study_csv(b"run_id,x\n3,1\nfoo bar\n", "d.csv", "run_id,x", 10).unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
    }

    fn study() -> (tempfile::TempDir, Plan) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.toml");
        std::fs::write(&path, format!("{BASE}[doe]\nfactors = {{ bs = [\"4k\", \"8k\"] }}\n")).unwrap();
        let plan = Plan::load(&path).unwrap();
        (dir, plan)
    }

    #[test]
    fn a_csv_this_plan_did_not_write_is_left_alone() {
        let (dir, plan) = study();
        let csv = dir.path().join("plan.csv");
        // No line end: the old reader took the whole file for a cut line and truncated it.
        for foreign in ["not a study, no newline", "a,b\n1,2\n", ""] {
            std::fs::write(&csv, foreign).unwrap();
            let result = open_study_csv(&csv, &plan);
            if foreign.is_empty() {
                assert!(result.is_ok(), "an empty file is a new study");
                continue;
            }
            let e = result.unwrap_err().to_string();
            assert!(e.contains("plan.csv") && e.contains("hint"), "{e}");
            assert_eq!(std::fs::read_to_string(&csv).unwrap(), foreign, "the file is untouched");
        }
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), format!("{}\n", plan.header()));
    }

    #[test]
    fn the_study_csv_is_never_reached_through_a_symlink_or_a_fifo() {
        let (dir, plan) = study();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, format!("{}\n", plan.header())).unwrap();
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = open_study_csv(&link, &plan).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let dangling = dir.path().join("dangling.csv");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(open_study_csv(&dangling, &plan).is_err());
        assert!(!dir.path().join("nowhere").exists(), "no file created through the link");
        let fifo = dir.path().join("fifo.csv");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_study_csv(&fifo, &plan).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_study_resumes_from_its_own_csv() {
        let (dir, plan) = study();
        let csv = dir.path().join("plan.csv");
        let row = format!("run,1,1,8k{}", ",0".repeat(plan.header().split(',').count() - 4));
        std::fs::write(&csv, format!("{}\n{row}\nrun,0,1,4k,cut", plan.header())).unwrap();
        let (_, done) = open_study_csv(&csv, &plan).unwrap();
        assert_eq!(done, [1]);
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), format!("{}\n{row}\n", plan.header()));
    }
}
