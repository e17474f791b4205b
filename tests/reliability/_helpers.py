"""Data and helpers shared by the battery's cases."""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from fastmwem.data import Dataset, Domain

from ._runner import CLIRun, Ctx

# A seed with enough digits that finding it in an output cannot be chance.
SEED = 48213977

#: Labels that CSV writers and spreadsheets get wrong (line breaks, quotes, formulas).
WEIRD_LABELS = ["car\rriage", "line\nbreak", 'quo"te', "com,ma", "plain", "=SUM(A1)", "@home",
                "-x", "+1+1", "tab\tbed", "crlf\r\nboth"]

SIZES = {"a": 2, "b": 3, "c": 2, "d": 2}


def codes_table(ctx: Ctx, sizes: dict[str, int] | None = None, rows: int = 300,
                name: str = "in.csv", seed: int = 0) -> tuple[str, str]:
    """A CSV of integer codes and its domain JSON; returns (csv, domain)."""
    sizes = SIZES if sizes is None else sizes
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({a: rng.integers(0, n, rows) for a, n in sizes.items()})
    csv = ctx.path(name)
    frame.to_csv(csv, index=False)
    domain = ctx.write("domain.json", json.dumps(sizes))
    return csv, domain


def synth_args(ctx: Ctx, *extra: object, out: str = "out.csv") -> list[object]:
    csv, domain = codes_table(ctx)
    return ["synth", csv, "--domain", domain, "--epsilon", "1", "--out", ctx.path(out),
            "--no-progress", *extra]


RAW_SCHEMA = {"columns": [
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "bins": 4},
    {"name": "kids", "type": "integer", "lower": 0, "upper": 3},
]}


def raw_table(ctx: Ctx, schema: dict | None = None, body: str | None = None) -> tuple[str, str]:
    """A raw CSV and its schema JSON; returns (csv, schema)."""
    schema_path = ctx.write("schema.json", json.dumps(RAW_SCHEMA if schema is None else schema))
    if body is None:
        rng = np.random.default_rng(1)
        lines = ["sex,age,kids"] + [
            f"{'FM'[i % 2]},{rng.uniform(0, 100):.1f},{rng.integers(0, 4)}" for i in range(200)]
        body = "\n".join(lines) + "\n"
    return ctx.write("raw.csv", body), schema_path


def schema_synth(ctx: Ctx, schema: dict | None = None, body: str | None = None,
                 *extra: object) -> CLIRun:
    csv, schema_path = raw_table(ctx, schema, body)
    return ctx.cli("synth", csv, "--schema", schema_path, "--epsilon", "1", "--out",
                   ctx.path("out.csv"), "--no-progress", *extra)


def counts_csv(ctx: Ctx, body: str | None = None, name: str = "votes.csv") -> str:
    if body is None:
        body = "item,votes\nA,500\nB,300\nC,200\nD,100\nE,5\n"
    return ctx.write(name, body)


def topk(ctx: Ctx, *extra: object, body: str | None = None) -> CLIRun:
    return ctx.cli("topk", counts_csv(ctx, body), "--k", "2", "--epsilon", "1",
                   "--count-column", "votes", *extra)


def fifo(ctx: Ctx, name: str) -> str:
    p = ctx.path(name)
    os.mkfifo(p)
    return p


def device(ctx: Ctx, name: str) -> str:
    """A character device node like /dev/null (major 1, minor 3), made inside the case dir."""
    p = ctx.path(name)
    os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return p


def small_data(sizes: dict[str, int] | None = None, rows: int = 300,
               seed: int = 0) -> tuple[Dataset, Domain]:
    sizes = SIZES if sizes is None else sizes
    domain = Domain(list(sizes), list(sizes.values()))
    rng = np.random.default_rng(seed)
    records = np.column_stack([rng.integers(0, n, rows) for n in sizes.values()])
    return Dataset(records, domain), domain


def nltcs_subset(columns: int = 8) -> Dataset:
    from fastmwem.datasets import load_nltcs

    data = load_nltcs()
    return data.project(list(data.domain.attributes[:columns]))


def quiet(fn: Callable[[], object]) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()

