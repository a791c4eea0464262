//! JSON results, written through [`iolens_output`]: atomically (an unpredictable temporary
//! file, then a rename) for regular files, so a reader sees either the previous complete file or
//! the new complete file; in place for stdout, devices and FIFOs.

use std::io;
use std::path::Path;

use serde::Serialize;

/// Writes `value` as pretty JSON to `path` (`-` for stdout).
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    iolens_output::write_output(path, |w| {
        serde_json::to_writer_pretty(&mut *w, value)?;
        w.write_all(b"\n")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_replaced_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        write_json_atomic(&path, &serde_json::json!({"error": "boom"})).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["error"], "boom");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
    }
}
