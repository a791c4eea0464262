//! `iolens trace` and `iolens analyze`: the same summary, from a live program or a trace file.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use iolens_analyze::{emit_workload, render_summary, AnalyzeOptions, Analyzer, TraceSummary};
use iolens_engine::ownership::ScratchDir;
use iolens_import::{detect_format, import, EventSink, Format, ImportReport};
use iolens_record::event::{Excluded, IoEvent, IoOp, FLAG_IO_URING_SEEN, NO_FILE};

use crate::cli::{AnalyzeArgs, SummaryArgs, TraceArgs};
use crate::output::{check_write, write_json_or_warn, EXIT_FAILED, EXIT_USAGE};

/// Feeds imported events into the analyzer, noting the processes whose io_uring I/O was missed
/// and the files they registered to their rings.
struct Feed<'a> {
    analyzer: &'a mut Analyzer,
    io_uring_pids: BTreeSet<u32>,
    io_uring_files: BTreeSet<u32>,
}

impl EventSink for Feed<'_> {
    fn path(&mut self, id: u32, path: &str) {
        self.analyzer.path(id, path);
    }
    fn event(&mut self, e: &IoEvent) {
        if e.op == IoOp::Other && e.flags & FLAG_IO_URING_SEEN != 0 {
            self.io_uring_pids.insert(e.pid);
            if e.file != NO_FILE {
                self.io_uring_files.insert(e.file);
            }
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
    let mut feed = Feed {
        analyzer: &mut analyzer,
        io_uring_pids: Default::default(),
        io_uring_files: Default::default(),
    };
    let report = import(path, format, strict, &mut feed).map_err(|e| e.to_string())?;
    let io_uring_pids = std::mem::take(&mut feed.io_uring_pids);
    let io_uring_files: Vec<&str> =
        feed.io_uring_files.iter().filter_map(|id| analyzer.path_name(*id)).collect();
    let registered = if io_uring_files.is_empty() {
        String::new()
    } else {
        format!(" (files registered to their rings: {})", io_uring_files.join(", "))
    };
    let io_uring_note = (!io_uring_pids.is_empty()).then(|| format!(
        "process(es) {io_uring_pids:?} used io_uring{registered}: their io_uring requests bypass libc and are NOT in these figures"
    ));
    let mut summary = analyzer.finish().map_err(|e| e.to_string())?;
    summary.notes.extend(io_uring_note);
    if report.dropped > 0 {
        summary.notes.push(format!(
            "{} events were DROPPED by the tracer (buffers or the trace file could not take them): totals are too low",
            report.dropped
        ));
    }
    let excluded: Vec<String> = Excluded::ALL
        .iter()
        .zip(report.excluded)
        .filter(|(_, (calls, _))| *calls > 0)
        .map(|(reason, (calls, bytes))| format!("{calls} calls ({bytes} bytes) on {}", reason.description()))
        .collect();
    if !excluded.is_empty() {
        summary.notes.push(format!(
            "reads and writes on descriptors that are not files are left out, as Darshan does: {}",
            excluded.join("; ")
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
    say!("{}", render_summary(summary));
    if let Some(path) = &s.json {
        write_json_or_warn(path, summary);
    }
    if let Some(path) = &s.emit_workload {
        match emit_workload(summary, &s.workload_target) {
            Ok(job) => check_write(path, iolens_report::write_output(path, |w| w.write_all(job.as_bytes()))),
            Err(why) => errln!("iolens: no job file written: {why}"),
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

/// Whether `program` (resolved through PATH) is a statically linked ELF, which LD_PRELOAD
/// cannot see into.
fn is_static_binary(program: &str) -> bool {
    let path = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join(program)).find(|c| c.is_file()))
    };
    let Some(path) = path else { return false };
    // O_NONBLOCK: a FIFO named as the program must not block the open; only a regular file is
    // read, and only its first bytes.
    let Ok(file) = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut bytes = Vec::new();
    if file.take(ELF_PROBE_BYTES).read_to_end(&mut bytes).is_err() {
        return false;
    }
    elf_is_static(&bytes) == Some(true)
}

/// Bytes of a program read to judge it: the ELF header and program headers of real binaries
/// sit at its start.
const ELF_PROBE_BYTES: u64 = 64 << 10;

/// Whether a 64-bit little-endian ELF image has no `PT_INTERP` program header (is statically
/// linked). `None`, i.e. not judged, for anything else: scripts, 32-bit binaries, program
/// headers outside `bytes` or offsets that overflow.
fn elf_is_static(bytes: &[u8]) -> Option<bool> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return None;
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
    let phoff = usize::try_from(u64::from_le_bytes(bytes[32..40].try_into().ok()?)).ok()?;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    if phentsize < 4 {
        return None;
    }
    let mut has_interp = false;
    for i in 0..phnum {
        let at = i.checked_mul(phentsize)?.checked_add(phoff)?;
        let p_type = bytes.get(at..at.checked_add(4)?)?;
        has_interp |= u32::from_le_bytes(p_type.try_into().ok()?) == 3; // PT_INTERP
    }
    Some(!has_interp)
}

/// Prefix of the stream directories `trace` makes in the temporary directory. Each is a
/// [`ScratchDir`]: random name, 0700, registered with this process as holder, so the one of a
/// killed trace is removed by the next command's leftover cleaning (`iolens clean`).
const TRACE_DIR_PREFIX: &str = "iolens-trace-";

/// The stream directory: the user's (`--out`, kept), or our own temporary one (removed on drop).
enum StreamDir {
    Kept(PathBuf),
    Temp(ScratchDir),
}

impl StreamDir {
    fn path(&self) -> &Path {
        match self {
            StreamDir::Kept(p) => p,
            StreamDir::Temp(t) => t.path(),
        }
    }
}

/// Whether iolens runs in the foreground of a terminal on stdin (so the traced program, in a
/// process group of its own, must be given the terminal to read it and to get its Ctrl-C).
fn in_terminal_foreground() -> bool {
    // SAFETY: plain queries on fd 0.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// Makes `group` the terminal's foreground group. iolens may be in the background by then, and
/// a background tcsetpgrp raises SIGTTOU, so that is ignored meanwhile.
fn give_terminal(group: libc::pid_t) {
    // SAFETY: async-signal-safe calls only (also used between fork and exec).
    unsafe {
        let previous = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        libc::tcsetpgrp(0, group);
        libc::signal(libc::SIGTTOU, previous);
    }
}

/// The traced program: in its own process group (signals reach it and its children as one),
/// and killed by the kernel should iolens die without passing signals on (SIGKILL, a crash).
fn spawn_traced(cmd: &mut Command, take_terminal: bool) -> std::io::Result<std::process::Child> {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // iolens may have died before the death signal was armed: it will not come then.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("iolens exited"));
            }
            if take_terminal {
                give_terminal(libc::getpid());
            }
            Ok(())
        })
    };
    cmd.spawn()
}

pub fn trace(a: TraceArgs, command: String) -> Result<(), u8> {
    let json = a.summary.json.as_deref();
    let preload = crate::preload::locate().map_err(|e| error(&e, EXIT_FAILED, json, &command))?;
    let opts = options(&a.summary, None).map_err(|e| error(&e, EXIT_USAGE, json, &command))?;
    let dir = match &a.out {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| {
                error(&format!("cannot create {}: {e}", d.display()), EXIT_FAILED, json, &command)
            })?;
            StreamDir::Kept(d.clone())
        }
        None => StreamDir::Temp(ScratchDir::create(&std::env::temp_dir(), TRACE_DIR_PREFIX, false).map_err(
            |e| {
                let base = std::env::temp_dir();
                error(
                    &format!("cannot create a trace directory in {}: {e}", base.display()),
                    EXIT_FAILED,
                    json,
                    &command,
                )
            },
        )?),
    };
    let stream_dir = std::fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
    let ld_preload = match std::env::var("LD_PRELOAD") {
        Ok(existing) if !existing.is_empty() => format!("{}:{existing}", preload.display()),
        _ => preload.display().to_string(),
    };
    let program = &a.command[0];
    let started = Instant::now();
    let mut cmd = Command::new(program);
    cmd.args(&a.command[1..]).env("LD_PRELOAD", ld_preload).env("IOLENS_TRACE_DIR", &stream_dir);
    let take_terminal = in_terminal_foreground();
    let mut child = spawn_traced(&mut cmd, take_terminal)
        .map_err(|e| error(&format!("cannot run {program}: {e}"), EXIT_FAILED, json, &command))?;
    crate::signals::forward_to(child.id() as i32);
    let waited = child.wait();
    crate::signals::forward_to(0);
    if take_terminal {
        // SAFETY: getpgrp cannot fail.
        give_terminal(unsafe { libc::getpgrp() });
    }
    let status =
        waited.map_err(|e| error(&format!("waiting for {program}: {e}"), EXIT_FAILED, json, &command))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit little-endian ELF header with the given program-header table fields.
    fn elf(phoff: u64, phentsize: u16, phnum: u16) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[32..40].copy_from_slice(&phoff.to_le_bytes());
        b[54..56].copy_from_slice(&phentsize.to_le_bytes());
        b[56..58].copy_from_slice(&phnum.to_le_bytes());
        b
    }

    #[test]
    fn static_elf_is_judged_by_its_program_headers() {
        let mut dynamic = elf(64, 56, 2);
        dynamic.extend_from_slice(&[1u8; 56]); // PT_LOAD
        dynamic.extend_from_slice(&3u32.to_le_bytes()); // PT_INTERP
        dynamic.extend_from_slice(&[0u8; 52]);
        assert_eq!(elf_is_static(&dynamic), Some(false));
        let mut fixed = elf(64, 56, 1);
        fixed.extend_from_slice(&[1u8; 56]);
        assert_eq!(elf_is_static(&fixed), Some(true));
        assert_eq!(elf_is_static(b"#!/bin/sh\n"), None, "not an ELF: not judged");
    }

    #[test]
    fn hostile_program_headers_do_not_overflow() {
        for (phoff, phentsize, phnum) in [
            (u64::MAX, 56, 10),
            (u64::MAX - 3, u16::MAX, u16::MAX),
            (1 << 62, u16::MAX, u16::MAX),
            (64, 0, 3),
        ] {
            assert_eq!(elf_is_static(&elf(phoff, phentsize, phnum)), None, "{phoff} {phentsize} {phnum}");
        }
    }

    #[test]
    fn a_fifo_named_as_the_program_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("prog");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o700) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.to_str().unwrap().to_string();
        std::thread::spawn(move || tx.send(is_static_binary(&path)).unwrap());
        let judged = rx.recv_timeout(std::time::Duration::from_secs(20));
        if judged.is_err() {
            // Unblock the reader stuck in open() before failing.
            let _ = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo);
        }
        assert_eq!(judged, Ok(false), "a FIFO is not judged, and not read");
    }
}
