//! The integration tests of the `iolens` binary, in one test binary (as ripgrep's `tests/`):
//! one module per area, `util` for what they share. Cargo builds `tests/integration/main.rs`
//! as the test target `integration`; run one area with its module as filter
//! (`cargo test -p iolens --test integration trace::`). Programs the tests compile and trace
//! are in `tests/data/` (MPI-IO, POSIX aio) and `tests/programs/` (the tracer's hook
//! families).

mod util;

// The multi-node tests: MPI across the nodes of a cluster simulated with namespaces
// (scripts/cluster); `scripts/test-mpi` runs them one at a time.
#[cfg(feature = "mpi")]
mod cluster;
mod compare;
mod contract;
mod figures;
mod fio_jobs;
mod monitor;
// The MPI tests launch the binary under mpirun; `scripts/test-mpi` builds with the feature and
// runs them by these module names.
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
mod mpich;
#[cfg(feature = "mpi")]
mod mpiio;
mod outputs;
mod packaging;
mod posix_aio;
mod quiet;
mod report;
mod run;
mod safety;
mod series;
mod stats;
mod suites;
mod trace;
mod trust;
mod verify;
