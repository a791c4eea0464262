//! MPI: the MPI-IO calls of a program, C and Fortran, recorded at layer `mpiio`, and the rank
//! and clock of each MPI process. The library is not linked against MPI, so it loads into any
//! program; the real functions are reached through the profiling interface.
//!
//! Inside, each module uses only those listed before it: `abi` (the library and its ABI),
//! `status` (where MPI leaves what a call moved), `pending` (how each call is recorded, the
//! calls in flight), `clock` (ranks and their clocks, `MPI_Init`/`MPI_Finalize`), then the hooks:
//! `hooks` (C), `fortran` and `fortran_completion` (the Fortran bindings).
//!
//! # A hook's contract
//!
//! Every MPI hook is an `unsafe extern "C" fn` the program calls under the contract of the MPI
//! function of the same name (the Fortran ones with every argument by reference), and its body
//! is one `unsafe` block resting on that contract: the arguments go unchanged to the library's
//! function (`PMPI_…`, or the Fortran binding of the same name, called with the C type written
//! at the call), and the recorder reads of them only what that function reads or fills too (a
//! status or request, once it has returned).

pub(crate) mod abi;
pub(crate) mod clock;
pub(crate) mod fortran;
pub(crate) mod fortran_completion;
pub(crate) mod hooks;
pub(crate) mod pending;
pub(crate) mod status;
