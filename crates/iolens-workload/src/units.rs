//! Sizes and durations as people write them.
//!
//! Decimals are parsed exactly (no floating point), so `1.5g` is exactly 1610612736 bytes and
//! `0.1s` exactly 100 ms.

use std::time::Duration;

/// A size or duration that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {text:?} as a {what}: {reason} (e.g. {examples})")]
pub struct UnitError {
    /// The text as given.
    pub text: String,
    /// "size" or "duration".
    pub what: &'static str,
    pub reason: String,
    /// Valid forms, for hints.
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

/// A non-negative decimal `digits / 10^scale`.
struct Decimal {
    digits: u128,
    scale: u32,
}

/// More decimals than this cannot matter for bytes or nanoseconds and would risk overflow.
const MAX_DECIMALS: usize = 18;

/// Splits "12.5 kib" into the number "12.5" and the suffix "kib".
fn split_number(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    (&s[..end], s[end..].trim())
}

fn parse_decimal(num: &str) -> Result<Decimal, &'static str> {
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if whole.is_empty() && frac.is_empty() {
        return Err("no number");
    }
    if frac.contains('.') {
        return Err("not a number");
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > MAX_DECIMALS {
        return Err("too many decimal places");
    }
    let mut digits: u128 = 0;
    for c in whole.chars().chain(frac.chars()) {
        let d = c.to_digit(10).expect("split_number keeps only digits and dots") as u128;
        digits = digits.checked_mul(10).and_then(|v| v.checked_add(d)).ok_or("too large")?;
    }
    Ok(Decimal { digits, scale: frac.len() as u32 })
}

/// Splits `text` into a decimal and a lower-case suffix, rejecting empty and negative input.
fn number_and_suffix(text: &str) -> Result<(Decimal, String), String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty".into());
    }
    if s.starts_with('-') {
        return Err("cannot be negative".into());
    }
    let (num, suffix) = split_number(s);
    let value = parse_decimal(num).map_err(str::to_string)?;
    Ok((value, suffix.to_lowercase()))
}

/// Parses a size in bytes: an integer or decimal with an optional suffix. Multiples are binary,
/// as fio reads them: `k`/`kb`/`KiB` = 1024, likewise `m`, `g`, `t`; `b` or no suffix = bytes
/// (case-insensitive). A decimal must come to a whole number of bytes (`1.5k` yes, `1.3b` no).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (value, suffix) = number_and_suffix(text).map_err(|r| size_err(text, r))?;
    let shift = match suffix.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(size_err(
                text,
                format!(
                    "unknown suffix {other:?}; use b, k, m, g, t (binary: k = 1024) or KiB, MiB, GiB, TiB"
                ),
            ))
        }
    };
    let too_large = || size_err(text, "too large");
    let scaled = value.digits.checked_mul(1u128 << shift).ok_or_else(too_large)?;
    let denominator = 10u128.pow(value.scale);
    if scaled % denominator != 0 {
        return Err(size_err(text, "not a whole number of bytes"));
    }
    u64::try_from(scaled / denominator).map_err(|_| too_large())
}

/// Parses a duration: a number with `us`, `ms`, `s`, `m` or `h`; a bare number means seconds.
/// Decimals are allowed (`1.5s`) and rounded to whole nanoseconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (value, suffix) = number_and_suffix(text).map_err(|r| duration_err(text, r))?;
    let nanos_per_unit: u128 = match suffix.as_str() {
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "" | "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        other => {
            return Err(duration_err(text, format!("unknown unit {other:?}; use us, ms, s, m or h")));
        }
    };
    let out_of_range = || duration_err(text, "too large");
    let scaled = value.digits.checked_mul(nanos_per_unit).ok_or_else(out_of_range)?;
    let denominator = 10u128.pow(value.scale);
    let nanos = (scaled + denominator / 2) / denominator;
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| out_of_range())?;
    Ok(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// A size in the largest binary unit (up to TiB) that keeps it short, rounded to at most two
/// decimals: `100B`, `4KiB`, `1.5KiB`, `953.67MiB`. Exact results parse back with
/// [`parse_size`].
pub fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && n >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    if unit == 0 {
        return format!("{n}B");
    }
    let hundredths = |unit: usize| {
        let div = 1u128 << (10 * unit);
        (n as u128 * 100 + div / 2) / div
    };
    let mut h = hundredths(unit);
    // 1023.999KiB rounds to 1024.00KiB, which reads better one unit up.
    if h >= 1024 * 100 && unit + 1 < UNITS.len() {
        unit += 1;
        h = hundredths(unit);
    }
    let (whole, frac) = (h / 100, h % 100);
    match frac {
        0 => format!("{whole}{}", UNITS[unit]),
        f if f % 10 == 0 => format!("{whole}.{}{}", f / 10, UNITS[unit]),
        f => format!("{whole}.{f:02}{}", UNITS[unit]),
    }
}

/// `--time 200 ms`: the unit of a size or duration flag (one of `unit_flags`) written apart from its number would be read as a job file (or an
/// extra argument), and clap's error would speak of that instead. The message naming the word
/// and the flag, with the value written whole as the hint; None when no such word is there. A
/// word naming an existing file is an argument, not a unit. `--rate` takes a plain number
/// (operations per second): a unit after it (`--rate 100 iops`) is named too. Arguments after
/// `--` (a traced program's) are not looked at.
pub fn unit_apart_from_its_number(argv: &[std::ffi::OsString], unit_flags: &[&str]) -> Option<String> {
    let args: Vec<String> =
        argv.iter().skip(1).take_while(|a| *a != "--").map(|a| a.to_string_lossy().into_owned()).collect();
    args.windows(3).find_map(|w| {
        let (flag, number, word) = (&w[0], &w[1], &w[2]);
        if number.parse::<f64>().is_err() || word.starts_with('-') || std::path::Path::new(word).exists() {
            return None;
        }
        let read_as = "it would be read as another argument (a job file)";
        if flag == "--rate" && !word.is_empty() && word.chars().all(|c| c.is_ascii_alphabetic() || c == '/') {
            return Some(format!(
                "`{word}` after `{flag} {number}` looks like a unit: {read_as}\n  hint: --rate takes a plain \
                 number of operations per second per agent: {flag} {number}"
            ));
        }
        let whole = format!("{number}{word}");
        let is_unit =
            parse_size(&whole).is_ok() || parse_duration(&whole).is_ok();
        (unit_flags.contains(&flag.as_str()) && is_unit).then(|| {
            format!(
                "`{word}` after `{flag} {number}` looks like the unit of {flag}, written apart from its number: \
                 {read_as}\n  hint: write the value without a space: {flag} {whole}"
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("0").unwrap(), 0);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size(" 4K ").unwrap(), 4096);
        assert_eq!(parse_size("4kb").unwrap(), 4096);
        assert_eq!(parse_size("4 KiB").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size("1.50G").unwrap(), 3 << 29);
        assert_eq!(parse_size(".5k").unwrap(), 512);
        assert_eq!(parse_size("2t").unwrap(), 2 << 40);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("1mib").unwrap(), 1 << 20);
        assert_eq!(parse_size("3GiB").unwrap(), 3 << 30);
        assert_eq!(parse_size("1TiB").unwrap(), 1 << 40);
        assert_eq!(parse_size("512b").unwrap(), 512);
        assert_eq!(parse_size("512B").unwrap(), 512);
        assert_eq!(parse_size("18446744073709551615").unwrap(), u64::MAX);
        assert_eq!(parse_size("16777215.75t").unwrap(), u64::MAX - (1 << 38) + 1);
    }

    #[test]
    fn bad_sizes_explain() {
        let cases = [
            ("", "empty"),
            ("  ", "empty"),
            ("-4k", "negative"),
            ("4q", "unknown suffix \"q\""),
            ("4kk", "unknown suffix"),
            ("k", "no number"),
            (".", "no number"),
            ("1.2.3k", "not a number"),
            ("1.3b", "whole number"),
            ("1.1k", "whole number"),
            ("99999999999t", "too large"),
            ("18446744073709551616", "too large"),
            ("16777216t", "too large"),
            ("99999999999999999999999999999999999999999", "too large"),
        ];
        for (bad, reason) in cases {
            let e = parse_size(bad).unwrap_err();
            let shown = e.to_string();
            assert!(shown.contains(reason), "{bad:?}: {shown}");
            assert!(shown.contains("e.g. 4096, 4k"), "{shown}");
            assert_eq!(e.text, bad);
        }
        let shown = parse_size("4q").unwrap_err().to_string();
        assert!(shown.contains("KiB, MiB, GiB, TiB"), "the valid suffixes are listed: {shown}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration(" 10 s ").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0.1s").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("2H").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("0.0015ms").unwrap(), Duration::from_nanos(1500));
        assert_eq!(parse_duration("0.0000000004s").unwrap(), Duration::ZERO, "rounds to nanoseconds");
    }

    #[test]
    fn bad_durations_explain() {
        let cases = [
            ("", "empty"),
            ("10 days", "unknown unit \"days\""),
            ("-1s", "negative"),
            ("s", "no number"),
            ("1.2.3s", "not a number"),
            ("99999999999999999999999h", "too large"),
        ];
        for (bad, reason) in cases {
            let shown = parse_duration(bad).unwrap_err().to_string();
            assert!(shown.contains(reason), "{bad:?}: {shown}");
            assert!(shown.contains("e.g. 500ms, 10s"), "{shown}");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(0), "0B");
        assert_eq!(format_bytes(100), "100B");
        assert_eq!(format_bytes(1023), "1023B");
        assert_eq!(format_bytes(1024), "1KiB");
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(1536), "1.5KiB");
        assert_eq!(format_bytes(1280), "1.25KiB");
        assert_eq!(format_bytes(1 << 20), "1MiB");
        assert_eq!(format_bytes((1 << 20) - 1), "1MiB");
        assert_eq!(format_bytes(1_000_000_000), "953.67MiB");
        assert_eq!(format_bytes(3 << 29), "1.5GiB");
        assert_eq!(format_bytes(5 << 40), "5TiB");
        assert_eq!(format_bytes(u64::MAX), "16777216TiB");
    }

    proptest! {
        #[test]
        fn quarter_units_format_and_parse_back(q in 1u64..4000, shift in 1u32..5) {
            let n = q << (10 * shift - 2);
            prop_assert_eq!(parse_size(&format_bytes(n)).unwrap(), n);
        }

        #[test]
        fn whole_units_round_trip_exactly(k in 0u64..100_000, shift in 0usize..5) {
            let n = k << (10 * shift);
            let suffix = ["", "k", "m", "g", "t"][shift];
            prop_assert_eq!(parse_size(&format!("{k}{suffix}")).unwrap(), n);
            prop_assert_eq!(parse_size(&format!("{k}{}", suffix.to_uppercase())).unwrap(), n);
        }

        #[test]
        fn any_byte_count_parses(n: u64) {
            prop_assert_eq!(parse_size(&n.to_string()).unwrap(), n);
            prop_assert_eq!(parse_size(&format!("{n}B")).unwrap(), n);
        }

        /// The short form is within half a hundredth of its unit, and exact forms parse back.
        #[test]
        fn formatting_is_close_and_exact_forms_parse_back(n in 0u64..(1 << 52)) {
            let shown = format_bytes(n);
            let (num, unit) = split_number(&shown);
            let mult = 1u64 << (10 * ["b", "kib", "mib", "gib", "tib"]
                .iter()
                .position(|u| *u == unit.to_lowercase())
                .unwrap());
            let approx = num.parse::<f64>().unwrap() * mult as f64;
            prop_assert!((approx - n as f64).abs() <= 0.005 * mult as f64 + 1e-6 * n as f64, "{n} -> {shown}");
            if let Ok(back) = parse_size(&shown) {
                prop_assert!(back.abs_diff(n) * 200 <= mult, "{n} -> {shown} -> {back}");
            }
        }

        #[test]
        fn durations_round_trip(ms in 0u64..10_000_000) {
            prop_assert_eq!(parse_duration(&format!("{ms}ms")).unwrap(), Duration::from_millis(ms));
            let s = format!("{}.{:03}s", ms / 1000, ms % 1000);
            prop_assert_eq!(parse_duration(&s).unwrap(), Duration::from_millis(ms));
            prop_assert_eq!(parse_duration(&format!("{ms}000us")).unwrap(), Duration::from_millis(ms));
        }
    }
}
