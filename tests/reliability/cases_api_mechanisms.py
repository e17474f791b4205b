"""Bad inputs of the mechanisms: selection, noise, top-k, continuous, lazy selection and
indices, the accountant."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import fastmwem.accounting as accounting
from fastmwem.accounting import ZCDP, Accountant, ApproxDP, PureDP
from fastmwem.mechanisms import (
    ExponentialMechanism,
    Geometric,
    Laplace,
    LazyExponentialMechanism,
    PermuteAndFlip,
)
from fastmwem.mechanisms.topk import (
    CDPPeel,
    GammaTopK,
    JointTopK,
    LaplaceTopK,
    PNFJointTopK,
    PNFPeel,
    PrunedJointTopK,
)

from ._helpers import (
    fifo,
    quiet,
)
from ._runner import Ctx, add, bad


def register_api_mechanisms() -> None:
    area = "api mechanisms"

    def select(mech_factory: Callable[[], object], scores: object) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            mech = mech_factory()
            return mech.select(scores, rng=np.random.default_rng(0), accountant=ctx.acc(10.0))
        return run

    em = lambda: ExponentialMechanism(epsilon=1.0)  # noqa: E731
    pf = lambda: PermuteAndFlip(epsilon=1.0)  # noqa: E731
    for label, factory in (("em", em), ("pnf", pf)):
        for name, scores, expect in [
            ("empty", [], "empty"), ("nan", [1.0, np.nan], "finite"),
            ("inf", [1.0, np.inf], "finite"), ("bool", [True, False], "boolean"),
            ("2d", [[1.0, 2.0]], "1-D"), ("string", "abc", "real numbers"),
            ("objects", [1, None], "real numbers"), ("complex", [1j, 2j], "real numbers"),
        ]:
            bad(f"{label}_scores_{name}", area, select(factory, scores), expect)
    for name, fn, expect in [
        ("em_epsilon_zero", lambda: ExponentialMechanism(epsilon=0.0), "epsilon"),
        ("em_epsilon_subnormal", lambda: ExponentialMechanism(epsilon=1e-310), "epsilon"),
        ("em_sensitivity_zero", lambda: ExponentialMechanism(epsilon=1.0, sensitivity=0),
         "sensitivity"),
        ("em_sensitivity_nan", lambda: ExponentialMechanism(epsilon=1.0, sensitivity=np.nan),
         "sensitivity"),
        ("em_monotonic_text", lambda: ExponentialMechanism(epsilon=1.0, monotonic="yes"),
         "monotonic"),
        ("laplace_epsilon_subnormal", lambda: Laplace(epsilon=1e-310), "epsilon"),
        ("laplace_sensitivity_zero", lambda: Laplace(epsilon=1.0, sensitivity=0), "sensitivity"),
        ("laplace_scale_overflow", lambda: Laplace(epsilon=1e-300, sensitivity=1e10),
         "noise scale"),
        ("laplace_release_nan", lambda: Laplace(epsilon=1.0).release(np.nan, rng=0), "finite"),
        ("laplace_release_inf", lambda: Laplace(epsilon=1.0).release([1.0, np.inf], rng=0),
         "finite"),
        ("laplace_release_string", lambda: Laplace(epsilon=1.0).release("3", rng=0), "number"),
        ("laplace_release_none", lambda: Laplace(epsilon=1.0).release([1, None], rng=0),
         "real numbers"),
        ("geometric_int64_max",
         lambda: Geometric(epsilon=1.0).release(np.iinfo(np.int64).max, rng=0), "within"),
        ("geometric_int64_min",
         lambda: Geometric(epsilon=1.0).release(np.iinfo(np.int64).min, rng=0), "within"),
        ("geometric_python_huge", lambda: Geometric(epsilon=1.0).release(2**70, rng=0),
         ("within", "integer")),
        ("geometric_uint64_max",
         lambda: Geometric(epsilon=1.0).release(np.uint64(2**64 - 1), rng=0), "within"),
        ("geometric_float", lambda: Geometric(epsilon=1.0).release(1.5, rng=0), "integers"),
        ("geometric_sensitivity_float", lambda: Geometric(epsilon=1.0, sensitivity=1.5),
         "sensitivity"),
        ("geometric_epsilon_tiny", lambda: Geometric(epsilon=1e-20), "2**-40"),
        ("geometric_bool", lambda: Geometric(epsilon=1.0).release(True, rng=0),
         ("integers", "bool")),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect)

    # charged mechanisms with an accountant: nothing may be spent on bad input
    bad("laplace_release_charged_nan", area,
        lambda c: Laplace(epsilon=1.0).release(np.nan, rng=0, accountant=c.acc()), "finite")
    bad("laplace_accountant_wrong", area,
        lambda c: Laplace(epsilon=1.0).release(1.0, rng=0, accountant="acc"), "Accountant")
    bad("laplace_rng_text", area,
        lambda c: Laplace(epsilon=1.0).release(1.0, rng="seed", accountant=c.acc()), "rng")
    bad("em_rng_float", area,
        lambda c: ExponentialMechanism(epsilon=1.0).select([1.0, 2.0], rng=1.5,
                                                           accountant=c.acc()), "rng")


def register_api_topk() -> None:
    area = "api topk"

    def sel(factory: Callable[[], object], counts: object) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            acc = ctx.acc(10.0, delta=1e-3)
            return factory().select(counts, rng=np.random.default_rng(0), accountant=acc)
        return run

    joint = lambda: JointTopK(k=2, epsilon=1.0)  # noqa: E731
    for name, counts, expect in [
        ("negative", [5, -1, 3], "non-negative"), ("fraction", [5, 1.5, 3], "whole"),
        ("nan", [5, np.nan, 3], "finite"), ("bool", [True, False, True], "integers"),
        ("2d", [[5, 1, 3]], "1-D"), ("empty", [], ("empty", "k must be")),
        ("strings", ["5", "1"], "integers"), ("huge_float", [5.0, 1e30, 3.0], "2**63"),
        ("k_above_d", [5], "number of items"), ("objects", [5, None, 3], "integers"),
    ]:
        bad(f"joint_counts_{name}", area, sel(joint, counts), expect)
    for name, fn, expect in [
        ("joint_k_zero", lambda: JointTopK(k=0, epsilon=1.0), "k"),
        ("joint_k_float", lambda: JointTopK(k=1.5, epsilon=1.0), "k"),
        ("joint_epsilon_nan", lambda: JointTopK(k=1, epsilon=np.nan), "epsilon"),
        ("joint_neighbors_bogus", lambda: JointTopK(k=1, epsilon=1.0, neighbors="swap"),
         "neighbors"),
        ("pnf_peel_subnormal", lambda: PNFPeel(k=1, epsilon=1e-310), "epsilon"),
        ("cdp_peel_delta_zero", lambda: CDPPeel(k=1, epsilon=1.0, delta=0.0), "delta"),
        ("cdp_peel_delta_nan", lambda: CDPPeel(k=1, epsilon=1.0, delta=np.nan), "delta"),
        ("laplace_topk_epsilon_inf", lambda: LaplaceTopK(k=1, epsilon=np.inf), "epsilon"),
        ("gamma_topk_k_text", lambda: GammaTopK(k="2", epsilon=1.0), "k"),
        ("pruned_beta_zero", lambda: PrunedJointTopK(k=1, epsilon=1.0, beta=0.0), "beta"),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect)
    big = np.random.default_rng(5).zipf(1.3, 166000).clip(max=10**9)
    bad("joint_k_50000", area, sel(lambda: JointTopK(k=50000, epsilon=1.0), big),
        ("levels", "limit"), timeout=60)
    bad("pnf_joint_k_50000", area, sel(lambda: PNFJointTopK(k=50000, epsilon=1.0), big),
        ("levels", "limit"), timeout=60)
    bad("pruned_joint_k_50000", area, sel(lambda: PrunedJointTopK(k=50000, epsilon=1.0), big),
        ("levels", "limit"), timeout=60)
    bad("joint_tiny_epsilon_table", area,
        sel(lambda: JointTopK(k=100, epsilon=1e-6), np.arange(1000)), ("levels", "limit"),
        timeout=60)


def register_api_continuous() -> None:
    area = "api continuous"
    from fastmwem.mechanisms.continuous import (
        Box,
        ContinuousExponentialMechanism,
        MeanL1Loss,
        metropolis,
    )

    data = np.random.default_rng(0).random((10, 1))

    def loss_mech(**kw: object) -> ContinuousExponentialMechanism:
        base = dict(loss=lambda y: np.abs(y[:, 0] - 0.3), sensitivity=0.1, epsilon=1.0,
                    space=Box(0, 1))
        base.update(kw)
        return ContinuousExponentialMechanism(**base)

    for name, fn, expect in [
        ("mean_l1_outside", lambda: MeanL1Loss(np.array([[1.5]])), "[0, 1]"),
        ("mean_l1_nan", lambda: MeanL1Loss(np.array([[np.nan]])), ("finite", "nan")),
        ("mean_l1_empty", lambda: MeanL1Loss(np.zeros((0, 1))), ("empty", "at least")),
        ("mean_l1_epsilon_zero", lambda: MeanL1Loss(data).mechanism(0.0), "epsilon"),
        ("box_reversed", lambda: Box(1, 0), "exceed"),
        ("box_infinite", lambda: Box(0, np.inf), ("finite",)),
        ("box_mismatch", lambda: Box([0, 0], [1]), "shape"),
        ("cem_sensitivity_zero", lambda: loss_mech(sensitivity=0.0), "sensitivity"),
        ("cem_epsilon_nan", lambda: loss_mech(epsilon=np.nan), "epsilon"),
        ("cem_loss_not_callable", lambda: loss_mech(loss=3), ("loss", "callable")),
        ("cem_space_wrong", lambda: loss_mech(space=(0, 1)), "space"),
        ("cem_method_bogus", lambda: loss_mech().sample(rng=0, method="gibbs"), "method"),
        ("cem_sample_many_zero", lambda: loss_mech().sample_many(0, rng=0), ("n", "size")),
        ("cem_sample_many_negative", lambda: loss_mech().sample_many(-1, rng=0), ("n", "size")),
        ("cem_sample_many_float", lambda: loss_mech().sample_many(2.5, rng=0), ("n", "size")),
        ("metropolis_steps_zero", lambda: metropolis(loss_mech(), steps=0, beta=0.5, rng=0),
         "steps"),
    ]:
        bad(name, area, lambda ctx, fn=fn: quiet(fn), expect)

    def bad_loss(value: float) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            mech = loss_mech(loss=lambda y: np.full(y.shape[0], value))
            return mech.sample(rng=0, accountant=ctx.acc())
        return run

    # A loss that misbehaves is only seen after the charge: the error must still be clear.
    for name, value in (("nan", np.nan), ("negative", -1.0), ("inf", np.inf)):
        add(f"cem_loss_{name}_after_charge", area, False, bad_loss(value), "loss",
            after_charge=True)


def register_api_lazy_indices() -> None:
    area = "api lazy+indices"
    from fastmwem.indices import FlatIndex, load_index, make_index

    keys = np.random.default_rng(0).integers(0, 2, (20, 6)).astype(float)

    def flat() -> FlatIndex:
        index = FlatIndex(6)
        index.add(keys)
        return index

    def lazy_select(vector: object, **kw: object) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            mech = LazyExponentialMechanism(flat(), epsilon=1.0)
            return mech.select(vector, rng=np.random.default_rng(0), accountant=ctx.acc(), **kw)
        return run

    for name, fn, expect in [
        ("lazy_epsilon_zero", lambda: LazyExponentialMechanism(flat(), epsilon=0.0), "epsilon"),
        ("lazy_oracle_string", lambda: LazyExponentialMechanism("flat", epsilon=1.0), "oracle"),
        ("lazy_k_zero", lambda: LazyExponentialMechanism(flat(), epsilon=1.0, k=0), "k"),
        ("lazy_abs_and_complement",
         lambda: LazyExponentialMechanism(flat(), epsilon=1.0, absolute=True, complement=True),
         "choose one"),
        ("lazy_approximate_bogus",
         lambda: LazyExponentialMechanism(flat(), epsilon=1.0, approximate="speed"),
         "approximate"),
        ("lazy_hnsw_uncertified",
         lambda: LazyExponentialMechanism(make_index("hnswlib", keys), epsilon=1.0),
         ("approximate", "allow_uncertified")),
        ("index_spec_bogus", lambda: make_index("kdtree", keys), "spec"),
        ("index_no_keys", lambda: make_index("flat"), ("keys", "dimension")),
        ("index_nan_keys", lambda: make_index("flat", [[np.nan, 1.0]]), "finite"),
        ("index_bitpacked_twos", lambda: make_index("bitpacked", [[2, 0]]), ("0/1", "binary")),
        ("index_dimension_mismatch", lambda: make_index("flat", keys, dimension=3), "dimension"),
        ("index_search_k_zero", lambda: flat().search(np.ones((1, 6)), 0), "k"),
        ("index_search_wrong_dim", lambda: flat().search(np.ones((1, 5)), 2), ("dimension",
                                                                              "columns")),
        ("index_search_nan", lambda: flat().search(np.full((1, 6), np.nan), 2), "finite"),
    ]:
        bad(name, area, lambda ctx, fn=fn: quiet(fn), expect)
    bad("lazy_vector_wrong_length", area, lazy_select(np.ones(5)), ("length", "dimension",
                                                                      "shape"))
    bad("lazy_vector_nan", area, lazy_select(np.full(6, np.nan)), "finite")
    bad("lazy_exclude_all", area, lazy_select(np.ones(6), exclude=np.arange(20)),
        ("exclude", "candidate"))
    bad("lazy_exclude_out_of_range", area, lazy_select(np.ones(6), exclude=[25]), "exclude")
    bad("index_load_missing", area, lambda c: load_index(c.path("none.npz")), "does not exist")
    bad("index_load_directory", area, lambda c: load_index(str(c.dir)), ("directory",
                                                                          "not a saved"))
    bad("index_load_garbage", area, lambda c: load_index(c.write("g.npz", b"garbage")),
        "not a saved fastmwem index")

    def save_private(ctx: Ctx) -> object:
        index = make_index("flat", keys, private=True)
        return index.save(ctx.path("p.npz"))

    bad("index_save_private", area, save_private, "private")

    def save_over_fifo(ctx: Ctx) -> object:
        return flat().save(fifo(ctx, "idx.npz"))

    bad("index_save_fifo", area, save_over_fifo, ("regular", "FIFO", "exists"), timeout=15)


def register_api_accountant() -> None:
    area = "api accountant"
    for name, fn, expect in [
        ("accountant_no_budget", lambda: Accountant(), "budget"),
        ("accountant_negative", lambda: Accountant(epsilon=-1), "epsilon"),
        ("accountant_nan", lambda: Accountant(epsilon=float("nan")), "epsilon"),
        ("accountant_inf", lambda: Accountant(epsilon=float("inf")), "epsilon"),
        ("accountant_delta_one", lambda: Accountant(epsilon=1, delta=1), "delta"),
        ("accountant_delta_negative", lambda: Accountant(epsilon=1, delta=-0.1), "delta"),
        ("accountant_rho_and_epsilon", lambda: Accountant(epsilon=1, rho=1), "either"),
        ("accountant_composition_bogus", lambda: Accountant(epsilon=1, composition="rdp"),
         "composition"),
        ("accountant_zcdp_no_delta", lambda: Accountant(epsilon=1, composition="zcdp"), "delta"),
        ("accountant_string_epsilon", lambda: Accountant(epsilon="one"), "epsilon"),
        ("accountant_string_fraction_zero", lambda: Accountant(epsilon="1/0"), "epsilon"),
        ("accountant_compose_non_event", lambda: Accountant(epsilon=1).compose(0.5), "event"),
        ("accountant_overspend", lambda: Accountant(epsilon=1).compose(PureDP(2)), "exceed"),
        ("accountant_approx_on_pure", lambda: Accountant(epsilon=1).compose(ApproxDP(0.1, 1e-6)),
         "pure"),
        ("accountant_zcdp_on_pure", lambda: Accountant(epsilon=1).compose(ZCDP(0.1)), "pure"),
        ("puredp_negative", lambda: PureDP(-1), "epsilon"),
        ("puredp_nan", lambda: PureDP(float("nan")), "epsilon"),
        ("approxdp_delta_two", lambda: ApproxDP(1, 2), "delta"),
        ("zcdp_nan", lambda: ZCDP(float("nan")), "rho"),
        ("compose_all_partial", lambda: Accountant(epsilon=1).compose_all(
            [(PureDP(0.5), "a"), (PureDP(0.75), "b")]), "exceed"),
        ("per_round_rounds_zero", lambda: accounting.per_round_epsilon(1.0, 0), "rounds"),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect)


def register() -> None:
    """Add this module's cases to the battery."""
    register_api_mechanisms()
    register_api_topk()
    register_api_continuous()
    register_api_lazy_indices()
    register_api_accountant()
