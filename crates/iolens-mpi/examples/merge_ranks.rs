//! Rank 0's merge of every rank's busy periods, without MPI: `RANKS` synthetic streams of
//! `PERIODS` sorted, disjoint periods each, cut into chunks of [`CHUNK_PERIODS`] as they arrive
//! from the ranks, moved by a clock correction and merged by the same code `mpirun … iolens run`
//! uses (`ChunkStream` into `merge_sorted_streams_grouped`, 16 ranks per node). Prints the merge's
//! time and, as a floor, the time of generating and touching the same periods without merging.
//! Peak memory is the process's (`/usr/bin/time -v`, see bench/merge_ranks.py).
//!
//! Usage: merge_ranks RANKS PERIODS

use std::time::Instant;

use iolens_mpi::wire::{ChunkStream, CHUNK_PERIODS};
use iolens_record::busy::merge_sorted_streams_grouped;
use iolens_record::Interval;

/// Rank `rank`'s periods from `from` (a chunk): busy 60% of the time, with a per-rank phase and
/// jitter, so the ranks' periods interleave as a real job's do.
fn chunk(rank: u64, from: u64, count: u64, periods: u64) -> Vec<Interval> {
    (from..(from + count).min(periods))
        .map(|i| {
            let jitter = (i.wrapping_mul(2_654_435_761) ^ rank.wrapping_mul(40_503)) % 200;
            let start = i * 1_000 + rank % 1_000 + jitter;
            Interval::new(start, start + 600)
        })
        .collect()
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("RANKS PERIODS")).collect();
    let [ranks, periods] = args[..] else {
        eprintln!("usage: merge_ranks RANKS PERIODS");
        std::process::exit(2);
    };
    let step = CHUNK_PERIODS as u64;

    // The floor: the same periods generated chunk by chunk and touched, not merged.
    let t = Instant::now();
    let mut touched = 0u64;
    for rank in 0..ranks {
        let mut from = 0;
        while from < periods {
            touched += chunk(rank, from, step, periods).iter().map(|p| p.end - p.start).sum::<u64>();
            from += step;
        }
    }
    let floor_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let streams: Vec<_> = (0..ranks)
        .map(|rank| {
            let mut from = 0;
            let next = move || {
                let c = chunk(rank, from, step, periods);
                from += step;
                c
            };
            // A clock correction per rank, as rank 0 applies one.
            ChunkStream::new(next, move |t: u64| t + rank % 7)
        })
        .collect();
    let node_of: Vec<usize> = (0..ranks as usize).map(|r| r / 16).collect();
    let (union, nodes) = merge_sorted_streams_grouped(streams, &node_of);
    let merge_s = t.elapsed().as_secs_f64();
    println!(
        "{{\"ranks\": {ranks}, \"periods_per_rank\": {periods}, \"merge_s\": {merge_s:.6}, \"floor_s\": {floor_s:.6}, \
         \"busy_ns\": {}, \"union_periods\": {}, \"nodes\": {}, \"touched_ns\": {touched}}}",
        union.busy_ns,
        union.periods,
        nodes.len()
    );
}
