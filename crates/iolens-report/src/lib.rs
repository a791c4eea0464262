//! Presenting results: the terminal table ([`table`]), exports to JSON, CSV, Parquet and the HTML
//! report ([`export`], one module per format), and the envelope every command's JSON starts with
//! ([`envelope`]). Nothing here measures or computes figures; it only lays out results such as a
//! [`RunResult`](iolens_metrics::RunResult).

pub mod compare;
pub mod envelope;
pub mod export;
pub mod progress;
pub mod publish;
pub mod table;
pub mod text;

pub use envelope::{Body, Envelope, Invocation, Notice, SCHEMA_VERSION};
pub use export::{write_csv, write_json_atomic};
/// The one way results reach a file the user named; see [`iolens_output`].
pub use iolens_output::{is_stdout, write_output, OutputFile};
pub use table::render_run;
