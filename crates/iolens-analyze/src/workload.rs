//! A job file that reproduces a trace's load profile, so "the application's I/O" can be re-run
//! on other storage with `iolens run --job`.

use std::fmt::Write;

use iolens_workload::format_bytes;

use crate::TraceSummary;

/// Size buckets kept in the emitted weighted size list.
const MAX_SIZES: usize = 8;

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
    let _ = writeln!(out, "block_unit = {}", f.block_unit);
    let _ = writeln!(out);
    let threads = s.concurrency.mean_in_flight.round().max(1.0) as u64;
    let secs = f.wall_s.ceil().max(1.0) as u64;
    let largest_request =
        s.size_histogram.iter().map(|b| b.min_bytes.div_ceil(512) * 512).max().unwrap_or(512);
    let region = s.max_extent_bytes.max(largest_request).div_ceil(1 << 20).max(1) << 20;
    let _ = writeln!(out, "[defaults]");
    let _ = writeln!(out, "target = \"{}\"", target.replace('\\', "\\\\").replace('"', "\\\""));
    let _ = writeln!(out, "# the largest offset + length seen, rounded up to 1 MiB");
    let _ = writeln!(out, "size = \"{}\"", format_bytes(region));
    let _ = writeln!(out, "# the observed wall time, rounded up to whole seconds");
    let _ = writeln!(out, "time = \"{secs}s\"");
    let _ = writeln!(out, "engine = \"sync\"");
    let _ = writeln!(out, "# mean requests in flight while busy, as synchronous threads");
    let _ = writeln!(out, "threads = {threads}");
    if f.io_wait_fraction < 0.5 && f.ops > 0 {
        // A mostly idle program issued at its own pace: keep that pace per thread.
        let rate = f.ops as f64 / f.wall_s.max(1e-9) / threads as f64;
        let _ = writeln!(out, "# the program waited on I/O less than half the time: its pace, per thread");
        let _ = writeln!(out, "rate = {rate:.3}");
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
        let bs: Vec<String> = sizes
            .iter()
            .map(|(size, n)| (size.div_ceil(512).max(1) * 512, *n))
            .map(|(size, n)| format!("{}:{}", format_bytes(size), n.min(u32::MAX as u64)))
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
        let _ = writeln!(out, "# request sizes (rounded up to 512 B) weighted by how often they were seen");
        let _ = writeln!(out, "bs = \"{}\"", bs.join(","));
        if write && f.fsyncs > 0 {
            let _ = writeln!(out, "# the program synced once per this many writes");
            let _ = writeln!(out, "fsync = {}", (f.write_ops / f.fsyncs).max(1));
        }
    }
    Ok(out)
}
