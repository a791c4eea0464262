#!/usr/bin/env python3
"""Tracer overhead per intercepted call, in one run: the same C program run plainly, under the
iolens preload, and under strace.

Two workloads: 512 B `pread`s of a 32 KiB file that the program reads once before timing (page
cache warm: no device I/O is measured, only the call path), and 512 B `write`s appending to a new
file (page cache only, no fsync). Plain and preload runs alternate (--pairs), and the added cost
is the median over pairs of (traced - plain). strace runs once per workload with fewer calls (it
is orders of magnitude slower). Each figure is given as the thread's CPU time and as wall time
per call, and valgrind counts the user-space instructions added. Prints a table and writes bench/results/trace_overhead.json.
Usage: bench/trace_overhead.py [--pairs N] [--calls N] [--no-build] [--baseline OTHER_PRELOAD.so] [--realtime]
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRELOAD = os.path.join(ROOT, "target", "release", "libiolens_preload.so")
RESULTS = os.path.join(ROOT, "bench", "results", "trace_overhead.json")

PROGRAM = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __x86_64__
#include <x86intrin.h>
#endif
/* Two TSC reads per iteration, as the tracer takes per call: the cost no recording can avoid. */
static int stamps(long n) {
#ifdef __x86_64__
    struct timespec a, b, ca, cb;
    unsigned long long sum = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    for (long i = 0; i < n; i++) {
        sum += __rdtsc();
        __asm__ volatile("" ::: "memory");
        sum += __rdtsc();
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.2f %.2f %llu\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n,
           ((cb.tv_sec - ca.tv_sec) * 1e9 + (cb.tv_nsec - ca.tv_nsec)) / n, sum & 1);
    return 0;
#else
    (void)n;
    return 2;
#endif
}
int main(int argc, char **argv) {
    if (strcmp(argv[1], "stamps") == 0) return stamps(atol(argv[3]));
    int reading = strcmp(argv[1], "pread") == 0;
    int fd = reading ? open(argv[2], O_RDONLY) : open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); return 1; }
    long n = atol(argv[3]);
    char buf[512];
    size_t len = sizeof buf;
    memset(buf, 'x', sizeof buf);
    struct timespec a, b, ca, cb;
    for (int i = 0; i < 1000; i++)  /* warm: the file's pages, the tracer's lazy set-up */
        if ((reading ? pread(fd, buf, len, (i % 64) * 512) : write(fd, buf, len)) != (ssize_t)len) { perror("warm"); return 1; }
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    for (long i = 0; i < n; i++) {
        if ((reading ? pread(fd, buf, len, (i % 64) * 512) : write(fd, buf, len)) != (ssize_t)len) { perror("io"); return 1; }
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.2f %.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n,
           ((cb.tv_sec - ca.tv_sec) * 1e9 + (cb.tv_nsec - ca.tv_nsec)) / n);
    close(fd);
    return 0;
}
"""

WORKLOADS = {
    "pread": "pread 512 B of a 32 KiB file, page cache warm (read once before timing)",
    "write": "write 512 B appending to a new file, page cache only (no fsync)",
}


# Set by --realtime: the command prefix that runs a measured program at a real-time priority.
SCHEDULE = []


def run(cmd, env=None):
    """The program's (wall ns, thread CPU ns) per call."""
    out = subprocess.run(SCHEDULE + cmd, check=True, capture_output=True, text=True, env=env).stdout.split()
    return float(out[0]), float(out[1])


def instructions(cmd, env=None):
    """User-space instructions the command executes, counted by valgrind (callgrind): a cost
    that other load on the machine cannot disturb. None without valgrind."""
    if not shutil.which("valgrind"):
        return None
    with tempfile.NamedTemporaryFile(suffix=".cg") as out:
        r = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", *cmd],
            check=True, capture_output=True, text=True, env=env,
        )
    for line in r.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[1].strip().replace(",", ""))
    return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def clocksource():
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def measure(exe, work, kind, calls, pairs, preloads):
    """Runs plain and under each preload (name -> library), alternating, `pairs` times."""
    data = os.path.join(work, "data")
    if kind == "pread":
        with open(data, "wb") as f:
            f.write(os.urandom(64 * 512))
    trace_dir = os.path.join(work, "trace")

    def traced_run(run_with, n, library):
        shutil.rmtree(trace_dir, ignore_errors=True)
        os.mkdir(trace_dir)
        r = run_with([exe, kind, data, str(n)], dict(os.environ, LD_PRELOAD=library, IOLENS_TRACE_DIR=trace_dir))
        recorded = sum(os.path.getsize(os.path.join(trace_dir, f)) for f in os.listdir(trace_dir))
        # An event takes at least 5 bytes (a short compact event).
        if recorded < n * 5:
            raise SystemExit(f"{kind}: {library} wrote {recorded} bytes for {n} calls: not tracing?")
        stream_bytes[library] = recorded
        return r

    stream_bytes = {}
    plain, traced = [], {name: [] for name in preloads}
    for _ in range(pairs):
        plain.append(run([exe, kind, data, str(calls)]))
        for name, library in preloads.items():
            traced[name].append(traced_run(run, calls, library))
    result = {"workload": WORKLOADS[kind], "calls": calls, "pairs": pairs}
    n = min(calls, 100_000)
    plain_ir = instructions([exe, kind, data, str(n)])
    for name, library in preloads.items():
        figures = {"library": library, "stream_bytes_per_call": round(stream_bytes[library] / calls, 2)}
        for i, clock in enumerate(["wall", "cpu"]):
            p, t = [r[i] for r in plain], [r[i] for r in traced[name]]
            added = [b - a for a, b in zip(p, t)]
            figures[clock] = {
                "plain_ns_per_call": round(statistics.median(p), 1),
                "preload_ns_per_call": round(statistics.median(t), 1),
                "added_ns_per_call_median_of_pairs": round(statistics.median(added), 1),
                "added_ns_per_call_min_max": [round(min(added), 1), round(max(added), 1)],
                # Other load only ever adds time: the fastest runs of each are the least disturbed.
                "added_ns_per_call_fastest_vs_fastest": round(min(t) - min(p), 1),
                "plain_runs": p,
                "preload_runs": t,
            }
        traced_ir = traced_run(lambda cmd, env: instructions(cmd, env), n, library)
        if plain_ir is not None and traced_ir is not None:
            figures["instructions_added_per_call"] = round((traced_ir - plain_ir) / n, 1)
            figures["instructions_calls"] = n
        result[name] = figures
    if shutil.which("strace"):
        n = max(calls // 20, 1000)
        s = run(["strace", "-f", "-qq", "-o", os.devnull, exe, kind, data, str(n)])
        result["strace"] = {"calls": n, "wall_ns_per_call": round(s[0], 1), "cpu_ns_per_call": round(s[1], 1)}
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--no-build", action="store_true", help="use the release preload as it is")
    ap.add_argument("--baseline", metavar="LIB", help="another build of the preload to measure in the same runs")
    ap.add_argument(
        "--realtime",
        action="store_true",
        help="run the timed programs under `chrt -f 10` (root): on a machine busy with other work they are then "
        "not preempted, and wall time equals CPU time",
    )
    a = ap.parse_args()
    if a.realtime:
        if not shutil.which("chrt"):
            raise SystemExit("--realtime needs chrt (util-linux)")
        SCHEDULE[:] = ["chrt", "-f", "10"]
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-p", "iolens-preload"], cwd=ROOT, check=True, capture_output=True)
    work = tempfile.mkdtemp(prefix="iolens-trace-bench-")
    report = {
        "what": "ns per call added by the iolens preload, measured inside the program around the "
        "loop of calls: 'cpu' is the thread's CPU time (user + system, the flushes of the trace "
        "buffers included), 'wall' the monotonic clock; 'cpu' is the figure to read on a loaded "
        "machine, where wall time also counts waiting for a core",
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "clocksource": clocksource(),
        "load_average_at_start": os.getloadavg()[0],
        "scheduling": "SCHED_FIFO priority 10 (chrt -f 10)" if a.realtime else "normal",
        "page_cache": "warm (reads served from cache; writes go to the page cache, no fsync)",
        "workloads": {},
    }
    try:
        src, exe = os.path.join(work, "p.c"), os.path.join(work, "p")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
        print(f"CPU {report['cpu']}, {report['cores']} cores, clocksource {report['clocksource']}, page cache warm")
        print(f"load average at start {report['load_average_at_start']}, scheduling {report['scheduling']}")
        if clocksource() == "tsc" and platform.machine() == "x86_64":
            floor = statistics.median(run([exe, "stamps", "-", str(a.calls)])[1] for _ in range(a.pairs))
            report["two_tsc_reads_ns"] = round(floor, 1)
            print(f"two TSC reads (the timestamps of one traced call) cost {floor:.1f} ns here: the floor of any recording")
        preloads = {"preload": PRELOAD}
        if a.baseline:
            preloads["baseline"] = os.path.abspath(a.baseline)
        for kind in WORKLOADS:
            r = measure(exe, work, kind, a.calls, a.pairs, preloads)
            report["workloads"][kind] = r
            print(f"{r['workload']}: {a.calls} calls, {a.pairs} alternating runs of each")
            for name in preloads:
                for clock in ["cpu", "wall"]:
                    c = r[name][clock]
                    print(
                        f"  {name:8} {clock:4}  plain {c['plain_ns_per_call']:7.1f} ns/call   traced "
                        f"{c['preload_ns_per_call']:7.1f} ns/call   added (median of pairs) "
                        f"{c['added_ns_per_call_median_of_pairs']:6.1f} ns (range {c['added_ns_per_call_min_max']}), "
                        f"fastest vs fastest {c['added_ns_per_call_fastest_vs_fastest']:6.1f} ns"
                    )
                print(f"  {name:8} stream bytes per call: {r[name]['stream_bytes_per_call']}")
                if "instructions_added_per_call" in r[name]:
                    print(f"  {name:8} instructions added per call (valgrind): {r[name]['instructions_added_per_call']}")
            if "strace" in r:
                s = r["strace"]
                print(
                    f"  strace   cpu {s['cpu_ns_per_call']:8.1f} ns/call, wall {s['wall_ns_per_call']:8.1f} ns/call "
                    f"({s['calls']} calls)"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(f"wrote {os.path.relpath(RESULTS, ROOT)}")


if __name__ == "__main__":
    main()
