//! iolens's own formats: run traces (`IOLTRACE`) and event streams (`IOLEVT02`, and `IOLEVT01`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use iolens_record::event::{EventError, EventReader, IoEvent, IoOp, Layer, NO_FILE};
use iolens_record::trace::{OpKind, OpRecord, OpStatus, TraceError, TraceReader, RECORD_SIZE};

use crate::mpi_clock::{read_beside, RankClock};
use crate::{Counted, Ctx, ImportError};

pub(crate) fn import_run_trace(ctx: &mut Ctx, input: impl Read) -> Result<(), ImportError> {
    let path = ctx.path.clone();
    let mut reader = TraceReader::new(BufReader::with_capacity(ctx.read_buffer_bytes, input))
        .map_err(|e| ctx.format_err(&path, e))?;
    let ids: Vec<u32> = std::mem::take(&mut reader.streams).iter().map(|name| ctx.new_path(name)).collect();
    loop {
        if ctx.should_stop() {
            return Ok(());
        }
        let rec = match reader.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => return Ok(()),
            // A run killed mid-write leaves a partial last record: what precedes it is sound.
            Err(TraceError::Truncated { offset, bytes }) => {
                ctx.report.notes.push(truncated_note(offset, bytes));
                return Ok(());
            }
            Err(e) => return Err(ctx.format_err(&path, e)),
        };
        ctx.event(&event_of_record(&rec, ids.get(rec.stream as usize).copied().unwrap_or(NO_FILE)));
    }
}

pub(crate) fn truncated_note(offset: u64, bytes: usize) -> String {
    format!(
        "the trace is truncated at offset {offset} ({bytes} of a {RECORD_SIZE}-byte record): the records before it are analysed"
    )
}

/// A run-trace record as an event: one process, a thread and a file per stream (agent).
#[inline]
pub(crate) fn event_of_record(rec: &OpRecord, file: u32) -> IoEvent {
    let op = match rec.kind {
        OpKind::Read => IoOp::Read,
        OpKind::Write => IoOp::Write,
        OpKind::Fsync => IoOp::Fsync,
        OpKind::Close => IoOp::Close,
    };
    let result = match rec.status {
        OpStatus::Error => -(libc::EIO as i64),
        _ => rec.bytes as i64,
    };
    IoEvent {
        pid: 0,
        tid: rec.stream as u32,
        file,
        op,
        layer: Layer::Posix,
        flags: 0,
        offset: rec.offset,
        requested: rec.bytes as u64,
        result,
        start_ns: rec.start_ns,
        end_ns: rec.end_ns,
    }
}

/// The stream files of an `iolens trace` directory, in name order: its own, those of
/// processes that changed user (in `uid-<uid>` subdirectories), and those of the ranks of an
/// MPI job traced by `mpirun … iolens trace` (in `rank-<r>` subdirectories, each of which may
/// have `uid-<uid>` ones).
pub fn stream_files(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    collect_streams(dir, 0, &mut files)?;
    files.sort();
    Ok(files)
}

/// Bytes a reading of `path` reads: the file's, or the stream files' of a trace directory (0
/// when they cannot be listed: the import says why).
pub fn input_bytes(path: &Path) -> u64 {
    if path.is_dir() {
        stream_files(path)
            .map_or(0, |files| files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum())
    } else {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }
}

fn collect_streams(dir: &Path, depth: u32, files: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)?.filter_map(|e| e.ok()) {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_str().unwrap_or_default();
        let nested = (name.starts_with("uid-") || (depth == 0 && name.starts_with("rank-")))
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if nested && depth < 2 {
            collect_streams(&path, depth + 1, files)?;
        } else if is_stream(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn is_stream(path: &Path) -> bool {
    path.is_file() && path.extension().is_some_and(|x| x == "evt")
}

/// How a stream file ended.
enum StreamEnd {
    Whole,
    /// Inside the frame at this offset.
    Cut(u64),
    /// It has no bytes: not even the header was written.
    Empty,
}

/// One event stream being read: its events with the trace's path ids, an MPI rank's put on
/// rank 0's clock.
struct StreamCursor<'p, R: Read> {
    reader: EventReader<BufReader<R>>,
    file: &'p Path,
    clock: Option<&'p RankClock>,
    /// Path ids are local to each stream: mapped to global ones when first used. Threads flush
    /// their buffers in any order, so ids need not be defined in increasing order.
    global: HashMap<u32, u32>,
    /// The last id mapped: calls come in runs on one file.
    last: Option<(u32, u32)>,
    end: StreamEnd,
}

impl<'p, R: Read> StreamCursor<'p, R> {
    /// A cursor at the start of `input`, or how the stream ended when it has no bytes.
    fn open(
        ctx: &mut Ctx,
        input: R,
        file: &'p Path,
        clock: Option<&'p RankClock>,
    ) -> Result<Result<StreamCursor<'p, R>, StreamEnd>, ImportError> {
        let mut input = BufReader::with_capacity(ctx.read_buffer_bytes, input);
        if input.fill_buf().map_err(|e| ImportError::Io { path: file.to_path_buf(), source: e })?.is_empty() {
            return Ok(Err(StreamEnd::Empty));
        }
        let reader = EventReader::new(input).map_err(|e| ctx.format_err(file, e))?;
        Ok(Ok(StreamCursor {
            reader,
            file,
            clock,
            global: HashMap::new(),
            last: None,
            end: StreamEnd::Whole,
        }))
    }

    /// The next event, None at the end of the stream (or where it is cut).
    #[inline]
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<IoEvent>, ImportError> {
        let mut e = match self.reader.next_event() {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(None),
            Err(EventError::Truncated { offset }) => {
                self.end = StreamEnd::Cut(offset);
                return Ok(None);
            }
            Err(e) => return Err(ctx.format_err(self.file, e)),
        };
        if e.file != NO_FILE {
            let local = e.file;
            e.file = match self.last {
                Some((l, id)) if l == local => id,
                _ => match self.global.get(&local) {
                    Some(&id) => id,
                    None => match self.reader.paths.get(local) {
                        Some(p) => {
                            let id = ctx.new_path(p);
                            self.global.insert(local, id);
                            id
                        }
                        // Not defined (yet): the call is on no known file.
                        None => NO_FILE,
                    },
                },
            };
            if e.file != NO_FILE {
                self.last = Some((local, e.file));
            }
        }
        if let Some(clock) = self.clock {
            e.start_ns = clock.to_rank0(e.start_ns);
            e.end_ns = clock.to_rank0(e.end_ns);
        }
        Ok(Some(e))
    }

    /// Adds what the writer counted (drops, calls left out) to the report; how the stream ended.
    fn finish(self, ctx: &mut Ctx) -> StreamEnd {
        ctx.report.dropped = ctx.report.dropped.saturating_add(self.reader.dropped);
        ctx.report.drop_errno = self.reader.lost_errno.or(ctx.report.drop_errno);
        for (total, (calls, bytes)) in ctx.report.excluded.iter_mut().zip(self.reader.excluded) {
            *total = (total.0.saturating_add(calls), total.1.saturating_add(bytes));
        }
        self.end
    }
}

/// Reads one event stream; an MPI rank's events are put on rank 0's clock.
fn import_stream(
    ctx: &mut Ctx,
    input: impl Read,
    file: &Path,
    clock: Option<&RankClock>,
) -> Result<StreamEnd, ImportError> {
    let mut cursor = match StreamCursor::open(ctx, input, file, clock)? {
        Ok(cursor) => cursor,
        Err(end) => return Ok(end),
    };
    while !ctx.should_stop() {
        match cursor.next(ctx)? {
            Some(e) => ctx.event(&e),
            None => break,
        }
    }
    Ok(cursor.finish(ctx))
}

/// Streams read side by side at most: each holds a descriptor and a read buffer.
pub const MERGED_STREAMS_MAX: usize = 256;
/// Read buffer of each stream read side by side.
const MERGED_READ_BUFFER: usize = 64 * 1024;

/// Reads the streams of several processes side by side, each time the event that starts
/// first among the next of each: the events come nearly in start order (each stream's threads
/// still interleave by blocks), as one stream's do, so the busy time can be swept.
fn import_streams_merged(
    ctx: &mut Ctx,
    files: &[std::path::PathBuf],
    clocks: &[Option<RankClock>],
    ends: &mut Vec<(std::path::PathBuf, StreamEnd)>,
) -> Result<(), ImportError> {
    // Each stream's cursor, or how it ended when it had no bytes.
    let mut cursors = Vec::with_capacity(files.len());
    let mut heads = Vec::with_capacity(files.len());
    ctx.read_buffer_bytes = MERGED_READ_BUFFER;
    for (file, clock) in files.iter().zip(clocks) {
        let f = std::fs::File::open(file).map_err(|e| ImportError::Io { path: file.clone(), source: e })?;
        let mut cursor = StreamCursor::open(ctx, Counted::new(f, ctx.progress), file, clock.as_ref())?;
        heads.push(match &mut cursor {
            Ok(cursor) => cursor.next(ctx)?,
            Err(_) => None,
        });
        cursors.push(cursor);
    }
    // The streams by the start of their next call (ties: the earlier stream first).
    let mut by_start: BinaryHeap<Reverse<(u64, usize)>> =
        heads.iter().enumerate().filter_map(|(i, h)| h.as_ref().map(|e| Reverse((e.start_ns, i)))).collect();
    while !ctx.should_stop() {
        let Some(Reverse((_, i))) = by_start.pop() else { break };
        let Some(e) = heads[i].take() else { continue };
        ctx.event(&e);
        if let Ok(cursor) = &mut cursors[i] {
            heads[i] = cursor.next(ctx)?;
            if let Some(next) = &heads[i] {
                by_start.push(Reverse((next.start_ns, i)));
            }
        }
    }
    for (file, cursor) in files.iter().zip(cursors) {
        let end = match cursor {
            Ok(cursor) => cursor.finish(ctx),
            Err(end) => end,
        };
        ends.push((file.clone(), end));
    }
    Ok(())
}

/// Notes streams cut inside a frame, and empty ones.
fn note_stream_ends(ctx: &mut Ctx, ends: Vec<(std::path::PathBuf, StreamEnd)>) {
    let mut cut = Vec::new();
    let mut empty = Vec::new();
    for (file, end) in ends {
        match end {
            StreamEnd::Whole => {}
            StreamEnd::Cut(offset) => cut.push((file, offset)),
            StreamEnd::Empty => empty.push(file),
        }
    }
    note_cut_streams(ctx, &cut);
    if let Some(first) = empty.first() {
        ctx.report.notes.push(format!(
            "{} event stream(s) are empty (first: {}): their processes could not write even the stream header (a full disk?) or were killed at once; what they did is NOT in these figures",
            empty.len(),
            first.display()
        ));
    }
}

fn note_cut_streams(ctx: &mut Ctx, cut: &[(std::path::PathBuf, u64)]) {
    if let Some((file, offset)) = cut.first() {
        ctx.report.notes.push(format!(
            "{} event stream(s) end inside a frame (first: {} at offset {offset}): a process was killed mid-write; the events before the cut are analysed",
            cut.len(),
            file.display()
        ));
    }
}

/// One event stream read from `input`.
pub(crate) fn import_event_file(ctx: &mut Ctx, input: impl Read) -> Result<(), ImportError> {
    let file = ctx.path.clone();
    let end = import_stream(ctx, input, &file, None)?;
    note_stream_ends(ctx, vec![(file, end)]);
    Ok(())
}

/// A stream file, or the directory of them `iolens trace` writes.
pub(crate) fn import_events(ctx: &mut Ctx) -> Result<(), ImportError> {
    let root = ctx.path.clone();
    let files = if root.is_dir() { stream_files(&root).map_err(|e| ctx.io(e))? } else { vec![root.clone()] };
    let mut ends = Vec::new();
    let mut ranks = Vec::new();
    // The clock files first: rank 0's kernel tells which ranks share its clock.
    let mut clocks = files.iter().map(|f| read_beside(f)).collect::<Result<Vec<_>, _>>()?;
    let rank0_boot = clocks.iter().flatten().find(|c| c.rank == 0).and_then(|c| c.boot.clone());
    for clock in clocks.iter_mut().flatten() {
        clock.align_with(rank0_boot.as_deref());
    }
    if (2..=MERGED_STREAMS_MAX).contains(&files.len()) {
        import_streams_merged(ctx, &files, &clocks, &mut ends)?;
        ranks.extend(clocks.into_iter().flatten());
    } else {
        for (file, clock) in files.into_iter().zip(clocks) {
            if ctx.report.interrupted {
                break;
            }
            let f =
                std::fs::File::open(&file).map_err(|e| ImportError::Io { path: file.clone(), source: e })?;
            ctx.read_buffer_bytes = crate::read_buffer_bytes(&f);
            let end = import_stream(ctx, Counted::new(f, ctx.progress), &file, clock.as_ref())?;
            ends.push((file, end));
            ranks.extend(clock);
        }
    }
    note_stream_ends(ctx, ends);
    note_mpi_ranks(ctx, &ranks);
    Ok(())
}

/// Whether every rank's clock file names its kernel (and so, after alignment, the ranks without
/// measurements share rank 0's clock).
fn rank_boots_known(ranks: &[RankClock]) -> bool {
    let boots: std::collections::BTreeSet<Option<&str>> = ranks.iter().map(|r| r.boot.as_deref()).collect();
    boots.len() == 1 && boots.iter().all(Option::is_some)
}

/// Says which MPI ranks the trace holds, how their clocks were aligned, and which are missing.
fn note_mpi_ranks(ctx: &mut Ctx, ranks: &[RankClock]) {
    let Some(size) = ranks.iter().map(|r| r.size).max() else { return };
    let seen: std::collections::BTreeSet<u32> = ranks.iter().map(|r| r.rank).collect();
    let largest = ranks.iter().map(RankClock::largest_offset).max().unwrap_or(0);
    let clocks = if size == 1 {
        String::new()
    } else if ranks.iter().any(RankClock::measured) {
        format!(
            "; every rank's events are on rank 0's clock (offsets measured by ping-pong at MPI_Init and MPI_Finalize, largest {:.1} us; ranks on rank 0's node share its clock)",
            largest as f64 / 1e3
        )
    } else if rank_boots_known(ranks) {
        "; all ranks ran on one node, under one clock".to_string()
    } else {
        "; clock offsets between ranks were not measured (set IOLENS_MPI_CLOCK=1 for the job when every rank is traced; `mpirun … iolens trace` does): right on one node, whose ranks share a clock, but ranks of other nodes may be shifted".to_string()
    };
    ctx.report.notes.push(format!("MPI job of {size} rank(s): {} traced{clocks}", seen.len()));
    let missing: Vec<u32> = (0..size).filter(|r| !seen.contains(r)).take(20).collect();
    if !missing.is_empty() {
        ctx.report.notes.push(format!(
            "MPI ranks {missing:?}{} left no stream in the trace directory: their I/O is NOT in these figures (on several nodes, give `--out` a directory on a shared file system)",
            if size as usize - seen.len() > missing.len() { " and more" } else { "" }
        ));
    }
}

#[cfg(test)]
mod tests {
    use iolens_record::event::EventWriter;

    use super::*;
    use crate::testing::Collect;
    use crate::{import, Format};

    fn ev(file: u32, op: IoOp, start: u64) -> IoEvent {
        IoEvent {
            pid: 7,
            tid: 7,
            file,
            op,
            layer: Layer::Posix,
            flags: 0,
            offset: 0,
            requested: 10,
            result: 10,
            start_ns: start,
            end_ns: start + 5,
        }
    }

    #[test]
    fn stream_directories_get_global_path_ids() {
        let dir = tempfile::tempdir().unwrap();
        for (name, paths) in [("1.1.evt", ["/a", "/b"]), ("2.1.evt", ["/c", "/a"])] {
            let mut w = EventWriter::new(Vec::new()).unwrap();
            w.path(0, paths[0]).unwrap();
            w.event(&ev(0, IoOp::Read, 1)).unwrap();
            w.path(1, paths[1]).unwrap();
            w.event(&ev(1, IoOp::Write, 2)).unwrap();
            w.dropped(2).unwrap();
            w.excluded(iolens_record::event::Excluded::PipeOrSocket, 5, 10).unwrap();
            std::fs::write(dir.path().join(name), w.into_inner()).unwrap();
        }
        std::fs::write(dir.path().join("ignored.txt"), "x").unwrap();
        let mut c = Collect::default();
        let r = import(dir.path(), Format::Events, false, &mut c).unwrap();
        assert_eq!(r.events, 4);
        assert_eq!(r.dropped, 4);
        assert_eq!(r.excluded[0], (10, 20), "excluded calls of both streams");
        let files: Vec<&str> = c.events.iter().map(|e| c.path_of(e.file)).collect();
        // The streams are read side by side, by the start of their next call.
        assert_eq!(files, ["/a", "/c", "/b", "/a"]);
        assert_eq!(c.paths.len(), 3, "one id per path name over the import, /a shared by both streams");
        assert_eq!(c.events[0].file, c.events[3].file);
    }

    #[test]
    fn streams_of_several_processes_are_read_side_by_side_by_time() {
        let dir = tempfile::tempdir().unwrap();
        for (name, starts) in [("1.1.evt", &[0u64, 10, 20, 21][..]), ("2.1.evt", &[5, 15, 16])] {
            let mut w = EventWriter::new(Vec::new()).unwrap();
            w.path(0, name).unwrap();
            for &start in starts {
                w.event(&IoEvent { start_ns: start, end_ns: start + 1, ..ev(0, IoOp::Read, 0) }).unwrap();
            }
            std::fs::write(dir.path().join(name), w.into_inner()).unwrap();
        }
        std::fs::write(dir.path().join("3.1.evt"), b"").unwrap();
        let mut c = Collect::default();
        let r = import(dir.path(), Format::Events, false, &mut c).unwrap();
        let starts: Vec<u64> = c.events.iter().map(|e| e.start_ns).collect();
        assert_eq!(starts, [0, 5, 10, 15, 16, 20, 21]);
        let files: Vec<&str> = c.events.iter().map(|e| c.path_of(e.file)).collect();
        assert_eq!(files, ["1.1.evt", "2.1.evt", "1.1.evt", "2.1.evt", "2.1.evt", "1.1.evt", "1.1.evt"]);
        assert!(r.notes.iter().any(|n| n.contains("1 event stream(s) are empty")), "{:?}", r.notes);
    }

    #[test]
    fn mpi_ranks_are_put_on_rank_0s_clock_and_missing_ranks_named() {
        let dir = tempfile::tempdir().unwrap();
        for (name, clock) in
            [("10.1", "rank 0 size 3\n"), ("11.1", "rank 1 size 3\ninit 0 1000\nfinalize 1000 3000\n")]
        {
            let mut w = EventWriter::new(Vec::new()).unwrap();
            w.path(0, "/shared").unwrap();
            w.event(&ev(0, IoOp::Write, 500)).unwrap();
            std::fs::write(dir.path().join(format!("{name}.evt")), w.into_inner()).unwrap();
            std::fs::write(dir.path().join(format!("{name}.mpi")), clock).unwrap();
        }
        let mut c = Collect::default();
        let r = import(dir.path(), Format::Events, false, &mut c).unwrap();
        let times: Vec<(u64, u64)> = c.events.iter().map(|e| (e.start_ns, e.end_ns)).collect();
        assert_eq!(times, [(500, 505), (2500, 2515)], "rank 1 shifted by its interpolated offset");
        assert!(r.notes.iter().any(|n| n.contains("MPI job of 3 rank(s): 2 traced")), "{:?}", r.notes);
        assert!(r.notes.iter().any(|n| n.contains("MPI ranks [2] left no stream")), "{:?}", r.notes);

        std::fs::write(dir.path().join("11.1.mpi"), "rank 1 size 3\nstart 0 1\n").unwrap();
        let err = import(dir.path(), Format::Events, false, &mut Collect::default()).unwrap_err().to_string();
        assert!(err.contains("11.1.mpi:2: unknown key `start`"), "{err}");
    }

    #[test]
    fn path_ids_defined_out_of_order_resolve() {
        // Threads flush their buffers in the order they end, so a stream may define id 3
        // before ids 1 and 2.
        let dir = tempfile::tempdir().unwrap();
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.path(3, "/t3").unwrap();
        w.event(&ev(3, IoOp::Write, 1)).unwrap();
        w.path(1, "/t1").unwrap();
        w.event(&ev(1, IoOp::Write, 2)).unwrap();
        w.path(2, "/t2").unwrap();
        w.event(&ev(2, IoOp::Write, 3)).unwrap();
        w.event(&ev(1, IoOp::Write, 4)).unwrap();
        std::fs::write(dir.path().join("9.1.evt"), w.into_inner()).unwrap();
        let mut c = Collect::default();
        import(dir.path(), Format::Events, false, &mut c).unwrap();
        let files: Vec<&str> = c.events.iter().map(|e| c.path_of(e.file)).collect();
        assert_eq!(files, ["/t3", "/t1", "/t2", "/t1"]);
    }

    #[test]
    fn run_trace_cut_inside_its_last_record_keeps_the_records_before() {
        use iolens_record::trace::{OpRecord, TraceWriter, RECORD_SIZE};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.iolt");
        let writer = TraceWriter::create(&path, &["agent0".into()]).unwrap();
        let mut buf = writer.buffer();
        for i in 0..10u64 {
            buf.push(&OpRecord {
                start_ns: i * 100,
                end_ns: i * 100 + 50,
                offset: i * 4096,
                bytes: 4096,
                stream: 0,
                kind: OpKind::Write,
                status: OpStatus::Complete,
            });
        }
        buf.finish().unwrap();
        writer.finish().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 5).unwrap();
        let mut c = Collect::default();
        let r = import(&path, Format::Iolens, false, &mut c).unwrap();
        assert_eq!(r.events, 9);
        assert_eq!(c.events.last().unwrap().offset, 8 * 4096);
        let last_record_at = len - RECORD_SIZE as u64;
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("truncated") && n.contains(&format!("offset {last_record_at}"))),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn corrupt_run_trace_error_names_file_and_offset() {
        use iolens_record::trace::{OpRecord, TraceWriter};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.iolt");
        let writer = TraceWriter::create(&path, &["a".into()]).unwrap();
        let mut buf = writer.buffer();
        let rec = OpRecord {
            start_ns: 1,
            end_ns: 2,
            offset: 0,
            bytes: 1,
            stream: 0,
            kind: OpKind::Read,
            status: OpStatus::Complete,
        };
        buf.push(&rec);
        buf.push(&rec);
        buf.finish().unwrap();
        writer.finish().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 32;
        bytes[at + 30] = 7;
        std::fs::write(&path, &bytes).unwrap();
        let mut c = Collect::default();
        let err = import(&path, Format::Iolens, false, &mut c).unwrap_err().to_string();
        assert_eq!(err, format!("{}: corrupt record at offset {at}: invalid kind 7", path.display()));
    }
}
