//! `iolens run --trace` files read in parallel: their records have a fixed size, so the file
//! splits into record ranges, one per thread, each read into a sink of its own. The caller
//! merges the sinks in file order (`iolens_analyze::Analyzer::merge`).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use iolens_record::trace::{OpRecord, TraceError, TraceReader, RECORD_SIZE};

use crate::native::event_of_record;
use crate::{Ctx, EventSink, Format, ImportError, ImportReport, ReadProgress};

/// Records read per positional read (128 KiB: the buffer stays in the core's own cache while
/// its records are analyzed).
const RECORDS_PER_READ: usize = 4 * 1024;

/// What one thread read of its range.
struct Part {
    records: u64,
    /// The first corrupt record in the range.
    error: Option<TraceError>,
    interrupted: bool,
}

fn read_range(
    file: &File,
    from: u64,
    records: u64,
    ids: &[u32],
    sink: &mut dyn EventSink,
    progress: Option<&ReadProgress>,
) -> Part {
    let mut buf = vec![0u8; RECORDS_PER_READ * RECORD_SIZE];
    let mut done = 0u64;
    while done < records {
        if sink.stop_requested() {
            return Part { records: done, error: None, interrupted: true };
        }
        let n = (records - done).min(RECORDS_PER_READ as u64) as usize;
        let at = from + done * RECORD_SIZE as u64;
        let bytes = &mut buf[..n * RECORD_SIZE];
        if let Err(e) = file.read_exact_at(bytes, at) {
            return Part { records: done, error: Some(TraceError::Io(e)), interrupted: false };
        }
        if let Some(p) = progress {
            p.add_bytes(bytes.len() as u64);
        }
        for (i, raw) in bytes.chunks_exact(RECORD_SIZE).enumerate() {
            let offset = at + (i * RECORD_SIZE) as u64;
            let raw: &[u8; RECORD_SIZE] = raw.try_into().expect("chunks_exact gives whole records");
            match OpRecord::decode(raw, offset) {
                Ok(rec) => {
                    let file = ids.get(rec.stream as usize).copied().unwrap_or(iolens_record::event::NO_FILE);
                    sink.event(&event_of_record(&rec, file));
                }
                Err(e) => return Part { records: done + i as u64, error: Some(e), interrupted: false },
            }
        }
        done += n as u64;
        if let Some(p) = progress {
            p.add_events(n as u64);
        }
    }
    Part { records: done, error: None, interrupted: false }
}

/// Imports the run trace at `path` into `sinks`, one record range each (in file order; the
/// ranges differ in length by at most one record), on one thread each. Every sink is told every
/// stream's path, with the ids a sequential [`crate::import`] gives. A corrupt record fails the
/// import as it would sequentially (the first one in the file is named).
pub fn import_run_trace_chunked<S: EventSink + Send>(
    path: &Path,
    sinks: &mut [S],
) -> Result<ImportReport, ImportError> {
    let threads = sinks.len();
    import_run_trace_chunked_counted(path, sinks, threads, None)
}

/// [`import_run_trace_chunked`] on `threads` threads, each taking the next range not yet taken
/// when it is done with one (a core that runs slower, or is shared, reads fewer), and telling
/// `progress` how far the threads have got together.
pub fn import_run_trace_chunked_counted<S: EventSink + Send>(
    path: &Path,
    sinks: &mut [S],
    threads: usize,
    progress: Option<&ReadProgress>,
) -> Result<ImportReport, ImportError> {
    let io_err = |source| ImportError::Io { path: path.to_path_buf(), source };
    let format_err = |e: TraceError| ImportError::Format { path: path.to_path_buf(), message: e.to_string() };
    let file = File::open(path).map_err(io_err)?;
    let reader = TraceReader::new(std::io::BufReader::new(&file)).map_err(format_err)?;
    let data_offset = reader.offset();
    let streams = reader.streams;
    let len = file.metadata().map_err(io_err)?.len();
    let body = len.saturating_sub(data_offset);
    let records = body / RECORD_SIZE as u64;
    let tail = (body % RECORD_SIZE as u64) as usize;
    if let Some(p) = progress {
        p.add_bytes(data_offset);
    }

    let ids: Vec<u32> = (0..streams.len() as u32).collect();
    for sink in sinks.iter_mut() {
        for (id, name) in ids.iter().zip(&streams) {
            sink.path(*id, name);
        }
    }
    let ranges = sinks.len().max(1);
    let threads = threads.clamp(1, ranges);
    let untaken = std::sync::Mutex::new(sinks.iter_mut().enumerate());
    let ranges = ranges as u64;
    let mut parts: Vec<(usize, Part)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (file, ids, untaken) = (&file, &ids, &untaken);
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let next = untaken.lock().expect("no reader panics holding it").next();
                        let Some((i, sink)) = next else { break done };
                        let first = records * i as u64 / ranges;
                        let count = records * (i as u64 + 1) / ranges - first;
                        let at = data_offset + first * RECORD_SIZE as u64;
                        done.push((i, read_range(file, at, count, ids, sink, progress)));
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("a chunk reader does not panic")).collect()
    });
    parts.sort_by_key(|(i, _)| *i);
    let parts = parts.into_iter().map(|(_, part)| part);

    // The report of a sequential read, with a sink that only counts.
    let mut counter = CountOnly;
    let mut ctx = Ctx::new(&mut counter, path, Format::Iolens, false);
    for part in parts {
        if let Some(e) = part.error {
            return Err(format_err(e));
        }
        ctx.report.events += part.records;
        ctx.report.interrupted |= part.interrupted;
    }
    if tail > 0 && !ctx.report.interrupted {
        let offset = data_offset + records * RECORD_SIZE as u64;
        ctx.report.notes.push(crate::native::truncated_note(offset, tail));
    }
    Ok(ctx.report)
}

struct CountOnly;
impl EventSink for CountOnly {
    fn path(&mut self, _: u32, _: &str) {}
    fn event(&mut self, _: &iolens_record::event::IoEvent) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Collect;
    use iolens_record::trace::{OpKind, OpStatus, TraceWriter};

    fn write_trace(path: &Path, records: u64) {
        let names: Vec<String> = (0..3).map(|i| format!("agent{i}")).collect();
        let writer = TraceWriter::create(path, &names).unwrap();
        let mut bufs: Vec<_> = (0..3).map(|_| writer.buffer()).collect();
        for i in 0..records {
            let stream = (i % 3) as u16;
            bufs[stream as usize].push(&OpRecord {
                start_ns: i * 7,
                end_ns: i * 7 + 11,
                offset: i * 512,
                bytes: 512,
                stream,
                kind: [OpKind::Read, OpKind::Write, OpKind::Fsync][(i % 5 % 3) as usize],
                status: if i % 11 == 0 { OpStatus::Short } else { OpStatus::Complete },
            });
        }
        bufs.into_iter().for_each(|b| b.finish().unwrap());
        writer.finish().unwrap();
    }

    #[test]
    fn chunks_concatenated_are_the_sequential_import() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.iolt");
        write_trace(&path, 100_003);
        let mut whole = Collect::default();
        let expected = crate::import(&path, Format::Iolens, false, &mut whole).unwrap();
        for (chunks, threads) in [(1, 1), (2, 2), (3, 3), (7, 7), (7, 2), (12, 3), (5, 1)] {
            let mut sinks: Vec<Collect> = (0..chunks).map(|_| Collect::default()).collect();
            let report = import_run_trace_chunked_counted(&path, &mut sinks, threads, None).unwrap();
            assert_eq!(report.events, expected.events);
            let events: Vec<_> = sinks.iter().flat_map(|s| s.events.iter().copied()).collect();
            assert_eq!(events, whole.events, "{chunks} chunks on {threads} threads");
            assert!(sinks.iter().all(|s| s.paths == whole.paths && !s.events.is_empty()));
        }
    }

    #[test]
    fn progress_counts_every_byte_read_and_the_events_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.iolt");
        write_trace(&path, 100_003);
        let len = std::fs::metadata(&path).unwrap().len();
        for chunks in [1, 3] {
            let progress = ReadProgress::default();
            let mut sinks: Vec<Collect> = (0..chunks).map(|_| Collect::default()).collect();
            import_run_trace_chunked_counted(&path, &mut sinks, 2, Some(&progress)).unwrap();
            assert_eq!((progress.bytes(), progress.events()), (len, 100_003), "{chunks} chunks");
            progress.restart();
            assert_eq!((progress.bytes(), progress.events()), (0, 0));
        }
        let progress = ReadProgress::default();
        let report =
            crate::import_counted(&path, Format::Iolens, false, &mut Collect::default(), Some(&progress))
                .unwrap();
        assert_eq!(progress.bytes(), len);
        // Told every STOP_POLL records, not per record.
        assert!(
            progress.events() <= report.events && report.events - progress.events() < crate::STOP_POLL as u64
        );
        assert!(progress.events() > 0);
    }

    #[test]
    fn progress_of_a_text_trace_is_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strace.txt");
        let text: String =
            (0..5000).map(|i| format!("100 1.{i:06} read(3</a>, \"\", 1) = 1 <0.000010>\n")).collect();
        std::fs::write(&path, &text).unwrap();
        let progress = ReadProgress::default();
        let report =
            crate::import_counted(&path, Format::Strace, false, &mut Collect::default(), Some(&progress))
                .unwrap();
        assert_eq!(report.events, 5000);
        assert_eq!(progress.bytes(), text.len() as u64);
        assert!((4000..=5000).contains(&progress.events()), "told at each poll: {}", progress.events());
    }

    #[test]
    fn a_cut_last_record_and_a_corrupt_one_read_as_sequentially() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.iolt");
        write_trace(&path, 1000);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 5).unwrap();
        let expected = crate::import(&path, Format::Iolens, false, &mut Collect::default()).unwrap();
        let mut sinks: Vec<Collect> = (0..3).map(|_| Collect::default()).collect();
        let report = import_run_trace_chunked(&path, &mut sinks).unwrap();
        assert_eq!((report.events, &report.notes), (expected.events, &expected.notes));

        let mut bytes = std::fs::read(&path).unwrap();
        // The cut took 5 bytes off the last record: records start 5 bytes past these.
        let (first_bad, second_bad) = (bytes.len() + 5 - 32 * 700, bytes.len() + 5 - 32 * 100);
        bytes[first_bad + 30] = 9;
        bytes[second_bad + 30] = 9;
        std::fs::write(&path, &bytes).unwrap();
        let expected = crate::import(&path, Format::Iolens, false, &mut Collect::default()).unwrap_err();
        let err = import_run_trace_chunked(&path, &mut sinks).unwrap_err();
        assert_eq!(err.to_string(), expected.to_string());
        assert!(err.to_string().contains(&format!("offset {first_bad}")), "{err}");
    }
}
