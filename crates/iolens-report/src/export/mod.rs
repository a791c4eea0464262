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
#[cfg(feature = "parquet")]
pub mod parquet;
#[cfg(feature = "parquet")]
pub mod trace_ops;

pub use self::csv::{csv_field, write_csv, write_series_csv};
pub use self::json::write_json_atomic;

use std::path::Path;

/// `dir/stem-what.ext` beside `path` (`out.csv` → `out-series.csv`).
pub fn companion_path(path: &Path, what: &str) -> std::path::PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{what}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{what}"),
    };
    path.with_file_name(name)
}
