//! Sizes and durations as people write them.

use std::time::Duration;

/// A size or duration that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {text:?} as a {what}: {reason} (e.g. {examples})")]
pub struct UnitError {
    pub text: String,
    pub what: &'static str,
    pub reason: String,
    pub examples: &'static str,
}

const SIZE_EXAMPLES: &str = "4096, 4k, 1m, 1.5g, 2t, 64KiB, 1MiB";
const DURATION_EXAMPLES: &str = "500ms, 10s, 1.5m, 2h, or 30 for seconds";

fn size_err(text: &str, reason: impl Into<String>) -> UnitError {
    UnitError { text: text.to_string(), what: "size", reason: reason.into(), examples: SIZE_EXAMPLES }
}

fn duration_err(text: &str, reason: impl Into<String>) -> UnitError {
    UnitError { text: text.to_string(), what: "duration", reason: reason.into(), examples: DURATION_EXAMPLES }
}

/// Splits "12.5kib" into ("12.5", "kib").
fn split_number(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    (&s[..end], s[end..].trim())
}

/// Parses a size in bytes. Multiples are binary: `k` = 1024, as fio reads them; IEC forms
/// (`KiB`, `MiB`, …) mean the same.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(size_err(text, "empty"));
    }
    if s.starts_with('-') {
        return Err(size_err(text, "sizes cannot be negative"));
    }
    let (num, suffix) = split_number(s);
    if num.is_empty() {
        return Err(size_err(text, "no number"));
    }
    let shift = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(size_err(
                text,
                format!("unknown suffix {other:?}; use b, k, m, g, t or KiB, MiB, GiB, TiB"),
            ))
        }
    };
    let multiplier = 1u64 << shift;
    if let Ok(whole) = num.parse::<u64>() {
        return whole.checked_mul(multiplier).ok_or_else(|| size_err(text, "too large"));
    }
    let value: f64 = num.parse().map_err(|_| size_err(text, "not a number"))?;
    let bytes = value * multiplier as f64;
    if bytes > u64::MAX as f64 {
        return Err(size_err(text, "too large"));
    }
    if bytes.fract() != 0.0 {
        return Err(size_err(text, "not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// Parses a duration: `us`, `ms`, `s`, `m`, `h`; a bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(duration_err(text, "empty"));
    }
    if s.starts_with('-') {
        return Err(duration_err(text, "durations cannot be negative"));
    }
    let (num, suffix) = split_number(s);
    let value: f64 = num.parse().map_err(|_| duration_err(text, "no number"))?;
    let secs_per_unit = match suffix.to_ascii_lowercase().as_str() {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(duration_err(text, format!("unknown unit {other:?}; use us, ms, s, m or h"))),
    };
    Duration::try_from_secs_f64(value * secs_per_unit).map_err(|_| duration_err(text, "out of range"))
}

/// A size in the largest binary unit that keeps it short: `4KiB`, `1.5MiB`, `100B`.
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && n >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    if unit == 0 {
        return format!("{n}B");
    }
    let value = n as f64 / (1u64 << (10 * unit)) as f64;
    if value.fract() == 0.0 {
        format!("{}{}", value as u64, UNITS[unit])
    } else {
        let s = format!("{value:.2}");
        format!("{}{}", s.trim_end_matches('0').trim_end_matches('.'), UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size(" 4K ").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size("2t").unwrap(), 2 << 40);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("1mib").unwrap(), 1 << 20);
        assert_eq!(parse_size("512b").unwrap(), 512);
    }

    #[test]
    fn bad_sizes_explain() {
        for bad in ["", "-4k", "4q", "k", "1.3b", "99999999999t"] {
            let e = parse_size(bad).unwrap_err();
            assert!(e.to_string().contains("e.g."), "{e}");
        }
        assert!(parse_size("4q").unwrap_err().to_string().contains("unknown suffix"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("10 days").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(100), "100B");
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(1536), "1.5KiB");
        assert_eq!(format_bytes(1 << 20), "1MiB");
        assert_eq!(format_bytes(3 << 29), "1.5GiB");
    }

    proptest! {
        #[test]
        fn quarter_units_format_and_parse_back(q in 1u64..4000, shift in 1u32..4) {
            let n = q << (10 * shift - 2);
            prop_assert_eq!(parse_size(&format_bytes(n)).unwrap(), n);
        }

        #[test]
        fn whole_units_round_trip_exactly(k in 1u64..100_000, shift in 0usize..4) {
            let n = k << (10 * shift);
            let suffix = ["", "k", "m", "g"][shift];
            prop_assert_eq!(parse_size(&format!("{k}{suffix}")).unwrap(), n);
        }
    }
}
