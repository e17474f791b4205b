"""All 2-way marginals of up to 10^8 records in Parquet through DuckDB, beside pandas' groupby.

MWEM reads the private data only through marginal counts, so a query
engine can count them where the file lies. This measures :class:`DuckDBSource` on generated
Parquet files over the Adult domain (``data/adult-domain.json``: 14 attributes, 91 pairs):

- ``open``: the validation pass (record count and every cell checked, one aggregate query);
- ``marginals``: all 91 two-way marginals in one ``GROUP BY GROUPING SETS`` pass;
- records per second of each, and the peak resident memory of the whole process
  (``ru_maxrss``: interpreter, imports, DuckDB's buffers), each size in a fresh subprocess,
  DuckDB at ``memory_limit=1GB`` and 2 threads, spilling to a temporary directory.

pandas' baseline reads the same file into a DataFrame and runs ``groupby([a, b]).size()`` for
each pair, in a fresh subprocess too; it runs up to ``--pandas-max`` records (the largest it
can hold here; pass a smaller size on a machine with less memory). The counts of both are
checked equal at the smallest size.

Records: a latent-class model (8 classes; per class and attribute, codes drawn from a
Dirichlet(0.5) distribution over the attribute's values), ``numpy.random.default_rng(seed)``,
generated and written in chunks of 10^6 rows with pyarrow (uint8 columns, one row group per
chunk, Snappy), so no size ever needs all its records in memory.

Run: ``python benchmarks/duckdb_marginals.py [--sizes 1e6,1e7,3e7,1e8] [--pandas-max 3e7]
[--data-dir /tmp/fastmwem-bench]``. Needs ``pip install ".[duckdb,parquet,bench]"``. Writes
benchmarks/results/duckdb_marginals.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
DOMAIN_JSON = os.path.join(HERE, "data", "adult-domain.json")
CHUNK = 1_000_000
CLASSES = 8

_CHILD = r"""
import itertools, json, resource, sys, time
import numpy as np
engine, path, domain_json = sys.argv[1], sys.argv[2], sys.argv[3]
from fastmwem.data import Domain
domain = Domain.from_json(domain_json)
pairs = list(itertools.combinations(domain.attributes, 2))
out = {}
if engine == "duckdb":
    from fastmwem.data.sources.duckdb import DuckDBSource
    t = time.perf_counter()
    source = DuckDBSource(path, domain, memory_limit="1GB", threads=2)
    out["open_seconds"] = time.perf_counter() - t
    t = time.perf_counter()
    margs = source.marginals(pairs)
    out["marginals_seconds"] = time.perf_counter() - t
    out["records"] = len(source)
    source.close()
else:
    import pandas as pd
    t = time.perf_counter()
    df = pd.read_parquet(path)
    out["open_seconds"] = time.perf_counter() - t
    t = time.perf_counter()
    margs = []
    for a, b in pairs:
        counts = df.groupby([a, b]).size()
        m = np.zeros((domain.size_of(a), domain.size_of(b)))
        m[counts.index.get_level_values(0), counts.index.get_level_values(1)] = counts.to_numpy()
        margs.append(m)
    out["marginals_seconds"] = time.perf_counter() - t
    out["records"] = len(df)
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if len(sys.argv) > 4:
    np.savez_compressed(sys.argv[4], *margs)
print(json.dumps(out))
"""


def generate(path: str, n: int, sizes: list[int], seed: int) -> None:
    """Write ``n`` latent-class records to ``path`` in chunks (atomically: temp file, rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastmwem.data import Domain

    names = list(Domain.from_json(DOMAIN_JSON).attributes)
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.ones(CLASSES))
    cdfs = [np.cumsum(rng.dirichlet(np.full(s, 0.5), size=CLASSES), axis=1) for s in sizes]
    schema = pa.schema([(a, pa.uint8()) for a in names])
    tmp = path + ".part"
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        done = 0
        while done < n:
            m = min(CHUNK, n - done)
            z = rng.choice(CLASSES, size=m, p=weights)
            cols = []
            for cdf in cdfs:
                u = rng.random(m)
                codes = np.empty(m, dtype=np.uint8)
                for k in range(CLASSES):
                    sel = z == k
                    # the last cdf entry may round below 1: never index past the last value
                    codes[sel] = np.minimum(np.searchsorted(cdf[k], u[sel], side="right"),
                                            cdf.shape[1] - 1)
                cols.append(pa.array(codes))
            writer.write_table(pa.Table.from_arrays(cols, schema=schema), row_group_size=CHUNK)
            done += m
    os.replace(tmp, path)


def run_child(engine: str, path: str, save: str | None = None) -> dict[str, float]:
    argv = [sys.executable, "-c", _CHILD, engine, path, DOMAIN_JSON] + ([save] if save else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1e6,1e7,3e7,1e8")
    parser.add_argument("--pandas-max", type=float, default=3e7)
    parser.add_argument("--data-dir", default="/tmp/fastmwem-bench")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep-data", action="store_true", help="keep the generated files")
    parser.add_argument("--engines", default="duckdb,pandas")
    parser.add_argument("--append", action="store_true",
                        help="merge into the existing results (e.g. pandas at one more size)")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]

    from fastmwem.data import Domain

    domain = Domain.from_json(DOMAIN_JSON)
    os.makedirs(args.data_dir, exist_ok=True)
    rows = []
    for n in sizes:
        path = os.path.join(args.data_dir, f"adult-synthetic-{n}-seed{args.seed}.parquet")
        started = time.perf_counter()
        if not os.path.exists(path):
            generate(path, n, list(domain.shape), args.seed)
        generated = time.perf_counter() - started
        check = n == min(sizes)
        files = {e: os.path.join(args.data_dir, f"check-{e}.npz") for e in ("duckdb", "pandas")}
        row = {"records": n, "file_mb": os.path.getsize(path) / 2**20,
               "generate_seconds": generated, "load_average": os.getloadavg()[0]}
        engines = args.engines.split(",")
        if "duckdb" in engines:
            row["duckdb"] = run_child("duckdb", path, files["duckdb"] if check else None)
        if "pandas" in engines and n <= args.pandas_max:
            row["pandas"] = run_child("pandas", path, files["pandas"] if check else None)
        if check and "pandas" in row and "duckdb" in row:
            row["counts_equal"] = _same(files["duckdb"], files["pandas"])
        for engine in ("duckdb", "pandas"):
            r = row.get(engine)
            if r and "error" not in r:
                r["records_per_second_marginals"] = n / r["marginals_seconds"]
                r["records_per_second_total"] = n / (r["open_seconds"] + r["marginals_seconds"])
        rows.append(row)
        print(json.dumps(row), flush=True)
        if not args.keep_data and n != max(sizes):
            os.remove(path)
    if not args.keep_data:
        shutil.rmtree(args.data_dir, ignore_errors=True)
    _write(rows, args)


def _same(a: str, b: str) -> bool:
    x, y = np.load(a), np.load(b)
    return all(np.array_equal(x[k], y[k]) for k in x.files)


def _write(rows: list[dict], args: argparse.Namespace) -> None:
    import duckdb
    import pandas as pd

    meta = {"machine": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
            "duckdb": duckdb.__version__, "pandas": pd.__version__, "pairs": 91,
            "duckdb_settings": {"memory_limit": "1GB", "threads": 2},
            "seed": args.seed, "chunk": CHUNK}
    os.makedirs(RESULTS, exist_ok=True)
    target = os.path.join(RESULTS, "duckdb_marginals.json")
    if args.append and os.path.exists(target):
        with open(target) as fh:
            old = {r["records"]: r for r in json.load(fh)["rows"]}
        for r in rows:  # a later run's engines fill in or replace an earlier run's
            merged = old.setdefault(r["records"], r)
            for engine in ("duckdb", "pandas"):
                if engine in r and merged is not r:
                    merged[engine] = {**r[engine], "load_average": r["load_average"]}
        rows[:] = [old[n] for n in sorted(old)]
    with open(target, "w") as fh:
        json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    _plot(rows)


def _plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for engine, style in (("duckdb", "o-"), ("pandas", "s--")):
        pts = [(r["records"], r[engine]) for r in rows
               if engine in r and "error" not in r[engine]]
        if not pts:
            continue
        n = [p[0] for p in pts]
        left.plot(n, [p[1]["records_per_second_marginals"] for p in pts], style,
                  label=f"{engine}: 91 marginals")
        left.plot(n, [p[1]["records_per_second_total"] for p in pts], style, alpha=0.4,
                  label=f"{engine}: read/validate + marginals")
        right.plot(n, [p[1]["peak_mb"] for p in pts], style, label=engine)
    right.axhline(2048, color="grey", lw=0.8, ls=":", label="2 GB goal")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("records (Parquet, Adult domain)")
        ax.legend(fontsize=8)
    left.set_yscale("log")
    left.set_ylabel("records per second")
    right.set_ylabel("peak resident memory (MB)")
    fig.suptitle("All 2-way marginals of Adult-domain records: DuckDB vs pandas groupby")
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "duckdb_marginals.png"), dpi=120)


if __name__ == "__main__":
    main()
