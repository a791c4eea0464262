use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::write::ZlibEncoder;
use iolens_record::event::{IoOp, Layer, UNKNOWN_OFFSET};

use crate::testing::Collect;
use crate::{detect_format, import, import_reader, Format, ImportError, ImportReport};

fn shared(dir: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data").join(dir);
    p.exists().then_some(p)
}

fn read(path: &Path) -> (Collect, ImportReport) {
    let mut c = Collect::default();
    let r = import(path, Format::Darshan, true, &mut c).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (c, r)
}

/// Every value `darshan-parser --total` (3.5.0) printed for every shared log, exactly.
#[test]
fn totals_match_darshan_parser() {
    let Some(dir) = shared("darshan") else {
        eprintln!("skipped: shared Darshan logs not found");
        return;
    };
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected-totals.json")).unwrap()).unwrap();
    let logs = expected.as_object().unwrap();
    assert!(logs.len() >= 12);
    for (name, want) in logs {
        let path = dir.join(name);
        assert_eq!(detect_format(&path).unwrap(), Format::Darshan, "{name}");
        let (c, r) = read(&path);
        let log = r.darshan.as_ref().unwrap();
        for (key, value) in want.as_object().unwrap() {
            let layer_events = |layer| c.events.iter().filter(|e| e.layer == layer).count() as u64;
            let dxt = |m: &str| log.module(m).and_then(|m| m.dxt.as_ref()).map_or(0, |d| d.segments());
            match key.as_str() {
                "log_version" => assert_eq!(log.log_version, value.as_str().unwrap(), "{name}"),
                "incomplete" => assert_eq!(log.incomplete, value.as_bool().unwrap(), "{name}"),
                "DXT_POSIX_SEGMENTS" => {
                    assert_eq!(layer_events(Layer::Posix), value.as_u64().unwrap(), "{name} {key}");
                    assert_eq!(dxt("DXT_POSIX"), value.as_u64().unwrap(), "{name} {key}");
                }
                "DXT_MPIIO_SEGMENTS" => {
                    assert_eq!(layer_events(Layer::MpiIo), value.as_u64().unwrap(), "{name} {key}");
                    assert_eq!(dxt("DXT_MPIIO"), value.as_u64().unwrap(), "{name} {key}");
                }
                counter => assert_eq!(log.counter(counter), value.as_i64(), "{name} {counter}"),
            }
        }
        assert_eq!(r.events, c.events.len() as u64);
    }
}

/// HDF5 counters and summed times, as darshan-util 3.5.0 (through PyDarshan) reads the same logs.
#[test]
fn hdf5_totals_and_time_sums_match_darshan_util() {
    let Some(dir) = shared("darshan") else {
        eprintln!("skipped: shared Darshan logs not found");
        return;
    };
    let (_, r) = read(&dir.join("hdf5_diagonal_write_1_byte_dxt.darshan"));
    let log = r.darshan.unwrap();
    for (name, total) in [
        ("H5F_OPENS", 10),
        ("H5F_FLUSHES", 0),
        ("H5D_OPENS", 10),
        ("H5D_READS", 0),
        ("H5D_WRITES", 10),
        ("H5D_FLUSHES", 0),
        ("H5D_BYTES_READ", 0),
        ("H5D_BYTES_WRITTEN", 10),
    ] {
        assert_eq!(log.counter(name), Some(total), "{name}");
    }
    let (h5f, h5d) = (log.module("H5F").unwrap(), log.module("H5D").unwrap());
    assert_eq!((h5f.version, h5f.records, h5d.version, h5d.records), (3, 10, 2, 10));
    assert_eq!((h5f.read_time_s, h5f.write_time_s), (None, None), "H5F keeps no read or write time");
    assert!((h5f.meta_time_s.unwrap() - 0.053402900).abs() < 1e-9, "{:?}", h5f.meta_time_s);
    assert!((h5d.write_time_s.unwrap() - 0.000298023).abs() < 1e-9);
    assert!((h5d.meta_time_s.unwrap() - 0.001150131).abs() < 1e-9);

    let (_, r) = read(&dir.join("treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"));
    let log = r.darshan.unwrap();
    for (module, read, write, meta) in [
        ("POSIX", 55.439558, 1.035466, 1.016803),
        ("MPI-IO", 55.703928, 171.980669, 2.433037),
        ("STDIO", 0.0, 0.000932, 0.0),
    ] {
        let m = log.module(module).unwrap();
        for (got, want) in [(m.read_time_s, read), (m.write_time_s, write), (m.meta_time_s, meta)] {
            assert!((got.unwrap() - want).abs() < 1e-6, "{module}: {got:?} vs {want}");
        }
    }
}

/// One DXT text row: layer, rank, op, offset, length, start and end in seconds.
type Row = (Layer, u32, IoOp, u64, u64, f64, f64);

fn text_rows(path: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.first().is_some_and(|m| *m == "X_POSIX" || *m == "X_MPIIO"))
        .map(|f| {
            (
                if f[0] == "X_POSIX" { Layer::Posix } else { Layer::MpiIo },
                f[1].parse().unwrap(),
                if f[2] == "write" { IoOp::Write } else { IoOp::Read },
                f[4].parse::<i64>().map_or(UNKNOWN_OFFSET, |o| u64::try_from(o).unwrap_or(UNKNOWN_OFFSET)),
                f[5].parse().unwrap(),
                f[6].parse().unwrap(),
                f[7].parse().unwrap(),
            )
        })
        .collect()
}

/// The binary log's segments are those of its DXT text, in the same order, with times the text
/// rounds to 0.1 ms.
#[test]
fn segments_match_the_dxt_text_with_more_precision() {
    let (Some(bin), Some(txt)) = (shared("darshan"), shared("dxt")) else {
        eprintln!("skipped: shared Darshan logs not found");
        return;
    };
    let mut finer = false;
    for (log, text) in [
        ("hdf5_diagonal_write_1_byte_dxt.darshan", "hdf5_diagonal_write_1_byte_dxt.dxt.txt"),
        (
            "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan",
            "mpi-io-test_32ranks.dxt.txt",
        ),
        ("nonmpi_dxt_anonymized.darshan", "nonmpi_dxt_anonymized.dxt.txt"),
        ("partial_data_dxt.darshan", "partial_data_dxt.dxt.txt"),
        (
            "runtime_and_dxt_heatmaps_diagonal_write_only.darshan",
            "runtime_and_dxt_heatmaps_diagonal_write_only.dxt.txt",
        ),
    ] {
        let rows = text_rows(&txt.join(text));
        let (c, _) = read(&bin.join(log));
        assert_eq!(c.events.len(), rows.len(), "{log}");
        for (e, row) in c.events.iter().zip(&rows) {
            let (layer, rank, op, offset, length, start, end) = *row;
            assert_eq!(
                (e.layer, e.pid, e.op, e.offset, e.requested),
                (layer, rank, op, offset, length),
                "{log}"
            );
            for (ns, s) in [(e.start_ns, start), (e.end_ns, end)] {
                let diff = (ns as f64 / 1e9 - s).abs();
                assert!(diff <= 0.000_050_1, "{log}: {ns} ns vs {s} s");
                finer |= ns % 100_000 != 0;
            }
        }
    }
    assert!(finer, "the binary keeps times finer than the text's 0.1 ms");
}

#[test]
fn job_header_mounts_and_a_truncated_dxt_note() {
    let Some(dir) = shared("darshan") else {
        eprintln!("skipped: shared Darshan logs not found");
        return;
    };
    let (_, r) = read(&dir.join("treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"));
    let log = r.darshan.unwrap();
    let j = &log.job;
    assert_eq!((j.nprocs, j.jobid, j.start_time_s, j.end_time_s), (32, 4373053, 1622673798, 1622673811));
    assert_eq!(j.runtime_s, 14.0, "darshan-parser's run time for whole-second logs");
    assert_eq!(j.exe, "mpi-io-test -i 4 -v");
    assert!(j.metadata.iter().any(|m| m == "lib_ver=3.2.1"), "{:?}", j.metadata);
    assert!(log.mounts.iter().any(|m| m.path == "/yellow/usr/projects/transportapps" && m.fs_type == "nfs"));
    assert!(!log.dxt_incomplete);
    assert!(r.notes.is_empty(), "{:?}", r.notes);

    let (_, r) = read(&dir.join("mpi-io-test-x86_64-3.5.0.darshan"));
    let log = r.darshan.unwrap();
    assert!(log.job.start_time_ns != 0 || log.job.end_time_ns != 0, "3.41 logs keep nanoseconds");
    assert!(log.job.runtime_s.fract() != 0.0, "{}", log.job.runtime_s);

    let (_, r) = read(&dir.join("partial_data_dxt.darshan"));
    let log = r.darshan.unwrap();
    assert!(log.dxt_incomplete && !log.incomplete);
    let note = r.notes.iter().find(|n| n.contains("DXT_POSIX")).expect("a note on the truncated DXT");
    assert!(note.contains("65536 segments") && note.contains("1000000"), "{note}");
    assert!(r.notes.iter().any(|n| n.contains("DXT_MPIIO")), "{:?}", r.notes);
}

/// Writes a small 3.41 log: a POSIX record and a DXT_POSIX record of one write and one read.
struct Builder {
    big_endian: bool,
    version: &'static [u8],
    compression: u8,
    posix_version: u32,
    cut_posix: usize,
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

impl Builder {
    fn new() -> Builder {
        Builder { big_endian: false, version: b"3.41", compression: 0, posix_version: 4, cut_posix: 0 }
    }

    /// Little-endian bytes in the log's byte order.
    fn b<const N: usize>(&self, mut le: [u8; N]) -> [u8; N] {
        if self.big_endian {
            le.reverse();
        }
        le
    }

    fn build(&self) -> Vec<u8> {
        let mut job = Vec::new();
        for v in [1000i64, 1_700_000_000, 250_000_000, 1_700_000_002, 750_000_000, 4, 77] {
            job.extend_from_slice(&self.b(v.to_le_bytes()));
        }
        let mut meta = b"lib_ver=3.5.0\n".to_vec();
        meta.resize(1024, 0);
        job.extend_from_slice(&meta);
        job.extend_from_slice(b"/bin/app -x\nlustre\t/scratch\n\0");
        let mut names = Vec::new();
        names.extend_from_slice(&self.b(42u64.to_le_bytes()));
        names.extend_from_slice(b"/scratch/f\0");
        let mut posix = Vec::new();
        posix.extend_from_slice(&self.b(42u64.to_le_bytes()));
        posix.extend_from_slice(&self.b((-1i64).to_le_bytes()));
        let mut counters = [0i64; 69];
        counters[0] = 2; // OPENS
        counters[3] = 5; // READS
        counters[4] = 7; // WRITES
        counters[14] = 5000; // BYTES_READ
        counters[15] = 7000; // BYTES_WRITTEN
        for c in counters {
            posix.extend_from_slice(&self.b(c.to_le_bytes()));
        }
        for f in 0..17 {
            posix.extend_from_slice(&self.b((f as f64 / 4.0).to_le_bytes()));
        }
        posix.truncate(posix.len() - self.cut_posix);
        let mut dxt = Vec::new();
        dxt.extend_from_slice(&self.b(42u64.to_le_bytes()));
        dxt.extend_from_slice(&self.b(3i64.to_le_bytes()));
        dxt.extend_from_slice(&self.b(0i64.to_le_bytes()));
        dxt.extend_from_slice(&[0u8; 64]);
        dxt.extend_from_slice(&self.b(1i64.to_le_bytes()));
        dxt.extend_from_slice(&self.b(1i64.to_le_bytes()));
        for (offset, len, start, end) in [(4096i64, 100i64, 0.5f64, 0.500_001_5f64), (0, 10, 1.25, 1.5)] {
            for v in [
                self.b(offset.to_le_bytes()),
                self.b(len.to_le_bytes()),
                self.b(start.to_le_bytes()),
                self.b(end.to_le_bytes()),
                self.b(9u64.to_le_bytes()),
            ] {
                dxt.extend_from_slice(&v);
            }
        }
        let pack = |d: &[u8]| if self.compression == 2 { d.to_vec() } else { zlib(d) };
        let regions = [pack(&job), pack(&names), pack(&posix), pack(&dxt)];
        let mut header = vec![0u8; 1328];
        header[..self.version.len()].copy_from_slice(self.version);
        header[8..16].copy_from_slice(&self.b(super::MAGIC.to_le_bytes()));
        header[16] = self.compression;
        let mut at = 1328 + regions[0].len() as u64;
        let mut place = |slot: usize, len: usize| {
            header[slot..slot + 8].copy_from_slice(&self.b(at.to_le_bytes()));
            header[slot + 8..slot + 16].copy_from_slice(&self.b((len as u64).to_le_bytes()));
            at += len as u64;
        };
        place(32, regions[1].len());
        place(48 + 16, regions[2].len());
        place(48 + 16 * 10, regions[3].len());
        header[1072 + 4..1072 + 8].copy_from_slice(&self.b(self.posix_version.to_le_bytes()));
        header[1072 + 40..1072 + 44].copy_from_slice(&self.b(2u32.to_le_bytes()));
        let mut out = header;
        for r in regions {
            out.extend_from_slice(&r);
        }
        out
    }
}

fn import_bytes(bytes: &[u8]) -> (Collect, Result<ImportReport, ImportError>) {
    let mut c = Collect::default();
    let r = import_reader(bytes, Path::new("t.darshan"), Format::Darshan, true, &mut c);
    (c, r)
}

#[test]
fn a_hand_made_log_reads_exactly() {
    for (compression, big_endian) in [(0, false), (2, false), (0, true)] {
        let bytes = Builder { compression, big_endian, ..Builder::new() }.build();
        let (c, r) = import_bytes(&bytes);
        let r = r.unwrap();
        let log = r.darshan.unwrap();
        assert_eq!(log.big_endian, big_endian);
        assert_eq!((log.job.uid, log.job.nprocs, log.job.jobid), (1000, 4, 77));
        assert_eq!(log.job.runtime_s, 2.5);
        assert_eq!(log.job.exe, "/bin/app -x");
        assert_eq!((log.mounts[0].path.as_str(), log.mounts[0].fs_type.as_str()), ("/scratch", "lustre"));
        assert_eq!(
            [log.counter("POSIX_OPENS"), log.counter("POSIX_READS"), log.counter("POSIX_BYTES_WRITTEN")],
            [Some(2), Some(5), Some(7000)]
        );
        let posix = log.module("POSIX").unwrap();
        assert_eq!(
            (posix.records, posix.read_time_s, posix.write_time_s, posix.meta_time_s),
            (1, Some(2.0), Some(2.25), Some(2.5))
        );
        assert_eq!(c.paths, vec![(0, "/scratch/f".to_string())]);
        assert_eq!(c.events.len(), 2);
        let w = &c.events[0];
        assert_eq!((w.op, w.pid, w.tid, w.offset, w.requested), (IoOp::Write, 3, 9, 4096, 100));
        assert_eq!((w.start_ns, w.end_ns), (500_000_000, 500_001_500), "microsecond precision kept");
        assert_eq!(c.events[1].op, IoOp::Read);
        assert!(log.dxt_incomplete, "2 segments against 12 counted operations");
    }
}

fn error_of(bytes: &[u8]) -> String {
    import_bytes(bytes).1.unwrap_err().to_string()
}

#[test]
fn corrupt_logs_name_the_module_and_record() {
    let cut = error_of(&Builder { cut_posix: 8, ..Builder::new() }.build());
    assert!(cut.contains("POSIX module") && cut.contains("record 0"), "{cut}");
    let newer = error_of(&Builder { posix_version: 9, ..Builder::new() }.build());
    assert!(newer.contains("POSIX module") && newer.contains("version 9"), "{newer}");
    let unknown = error_of(&Builder { version: b"3.99", ..Builder::new() }.build());
    assert!(unknown.contains("unknown Darshan log version \"3.99\""), "{unknown}");
    let bzip = error_of(&Builder { compression: 1, ..Builder::new() }.build());
    assert!(bzip.contains("bzip2"), "{bzip}");
    let mut bad = Builder::new().build();
    bad[8] ^= 1;
    assert!(error_of(&bad).contains("magic"));
    let whole = Builder::new().build();
    let truncated = error_of(&whole[..whole.len() - 5]);
    assert!(truncated.contains("ends inside the DXT_POSIX module region"), "{truncated}");
}

/// No prefix and no single flipped byte of a log makes the reader panic or loop.
#[test]
fn damaged_logs_give_errors_not_crashes() {
    let whole = Builder::new().build();
    for n in 0..whole.len() {
        let _ = import_bytes(&whole[..n]);
    }
    let mut seen = HashMap::new();
    for i in 0..whole.len() {
        let mut b = whole.clone();
        b[i] ^= 0xff;
        *seen.entry(import_bytes(&b).1.is_ok()).or_insert(0) += 1;
    }
    assert!(seen.contains_key(&false));
}
