//! `iolens trace` and `iolens analyze`: the same summary, from a live program or a trace file.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use iolens_analyze::{emit_workload, render_summary, AnalyzeOptions, Analyzer, TraceSummary};
use iolens_import::{detect_format, import, EventSink, Format, ImportReport};
use iolens_record::event::{IoEvent, IoOp};

use crate::cli::{AnalyzeArgs, SummaryArgs, TraceArgs};
use crate::output::{write_json_or_warn, EXIT_FAILED, EXIT_USAGE};

const PRELOAD_NAME: &str = "libiolens_preload.so";

/// Event flag set by the preload on a marker event: the process used io_uring.
const FLAG_IO_URING_SEEN: u16 = 1;

/// Feeds imported events into the analyzer, noting the processes whose io_uring I/O was missed.
struct Feed<'a> {
    analyzer: &'a mut Analyzer,
    io_uring_pids: std::collections::BTreeSet<u32>,
}

impl EventSink for Feed<'_> {
    fn path(&mut self, id: u32, path: &str) {
        self.analyzer.path(id, path);
    }
    fn event(&mut self, e: &IoEvent) {
        if e.op == IoOp::Other && e.flags & FLAG_IO_URING_SEEN != 0 {
            self.io_uring_pids.insert(e.pid);
            return;
        }
        self.analyzer.event(e);
    }
    fn stop_requested(&mut self) -> bool {
        self.analyzer.stop_requested()
    }
}

fn error(message: &str, code: u8, json: Option<&Path>, command: &str) -> u8 {
    crate::output::report_error(json, command, message, false, code)
}

fn options(s: &SummaryArgs, program_wall_ns: Option<u64>) -> Result<AnalyzeOptions, String> {
    let block_unit = iolens_workload::parse_size(&s.block_unit).map_err(|e| format!("--block-unit: {e}"))?;
    Ok(AnalyzeOptions {
        block_unit: block_unit.max(1),
        top: s.top,
        program_wall_ns,
        per_op_csv: s.csv.clone(),
        per_op_parquet: s.parquet.clone(),
        ..AnalyzeOptions::default()
    })
}

/// Imports `path` into a summary, with the importer's findings as notes.
fn summarize(
    path: &Path,
    format: Format,
    strict: bool,
    opts: AnalyzeOptions,
) -> Result<(TraceSummary, ImportReport), String> {
    let mut analyzer = Analyzer::new(opts).map_err(|e| e.to_string())?;
    let mut feed = Feed { analyzer: &mut analyzer, io_uring_pids: Default::default() };
    let report = import(path, format, strict, &mut feed).map_err(|e| e.to_string())?;
    let io_uring_pids = std::mem::take(&mut feed.io_uring_pids);
    let mut summary = analyzer.finish().map_err(|e| e.to_string())?;
    if !io_uring_pids.is_empty() {
        summary.notes.push(format!(
            "process(es) {io_uring_pids:?} used io_uring: their io_uring requests bypass libc and are NOT in these figures"
        ));
    }
    if report.dropped > 0 {
        summary.notes.push(format!(
            "{} events were DROPPED by the tracer (buffers or the trace file could not take them): totals are too low",
            report.dropped
        ));
    }
    if report.malformed_count > 0 {
        let first = report.malformed.first().map(|m| format!(" (first at line {}: {})", m.line, m.message));
        summary.notes.push(format!(
            "{} malformed lines skipped{}",
            report.malformed_count,
            first.unwrap_or_default()
        ));
    }
    summary.notes.extend(report.notes.iter().cloned());
    Ok((summary, report))
}

fn publish(summary: &TraceSummary, s: &SummaryArgs) {
    print!("{}", render_summary(summary));
    if let Some(path) = &s.json {
        write_json_or_warn(path, summary);
    }
    if let Some(path) = &s.emit_workload {
        match emit_workload(summary, &s.workload_target) {
            Ok(job) => {
                if let Err(e) = std::fs::write(path, job) {
                    eprintln!("iolens: error: cannot write {}: {e}", path.display());
                }
            }
            Err(why) => eprintln!("iolens: no job file written: {why}"),
        }
    }
}

pub fn analyze(a: AnalyzeArgs, stop: &Arc<AtomicBool>, command: String) -> Result<(), u8> {
    let json = a.summary.json.as_deref();
    let format = match a.format.as_str() {
        "auto" => detect_format(&a.trace)
            .map_err(|e| error(&format!("{}: {e}", a.trace.display()), EXIT_USAGE, json, &command))?,
        other => other
            .parse::<Format>()
            .map_err(|e| error(&format!("--format: {e}"), EXIT_USAGE, json, &command))?,
    };
    let opts = options(&a.summary, None).map_err(|e| error(&e, EXIT_USAGE, json, &command))?;
    let opts = AnalyzeOptions { stop: Some(Arc::clone(stop)), ..opts };
    let (summary, _) =
        summarize(&a.trace, format, a.strict, opts).map_err(|e| error(&e, EXIT_FAILED, json, &command))?;
    publish(&summary, &a.summary);
    Ok(())
}

/// The preload library: `IOLENS_PRELOAD`, or next to this executable.
fn find_preload() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("IOLENS_PRELOAD") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate the iolens executable: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join(PRELOAD_NAME), dir.join("deps").join(PRELOAD_NAME)]
        .into_iter()
        .find(|p| p.exists())
        .ok_or_else(|| {
            format!(
                "{PRELOAD_NAME} not found next to {}\n  hint: build it with `cargo build --release -p iolens-preload` (or set IOLENS_PRELOAD)",
                exe.display()
            )
        })
}

/// Whether `program` (resolved through PATH) is a statically linked ELF, which LD_PRELOAD
/// cannot see into.
fn is_static_binary(program: &str) -> bool {
    let path = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join(program)).find(|c| c.is_file()))
    };
    let Some(bytes) = path.and_then(|p| std::fs::read(p).ok()) else { return false };
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return false; // scripts and 32-bit binaries: not judged
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
    let phoff = u64::from_le_bytes(bytes[32..40].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    let has_interp = (0..phnum).any(|i| {
        let at = phoff + i * phentsize;
        bytes.get(at..at + 4).is_some_and(|t| u32::from_le_bytes(t.try_into().unwrap()) == 3)
        // PT_INTERP
    });
    !has_interp
}

/// Removes the stream directory unless the user asked to keep it.
struct StreamDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for StreamDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

pub fn trace(a: TraceArgs, command: String) -> Result<(), u8> {
    let json = a.summary.json.as_deref();
    let preload = find_preload().map_err(|e| error(&e, EXIT_FAILED, json, &command))?;
    let opts = options(&a.summary, None).map_err(|e| error(&e, EXIT_USAGE, json, &command))?;
    let dir = match &a.out {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| {
                error(&format!("cannot create {}: {e}", d.display()), EXIT_FAILED, json, &command)
            })?;
            StreamDir { path: d.clone(), keep: true }
        }
        None => {
            let d = std::env::temp_dir().join(format!("iolens-trace-{}", std::process::id()));
            std::fs::create_dir_all(&d).map_err(|e| {
                error(&format!("cannot create {}: {e}", d.display()), EXIT_FAILED, json, &command)
            })?;
            StreamDir { path: d, keep: false }
        }
    };
    let stream_dir = std::fs::canonicalize(&dir.path).unwrap_or_else(|_| dir.path.clone());
    let ld_preload = match std::env::var("LD_PRELOAD") {
        Ok(existing) if !existing.is_empty() => format!("{}:{existing}", preload.display()),
        _ => preload.display().to_string(),
    };
    let program = &a.command[0];
    let started = Instant::now();
    let status = Command::new(program)
        .args(&a.command[1..])
        .env("LD_PRELOAD", ld_preload)
        .env("IOLENS_TRACE_DIR", &stream_dir)
        .status()
        .map_err(|e| error(&format!("cannot run {program}: {e}"), EXIT_FAILED, json, &command))?;
    let wall_ns = started.elapsed().as_nanos() as u64;

    let opts = AnalyzeOptions { program_wall_ns: Some(wall_ns), ..opts };
    let (mut summary, _) = summarize(&stream_dir, Format::Events, false, opts)
        .map_err(|e| error(&e, EXIT_FAILED, json, &command))?;
    if is_static_binary(program) {
        summary.notes.push(format!(
            "{program} is statically linked: LD_PRELOAD cannot see its calls (only dynamically linked children are traced)"
        ));
    }
    match status.code() {
        Some(0) => {}
        Some(code) => summary.notes.push(format!("{program} exited with status {code}")),
        None => {
            summary.notes.push(format!("{program} was killed by a signal: its last buffered events are lost"))
        }
    }
    publish(&summary, &a.summary);
    // The traced program's outcome is ours: a failing program fails the command the same way.
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(code.clamp(1, 255) as u8),
        None => {
            use std::os::unix::process::ExitStatusExt;
            Err((128 + status.signal().unwrap_or(0)).clamp(1, 255) as u8)
        }
    }
}
