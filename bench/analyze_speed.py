#!/usr/bin/env python3
"""How fast `iolens analyze` reads traces, and how much memory it takes.

1. An iolens run trace of N null-engine operations (`iolens run --engine null --trace`, 32-byte
   records): records/s of `analyze` (read in parallel chunks, one per core), its peak RSS, and
   `cat FILE > /dev/null` on the same file as the floor (the cost of the bytes alone).
   Target: >= 50M records/s with a warm cache, memory bounded whatever N.
   Then the same for two agents (records in interleaved blocks: the windowed reading), and an
   `iolens trace` directory of a C program (compiled with cc) whose 1 and 4 threads make N/2
   512 B preads in all: calls/s of `analyze` on the event streams a traced program leaves.
2. The Darshan DXT samples in ../shared/data/dxt: segments/s of `analyze` on the DXT text, and,
   when PyDarshan is importable (`pip install darshan`; this script also looks in
   $PYDARSHAN_PYTHON, a Python that has it), the time PyDarshan takes to load the DXT segments of
   the same log (../shared/data/darshan/NAME.darshan) into pandas DataFrames
   (`DarshanReport(...).mod_read_all_dxt_records(..., dtype="pandas")`). Target: >= 10x.
   What is timed differs, so three ratios are printed: (a) the whole `iolens analyze` process
   on the DXT text (start-up, parsing, the full summary; spawned through /usr/bin/time, whose
   own start-up is in it: see `wc -l` on the same file for that floor) against PyDarshan's load
   timed inside Python, after the interpreter started and imported darshan; (b) the same with
   iolens reading the binary log PyDarshan reads; (c) both whole processes on the binary log.

Usage: bench/analyze_speed.py [--ops 10000000] [--repeat 5]
Prints one line per measurement (median of the repeats; peak RSS is the largest) and writes
bench/results/analyze_speed.json. Honours CARGO_TARGET_DIR for the release build.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
DXT = DATA / "dxt"
DARSHAN = DATA / "darshan"


# Peak RSS through /usr/bin/time: a child forked straight from this (large) Python would carry
# the Python's high-water mark into its own ru_maxrss across the exec.
GNU_TIME = shutil.which("time", path="/usr/bin")


def timed_run(cmd):
    """Wall seconds, CPU seconds (user + system) and peak RSS (bytes) of one run of `cmd`."""
    wrapped = [GNU_TIME, "-f", "%M"] + cmd if GNU_TIME else cmd
    t0 = time.perf_counter()
    proc = subprocess.Popen(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        sys.exit(f"{cmd}: exit {proc.returncode}: {err}")
    rss = int(err.strip().splitlines()[-1]) * 1024 if GNU_TIME else usage.ru_maxrss * 1024
    return seconds, usage.ru_utime + usage.ru_stime, rss


def measure(cmd, repeat):
    """Median wall and CPU seconds, largest peak RSS."""
    runs = [timed_run(cmd) for _ in range(repeat)]
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            max(r[2] for r in runs))


def pydarshan_python():
    """A Python interpreter that can import darshan, or None."""
    candidates = [os.environ.get("PYDARSHAN_PYTHON"), sys.executable]
    for py in filter(None, candidates):
        ok = subprocess.run([py, "-c", "import darshan"], capture_output=True).returncode == 0
        if ok:
            return py
    return None


PYDARSHAN_LOAD = """
import sys, time, darshan
path = sys.argv[1]
t0 = time.perf_counter()
report = darshan.DarshanReport(path, read_all=False)
segments = 0
for mod in ("DXT_POSIX", "DXT_MPIIO"):
    if mod in report.modules:
        report.mod_read_all_dxt_records(mod, dtype="pandas")
        for rec in report.records[mod]:
            segments += len(rec["read_segments"]) + len(rec["write_segments"])
print(time.perf_counter() - t0, segments)
"""


def pydarshan_load(py, log, repeat):
    """Median seconds of the load inside Python (after the interpreter started and imported
    darshan), median wall seconds of the whole Python process, and the segments loaded."""
    times, process_times, segments = [], [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run([py, "-c", PYDARSHAN_LOAD, str(log)], capture_output=True, text=True)
        process_times.append(time.perf_counter() - t0)
        if out.returncode != 0:
            return None, None, out.stderr.strip().splitlines()[-1:] or ["failed"]
        seconds, segments = out.stdout.split()
        times.append(float(seconds))
    return statistics.median(times), statistics.median(process_times), int(segments)


PREADS_PROGRAM = r"""
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static int fd;
static long calls;
static void *run(void *arg) {
    char buf[512];
    long t = (long)arg;
    for (long i = 0; i < calls; i++) pread(fd, buf, sizeof buf, ((i * 7 + t) % 2048) * 512);
    return NULL;
}
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    calls = atol(argv[2]);
    int threads = atoi(argv[3]);
    fd = open(argv[1], O_RDONLY);
    pthread_t t[64];
    for (long i = 0; i < threads && i < 64; i++) pthread_create(&t[i], NULL, run, (void *)i);
    for (int i = 0; i < threads && i < 64; i++) pthread_join(t[i], NULL);
    return 0;
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "-q", "-p", "iolens"], cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    iolens = str(target / "release" / "iolens")
    results = {"ops": args.ops, "repeat": args.repeat, "cores": os.cpu_count(),
               "load_average_at_start": os.getloadavg()[0]}

    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "null.trace")
        subprocess.run(
            [iolens, "run", "--engine", "null", "--target", tmp, "--rw", "randread", "--bs", "4k",
             "--size", "1g", "--bytes", str(args.ops * 4096), "--trace", trace, "--quiet"],
            check=True, stdout=subprocess.DEVNULL,
        )
        size = os.path.getsize(trace)
        subprocess.run(["sh", "-c", f"cat {trace} > /dev/null"], check=True)  # warm the cache
        analyze_s, cpu_s, rss = measure([iolens, "analyze", trace], args.repeat)
        cat_s, _, _ = measure(["sh", "-c", f"cat {trace} > /dev/null"], args.repeat)
        rate = args.ops / analyze_s
        print(f"iolens run trace, {args.ops} records, {size / 2**20:.0f} MiB: analyze {analyze_s:.3f} s "
              f"= {rate / 1e6:.1f}M records/s (target >= 50M; {args.ops / cpu_s / 1e6:.1f}M records "
              f"per CPU-second), peak RSS {rss / 2**20:.0f} MiB; cat of the file {cat_s:.3f} s")
        results["native"] = {"records": args.ops, "bytes": size, "analyze_s": analyze_s,
                             "analyze_cpu_s": cpu_s, "records_per_s": rate,
                             "records_per_cpu_s": args.ops / cpu_s, "peak_rss_bytes": rss,
                             "cat_s": cat_s}

        # Two agents: their records are written in interleaved blocks, not in start order.
        os.remove(trace)
        agents_dir = os.path.join(tmp, "agents")
        os.mkdir(agents_dir)
        subprocess.run(
            [iolens, "run", "--engine", "null", "--threads", "2", "--target", agents_dir, "--rw",
             "randread", "--bs", "4k", "--size", "1g", "--bytes", str(args.ops // 2 * 4096),
             "--trace", trace, "--quiet"],
            check=True, stdout=subprocess.DEVNULL,
        )
        records = (os.path.getsize(trace) - 128) // 32
        subprocess.run(["sh", "-c", f"cat {trace} > /dev/null"], check=True)
        analyze_s, cpu_s, rss = measure([iolens, "analyze", trace], args.repeat)
        print(f"iolens run trace of two agents, {records} records: analyze {analyze_s:.3f} s = "
              f"{records / analyze_s / 1e6:.1f}M records/s ({records / cpu_s / 1e6:.1f}M records "
              f"per CPU-second), peak RSS {rss / 2**20:.0f} MiB")
        results["native_two_agents"] = {"records": records, "analyze_s": analyze_s,
                                        "analyze_cpu_s": cpu_s, "records_per_s": records / analyze_s,
                                        "records_per_cpu_s": records / cpu_s,
                                        "peak_rss_bytes": rss}

        # `iolens trace` of a C program whose threads pread 512 B from a 1 MiB file: the trace
        # directory's event streams, as a user's traced program leaves them.
        os.remove(trace)
        source = os.path.join(tmp, "preads.c")
        with open(source, "w") as f:
            f.write(PREADS_PROGRAM)
        program = os.path.join(tmp, "preads")
        if subprocess.run(["cc", "-O2", "-pthread", "-o", program, source]).returncode != 0:
            print("no C compiler (cc): the traced program is not measured")
        else:
            data = os.path.join(tmp, "preads.dat")
            with open(data, "wb") as f:
                f.write(os.urandom(1 << 20))
            results["traced_program"] = []
            for threads in (1, 4):
                out = os.path.join(tmp, f"trace{threads}")
                subprocess.run([iolens, "trace", "--quiet", "--out", out, "--", program, data,
                                str(args.ops // 2 // threads), str(threads)],
                               check=True, stdout=subprocess.DEVNULL)
                calls = args.ops // 2 // threads * threads
                stream_bytes = sum(p.stat().st_size for p in Path(out).rglob("*.evt"))
                subprocess.run(["sh", "-c", f"cat {out}/*.evt > /dev/null"], check=True)
                analyze_s, cpu_s, rss = measure([iolens, "analyze", out], args.repeat)
                print(f"iolens trace of {threads} thread(s) making {calls} preads "
                      f"({stream_bytes / 2**20:.0f} MiB of streams): analyze {analyze_s:.3f} s = "
                      f"{calls / analyze_s / 1e6:.1f}M calls/s ({calls / cpu_s / 1e6:.1f}M per "
                      f"CPU-second), peak RSS {rss / 2**20:.0f} MiB")
                results["traced_program"].append({
                    "threads": threads, "calls": calls, "stream_bytes": stream_bytes,
                    "analyze_s": analyze_s, "analyze_cpu_s": cpu_s, "calls_per_s": calls / analyze_s,
                    "peak_rss_bytes": rss})
                shutil.rmtree(out)

    py = pydarshan_python()
    results["pydarshan"] = py is not None
    if py is None:
        print("PyDarshan is not installed here (pip install darshan, or set PYDARSHAN_PYTHON): "
              "no comparison with it")
    results["dxt"] = []
    for path in sorted(DXT.glob("*.txt")) if DXT.is_dir() else []:
        text = path.read_text(errors="replace").splitlines()
        segments = sum(1 for line in text if line.lstrip().startswith(("X_POSIX", "X_MPIIO")))
        analyze_s, cpu_s, rss = measure([iolens, "analyze", str(path)], args.repeat)
        wc_s, _, _ = measure(["wc", "-l", str(path)], args.repeat)
        row = {"file": path.name, "segments": segments, "analyze_s": analyze_s, "analyze_cpu_s": cpu_s,
               "segments_per_s": segments / analyze_s, "peak_rss_bytes": rss, "wc_s": wc_s}
        line = (f"{path.name}: {segments} segments, analyze {analyze_s:.3f} s = "
                f"{segments / analyze_s / 1e6:.2f}M segments/s ({cpu_s * 1e3:.1f} ms CPU), "
                f"peak RSS {rss / 2**20:.0f} MiB")
        log = DARSHAN / path.name.replace(".dxt.txt", ".darshan")
        if log.exists():
            # The binary log PyDarshan reads: the same input on both sides (decompression, all
            # DXT segments, and for iolens the whole summary besides).
            log_s, log_cpu_s, _ = measure([iolens, "analyze", str(log)], args.repeat)
            row.update({"analyze_darshan_log_s": log_s, "analyze_darshan_log_cpu_s": log_cpu_s})
            line += f"; analyze of the binary log {log_s:.3f} s ({log_cpu_s * 1e3:.1f} ms CPU)"
        if py and log.exists():
            load_s, process_s, loaded = pydarshan_load(py, log, args.repeat)
            if load_s is None:
                line += f"; PyDarshan failed: {loaded[0]}"
                row["pydarshan_error"] = loaded[0]
            else:
                row.update({"pydarshan_load_s": load_s, "pydarshan_process_s": process_s,
                            "pydarshan_segments": loaded,
                            "speedup_vs_pydarshan": load_s / analyze_s,
                            "speedup_vs_pydarshan_same_log": load_s / log_s,
                            "speedup_vs_pydarshan_process": process_s / log_s})
                line += (f"; PyDarshan DXT load {load_s:.3f} s ({loaded} segments), its whole "
                         f"process {process_s:.3f} s. iolens is faster by: "
                         f"{load_s / analyze_s:.1f}x (whole iolens process on the text vs the load "
                         f"inside Python; target >= 10x), {load_s / log_s:.1f}x (same on the binary "
                         f"log), {process_s / log_s:.1f}x (process vs process, binary log)")
        print(line)
        results["dxt"].append(row)

    results["load_average_at_end"] = os.getloadavg()[0]
    print(f"load average (1 min): {results['load_average_at_start']:.2f} at the start, "
          f"{results['load_average_at_end']:.2f} at the end, on {os.cpu_count()} cores")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "analyze_speed.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
