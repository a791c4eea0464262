//! `mpirun -np N iolens beff-io DIR …`: b_eff_io over MPI-IO (feature `mpi`). The flags are
//! those of the thread version, with `--partitions` (sizes in MPI processes) for `--ranks` and
//! `--hint KEY=VALUE` for MPI-IO hints. Rank 0 prints the one table and writes the one JSON; an
//! error on any rank names the rank and its host and ends the job (`MPI_Abort`).

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_mpi::beff_io_mpi;
use iolens_mpi::world::World;
use iolens_suites::beff_io;

use crate::cli::BeffIoArgs;

use crate::output::{report_error, ProgressLine, EXIT_FAILED, EXIT_USAGE};

pub fn run(a: BeffIoArgs, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    let json = a.json.clone();
    let world =
        World::init().map_err(|e| report_error(json.as_deref(), &format!("MPI: {e}"), false, EXIT_FAILED))?;
    let (rank, size) = (world.rank(), world.size());
    if rank != 0 {
        // Rank 0 speaks for the job.
        crate::output::text_to_stderr();
    }
    // Every rank checks the same flags; a usage error is reported by rank 0 alone and every
    // rank exits with it, no abort needed.
    let usage = |message: String| -> u8 {
        if rank == 0 {
            report_error(json.as_deref(), &message, false, EXIT_USAGE)
        } else {
            EXIT_USAGE
        }
    };
    let fatal = |message: &str| -> Infallible {
        let message = format!("rank {rank} on {}: {message}", world.host());
        let interrupted = stop.load(Ordering::SeqCst);
        if rank == 0 {
            report_error(json.as_deref(), &message, interrupted, EXIT_FAILED);
        } else {
            errln!("iolens: error: {message}");
        }
        errln!("iolens: rank {rank} on {} stops all {size} ranks (MPI_Abort)", world.host());
        world.abort(EXIT_FAILED as i32)
    };
    if !a.ranks.is_empty() {
        return Err(usage(
            "--ranks counts threads of one process; under mpirun the ranks are the MPI processes: give the \
             partition sizes with --partitions, e.g. --partitions 1,2,4"
                .into(),
        ));
    }
    let mut cfg = crate::suites::beff_io_config(&a).map_err(&usage)?;
    cfg.ranks = if a.partitions.is_empty() { vec![size] } else { a.partitions.clone() };
    if let Some(&bad) = cfg.ranks.iter().find(|&&n| n == 0 || n > size) {
        return Err(usage(format!(
            "--partitions: {bad} is not between 1 and the {size} processes mpirun started (mpirun -np N sets them)"
        )));
    }
    let hints: Vec<(String, String)> =
        a.hint.iter().map(|h| beff_io::parse_hint(h)).collect::<Result<_, _>>().map_err(&usage)?;
    if let Err(e) = beff_io::check(&cfg) {
        // The directory must be there for every rank: each says where it is missing.
        beff_io_mpi::die(&fatal, &e.to_string());
    }
    // The same b_eff_io on every rank, in the same directory: its MPI-IO files are shared.
    let mut fingerprint = iolens_mpi::fingerprint::of_suite(&a);
    fingerprint.push("dir", a.dir.display());
    world.same_job(&fingerprint).map_err(usage)?;
    if rank == 0 && !a.quiet {
        errln!(
            "b_eff_io over MPI-IO: {} partition(s) of {:?} processes, T = {:.0} s each, in {}",
            cfg.ranks.len(),
            cfg.ranks,
            cfg.time.as_secs_f64(),
            a.dir.display()
        );
    }
    let progress = ProgressLine::new(a.quiet || rank != 0, "beff-io");
    let on_step = |s: &beff_io::BeffIoStep| s.show(&progress);
    let result = beff_io_mpi::run(&world, &cfg, &hints, stop, &fatal, &on_step);
    progress.finish();
    let Some(result) = result else {
        return Ok(());
    };
    let mut job = cfg.job();
    job["hints"] = hints.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let table = iolens_report::text::beff_io::render(&result);
    iolens_report::publish::publish_points(&result, job, &table, json.as_deref(), a.parquet.as_deref());
    Ok(())
}
