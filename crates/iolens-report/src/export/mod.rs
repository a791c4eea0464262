//! Exports of results, one module per format: [`json`], [`csv`], [`parquet`], [`html`]. Each writes
//! through [`iolens_output`], so regular files appear complete or not at all.
//!
//! Run results become these files (`FILE` is the path given to `--csv` or `--parquet`):
//!
//! | file                      | rows                                                     |
//! |---------------------------|----------------------------------------------------------|
//! | `FILE` (CSV)              | one per agent, then the aggregate (`scope` says which)   |
//! | `FILE` (Parquet)          | the same rows and columns                                |
//! | `STEM-series.EXT`         | one per interval per agent and for the aggregate (`--log-interval`) |
//! | `STEM-ops.parquet`        | one per operation, when the run keeps its records (`--trace`) |

pub mod csv;
pub mod html;
pub mod json;
pub mod parquet;
pub mod trace_ops;

pub use self::csv::{csv_field, write_csv, write_series_csv};
pub use self::json::write_json_atomic;
