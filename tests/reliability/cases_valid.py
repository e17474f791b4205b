"""Valid edge cases of the command line and the library: they must succeed and pass their checks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

import fastmwem
import fastmwem.cli.synth
from fastmwem.data import (
    Categorical,
    Dataset,
    Domain,
    Numeric,
    Schema,
    read_csv_columns,
    write_csv,
)
from fastmwem.mechanisms import (
    ExponentialMechanism,
    Geometric,
    Laplace,
    LazyExponentialMechanism,
)
from fastmwem.mechanisms.topk import JointTopK
from fastmwem.release import mwem, mwem_with_defaults
from fastmwem.release import pmw_offline as pmw
from fastmwem.workloads import (
    Marginals,
    MatrixWorkload,
    Parities,
)

from ._helpers import (
    SEED,
    SIZES,
    WEIRD_LABELS,
    codes_table,
    counts_csv,
    nltcs_subset,
    quiet,
    small_data,
    synth_args,
)
from ._runner import CLIRun, Ctx, Finding, bad, good


def register_valid_cli() -> None:
    area = "valid cli"

    def defaults(columns: int) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            sizes = {f"c{i}": 2 + i % 2 for i in range(columns)}
            csv, domain = codes_table(ctx, sizes, rows=500)
            ctx.cli("synth", csv, "--domain", domain, "--epsilon", "1", "--out",
                    ctx.path("out.csv"), "--report", ctx.path("r.json"), "--no-progress")
            out = pd.read_csv(ctx.path("out.csv"))
            ctx.check(list(out.columns) == list(sizes) and len(out) > 0, f"output {out.shape}")
            report = json.loads(Path(ctx.path("r.json")).read_text())
            command = report["command"]
            ctx.check(command["workload_chosen"] == "default"
                      and command["rounds_chosen"] == "default", f"report: {command}")
            return f"{len(out)} rows, {command['workload']}, {command['rounds']} rounds"
        return run

    for columns in (1, 2, 3, 6):
        good(f"synth_defaults_{columns}_columns", area, defaults(columns))

    def demo(epsilon: str, seed: int) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            result = ctx.cli("synth", "--demo", "--epsilon", epsilon, "--out", ctx.path("o.csv"),
                             "--seed", seed, "--report", ctx.path("r.json"), "--no-progress")
            report = json.loads(Path(ctx.path("r.json")).read_text())
            ctx.check("seed" not in json.dumps(report).lower().replace("seeded", ""),
                      "the report mentions a seed")
            ctx.check(report["private"] is False and "seeded" in report["not_private_because"],
                      f"a seeded report says private={report['private']}")
            ctx.check("NOT private" in result.err, "no seed warning on stderr")
            return result.err.strip().splitlines()[-1]
        return run

    good("synth_demo_epsilon_0.01_seed_29", area, demo("0.01", 29), timeout=60)
    good("synth_demo_epsilon_0.001_seed_1", area, demo("0.001", 1), timeout=60)
    good("synth_demo_epsilon_1_seed_long", area, demo("1", SEED), timeout=60, slow=True)

    def weird_schema(ctx: Ctx) -> str:
        schema = {"columns": [{"name": "label", "type": "categorical",
                               "categories": WEIRD_LABELS},
                              {"name": "n", "type": "integer", "lower": 0, "upper": 2}]}
        rng = np.random.default_rng(2)
        frame = pd.DataFrame({"label": rng.choice(WEIRD_LABELS, 400), "n": rng.integers(0, 3, 400)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_csv(frame, ctx.path("raw.csv"))
        path = ctx.write("schema.json", json.dumps(schema))
        back = Schema.from_dict(schema).encode_csv(ctx.path("raw.csv"))
        ctx.check(len(back) == 400, "the input did not re-read")
        result = ctx.cli("synth", ctx.path("raw.csv"), "--schema", path, "--epsilon", "1",
                         "--out", ctx.path("out.csv"), "--rows", "300", "--no-progress")
        again = Schema.from_dict(schema).encode_csv(ctx.path("out.csv"))
        ctx.check(len(again) == 300, f"output re-reads as {len(again)} rows, not 300")
        ctx.check("formula" in result.err.lower(), "no formula warning", "nonsense")
        return "output re-reads exactly (300 rows); formula warning shown"

    good("synth_schema_weird_labels_roundtrip", area, weird_schema)

    def drafted(ctx: Ctx) -> str:
        rng = np.random.default_rng(4)
        frame = pd.DataFrame({"x": np.where(rng.random(2000) < 0.1, np.nan,
                                            rng.normal(0, 1, 2000)),
                              "n": rng.integers(0, 9, 2000),
                              "s": rng.choice(["a", "b"], 2000)})
        frame.to_csv(ctx.path("raw.csv"), index=False)
        result = ctx.cli("synth", ctx.path("raw.csv"), "--epsilon", "1", "--delta", "1e-9",
                         "--out", ctx.path("out.csv"), "--no-progress")
        out = pd.read_csv(ctx.path("out.csv"))
        ctx.check(list(out.columns) == ["x", "n", "s"] and len(out) > 0, f"output {out.shape}")
        ctx.check("drafting a schema privately" in result.err, "no note on the draft")
        return f"{len(out)} rows from a drafted schema"

    good("synth_drafted_schema", area, drafted)

    def bom_crlf(ctx: Ctx) -> str:
        csv = ctx.write("bom.csv", "\ufeffa,b,c,d\r\n" + "".join(
            f"{i % 2},{i % 3},{i % 2},{(i // 2) % 2}\r\n" for i in range(200)))
        ctx.write("domain.json", json.dumps(SIZES))
        ctx.cli("synth", csv, "--domain", ctx.path("domain.json"), "--epsilon", "1", "--out",
                ctx.path("o.csv"), "--rows", "10", "--no-progress")
        return "ok"

    good("synth_bom_crlf_input", area, bom_crlf)

    def synth_ok(*extra: object, check: Callable[[Ctx, CLIRun], None] | None = None
                 ) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            result = ctx.cli(*synth_args(ctx, *extra))
            if check is not None:
                check(ctx, result)
            return result.err.strip().splitlines()[-1]
        return run

    def rows_five(ctx: Ctx, result: CLIRun) -> None:
        ctx.check(len(pd.read_csv(ctx.path("out.csv"))) == 5, "not 5 rows")

    def evaluated(ctx: Ctx, result: CLIRun) -> None:
        report = json.loads(Path(ctx.path("r.json")).read_text())
        ctx.check(report["private"] is False and "evaluated" in report["not_private_because"],
                  "an evaluated report claims privacy")

    good("synth_rows_5", area, synth_ok("--rows", "5", check=rows_five))
    good("synth_counting_1000", area, synth_ok("--workload", "counting:1000", "--rounds", "5"))
    good("synth_lazy_selection", area, synth_ok("--selection", "lazy", "--workload",
                                                "counting:500", "--rounds", "5"))
    good("synth_noisy_init_average", area, synth_ok("--init", "noisy-histogram", "--output",
                                                    "average"))
    good("synth_evaluate", area,
         lambda c: synth_ok("--evaluate", "--report", c.path("r.json"), check=evaluated)(c))
    good("synth_epsilon_1e6", area,
         lambda c: c.cli(*[("1000000" if a == "1" else a) for a in synth_args(c)]).err[-200:])

    def overwrite(ctx: Ctx) -> str:
        ctx.write("out.csv", "old\n")
        ctx.cli(*synth_args(ctx))
        ctx.check(Path(ctx.path("out.csv")).read_text() != "old\n", "not replaced")
        return "replaced"

    good("synth_out_overwrites_regular_file", area, overwrite)

    def sigterm(ctx: Ctx) -> str:
        argv = [sys.executable, "-m", "fastmwem.cli", "synth", "--demo", "--epsilon", "1",
                "--out", ctx.path("big.csv"), "--rows", "20000000", "--no-progress",
                "--rounds", "1"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        deadline = time.time() + 80
        try:
            while time.time() < deadline:
                tmp = [p for p in ctx.dir.iterdir() if p.name.startswith(".fastmwem-")]
                if tmp and any(p.stat().st_size > 1 << 20 for p in tmp if p.exists()):
                    break
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        left = [p.name for p in ctx.dir.iterdir()]
        ctx.check(proc.returncode == 143, f"exit {proc.returncode}: {err.decode()[-300:]}", "crash")
        ctx.check(not left, f"left behind after SIGTERM: {left}", "crash")
        return "exit 143, nothing left"

    good("synth_sigterm_cleans_up", area, sigterm, timeout=120, slow=True)

    # topk
    def topk_ok(*extra: object, body: str | None = None, k: int = 2,
                check: Callable[[Ctx, CLIRun], None] | None = None) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            result = ctx.cli("topk", counts_csv(ctx, body), "--k", k, "--epsilon", "1",
                             "--count-column", "votes", *extra)
            if check is not None:
                check(ctx, result)
            return result.out.replace("\n", " | ")[:200]
        return run

    good("topk_count_column", area, topk_ok())
    for method in ("pnf-joint", "pruned-joint", "pnf-peel", "cdp-peel", "laplace", "gamma"):
        good(f"topk_method_{method}", area, topk_ok("--method", method))
    good("topk_k_equals_items", area, topk_ok(k=5))
    good("topk_seeded_no_leak", area, topk_ok("--seed", SEED))
    good("topk_items_absent_from_data", area,
         lambda c: topk_ok("--items", c.write("items.txt", "A\nB\nC\nD\nE\nF\nG\n"))(c))

    def users(ctx: Ctx) -> str:
        rows = "".join(f"u{u},{'ABCDE'[(u * j) % 5]}\n" for u in range(50) for j in range(3))
        result = ctx.cli("topk", ctx.write("r.csv", "user,item\n" + rows), "--k", "2",
                         "--epsilon", "1", "--user-column", "user")
        return result.out.replace("\n", " | ")

    good("topk_user_column", area, users)

    def weird_topk(ctx: Ctx) -> str:
        frame = pd.DataFrame({"item": WEIRD_LABELS,
                              "votes": np.arange(len(WEIRD_LABELS)) * 1000})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_csv(frame, ctx.path("w.csv"))
        result = ctx.cli("topk", ctx.path("w.csv"), "--k", len(WEIRD_LABELS), "--epsilon", "1",
                         "--count-column", "votes", "--out", ctx.path("top.csv"))
        back = read_csv_columns(ctx.path("top.csv"), ["rank", "item"])
        ctx.check(sorted(back["item"]) == sorted(WEIRD_LABELS),
                  f"top-k output re-reads as {list(back['item'])}")
        ctx.check("formula" in result.err.lower(), "no formula warning")
        return "round-trips"

    good("topk_weird_labels_roundtrip", area, weird_topk)

    def topk_large(ctx: Ctx) -> str:
        rng = np.random.default_rng(3)
        frame = pd.DataFrame({"item": [f"i{j}" for j in range(166000)],
                              "votes": rng.zipf(1.3, 166000).clip(max=10**9)})
        frame.to_csv(ctx.path("many.csv"), index=False)
        started = time.perf_counter()
        ctx.cli("topk", ctx.path("many.csv"), "--k", "1000", "--epsilon", "1",
                "--count-column", "votes", "--out", ctx.path("top.csv"))
        return f"k=1000 of 166,000 in {time.perf_counter() - started:.1f} s"

    good("topk_joint_k_1000_of_166000", area, topk_large, timeout=60)


def register_valid_api() -> None:
    area = "valid api"

    def small_epsilon(epsilon: float, seeds: int = 30) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            data = nltcs_subset(8)
            work = Marginals.all_kway(data.domain, 3)
            for seed in range(seeds):
                result = mwem(data, work, epsilon=epsilon, rounds=25,
                              rng=np.random.default_rng(seed), accountant=ctx.acc(epsilon))
                ctx.check(np.all(np.isfinite(result.histogram)) and result.total >= 1,
                          f"seed {seed}: non-finite result", "crash")
            return f"{seeds} seeds"
        return run

    for epsilon in (0.01, 0.001, 1e-6):
        good(f"mwem_epsilon_{epsilon:g}_many_seeds", area, small_epsilon(epsilon), timeout=90,
             slow=True)

    data, dom = small_data()

    def run_mwem(ctx: Ctx, workload: object, **kw: object) -> object:
        kw.setdefault("epsilon", 1.0)
        kw.setdefault("rounds", 3)
        return mwem(data, workload, rng=np.random.default_rng(0),
                    accountant=ctx.acc(float(kw["epsilon"])), **kw)

    def finite(result: object) -> str:
        hist = result.histogram  # type: ignore[attr-defined]
        if not np.all(np.isfinite(hist)):
            raise Finding("nonsense", "non-finite histogram")
        return f"total {result.total:.1f}"  # type: ignore[attr-defined]

    good("mwem_epsilon_1e6", area,
         lambda c: finite(run_mwem(c, Marginals.all_kway(dom, 2), epsilon=1e6)))
    good("mwem_zero_groups_skipped", area,
         lambda c: finite(run_mwem(c, MatrixWorkload(dom, np.vstack([
             np.zeros((2, dom.size)), np.eye(dom.size)[:4]]), groups=[0, 2, 4, 6]), rounds=2)))
    good("mwem_entries_1e200", area,
         lambda c: finite(run_mwem(c, MatrixWorkload(dom, np.full((3, dom.size), 1e200)),
                                   rounds=2)))
    good("mwem_rounds_equal_candidates", area,
         lambda c: finite(run_mwem(c, Marginals.all_kway(dom, 2), rounds=6)))
    good("mwem_parities_binary", area,
         lambda c: finite(mwem(*(lambda dd: (dd[0], Parities.all_kway(dd[1], 2)))(
             small_data({"a": 2, "b": 2, "c": 2})), epsilon=1.0, rounds=3,
             rng=np.random.default_rng(0), accountant=c.acc())))

    def auto_one_column(ctx: Ctx) -> str:
        one, dd = small_data({"a": 5}, rows=200)
        result = mwem_with_defaults(one, Marginals.all_kway(dd, 1), epsilon=1.0,
                                    rng=np.random.default_rng(0), accountant=ctx.acc())
        return f"{result.choices.rounds} rounds"

    good("with_defaults_one_column", area, auto_one_column)

    def seeded(ctx: Ctx) -> str:
        acc = ctx.acc()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=3, rng=SEED,
                          accountant=acc)
        ctx.check(any(issubclass(w.category, fastmwem.PrivacyLeakWarning) for w in caught),
                  "no PrivacyLeakWarning for an integer seed")
        report = json.dumps(result.report())
        ctx.check(str(SEED) not in report, "the seed is in the report")
        ctx.check(result.report()["private"] is False, "a seeded report says private")
        ctx.check(repr(acc.spent()) == "PureDP(epsilon=1)", f"ledger shows {acc.spent()!r}")
        return "warned, report not private"

    good("mwem_seeded_warns", area, seeded)

    def ledger_display(ctx: Ctx) -> str:
        acc = ctx.acc(1.0)
        quiet(lambda: mwem_with_defaults(data, Marginals.all_kway(dom, 2), epsilon=1.0,
                                rng=np.random.default_rng(0), accountant=acc))
        shown = repr(acc.spent())
        ctx.check("999999" not in shown and "000000" not in shown, f"ledger shows {shown}")
        return shown

    good("accountant_display_after_with_defaults", area, ledger_display)
    good("pmw_small", area,
         lambda c: finite(quiet(lambda: pmw(data, Marginals.all_kway(dom, 2), epsilon=1.0,
                                             delta=1e-6, rounds=5, rng=np.random.default_rng(0),
                                             accountant=c.acc(1.0, delta=1e-6,
                                                              composition="zcdp")))))
    good("geometric_2_62", area,
         lambda c: str(Geometric(epsilon=1.0).release(2**62, rng=np.random.default_rng(0))))
    # The exact sampler draws scales up to 2**56: a smaller epsilon is refused before the charge.
    bad("laplace_epsilon_1e-300", "api mechanisms",
        lambda c: Laplace(epsilon=1e-300).release(0.0, rng=np.random.default_rng(0),
                                                  accountant=c.acc()), "2**56")
    good("em_huge_scores", area,
         lambda c: ExponentialMechanism(epsilon=1e6).select([1e300, -1e300, 0.0],
                                                            rng=np.random.default_rng(0)))
    good("joint_counts_2_62", area,
         lambda c: JointTopK(k=2, epsilon=1.0).select(
             np.array([2**62, 2**61, 5], dtype=np.int64), rng=np.random.default_rng(0)).tolist())
    good("numeric_1e307_bounds", area,
         lambda c: str(Numeric("x", -1e307, 1e307, bins=4).edges))

    def schema_roundtrip(ctx: Ctx) -> str:
        schema = Schema([Categorical("label", WEIRD_LABELS), Numeric("x", 0, 1, bins=3)])
        codes = np.column_stack([np.arange(33) % len(WEIRD_LABELS), np.arange(33) % 3])
        frame = schema.decode(codes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_csv(frame, ctx.path("rt.csv"))
        back = schema.encode_csv(ctx.path("rt.csv")).records
        ctx.check(np.array_equal(back, codes), "decode -> write_csv -> encode_csv changed codes")
        return "exact"

    good("schema_roundtrip_weird_labels", area, schema_roundtrip)

    def from_csv_bom(ctx: Ctx) -> str:
        path = ctx.write("b.csv", "\ufeffb,a\r\n2,1\r\n0,0\r\n")
        ds = Dataset.from_csv(path, Domain(["a", "b"], [2, 3]))
        ctx.check(ds.records.tolist() == [[1, 2], [0, 0]], f"read {ds.records.tolist()}")
        return "ok"

    good("dataset_from_csv_bom_crlf", area, from_csv_bom)

    def unicode_domain(ctx: Ctx) -> str:
        d = Domain(["âge", "名前"], [3, 2])
        d.to_json(ctx.path("d.json"))
        ctx.check(Domain.from_json(ctx.path("d.json")) == d, "unicode domain did not round-trip")
        return "ok"

    good("domain_unicode_roundtrip", area, unicode_domain)

    def mean_l1(ctx: Ctx) -> str:
        from fastmwem.mechanisms.continuous import MeanL1Loss

        loss = MeanL1Loss(np.random.default_rng(0).random((10, 1)))
        draw = quiet(lambda: loss.mechanism(1e6).sample(rng=np.random.default_rng(0)))
        return f"value {draw.value}"

    good("mean_l1_epsilon_1e6_sample", area, mean_l1, timeout=60)

    def lazy_exclude(ctx: Ctx) -> str:
        from fastmwem.indices import FlatIndex

        index = FlatIndex(4)
        index.add(np.eye(4))
        mech = LazyExponentialMechanism(index, epsilon=1.0)
        choice = mech.select(np.array([5.0, 1.0, 0.0, 0.0]), rng=np.random.default_rng(0),
                             exclude=[0], accountant=ctx.acc())
        ctx.check(choice != 0, "an excluded candidate was chosen")
        return str(choice)

    good("lazy_exclude", area, lazy_exclude)

    def infer(ctx: Ctx) -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Schema.infer(pd.DataFrame({"x": [1, 2, 3], "s": ["a", "b", "a"]}),
                         allow_private_inference=True)
        ctx.check(any(issubclass(w.category, fastmwem.PrivacyLeakWarning) for w in caught),
                  "no warning")
        return "warned"

    good("schema_infer_optin_warns", area, infer)

    def topk_api_seeded(ctx: Ctx) -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            JointTopK(k=2, epsilon=1.0).select([5, 3, 1], rng=SEED)
        ctx.check(any(issubclass(w.category, fastmwem.PrivacyLeakWarning) for w in caught),
                  "no PrivacyLeakWarning")
        return "warned"

    good("topk_api_seeded_warns", area, topk_api_seeded)


def register() -> None:
    """Add this module's cases to the battery."""
    register_valid_cli()
    register_valid_api()
