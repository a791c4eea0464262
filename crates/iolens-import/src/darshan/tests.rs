use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::write::ZlibEncoder;
use iolens_record::event::{IoOp, Layer, UNKNOWN_OFFSET};

use crate::testing::Collect;
use crate::{detect_format, import, import_reader, Format, ImportError, ImportReport};

/// A directory of the shared data sets (`../shared/data/DIR`, beside the checkout); `None` (the
/// test skips) where they are not there.
fn shared(dir: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data").join(dir);
    crate::prerequisite::require_data(p.exists(), &format!("the shared data sets ({})", p.display()))
        .then_some(p)
}

fn read(path: &Path) -> (Collect, ImportReport) {
    let mut c = Collect::default();
    let r = import(path, Format::Darshan, true, &mut c).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (c, r)
}

/// Every value `darshan-parser --total` (3.5.0) printed for every shared log, exactly.
#[test]
fn totals_match_darshan_parser() {
    let Some(dir) = shared("darshan") else { return };
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
    let Some(dir) = shared("darshan") else { return };
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
    let (Some(bin), Some(txt)) = (shared("darshan"), shared("dxt")) else { return };
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
    let Some(dir) = shared("darshan") else { return };
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

/// Writes a small 3.41 log: a POSIX record and a DXT_POSIX record of one write and one read,
/// and LUSTRE records when given.
struct Builder {
    big_endian: bool,
    version: &'static [u8],
    compression: u8,
    posix_version: u32,
    cut_posix: usize,
    /// The POSIX region as this many bzip2 streams of ~1 MiB of zeros each (whole records).
    posix_zero_streams: usize,
    /// The LUSTRE module's decompressed bytes (none when empty) and format version.
    lustre: Vec<u8>,
    lustre_version: u32,
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// A POSIX record of format version 4, and how many make about 1 MiB.
const POSIX_V4_LEN: usize = 16 + 8 * (69 + 17);
const ZERO_RECORDS: usize = (1 << 20) / POSIX_V4_LEN;

fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut z = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

impl Builder {
    fn new() -> Builder {
        Builder {
            big_endian: false,
            version: b"3.41",
            compression: 0,
            posix_version: 4,
            cut_posix: 0,
            posix_zero_streams: 0,
            lustre: Vec::new(),
            lustre_version: 2,
        }
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
        let pack = |d: &[u8]| match self.compression {
            0 => zlib(d),
            1 => bzip2(d),
            _ => d.to_vec(),
        };
        let posix = if self.posix_zero_streams > 0 {
            bzip2(&vec![0u8; POSIX_V4_LEN * ZERO_RECORDS]).repeat(self.posix_zero_streams)
        } else {
            pack(&posix)
        };
        let lustre = if self.lustre.is_empty() { Vec::new() } else { pack(&self.lustre) };
        let regions = [pack(&job), pack(&names), posix, pack(&dxt), lustre];
        let mut header = vec![0u8; 1328];
        header[..self.version.len()].copy_from_slice(self.version);
        header[8..16].copy_from_slice(&self.b(super::header::MAGIC.to_le_bytes()));
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
        place(48 + 16 * 8, regions[4].len());
        header[1072 + 4..1072 + 8].copy_from_slice(&self.b(self.posix_version.to_le_bytes()));
        header[1072 + 32..1072 + 36].copy_from_slice(&self.b(self.lustre_version.to_le_bytes()));
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
    for (compression, big_endian) in [(0, false), (2, false), (0, true), (1, false), (1, true)] {
        let bytes = Builder { compression, big_endian, ..Builder::new() }.build();
        let (c, r) = import_bytes(&bytes);
        let r = r.unwrap();
        let log = r.darshan.unwrap();
        assert_eq!(log.big_endian, big_endian);
        assert_eq!(log.compression, ["zlib", "bzip2", "none"][usize::from(compression)]);
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
    let mut bad = Builder::new().build();
    bad[8] ^= 1;
    assert!(error_of(&bad).contains("magic"));
    let whole = Builder::new().build();
    let truncated = error_of(&whole[..whole.len() - 5]);
    assert!(truncated.contains("ends inside the DXT_POSIX module region"), "{truncated}");
}

/// No prefix and no single flipped byte of a log (zlib or bzip2, with LUSTRE records) makes the
/// reader panic or loop.
#[test]
fn damaged_logs_give_errors_not_crashes() {
    for compression in [0, 1] {
        let whole = Builder { compression, lustre: lustre_v2(false), ..Builder::new() }.build();
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
}

/// Every zlib stream of a region, decompressed and joined.
fn inflate(mut region: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while !region.is_empty() {
        let mut d = flate2::bufread::ZlibDecoder::new(region);
        d.read_to_end(&mut out).unwrap();
        region = d.into_inner();
    }
    out
}

/// A little-endian zlib log re-encoded as darshan-util writes bzip2 logs: every region (job,
/// names, modules) compressed again as bzip2, in two streams (as after a flush).
fn as_bzip2(log: &[u8]) -> Vec<u8> {
    assert_eq!(u64::from_le_bytes(log[8..16].try_into().unwrap()), super::header::MAGIC);
    assert_eq!(log[16], 0, "a zlib log");
    let minor: u32 = std::str::from_utf8(&log[2..4]).unwrap().parse().unwrap();
    let (header_len, names_at, slots) = if minor >= 41 { (1328, 32, 64) } else { (360, 24, 16) };
    let entry = |at: usize| {
        let word = |i: usize| u64::from_le_bytes(log[at + i..at + i + 8].try_into().unwrap()) as usize;
        (at, word(0), word(8))
    };
    let mut regions: Vec<(usize, usize, usize)> = std::iter::once(names_at)
        .chain((0..slots).map(|s| names_at + 16 + 16 * s))
        .map(entry)
        .filter(|&(_, _, len)| len > 0)
        .collect();
    regions.sort_by_key(|r| r.1);
    let job_end = regions.first().map_or(log.len(), |r| r.1);
    let mut out = log[..header_len].to_vec();
    out[16] = 1;
    let push = |out: &mut Vec<u8>, compressed: &[u8]| {
        let data = inflate(compressed);
        let (a, b) = data.split_at(data.len() / 2);
        let at = out.len();
        out.extend(bzip2(a));
        out.extend(bzip2(b));
        (at as u64, (out.len() - at) as u64)
    };
    push(&mut out, &log[header_len..job_end]);
    for (entry_at, off, len) in regions {
        let (at, len) = push(&mut out, &log[off..off + len]);
        out[entry_at..entry_at + 8].copy_from_slice(&at.to_le_bytes());
        out[entry_at + 8..entry_at + 16].copy_from_slice(&len.to_le_bytes());
    }
    out
}

/// The log as JSON, less what differs between compressions.
fn comparable(log: &super::DarshanLog) -> serde_json::Value {
    let mut v = serde_json::to_value(log).unwrap();
    v.as_object_mut().unwrap().remove("compression");
    for m in v["modules"].as_array_mut().unwrap() {
        m.as_object_mut().unwrap().remove("compressed_bytes");
    }
    v
}

/// Every shared zlib log, re-encoded as bzip2: the same job, mounts, modules, counter totals,
/// Lustre striping, notes, file names and DXT segments.
#[test]
fn bzip2_logs_read_exactly_as_their_zlib_originals() {
    let Some(dir) = shared("darshan") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "darshan") {
            continue;
        }
        let original = std::fs::read(&path).unwrap();
        let bz_path = tmp.path().join(path.file_name().unwrap());
        std::fs::write(&bz_path, as_bzip2(&original)).unwrap();
        let (zc, zr) = read(&path);
        let (bc, br) = read(&bz_path);
        let name = path.display();
        let (zlog, blog) = (zr.darshan.as_ref().unwrap(), br.darshan.as_ref().unwrap());
        assert_eq!((zlog.compression, blog.compression), ("zlib", "bzip2"), "{name}");
        assert_eq!(comparable(zlog), comparable(blog), "{name}");
        assert_eq!(zc.events, bc.events, "{name}");
        assert_eq!(zc.paths, bc.paths, "{name}");
        assert_eq!(zr.notes, br.notes, "{name}");
        assert_eq!(zr.events, br.events, "{name}");
        compared += 1;
    }
    assert!(compared >= 12, "{compared} logs");
}

#[test]
fn a_bzip2_bomb_is_refused_naming_the_module() {
    // 80 MiB of zeros in 80 streams of ~50 bytes: far past 1024 times the region's size.
    let bomb = error_of(&Builder { compression: 1, posix_zero_streams: 80, ..Builder::new() }.build());
    assert!(bomb.contains("POSIX module") && bomb.contains("decompression bomb"), "{bomb}");
    // Below the floor, zeros are only records of zeros.
    let (_, r) = import_bytes(&Builder { compression: 1, posix_zero_streams: 2, ..Builder::new() }.build());
    let log = r.unwrap().darshan.unwrap();
    assert_eq!(log.module("POSIX").unwrap().records, 2 * ZERO_RECORDS as u64);
}

#[test]
fn cut_or_corrupt_bzip2_regions_give_clear_errors() {
    let whole = Builder { compression: 1, ..Builder::new() }.build();
    let truncated = error_of(&whole[..whole.len() - 5]);
    assert!(truncated.contains("ends inside the DXT_POSIX module region"), "{truncated}");
    // The third bzip2 stream is the POSIX region's (after the job and the names).
    let starts: Vec<usize> =
        whole.windows(4).enumerate().filter(|(_, w)| w == b"BZh9").map(|(i, _)| i).collect();
    let mut corrupt = whole.clone();
    corrupt[starts[2] + 30] ^= 0x55;
    let e = error_of(&corrupt);
    assert!(e.contains("POSIX module cannot be decompressed"), "{e}");
    // A region cut inside its stream, the header still claiming the full length.
    let mut short = whole.clone();
    short.truncate(starts[3] - 8);
    let e = error_of(&short);
    assert!(e.contains("POSIX module"), "{e}");
}

/// A version 2 LUSTRE record of file 42 (rank −1): a 1 MiB × 2 component over the first
/// 64 MiB, a 4 MiB × 3 one to the end of the file in pool "flash", then an unused component
/// (stripe size −1) and an unused OST id slot, as a runtime that stopped early leaves them.
fn lustre_v2(big_endian: bool) -> Vec<u8> {
    let b = |v: i64| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut r = Vec::new();
    for v in [42, -1, 3, 6] {
        r.extend_from_slice(&b(v));
    }
    for (size, count, start, end, pool) in
        [(1 << 20, 2, 0, 64 << 20, &b""[..]), (4 << 20, 3, 64 << 20, -1, b"flash"), (-1, 0, 0, 0, b"")]
    {
        for v in [size, count, 0, 0x10, start, end, 0] {
            r.extend_from_slice(&b(v));
        }
        let mut name = [0u8; 16];
        name[..pool.len()].copy_from_slice(pool);
        r.extend_from_slice(&name);
    }
    for ost in [7, 8, 1, 2, 3, 99] {
        r.extend_from_slice(&b(ost));
    }
    r
}

#[test]
fn lustre_striping_is_decoded_per_file() {
    for big_endian in [false, true] {
        let bytes = Builder { big_endian, lustre: lustre_v2(big_endian), ..Builder::new() }.build();
        let log = import_bytes(&bytes).1.unwrap().darshan.unwrap();
        let m = log.module("LUSTRE").unwrap();
        assert!(m.decoded && m.records == 1 && m.version == 2);
        assert_eq!(log.lustre.len(), 1);
        let f = &log.lustre[0];
        assert_eq!((f.path.as_str(), f.rank), ("/scratch/f", -1));
        assert_eq!((f.stripe_count, f.stripe_size, f.stripe_offset), (5, 1 << 20, Some(7)));
        assert_eq!(f.ost_ids, [7, 8, 1, 2, 3], "the unused slot is dropped");
        assert_eq!(f.components.len(), 2, "the unused component is dropped");
        let c = &f.components[1];
        assert_eq!((c.stripe_size, c.stripe_count, c.extent_start, c.extent_end), (4 << 20, 3, 64 << 20, -1));
        assert_eq!((c.flags, c.pool.as_str()), (0x10, "flash"));
    }

    // Version 1: OSTs and MDTs of the file system, first OST, stripe size and count, OST ids.
    let mut v1 = Vec::new();
    for v in [42i64, 0, 56, 1, 12, 1 << 22, 2, 12, 13] {
        v1.extend_from_slice(&v.to_le_bytes());
    }
    let log = import_bytes(&Builder { lustre: v1, lustre_version: 1, ..Builder::new() }.build()).1.unwrap();
    let f = &log.darshan.unwrap().lustre[0];
    assert_eq!((f.rank, f.stripe_count, f.stripe_size, f.stripe_offset), (0, 2, 1 << 22, Some(12)));
    assert_eq!((f.fs_osts, f.fs_mdts, f.ost_ids.as_slice()), (Some(56), Some(1), &[12i64, 13][..]));
    assert_eq!(f.components[0].extent_end, -1);
}

#[test]
fn corrupt_lustre_records_name_the_module_and_record() {
    let mut two = lustre_v2(false);
    two.extend(lustre_v2(false));
    let cut = error_of(&Builder { lustre: two[..two.len() - 4].to_vec(), ..Builder::new() }.build());
    assert!(cut.contains("LUSTRE module is corrupt: record 1") && cut.contains("OST id 5 of 6"), "{cut}");
    let mut huge = lustre_v2(false);
    huge[16..24].copy_from_slice(&(1i64 << 40).to_le_bytes());
    let e = error_of(&Builder { lustre: huge, ..Builder::new() }.build());
    assert!(e.contains("record 0") && e.contains("1099511627776 layout components"), "{e}");
    let mut short = lustre_v2(false);
    short[24..32].copy_from_slice(&4i64.to_le_bytes());
    let e = error_of(&Builder { lustre: short, ..Builder::new() }.build());
    assert!(e.contains("components of 5 stripes but only 4 OST ids"), "{e}");
    // A record without components has no OST ids after it, whatever its stripe count says.
    let mut bare = Vec::new();
    for v in [42i64, 0, 0, 5] {
        bare.extend_from_slice(&v.to_le_bytes());
    }
    bare.extend(lustre_v2(false));
    let log = import_bytes(&Builder { lustre: bare, ..Builder::new() }.build()).1.unwrap().darshan.unwrap();
    assert_eq!(log.lustre.len(), 2);
    assert_eq!((log.lustre[0].stripe_count, log.lustre[1].stripe_count), (0, 5));
    let newer = error_of(&Builder { lustre: lustre_v2(false), lustre_version: 3, ..Builder::new() }.build());
    assert!(newer.contains("LUSTRE module has format version 3"), "{newer}");
}

/// The shared 3.4.7 and 3.5.0 logs hold one LUSTRE record each; PyDarshan 3.5 (darshan-util)
/// reads it as: the shared file, 1 MiB stripes over one OST (id 1), pattern raid0, flags 0.
#[test]
fn lustre_records_of_real_logs_match_darshan_util() {
    let Some(dir) = shared("darshan") else { return };
    let (_, r) = read(&dir.join("mpi-io-test-x86_64-3.5.0.darshan"));
    let log = r.darshan.unwrap();
    assert_eq!(log.lustre.len(), 1);
    let f = &log.lustre[0];
    assert_eq!(f.path, "/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat");
    assert_eq!((f.rank, f.stripe_count, f.stripe_size, f.ost_ids.as_slice()), (-1, 1, 1 << 20, &[1i64][..]));
    let c = &f.components[0];
    assert_eq!([c.pattern, c.flags, c.extent_start, c.extent_end, c.mirror_id], [0, 0, 0, -1, 0]);
}
