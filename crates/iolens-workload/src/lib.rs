//! The workload model of iolens, after IOAgent: a [`Job`] is a set of [`AgentSpec`]s, each one
//! thread with its own target, operation mix, access pattern, request sizes, I/O mode, rate, fsync
//! policy and termination.
//!
//! This crate only describes work; it performs no I/O. Jobs come from TOML job files
//! ([`load_job_file`], [`parse_job`]) or from command-line flags ([`FlagWorkload`]); both paths
//! produce the same validated [`Job`]. Human-friendly quantities are parsed by [`parse_size`]
//! (binary: `1k` = 1024, IEC forms such as `4KiB`) and [`parse_duration`] (`us`, `ms`, `s`, `m`,
//! `h`; a bare number is seconds).

mod flags;
mod jobfile;
mod model;
mod resolved;
mod units;

pub use flags::FlagWorkload;
pub use jobfile::fio::{
    load_fio_file, load_job, parse_fio, to_toml as fio_to_toml, FioJob, IncludeLoader, TranslatedJob,
    FIO_KEYS,
};
pub use jobfile::{
    load_job_file, parse_job, parse_job_with_tables, suggest, ErrorSource, JobError, AGENT_KEYS,
};
pub use model::*;
pub use resolved::resolved_job;
pub use units::{format_bytes, parse_duration, parse_size, unit_apart_from_its_number, UnitError};
