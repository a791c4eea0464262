//! Path filters with the semantics of Darshan's `NAME_INCLUDE` / `NAME_EXCLUDE`: a file counts
//! when its path matches some include pattern (or none is given) and no exclude pattern.
//! Patterns are regular expressions searched anywhere in the path (anchor them with `^`/`$`).

use regex::Regex;
use serde::Serialize;

#[derive(Debug, Clone, Default)]
pub struct PathFilter {
    include: Vec<Regex>,
    exclude: Vec<Regex>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{flag} {pattern:?}: not a valid regular expression: {message}\n  hint: patterns are Rust regex syntax, searched anywhere in the path (e.g. '^/scratch/', '\\.h5$')")]
pub struct FilterError {
    pub flag: &'static str,
    pub pattern: String,
    pub message: String,
}

fn compile(flag: &'static str, patterns: &[String]) -> Result<Vec<Regex>, FilterError> {
    patterns
        .iter()
        .map(|p| {
            Regex::new(p).map_err(|e| FilterError {
                flag,
                pattern: p.clone(),
                // The regex crate's message repeats the pattern on its own lines; its last
                // line says what is wrong.
                message: e.to_string().lines().last().unwrap_or_default().trim().to_string(),
            })
        })
        .collect()
}

impl PathFilter {
    pub fn new(include: &[String], exclude: &[String]) -> Result<PathFilter, FilterError> {
        Ok(PathFilter { include: compile("--include", include)?, exclude: compile("--exclude", exclude)? })
    }

    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }

    pub fn admits(&self, path: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| r.is_match(path)))
            && !self.exclude.iter().any(|r| r.is_match(path))
    }

    pub fn include_patterns(&self) -> Vec<String> {
        self.include.iter().map(|r| r.as_str().to_string()).collect()
    }

    pub fn exclude_patterns(&self) -> Vec<String> {
        self.exclude.iter().map(|r| r.as_str().to_string()).collect()
    }
}

/// Which filters applied and what they left out of every figure and table.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FilterReport {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    /// Distinct paths left out (that the trace names).
    pub files_out: u64,
    /// Data operations left out, and the bytes they requested.
    pub ops_out: u64,
    pub bytes_out: u64,
    /// Sync calls on left-out files.
    pub syncs_out: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(include: &[&str], exclude: &[&str]) -> PathFilter {
        let v = |s: &[&str]| s.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        PathFilter::new(&v(include), &v(exclude)).unwrap()
    }

    #[test]
    fn darshan_semantics_some_include_and_no_exclude() {
        let none = f(&[], &[]);
        assert!(none.is_empty() && none.admits("/anything"));
        let only_scratch = f(&["^/scratch/", "\\.h5$"], &[]);
        assert!(only_scratch.admits("/scratch/a") && only_scratch.admits("/home/x.h5"));
        assert!(!only_scratch.admits("/usr/lib/python3/os.py"));
        let no_python = f(&[], &["\\.py$", "^/usr/"]);
        assert!(no_python.admits("/scratch/a") && !no_python.admits("/scratch/a.py"));
        let both = f(&["^/scratch/"], &["\\.tmp$"]);
        assert!(both.admits("/scratch/a") && !both.admits("/scratch/a.tmp") && !both.admits("/b"));
    }

    #[test]
    fn an_invalid_pattern_names_its_flag() {
        let err = PathFilter::new(&[], &["(".into()]).unwrap_err();
        assert_eq!((err.flag, err.pattern.as_str()), ("--exclude", "("));
        assert!(err.to_string().starts_with("--exclude \"(\": not a valid regular expression"), "{err}");
        assert!(err.message.contains("unclosed"), "{}", err.message);
        let err = PathFilter::new(&["[z-a]".into()], &[]).unwrap_err();
        assert_eq!(err.flag, "--include");
    }
}
