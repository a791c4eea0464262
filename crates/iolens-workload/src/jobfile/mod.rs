//! Job descriptions in, one validated [`Job`](crate::Job) out: TOML job files ([`toml`]) and
//! fio job files ([`fio`]) read side by side, and command-line flags ([`crate::FlagWorkload`])
//! join them, all feeding the one builder of [`agents`].
//!
//! Every setting reaches the builder as a [`Setting`] that remembers where it came from (a
//! position in a job file, or a command-line flag), so each error can point at its source, and
//! validation exists once.

mod agents;
pub(crate) mod fio;
mod settings;
mod toml;

pub(crate) use agents::{build_agents, build_block_unit, name_from_stem, Totals};
pub use settings::{ErrorSource, JobError, AGENT_KEYS};
pub(crate) use settings::{Raw, Setting, Settings};
pub use toml::{load_job_file, parse_job, parse_job_with_tables};
