#!/usr/bin/env python3
"""iolens against fio (and a bare C pread loop) on the same jobs, alternating, in one run.

Cases (from the measurement-core issue):
  null      null engine, 1 thread: iolens ops/s vs fio --ioengine=null
  cached    4 KiB random pread of a page-cached file, 1 thread, sync, vs fio psync --invalidate=0
            and a bare C loop of pread
  direct    4 KiB O_DIRECT random read, io_uring QD32, vs fio io_uring with fixed buffers and
            registered files

Each case runs PAIRS alternating pairs (iolens, fio); the ratio reported is the median of the
per-pair ratios. Usage: bench/compare_fio.py [--pairs N] [--time S] [--dir DIR] [--cases a,b]
Needs fio (apt-get install fio) and gcc for the bare loop.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLENS = os.path.join(ROOT, "target", "release", "iolens")

BARE_LOOP_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY); if (fd < 0) { perror("open"); return 1; }
    double secs = atof(argv[2]);
    off_t blocks = lseek(fd, 0, SEEK_END) / 4096;
    static char buf[4096] __attribute__((aligned(4096)));
    uint64_t x = 88172645463325252ull, ops = 0;
    double start = now(), end = start + secs;
    for (;;) {
        for (int i = 0; i < 4096; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if (pread(fd, buf, 4096, (off_t)(x % blocks) * 4096) != 4096) { perror("pread"); return 1; }
        }
        ops += 4096;
        if (now() >= end) break;
    }
    printf("%f\n", ops / (now() - start));
    return 0;
}
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def iolens_iops(args, workdir):
    out = os.path.join(workdir, "iolens.json")
    sh([IOLENS, "run", "--quiet", "--json", out] + args)
    with open(out) as f:
        return json.load(f)["aggregate"]["iops"]


def fio_iops(args):
    res = sh(["fio", "--output-format=json", "--name=bench", "--numjobs=1", "--thread"] + args)
    data = json.loads(res.stdout[res.stdout.index("{"):])
    job = data["jobs"][0]
    return job["read"]["iops"]


def cases(workdir, secs):
    data_file = os.path.join(workdir, "data.bin")
    t = f"{secs}s"
    return {
        "null": (
            ["--target", workdir, "--engine", "null", "--rw", "randread", "--bs", "4k", "--time", t],
            ["--ioengine=null", "--rw=randread", "--bs=4k", "--size=1g", "--time_based", f"--runtime={secs}"],
            None,
        ),
        "cached": (
            ["--target", data_file, "--engine", "sync", "--rw", "randread", "--bs", "4k", "--time", t, "--keep-cache"],
            ["--ioengine=psync", "--invalidate=0", f"--filename={data_file}", "--rw=randread", "--bs=4k",
             "--time_based", f"--runtime={secs}", "--norandommap", "--randrepeat=0"],
            data_file,
        ),
        "direct": (
            ["--target", data_file, "--engine", "io_uring", "--qd", "32", "--direct", "--rw", "randread",
             "--bs", "4k", "--time", t],
            ["--ioengine=io_uring", "--iodepth=32", "--direct=1", "--fixedbufs", "--registerfiles",
             f"--filename={data_file}", "--rw=randread", "--bs=4k", "--time_based", f"--runtime={secs}",
             "--norandommap", "--randrepeat=0"],
            data_file,
        ),
    }


def bare_loop(workdir, data_file, secs):
    if not shutil.which("gcc"):
        return None
    src = os.path.join(workdir, "bare.c")
    exe = os.path.join(workdir, "bare")
    with open(src, "w") as f:
        f.write(BARE_LOOP_C)
    sh(["gcc", "-O2", "-o", exe, src])
    return float(sh([exe, data_file, str(secs)]).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--time", type=int, default=3)
    ap.add_argument("--dir", default=None, help="directory on the storage to test (default: under target/)")
    ap.add_argument("--cases", default="null,cached,direct")
    ap.add_argument("--size-mib", type=int, default=1024)
    a = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("fio not found: apt-get install fio")
    sh(["cargo", "build", "--release", "-p", "iolens"], cwd=ROOT)
    base = a.dir or os.path.join(ROOT, "target")
    workdir = tempfile.mkdtemp(prefix="iolens-bench-", dir=base)
    try:
        data_file = os.path.join(workdir, "data.bin")
        with open(data_file, "wb") as f:
            for _ in range(a.size_mib):
                f.write(os.urandom(1 << 20))
        print(f"fio: {sh(['fio', '--version']).stdout.strip()}  data file: {a.size_mib} MiB in {workdir}")
        print(f"{'case':8} {'iolens ops/s':>14} {'fio ops/s':>14} {'ratio (median of pairs)':>24}  per-pair ratios")
        selected = cases(workdir, a.time)
        for name in a.cases.split(","):
            io_args, fio_args, warm = selected[name]
            if warm:  # page-cache state: warm for "cached", irrelevant for O_DIRECT
                subprocess.run(["cat", warm], stdout=subprocess.DEVNULL, check=True)
            pairs = []
            for _ in range(a.pairs):
                i = iolens_iops(io_args, workdir)
                fo = fio_iops(fio_args)
                pairs.append((i, fo))
            ratios = [i / fo for i, fo in pairs]
            print(f"{name:8} {statistics.median(p[0] for p in pairs):14.0f} {statistics.median(p[1] for p in pairs):14.0f} "
                  f"{statistics.median(ratios):24.2f}  {' '.join(f'{r:.2f}' for r in ratios)}")
            if name == "cached":
                bare = bare_loop(workdir, data_file, a.time)
                if bare:
                    print(f"{'bare C pread loop':>23} {bare:14.0f} ops/s; iolens/bare = {statistics.median(p[0] for p in pairs) / bare:.2f}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
