"""Small data: predicted errors, and the one-way-only regime of the defaults."""

from __future__ import annotations

import importlib
import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.data import Dataset, Domain
from fastmwem.release import MWEMConfig, mwem, mwem_with_defaults, predicted_errors
from fastmwem.release.mwem import auto as auto_module
from fastmwem.release.mwem.regime import ONE_WAY_ONLY_ERROR
from fastmwem.warnings import SmallDataWarning
from fastmwem.workloads import Marginals
from tests.release.test_release_mwem_estimator import fingerprint


def table(n: int, sizes: tuple[int, ...] = (8, 8, 8, 8), seed: int = 0) -> Dataset:
    """Categorical records, each attribute copying its neighbour's code 60% of the time."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, sizes[0], n)]
    for k in sizes[1:]:
        cols.append(np.where(rng.random(n) < 0.6, cols[-1] % k, rng.integers(0, k, n)))
    domain = Domain([f"a{i}" for i in range(len(sizes))], list(sizes))
    return Dataset(np.stack(cols, axis=1).astype(np.int64), domain)


def labels(result) -> list[str]:
    return [entry.label for entry in result.ledger]


def assert_product(result) -> None:
    """The output distribution is the product of its 1-way marginals: every 2-way marginal is
    the outer product of its two 1-way ones (a dense histogram or a factored model alike)."""
    domain = result.domain
    names = domain.attributes

    def marginal(attrs):
        table = np.asarray(result.answer(Marginals(domain, [list(attrs)])), dtype=np.float64)
        return table.reshape([domain.size_of(a) for a in attrs]) / table.sum()

    for i, a in enumerate(names):
        for b in names[i + 1:]:
            np.testing.assert_allclose(marginal((a, b)),
                                       np.multiply.outer(marginal((a,)), marginal((b,))),
                                       rtol=0, atol=1e-12)


def one_way_labels(domain: Domain, noise: str) -> list[str]:
    return [f"initial 1-way marginal {a} ({noise})" for a in domain.attributes]


# -- predicted_errors: hand computations ------------------------------------------------------

DOMAIN = Domain(["a", "b", "c"], [4, 5, 3])


def test_predicted_errors_under_pure_dp_are_cells_times_the_laplace_scale_over_n():
    w = Marginals(DOMAIN, [["a", "b"], ["b", "c"]])
    p = predicted_errors(DOMAIN, w, budget=0.5, records=200)
    # Laplace of scale 1 / 0.5 = 2 on each cell: 20 * 2 / 200 and 15 * 2 / 200
    assert [m.error for m in p.marginals] == pytest.approx([0.2, 0.15], rel=1e-12)
    assert [m.cells for m in p.marginals] == [20, 15]
    # the 1-way marginals together: 0.5 / 3 each, scale 6
    assert [m.error for m in p.one_way] == pytest.approx([24 / 200, 30 / 200, 18 / 200],
                                                         rel=1e-12)
    assert p.one_way_error == pytest.approx(0.12, rel=1e-12)
    assert p.best_interaction is not None and p.best_interaction.name == "marginal(b, c)"
    assert p.rounds_can_help
    # by attribute names: the same
    named = predicted_errors(DOMAIN, [("a", "b"), ("b", "c")], budget=0.5, records=200)
    assert [m.error for m in named.marginals] == [m.error for m in p.marginals]
    # a tenth of the budget: 15 * 20 / 200 = 1.5 >= 1, rounds cannot help
    small = predicted_errors(DOMAIN, w, budget=0.05, records=200)
    assert small.best_interaction.error == pytest.approx(1.5, rel=1e-12)
    assert not small.rounds_can_help


def test_predicted_errors_under_zcdp_are_cells_times_sqrt_2_over_pi_sigma_over_n():
    w = Marginals(DOMAIN, [["a", "b"], ["c"]])
    p = predicted_errors(DOMAIN, w, budget=0.02, records=200, privacy="zcdp")
    sigma = 1 / math.sqrt(2 * 0.02)  # rho = 1 / (2 sigma^2)
    assert [m.error for m in p.marginals] == pytest.approx(
        [20 * math.sqrt(2 / math.pi) * sigma / 200, 3 * math.sqrt(2 / math.pi) * sigma / 200],
        rel=1e-9)
    each = 1 / math.sqrt(2 * 0.02 / 3)
    # (the mechanism rounds sigma^2 up to a rational, here by about 1e-7 of it)
    assert [m.error for m in p.one_way] == pytest.approx(
        [k * math.sqrt(2 / math.pi) * each / 200 for k in (4, 5, 3)], rel=1e-6)
    # a 1-way candidate does not count as an interaction
    assert p.best_interaction.name == "marginal(a, b)"


def test_predicted_errors_summary_is_json_ready_and_lists_the_most_accurate_first():
    w = Marginals(DOMAIN, [["a", "b"], ["b", "c"]])
    summary = predicted_errors(DOMAIN, w, budget=0.05, records=200).summary()
    json.dumps(summary)
    assert summary["threshold"] == ONE_WAY_ONLY_ERROR
    assert summary["rounds_can_help"] is False
    assert [m["name"] for m in summary["marginals"]] == ["marginal(b, c)", "marginal(a, b)"]
    assert summary["one_way_only"] == pytest.approx(1.2, rel=1e-12)


@pytest.mark.parametrize("kwargs, message", [
    ({"budget": 0.0, "records": 100}, "budget"),
    ({"budget": float("inf"), "records": 100}, "budget"),
    ({"budget": 1.0, "records": 0}, "records"),
])
def test_predicted_errors_refuses_bad_numbers(kwargs, message):
    with pytest.raises(ValueError, match=message):
        predicted_errors(DOMAIN, [("a", "b")], **kwargs)


def test_predicted_errors_refuses_unknown_attributes_and_another_domain():
    with pytest.raises(ValueError, match="attributes of the domain"):
        predicted_errors(DOMAIN, [("a", "z")], budget=1.0, records=100)
    other = Domain(["a", "b"], [4, 5])
    with pytest.raises(ValueError, match="domain"):
        predicted_errors(DOMAIN, Marginals(other, [["a", "b"]]), budget=1.0, records=100)


# -- rounds=0 ------------------------------------------------------------------------------------


def test_zero_rounds_without_the_one_way_start_is_refused_before_any_charge():
    ds = table(300)
    w = Marginals.all_kway(ds.domain, 3)
    with pytest.raises(ValueError, match="rounds=0 .* init='one-way'"):
        MWEMConfig(epsilon=1.0, rounds=0)
    for init in ("uniform", "noisy-histogram"):
        accountant = Accountant(epsilon=1.0)
        with pytest.raises(ValueError, match="init='one-way'"):
            mwem(ds, w, epsilon=1.0, rounds=0, init=init, rng=0, accountant=accountant)
        assert accountant.ledger == ()
    with pytest.raises(ValueError, match="noise_test"):
        MWEMConfig(epsilon=1.0, rounds=0, init="one-way", noise_test=0.01)
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(ValueError, match="rounds"):
        mwem_with_defaults(ds, w, epsilon=1.0, rounds=0, rng=0, accountant=accountant)
    assert accountant.ledger == ()


@pytest.mark.parametrize("model", ["dense", "junction-tree"])
def test_zero_rounds_measure_the_one_way_marginals_with_all_the_count_leaves(model):
    ds = table(300)
    w = Marginals.all_kway(ds.domain, 3)
    result = mwem(ds, w, epsilon=0.3, rounds=0, init="one-way", rng=1, model=model)
    assert labels(result) == ["record count (Laplace)", *one_way_labels(ds.domain, "Laplace")]
    spent = sum(Fraction(entry.event.epsilon) for entry in result.ledger)
    assert spent <= Fraction(0.3) and float(spent) == pytest.approx(0.3, rel=1e-12)
    assert result.trace == ()
    if model == "dense":
        assert_product(result)


# -- the defaults on small and large tables ------------------------------------------------------


def test_a_small_table_gets_the_noisy_one_way_marginals_only_and_a_warning():
    ds = table(300)
    w = Marginals.all_kway(ds.domain, 3)
    with pytest.warns(SmallDataWarning, match="rounds cannot help.*predicted normalised L1 "
                                              "error"):
        result = mwem_with_defaults(ds, w, epsilon=0.3, rng=5)
    choices = result.choices
    assert choices.regime == "one-way only"
    assert choices.rounds == 0 and choices.noise_test is None
    assert labels(result) == ["record count (Laplace)", *one_way_labels(ds.domain, "Laplace")]
    assert result.guarantee == {"definition": "pure", "epsilon": 0.3}
    assert not result.updates_skipped
    assert_product(result)
    predicted = choices.predicted_errors
    assert predicted is not None and predicted["rounds_can_help"] is False
    assert predicted["best_interaction"]["predicted_error"] >= ONE_WAY_ONLY_ERROR
    assert len(predicted["marginals"]) == 4  # the 3-way marginals of 4 attributes
    report = result.report()
    json.dumps(report)
    assert report["choices"]["regime"] == "one-way only"
    assert report["choices"]["predicted_errors"]["one_way_only"] == predicted["one_way_only"]


def test_a_small_table_under_zcdp_gets_the_one_way_marginals_only():
    ds = table(300)
    w = Marginals.all_kway(ds.domain, 3)
    with pytest.warns(SmallDataWarning):
        result = mwem_with_defaults(ds, w, epsilon=0.3, delta=1e-9, privacy="zcdp", rng=5)
    assert result.choices.regime == "one-way only" and not result.choices.adaptive
    assert labels(result) == ["record count (discrete Gaussian)",
                              *one_way_labels(ds.domain, "discrete Gaussian")]
    assert result.guarantee["epsilon"] == pytest.approx(0.3, rel=1e-9)
    assert_product(result)


def test_given_rounds_are_run_as_asked_even_on_a_small_table():
    ds = table(300)
    w = Marginals.all_kway(ds.domain, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallDataWarning)
        result = mwem_with_defaults(ds, w, epsilon=0.3, rounds=1, rng=5)
    assert result.choices.regime == "rounds" and result.choices.predicted_errors is None
    assert "round 1: measure (Laplace)" in labels(result)


def test_both_plans_are_checked_before_the_count_is_charged(monkeypatch):
    ds = table(300)
    w = Marginals.all_kway(ds.domain, 3)
    accountant = Accountant(epsilon=0.3)
    planned: list[tuple[int | None, str, int]] = []
    original = auto_module.plan_mwem

    def recording(config, *args, **kwargs):
        planned.append((config.rounds, config.init, len(accountant.ledger)))
        return original(config, *args, **kwargs)

    monkeypatch.setattr(auto_module, "plan_mwem", recording)
    with pytest.warns(SmallDataWarning):
        mwem_with_defaults(ds, w, epsilon=0.3, rng=5, accountant=accountant)
    before = [(t, init) for t, init, charged in planned if charged == 0]
    assert (0, "one-way") in before  # the one-way-only plan
    assert (4, "uniform") in before  # the rounds' plan with the most rounds the rule allows


def test_a_large_table_keeps_its_rounds_and_its_output_of_before(monkeypatch):
    # the fit's line search of before, which doubled its step at every step
    monkeypatch.setattr(importlib.import_module("fastmwem.models.fit"), "_GROW_AFTER", 0)
    ds = table(20_000)
    w = Marginals.all_kway(ds.domain, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallDataWarning)
        pure = mwem_with_defaults(ds, w, epsilon=1.0, rng=5)
        zcdp = mwem_with_defaults(ds, w, epsilon=1.0, delta=1e-9, privacy="zcdp", rng=5,
                                  model="dense")  # the zCDP default's model before
    # fingerprints of the runs of the code before the small-data rule (pure: since the pure
    # rule anneals on dense models without supersets; it was 7d78eaf258a3d7f8 with fixed rounds)
    assert pure.choices is not None and pure.choices.regime == "rounds" and pure.choices.adaptive
    assert fingerprint(pure) == "43785dba8df1f14d"  # with the weighted final fit
    passes = mwem_with_defaults(ds, w, epsilon=1.0, rng=5, estimator="passes")
    assert fingerprint(passes) == "091d5923445cd10e"  # without it, the run of before
    assert fingerprint(zcdp) == "b1f0cb96738118d9"
    assert pure.choices.regime == zcdp.choices.regime == "rounds"
    assert pure.choices.rounds == 4
    assert pure.choices.predicted_errors["rounds_can_help"] is True
