//! The one family of number formats a person reads: counts per second, durations, MiB, and
//! figures of any magnitude with an SI suffix. Every terminal renderer (`iolens_report::text`,
//! which re-exports this as `text::number`) and every figure a result states as text (quick's
//! headlines) uses these, so one figure reads the same everywhere. It lives with the metrics,
//! below the crates that produce results, so that they and the renderers share it.

/// A count per second in a short form: `812`, `45.2k`, `1.23M`.
pub fn fmt_rate(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Nanoseconds in the unit that keeps 3 significant digits: `850ns`, `12.4µs`, `3.10ms`, `1.20s`.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2}s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}µs", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// Bytes (or bytes per second) in MiB with one decimal: `12.5`.
pub fn fmt_mib(bytes: f64) -> String {
    format!("{:.1}", bytes / (1u64 << 20) as f64)
}

/// Four significant digits with an SI suffix: figures span nanoseconds to gigabytes per second.
pub fn short(v: f64) -> String {
    let magnitude = v.abs();
    let (scaled, suffix) = if magnitude >= 1e9 {
        (v / 1e9, "G")
    } else if magnitude >= 1e6 {
        (v / 1e6, "M")
    } else if magnitude >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if scaled == 0.0 {
        return "0".into();
    }
    if scaled.abs() < 1e-3 {
        return format!("{v:.3e}");
    }
    let decimals = (3 - scaled.abs().log10().floor().clamp(-3.0, 3.0) as i32).max(0) as usize;
    format!("{scaled:.decimals$}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_rate(812.0), "812");
        assert_eq!(fmt_rate(45_200.0), "45.2k");
        assert_eq!(fmt_rate(1_234_000.0), "1.23M");
        assert_eq!(fmt_ns(850.0), "850ns");
        assert_eq!(fmt_ns(12_400.0), "12.4µs");
        assert_eq!(fmt_ns(3_100_000.0), "3.10ms");
    }

    #[test]
    fn short_numbers_keep_four_significant_digits() {
        assert_eq!(short(535_803.6), "535.8k");
        assert_eq!(short(2.1947e9), "2.195G");
        assert_eq!(short(0.1538), "0.1538");
        assert_eq!(short(1.48e-6), "1.480e-6");
        assert_eq!(short(701.0), "701.0");
        assert_eq!(short(0.0), "0");
    }
}
