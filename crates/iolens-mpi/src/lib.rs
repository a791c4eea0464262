//! iolens across many processes and nodes, launched by `mpirun`.
//!
//! What this crate is for: `mpirun -np N iolens run …` runs one job on N ranks as *one*
//! measurement. Every rank runs its agents on its own files (or its share of one shared file);
//! phases start together through an MPI [`PhaseBarrier`](iolens_engine::PhaseBarrier); after the
//! run, rank 0 collects every rank's figures and counters (never the per-op records) and busy
//! periods, corrects the periods by each rank's estimated clock offset, and computes the global
//! busy-time union, BPS and io-wait over all ranks (the BPS paper's step 2). Rank 0 alone prints
//! and writes the result.
//!
//! The crate builds without MPI: [`launch`] detects an MPI launch from the environment (so a
//! binary built without MPI can refuse it instead of letting every rank write the same file),
//! and [`clock`], [`wire`] and [`combine`] hold the logic that needs no MPI and is tested
//! without it. The feature `mpi` adds [`world`], the rsmpi-based communicator, and the two
//! benchmarks of the b_eff_io paper that run on it: [`beff_mpi`] (the network) and
//! [`beff_io_mpi`] (MPI-IO, reusing the pattern loop of `iolens_suites::beff_io`).

#[cfg(feature = "mpi")]
pub mod across;
/// b_eff's MPI-free part lives with the other suites' definitions.
pub use iolens_suites::beff;
#[cfg(feature = "mpi")]
pub mod beff_io_mpi;
#[cfg(feature = "mpi")]
pub mod beff_mpi;
pub mod clock;
pub mod combine;
pub mod fingerprint;
pub mod launch;
pub mod wire;
#[cfg(feature = "mpi")]
pub mod world;

pub use launch::{detect, Launch};
