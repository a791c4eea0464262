#!/usr/bin/env python3
"""Rank 0's merge of every rank's busy periods at scale, without MPI (issue 25).

Under `mpirun … iolens run`, rank 0 merges the busy periods of every rank: they arrive in chunks
of 4096 periods per rank and are merged as sorted runs. At thousands of ranks that merge is the
one serial step of the job. This feeds RANKS synthetic streams of PERIODS periods each through
the same code (`crates/iolens-mpi/examples/merge_ranks.rs`: `ChunkStream` into
`merge_sorted_streams_grouped`, with a node union per 16 ranks) and prints rank 0's merge time
and the process's peak memory (`/usr/bin/time -v`). The floor beside it is the time to generate
and touch the same periods without merging them, in the same process.

The goal is no worse than linear growth, and at most 1 s and 256 MiB at 4k ranks × 10k periods.
Beyond that, the merge should be done as a tree.

Usage: bench/merge_ranks.py [--ranks 1024,4096,16384] [--periods 10000] [--repeat 3]
Writes bench/results/merge_ranks.json. Honours CARGO_TARGET_DIR for the release build.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build() -> Path:
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "-p", "iolens-mpi", "--example", "merge_ranks"],
        cwd=ROOT,
        check=True,
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "examples" / "merge_ranks"


def once(binary: Path, ranks: int, periods: int) -> dict:
    out = subprocess.run(
        ["/usr/bin/time", "-v", str(binary), str(ranks), str(periods)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    result["peak_rss_mib"] = int(rss.group(1)) / 1024 if rss else None
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="1024,4096,16384")
    parser.add_argument("--periods", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    binary = build()
    rows = []
    for ranks in [int(r) for r in args.ranks.split(",")]:
        runs = [once(binary, ranks, args.periods) for _ in range(args.repeat)]
        row = {
            "ranks": ranks,
            "periods_per_rank": args.periods,
            "merge_s": statistics.median(r["merge_s"] for r in runs),
            "floor_s": statistics.median(r["floor_s"] for r in runs),
            "peak_rss_mib": max(r["peak_rss_mib"] or 0 for r in runs),
            "merge_ns_per_period": statistics.median(r["merge_s"] for r in runs) * 1e9 / (ranks * args.periods),
        }
        rows.append(row)
        print(
            f"{ranks:>6} ranks × {args.periods} periods: merge {row['merge_s']:.3f} s "
            f"({row['merge_ns_per_period']:.1f} ns/period), floor {row['floor_s']:.3f} s, "
            f"peak RSS {row['peak_rss_mib']:.0f} MiB"
        )
    out = ROOT / "bench" / "results" / "merge_ranks.json"
    out.write_text(json.dumps({"median_of": args.repeat, "rows": rows}, indent=2) + "\n")
    print(f"written: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
