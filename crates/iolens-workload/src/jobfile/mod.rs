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
pub use settings::{suggest, ErrorSource, JobError, AGENT_KEYS};
pub(crate) use settings::{Raw, Setting, Settings};
pub use toml::{load_job_file, parse_job, parse_job_with_tables};

/// Job files are short text; anything larger is not one (fio includes count together).
pub(crate) const MAX_JOB_FILE_BYTES: u64 = 16 << 20;

/// The text of a job file, or why not. A FIFO or a device would block or never end: look
/// before reading, and read no more than a job file can be.
pub(crate) fn read_job_text(path: &std::path::Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.len() > MAX_JOB_FILE_BYTES {
        let limit = MAX_JOB_FILE_BYTES >> 20;
        return Err(format!("not a job file (a regular file of at most {limit} MiB)"));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| {
            std::io::Read::read_to_string(&mut std::io::Read::take(f, MAX_JOB_FILE_BYTES), &mut text)
        })
        .map_err(|e| e.to_string())?;
    Ok(text)
}

/// [`read_job_text`], its failure an error of the file.
pub(crate) fn read_job_file(path: &std::path::Path) -> Result<String, JobError> {
    read_job_text(path).map_err(|message| JobError {
        source: ErrorSource::File { file: path.display().to_string(), line: 0, column: 0 },
        key: String::new(),
        message: format!("cannot read the job file: {message}"),
        hint: None,
    })
}
