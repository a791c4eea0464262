//! A job file that reproduces a trace's load profile, so "the application's I/O" can be re-run
//! on other storage with `iolens run --job`.

use std::fmt::Write;

use iolens_workload::{format_bytes, parse_size};

use crate::TraceSummary;

/// Size buckets kept in the emitted weighted size list.
const MAX_SIZES: usize = 8;

/// The largest request a job accepts (under 4 GiB), as a multiple of 512 bytes.
const MAX_REQUEST: u64 = u32::MAX as u64 / 512 * 512;

/// The most threads per emitted agent: the job has two (reads, writes) under the agent limit.
const MAX_THREADS: u64 = (iolens_workload::limits::MAX_AGENTS / 2) as u64;

/// A size as the job parser reads it back exactly: short units when they are exact (`4KiB`),
/// plain bytes otherwise (`format_bytes` rounds to two decimals).
fn size_text(n: u64) -> String {
    let short = format_bytes(n);
    if parse_size(&short).ok() == Some(n) {
        short
    } else {
        n.to_string()
    }
}

/// A positive rate with three significant decimals at least, however slow: `{:.3}` would print
/// a request an hour as `0.000`, which a job reads as "unthrottled".
fn rate_text(rate: f64) -> String {
    let decimals = if rate >= 1.0 { 3 } else { ((-rate.log10()).ceil() as usize + 3).min(330) };
    format!("{rate:.decimals$}")
}

/// A TOML basic string: quotes, backslashes and control characters escaped.
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The job file, or why there is nothing to reproduce.
pub fn emit_workload(s: &TraceSummary, target: &str) -> Result<String, String> {
    let f = &s.figures;
    if f.ops == 0 {
        return Err("the trace has no data operations: there is no load to reproduce".into());
    }
    let mut out = String::new();
    let _ = writeln!(out, "# Load profile of a traced program, written by iolens analyze/trace.");
    let _ = writeln!(
        out,
        "# Observed: {} data ops ({} reads, {} writes), {:.3} s wall, {:.3} s busy ({:.0}% I/O wait),",
        f.ops,
        f.read_ops,
        f.write_ops,
        f.wall_s,
        f.busy_s,
        100.0 * f.io_wait_fraction
    );
    let seq = s.sequential_fraction.unwrap_or(0.0);
    let _ = writeln!(
        out,
        "# sequential share {:.0}%, in flight: mean {:.2}, peak {}.",
        100.0 * seq,
        s.concurrency.mean_in_flight,
        s.concurrency.peak_in_flight.map_or("unknown".into(), |p| p.to_string())
    );
    let _ = writeln!(out, "name = \"replay\"");
    let _ = writeln!(out, "block_unit = {}", f.block_unit.max(1));
    let _ = writeln!(out);
    // `as` saturates (NaN becomes 0), and the clamp keeps the job within what it may ask for.
    let in_flight = s.concurrency.mean_in_flight.round() as u64;
    let threads = in_flight.clamp(1, MAX_THREADS);
    let secs = (f.wall_s.ceil().max(1.0) as u64).min(iolens_workload::limits::MAX_DURATION.as_secs());
    // All agents' buffers (largest request × threads, two agents) stay under the job's limit.
    let request_cap = MAX_REQUEST.min(iolens_workload::limits::MAX_BUFFER_BYTES / (2 * threads)) / 512 * 512;
    let request = |size: u64| size.min(request_cap).div_ceil(512).max(1) * 512;
    let largest_request = s.size_histogram.iter().map(|b| request(b.min_bytes)).max().unwrap_or(512);
    // Every agent (two kinds × threads) inherits the size, and the job parser checks the sum
    // against the largest file offset: the region stays below its share of it.
    let region_cap = (iolens_workload::limits::MAX_OFFSET / (2 * threads)) >> 20 << 20;
    let region = s
        .max_extent_bytes
        .max(largest_request)
        .div_ceil(1 << 20)
        .max(1)
        .saturating_mul(1 << 20)
        .min(region_cap);
    let _ = writeln!(out, "[defaults]");
    let _ = writeln!(out, "target = {}", toml_string(target));
    let _ = writeln!(out, "# the largest offset + length seen, rounded up to 1 MiB");
    let _ = writeln!(out, "size = \"{}\"", size_text(region));
    let _ = writeln!(out, "# the observed wall time, rounded up to whole seconds");
    let _ = writeln!(out, "time = \"{secs}s\"");
    let _ = writeln!(out, "engine = \"sync\"");
    let _ = writeln!(out, "# mean requests in flight while busy, as synchronous threads");
    if in_flight > MAX_THREADS {
        let _ = writeln!(
            out,
            "# ({in_flight} in flight on average; a job agent runs at most {MAX_THREADS} threads)"
        );
    }
    let _ = writeln!(out, "threads = {threads}");
    if f.io_wait_fraction < 0.5 && f.ops > 0 {
        // A mostly idle program issued at its own pace: keep that pace per thread.
        // Within what a job may ask for: above the maximum a gap is under a nanosecond anyway.
        let rate = (f.ops as f64 / f.wall_s.max(1e-9) / threads as f64)
            .clamp(iolens_workload::limits::MIN_RATE, iolens_workload::limits::MAX_RATE);
        let _ = writeln!(out, "# the program waited on I/O less than half the time: its pace, per thread");
        if rate.is_finite() && rate > 0.0 {
            let _ = writeln!(out, "rate = {}", rate_text(rate));
        } else {
            let _ =
                writeln!(out, "# (its pace, {rate} ops/s, cannot be a job rate: the replay is unthrottled)");
        }
    }
    let random = seq < 0.5;
    for write in [false, true] {
        let mut sizes: Vec<(u64, u64)> = s
            .size_histogram
            .iter()
            .map(|b| (b.min_bytes, if write { b.write_ops } else { b.read_ops }))
            .filter(|(_, n)| *n > 0)
            .collect();
        if sizes.is_empty() {
            continue;
        }
        sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        sizes.truncate(MAX_SIZES);
        let capped = sizes.iter().any(|(size, _)| *size > MAX_REQUEST);
        // Buckets that round or cap to the same request size become one entry.
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (size, n) in sizes {
            let size = request(size);
            match merged.iter_mut().find(|(s, _)| *s == size) {
                Some((_, m)) => *m = m.saturating_add(n),
                None => merged.push((size, n)),
            }
        }
        let bs: Vec<String> = merged
            .iter()
            .map(|(size, n)| format!("{}:{}", size_text(*size), (*n).min(u32::MAX as u64)))
            .collect();
        let _ = writeln!(out);
        let _ = writeln!(out, "[[agent]]");
        let _ = writeln!(out, "name = \"{}\"", if write { "writes" } else { "reads" });
        let rw = match (write, random) {
            (false, false) => "read",
            (false, true) => "randread",
            (true, false) => "write",
            (true, true) => "randwrite",
        };
        let _ = writeln!(out, "rw = \"{rw}\"");
        if write && random {
            let _ = writeln!(
                out,
                "# each block once per pass, in random order (fio's random map); false draws offsets with replacement"
            );
            let _ = writeln!(out, "random_map = true");
        }
        let _ = writeln!(out, "# request sizes (rounded up to 512 B) weighted by how often they were seen");
        if capped {
            let _ = writeln!(
                out,
                "# (requests of 4 GiB or more are capped at {}, the largest a job runs)",
                size_text(MAX_REQUEST)
            );
        }
        let _ = writeln!(out, "bs = \"{}\"", bs.join(","));
        if write && f.fsyncs > 0 {
            let _ = writeln!(out, "# the program synced once per this many writes");
            let _ = writeln!(out, "fsync = {}", (f.write_ops / f.fsyncs).max(1));
        }
    }
    Ok(out)
}
