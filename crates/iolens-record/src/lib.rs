//! Per-operation records and what is computed from them while a run is in progress.
//!
//! - [`busy`]: the overlapped busy time of the BPS paper (the union of all in-flight intervals:
//!   idle gaps excluded, overlaps counted once), computed streaming with bounded memory. Each
//!   agent turns its own submissions and completions into disjoint busy periods
//!   ([`busy::InFlightTracker`]); a collector merges the agents' period streams behind a
//!   watermark ([`busy::StreamingUnion`]); finished streams of many processes merge with
//!   [`busy::merge_sorted_streams`].
//! - [`trace`]: the compact binary per-op trace (`--trace FILE`): layout, writer and reader.
//! - [`event`]: calls of traced programs (any layer) and their binary stream format.
//! - [`clock`]: the one clock every record uses.
//! - [`program`]: whether a program file can be traced at all (statically linked or not).

pub mod busy;
pub mod clock;
pub mod clock_offset;
pub mod event;
pub mod program;
pub mod trace;

pub use busy::Interval;
pub use trace::{OpKind, OpRecord, OpStatus};
