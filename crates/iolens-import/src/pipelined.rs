//! A trace parsed on a thread of its own while the caller's sink takes its events: on a text
//! trace (Darshan DXT, strace, blkparse) the parsing costs about as much as the summary, so the
//! two overlap on two cores. The sink sees the same paths and events, in the same order, as a
//! sequential [`crate::import`] gives it; only batches of them cross between the threads, and
//! the batches are recycled, so an event costs no allocation.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

use iolens_record::event::IoEvent;

use crate::{import_counted, EventSink, Format, ImportError, ImportReport, ReadProgress};

/// Traces smaller than this are parsed on the caller's thread: a second thread costs more than
/// it saves on them.
pub const PIPELINE_MIN_BYTES: u64 = 256 * 1024;

/// Paths and events per batch (64 KiB of them).
const BATCH: usize = 1024;
/// Full batches waiting for the sink; with the one being filled and the one being emptied,
/// memory is bounded by `BATCHES_IN_FLIGHT + 2` batches whatever the trace's size.
const BATCHES_IN_FLIGHT: usize = 4;

/// What the parser told its sink, in order.
enum Item {
    Path(u32, String),
    Event(IoEvent),
}

/// The parser's sink: fills a batch, hands it over when full and takes an emptied one back.
struct BatchSink<'a> {
    batch: Vec<Item>,
    full: SyncSender<Vec<Item>>,
    emptied: Receiver<Vec<Item>>,
    /// Set by the caller's thread when its sink asks to stop.
    stop: &'a AtomicBool,
    /// The caller's thread is gone (its sink panicked): nothing more is worth parsing.
    closed: bool,
}

impl BatchSink<'_> {
    fn push(&mut self, item: Item) {
        if self.closed {
            return;
        }
        self.batch.push(item);
        if self.batch.len() == BATCH {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        let next = match self.emptied.recv() {
            Ok(next) => next,
            Err(_) => {
                self.closed = true;
                return;
            }
        };
        let full = std::mem::replace(&mut self.batch, next);
        if self.full.send(full).is_err() {
            self.closed = true;
        }
    }
}

impl EventSink for BatchSink<'_> {
    fn path(&mut self, id: u32, path: &str) {
        self.push(Item::Path(id, path.to_string()));
    }

    fn event(&mut self, e: &IoEvent) {
        self.push(Item::Event(*e));
    }

    fn stop_requested(&mut self) -> bool {
        self.closed || self.stop.load(Ordering::Relaxed)
    }
}

/// [`import_counted`], with the parsing on a second thread when that pays: the trace (a file, or
/// the stream files of a trace directory) has at least [`PIPELINE_MIN_BYTES`] and there are two
/// cores.
pub fn import_pipelined(
    path: &Path,
    format: Format,
    strict: bool,
    sink: &mut dyn EventSink,
    progress: Option<&ReadProgress>,
) -> Result<ImportReport, ImportError> {
    let bytes = crate::input_bytes(path);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if bytes < PIPELINE_MIN_BYTES || cores < 2 {
        return import_counted(path, format, strict, sink, progress);
    }
    import_on_two_threads(path, format, strict, sink, progress)
}

/// [`import_counted`] on a thread of its own, `sink` fed on this one.
pub(crate) fn import_on_two_threads(
    path: &Path,
    format: Format,
    strict: bool,
    sink: &mut dyn EventSink,
    progress: Option<&ReadProgress>,
) -> Result<ImportReport, ImportError> {
    let stop = AtomicBool::new(false);
    let (full_tx, full_rx) = sync_channel::<Vec<Item>>(BATCHES_IN_FLIGHT);
    let (emptied_tx, emptied_rx): (Sender<Vec<Item>>, Receiver<Vec<Item>>) = channel();
    for _ in 0..=BATCHES_IN_FLIGHT {
        emptied_tx.send(Vec::with_capacity(BATCH)).expect("the receiver is alive");
    }
    std::thread::scope(|scope| {
        let stop = &stop;
        let parser = scope.spawn(move || {
            let mut batches = BatchSink {
                batch: Vec::with_capacity(BATCH),
                full: full_tx,
                emptied: emptied_rx,
                stop,
                closed: false,
            };
            let report = import_counted(path, format, strict, &mut batches, progress);
            let last = std::mem::take(&mut batches.batch);
            if !last.is_empty() && !batches.closed {
                // The receiver only goes away with a panic, which the join below carries on.
                let _ = batches.full.send(last);
            }
            report
        });
        let mut stopped = false;
        for mut batch in full_rx {
            if !stopped {
                for item in batch.drain(..) {
                    match item {
                        Item::Path(id, name) => sink.path(id, &name),
                        Item::Event(e) => sink.event(&e),
                    }
                }
                if sink.stop_requested() {
                    stopped = true;
                    stop.store(true, Ordering::Relaxed);
                }
            }
            batch.clear();
            // The parser has finished when this fails: the batch is not needed any more.
            let _ = emptied_tx.send(batch);
        }
        parser.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use crate::testing::Collect;

    /// A DXT text of `files` file records, `segments` rows each, ranks and offsets varied, and
    /// a malformed row now and then (skipped, and reported with its line number).
    fn dxt_text(files: usize, segments: usize) -> String {
        let mut text = String::from("# darshan log version: 3.21\n");
        for file in 0..files {
            writeln!(text, "\n# DXT, file_id: {}, file_name: /data/f{file}", 1000 + file % 7).unwrap();
            writeln!(text, "# DXT, rank: {}, hostname: n{}", file % 3, file % 2).unwrap();
            for s in 0..segments {
                if s % 997 == 13 {
                    text.push_str(" X_POSIX  0  seek  1  0  1  1.0  2.0\n");
                    continue;
                }
                let op = if (s + file) % 3 == 0 { "write" } else { "read" };
                let start = (file * segments + s) as f64 * 1e-4;
                writeln!(
                    text,
                    " X_POSIX {:>5} {op:>6} {s:>8} {:>12} {:>8} {start:>11.4} {:>11.4}",
                    file % 3,
                    s * 4096,
                    512 + s % 9,
                    start + 5e-5
                )
                .unwrap();
            }
        }
        text
    }

    fn both_ways(text: &str) -> ((Collect, ImportReport), (Collect, ImportReport)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.dxt.txt");
        std::fs::write(&path, text).unwrap();
        let mut sequential = Collect::default();
        let seq_report = crate::import(&path, Format::Dxt, false, &mut sequential).unwrap();
        let mut pipelined = Collect::default();
        let pipe_report = import_on_two_threads(&path, Format::Dxt, false, &mut pipelined, None).unwrap();
        ((sequential, seq_report), (pipelined, pipe_report))
    }

    #[test]
    fn a_pipelined_dxt_import_gives_what_a_sequential_one_gives() {
        // Many batches, file headers and malformed rows falling anywhere within them.
        let ((seq, seq_report), (pipe, pipe_report)) = both_ways(&dxt_text(23, 2_111));
        assert!(seq.events.len() > 20 * BATCH, "the trace spans many batches");
        assert_eq!(seq.paths, pipe.paths);
        assert_eq!(seq.events, pipe.events);
        assert!(!seq_report.malformed.is_empty(), "the malformed rows are reported");
        assert_eq!(seq_report.malformed_count, pipe_report.malformed_count);
        assert_eq!(format!("{:?}", seq_report.malformed), format!("{:?}", pipe_report.malformed));
        assert_eq!(seq_report.notes, pipe_report.notes);
    }

    #[test]
    fn a_pipelined_trace_directory_gives_what_a_sequential_one_gives() {
        use iolens_record::event::{EventWriter, IoOp, Layer};
        let dir = tempfile::tempdir().unwrap();
        // Two processes' streams, each of two threads' blocks, paths defined along the way.
        for pid in [100u32, 200] {
            let mut w = EventWriter::new(Vec::new()).unwrap();
            for block in 0..6u64 {
                let path_id = block as u32 % 3;
                w.path(path_id, &format!("/data/{pid}-{path_id}")).unwrap();
                let t0 = block * 1_000_000;
                let mut p =
                    w.block(pid, pid + 1 + block as u32 % 2, (t0, t0), (t0 + 900_000, t0 + 900_000)).unwrap();
                for i in 0..1_500u64 {
                    let e = IoEvent {
                        pid,
                        tid: 0,
                        file: path_id,
                        op: if i % 3 == 0 { IoOp::Write } else { IoOp::Read },
                        layer: Layer::Posix,
                        flags: 0,
                        offset: (i * 7 % 64) * 4096,
                        requested: 4096,
                        result: 4096,
                        start_ns: t0 + i * 500,
                        end_ns: t0 + i * 500 + 200 + i % 5,
                    };
                    w.compact_event(&e, &mut p).unwrap();
                }
            }
            std::fs::write(dir.path().join(format!("{pid}.1.evt")), w.into_inner()).unwrap();
        }
        let mut sequential = Collect::default();
        crate::import(dir.path(), Format::Events, false, &mut sequential).unwrap();
        let mut pipelined = Collect::default();
        import_on_two_threads(dir.path(), Format::Events, false, &mut pipelined, None).unwrap();
        assert_eq!(sequential.events.len(), 2 * 6 * 1_500);
        assert_eq!(sequential.paths, pipelined.paths);
        assert_eq!(sequential.events, pipelined.events);
    }

    #[test]
    fn a_trace_smaller_than_a_batch_is_delivered_whole() {
        let ((seq, _), (pipe, _)) = both_ways(&dxt_text(2, 5));
        assert_eq!(seq.events.len(), 10);
        assert_eq!(seq.paths, pipe.paths);
        assert_eq!(seq.events, pipe.events);
    }

    /// A sink that asks to stop after `after` events.
    struct StopAfter {
        inner: Collect,
        after: usize,
    }

    impl EventSink for StopAfter {
        fn path(&mut self, id: u32, path: &str) {
            self.inner.path(id, path);
        }
        fn event(&mut self, e: &IoEvent) {
            self.inner.event(e);
        }
        fn stop_requested(&mut self) -> bool {
            self.inner.events.len() >= self.after
        }
    }

    #[test]
    fn a_sink_that_asks_to_stop_gets_no_more_batches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.dxt.txt");
        std::fs::write(&path, dxt_text(10, 3_000)).unwrap();
        let mut sink = StopAfter { inner: Collect::default(), after: 3 * BATCH };
        import_on_two_threads(&path, Format::Dxt, false, &mut sink, None).unwrap();
        let got = sink.inner.events.len();
        assert!((3 * BATCH..4 * BATCH).contains(&got), "{got} events after the stop at {}", 3 * BATCH);
    }
}
