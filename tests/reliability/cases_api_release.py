"""Bad inputs of the workloads and of the releases (``mwem``, ``mwem_with_defaults``, ``pmw``)."""

from __future__ import annotations

import math

import numpy as np

from fastmwem.accounting import Accountant
from fastmwem.data import (
    Dataset,
    Domain,
    Integer,
    Schema,
)
from fastmwem.release import mwem, mwem_resources, mwem_with_defaults
from fastmwem.release import pmw_offline as pmw
from fastmwem.release.mwem import MWEMConfig
from fastmwem.workloads import (
    AllIntervals,
    Concatenate,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
)
from fastmwem.workloads.spec import parse_workload

from ._helpers import (
    quiet,
    small_data,
)
from ._runner import TRACKED, Ctx, bad, good


def register_api_workloads() -> None:
    area = "api workloads"
    d = Domain(["a", "b", "c"], [2, 3, 2])
    other = Domain(["a", "b", "c"], [2, 3, 3])
    for name, fn, expect in [
        ("marginals_order_zero", lambda: Marginals.all_kway(d, 0), ">= 1"),
        ("marginals_order_high", lambda: Marginals.all_kway(d, 9), "<= 3"),
        ("marginals_unknown_attr", lambda: Marginals(d, [["zz"]]), "unknown attribute"),
        ("marginals_no_sets", lambda: Marginals(d, []), "at least one"),
        ("marginals_repeated", lambda: Marginals(d, [["a"], ["a"]]), "repeat"),
        ("marginals_empty_set", lambda: Marginals(d, [[]]), "empty"),
        ("marginals_not_domain", lambda: Marginals({"a": 2}, [["a"]]), "Domain"),
        ("matrix_nan", lambda: MatrixWorkload(d, np.full((1, 12), np.nan)), "finite"),
        ("matrix_1e308", lambda: MatrixWorkload(d, np.full((1, 12), 1e308)), "within"),
        ("matrix_wrong_width", lambda: MatrixWorkload(d, np.ones((1, 5))), "columns"),
        ("matrix_no_rows", lambda: MatrixWorkload(d, np.ones((0, 12))), "at least one row"),
        ("matrix_3d", lambda: MatrixWorkload(d, np.ones((1, 1, 12))), "2-D"),
        ("matrix_strings", lambda: MatrixWorkload(d, [["a"] * 12]), "real numbers"),
        ("matrix_groups_decreasing", lambda: MatrixWorkload(d, np.ones((3, 12)), groups=[0, 2, 1, 3]),
         "increasing"),
        ("matrix_groups_wrong_end", lambda: MatrixWorkload(d, np.ones((3, 12)), groups=[0, 2]),
         "n_queries"),
        ("matrix_groups_float", lambda: MatrixWorkload(d, np.ones((3, 12)), groups=[0, 1.5, 3]),
         "integer"),
        ("ranges_unknown_attr", lambda: RangeQueries.random(d, ["zz"], 5, rng=0),
         "unknown attribute"),
        ("ranges_zero_queries", lambda: RangeQueries.random(d, ["a"], 0, rng=0), ">= 1"),
        ("ranges_no_attributes", lambda: RangeQueries.random(d, [], 5, rng=0), "at least one"),
        ("counting_zero", lambda: RandomCountingQueries(d, 0, rng=0), ">= 1"),
        ("counting_density_zero", lambda: RandomCountingQueries(d, 5, rng=0, density=0),
         "density"),
        ("counting_too_many",
         lambda: RandomCountingQueries(Domain(["x"], [2**20]), 10**5, rng=0),
         ("MAX_PACKED_BYTES", "memory", "bytes")),
        ("parities_non_binary", lambda: Parities.all_kway(d, 2), "binary"),
        ("intervals_unknown", lambda: AllIntervals(d, "zz"), "unknown attribute"),
        ("intervals_int_attr", lambda: AllIntervals(d, 0), "attribute name"),
        ("concatenate_domains",
         lambda: Concatenate([Marginals.all_kway(d, 1), Marginals.all_kway(other, 1)]),
         "domain"),
        ("concatenate_empty", lambda: Concatenate([]), "at least one"),
        ("concatenate_non_workload", lambda: Concatenate([1, 2]), "not a workload"),
        ("parse_workload_empty", lambda: parse_workload("", d), "workload"),
        ("parse_workload_none", lambda: parse_workload(None, d), "workload"),
        ("answer_wrong_histogram", lambda: Marginals.all_kway(d, 1).answer(np.ones(5)), "cells"),
        ("answer_nan_histogram",
         lambda: Marginals.all_kway(d, 1).answer(np.full(12, np.nan)), "finite"),
        ("answer_group_out_of_range",
         lambda: Marginals.all_kway(d, 1).answer_group(np.ones(12), 7), ("group", "range")),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect, timeout=45)


def register_api_release() -> None:
    area = "api release"
    data, dom = small_data()
    work = Marginals.all_kway(dom, 2)

    def run_mwem(ctx: Ctx, dataset: object = data, workload: object = work,
                 **kwargs: object) -> object:
        kwargs.setdefault("epsilon", 1.0)
        kwargs.setdefault("rounds", 3)
        kwargs.setdefault("accountant", ctx.acc(float(kwargs["epsilon"])
                                                if isinstance(kwargs["epsilon"], float)
                                                and math.isfinite(kwargs["epsilon"])
                                                and kwargs["epsilon"] > 1e-300 else 1.0))
        return quiet(lambda: mwem(dataset, workload, rng=np.random.default_rng(0), **kwargs))

    for name, kwargs, expect in [
        ("mwem_epsilon_zero", {"epsilon": 0.0}, "epsilon"),
        ("mwem_epsilon_negative", {"epsilon": -1.0}, "epsilon"),
        ("mwem_epsilon_nan", {"epsilon": float("nan")}, "epsilon"),
        ("mwem_epsilon_inf", {"epsilon": float("inf")}, "epsilon"),
        ("mwem_epsilon_subnormal", {"epsilon": 1e-310}, "epsilon"),
        ("mwem_epsilon_string", {"epsilon": "1"}, "epsilon"),
        ("mwem_epsilon_bool", {"epsilon": True}, "epsilon"),
        ("mwem_epsilon_noise_overflow", {"epsilon": 1e-305}, ("noise scale", "epsilon")),
        ("mwem_rounds_zero", {"rounds": 0}, "rounds"),
        ("mwem_rounds_float", {"rounds": 1.5}, "rounds"),
        ("mwem_rounds_bool", {"rounds": True}, "rounds"),
        ("mwem_rounds_above_candidates", {"rounds": 7}, ("rounds", "candidate")),
        ("mwem_reuse_million", {"reuse_passes": 10**6}, "reuse_passes"),
        ("mwem_init_bogus", {"init": "zeros"}, "init"),
        ("mwem_output_bogus", {"output": "best"}, "output"),
        ("mwem_measure_bogus", {"measure": "all"}, "measure"),
        ("mwem_selection_bogus", {"selection": "greedy"}, "selection"),
        ("mwem_selection_hnsw", {"selection": "lazy", "index": "hnswlib"},
         ("approximate", "guarantee", "index")),
        ("mwem_index_without_lazy", {"index": "flat"}, ("index", "lazy")),
        ("mwem_count_fraction_big", {"count_fraction": 1.5}, "count_fraction"),
        ("mwem_total_zero", {"total": 0}, "total"),
        ("mwem_total_huge", {"total": 2**60}, "total"),
        ("mwem_cell_penalty_negative", {"cell_penalty": -1.0}, "cell_penalty"),
        ("mwem_noise_test_two", {"noise_test": 2.0}, "noise_test"),
        ("mwem_unknown_option", {"reuse": 3}, "reuse"),
        ("mwem_memory_limit_zero", {"memory_limit": 0}, "memory_limit"),
        ("mwem_reuse_tolerance_nan", {"reuse_tolerance": float("nan")}, "reuse_tolerance"),
        ("mwem_top_k_zero", {"selection": "lazy", "top_k": 0}, ("k", "top_k")),
        ("mwem_init_fraction_one", {"init": "noisy-histogram", "init_fraction": 1.0},
         "init_fraction"),
        ("mwem_fractions_sum_one",
         {"init": "noisy-histogram", "init_fraction": 0.5, "count_fraction": 0.5},
         ("no budget", "sum")),
        ("mwem_exclude_measured_int", {"exclude_measured": 1}, "exclude_measured"),
    ]:
        bad(name, area, lambda ctx, kw=kwargs: run_mwem(ctx, **kw), expect)

    bad("mwem_domain_mismatch", area,
        lambda c: run_mwem(c, workload=Marginals.all_kway(Domain(["a", "b"], [2, 2]), 1)),
        "domains")
    bad("mwem_dataset_not_dataset", area, lambda c: run_mwem(c, dataset=np.zeros((3, 4))),
        "Dataset")
    bad("mwem_workload_list", area, lambda c: run_mwem(c, workload=[[1, 0]]), "workload")
    bad("mwem_accountant_wrong_type", area, lambda c: run_mwem(c, accountant="acc"), "Accountant")
    bad("mwem_accountant_too_small", area, lambda c: run_mwem(c, accountant=c.acc(0.5)),
        "exceed")
    bad("mwem_accountant_rho_small", area,
        lambda c: run_mwem(c, accountant=(lambda a: (TRACKED.add(id(a)), a)[1])(
            Accountant(rho=0.001))), "exceed")
    bad("mwem_schema_mismatch", area,
        lambda c: run_mwem(c, schema=Schema([Integer("x", 0, 3)])), "schema")
    bad("mwem_all_zero_matrix", area,
        lambda c: run_mwem(c, workload=MatrixWorkload(dom, np.zeros((4, dom.size))), rounds=1),
        ("all zero", "nothing to measure"))
    bad("mwem_all_zero_groups_rounds", area,
        lambda c: run_mwem(c, workload=MatrixWorkload(
            dom, np.vstack([np.ones((1, dom.size)), np.zeros((3, dom.size))])), rounds=2),
        ("rounds", "candidate"))
    bad("mwem_entries_1e201", area,
        lambda c: run_mwem(c, workload=MatrixWorkload(dom, np.full((2, dom.size), 1e201))),
        "within")

    def wide_mwem(ctx: Ctx, columns: int, **kwargs: object) -> object:
        wide = Domain([f"x{i}" for i in range(columns)], [2] * columns)
        dataset = Dataset(np.zeros((5, columns), dtype=np.int64), wide)
        return quiet(lambda: mwem(dataset, Marginals.all_kway(wide, 1), epsilon=1.0, rounds=5,
                                  rng=np.random.default_rng(0), accountant=ctx.acc(), **kwargs))

    # model="dense" asked for; by itself ("auto") mwem runs these factored (valid cases below)
    bad("mwem_2_26_cells_memory_limit", area,
        lambda c: wide_mwem(c, 26, memory_limit=2**31, model="dense"), ("memory", "GB"))
    bad("mwem_2_27_cells", area, lambda c: wide_mwem(c, 27, model="dense"), ("cells", "limit"))
    def wide_auto(ctx: Ctx) -> str:
        result = wide_mwem(ctx, 27)
        kind = "dense" if result.model is None else result.model.kind  # type: ignore[attr-defined]
        ctx.check(kind == "junction-tree", f"model {kind!r} on 2^27 cells")
        return kind

    good("mwem_2_27_cells_auto_factored", "valid api", wide_auto)

    def resources_2_26(ctx: Ctx) -> str:
        wide = Domain([f"x{i}" for i in range(26)], [2] * 26)
        res = mwem_resources(MWEMConfig(epsilon=1.0, rounds=25), Marginals.all_kway(wide, 3))
        text = res.describe()
        ctx.check(res.memory_bytes < 8 * 2**30, f"estimate above 8 GiB for 2^26 cells: {text}",
                  "unclear")
        ctx.check("GiB" in text and "s)" in text, f"estimate without figures: {text}", "unclear")
        return text

    good("mwem_resources_2_26_estimate", area, resources_2_26)

    # mwem_with_defaults and pmw
    bad("with_defaults_accountant_small", area,
        lambda c: quiet(lambda: mwem_with_defaults(data, work, epsilon=1.0, accountant=c.acc(0.5),
                                          rng=np.random.default_rng(0))), "exceed")
    bad("with_defaults_rounds_zero", area,
        lambda c: quiet(lambda: mwem_with_defaults(data, work, epsilon=1.0, rounds=0,
                                          accountant=c.acc(), rng=np.random.default_rng(0))),
        "rounds")
    bad("with_defaults_count_fraction_zero", area,
        lambda c: quiet(lambda: mwem_with_defaults(data, work, epsilon=1.0, count_fraction=0.0,
                                          accountant=c.acc(), rng=np.random.default_rng(0))),
        "count_fraction")

    def run_pmw(ctx: Ctx, **kwargs: object) -> object:
        kwargs.setdefault("epsilon", 1.0)
        kwargs.setdefault("delta", 1e-6)
        kwargs.setdefault("rounds", 5)
        acc = ctx.acc(1.0, delta=1e-6, composition="zcdp")
        return quiet(lambda: pmw(data, work, accountant=acc, rng=np.random.default_rng(0),
                                 **kwargs))

    for name, kwargs, expect in [
        ("pmw_delta_zero", {"delta": 0.0}, "delta"),
        ("pmw_delta_one", {"delta": 1.0}, "delta"),
        ("pmw_epsilon_zero", {"epsilon": 0.0}, "epsilon"),
        ("pmw_rounds_zero", {"rounds": 0}, "rounds"),
        ("pmw_composition_bogus", {"composition": "basic"}, "composition"),
        ("pmw_selection_bogus", {"selection": "pnf"}, "selection"),
        ("pmw_learning_rate_nan", {"learning_rate": float("nan")}, "learning_rate"),
        ("pmw_k_without_lazy", {"k": 3}, "lazy"),
        ("pmw_budget_too_big", {"epsilon": 5.0}, "exceed"),
    ]:
        bad(name, area, lambda ctx, kw=kwargs: run_pmw(ctx, **kw), expect)
    bad("pmw_domain_mismatch", area,
        lambda c: quiet(lambda: pmw(data, Marginals.all_kway(Domain(["a"], [2]), 1), epsilon=1.0,
                                    delta=1e-6, accountant=c.acc(1.0, delta=1e-6,
                                                                 composition="zcdp"))),
        "domain")


def register() -> None:
    """Add this module's cases to the battery."""
    register_api_workloads()
    register_api_release()
