//! The MPI-IO layer of `iolens trace` under `mpirun -np 4` (feature `mpi`; run by
//! `scripts/test-mpi`): a small MPI-IO program (`data/mpiio_app.c`) is compiled with `mpicc`
//! and traced both ways a user would — `mpirun … iolens trace -- app` (one summary by rank 0)
//! and `mpirun … env LD_PRELOAD=… app` then `iolens analyze DIR` — through ROMIO, with data
//! sieving on for its strided read. The program knows exactly what it asks MPI-IO for; the
//! MPI-IO figures must say the same, and the POSIX calls beneath must have moved at least that.
//! Where MPICH is installed beside Open MPI, the same program built by its `mpicc.mpich` (MPI 4:
//! every large-count `_c` form too) is traced under its `mpirun.mpich`; a Fortran program
//! (`data/mpiio_fortran.f90`, `mpif.h`, and the same through `use mpi_f08`) is traced under
//! both libraries. Programs reading past the end of their files (`data/*eof*`) check that each
//! read records the bytes its status says it moved, however it completes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::util::{have, require, u};

const RANKS: u64 = 4;
/// What each rank of `mpiio_app.c` asks for: 4 collective writes of 64 KiB, 2 independent
/// writes of 16 KiB, 3 nonblocking writes of 8 KiB (MPI_Waitall) and one of 8 KiB (MPI_Wait), a
/// split collective write of 2 KiB, a nonblocking write of 8 KiB completed by `PMPI_Wait` (no
/// hook sees it: counted when the library reuses its handle); a nonblocking read of 1 KiB
/// (MPI_Test), a strided read of 16 KiB (data sieving), a collective read of 4 KiB and a
/// nonblocking read of 1 KiB completed by `PMPI_Wait` (counted at MPI_Finalize under Open MPI,
/// where it is the last nonblocking call).
const WRITE_OPS: u64 = 4 + 2 + 3 + 1 + 1 + 1;
const WRITE_BYTES: u64 = 4 * 65536 + 2 * 16384 + 3 * 8192 + 8192 + 2048 + 8192;
const READ_OPS: u64 = 4;
const READ_BYTES: u64 = 1024 + 16384 + 4096 + 1024;
/// The strided read covers 16 blocks of 1 KiB every 4 KiB: data sieving reads the extent.
const SIEVED_EXTENT: u64 = 15 * 4096 + 1024;
/// Built against MPI 4, the program also makes every large-count read and write once (14 of
/// each, 1 KiB each) on `large_count.dat`, and says so.
const LARGE_COUNT_CALLS: u64 = 28;
const LARGE_COUNT_BYTES: u64 = 1024;
/// What each rank of `mpiio_fortran.f90` asks for: 9 writes (3 nonblocking, 1 split
/// collective) and 3 reads (1 nonblocking) of 4 KiB.
const FORTRAN_WRITES: u64 = 9;
const FORTRAN_READS: u64 = 3;
const FORTRAN_BYTES: u64 = 4096;

/// An MPI library: its compilers and launcher.
#[derive(Clone, Copy)]
enum Library {
    /// Open MPI with ROMIO as its MPI-IO component.
    OpenMpi,
    /// Open MPI with its own MPI-IO component, ompio.
    OpenMpiOmpio,
    Mpich,
}

impl Library {
    fn mpicc(self) -> &'static str {
        match self {
            Library::OpenMpi | Library::OpenMpiOmpio => "mpicc",
            Library::Mpich => "mpicc.mpich",
        }
    }

    fn mpif90(self) -> &'static str {
        match self {
            Library::OpenMpi | Library::OpenMpiOmpio => "mpif90",
            Library::Mpich => "mpif90.mpich",
        }
    }

    /// Whether the library is installed (MPICH is optional beside Open MPI).
    fn installed(self) -> bool {
        let launcher = match self {
            Library::OpenMpi | Library::OpenMpiOmpio => "mpirun",
            Library::Mpich => "mpirun.mpich",
        };
        have(self.mpicc()) && have(launcher)
    }

    /// `mpirun -np 4 ARGS` of this library (Open MPI's with ROMIO as its MPI-IO component).
    fn run(self, args: &[&str]) -> Output {
        let out = match self {
            Library::OpenMpi => return mpirun(args),
            Library::OpenMpiOmpio => return mpirun_with_io("ompio", args),
            Library::Mpich => Command::new("mpirun.mpich")
                .args(["-np", &RANKS.to_string()])
                .args(args)
                .output()
                .expect("mpirun.mpich (apt-get install mpich)"),
        };
        assert!(
            out.status.success(),
            "mpirun.mpich {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        out
    }
}

/// Whether MPICH is missing (it is optional beside Open MPI): its tests then say they were
/// skipped, and pass.
fn mpich_missing() -> bool {
    !require(Library::Mpich.installed(), "MPICH (apt-get install mpich libmpich-dev)")
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_iolens")
}

/// The test program, compiled with Open MPI's mpicc into `dir`.
fn compile_app(dir: &Path) -> PathBuf {
    compile(Library::OpenMpi.mpicc(), "mpiio_app.c", dir)
}

/// `tests/data/SOURCE` compiled by `compiler` into `dir`.
fn compile(compiler: &str, source: &str, dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(source);
    let exe = dir.join(source.file_stem().unwrap());
    let out =
        Command::new(compiler).arg("-O1").arg("-o").arg(&exe).arg(&source).output().unwrap_or_else(|e| {
            panic!("{compiler}: {e} (apt-get install libopenmpi-dev mpich libmpich-dev gfortran)")
        });
    assert!(out.status.success(), "{compiler} failed: {}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// `mpirun -np 4` with ROMIO as the MPI-IO component (its data sieving is what the test reads).
fn mpirun(args: &[&str]) -> Output {
    mpirun_with_io("romio321", args)
}

/// `mpirun -np 4` with `io` (romio321 or ompio) as Open MPI's MPI-IO component.
fn mpirun_with_io(io: &str, args: &[&str]) -> Output {
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string(), "--mca", "io", io])
        .args(args)
        .output()
        .expect("mpirun (install openmpi-bin)");
    assert!(
        out.status.success(),
        "mpirun {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn layer<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == name)
        .unwrap_or_else(|| panic!("no {name} layer in {}", summary["layers"]))
}

/// (ops, read bytes, written bytes) of `path` at `layer`: its one row, which every rank's
/// calls on the file add to.
fn file_totals(summary: &Value, path: &Path, layer: &str) -> (u64, u64, u64) {
    let rows: Vec<&Value> = summary["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == path.to_str().unwrap() && f["layer"] == layer)
        .collect();
    assert_eq!(rows.len(), 1, "one {layer} row for {}, over all ranks: {rows:?}", path.display());
    (u(&rows[0]["ops"]), u(&rows[0]["read_bytes"]), u(&rows[0]["write_bytes"]))
}

/// The large-count calls per rank the program says it made.
fn large_count_calls(stdout: &[u8]) -> u64 {
    let stdout = String::from_utf8_lossy(stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("large-count calls per rank: "));
    line.unwrap_or_else(|| panic!("the program did not say: {stdout}")).trim().parse().unwrap()
}

/// What every summary of a run of the program must say; `large_count` calls per rank were made
/// besides on `large_count.dat`.
fn check_summary(summary: &Value, data: &Path, large_count: u64) {
    check_mpiio_and_posix_writes(summary, data, large_count);
    // ROMIO's data sieving read each rank's whole strided extent, holes included.
    let (_, posix_read, _) = file_totals(summary, &data.join("shared.dat"), "posix");
    assert!(posix_read >= RANKS * (SIEVED_EXTENT + 4096), "posix read {posix_read}: no data sieving?");
}

/// The MPI-IO figures are exact, and the POSIX calls beneath wrote at least what was asked.
fn check_mpiio_and_posix_writes(summary: &Value, data: &Path, large_count: u64) {
    let shared = data.join("shared.dat");
    assert_eq!(summary["aggregate_layer"], "mpiio");
    let mpiio = layer(summary, "mpiio");
    let large_each_way = large_count / 2;
    assert_eq!(u(&mpiio["ops"]), RANKS * (WRITE_OPS + READ_OPS + large_count), "{mpiio}");
    assert_eq!(
        u(&mpiio["write_bytes"]),
        RANKS * (WRITE_BYTES + large_each_way * LARGE_COUNT_BYTES),
        "{mpiio}"
    );
    assert_eq!(u(&mpiio["read_bytes"]), RANKS * (READ_BYTES + large_each_way * LARGE_COUNT_BYTES), "{mpiio}");
    assert!(mpiio["bps"].as_f64().unwrap() > 0.0 && mpiio["busy_s"].as_f64().unwrap() > 0.0, "{mpiio}");
    assert_eq!(u(&summary["write_ops"]), RANKS * (WRITE_OPS + large_each_way));
    assert_eq!(u(&summary["read_ops"]), RANKS * (READ_OPS + large_each_way));
    if large_count > 0 {
        let bytes = RANKS * large_each_way * LARGE_COUNT_BYTES;
        assert_eq!(
            file_totals(summary, &data.join("large_count.dat"), "mpiio"),
            (RANKS * large_count, bytes, bytes),
            "every large-count form"
        );
    }
    assert_eq!(
        file_totals(summary, &shared, "mpiio"),
        (RANKS * (WRITE_OPS + READ_OPS), RANKS * READ_BYTES, RANKS * WRITE_BYTES)
    );
    // Beneath: the POSIX calls the middleware made on the file wrote at least what was asked,
    // the nonblocking writes it hands to POSIX aio (MPICH's ROMIO, ompio) included.
    let (_, _, posix_written) = file_totals(summary, &shared, "posix");
    assert!(posix_written >= RANKS * WRITE_BYTES, "posix wrote {posix_written}");
    let ranks: Vec<u64> = summary["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["layer"] == "mpiio")
        .map(|p| u(&p["ops"]))
        .collect();
    assert_eq!(
        ranks,
        vec![WRITE_OPS + READ_OPS + large_count; RANKS as usize],
        "one row of MPI-IO calls per rank"
    );
    let notes = summary["notes"].to_string();
    // One node: every rank shares rank 0's kernel, and so its clock.
    assert!(
        notes.contains("MPI job of 4 rank(s): 4 traced; all ranks ran on one node, under one clock"),
        "{notes}"
    );
    assert!(!notes.contains("DROPPED") && !notes.contains("left no stream"), "{notes}");
}

/// The temporary job directories of `mpirun … iolens trace` runs.
fn job_dirs() -> std::collections::BTreeSet<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("iolens-trace-mpi-"))
        .collect()
}

#[test]
fn mpirun_iolens_trace_gives_one_summary_with_exact_mpiio_figures() {
    let dir = tempfile::tempdir().unwrap();
    let app = compile_app(dir.path());
    let json = dir.path().join("trace.json");
    let before = job_dirs();
    let out = mpirun(&[
        bin(),
        "trace",
        "--top",
        "100000",
        "--json",
        json.to_str().unwrap(),
        "--",
        app.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("data ops (").count(), 1, "one summary, by rank 0:\n{stdout}");
    assert!(stdout.contains("mpiio calls"), "{stdout}");
    // The printed per-file table too: one row per layer for the file all ranks share.
    let shared = dir.path().join("shared.dat");
    for layer in ["mpiio", "posix"] {
        let rows = stdout
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(layer) && l.ends_with(shared.to_str().unwrap()))
            .count();
        assert_eq!(rows, 1, "{layer} rows of {}:\n{stdout}", shared.display());
    }
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check_summary(&summary, dir.path(), large_count_calls(&out.stdout));
    let leftovers: Vec<String> = job_dirs().difference(&before).cloned().collect();
    assert!(leftovers.is_empty(), "rank 0 removes the job's temporary directory: {leftovers:?}");
}

/// `mpirun -np 4 env LD_PRELOAD=… IOLENS_TRACE_DIR=… IOLENS_MPI_CLOCK=1 APP DIR` under `library`,
/// then `iolens analyze`: the summary, and what the program printed.
fn preloaded_then_analyzed(library: Library, app: &Path, dir: &Path) -> (Value, Vec<u8>) {
    preloaded_then_analyzed_measuring(library, app, dir, true)
}

/// [`preloaded_then_analyzed`], the ranks' clocks measured (`IOLENS_MPI_CLOCK=1`) or not.
fn preloaded_then_analyzed_measuring(
    library: Library,
    app: &Path,
    dir: &Path,
    measure_clocks: bool,
) -> (Value, Vec<u8>) {
    // The preload `iolens trace` uses, as the program sees it.
    let seen = dir.join("ld_preload");
    let out = Command::new(bin())
        .args(["trace", "--", "sh", "-c", &format!("printf %s \"$LD_PRELOAD\" > '{}'", seen.display())])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let preload = std::fs::read_to_string(&seen).unwrap();
    assert!(preload.ends_with(".so"), "{preload}");
    let streams = dir.join("streams");
    std::fs::create_dir(&streams).unwrap();
    let ran = library.run(&[
        "env",
        &format!("LD_PRELOAD={preload}"),
        &format!("IOLENS_TRACE_DIR={}", streams.display()),
        if measure_clocks { "IOLENS_MPI_CLOCK=1" } else { "IOLENS_MPI_CLOCK=0" },
        app.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    let clock_files: Vec<String> = std::fs::read_dir(&streams)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mpi"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(clock_files.len(), RANKS as usize, "one clock file per rank");
    let expected: &[&str] =
        if measure_clocks { &["rank", "boot", "init", "finalize"] } else { &["rank", "boot"] };
    for text in &clock_files {
        let keys: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(keys, expected, "marked once, measured at MPI_Init and MPI_Finalize if asked: {text}");
    }
    let json = dir.join("analyze.json");
    let out = Command::new(bin())
        .args(["analyze", "--top", "100000", "--json", json.to_str().unwrap(), streams.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap(), ran.stdout)
}

#[test]
fn preloaded_ranks_then_analyze_give_the_same_figures_on_rank_0s_clock() {
    let dir = tempfile::tempdir().unwrap();
    let app = compile_app(dir.path());
    let (summary, stdout) = preloaded_then_analyzed(Library::OpenMpi, &app, dir.path());
    check_summary(&summary, dir.path(), large_count_calls(&stdout));
}

#[test]
fn under_mpich_every_large_count_form_is_counted() {
    if mpich_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = compile(Library::Mpich.mpicc(), "mpiio_app.c", dir.path());
    let (summary, stdout) = preloaded_then_analyzed(Library::Mpich, &app, dir.path());
    let large_count = large_count_calls(&stdout);
    assert_eq!(large_count, LARGE_COUNT_CALLS, "MPICH 4 is MPI 4: the program makes every _c call");
    check_summary(&summary, dir.path(), large_count);
}

/// ompio writes through POSIX aio for nonblocking and split collective calls, which glibc
/// carries out in helper threads past the POSIX hooks: the aio hooks count them.
#[test]
fn under_ompio_the_posix_layer_beneath_has_the_asynchronous_writes() {
    let dir = tempfile::tempdir().unwrap();
    let app = compile_app(dir.path());
    let (summary, stdout) = preloaded_then_analyzed(Library::OpenMpiOmpio, &app, dir.path());
    check_mpiio_and_posix_writes(&summary, dir.path(), large_count_calls(&stdout));
}

/// The Fortran program `source`'s calls, counted exactly at the MPI-IO layer under `library`.
fn check_fortran(library: Library, source: &str, measure_clocks: bool) {
    let dir = tempfile::tempdir().unwrap();
    let app = compile(library.mpif90(), source, dir.path());
    let (summary, _) = preloaded_then_analyzed_measuring(library, &app, dir.path(), measure_clocks);
    let mpiio = layer(&summary, "mpiio");
    assert_eq!(u(&mpiio["ops"]), RANKS * (FORTRAN_WRITES + FORTRAN_READS), "{mpiio}");
    assert_eq!(u(&mpiio["write_bytes"]), RANKS * FORTRAN_WRITES * FORTRAN_BYTES, "{mpiio}");
    assert_eq!(u(&mpiio["read_bytes"]), RANKS * FORTRAN_READS * FORTRAN_BYTES, "{mpiio}");
    // The path comes from the Fortran string (blank-padded, no NUL), and every rank's calls
    // land on it.
    assert_eq!(
        file_totals(&summary, &dir.path().join("fortran.dat"), "mpiio"),
        (
            RANKS * (FORTRAN_WRITES + FORTRAN_READS),
            RANKS * FORTRAN_READS * FORTRAN_BYTES,
            RANKS * FORTRAN_WRITES * FORTRAN_BYTES
        )
    );
}

/// Open MPI's Fortran wrappers call `PMPI_` directly, past the C hooks: the Fortran hooks
/// count them.
#[test]
fn fortran_mpiio_calls_are_counted_under_open_mpi() {
    check_fortran(Library::OpenMpi, "mpiio_fortran.f90", true);
}

/// `use mpi_f08` under Open MPI goes through its `ompi_*_f` functions, PMPI_ beneath.
#[test]
fn fortran_2008_mpiio_calls_are_counted_under_open_mpi() {
    check_fortran(Library::OpenMpi, "mpiio_fortran_f08.f90", true);
}

/// MPICH's Fortran wrappers call the C functions: counted once, not twice.
#[test]
fn fortran_mpiio_calls_are_counted_once_under_mpich() {
    if mpich_missing() {
        return;
    }
    check_fortran(Library::Mpich, "mpiio_fortran.f90", true);
    // Without clock measurements, MPICH's Fortran MPI_INIT reaching the C MPI_Init still marks
    // each rank once.
    check_fortran(Library::Mpich, "mpiio_fortran_f08.f90", false);
}

/// (calls, bytes asked, bytes moved) of the MPI-IO reads in `iolens analyze --csv` rows.
fn mpiio_reads(csv: &str) -> (u64, u64, u64) {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("column {name}"));
    let (op, layer, requested, result) = (col("op"), col("layer"), col("requested"), col("result"));
    lines
        .map(|l| l.split(',').collect::<Vec<&str>>())
        .filter(|f| f[layer] == "mpiio" && f[op] == "read")
        .fold((0, 0, 0), |(n, asked, moved), f| {
            let result: i64 = f[result].parse().unwrap();
            assert!(result >= 0, "no read failed: {f:?}");
            (n + 1, asked + f[requested].parse::<u64>().unwrap(), moved + result as u64)
        })
}

/// What each rank of the programs reading past the end of a file asks for per read: 4096 bytes
/// (1024 Fortran integers), of a file of 400 bytes.
const EOF_READ_BYTES: u64 = 4096;

/// The program `source`, compiled by `compiler` and run under `library`, reads past the end of
/// its files `reads` times per rank: each read records the bytes asked and those it moved, as the
/// program's own `MPI_Get_count` says (where it ignores a status, it adds what the status would
/// have said), not those it asked for.
fn check_short_reads(library: Library, compiler: &str, source: &str, reads: u64) {
    let dir = tempfile::tempdir().unwrap();
    let app = compile(compiler, source, dir.path());
    let (_, stdout) = preloaded_then_analyzed(library, &app, dir.path());
    let stdout = String::from_utf8_lossy(&stdout);
    let said: Vec<u64> = stdout
        .lines()
        .filter_map(|l| {
            l.trim().strip_prefix("rank ")?.split_once(" read ")?.1.strip_suffix(" bytes")?.parse().ok()
        })
        .collect();
    assert_eq!(said.len(), RANKS as usize, "each rank says what it read: {stdout}");
    let csv = dir.path().join("ops.csv");
    let out = Command::new(bin())
        .args(["analyze", "--csv", csv.to_str().unwrap(), dir.path().join("streams").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = std::fs::read_to_string(&csv).unwrap();
    let (calls, asked, moved) = mpiio_reads(&rows);
    assert_eq!((calls, asked), (RANKS * reads, RANKS * reads * EOF_READ_BYTES), "{rows}");
    assert_eq!(moved, said.iter().sum::<u64>(), "bytes moved per rank: {said:?}\n{rows}");
    assert!(moved < asked, "the reads past the end were short: {said:?}");
}

/// A Fortran read past the end of the file records the bytes it moved, as the program's own
/// `MPI_Get_count` says (its status decoded by `MPI_Status_f2c`), not those it asked for; so do
/// one whose status the program ignores (the hook gives the library a status of its own) and a
/// nonblocking one (from the status of its `MPI_WAIT`): 4 reads per rank.
fn check_fortran_short_reads(library: Library) {
    check_short_reads(library, library.mpif90(), "mpiio_fortran_eof.f90", 4);
}

#[test]
fn fortran_reads_past_the_end_count_the_bytes_read_under_open_mpi() {
    check_fortran_short_reads(Library::OpenMpi);
}

#[test]
fn fortran_reads_past_the_end_count_the_bytes_read_under_mpich() {
    if mpich_missing() {
        return;
    }
    check_fortran_short_reads(Library::Mpich);
}

/// Nonblocking reads past the end of the file completed by `MPI_Waitall`, `MPI_Testall`,
/// `MPI_Waitany`, `MPI_Testany`, `MPI_Waitsome` and `MPI_Testsome` (with statuses and with
/// `MPI_STATUS(ES)_IGNORE`, a nonblocking write among them; a `MPI_Waitall` of 70 reads
/// ignoring their statuses, more than the hook's stack holds) and split collective reads ended
/// with a status and without (`read_at_all`, `read_all`, `read_ordered`) record the bytes their
/// statuses say they moved: 91 reads per rank.
fn check_c_completions_of_short_reads(library: Library) {
    check_short_reads(library, library.mpicc(), "mpiio_eof_completions.c", 91);
}

/// The same in Fortran (`mpi_waitall` with statuses and with `MPI_STATUSES_IGNORE`,
/// `mpi_waitany`, `mpi_waitsome`, `mpi_test`, `mpi_testall`, `mpi_testany`, `mpi_testsome`,
/// `mpi_file_read_at_all_begin/_end`): 19 reads per rank.
fn check_fortran_completions_of_short_reads(library: Library) {
    check_short_reads(library, library.mpif90(), "mpiio_fortran_eof_completions.f90", 19);
}

#[test]
fn reads_past_the_end_completed_by_waitall_etc_or_split_count_the_bytes_read_under_open_mpi() {
    check_c_completions_of_short_reads(Library::OpenMpi);
}

#[test]
fn reads_past_the_end_completed_by_waitall_etc_or_split_count_the_bytes_read_under_mpich() {
    if mpich_missing() {
        return;
    }
    check_c_completions_of_short_reads(Library::Mpich);
}

#[test]
fn fortran_reads_past_the_end_completed_by_waitall_etc_or_split_count_the_bytes_read_under_open_mpi() {
    check_fortran_completions_of_short_reads(Library::OpenMpi);
}

#[test]
fn fortran_reads_past_the_end_completed_by_waitall_etc_or_split_count_the_bytes_read_under_mpich() {
    if mpich_missing() {
        return;
    }
    check_fortran_completions_of_short_reads(Library::Mpich);
}

/// `mpirun -np 4 iolens trace -- app` where rank 2's program kills itself mid-run while the
/// others wait for it in `MPI_Barrier`: mpirun aborts the job as soon as one iolens exits with
/// a failure, so the ranks stop their programs themselves and wait for rank 0's summary, which
/// is written and names the rank.
#[test]
fn a_rank_killed_mid_run_still_gets_a_summary_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = compile(Library::OpenMpi.mpicc(), "mpi_rank_killed.c", dir.path());
    let json = dir.path().join("trace.json");
    let before = job_dirs();
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string()])
        .args([bin(), "trace", "--json", json.to_str().unwrap(), "--"])
        .arg(&app)
        .arg(dir.path())
        .output()
        .expect("mpirun (install openmpi-bin)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "a rank was killed: the job fails\n{stdout}");
    assert_eq!(stdout.matches("data ops (").count(), 1, "one summary, by rank 0:\n{stdout}");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let notes = summary["notes"].to_string();
    assert!(notes.contains("rank 2's program was killed by signal 9"), "{notes}");
    assert!(notes.contains("rank 2: signal 9"), "{notes}");
    assert!(notes.contains("MPI job of 4 rank(s): 4 traced"), "{notes}");
    let leftovers: Vec<String> = job_dirs().difference(&before).cloned().collect();
    assert!(leftovers.is_empty(), "rank 0 removes the job's temporary directory: {leftovers:?}");
}
