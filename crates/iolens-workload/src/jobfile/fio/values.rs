//! Reading one fio option's value as fio reads it (flags, sizes, counts, durations), and the
//! errors that name the option's line when a value is out of iolens's reach.

use super::FioOption;
use crate::jobfile::JobError;
use crate::units::{parse_duration, parse_size};

pub(super) fn flag(o: &FioOption, section: &str) -> Result<bool, JobError> {
    match o.value.as_deref().map(|v| v.to_ascii_lowercase()).as_deref() {
        None | Some("1") | Some("true") | Some("yes") | Some("on") => Ok(true),
        Some("0") | Some("false") | Some("no") | Some("off") => Ok(false),
        Some(other) => Err(o.error(section, format!("expected 0 or 1, found {other:?}"), None)),
    }
}

/// A fio size: `4k`, `4KiB`, `4KB` (fio's default kb_base=1024 makes all three 4096).
pub(super) fn fio_size(o: &FioOption, text: &str, section: &str) -> Result<u64, JobError> {
    if text.ends_with('%') {
        return Err(o.error(
            section,
            format!("{text:?}: sizes as a share of the file are not supported by iolens"),
            Some("give the size in bytes, e.g. 1g".into()),
        ));
    }
    parse_size(text.trim()).map_err(|e| o.error(section, e.to_string(), Some("e.g. 4k, 64m, 1g".into())))
}

pub(super) fn fio_uint(o: &FioOption, section: &str) -> Result<u64, JobError> {
    o.text()
        .trim()
        .parse::<u64>()
        .map_err(|_| o.error(section, format!("{:?} is not a whole number", o.text()), None))
}

/// A fio duration: a bare number is seconds; us, ms, s, m, h as iolens reads them.
pub(super) fn fio_duration(o: &FioOption, section: &str) -> Result<String, JobError> {
    let text = o.text().trim();
    parse_duration(text)
        .map_err(|e| o.error(section, e.to_string(), Some("e.g. 30, 30s, 500ms, 2m".into())))?;
    Ok(text.to_string())
}

pub(super) fn unsupported(o: &FioOption, section: &str, what: &str, hint: &str) -> JobError {
    o.error(section, format!("{what}: fio option not supported by iolens"), Some(hint.into()))
}

/// One value for reads and writes: fio's `a,b` forms set them apart, which iolens does not.
pub(super) fn one_for_both<'o>(o: &'o FioOption, section: &str) -> Result<&'o str, JobError> {
    let text = o.text();
    let mut parts = text.split(',').map(str::trim).filter(|p| !p.is_empty());
    let first = parts.next().unwrap_or("");
    if parts.any(|p| p != first) {
        return Err(unsupported(
            o,
            section,
            &format!("{text:?} sets reads and writes apart"),
            "give one value for both",
        ));
    }
    Ok(first)
}
