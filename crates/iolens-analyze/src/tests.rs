use iolens_record::event::{IoEvent, IoOp, Layer, UNKNOWN_OFFSET};

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
    assert_eq!(lines[0], "pid,tid,path,op,layer,offset,requested,result,start_ns,end_ns,duration_ns");
    assert_eq!(lines[2], "1,1,/a,read,posix,0,4096,4096,10,110,100");
    assert_eq!(lines[1].split(',').nth(5), Some(""), "unknown offsets are empty");
    assert!(s.notes.iter().any(|n| n.contains("mmap")));
}

#[test]
fn per_op_parquet_has_the_rows_of_the_csv() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tempfile::tempdir().unwrap();
    let (csv, pq) = (dir.path().join("ops.csv"), dir.path().join("ops.parquet"));
    let events = sample();
    analyze(
        &events,
        AnalyzeOptions {
            per_op_csv: Some(csv.clone()),
            per_op_parquet: Some(pq.clone()),
            ..AnalyzeOptions::default()
        },
    );
    let reader = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    let columns: Vec<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    assert_eq!(columns, crate::export::OP_COLUMNS);
    let from_parquet: Vec<String> = reader
        .get_row_iter(None)
        .unwrap()
        .map(|row| {
            let row = row.unwrap();
            row.get_column_iter()
                .map(|(_, field)| match field {
                    parquet::record::Field::Null => String::new(),
                    parquet::record::Field::Str(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let text = std::fs::read_to_string(&csv).unwrap();
    let from_csv: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(from_parquet.len(), events.len());
    assert_eq!(from_parquet, from_csv, "same rows, nulls where the CSV is empty");
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
    let empty = analyze(&[], AnalyzeOptions::default());
    assert!(emit_workload(&empty, "/x").is_err());
    assert_eq!(empty.figures.ops, 0);
}
