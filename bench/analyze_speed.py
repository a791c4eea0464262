#!/usr/bin/env python3
"""How fast `iolens analyze` reads traces, beside a bare read of the same bytes.

1. An iolens trace of N null-engine operations (`iolens run --engine null --trace`): records/s
   of `analyze`, and `cat FILE > /dev/null` on the same file as the floor (the cost of the bytes
   alone). Target: >= 50M records/s.
2. The Darshan DXT samples in ../shared/data/dxt: seconds of `analyze` per file beside `wc -l`.
   Target: the 131k-segment sample well under 1 s.

Usage: bench/analyze_speed.py [--ops 20000000] [--repeat 5]
Prints one line per measurement (median of the repeats) and writes bench/results/analyze_speed.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DXT = ROOT.parent / "shared" / "data" / "dxt"


def median_seconds(cmd, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=20_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "-q", "-p", "iolens"], cwd=ROOT, check=True)
    iolens = str(ROOT / "target" / "release" / "iolens")
    results = {"ops": args.ops, "repeat": args.repeat}

    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "null.trace")
        subprocess.run(
            [iolens, "run", "--engine", "null", "--target", tmp, "--rw", "randread", "--bs", "4k",
             "--size", "1g", "--bytes", str(args.ops * 4096), "--trace", trace, "--quiet"],
            check=True, stdout=subprocess.DEVNULL,
        )
        size = os.path.getsize(trace)
        analyze_s = median_seconds([iolens, "analyze", trace], args.repeat)
        cat_s = median_seconds(["sh", "-c", f"cat {trace} > /dev/null"], args.repeat)
        rate = args.ops / analyze_s
        print(f"iolens trace, {args.ops} records, {size / 2**20:.0f} MiB: analyze {analyze_s:.3f} s "
              f"= {rate / 1e6:.1f}M records/s (target >= 50M); cat of the file {cat_s:.3f} s")
        results["native"] = {"records": args.ops, "bytes": size, "analyze_s": analyze_s,
                             "records_per_s": rate, "cat_s": cat_s}

    results["dxt"] = []
    for path in sorted(DXT.glob("*.txt")) if DXT.is_dir() else []:
        analyze_s = median_seconds([iolens, "analyze", str(path)], args.repeat)
        wc_s = median_seconds(["wc", "-l", str(path)], args.repeat)
        lines = int(subprocess.run(["wc", "-l", str(path)], capture_output=True, text=True).stdout.split()[0])
        print(f"{path.name}: {lines} lines, analyze {analyze_s:.3f} s, wc -l {wc_s:.3f} s")
        results["dxt"].append({"file": path.name, "lines": lines, "analyze_s": analyze_s, "wc_s": wc_s})

    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "analyze_speed.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
