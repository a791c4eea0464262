use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_COPY_SOURCE, UNKNOWN_OFFSET};

use super::*;

fn ev(pid: u32, file: u32, op: IoOp, offset: u64, bytes: u64, start: u64, end: u64) -> IoEvent {
    IoEvent {
        pid,
        tid: pid,
        file,
        op,
        layer: Layer::Posix,
        flags: 0,
        offset,
        requested: bytes,
        result: bytes as i64,
        start_ns: start,
        end_ns: end,
    }
}

fn analyze(events: &[IoEvent], opts: AnalyzeOptions) -> TraceSummary {
    let mut a = Analyzer::new(opts).unwrap();
    a.path(0, "/a");
    a.path(1, "/b");
    for e in events {
        a.event(e);
    }
    a.finish().unwrap()
}

/// Two processes: overlapping work, an idle gap, a sync, metadata calls that do not count.
fn sample() -> Vec<IoEvent> {
    vec![
        ev(1, 0, IoOp::Open, UNKNOWN_OFFSET, 0, 0, 5),
        ev(1, 0, IoOp::Read, 0, 4096, 10, 110),
        ev(1, 0, IoOp::Read, 4096, 4096, 120, 220),
        ev(2, 1, IoOp::Write, 0, 65536, 50, 250),
        ev(2, 1, IoOp::Write, 1 << 20, 65536, 1000, 1100),
        ev(2, 1, IoOp::Fsync, UNKNOWN_OFFSET, 0, 1100, 1500),
        ev(1, 0, IoOp::Read, 8192, 4096, 2000, 2100),
        ev(1, 0, IoOp::Close, UNKNOWN_OFFSET, 0, 2100, 2105),
    ]
}

#[test]
fn figures_are_exact() {
    let s = analyze(&sample(), AnalyzeOptions::default());
    let f = &s.figures;
    assert_eq!((f.ops, f.read_ops, f.write_ops), (5, 3, 2));
    assert_eq!(f.bytes, 3 * 4096 + 2 * 65536);
    assert_eq!(f.fsyncs, 1);
    // union: [10,250) + [1000,1500) + [2000,2100) = 240 + 500 + 100
    assert_eq!(f.busy_s, 840e-9);
    assert_eq!(f.busy_periods, 3);
    assert!((f.wall_s - 2090e-9).abs() < 1e-15, "first start 10 to last end 2100");
    assert!((f.io_wait_fraction - 840.0 / 2090.0).abs() < 1e-12);
    assert!((f.bps - f.bytes as f64 / 512.0 / 840e-9).abs() / f.bps < 1e-12);
    assert_eq!(s.sequential_fraction, Some(2.0 / 5.0), "two reads follow the previous one");
    assert_eq!(
        s.size_histogram.iter().map(|b| (b.min_bytes, b.read_ops, b.write_ops)).collect::<Vec<_>>(),
        vec![(4096, 3, 0), (65536, 0, 2)]
    );
    assert_eq!(s.files[0].path, "/b", "the busiest file first");
    assert_eq!(s.processes.len(), 2);
    assert_eq!(s.slowest[0].op, "fsync");
    assert_eq!(s.slowest[0].duration_s, 400e-9);
    assert_eq!(s.concurrency.peak_in_flight, Some(2));
    let sum: f64 = (100 + 100 + 200 + 100 + 400 + 100) as f64;
    assert!((s.concurrency.mean_in_flight - sum / 840.0).abs() < 1e-12);
    assert_eq!(s.aggregate_layer, "posix+stdio");
}

#[test]
fn an_in_kernel_copy_counts_both_files_once_in_time() {
    // copy_file_range of 8 KiB from /a to /b, as the tracer records it: a read and a write over
    // the same interval, the read flagged.
    let read = IoEvent { flags: FLAG_COPY_SOURCE, ..ev(1, 0, IoOp::Read, 0, 8192, 100, 300) };
    let write = ev(1, 1, IoOp::Write, 0, 8192, 100, 300);
    let s = analyze(&[read, write], AnalyzeOptions::default());
    let f = &s.figures;
    assert_eq!((f.read_ops, f.write_ops, f.bytes), (1, 1, 2 * 8192), "both files' bytes");
    assert_eq!(f.busy_s, 200e-9);
    assert_eq!(s.concurrency.peak_in_flight, Some(1), "one call, not two in flight");
}

#[test]
fn program_wall_time_overrides_the_event_span() {
    let s = analyze(&sample(), AnalyzeOptions { program_wall_ns: Some(10_000), ..AnalyzeOptions::default() });
    assert!((s.figures.io_wait_fraction - 0.084).abs() < 1e-12);
}

#[test]
fn mpi_io_over_posix_is_not_counted_twice() {
    let mut events = sample();
    for e in &mut events {
        if e.pid == 2 {
            e.layer = Layer::MpiIo;
        }
    }
    let s = analyze(&events, AnalyzeOptions::default());
    assert_eq!(s.aggregate_layer, "mpiio");
    assert_eq!(s.figures.ops, 2);
    assert_eq!(s.layers.len(), 2);
    assert!(s.notes.iter().any(|n| n.contains("MPI-IO")));
}

/// An MPI-IO write and the POSIX write beneath it move the same bytes: the file and process
/// tables show each layer on its own row, never their sum.
#[test]
fn file_and_process_rows_keep_layers_apart() {
    let posix = ev(2, 1, IoOp::Write, 0, 1 << 20, 100, 200);
    let mpiio = IoEvent { layer: Layer::MpiIo, start_ns: 90, end_ns: 210, ..posix };
    let s = analyze(&[mpiio, posix], AnalyzeOptions::default());
    let files: Vec<(&str, &str, u64, u64)> =
        s.files.iter().map(|f| (f.path.as_str(), f.layer.as_str(), f.ops, f.write_bytes)).collect();
    assert_eq!(files, vec![("/b", "mpiio", 1, 1 << 20), ("/b", "posix", 1, 1 << 20)]);
    let procs: Vec<(u32, &str, u64, u64)> =
        s.processes.iter().map(|p| (p.pid, p.layer.as_str(), p.ops, p.bytes)).collect();
    assert_eq!(procs, vec![(2, "mpiio", 1, 1 << 20), (2, "posix", 1, 1 << 20)]);
}

/// Each layer has its own busy time and BPS: MPI-IO's is the application's view, POSIX's what
/// the middleware moved beneath (here a data-sieving read of twice the bytes asked for).
#[test]
fn layer_rows_give_each_layer_its_busy_time_and_bps() {
    let mpiio = IoEvent { layer: Layer::MpiIo, ..ev(2, 1, IoOp::Read, 0, 1 << 20, 90, 210) };
    let sieving = ev(2, 1, IoOp::Read, 0, 2 << 20, 100, 200);
    let other = ev(3, 0, IoOp::Write, 0, 512, 1000, 1100);
    let s = analyze(&[mpiio, sieving, other], AnalyzeOptions::default());
    let rows: Vec<(&str, u64, f64, f64)> =
        s.layers.iter().map(|l| (l.layer.as_str(), l.bytes, l.busy_s, l.bps)).collect();
    let (posix_busy, mpiio_busy) = (200.0 / 1e9, 120.0 / 1e9);
    let posix_bytes = (2 << 20) + 512;
    assert_eq!(
        rows,
        vec![
            ("posix", posix_bytes, posix_busy, posix_bytes as f64 / 512.0 / posix_busy),
            ("mpiio", 1 << 20, mpiio_busy, 2048.0 / mpiio_busy),
        ]
    );
    assert_eq!(s.figures.bps, rows[1].3, "the aggregate is MPI-IO's");
}

#[test]
fn per_op_csv_and_blind_spots() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ops.csv");
    let mut events = sample();
    events.push(ev(1, 0, IoOp::Mmap, 0, 4096, 3000, 3001));
    let s = analyze(&events, AnalyzeOptions { per_op_csv: Some(csv.clone()), ..AnalyzeOptions::default() });
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + events.len(), "every event, metadata included");
    assert_eq!(
        lines[0],
        "row_kind,pid,tid,path,op,layer,offset,requested,result,start_ns,end_ns,duration_ns"
    );
    assert_eq!(lines[2], "op,1,1,/a,read,posix,0,4096,4096,10,110,100");
    assert_eq!(lines[1].split(',').nth(6), Some(""), "unknown offsets are empty");
    assert!(s.notes.iter().any(|n| n.contains("mmap")));
}

#[test]
fn spilled_union_gives_the_same_busy_time() {
    let dir = tempfile::tempdir().unwrap();
    let many: Vec<IoEvent> = (0..5000u64)
        .map(|i| {
            ev((i % 7) as u32, 0, IoOp::Read, i * 4096, 4096, (i * 7919) % 100_000, (i * 7919) % 100_000 + 50)
        })
        .collect();
    let small = analyze(
        &many,
        AnalyzeOptions { union_buffer: 64, spill_dir: Some(dir.path().into()), ..AnalyzeOptions::default() },
    );
    let big = analyze(&many, AnalyzeOptions::default());
    assert_eq!(small.figures.busy_s, big.figures.busy_s);
    assert_eq!(small.concurrency.peak_in_flight, None, "not exact after spilling");
    assert!(big.concurrency.peak_in_flight.is_some());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn emitted_workload_is_a_valid_job() {
    let s = analyze(&sample(), AnalyzeOptions::default());
    let text = emit_workload(&s, "/scratch/replay").unwrap();
    let job = iolens_workload::parse_job(&text, "replay.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(job.agents.len(), 2);
    assert_eq!(job.agents[0].name, "reads");
    assert_eq!(job.agents[0].sizes, iolens_workload::SizeSpec::Weighted(vec![(4096, 3)]));
    assert_eq!(job.agents[1].fsync, iolens_workload::FsyncPolicy::EveryN(2));
    assert_eq!(job.agents[0].target, std::path::PathBuf::from("/scratch/replay"));
    assert!(matches!(job.agents[0].pattern, iolens_workload::Pattern::Random(_)), "40% sequential: random");
    assert!(!job.agents[0].random_map && job.agents[1].random_map, "random writes say so: {text}");
    assert!(text.contains("random_map = true"), "{text}");
    let empty = analyze(&[], AnalyzeOptions::default());
    assert!(emit_workload(&empty, "/x").is_err());
    assert_eq!(empty.figures.ops, 0);
}

#[test]
fn extreme_values_saturate() {
    let mut a = Analyzer::new(AnalyzeOptions::default()).unwrap();
    a.path(u32::MAX - 1, "/far");
    for i in 0..3 {
        let mut e = ev(1, u32::MAX - 1, IoOp::Write, u64::MAX - 10, u64::MAX, i, u64::MAX);
        e.result = i64::MAX;
        a.event(&e);
        a.event(&IoEvent { op: IoOp::Read, ..e });
    }
    let s = a.finish().unwrap();
    assert_eq!(s.figures.ops, 6);
    assert_eq!(s.figures.bytes, u64::MAX);
    assert_eq!(s.max_extent_bytes, u64::MAX);
    assert_eq!(s.files[0].path, "/far");
    let job = emit_workload(&s, "/x").unwrap();
    iolens_workload::parse_job(&job, "replay.toml").unwrap_or_else(|e| panic!("{e}\n{job}"));
}

#[test]
fn slow_programs_keep_a_nonzero_rate() {
    // One 4 KiB read an hour: 0.000277 ops/s, which three decimals would print as 0 (unthrottled).
    let events: Vec<IoEvent> = (0..3)
        .map(|i| ev(1, 0, IoOp::Read, i * 4096, 4096, i * 3_600_000_000_000, i * 3_600_000_000_000 + 1000))
        .collect();
    let s = analyze(&events, AnalyzeOptions::default());
    let text = emit_workload(&s, "/x").unwrap();
    let job = iolens_workload::parse_job(&text, "replay.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let rate = job.agents[0].rate.ops_per_s;
    // Slower than the job parser's least rate: the replay runs at that least rate, never unthrottled.
    let expected = (3.0f64 / 7200.000001).max(iolens_workload::limits::MIN_RATE);
    assert!(rate > 0.0 && ((rate - expected) / expected).abs() < 1e-3, "rate {rate}\n{text}");
}

#[test]
fn huge_requests_emit_sizes_the_parser_accepts() {
    let events = vec![
        ev(1, 0, IoOp::Write, 0, 1 << 62, 0, 100),
        ev(1, 0, IoOp::Write, 1 << 62, 4095, 100, 200),
        ev(1, 0, IoOp::Read, 0, (1 << 32) - 1, 200, 300),
    ];
    let s = analyze(&events, AnalyzeOptions::default());
    let text = emit_workload(&s, "/x").unwrap();
    let job = iolens_workload::parse_job(&text, "replay.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(job.agents.iter().all(|a| a.sizes.max() <= u32::MAX as u64), "{text}");
}

#[test]
fn summary_says_whether_it_was_interrupted() {
    let s = analyze(&sample(), AnalyzeOptions::default());
    assert!(!s.interrupted);
    let json = serde_json::to_value(&s).unwrap();
    assert!(json.get("interrupted").is_none(), "the envelope of the JSON result says it");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut a =
        Analyzer::new(AnalyzeOptions { stop: Some(stop.clone()), ..AnalyzeOptions::default() }).unwrap();
    assert!(!a.stop_requested());
    a.event(&sample()[1]);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(a.stop_requested());
    let s = a.finish().unwrap();
    assert!(s.interrupted);
    assert_eq!(s.figures.ops, 1, "the events before the stop are summarized");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Whatever a trace holds, the emitted job loads.
    #[test]
    fn every_emitted_job_parses(
        events in proptest::collection::vec(
            (0u32..4, proptest::bool::ANY, proptest::num::u64::ANY, 0u32..64, proptest::num::u64::ANY,
             proptest::num::u64::ANY, proptest::num::u64::ANY),
            1..40),
        fsyncs in 0usize..5,
    ) {
        let mut list: Vec<IoEvent> = events
            .iter()
            .map(|&(pid, write, offset, shift, low, start, len)| {
                let bytes = (1u64 << shift) | (low >> (64 - shift.max(1)));
                let len = len >> (start % 64);
                let op = if write { IoOp::Write } else { IoOp::Read };
                ev(pid, pid, op, offset, bytes, start, start.saturating_add(len))
            })
            .collect();
        for i in 0..fsyncs {
            list.push(ev(0, 0, IoOp::Fsync, UNKNOWN_OFFSET, 0, i as u64, i as u64 + 1));
        }
        let s = analyze(&list, AnalyzeOptions::default());
        let text = emit_workload(&s, "/tmp/replay \"quoted\"\n").unwrap();
        let parsed = iolens_workload::parse_job(&text, "replay.toml");
        proptest::prop_assert!(parsed.is_ok(), "{}\n{}", parsed.unwrap_err(), text);
        for a in parsed.unwrap().agents {
            if let Some(region) = a.region_size {
                proptest::prop_assert!(a.sizes.max() <= region);
            }
        }
    }
}

#[test]
fn path_filters_leave_files_out_of_every_figure_and_say_so() {
    let filter = PathFilter::new(&[], &["^/b$".into()]).unwrap();
    let s = analyze(&sample(), AnalyzeOptions { filter, ..AnalyzeOptions::default() });
    let only_a: Vec<IoEvent> = sample().into_iter().filter(|e| e.file == 0).collect();
    let reference = analyze(&only_a, AnalyzeOptions::default());
    assert_eq!(s.figures, reference.figures, "as if /b's calls were not in the trace");
    assert_eq!(s.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["/a"]);
    assert!(s.slowest.iter().all(|o| o.path == "/a"));
    let r = s.filters.expect("the filters are reported");
    assert_eq!(r.exclude, ["^/b$"]);
    assert_eq!((r.files_out, r.ops_out, r.bytes_out, r.syncs_out), (1, 2, 2 * 65536, 1));
    assert!(reference.filters.is_none(), "no filters, no line on the page (iolens_report::text::trace)");

    let filter = PathFilter::new(&["^/b".into()], &[]).unwrap();
    let s = analyze(&sample(), AnalyzeOptions { filter, ..AnalyzeOptions::default() });
    assert_eq!((s.figures.ops, s.figures.write_ops), (2, 2), "only /b's writes are included");
    let r = s.filters.as_ref().unwrap();
    assert_eq!((r.files_out, r.ops_out, r.bytes_out), (1, 3, 3 * 4096));
    assert_eq!(r.include, ["^/b"]);
}

#[test]
fn file_table_and_slowest_list_are_sized_apart() {
    let s = analyze(&sample(), AnalyzeOptions { top_files: 1, slowest: 3, ..AnalyzeOptions::default() });
    assert_eq!((s.files.len(), s.slowest.len()), (1, 3));
    let none = analyze(&sample(), AnalyzeOptions { top_files: 0, slowest: 0, ..AnalyzeOptions::default() });
    assert!(none.files.is_empty() && none.slowest.is_empty());
    assert_eq!(none.figures, s.figures, "the tables do not change the figures");
    assert_eq!(none.processes.len(), 2, "the process table has its own size");
}

/// Pseudo-random numbers below the bound asked for, the same for the same `seed`.
fn below(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = seed;
    move |m: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % m
    }
}

/// A trace with what makes merging hard: several processes, threads, files and layers, calls
/// overlapping across any cut, sequential runs, unknown offsets, failures, in-kernel copies,
/// syncs, mmaps, equal durations (ties in the slowest list).
fn generated_trace(n: usize, seed: u64) -> Vec<IoEvent> {
    let mut next = below(seed);
    let mut offsets = [0u64; 8];
    let mut t = 1_000u64;
    (0..n)
        .map(|_| {
            t += next(40);
            let file = next(6) as u32;
            let pid = 1 + next(3) as u32;
            let op = [IoOp::Read, IoOp::Write, IoOp::Read, IoOp::Fsync, IoOp::Mmap, IoOp::Open, IoOp::Write]
                [next(7) as usize];
            let bytes = [512, 4096, 65536, 1][next(4) as usize];
            let offset = match next(5) {
                0 => UNKNOWN_OFFSET,
                1 => next(1 << 20),
                _ => offsets[file as usize],
            };
            if offset != UNKNOWN_OFFSET {
                offsets[file as usize] = offset + bytes;
            }
            let layer = [Layer::Posix, Layer::Posix, Layer::Stdio, Layer::MpiIo][next(4) as usize];
            let dur = [10, 10, 100, 5_000, 0][next(5) as usize];
            IoEvent {
                pid,
                tid: pid * 10 + next(2) as u32,
                file,
                op,
                layer,
                flags: if next(20) == 0 { FLAG_COPY_SOURCE } else { 0 },
                offset,
                requested: bytes,
                result: if next(15) == 0 { -5 } else { bytes as i64 - (next(10) == 0) as i64 },
                start_ns: t,
                end_ns: t + dur,
            }
        })
        .collect()
}

fn summary_json(s: &TraceSummary) -> String {
    serde_json::to_string(s).unwrap()
}

/// Each chunk on an analyzer of its own, merged in order, gives the whole trace's summary.
fn chunked(events: &[IoEvent], cuts: &[usize], opts: &AnalyzeOptions) -> TraceSummary {
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(events.len());
    let mut parts = bounds.windows(2).map(|w| {
        let mut a = Analyzer::new(opts.clone()).unwrap();
        for id in 0..6 {
            a.path(id, &format!("/f{id}"));
        }
        for e in &events[w[0]..w[1]] {
            a.event(e);
        }
        a
    });
    let mut first = parts.next().unwrap();
    for later in parts {
        first.merge(later);
    }
    first.finish().unwrap()
}

#[test]
fn chunked_analysis_merged_equals_the_sequential_one() {
    let dir = tempfile::tempdir().unwrap();
    for (seed, n) in [(1, 2_000), (2, 5_000), (3, 300)] {
        let events = generated_trace(n, seed);
        for union_buffer in [4 << 20, 64, 5] {
            for filter in [PathFilter::default(), PathFilter::new(&[], &["f3$".into()]).unwrap()] {
                let opts = AnalyzeOptions {
                    union_buffer,
                    spill_dir: Some(dir.path().to_path_buf()),
                    slowest: 7,
                    filter,
                    ..AnalyzeOptions::default()
                };
                let whole = summary_json(&chunked(&events, &[], &opts));
                for cuts in
                    [vec![n / 2], vec![1, 2, n / 3, n - 1], vec![n / 7, 2 * n / 7, 3 * n / 7, 6 * n / 7]]
                {
                    let merged = summary_json(&chunked(&events, &cuts, &opts));
                    assert_eq!(merged, whole, "seed {seed}, buffer {union_buffer}, cuts {cuts:?}");
                }
            }
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "every spilled run is removed");
}

#[test]
fn a_busy_period_spanning_chunks_is_one_period() {
    // One long call in the first chunk covers calls of the second; another touches across.
    let events = [
        ev(1, 0, IoOp::Read, 0, 10, 0, 1000),
        ev(1, 0, IoOp::Read, 10, 10, 1000, 1100),
        ev(2, 1, IoOp::Write, 0, 10, 500, 600),
        ev(2, 1, IoOp::Write, 10, 10, 1100, 1200),
    ];
    let opts = AnalyzeOptions::default();
    let merged = chunked(&events, &[2], &opts);
    assert_eq!((merged.figures.busy_s, merged.figures.busy_periods), (1200e-9, 1));
    assert_eq!(merged.sequential_fraction, Some(0.5), "each process's second call follows on");
    assert_eq!(merged.concurrency.peak_in_flight, Some(2));
    assert_eq!(summary_json(&merged), summary_json(&chunked(&events, &[], &opts)));
}

#[test]
fn merging_chunks_whose_sums_overflow_saturates_as_one_pass_does() {
    let long = |start: u64| ev(1, 0, IoOp::Read, start, 10, start, start + (u64::MAX / 2 + 10));
    let events = [long(0), long(1), ev(2, 1, IoOp::Write, 0, 10, 5, 6)];
    let opts = AnalyzeOptions::default();
    assert_eq!(summary_json(&chunked(&events, &[1], &opts)), summary_json(&chunked(&events, &[], &opts)));
}

#[test]
fn each_process_row_has_its_busy_periods_since_the_first_call() {
    let s = analyze(&sample(), AnalyzeOptions::default());
    let periods = |pid: u32| {
        let p = s.processes.iter().find(|p| p.pid == pid).unwrap();
        assert_eq!(p.busy_periods_resolution_s, 1e-9, "few calls: exact to the nanosecond");
        p.busy_periods_s
            .iter()
            .map(|[a, b]| ((a * 1e9).round() as u64, (b * 1e9).round() as u64))
            .collect::<Vec<_>>()
    };
    // The first timed call (the read at 10) is the origin, as for the slowest calls; opens and
    // closes take no busy time.
    assert_eq!(periods(1), [(0, 100), (110, 210), (1990, 2090)]);
    assert_eq!(periods(2), [(40, 240), (990, 1490)]);
}

/// The calls of one thread after another, none overlapping the next (as one stream of a run
/// trace): what a swept analysis can take in chunks.
fn one_stream_trace(n: usize, seed: u64) -> Vec<IoEvent> {
    let mut events = generated_trace(n, seed);
    let mut t = 1_000;
    for e in &mut events {
        let dur = e.end_ns - e.start_ns;
        t += (e.start_ns % 3) * 7;
        (e.start_ns, e.end_ns) = (t, t + dur);
        t += dur;
        (e.pid, e.tid) = (1, 1);
    }
    events
}

fn with_in_order(opts: &AnalyzeOptions) -> AnalyzeOptions {
    AnalyzeOptions { in_order: true, ..opts.clone() }
}

#[test]
fn the_in_order_sweep_gives_the_stored_summary() {
    let dir = tempfile::tempdir().unwrap();
    for (seed, n) in [(1, 2_000), (2, 5_000), (3, 300)] {
        for union_buffer in [4 << 20, 64, 5] {
            let opts = AnalyzeOptions {
                union_buffer,
                spill_dir: Some(dir.path().to_path_buf()),
                slowest: 7,
                ..AnalyzeOptions::default()
            };
            // Calls of several threads overlapping, in start order: one pass is exact.
            let events = generated_trace(n, seed);
            let stored = summary_json(&chunked(&events, &[], &opts));
            assert_eq!(summary_json(&chunked(&events, &[], &with_in_order(&opts))), stored, "seed {seed}");
            // One stream cut anywhere: the chunks merge exactly.
            let events = one_stream_trace(n, seed);
            let stored = summary_json(&chunked(&events, &[], &opts));
            for cuts in [vec![n / 2], vec![1, 2, n / 3, n - 1]] {
                let swept = summary_json(&chunked(&events, &cuts, &with_in_order(&opts)));
                assert_eq!(swept, stored, "seed {seed}, buffer {union_buffer}, cuts {cuts:?}");
            }
        }
    }
}

/// [`generated_trace`] with its calls in runs of up to 60 on one process, file and layer, the
/// threads of the process overlapping within a run and across its ends.
fn runs_trace(n: usize, seed: u64) -> Vec<IoEvent> {
    let mut events = generated_trace(n, seed);
    let mut next = below(seed ^ 0x9e37_79b9);
    let mut i = 0;
    while i < events.len() {
        let len = 1 + next(60) as usize;
        let first = events[i];
        for e in events.iter_mut().skip(i).take(len) {
            (e.pid, e.file, e.layer) = (first.pid, first.file, first.layer);
            e.tid = first.pid * 10 + next(3) as u32;
            let start = e.start_ns;
            e.end_ns = start + [0, 3, 40, 400, 9_000][next(5) as usize];
        }
        i += len;
    }
    events
}

#[test]
fn runs_of_calls_on_one_file_sweep_as_the_stored_unions() {
    for (seed, n) in [(11, 3_000), (12, 8_000), (13, 500)] {
        let opts = AnalyzeOptions { slowest: 5, ..AnalyzeOptions::default() };
        let events = runs_trace(n, seed);
        let stored = summary_json(&chunked(&events, &[], &opts));
        let swept = chunked(&events, &[], &with_in_order(&opts));
        assert_eq!(summary_json(&swept), stored, "seed {seed}");
        assert!(swept.files.iter().filter(|f| f.busy_s > 0.0).count() > 3, "the runs cover several files");
        // A single stream (nothing overlaps) cut anywhere, mid-run included.
        let events: Vec<IoEvent> = one_stream_trace(n, seed)
            .into_iter()
            .zip(runs_trace(n, seed))
            .map(|(timed, keyed)| IoEvent { pid: 1, tid: 1, file: keyed.file, layer: keyed.layer, ..timed })
            .collect();
        let stored = summary_json(&chunked(&events, &[], &opts));
        for cuts in [vec![n / 2], vec![3, 70, n / 3, n - 2]] {
            let swept = summary_json(&chunked(&events, &cuts, &with_in_order(&opts)));
            assert_eq!(swept, stored, "seed {seed}, cuts {cuts:?}");
        }
    }
}

/// Analyzes `events` in order-assuming chunks; None when the analyzer finds they were not.
fn swept_chunks(events: &[IoEvent], cuts: &[usize]) -> Option<TraceSummary> {
    let opts = with_in_order(&AnalyzeOptions::default());
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(events.len());
    let mut parts = bounds.windows(2).map(|w| {
        let mut a = Analyzer::new(opts.clone()).unwrap();
        events[w[0]..w[1]].iter().for_each(|e| a.event(e));
        a
    });
    let mut first = parts.next().unwrap();
    parts.for_each(|later| first.merge(later));
    let in_order = first.in_order();
    match first.finish() {
        Ok(summary) => Some(summary).filter(|_| in_order),
        Err(AnalyzeError::OutOfOrder) => {
            assert!(!in_order);
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn calls_out_of_start_order_fail_the_sweep_instead_of_giving_wrong_figures() {
    // Two threads' calls, each thread's in order, written thread after thread.
    let thread = |tid: u32, shift: u64| {
        (0..50u64).map(move |i| {
            let mut e = ev(1, 0, IoOp::Read, i * 10, 10, i * 100 + shift, i * 100 + shift + 50);
            e.tid = tid;
            e
        })
    };
    let events: Vec<IoEvent> = thread(1, 0).chain(thread(2, 25)).collect();
    assert!(swept_chunks(&events, &[]).is_none(), "the second thread starts before the first ended");
    let stored = analyze(&events, AnalyzeOptions::default());
    assert_eq!((stored.figures.busy_s, stored.figures.busy_periods), (3750e-9, 50));

    // In order within each chunk, but a call spanning the cut overlaps the next chunk's first.
    let events = [ev(1, 0, IoOp::Read, 0, 10, 0, 1000), ev(1, 0, IoOp::Read, 10, 10, 500, 600)];
    assert!(swept_chunks(&events, &[1]).is_none());
    // Touching across the cut is exact: one busy period.
    let events = [ev(1, 0, IoOp::Read, 0, 10, 0, 1000), ev(1, 0, IoOp::Read, 10, 10, 1000, 1100)];
    let s = swept_chunks(&events, &[1]).expect("in order");
    assert_eq!(
        (s.figures.busy_s, s.figures.busy_periods, s.concurrency.peak_in_flight),
        (1100e-9, 1, Some(1))
    );
}

/// Reads and writes apart are kept from the first call of the second direction on (the
/// histograms of the first are what was recorded until then): each direction's count, mean and
/// maximum are its own, in one pass and in chunks cut anywhere, short latencies (counted by
/// value) and long ones alike.
#[test]
fn directions_split_when_the_second_appears_keep_each_its_own_latencies() {
    let events = [
        ev(1, 0, IoOp::Read, 0, 10, 0, 100),
        ev(1, 0, IoOp::Read, 10, 10, 200, 10_200),
        ev(1, 1, IoOp::Write, 0, 20, 20_000, 20_300),
        ev(1, 1, IoOp::Write, 20, 20, 30_000, 50_000),
        ev(1, 0, IoOp::Read, 20, 10, 60_000, 60_700),
    ];
    let check = |s: &TraceSummary| {
        let (read, write) = (s.figures.read.as_ref().unwrap(), s.figures.write.as_ref().unwrap());
        assert_eq!((read.ops, write.ops), (3, 2));
        // The histograms keep 3 significant digits.
        let close = |got: u64, want: u64| got.abs_diff(want) * 1000 <= want;
        assert!(close(read.lat_ns.min, 100) && close(read.lat_ns.max, 10_000), "{:?}", read.lat_ns);
        assert!(close(write.lat_ns.min, 300) && close(write.lat_ns.max, 20_000), "{:?}", write.lat_ns);
        assert!((read.arpt_s - 10_800e-9 / 3.0).abs() < 1e-15, "{}", read.arpt_s);
        assert!((write.arpt_s - 20_300e-9 / 2.0).abs() < 1e-15, "{}", write.arpt_s);
    };
    check(&analyze(&events, AnalyzeOptions::default()));
    for cut in 1..events.len() {
        check(&chunked(&events, &[cut], &AnalyzeOptions::default()));
    }
}

/// `events` as several agents write them: each thread's calls in blocks of `block`, the
/// threads' blocks in turn.
fn in_blocks_per_thread(events: &[IoEvent], block: usize) -> Vec<IoEvent> {
    let mut threads = std::collections::BTreeMap::<u32, Vec<IoEvent>>::new();
    for e in events {
        threads.entry(e.tid).or_default().push(*e);
    }
    let mut arrival = Vec::new();
    for round in 0.. {
        let before = arrival.len();
        for calls in threads.values() {
            arrival.extend(calls.iter().skip(round * block).take(block));
        }
        if arrival.len() == before {
            return arrival;
        }
    }
    unreachable!()
}

#[test]
fn interleaved_blocks_swept_through_a_reorder_window_give_the_stored_summary_or_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let mut refused = 0;
    for (seed, n) in [(1, 2_000), (2, 5_000), (3, 300)] {
        for events in [generated_trace(n, seed), runs_trace(n, seed)] {
            for block in [1, 13, 200] {
                let arrival = in_blocks_per_thread(&events, block);
                for union_buffer in [4 << 20, 64] {
                    let opts = AnalyzeOptions {
                        union_buffer,
                        spill_dir: Some(dir.path().to_path_buf()),
                        slowest: 7,
                        ..AnalyzeOptions::default()
                    };
                    let stored = summary_json(&chunked(&arrival, &[], &opts));
                    for reorder_window in [n, 150, 3] {
                        let windowed = AnalyzeOptions { in_order: true, reorder_window, ..opts.clone() };
                        let mut a = Analyzer::new(windowed).unwrap();
                        for id in 0..6 {
                            a.path(id, &format!("/f{id}"));
                        }
                        arrival.iter().for_each(|e| a.event(e));
                        let what = format!("seed {seed}, block {block}, window {reorder_window}");
                        match a.finish() {
                            Ok(swept) => assert_eq!(summary_json(&swept), stored, "{what}"),
                            Err(AnalyzeError::OutOfOrder) if reorder_window < n => refused += 1,
                            Err(e) => panic!("{what}: {e}"),
                        }
                    }
                }
            }
        }
    }
    // The small windows must sometimes be too small, or the test would not tell a refusal
    // from a sweep.
    assert!(refused > 0);
}

/// A later chunk whose own reorder window refused a call: the merge refuses too (found by the
/// `analyze` fuzz target: the later chunk's refusal was dropped, and the merge swept its calls
/// as if in order, with a wrong peak in flight).
#[test]
fn a_refusal_in_a_later_chunks_reorder_window_survives_the_merge() {
    let events = [
        ev(1, 0, IoOp::Read, 0, 10, 0, 100),
        ev(1, 0, IoOp::Read, 10, 10, 1000, 1100),
        ev(1, 0, IoOp::Read, 20, 10, 2000, 2100),
        ev(1, 0, IoOp::Read, 30, 10, 3000, 3100),
        // Before the calls the window of one has already released.
        ev(1, 0, IoOp::Read, 40, 10, 500, 2500),
    ];
    let opts = AnalyzeOptions { in_order: true, reorder_window: 1, ..AnalyzeOptions::default() };
    let analyzer = |events: &[IoEvent]| {
        let mut a = Analyzer::new(opts.clone()).unwrap();
        events.iter().for_each(|e| a.event(e));
        a
    };
    assert!(!analyzer(&events).in_order(), "one chunk refuses");
    for cut in 0..events.len() {
        let mut merged = analyzer(&events[..cut]);
        merged.merge(analyzer(&events[cut..]));
        assert!(!merged.in_order(), "cut at {cut}");
        assert!(matches!(merged.finish(), Err(AnalyzeError::OutOfOrder)), "cut at {cut}");
    }
}
