//! iolens under `mpirun -np 4` (feature `mpi`; run by `scripts/test-mpi`). Each test launches
//! the built binary with mpirun and checks the one JSON rank 0 writes. One submodule per area;
//! this module holds the launchers and readers they share.

mod beff;
mod clock;
mod failures;
mod runs;
mod same_job;
mod schema;
mod suites;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use iolens_mpi::clock::{ClockCorrection, OffsetEstimate};
use iolens_record::busy::{read_period_log, union_of};
use iolens_record::trace::TraceReader;
use iolens_record::Interval;
use iolens_record::OpKind;
use serde_json::Value;

use crate::util::{floats_check, holds_written_data, read_json, schema_check, u, wait_for};

const RANKS: usize = 4;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_iolens")
}

/// `mpirun … -np 4 sh -c SCRIPT`: SCRIPT runs once per rank, `$OMPI_COMM_WORLD_RANK` set.
fn mpirun_sh(script: &str) -> Output {
    let mut c = Command::new("mpirun");
    // Root in CI containers; more ranks than cores on small machines.
    c.args(["--allow-run-as-root", "--oversubscribe", "-np", &RANKS.to_string(), "sh", "-c", script]);
    c.env("IOLENS_BIN", bin());
    c.output().expect("mpirun (install openmpi-bin)")
}

/// Runs SCRIPT under mpirun, which must fail: how long it took and its stderr.
fn failing_mpirun_sh(script: &str) -> (Duration, String) {
    let t = Instant::now();
    let out = mpirun_sh(script);
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    (took, err)
}

fn mpirun(args: &[&str]) -> Output {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let out = mpirun_sh(&format!("exec \"$IOLENS_BIN\" {}", quoted.join(" ")));
    assert!(
        out.status.success(),
        "mpirun iolens {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn data_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dat"))
        .collect();
    v.sort();
    v
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
