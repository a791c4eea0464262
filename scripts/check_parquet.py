#!/usr/bin/env python3
"""Checks that the Parquet files iolens writes open in the Python data tools.

    python3 scripts/check_parquet.py FILE.parquet [FILE.parquet ...]
    python3 scripts/check_parquet.py --run    # makes the files with target/debug/iolens first

Each file is read with pyarrow (schema, row count, the `iolens.envelope` key-value metadata,
which must be JSON), pandas (`read_parquet`) and DuckDB (`read_parquet`), each only when the
package is installed; a missing package is reported and skipped, and with none installed the
script says so and exits 0. Any reader failing, or the readers disagreeing on the row count,
exits 1.

`--run` makes a small null-engine run (two agents, a series every 100 ms, its trace) with
`--parquet`, which writes run.parquet, run-series.parquet and run-ops.parquet, a short
buffered sweep, a short b_eff_io and a one-set validate with `--parquet`, and analyze's
per-operation Parquet of the run's trace, in a temporary directory, then checks those files.
"""

import json
import os
import subprocess
import sys
import tempfile

ENVELOPE_KEY = b"iolens.envelope"


def optional(name):
    try:
        return __import__(name)
    except ImportError:
        print(f"skip: {name} is not installed")
        return None


def check(path, pq, pd, duckdb):
    """Reads `path` with every reader present; returns the problems found."""
    problems = []
    counts = {}
    if pq is not None:
        try:
            import pyarrow.parquet as pqm

            table = pqm.read_table(path)
            counts["pyarrow"] = table.num_rows
            meta = pqm.read_metadata(path)
            kv = meta.metadata or {}
            if ENVELOPE_KEY not in kv:
                problems.append(f"{path}: no {ENVELOPE_KEY.decode()} in the key-value metadata")
            else:
                envelope = json.loads(kv[ENVELOPE_KEY])
                if not isinstance(envelope, dict):
                    problems.append(f"{path}: the envelope is not a JSON object")
            codecs = {meta.row_group(g).column(c).compression for g in range(meta.num_row_groups) for c in range(meta.num_columns)}
            if codecs and codecs != {"ZSTD"}:
                problems.append(f"{path}: compression {sorted(codecs)}, expected ZSTD")
            print(f"pyarrow: {path}: {table.num_rows} rows, columns {table.column_names[:8]}{'…' if table.num_columns > 8 else ''}")
        except Exception as e:  # a reader failing is the finding
            problems.append(f"{path}: pyarrow: {e}")
    if pd is not None:
        try:
            frame = pd.read_parquet(path)
            counts["pandas"] = len(frame)
            print(f"pandas: {path}: {len(frame)} rows, dtypes {dict(list(frame.dtypes.astype(str).items())[:4])}")
        except Exception as e:
            problems.append(f"{path}: pandas: {e}")
    if duckdb is not None:
        try:
            con = duckdb.connect()
            n = con.execute("SELECT count(*) FROM read_parquet(?)", [path]).fetchone()[0]
            counts["duckdb"] = n
            keys = [bytes(k) for (k,) in con.execute("SELECT key FROM parquet_kv_metadata(?)", [path]).fetchall()]
            if ENVELOPE_KEY not in keys:
                problems.append(f"{path}: duckdb sees no {ENVELOPE_KEY.decode()} metadata: {keys}")
            print(f"duckdb: {path}: {n} rows, metadata keys {[k.decode() for k in keys]}")
        except Exception as e:
            problems.append(f"{path}: duckdb: {e}")
    if len(set(counts.values())) > 1:
        problems.append(f"{path}: readers disagree on the row count: {counts}")
    return problems


def make_files(directory):
    """Runs target/debug/iolens to write the files to check; returns their paths."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    iolens = os.environ.get("IOLENS", os.path.join(root, "target", "debug", "iolens"))
    if not os.path.exists(iolens):
        sys.exit(f"check_parquet: {iolens} not found; build it (cargo build -p iolens) or set IOLENS")
    run = os.path.join(directory, "run.parquet")
    subprocess.run(
        [iolens, "run", "--quiet", "--target", directory, "--engine", "null", "--threads", "2",
         "--rate", "2000", "--time", "450ms", "--log-interval", "100ms",
         "--trace", os.path.join(directory, "run.trace"), "--parquet", run],
        check=True, stdout=subprocess.DEVNULL,
    )
    sweep = os.path.join(directory, "sweep.parquet")
    subprocess.run(
        [iolens, "sweep", directory, "--quiet", "--buffered", "--threads", "1", "--min-bs", "4k",
         "--max-bs", "8k", "--time", "100ms", "--size", "1m", "--parquet", sweep],
        check=True, stdout=subprocess.DEVNULL,
    )
    beff_io = os.path.join(directory, "beff-io.parquet")
    subprocess.run(
        [iolens, "beff-io", directory, "--quiet", "--time", "200ms", "--mpart", "1m", "--ranks", "1",
         "--memory", "16m", "--parquet", beff_io],
        check=True, stdout=subprocess.DEVNULL,
    )
    validate = os.path.join(directory, "validate.parquet")
    subprocess.run(
        [iolens, "validate", directory, "--quiet", "--volume", "1m", "--repeat", "2", "--sets", "2",
         "--parquet", validate],
        check=True, stdout=subprocess.DEVNULL,
    )
    ops = os.path.join(directory, "analyze-ops.parquet")
    subprocess.run(
        [iolens, "analyze", os.path.join(directory, "run.trace"), "--parquet", ops],
        check=True, stdout=subprocess.DEVNULL,
    )
    return [run, os.path.join(directory, "run-series.parquet"), os.path.join(directory, "run-ops.parquet"), sweep,
            beff_io, validate, ops]


def main(argv):
    pq = optional("pyarrow")
    pd = optional("pandas")
    duckdb = optional("duckdb")
    if pq is None and pd is None and duckdb is None:
        print("check_parquet: none of pyarrow, pandas, duckdb is installed: nothing checked")
        return 0
    with tempfile.TemporaryDirectory(prefix="iolens-parquet-") as directory:
        paths = make_files(directory) if argv == ["--run"] else argv
        if not paths:
            sys.exit(__doc__)
        problems = [p for path in paths for p in check(path, pq, pd, duckdb)]
    for p in problems:
        print(f"FAIL {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
