//! The summary of a trace: imports it (in parallel chunks, sweeping busy time while the calls
//! come in order, reading again when they do not), feeds the calls to an [`Analyzer`] with the
//! process selection (`--only-exe`) and process trees, and collects what the figures leave out
//! as [`TraceNote`]s. `iolens trace` and `iolens analyze` both end here.

mod notes;
mod process_tree;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::Path;

use iolens_import::{
    import_pipelined, import_run_trace_chunked_counted, stream_files, EventSink, Format, ImportReport,
    ReadProgress, MERGED_STREAMS_MAX,
};
use iolens_record::event::{
    Excluded, IoEvent, IoOp, FLAG_AIO_UNCOLLECTED, FLAG_CLONE, FLAG_GO_PROGRAM, FLAG_IO_URING_SEEN,
    FLAG_NATIVE_AIO, FLAG_PROCESS_END, FLAG_PROCESS_START, FLAG_SECURE_EXEC, FLAG_STATIC_EXEC, NO_FILE,
};

pub use notes::{TraceNote, Untraced};
use process_tree::{DataCalls, ProcessForest};

use crate::export::OpExports;
use crate::{AnalyzeOptions, Analyzer, ExecutableRow, TraceSummary};

/// The JSON of `trace` and `analyze`: the summary, and a Darshan log's job and module totals beside it.
#[derive(serde::Serialize)]
pub struct SummaryDocument<'a> {
    #[serde(flatten)]
    pub summary: &'a TraceSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub darshan: Option<&'a iolens_import::darshan::DarshanLog>,
}

impl iolens_output::contract::Body for SummaryDocument<'_> {
    fn interrupted(&self) -> bool {
        self.summary.interrupted
    }
}

/// What reading a trace tells the person waiting: the counters the importers add to, and the
/// step under way (a second pass, summarizing). The binary shows it with
/// `iolens_report::progress::ReadingLine`.
pub trait Reading {
    /// The counters the importers add to.
    fn progress(&self) -> &ReadProgress;
    /// Now doing `what`.
    fn step(&self, what: &str);
    /// A new pass over the input: the counters start again, doing `what`.
    fn restart(&self, what: &str);
}

/// What to summarize and how it is selected.
pub struct TraceInput<'a> {
    pub path: &'a Path,
    pub format: Format,
    /// Stop at the first malformed line instead of skipping it.
    pub strict: bool,
    /// `--only-exe`: the executables whose processes count (all, when empty).
    pub only_exe: &'a [String],
    /// Whether the program's wall time is the span of its processes' markers (a trace read
    /// after the fact) rather than what the caller measured.
    pub wall_from_markers: bool,
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

    fn note(&self) -> Option<TraceNote> {
        let Clones { calls, bytes, failed } = *self;
        (calls > 0).then_some(TraceNote::Clones { calls, bytes, failed })
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

/// Imports a trace into a summary, with what its figures leave out as notes; `reading` shows
/// (and counts) how far the reading is.
pub fn summarize(
    input: &TraceInput<'_>,
    opts: AnalyzeOptions,
    reading: &dyn Reading,
) -> Result<(TraceSummary, ImportReport, OpExports), String> {
    let TraceInput { path, format, strict, only_exe, wall_from_markers } = *input;
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
        let report = import_in_chunks(path, opts, &mut feed.analyzer, reading)?;
        (report, feed)
    } else {
        import_sweeping_if_in_order(path, format, strict, opts, only_exe, reading)?
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
    let mut notes = Vec::new();
    if !only_exe.is_empty() {
        notes.push(only_exe_note(only_exe, &executables, &feed));
    }
    if let (true, Some((start, end))) = (wall_from_markers || !only_exe.is_empty(), counted_span) {
        feed.analyzer.set_program_wall_ns(end.saturating_sub(start));
    }
    let io_uring_files = std::mem::take(&mut feed.io_uring_files);
    let mut analyzer = feed.analyzer;
    if !io_uring_pids.is_empty() {
        let registered_files =
            io_uring_files.iter().filter_map(|id| analyzer.path_name(*id)).map(str::to_string).collect();
        notes.push(TraceNote::IoUring { pids: io_uring_pids, registered_files });
    }
    if let Some(log) = &report.darshan {
        // A Darshan job's wall time is its runtime, not the span of its DXT segments.
        analyzer.set_program_wall_ns(log.runtime_ns());
    }
    notes.extend(untraced_execs.into_iter().map(|(pid, file, why)| TraceNote::Untraced {
        pid,
        program: analyzer.path_name(file).unwrap_or("?").to_string(),
        why,
    }));
    if !unended.is_empty() {
        notes.push(TraceNote::Unended { pids: unended });
    }
    notes.extend(aio_uncollected.into_iter().map(|(pid, (requests, asked))| TraceNote::AioUncollected {
        pid,
        requests,
        asked,
    }));
    notes.extend(native_aio.into_iter().map(|(pid, (requests, asked))| TraceNote::NativeAioUnreaped {
        pid,
        requests,
        asked,
    }));
    notes.extend(clones_note);
    if !filter_is_empty && report.darshan.is_some() {
        notes.push(TraceNote::DarshanFilter);
    }
    notes.extend(import_notes(&report));
    let (mut summary, exports) = analyzer.finish_keeping_exports().map_err(|e| e.to_string())?;
    // After the analyzer's own notes (exports that failed, layers, mmaps).
    summary.notes.extend(notes.iter().map(TraceNote::to_string));
    summary.executables = executable_rows(executables, only_exe);
    summary.process_trees = process_trees;
    Ok((summary, report, exports))
}

/// What the importer's report says the figures leave out.
fn import_notes(report: &ImportReport) -> Vec<TraceNote> {
    let mut notes = Vec::new();
    if report.dropped > 0 {
        notes.push(TraceNote::Dropped { events: report.dropped, errno: report.drop_errno.map(|e| e as i32) });
    }
    let excluded: Vec<(u64, u64, &'static str)> = Excluded::ALL
        .iter()
        .zip(report.excluded)
        .filter(|(reason, (calls, _))| *calls > 0 && reason.is_not_a_file())
        .map(|(reason, (calls, bytes))| (calls, bytes, reason.description()))
        .collect();
    if !excluded.is_empty() {
        notes.push(TraceNote::NotFiles { excluded });
    }
    let (refills, refilled) = report.excluded[Excluded::InlinedStdioRead as usize];
    let (flushes, flushed) = report.excluded[Excluded::InlinedStdioWrite as usize];
    if refills + flushes > 0 {
        notes.push(TraceNote::InlinedStdio { refills, refilled, flushes, flushed });
    }
    let (calls, bytes) = report.excluded[Excluded::InterruptedRecording as usize];
    if calls > 0 {
        notes.push(TraceNote::InterruptedRecording { calls, bytes });
    }
    if report.malformed_count > 0 {
        let first = report.malformed.first().map(|m| (m.line, m.message.clone()));
        notes.push(TraceNote::Malformed { count: report.malformed_count, first });
    }
    notes.extend(report.notes.iter().cloned().map(TraceNote::Import));
    notes
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
    reading: &dyn Reading,
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
    reading: &dyn Reading,
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
fn only_exe_note(
    only_exe: &[String],
    executables: &BTreeMap<String, ExecutableAcc>,
    feed: &Feed,
) -> TraceNote {
    let (mut counted, mut left_out) = (Vec::new(), Vec::new());
    for (exe, acc) in executables {
        let row = format!("{exe} (pids {:?}, {} data calls)", acc.pids, acc.ops);
        if feed.counts(Some(exe)) {
            counted.push(row);
        } else {
            left_out.push(row);
        }
    }
    TraceNote::OnlyExe { only_exe: only_exe.to_vec(), counted, left_out }
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
