//! Clocks across ranks: an injected skew is recovered, and the global busy time is the union
//! of the ranks' busy periods on rank 0's clock.

use super::*;

/// Rank 1's clock runs this far ahead in the skew tests (`IOLENS_CLOCK_SKEW_NS`).
const SKEW_NS: i64 = 5_000_000;

/// Rank 1's clock runs 5 ms ahead (`IOLENS_CLOCK_SKEW_NS`): the ping-pong estimate recovers it
/// within 50 µs, and the global busy time equals the offline union of the four ranks' busy
/// logs with rank 1's moved back by the true skew.
#[test]
fn injected_clock_skew_is_recovered_and_the_union_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let log = dir.path().join("busy.log");
    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then export IOLENS_CLOCK_SKEW_NS={SKEW_NS}; fi; \
         exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 16k --size 8m --time 1s --rate 2000 \
         --busy-log '{}' -q --json '{}'",
        dir.path().display(),
        log.display(),
        json.display()
    );
    let out = mpirun_sh(&script);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = read_json(&json);
    let per_rank = d["per_rank"].as_array().unwrap();
    let offset = |r: usize| per_rank[r]["offset_ns"].as_i64().unwrap();
    let error = (offset(1) - SKEW_NS).abs();
    println!("skew {SKEW_NS} ns estimated as {} ns: error {error} ns", offset(1));
    assert!(error <= 50_000, "skew {SKEW_NS} estimated as {}", offset(1));
    for r in [0, 2, 3] {
        assert!(offset(r).abs() <= 50_000, "rank {r} has no skew but an offset of {}", offset(r));
        assert!(u(&per_rank[r]["uncertainty_ns"]) < 1_000_000);
    }
    // The offline union of the four logs corrected by the *reported* clocks (both estimates and
    // the drift, as rank 0 applied them) equals the global busy time.
    let estimate = |v: &Value| OffsetEstimate {
        offset_ns: v["offset_ns"].as_i64().unwrap(),
        uncertainty_ns: u(&v["uncertainty_ns"]),
        rtt_ns: u(&v["rtt_ns"]),
        at_ns: u(&v["at_ns"]),
    };
    let mut reported: Vec<Interval> = Vec::new();
    for (r, entry) in per_rank.iter().enumerate() {
        let c = ClockCorrection::new(estimate(&entry["clock"]["before"]), estimate(&entry["clock"]["after"]));
        let path = dir.path().join(format!("busy.r{r}.log"));
        reported.extend(read_period_log(&path).unwrap().map(|p| {
            let start = c.to_root(p.start);
            Interval::new(start, c.to_root(p.end).max(start))
        }));
    }
    let with_reported = union_of(&mut reported).busy_ns;
    let mut all: Vec<Interval> = Vec::new();
    for r in 0..RANKS {
        let path = dir.path().join(format!("busy.r{r}.log"));
        let shift = if r == 1 { SKEW_NS as u64 } else { 0 };
        all.extend(read_period_log(&path).unwrap().map(|p| Interval::new(p.start - shift, p.end - shift)));
    }
    let periods = all.len() as u64;
    let offline = union_of(&mut all).busy_ns;
    let global = (d["aggregate"]["busy_s"].as_f64().unwrap() * 1e9).round() as u64;
    // Each period's ends move by at most the estimate's error (plus drift rounding).
    let tolerance = 2 * periods * (error as u64 + 1_000) + 1_000;
    println!(
        "global busy {global} ns; offline union {with_reported} ns with the reported clocks, {offline} ns with \
         the true skew, over {periods} periods"
    );
    assert!(global.abs_diff(with_reported) <= 1_000, "global {global} vs offline {with_reported}");
    assert!(global.abs_diff(offline) <= tolerance, "global {global} vs offline {offline} (±{tolerance})");
}

/// The check: the global busy time equals the offline union of the four ranks'
/// `--trace` files — every operation moved to rank 0's clock by the reported correction —
/// within 1 µs per busy period. Rank 1's clock runs 5 ms ahead; the rate leaves idle gaps.
#[test]
fn global_busy_time_is_the_union_of_the_rank_traces() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let trace = dir.path().join("ops.trace");
    let script = format!(
       "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then export IOLENS_CLOCK_SKEW_NS={SKEW_NS}; fi; \
        exec \"$IOLENS_BIN\" run --target '{}' --rw write --bs 16k --size 8m --time 1s --rate 2000 --threads 2 \
        --trace '{}' -q --json '{}'",
       dir.path().display(),
       trace.display(),
       json.display()
   );
    let out = mpirun_sh(&script);
    assert!(out.status.success(), "{}", stderr(&out));
    let d = read_json(&json);
    let estimate = |v: &Value| OffsetEstimate {
        offset_ns: v["offset_ns"].as_i64().unwrap(),
        uncertainty_ns: u(&v["uncertainty_ns"]),
        rtt_ns: u(&v["rtt_ns"]),
        at_ns: u(&v["at_ns"]),
    };
    let mut ops: Vec<Interval> = Vec::new();
    for (r, entry) in d["per_rank"].as_array().unwrap().iter().enumerate() {
        let c = ClockCorrection::new(estimate(&entry["clock"]["before"]), estimate(&entry["clock"]["after"]));
        assert_eq!(c.offset_ns(), entry["offset_ns"].as_i64().unwrap());
        let mut reader = TraceReader::open(&dir.path().join(format!("ops.r{r}.trace"))).unwrap();
        while let Some(op) = reader.next_record().unwrap() {
            let start = c.to_root(op.start_ns);
            ops.push(Interval::new(start, c.to_root(op.end_ns).max(start)));
        }
    }
    let offline = union_of(&mut ops);
    let global = (d["aggregate"]["busy_s"].as_f64().unwrap() * 1e9).round() as u64;
    println!(
        "global busy {global} ns, offline union of the traces {} ns over {} periods ({} ops)",
        offline.busy_ns,
        offline.periods,
        ops.len()
    );
    assert!(offline.periods > RANKS as u64, "idle gaps between operations: {}", offline.periods);
    assert!(
        global.abs_diff(offline.busy_ns) <= 1_000 * offline.periods,
        "global {global} vs {}",
        offline.busy_ns
    );
}
