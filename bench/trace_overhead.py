#!/usr/bin/env python3
"""Tracer overhead per intercepted call: 1M small preads from the page cache, run plainly,
under the iolens preload, and under strace, in one run.

The same C program runs each way and reports ns per pread; plain and preload runs alternate
(--pairs), and the added cost is the median over pairs of (traced - plain). strace runs once
with fewer calls (it is orders of magnitude slower). Usage: bench/trace_overhead.py [--pairs N]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRELOAD = os.path.join(ROOT, "target", "release", "libiolens_preload.so")

PROGRAM = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY);
    long n = atol(argv[2]);
    char buf[512];
    struct timespec a, b;
    for (int i = 0; i < 1000; i++) pread(fd, buf, sizeof buf, (i % 64) * 512);  /* warm */
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        if (pread(fd, buf, sizeof buf, (i % 64) * 512) != sizeof buf) { perror("pread"); return 1; }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    close(fd);
    return 0;
}
"""


def run(cmd, env=None):
    return float(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--calls", type=int, default=1_000_000)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-p", "iolens-preload"], cwd=ROOT, check=True, capture_output=True)
    work = tempfile.mkdtemp(prefix="iolens-trace-bench-")
    try:
        src, exe, data = (os.path.join(work, n) for n in ("p.c", "p", "data"))
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
        with open(data, "wb") as f:
            f.write(os.urandom(64 * 512))
        traced_env = dict(os.environ, LD_PRELOAD=PRELOAD, IOLENS_TRACE_DIR=work)
        plain, traced = [], []
        for _ in range(a.pairs):
            plain.append(run([exe, data, str(a.calls)]))
            traced.append(run([exe, data, str(a.calls)], traced_env))
            for f in os.listdir(work):
                if f.endswith(".evt"):
                    os.remove(os.path.join(work, f))
        added = [t - p for p, t in zip(plain, traced)]
        print(f"pread 512 B from page cache, {a.calls} calls, {a.pairs} alternating pairs")
        print(f"  plain           {statistics.median(plain):8.1f} ns/call")
        print(f"  iolens preload  {statistics.median(traced):8.1f} ns/call   added (median of pairs): {statistics.median(added):.1f} ns")
        if shutil.which("strace"):
            n = max(a.calls // 20, 1000)
            s = run(["strace", "-f", "-qq", "-o", os.devnull, exe, data, str(n)])
            print(f"  strace          {s:8.1f} ns/call   added: {s - statistics.median(plain):.1f} ns ({n} calls)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
