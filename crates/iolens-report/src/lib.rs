//! Presenting results: the terminal table ([`table`]), and exports to JSON, CSV and Parquet
//! ([`export`], one module per format). Nothing here measures or computes figures; it only lays out a
//! [`RunResult`](iolens_metrics::RunResult).

pub mod export;
pub mod table;

pub use export::{write_csv, write_json_atomic, ErrorReport};
/// The one way results reach a file the user named; see [`iolens_output`].
pub use iolens_output::{is_stdout, write_output, OutputFile};
pub use table::render_run;
