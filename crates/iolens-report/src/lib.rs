//! Presenting results: the terminal text of every kind of result ([`text`], one module per kind),
//! exports to JSON, CSV, Parquet and the HTML report ([`export`], one module per format), and the
//! envelope every command's JSON starts with ([`envelope`]). Nothing here measures or computes
//! figures; it only lays out results such as a [`RunResult`](iolens_metrics::RunResult). The
//! crates that produce results (suites, analysis, statistics) sit below this one and state their
//! side of the envelope through [`iolens_output::contract`].

pub mod compare;
pub mod envelope;
pub mod export;
pub mod progress;
pub mod publish;
/// The terminal table and number formats at their first path, for callers written before
/// [`text`] held them; new code names `text::table` and `text::number`.
pub mod table {
    pub use crate::text::number::{fmt_mib, fmt_ns, fmt_rate};
    pub use crate::text::run::render_run;
    pub use crate::text::table::Table;
}
#[cfg(test)]
mod test_events;
pub mod text;

pub use envelope::{Body, Envelope, Invocation, Notice, SCHEMA_VERSION};
pub use export::{write_csv, write_json_atomic};
/// The one way results reach a file the user named; see [`iolens_output`].
pub use iolens_output::{is_stdout, write_output, OutputFile};
pub use text::run::render_run;

// The one skip helper of the workspace's tests: tests without the shared data sets skip, or fail
// under IOLENS_REQUIRE_TOOLS=1.
#[cfg(test)]
#[path = "../../iolens/tests/integration/util/prerequisite.rs"]
mod prerequisite;
