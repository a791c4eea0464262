#!/usr/bin/env python3
"""What `--log-interval` costs the agent loop: null-engine IOPS with and without a series.

The null engine does no I/O, so its IOPS is the agent loop's own speed: any cost of recording
the series (one more counter update and histogram record per operation, one interval closed
per interval) shows there and nowhere more. Runs alternate (none, then each interval) so a
machine busy with something else slows both alike; the median of the repeats is reported with
its ratio to the run without a series. Target: within 5 % at 1 s intervals.

Usage: bench/series_overhead.py [--time 3s] [--repeat 5] [--threads 1] [--debug]
(--debug uses target/debug/iolens instead of building the release binary.)
Prints one line per setting and writes bench/results/series_overhead.json.
"""
import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = [None, "1s", "100ms", "10ms"]


def iops(iolens, directory, time, threads, interval):
    out = Path(directory) / "r.json"
    cmd = [iolens, "run", "--quiet", "--engine", "null", "--target", directory, "--time", time,
           "--threads", str(threads), "--json", str(out)]
    if interval:
        cmd += ["--log-interval", interval]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(out.read_text())["aggregate"]["iops"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time", default="3s")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--debug", action="store_true")
    args = ap.parse_args()
    if args.debug:
        iolens = str(ROOT / "target" / "debug" / "iolens")
    else:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "iolens"], cwd=ROOT, check=True)
        iolens = str(ROOT / "target" / "release" / "iolens")
    samples = {s: [] for s in SETTINGS}
    with tempfile.TemporaryDirectory(prefix="iolens-series-bench-") as tmp:
        for _ in range(args.repeat):
            for s in SETTINGS:
                samples[s].append(iops(iolens, tmp, args.time, args.threads, s))
    base = statistics.median(samples[None])
    results = []
    for s in SETTINGS:
        m = statistics.median(samples[s])
        label = f"--log-interval {s}" if s else "no series"
        print(f"{label:>22}: {m / 1e6:.3f} M IOPS (median of {args.repeat}), {m / base:.3f} of no series")
        results.append({"log_interval": s, "iops_median": m, "iops": samples[s], "ratio": m / base})
    out = ROOT / "bench" / "results" / "series_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"binary": iolens, "time": args.time, "threads": args.threads,
                               "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
