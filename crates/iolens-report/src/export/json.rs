//! JSON results, written through [`iolens_output`]: atomically (an unpredictable temporary
//! file, then a rename) for regular files, so a reader sees either the previous complete file or
//! the new complete file; in place for stdout, devices and FIFOs.

use std::io;
use std::path::Path;

use iolens_metrics::SCHEMA_VERSION;
use serde::Serialize;

/// Writes `value` as pretty JSON to `path` (`-` for stdout).
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    iolens_output::write_output(path, |w| {
        serde_json::to_writer_pretty(&mut *w, value)?;
        w.write_all(b"\n")
    })
}

/// What `--json` holds when a command fails before it has results.
#[derive(Debug, Serialize)]
pub struct ErrorReport {
    pub schema_version: u32,
    pub tool: &'static str,
    pub tool_version: &'static str,
    pub command: String,
    pub interrupted: bool,
    pub error: String,
}

impl ErrorReport {
    pub fn new(command: String, error: String, interrupted: bool) -> ErrorReport {
        ErrorReport {
            schema_version: SCHEMA_VERSION,
            tool: "iolens",
            tool_version: env!("CARGO_PKG_VERSION"),
            command,
            interrupted,
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_replaced_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_json_atomic(&path, &ErrorReport::new("x".into(), "boom".into(), false)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["error"], "boom");
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }
}
