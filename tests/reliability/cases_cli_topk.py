"""Bad inputs of ``fastmwem topk``: options, count tables, item lists, outputs."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pandas as pd

from ._helpers import (
    counts_csv,
    device,
    fifo,
    topk,
)
from ._runner import CLIRun, Ctx, bad


def register_cli_topk() -> None:
    area = "cli topk"

    def args(*extra: object) -> Callable[[Ctx], CLIRun]:
        return lambda ctx: topk(ctx, *extra)

    def body(text: str, *extra: object) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            ctx.markers.append("QzSecret")
            return topk(ctx, *extra, body=text)
        return run

    def replace(flag: str, value: str) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            argv = ["topk", counts_csv(ctx), "--k", "2", "--epsilon", "1", "--count-column",
                    "votes"]
            argv[argv.index(flag) + 1] = value
            return ctx.cli(*argv)
        return run

    for label, value in [("zero", "0"), ("negative", "-3"), ("text", "two"), ("float", "1.5")]:
        bad(f"topk_k_{label}", area, replace("--k", value), ("k", "--k"))
    bad("topk_k_above_items", area, replace("--k", "6"), ("exceeds", "number of items"))
    for label, value in [("zero", "0"), ("nan", "nan"), ("inf", "inf"), ("subnormal", "1e-310"),
                         ("negative", "-1")]:
        bad(f"topk_epsilon_{label}", area, replace("--epsilon", value), "epsilon")
    bad("topk_method_bogus", area, args("--method", "best"), "--method")
    bad("topk_delta_with_joint", area, args("--delta", "1e-6"), "--delta")
    for label, value in [("zero", "0"), ("one", "1"), ("nan", "nan")]:
        bad(f"topk_cdp_delta_{label}", area, args("--method", "cdp-peel", "--delta", value),
            "delta")
    bad("topk_neighbors_bogus", area, args("--neighbors", "swap"), "--neighbors")
    bad("topk_seed_negative", area, args("--seed", "-4"), "--seed")
    bad("topk_count_column_missing", area,
        lambda c: c.cli("topk", counts_csv(c), "--k", "2", "--epsilon", "1", "--count-column",
                        "nope"), ("nope", "--count-column"))
    bad("topk_item_column_missing", area, args("--item-column", "film"), ("film",))
    bad("topk_item_equals_count", area, args("--item-column", "votes"), "different columns")
    bad("topk_both_sources", area, args("--user-column", "user"), ("not allowed", "--user-column"))
    bad("topk_no_source", area,
        lambda c: c.cli("topk", counts_csv(c), "--k", "2", "--epsilon", "1"),
        ("--count-column", "--user-column"))
    bad("topk_header_only", area, body("item,votes\n"), ("no data rows", "header"))
    bad("topk_empty_file", area, body(""), ("empty", "header"))
    bad("topk_duplicate_item_column", area, body("item,votes,item\nA,5,B\nC,3,D\nE,1,F\n"),
        ("repeated", "item"))
    bad("topk_whitespace_item", area, body("item,votes\nA,5\n A,3\nB,1\n"), "whitespace")
    bad("topk_trailing_space_item", area, body("item,votes\nA,5\nA ,3\nB,1\n"), "whitespace")
    bad("topk_empty_item", area, body("item,votes\nA,5\n,3\nB,1\n"), "empty")
    bad("topk_negative_count", area, body("item,votes\nA,5\nB,-3\nC,1\n"), "non-negative")
    bad("topk_fraction_count", area, body("item,votes\nA,5\nB,3.5\nC,1\n"), "integers")
    bad("topk_text_count", area, body("item,votes\nA,5\nB,QzSecret\nC,1\n"), "integers")
    bad("topk_huge_count", area, body("item,votes\nA,5\nB,100000000000000000000\nC,1\n"),
        "2**53")
    bad("topk_inf_count", area, body("item,votes\nA,5\nB,inf\nC,1\n"), "integers")
    bad("topk_nan_count", area, body("item,votes\nA,5\nB,nan\nC,1\n"), "integers")
    bad("topk_empty_count", area, body("item,votes\nA,5\nB,\nC,1\n"), "empty")
    bad("topk_bool_count", area, body("item,votes\nA,5\nB,True\nC,1\n"), "integers")
    bad("topk_duplicate_item_rows", area, body("item,votes\nA,5\nA,3\nC,1\n"), "more than one")
    bad("topk_extra_field", area, body("item,votes\nA,5\nB,3,1\nC,1\n"), "fields")
    bad("topk_unterminated_quote", area, body('item,votes\nA,5\n"B,3\nC,1\n'),
        ("malformed", "integers", "quote", "EOF"))
    bad("topk_not_utf8", area,
        lambda c: c.cli("topk", c.write("l.csv", "item,votes\n\xe9,5\nB,3\n".encode("latin-1")),
                        "--k", "1", "--epsilon", "1", "--count-column", "votes"), "UTF-8")
    bad("topk_input_directory", area,
        lambda c: c.cli("topk", str(c.dir), "--k", "1", "--epsilon", "1", "--count-column",
                        "votes"), "directory")
    bad("topk_input_missing", area,
        lambda c: c.cli("topk", c.path("none.csv"), "--k", "1", "--epsilon", "1",
                        "--count-column", "votes"), "does not exist")
    bad("topk_input_fifo", area,
        lambda c: c.cli("topk", fifo(c, "f.csv"), "--k", "1", "--epsilon", "1",
                        "--count-column", "votes"), "regular", timeout=15)
    bad("topk_user_empty_user", area,
        lambda c: c.cli("topk", c.write("r.csv", "user,item\nu1,A\n,B\nu2,A\n"), "--k", "1",
                        "--epsilon", "1", "--user-column", "user"), "empty")

    def items(text: str | bytes, *extra: object) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            path = ctx.write("items.txt", text)
            return topk(ctx, "--items", path, *extra)
        return run

    bad("topk_items_duplicate", area, items("A\nB\nC\nD\nE\nA\n"), "twice")
    bad("topk_items_whitespace", area, items("A\nB \nC\nD\nE\n"), "whitespace")
    bad("topk_items_empty", area, items(""), "no items")
    bad("topk_items_not_utf8", area, items("A\nB\n\xe9\n".encode("latin-1")), "UTF-8")
    bad("topk_items_missing_item", area, items("A\nB\nC\n"), ("not in", "--items"))
    bad("topk_items_directory", area, lambda c: topk(c, "--items", str(c.dir)), "directory")
    bad("topk_items_missing_file", area, lambda c: topk(c, "--items", c.path("no.txt")),
        "does not exist")
    bad("topk_out_is_input", area, lambda c: topk(c, "--out", c.path("votes.csv")), "input")
    bad("topk_out_is_items", area,
        lambda c: topk(c, "--items", c.write("items.txt", "A\nB\nC\nD\nE\n"), "--out",
                       c.path("items.txt")), "input")
    bad("topk_out_fifo", area, lambda c: topk(c, "--out", fifo(c, "o.fifo")), ("FIFO", "regular"))
    bad("topk_out_device", area, lambda c: topk(c, "--out", device(c, "nul")),
        ("device", "regular"))
    bad("topk_out_symlink", area,
        lambda c: topk(c, "--out", (os.symlink(c.write("t.csv", ""), c.path("ln")), c.path("ln"))[1]),
        "symbolic link")
    bad("topk_out_empty", area, lambda c: topk(c, "--out", ""), "empty")
    bad("topk_out_proc", area, lambda c: topk(c, "--out", "/proc/top.csv"), "/proc")
    bad("topk_out_directory", area, lambda c: topk(c, "--out", str(c.dir)), "directory")

    def many_items(ctx: Ctx, d: int, k: int, method: str = "joint") -> CLIRun:
        rng = np.random.default_rng(3)
        counts = rng.zipf(1.3, d).clip(max=10**9)
        frame = pd.DataFrame({"item": [f"i{j}" for j in range(d)], "votes": counts})
        frame.to_csv(ctx.path("many.csv"), index=False)
        return ctx.cli("topk", ctx.path("many.csv"), "--k", k, "--epsilon", "1",
                       "--count-column", "votes", "--method", method, "--out",
                       ctx.path("top.csv"))

    bad("topk_k_50000_joint", area, lambda c: many_items(c, 166000, 50000),
        ("levels", "limit", "smaller k"), timeout=60)
    bad("topk_k_50000_pnf_joint", area, lambda c: many_items(c, 166000, 50000, "pnf-joint"),
        ("levels", "limit", "smaller k"), timeout=60)


def register() -> None:
    """Add this module's cases to the battery."""
    register_cli_topk()
