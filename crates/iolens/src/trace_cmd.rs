//! `iolens trace` and `iolens analyze`: the same summary, from a live program or a trace file.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use iolens_analyze::{
    emit_workload, export::OpExports, render_summary, AnalyzeOptions, Analyzer, ExecutableRow, PathFilter,
    TraceSummary,
};
use iolens_engine::ownership::ScratchDir;
use iolens_import::darshan::DarshanLog;
use iolens_import::{
    detect_format, import_pipelined, import_run_trace_chunked_counted, input_bytes, stream_files, EventSink,
    Format, ImportReport, ReadProgress, MERGED_STREAMS_MAX,
};
use iolens_record::event::{
    Excluded, IoEvent, IoOp, FLAG_AIO_UNCOLLECTED, FLAG_CLONE, FLAG_GO_PROGRAM, FLAG_IO_URING_SEEN,
    FLAG_NATIVE_AIO, FLAG_PROCESS_END, FLAG_PROCESS_START, FLAG_SECURE_EXEC, FLAG_STATIC_EXEC, NO_FILE,
};
use iolens_record::program::{elf_is_static, ELF_PROBE_BYTES};

use crate::cli::{AnalyzeArgs, SummaryArgs, TraceArgs};
use crate::output::{
    check_write, parquet_envelope, write_json_or_warn, ReadingLine, EXIT_FAILED, EXIT_USAGE,
};
use crate::process_tree::{DataCalls, ProcessForest};
use crate::trace_mpi::RankOfJob;

/// Why a process ran a program whose calls the preload cannot see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Untraced {
    /// Secure-execution mode: the loader ignores `LD_PRELOAD`.
    SecureExec,
    /// Statically linked: no loader.
    Static,
    /// A Go program: loaded with the preload, but its system calls bypass libc.
    Go,
}

/// Feeds imported events into the analyzer, noting the processes whose io_uring I/O was missed
/// and the files they registered to their rings.
struct Feed<'a> {
    analyzer: Analyzer,
    /// Whether the import stops at the first call out of start order (a swept reading, which
    /// is of no use past it: the trace is read again).
    stop_out_of_order: bool,
    io_uring_pids: BTreeSet<u32>,
    io_uring_files: BTreeSet<u32>,
    /// Processes that ran a program whose calls the preload does not see, that program, and why.
    untraced_execs: BTreeSet<(u32, u32, Untraced)>,
    /// POSIX aio requests never collected by `aio_return`, and the bytes they asked, by pid.
    aio_uncollected: BTreeMap<u32, (u64, u64)>,
    /// Linux native AIO requests submitted and never seen reaped, and the bytes they asked, by
    /// pid.
    native_aio: BTreeMap<u32, (u64, u64)>,
    /// Counted clones (their write halves): how many, the bytes they shared, how many failed.
    clones: Clones,
    /// `--only-exe`: the executables whose processes count (all, when empty).
    only_exe: &'a [String],
    /// The executable each process runs (its latest start marker's), by pid.
    exe_of: HashMap<u32, String>,
    executables: BTreeMap<String, ExecutableAcc>,
    /// First start and last end of the counted processes (markers and calls).
    counted_span: Option<(u64, u64)>,
    trees: ProcessForest,
    /// The process whose calls are coming, whether the selection counts it, and its data calls
    /// not yet added to its executable's and tree's rows: calls come in long runs of one
    /// process, so its rows are found once per run, not twice per call.
    run: Option<(u32, bool, DataCalls)>,
}

#[derive(Default, Clone, Copy)]
struct Clones {
    calls: u64,
    bytes: u64,
    failed: u64,
}

impl Clones {
    fn add(&mut self, write_half: &IoEvent) {
        self.calls = self.calls.saturating_add(1);
        if write_half.failed() {
            self.failed = self.failed.saturating_add(1);
        } else {
            self.bytes = self.bytes.saturating_add(write_half.requested);
        }
    }

    /// What the figures count of the clones, which moved no data; `None` without any.
    fn note(&self) -> Option<String> {
        let Clones { calls, bytes, failed } = *self;
        if calls == 0 {
            return None;
        }
        let plural = if calls == 1 { "" } else { "s" };
        let mut note =
            format!("{calls} clone{plural} (ioctl FICLONE or FICLONERANGE, which cp tries before copying): ");
        if calls > failed {
            note += &format!(
                "{:.1} MiB shared by the file system from source to destination are counted as read and written, as the program asked, though no data moved",
                bytes as f64 / (1 << 20) as f64
            );
        }
        if failed > 0 {
            let sep = if calls > failed { "; " } else { "" };
            note += &format!(
                "{sep}{failed} failed (the file system cannot clone these files; cp then copies): counted among the failed calls, with 0 bytes"
            );
        }
        Some(note)
    }
}

#[derive(Default)]
struct ExecutableAcc {
    images: u64,
    pids: BTreeSet<u32>,
    ops: u64,
    bytes: u64,
}

impl<'a> Feed<'a> {
    fn new(analyzer: Analyzer, only_exe: &'a [String]) -> Feed<'a> {
        Feed {
            analyzer,
            stop_out_of_order: false,
            io_uring_pids: Default::default(),
            io_uring_files: Default::default(),
            untraced_execs: Default::default(),
            aio_uncollected: Default::default(),
            native_aio: Default::default(),
            clones: Clones::default(),
            only_exe,
            exe_of: HashMap::new(),
            executables: BTreeMap::new(),
            counted_span: None,
            trees: ProcessForest::default(),
            run: None,
        }
    }

    /// Whether the selection counts `pid`'s calls, making it the process of the run.
    #[inline]
    fn run_of(&mut self, pid: u32) -> &mut (u32, bool, DataCalls) {
        if self.run.is_none_or(|(p, _, _)| p != pid) {
            self.start_run(pid);
        }
        self.run.as_mut().expect("started above")
    }

    #[cold]
    #[inline(never)]
    fn start_run(&mut self, pid: u32) {
        self.end_run();
        let counted = self.counts(self.exe_of.get(&pid).map(String::as_str));
        self.run = Some((pid, counted, DataCalls::default()));
    }

    /// Adds the run's data calls to its executable's and its tree's rows.
    fn end_run(&mut self) {
        let Some((pid, _, calls)) = self.run.take() else { return };
        if calls.ops == 0 {
            return;
        }
        let exe = self.exe_of.get(&pid).map_or("?", String::as_str);
        if !self.executables.contains_key(exe) {
            self.executables.insert(exe.to_string(), ExecutableAcc::default());
        }
        let acc = self.executables.get_mut(exe).expect("inserted above");
        acc.ops = acc.ops.saturating_add(calls.ops);
        acc.bytes = acc.bytes.saturating_add(calls.bytes);
        self.trees.data_calls(pid, &calls);
    }

    fn counts(&self, exe: Option<&str>) -> bool {
        self.only_exe.is_empty()
            || exe.is_some_and(|exe| {
                let name = Path::new(exe).file_name().and_then(|n| n.to_str()).unwrap_or(exe);
                self.only_exe.iter().any(|wanted| wanted == name)
            })
    }

    fn widen_span(&mut self, start: u64, end: u64) {
        let (s, e) = self.counted_span.get_or_insert((start, end));
        *s = (*s).min(start);
        *e = (*e).max(end);
    }
}

/// Adds a requests marker to its process's tally: its `requested` is the number of requests, its
/// offset their bytes.
fn add_requests(by_pid: &mut BTreeMap<u32, (u64, u64)>, e: &IoEvent) {
    let (requests, asked) = by_pid.entry(e.pid).or_default();
    *requests = requests.saturating_add(e.requested);
    *asked = asked.saturating_add(e.offset);
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
        if e.op == IoOp::Other && e.flags & FLAG_NATIVE_AIO != 0 {
            add_requests(&mut self.native_aio, e);
            return;
        }
        if e.op == IoOp::Other && e.flags & FLAG_AIO_UNCOLLECTED != 0 {
            add_requests(&mut self.aio_uncollected, e);
            return;
        }
        if e.op == IoOp::Other && e.flags & (FLAG_SECURE_EXEC | FLAG_STATIC_EXEC) != 0 {
            let why = if e.flags & FLAG_SECURE_EXEC != 0 { Untraced::SecureExec } else { Untraced::Static };
            self.untraced_execs.insert((e.pid, e.file, why));
            return;
        }
        if e.op == IoOp::Other && e.flags & FLAG_PROCESS_START != 0 && e.flags & FLAG_GO_PROGRAM != 0 {
            self.untraced_execs.insert((e.pid, e.file, Untraced::Go));
        }
        if e.op == IoOp::Other && e.flags & (FLAG_PROCESS_START | FLAG_PROCESS_END) != 0 {
            // A start marker changes the process's executable: its calls so far are the old one's.
            self.end_run();
        }
        if e.op == IoOp::Other && e.flags & FLAG_PROCESS_START != 0 {
            let exe = self.analyzer.path_name(e.file).unwrap_or("?").to_string();
            let counted = self.counts(Some(&exe));
            if counted {
                self.widen_span(e.start_ns, e.end_ns);
            }
            // The start marker's offset is the parent's pid.
            self.trees.start(e.pid, e.offset as u32, &exe, counted, e.start_ns);
            let acc = self.executables.entry(exe.clone()).or_default();
            acc.images += 1;
            acc.pids.insert(e.pid);
            self.exe_of.insert(e.pid, exe);
            return;
        }
        if e.op == IoOp::Other && e.flags & FLAG_PROCESS_END != 0 {
            self.trees.end(e.pid, e.end_ns);
            if self.counts(self.exe_of.get(&e.pid).map(String::as_str)) {
                self.widen_span(e.start_ns, e.end_ns);
            }
            return;
        }
        let data_counted = e.op.is_data() && self.analyzer.counts_file(e.file);
        let (_, counted, calls) = self.run_of(e.pid);
        let counted = *counted;
        if data_counted {
            calls.add(e.requested, counted, e.end_ns);
        }
        if !counted {
            return;
        }
        if e.op.is_data() || e.op.is_sync() {
            self.widen_span(e.start_ns, e.end_ns);
        }
        if e.flags & FLAG_CLONE != 0 && e.op == IoOp::Write && data_counted {
            self.clones.add(e);
        }
        self.analyzer.event(e);
    }
    fn stop_requested(&mut self) -> bool {
        self.analyzer.stop_requested() || (self.stop_out_of_order && !self.analyzer.in_order_so_far())
    }
}

fn error(message: &str, code: u8, json: Option<&Path>) -> u8 {
    crate::output::report_error(json, message, false, code)
}

/// Rows of the summary's tables unless the user says otherwise.
const DEFAULT_ROWS: usize = 10;

fn options(s: &SummaryArgs, program_wall_ns: Option<u64>) -> Result<AnalyzeOptions, String> {
    let block_unit = iolens_workload::parse_size(&s.block_unit).map_err(|e| format!("--block-unit: {e}"))?;
    let filter = PathFilter::new(&s.include, &s.exclude).map_err(|e| e.to_string())?;
    Ok(AnalyzeOptions {
        filter,
        block_unit: block_unit.max(1),
        top_files: s.top_files.or(s.top).unwrap_or(DEFAULT_ROWS),
        slowest: s.slowest.or(s.top).unwrap_or(DEFAULT_ROWS),
        top_processes: s.top.unwrap_or(DEFAULT_ROWS),
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
    args: &SummaryArgs,
    wall_from_markers: bool,
    command: &str,
) -> Result<(TraceSummary, ImportReport, OpExports), String> {
    let only_exe = &args.only_exe[..];
    let reading = ReadingLine::start(args.quiet, command, input_bytes(path));
    let filter_is_empty = opts.filter.is_empty();
    // A run trace's records have one size: it is read in parallel chunks unless the calls must
    // pass in order (per-op exports) or through the process selection.
    let chunked = format == Format::Iolens
        && path.is_file()
        && only_exe.is_empty()
        && opts.per_op_csv.is_none()
        && opts.per_op_parquet.is_none();
    let (report, mut feed) = if chunked {
        let mut feed = Feed::new(Analyzer::new(opts.clone()).map_err(|e| e.to_string())?, only_exe);
        let report = import_in_chunks(path, opts, &mut feed.analyzer, &reading)?;
        (report, feed)
    } else {
        import_sweeping_if_in_order(path, format, strict, opts, only_exe, &reading)?
    };
    reading.step("summarizing");
    feed.end_run();
    let io_uring_pids = std::mem::take(&mut feed.io_uring_pids);
    let untraced_execs = std::mem::take(&mut feed.untraced_execs);
    let aio_uncollected = std::mem::take(&mut feed.aio_uncollected);
    let native_aio = std::mem::take(&mut feed.native_aio);
    let clones_note = feed.clones.note();
    let executables = std::mem::take(&mut feed.executables);
    let counted_span = feed.counted_span;
    let process_trees = feed.trees.rows();
    // A Go program exits past libc, where no end marker is written: its note says so.
    let go_pids: BTreeSet<u32> =
        untraced_execs.iter().filter(|(_, _, why)| *why == Untraced::Go).map(|(pid, _, _)| *pid).collect();
    let unended: Vec<u32> = feed.trees.unended().into_iter().filter(|pid| !go_pids.contains(pid)).collect();
    let unended_note = (!unended.is_empty()).then(|| format!(
        "process(es) {unended:?} left no end marker in their streams: killed by a signal, or still running when the trace was read; the events their threads still had buffered are NOT in these figures"
    ));
    let selection_note = (!only_exe.is_empty()).then(|| only_exe_note(only_exe, &executables, &feed));
    if let (true, Some((start, end))) = (wall_from_markers || !only_exe.is_empty(), counted_span) {
        feed.analyzer.set_program_wall_ns(end.saturating_sub(start));
    }
    let io_uring_files = std::mem::take(&mut feed.io_uring_files);
    let mut analyzer = feed.analyzer;
    let io_uring_files: Vec<&str> = io_uring_files.iter().filter_map(|id| analyzer.path_name(*id)).collect();
    let registered = if io_uring_files.is_empty() {
        String::new()
    } else {
        format!(" (files registered to their rings: {})", io_uring_files.join(", "))
    };
    let io_uring_note = (!io_uring_pids.is_empty()).then(|| format!(
        "process(es) {io_uring_pids:?} used io_uring{registered}: their io_uring requests bypass libc and are NOT in these figures"
    ));
    let filtered = !filter_is_empty;
    if let Some(log) = &report.darshan {
        // A Darshan job's wall time is its runtime, not the span of its DXT segments.
        analyzer.set_program_wall_ns(log.runtime_ns());
    }
    let darshan_filter_note = (filtered && report.darshan.is_some()).then(|| {
        "the path filters apply to the DXT segments and to the tables below; the module counter totals of the log above are of every file".to_string()
    });
    let untraced_notes: Vec<String> = untraced_execs
        .into_iter()
        .map(|(pid, file, why)| {
            let program = analyzer.path_name(file).unwrap_or("?");
            match why {
                Untraced::SecureExec => format!("process {pid} ran {program} in secure-execution mode (set-user-ID or set-group-ID to another user, or file capabilities): the loader ignores LD_PRELOAD there, so it and what it starts are NOT traced"),
                Untraced::Static => format!("process {pid} ran {program}, which is statically linked: LD_PRELOAD does not reach it, so its calls are NOT traced (dynamically linked programs it starts are)"),
                Untraced::Go => format!("process {pid} ran {program}, a Go program: Go makes its system calls itself, past libc and every hook, so its file I/O is NOT traced (only what its C code calls through libc is), and it exits without the tracer's end marker"),
            }
        })
        .collect();
    let (mut summary, exports) = analyzer.finish_keeping_exports().map_err(|e| e.to_string())?;
    summary.notes.extend(selection_note);
    summary.executables = executable_rows(executables, only_exe);
    summary.process_trees = process_trees;
    summary.notes.extend(io_uring_note);
    summary.notes.extend(untraced_notes);
    summary.notes.extend(unended_note);
    summary.notes.extend(aio_uncollected.into_iter().map(|(pid, (requests, asked))| {
        format!(
            "process {pid} submitted {requests} POSIX aio request(s) ({asked} bytes asked) never collected by aio_return: what they moved is NOT in these figures"
        )
    }));
    summary.notes.extend(native_aio.into_iter().map(|(pid, (requests, asked))| {
        format!(
            "process {pid} submitted {requests} requests ({asked} bytes) through Linux native AIO (io_submit, libaio) that no hook saw reaped (taken from the completion ring in user space, or never reaped): they are NOT in these figures"
        )
    }));
    summary.notes.extend(clones_note);
    summary.notes.extend(darshan_filter_note);
    if report.dropped > 0 {
        let why = match report.drop_errno {
            Some(errno) => format!(
                "the trace directory could not take them: {}",
                std::io::Error::from_raw_os_error(errno as i32)
            ),
            None => "its buffers or the trace directory could not take them".into(),
        };
        summary.notes.push(format!(
            "{} events were DROPPED by the tracer ({why}): totals are too low",
            report.dropped
        ));
    }
    let excluded: Vec<String> = Excluded::ALL
        .iter()
        .zip(report.excluded)
        .filter(|(reason, (calls, _))| *calls > 0 && reason.is_not_a_file())
        .map(|(reason, (calls, bytes))| format!("{calls} calls ({bytes} bytes) on {}", reason.description()))
        .collect();
    if !excluded.is_empty() {
        summary.notes.push(format!(
            "reads and writes on descriptors that are not files are left out, as Darshan does: {}",
            excluded.join("; ")
        ));
    }
    let (refills, refilled) = report.excluded[Excluded::InlinedStdioRead as usize];
    let (flushes, flushed) = report.excluded[Excluded::InlinedStdioWrite as usize];
    if refills + flushes > 0 {
        summary.notes.push(format!(
            "stdio character macros the compiler inlined into the program (getc_unlocked, putc_unlocked, fread_unlocked of a constant size) make no call per character: their reads and writes are NOT in these figures. The file streams they used were refilled {refills} times with {refilled} bytes, and flushed {flushes} times when full with {flushed} bytes (a stream's last, partial buffer leaves at fclose or fflush, uncounted here)"
        ));
    }
    let (interrupted, interrupted_bytes) = report.excluded[Excluded::InterruptedRecording as usize];
    if interrupted > 0 {
        summary.notes.push(format!(
            "{interrupted} calls ({interrupted_bytes} bytes read or written) were made by signal handlers while the tracer was recording the call they interrupted: they are NOT in these figures (the calls handlers make while the program's own calls are under way are)"
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
    Ok((summary, report, exports))
}

/// Imports a trace that is not a run trace. A trace file (not a Darshan log), or a trace
/// directory of up to [`MERGED_STREAMS_MAX`] streams (read side by side, by time), is read first
/// with busy time swept as the calls come, exact when they come in start order (one thread's
/// do), then, if they do not, through a window of [`REORDER_WINDOW`] calls, as a run trace of
/// several agents is: exact when each thread's calls come in start order, and its blocks of
/// calls are within the window of each other, as the tracer writes them. A reading stops at
/// its first call out of order, and the trace is then read again, in the end with unions that
/// take any order; a trace of more streams is read with those unions at once, and so is a trace
/// whose calls must pass in order to per-op exports, which a second reading would write twice.
fn import_sweeping_if_in_order<'a>(
    path: &Path,
    format: Format,
    strict: bool,
    opts: AnalyzeOptions,
    only_exe: &'a [String],
    reading: &ReadingLine,
) -> Result<(ImportReport, Feed<'a>), String> {
    // Several processes' streams are read side by side, by time, up to a bound.
    let merged_by_time =
        path.is_file() || stream_files(path).is_ok_and(|files| files.len() <= MERGED_STREAMS_MAX);
    let exported = opts.per_op_csv.is_some() || opts.per_op_parquet.is_some();
    // Darshan's calls come file by file: the stored unions merge such runs faster than a
    // window puts them in order (131k segments: 27 against 32 ms).
    let file_by_file = matches!(format, Format::Dxt | Format::Darshan);
    if merged_by_time && !exported && !file_by_file && !opts.in_order {
        // One thread's calls come in start order, and are swept at once; several threads'
        // blocks go through the window.
        for (reorder_window, next) in
            [(0, "reading again, reordering calls"), (REORDER_WINDOW, "reading again, storing calls")]
        {
            let sweeping = AnalyzeOptions { in_order: true, reorder_window, ..opts.clone() };
            let mut feed = Feed::new(Analyzer::new(sweeping).map_err(|e| e.to_string())?, only_exe);
            feed.stop_out_of_order = true;
            let report = import_pipelined(path, format, strict, &mut feed, Some(reading.progress()))
                .map_err(|e| e.to_string())?;
            if feed.analyzer.in_order() {
                feed.stop_out_of_order = false;
                return Ok((report, feed));
            }
            reading.restart(next);
        }
    }
    let mut feed = Feed::new(Analyzer::new(opts).map_err(|e| e.to_string())?, only_exe);
    let report = import_pipelined(path, format, strict, &mut feed, Some(reading.progress()))
        .map_err(|e| e.to_string())?;
    Ok((report, feed))
}

/// Records per chunk below which a run trace is not split further.
const MIN_CHUNK_RECORDS: u64 = 1 << 20;
/// Threads reading one run trace at most.
const MAX_CHUNK_THREADS: usize = 8;
/// Chunks of a run trace per reading thread.
const CHUNKS_PER_THREAD: usize = 4;

/// An analyzer of one chunk of a run trace.
struct ChunkSink(Analyzer);

impl EventSink for ChunkSink {
    fn path(&mut self, id: u32, path: &str) {
        self.0.path(id, path);
    }
    fn event(&mut self, e: &IoEvent) {
        self.0.event(e);
    }
    fn stop_requested(&mut self) -> bool {
        // A sweep that met calls out of order is of no use: the trace is read again anyway.
        self.0.stop_requested() || !self.0.in_order_so_far()
    }
}

/// Calls a run trace's sweep lets arrive out of start order (8 MiB per union at most): agents
/// write their records in blocks of 4096, and one agent may run ahead of another.
const REORDER_WINDOW: usize = 1 << 18;

/// Reads a run trace in chunks on as many threads as there are cores, each chunk into an
/// analyzer of its own, merged in file order into `analyzer` (the same summary as one pass).
/// The first reading sweeps busy time as the calls arrive, storing nothing, which is exact when
/// they come in start order (a run trace of one agent does). If they do not, a second reading,
/// on one thread (chunks of interleaved agents would not merge exactly), sorts them within a
/// window of [`REORDER_WINDOW`] calls; if even that fails, the trace is read again with unions
/// that take any order. A reading stops at its first call out of order.
fn import_in_chunks(
    path: &Path,
    opts: AnalyzeOptions,
    analyzer: &mut Analyzer,
    reading: &ReadingLine,
) -> Result<ImportReport, String> {
    let (report, swept) =
        read_chunks(path, AnalyzeOptions { in_order: true, ..opts.clone() }, None, reading.progress())?;
    if swept.in_order() {
        *analyzer = swept;
        return Ok(report);
    }
    reading.restart("reading again, reordering calls");
    let reordering = AnalyzeOptions { in_order: true, reorder_window: REORDER_WINDOW, ..opts.clone() };
    let (report, swept) = read_chunks(path, reordering, Some(1), reading.progress())?;
    if swept.in_order() {
        *analyzer = swept;
        return Ok(report);
    }
    reading.restart("reading again, storing calls");
    let (report, stored) =
        read_chunks(path, AnalyzeOptions { in_order: false, ..opts }, None, reading.progress())?;
    *analyzer = stored;
    Ok(report)
}

/// One reading of a run trace in chunks, merged.
fn read_chunks(
    path: &Path,
    opts: AnalyzeOptions,
    threads: Option<usize>,
    progress: &ReadProgress,
) -> Result<(ImportReport, Analyzer), String> {
    let records = fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?.len()
        / iolens_record::trace::RECORD_SIZE as u64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = threads
        .unwrap_or_else(|| cores.min(MAX_CHUNK_THREADS).min((records / MIN_CHUNK_RECORDS).max(1) as usize));
    // A few chunks per thread, taken in turn, so that a thread on a slower or busier core
    // leaves more of them to the others; one per thread for the stored unions, whose memory is
    // bounded per chunk (a sweep stores nothing).
    let chunks = if threads > 1 && opts.in_order { threads * CHUNKS_PER_THREAD } else { threads };
    // Each chunk keeps the one-pass union bound, so the merge decides as one pass would whether
    // every interval is still held (and the peak in flight can be counted): memory is bounded
    // by the number of chunks, not by the trace.
    let mut parts = (0..chunks)
        .map(|_| Analyzer::new(opts.clone()).map(ChunkSink))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let report = import_run_trace_chunked_counted(path, &mut parts, threads, Some(progress))
        .map_err(|e| e.to_string())?;
    let mut parts = parts.into_iter().map(|ChunkSink(part)| part);
    let mut merged = parts.next().expect("at least one chunk");
    for part in parts {
        merged.merge(part);
    }
    Ok((report, merged))
}

/// Which processes `--only-exe` counted, and which it left out.
fn only_exe_note(only_exe: &[String], executables: &BTreeMap<String, ExecutableAcc>, feed: &Feed) -> String {
    let (mut counted, mut left_out) = (Vec::new(), Vec::new());
    for (exe, acc) in executables {
        let row = format!("{exe} (pids {:?}, {} data calls)", acc.pids, acc.ops);
        if feed.counts(Some(exe)) {
            counted.push(row);
        } else {
            left_out.push(row);
        }
    }
    if counted.is_empty() {
        return format!(
            "--only-exe {}: no traced process ran it, nothing is counted (executables seen: {})",
            only_exe.join(", "),
            left_out.join("; ")
        );
    }
    format!(
        "--only-exe {}: the figures count {}; wall time is theirs (first start to last end); left out: {}",
        only_exe.join(", "),
        counted.join("; "),
        if left_out.is_empty() { "nothing".into() } else { left_out.join("; ") }
    )
}

/// The per-executable table, most bytes first.
fn executable_rows(executables: BTreeMap<String, ExecutableAcc>, only_exe: &[String]) -> Vec<ExecutableRow> {
    let mut rows: Vec<ExecutableRow> = executables
        .into_iter()
        .map(|(exe, acc)| {
            let name = Path::new(&exe).file_name().and_then(|n| n.to_str()).unwrap_or(&exe).to_string();
            ExecutableRow {
                counted: only_exe.is_empty() || only_exe.contains(&name),
                exe,
                processes: acc.images,
                ops: acc.ops,
                bytes: acc.bytes,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.exe.cmp(&b.exe)));
    rows
}

/// The JSON of `analyze`: the summary, and a Darshan log's job and module totals beside it.
#[derive(serde::Serialize)]
struct AnalyzeJson<'a> {
    #[serde(flatten)]
    summary: &'a TraceSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    darshan: Option<&'a DarshanLog>,
}

impl iolens_report::Body for AnalyzeJson<'_> {
    fn interrupted(&self) -> bool {
        self.summary.interrupted
    }
}

/// Prints the summary and writes its files; the per-operation exports are completed with the
/// result's envelope (their Parquet metadata).
fn publish(summary: &TraceSummary, darshan: Option<&DarshanLog>, s: &SummaryArgs, exports: OpExports) {
    // The envelope serializes the whole summary: made only for files that carry it.
    if !exports.is_empty() {
        let envelope = parquet_envelope(&AnalyzeJson { summary, darshan }, None, &[]);
        if let Err((path, e)) = exports.finish(Some(&envelope)) {
            check_write(&path, Err(e));
        }
    }
    if let Some(log) = darshan {
        say!("{}", crate::darshan_view::render(log));
    }
    say!("{}", render_summary(summary));
    if let Some(path) = &s.emit_workload {
        match emit_workload(summary, &s.workload_target) {
            Ok(job) => check_write(path, iolens_report::write_output(path, |w| w.write_all(job.as_bytes()))),
            Err(why) => errln!("iolens: no job file written: {why}"),
        }
    }
    // Last: its `error` tells a file above that could not be written.
    if let Some(path) = &s.json {
        write_json_or_warn(path, &AnalyzeJson { summary, darshan });
    }
}

pub fn analyze(a: AnalyzeArgs, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    let json = a.summary.json.as_deref();
    let format = match a.format.as_str() {
        "auto" => detect_format(&a.trace)
            .map_err(|e| error(&format!("{}: {e}", a.trace.display()), EXIT_USAGE, json))?,
        other => other.parse::<Format>().map_err(|e| {
            const FORMATS: &[&str] = &["auto", "iolens", "events", "strace", "blkparse", "dxt", "darshan"];
            let near = iolens_workload::suggest(other, FORMATS).map(|k| format!(" (did you mean {k}?)"));
            error(&format!("--format: {e}{}", near.unwrap_or_default()), EXIT_USAGE, json)
        })?,
    };
    let opts = options(&a.summary, None).map_err(|e| error(&e, EXIT_USAGE, json))?;
    let opts = AnalyzeOptions { stop: Some(Arc::clone(stop)), ..opts };
    let (summary, report, exports) =
        summarize(&a.trace, format, a.strict, opts, &a.summary, false, "analyze")
            .map_err(|e| error(&e, EXIT_FAILED, json))?;
    publish(&summary, report.darshan.as_deref(), &a.summary, exports);
    Ok(())
}

/// `program` resolved through PATH, as the exec will find it.
fn resolve_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join(program)).find(|c| c.is_file()))
    }
}

/// Whether the loader runs `program` in secure-execution mode for us (set-user-ID to another
/// user, set-group-ID to another group), where it ignores LD_PRELOAD.
fn runs_in_secure_mode(program: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(meta) = resolve_program(program).and_then(|p| fs::metadata(p).ok()) else { return false };
    // SAFETY: plain queries of our own identity.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    (meta.mode() & libc::S_ISUID != 0 && meta.uid() != euid)
        || (meta.mode() & libc::S_ISGID != 0 && meta.gid() != egid)
}

/// Whether `program` (resolved through PATH) is a statically linked ELF, which LD_PRELOAD
/// cannot see into.
fn is_static_binary(program: &str) -> bool {
    let Some(path) = resolve_program(program) else { return false };
    // O_NONBLOCK: a FIFO named as the program must not block the open; only a regular file is
    // read, and only its first bytes.
    let Ok(file) = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut bytes = Vec::new();
    if file.take(ELF_PROBE_BYTES as u64).read_to_end(&mut bytes).is_err() {
        return false;
    }
    elf_is_static(&bytes) == Some(true)
}

/// The directory the busy-time union spills sorted runs into: a [`ScratchDir`] of iolens's own,
/// in this process's lease, so the one of a killed analysis is found by `iolens clean`.
pub fn registered_spill_dir(base: &Path) -> std::io::Result<iolens_analyze::SpillDir> {
    let dir = ScratchDir::create(base, "iolens-union.", false)?;
    Ok(iolens_analyze::SpillDir { path: dir.path().to_path_buf(), guard: Box::new(dir) })
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

/// Reaps the program's orphans that have exited, and lists those still running (their parent
/// is now us, the subreaper).
fn reap_and_list_orphans() -> Vec<u32> {
    // SAFETY: waitpid on our own children, without blocking.
    while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
    let me = std::process::id();
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
            fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(me)
            })
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// Refuses an `--out` directory that holds event streams already: the summary reads every
/// stream in the directory, so an earlier trace's would be added to this one's.
fn refuse_earlier_streams(dir: &Path) -> Result<(), String> {
    let earlier =
        iolens_import::stream_files(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?.len();
    if earlier > 0 {
        return Err(format!(
            "--out {}: holds {earlier} event stream(s) of an earlier trace, which this trace's summary would add to its own\n  hint: give a new or empty directory (the earlier trace: `iolens analyze {}`)",
            dir.display(),
            dir.display()
        ));
    }
    Ok(())
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

/// `iolens trace`; `mpi` when started by an MPI launcher as one rank of a job (see
/// [`crate::trace_mpi`]): rank 0 then summarizes all ranks, the others print nothing.
pub fn trace(a: TraceArgs, mpi: Option<RankOfJob>) -> Result<(), u8> {
    // Only rank 0 writes the JSON, error reports included.
    let json = a.summary.json.as_deref().filter(|_| mpi.as_ref().is_none_or(|m| m.rank == 0));
    let preload = crate::preload::locate().map_err(|e| error(&e, EXIT_FAILED, json))?;
    let opts = options(&a.summary, None).map_err(|e| error(&e, EXIT_USAGE, json))?;
    let job_dir = match &mpi {
        Some(job) => Some(job.job_dir(a.out.as_deref()).map_err(|e| error(&e, EXIT_FAILED, json))?),
        None => None,
    };
    let rank_out = match (&mpi, &job_dir) {
        (Some(job), Some((dir, _, _))) => Some(job.rank_dir(dir)),
        _ => a.out.clone(),
    };
    let dir = match &rank_out {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| error(&format!("cannot create {}: {e}", d.display()), EXIT_FAILED, json))?;
            refuse_earlier_streams(d).map_err(|e| error(&e, EXIT_USAGE, json))?;
            StreamDir::Kept(d.clone())
        }
        None => StreamDir::Temp(ScratchDir::create(&std::env::temp_dir(), TRACE_DIR_PREFIX, false).map_err(
            |e| {
                let base = std::env::temp_dir();
                error(
                    &format!("cannot create a trace directory in {}: {e}", base.display()),
                    EXIT_FAILED,
                    json,
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
    if mpi.is_some() {
        // Every rank of the job runs under iolens: the preload may measure the clocks of all.
        cmd.env("IOLENS_MPI_CLOCK", "1");
    }
    let take_terminal = in_terminal_foreground();
    // Orphans of the program (daemons) become our children: we can tell which outlive it.
    // SAFETY: a flag on this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    let mut child = spawn_traced(&mut cmd, take_terminal)
        .map_err(|e| error(&format!("cannot run {program}: {e}"), EXIT_FAILED, json))?;
    crate::signals::forward_to(child.id() as i32);
    let waited = match (&mpi, &job_dir) {
        (Some(job), Some((job_dir, _, _))) => job.wait_stopping_on_abort(&mut child, job_dir),
        _ => child.wait(),
    };
    crate::signals::forward_to(0);
    if take_terminal {
        // SAFETY: getpgrp cannot fail.
        give_terminal(unsafe { libc::getpgrp() });
    }
    let status = waited.map_err(|e| error(&format!("waiting for {program}: {e}"), EXIT_FAILED, json))?;
    let wall_ns = started.elapsed().as_nanos() as u64;
    let left_running = reap_and_list_orphans();

    let mut rank_notes = Vec::new();
    let summarized = match (&mpi, &job_dir) {
        (Some(job), Some((job_dir, _, _))) => {
            if !status.success() {
                job.mark_aborted(job_dir, &status);
            }
            crate::trace_mpi::mark_done(&stream_dir, &status);
            if job.rank != 0 {
                if job.aborted(job_dir).is_some() {
                    job.wait_for_summary(job_dir);
                }
                return exit_like(&status);
            }
            rank_notes = crate::trace_mpi::wait_for_ranks(job_dir, job.size);
            rank_notes.extend(job.aborted(job_dir).map(|first| {
                format!(
                    "{first}: the other ranks' programs were stopped (SIGTERM), as mpirun aborts such a job; what a stopped or killed program had not written out is NOT in these figures"
                )
            }));
            job_dir.clone()
        }
        _ => stream_dir.clone(),
    };
    // A job's wall time is its ranks' (first start to last end, on rank 0's clock).
    let opts = AnalyzeOptions { program_wall_ns: mpi.is_none().then_some(wall_ns), ..opts };
    let summary_or_error =
        summarize(&summarized, Format::Events, false, opts, &a.summary, mpi.is_some(), "trace");
    let rank_0_done = || {
        if let (Some(job), Some((job_dir, _, _))) = (&mpi, &job_dir) {
            job.mark_summarized(job_dir);
        }
    };
    let (mut summary, _, exports) = summary_or_error.map_err(|e| {
        rank_0_done();
        error(&e, EXIT_FAILED, json)
    })?;
    summary.notes.extend(rank_notes);
    if !left_running.is_empty() {
        summary.notes.push(format!(
            "process(es) {left_running:?}, started by {program}, were still running when it exited (daemons): what they had not written out by then is NOT in these figures"
        ));
    }
    if runs_in_secure_mode(program) {
        summary.notes.push(format!(
            "{program} runs in secure-execution mode (set-user-ID or set-group-ID to another user): the loader ignores LD_PRELOAD there, so it and what it starts are NOT traced"
        ));
    }
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
    publish(&summary, None, &a.summary, exports);
    rank_0_done();
    if let Some((job_dir, true, _)) = &job_dir {
        // The summary is written: the streams go (what iolens made there, one by one).
        let _ = iolens_engine::ownership::remove_made_dir(job_dir);
    }
    exit_like(&status)
}

/// The traced program's outcome is ours: a failing program fails the command the same way.
fn exit_like(status: &std::process::ExitStatus) -> Result<(), u8> {
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
mod spill_tests {
    use super::*;

    /// A killed analysis must leave nothing `clean` cannot find: the spill directory is in the
    /// lease on disk while it exists, and goes with its runs.
    #[test]
    fn the_unions_spill_directory_is_in_the_lease_and_goes_with_its_runs() {
        let Some(state) = iolens_engine::ownership::state_dir() else {
            panic!("no ownership registry for this test: {:?}", iolens_engine::ownership::registry_notice())
        };
        let base = tempfile::tempdir().unwrap();
        let spill = registered_spill_dir(base.path()).unwrap();
        fs::write(spill.path.join("iolens-run-0.busy"), b"runs").unwrap();
        let hex: String =
            spill.path.as_os_str().as_encoded_bytes().iter().map(|b| format!("{b:02x}")).collect();
        let leases: String = fs::read_dir(state.join("runs"))
            .unwrap()
            .filter_map(|e| fs::read_to_string(e.unwrap().path()).ok())
            .collect();
        assert!(leases.lines().any(|l| l.starts_with("d ") && l.ends_with(&hex)), "{leases}");
        let path = spill.path.clone();
        drop(spill);
        assert!(!path.exists());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
