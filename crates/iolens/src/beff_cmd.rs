//! `iolens beff`: b_eff, the effective bandwidth of the communication network (section 4 of
//! the b_eff_io paper). It needs MPI: under `mpirun -np N` (N ≥ 2) with a build that has the
//! feature `mpi`; otherwise it refuses with exit 2. Rank 0 prints the per-pattern values and
//! Table 1's columns and writes the JSON with the whole protocol.

use crate::cli::BeffArgs;
use crate::output::{report_error, EXIT_USAGE};

/// Without MPI, or in a single process: b_eff measures communication between processes.
pub fn refuse(a: &BeffArgs) -> Result<(), u8> {
    let how = if cfg!(feature = "mpi") {
        "b_eff measures communication between MPI processes and needs at least 2: run it as \
         `mpirun -np N iolens beff` with N ≥ 2"
    } else {
        "b_eff measures communication between MPI processes: run it as `mpirun -np N iolens beff` \
         with N ≥ 2, with an iolens built with `cargo build --release --features mpi` (this one was \
         built without MPI)"
    };
    Err(report_error(a.json.as_deref(), how, false, EXIT_USAGE))
}

#[cfg(feature = "mpi")]
pub use with_mpi::run;

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::sync::atomic::AtomicBool;

    use iolens_mpi::beff_mpi;
    use iolens_mpi::world::World;
    use iolens_suites::beff::{lmax_asked, BeffOutput, FORMULA};
    use iolens_workload::format_bytes;

    use super::refuse;
    use crate::cli::BeffArgs;
    use crate::output::{report_error, write_json_or_warn, EXIT_FAILED, EXIT_USAGE};

    pub fn run(a: BeffArgs, stop: &AtomicBool) -> Result<(), u8> {
        let world = World::init()
            .map_err(|e| report_error(a.json.as_deref(), &format!("MPI: {e}"), false, EXIT_FAILED))?;
        let (rank, size) = (world.rank(), world.size());
        if rank != 0 {
            crate::output::text_to_stderr();
        }
        // Every rank checks the same arguments; only rank 0 speaks.
        let fail = |msg: String| -> u8 {
            if rank == 0 {
                report_error(a.json.as_deref(), &msg, false, EXIT_USAGE)
            } else {
                EXIT_USAGE
            }
        };
        if size < 2 {
            return if rank == 0 { refuse(&a) } else { Err(EXIT_USAGE) };
        }
        let default_memory = || {
            iolens_device::memory_total().unwrap_or(1 << 30)
                / iolens_mpi::Launch::local_ranks().unwrap_or(size as u64).max(1)
        };
        let l = lmax_asked(a.memory_per_process.as_deref(), a.max_size.as_deref(), a.quick, default_memory)
            .map_err(fail)?;
        // Each rank's default comes from its own node (memory ÷ its ranks there): with uneven
        // placement they differ, and every message must have the same size on both ends.
        let l = world.min(l);
        if rank == 0 && !a.quiet {
            errln!(
                "iolens beff: {size} processes, Lmax {}, 12 patterns × 21 sizes × 3 methods × 3 repetitions",
                format_bytes(l)
            );
        }
        let quiet = a.quiet || rank != 0;
        let mut done = 0;
        let run = beff_mpi::run(&world, l, a.seed, stop, |name| {
            done += 1;
            if !quiet {
                errln!("iolens beff: {name} done ({done}/12)");
            }
        });
        let Some(run) = run else {
            let message = format!(
                "b_eff interrupted after {done} of 12 patterns: no value (b_eff averages over every pattern)"
            );
            return Err(if rank == 0 {
                report_error(a.json.as_deref(), &message, true, EXIT_FAILED)
            } else {
                EXIT_FAILED
            });
        };
        if rank != 0 {
            return Ok(());
        }
        say!("{}", iolens_report::text::beff::render(&run.summary, &run.results, &world.library()));
        if let Some(path) = &a.json {
            let out = BeffOutput {
                benchmark: "b_eff".into(),
                mpi_library: world.library(),
                units: "bytes/s".into(),
                formula: FORMULA.into(),
                summary: run.summary,
                sizes: run.sizes,
                patterns: run.patterns,
                results: run.results,
                ping_pong: run.ping_pong,
                protocol: run.protocol,
            };
            write_json_or_warn(path, &out);
        }
        Ok(())
    }
}
