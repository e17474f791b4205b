"""Defaults that adapt to the table: the rounds rule, the automatic defaults' charging and checks, quality."""

from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import Accountant, BoundedRange, BudgetExceededError, PureDP
from fastmwem.data import Dataset, Domain
from fastmwem.datasets import load_nltcs
from fastmwem.evaluation import workload_error
from fastmwem.release.mwem import (
    AUTO_REUSE_PASSES,
    MAX_DEFAULT_ROUNDS,
    MAX_SUPERSET_ROUNDS,
    NOISE_TEST_ALPHA,
    SUPERSET_MIN_ROUNDS,
    default_rounds,
    default_workload_spec,
    superset_rounds,
    zcdp_superset_rounds,
)
from fastmwem.workloads import Marginals
from tests.release._auto import run_with_defaults


def table(sizes, n, seed=0):
    rng = np.random.default_rng(seed)
    domain = Domain([f"c{i}" for i in range(len(sizes))], sizes)
    return Dataset(np.column_stack([rng.integers(0, s, n) for s in sizes]), domain)


class RecordingDataset:
    """A dataset stand-in that records the ledger's length whenever it is read."""

    def __init__(self, dataset, accountant):
        self.domain = dataset.domain
        self._dataset = dataset
        self._accountant = accountant
        self.ledger_at_reads = []

    def histogram(self):
        self.ledger_at_reads.append(len(self._accountant.ledger))
        return self._dataset.histogram()

    def marginal(self, names):
        self.ledger_at_reads.append(len(self._accountant.ledger))
        return self._dataset.marginal(names)


@pytest.mark.parametrize("columns, spec", [(1, "marginals:1"), (2, "marginals:2"),
                                           (3, "marginals:3"), (9, "marginals:3")])
def test_default_workload_order(columns, spec):
    assert default_workload_spec(Domain([f"a{i}" for i in range(columns)], [2] * columns)) == spec


def test_rounds_rule():
    # 2 T C / (eps_r n) <= 0.3, at least 1 and at most the ceiling.
    assert default_rounds(ceiling=25, cells=8, epsilon_rounds=0.99, records=21_574) == 25
    assert default_rounds(ceiling=25, cells=8, epsilon_rounds=0.099, records=21_574) == 25
    assert default_rounds(ceiling=25, cells=8, epsilon_rounds=0.99, records=500) == 9
    assert default_rounds(ceiling=25, cells=8, epsilon_rounds=0.99, records=1) == 1
    assert default_rounds(ceiling=4, cells=8, epsilon_rounds=100.0, records=10**6) == 4
    for t in range(1, 30):
        records = 2 * t * 8 / (0.3 * 0.5)
        assert default_rounds(ceiling=99, cells=8, epsilon_rounds=0.5, records=records) == t


def test_rounds_rule_with_an_epsilon_near_the_float_range():
    # eps_r * n overflows to inf: the rule must still give the ceiling, not fail after the
    # count was charged.
    assert default_rounds(ceiling=25, cells=8, epsilon_rounds=1e308, records=300) == 25
    accountant = Accountant(epsilon=1e308)
    data = table([2, 3, 2, 2], 300)
    result, choices = run_with_defaults(data, Marginals.all_kway(data.domain, 2), epsilon=1e308,
                                rng=np.random.default_rng(0), accountant=accountant)
    assert choices.adaptive and choices.rounds >= 1 and np.all(np.isfinite(result.histogram))
    # the fixed rule (a lazy selection cannot anneal) gives the ceiling
    result, choices = run_with_defaults(data, Marginals.all_kway(data.domain, 2), epsilon=1e308,
                                        rng=np.random.default_rng(0), selection="lazy",
                                        accountant=Accountant(epsilon=1e308))
    assert choices.rounds == 6 and np.all(np.isfinite(result.histogram))


def test_count_is_charged_first_then_the_plan_and_all_within_epsilon():
    ds = table([2, 3, 2, 2], 3000)
    w = Marginals.all_kway(ds.domain, 2)
    acc = Accountant(epsilon=0.7)
    spy = RecordingDataset(ds, acc)
    result, choices = run_with_defaults(spy, w, epsilon=0.7, accountant=acc, rng=np.random.default_rng(1))
    # read once for the count (after its charge), once by MWEM (after the whole plan: the
    # annealing schedule's ceiling, one entry)
    assert choices.adaptive and spy.ledger_at_reads == [1, 2]
    assert result.ledger[0].label == "record count (Laplace)"
    total = sum(entry.cost[0] for entry in result.ledger)
    assert Fraction(7, 10) - Fraction(1, 10**12) < total <= Fraction(7, 10)
    assert choices.rounds_default and choices.noise_test == NOISE_TEST_ALPHA
    # fixed rounds by the rule (a lazy selection cannot anneal): one entry per charge
    acc = Accountant(epsilon=0.7)
    spy = RecordingDataset(ds, acc)
    result, choices = run_with_defaults(spy, w, epsilon=0.7, accountant=acc, selection="lazy",
                                        rng=np.random.default_rng(1))
    assert not choices.adaptive and spy.ledger_at_reads == [1, 1 + 2 * choices.rounds]
    assert [type(e.event) for e in result.ledger[1:]] == [BoundedRange, PureDP] * choices.rounds
    total = sum(entry.cost[0] for entry in result.ledger)
    assert Fraction(7, 10) - Fraction(1, 10**12) < total <= Fraction(7, 10)
    assert choices.rounds_ceiling == min(MAX_DEFAULT_ROUNDS, w.n_groups)
    assert result.report()["not_private_because"] == ["caller_rng"]  # the test's generator


def test_explicit_rounds_are_strict_and_skip_the_noise_test():
    ds = table([2, 2, 2], 2000)
    w = Marginals.all_kway(ds.domain, 2)
    acc = Accountant(epsilon=1)
    with pytest.raises(ValueError, match=r"rounds \(4\) exceeds the 3 candidate groups"):
        run_with_defaults(ds, w, epsilon=1.0, rounds=4, accountant=acc)
    assert acc.ledger == ()
    result, choices = run_with_defaults(ds, w, epsilon=1.0, rounds=3, accountant=acc)
    assert (choices.rounds, choices.rounds_default, choices.noise_test) == (3, False, None)
    assert len(result.ledger) == 1 + 2 * 3


def _recorded_pass_limits(monkeypatch):
    from fastmwem.release.mwem import run as mwem_module
    limits = []
    real = mwem_module.reuse

    def recording(run, workload, tolerance, passes):
        limits.append(passes)
        return real(run, workload, tolerance, passes)

    monkeypatch.setattr(mwem_module, "reuse", recording)
    return limits


@pytest.mark.parametrize("privacy, model, given, expected", [
    ("pure", "dense", None, AUTO_REUSE_PASSES), ("pure", "junction-tree", None, AUTO_REUSE_PASSES),
    ("zcdp", "dense", None, 20), ("zcdp", "junction-tree", None, AUTO_REUSE_PASSES),
    ("pure", "dense", 3, 3), ("zcdp", "junction-tree", 7, 7)])
def test_reuse_passes_default_by_privacy_and_model_and_a_given_value_wins(
        monkeypatch, privacy, model, given, expected):
    limits = _recorded_pass_limits(monkeypatch)
    ds = table([2, 3, 2, 2], 3000)
    w = Marginals.all_kway(ds.domain, 2)
    budget = {"delta": 1e-6} if privacy == "zcdp" else {}
    result, choices = run_with_defaults(ds, w, epsilon=1.0, rounds=3, privacy=privacy, model=model,
                                reuse_passes=given, rng=np.random.default_rng(2), **budget)
    assert (result.model is None) == (model == "dense")
    assert choices.reuse_passes == expected
    assert limits[:3] == [expected] * 3  # one call per round, then the final passes


@pytest.mark.parametrize("kwargs, error, message", [
    ({"reuse_passes": -1}, ValueError, "reuse_passes"),
    ({"init": "zeros"}, ValueError, "init"),
    ({"memory_limit": 1000}, ValueError, "memory"),
    ({"count_fraction": 1.0}, ValueError, "count_fraction"),
    ({"accountant": Accountant(epsilon=0.5)}, BudgetExceededError, "exceed"),
    ({"epsilon": 1e-310}, ValueError, "epsilon"),
])
def test_everything_is_checked_before_the_count_is_charged(kwargs, error, message):
    ds = table([2, 2, 2, 2], 1000)
    w = Marginals.all_kway(ds.domain, 3)
    acc = kwargs.pop("accountant", Accountant(epsilon=1))
    spy = RecordingDataset(ds, acc)
    with pytest.raises(error, match=message):
        run_with_defaults(spy, w, **{"epsilon": 1.0, **kwargs}, accountant=acc)
    assert acc.ledger == () and spy.ledger_at_reads == []


def test_a_failing_hook_stops_the_run_after_the_count_only():
    ds = table([2, 2, 2], 1000)
    w = Marginals.all_kway(ds.domain, 2)
    acc = Accountant(epsilon=1)
    seen = []

    def refuse(total):
        seen.append(total)
        raise RuntimeError("no room")

    with pytest.raises(RuntimeError, match="no room"):
        run_with_defaults(ds, w, epsilon=1.0, accountant=acc, before_rounds=refuse)
    assert len(seen) == 1 and seen[0] >= 1
    assert [e.label for e in acc.ledger] == ["record count (Laplace)"]


def test_a_public_total_spends_nothing_on_the_count():
    ds = table([2, 2, 2], 1000)
    w = Marginals.all_kway(ds.domain, 2)
    result, choices = run_with_defaults(ds, w, epsilon=1.0, total=1000)
    assert choices.count_epsilon == 0 and result.total == 1000
    assert "record count" not in [e.label for e in result.ledger]


def test_a_seed_marks_the_result_not_private():
    ds = table([2, 2, 2], 1000)
    w = Marginals.all_kway(ds.domain, 2)
    with pytest.warns(UserWarning, match="integer seed"):
        result, _ = run_with_defaults(ds, w, epsilon=1.0, rng=3)
    assert result.seeded and result.report()["private"] is False


def mean_l1(ds, histogram, w):
    return workload_error(ds.histogram(), histogram, w)["mean_group_l1"]


@pytest.mark.parametrize("sizes", [[2] * 7, [2, 3, 4, 2, 3, 4, 2]])
def test_defaults_do_no_worse_than_uniform_with_few_records_per_cell(sizes):
    # 500 uniform records: 25 rounds at epsilon 1 scored 0.31 (binary) and 0.58 (sizes 2..4)
    # mean 3-way marginal L1, where the uniform distribution scores 0.104 and 0.167.
    ds = table(sizes, 500)
    w = Marginals.all_kway(ds.domain, 3)
    uniform = mean_l1(ds, np.ones(ds.domain.size), w)
    scores = [mean_l1(ds, run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(s))[0]
                      .histogram, w) for s in range(3)]
    assert np.mean(scores) <= uniform + 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("epsilon, rounds, bound", [(1.0, 20, 0.018), (0.1, 10, 0.095)])
def test_defaults_keep_nltcs_quality(epsilon, rounds, bound):
    # Superset candidates, their rounds rule and selection share: seeds 0-2 score 0.0152,
    # 0.0132, 0.0142 at epsilon 1 and 0.072, 0.065, 0.076 at 0.1 (0.021 and 0.114 with the
    # 3-way marginals as candidates and 25 rounds).
    ds = load_nltcs()
    w = Marginals.all_kway(ds.domain, 3)
    scores = []
    for s in range(3):
        result, choices = run_with_defaults(ds, w, epsilon=epsilon, rng=np.random.default_rng(s))
        assert choices.candidates == "supersets" and not result.updates_skipped
        assert abs(choices.rounds - rounds) <= 1
        scores.append(mean_l1(ds, result.histogram, w))
    assert np.mean(scores) < bound


def latent_binary(columns, n, seed=0):
    """Binary columns driven by a hidden class of three (correlated, as real tables are)."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    p = rng.uniform(0.1, 0.9, (3, columns))
    domain = Domain([f"b{i}" for i in range(columns)], [2] * columns)
    return Dataset((rng.random((n, columns)) < p[z]).astype(np.int64), domain)


def test_superset_rounds_rule():
    # the fitted power law, below the linear rule's bound and the ceiling
    assert superset_rounds(ceiling=25, cells=32, epsilon_rounds=0.297, records=21574) == 14
    assert superset_rounds(ceiling=25, cells=32, epsilon_rounds=2.97, records=21574) == 25
    assert superset_rounds(ceiling=25, cells=32, epsilon_rounds=0.05, records=2000) == 1
    assert superset_rounds(ceiling=7, cells=32, epsilon_rounds=1e308, records=1e308) == 7
    values = [superset_rounds(ceiling=25, cells=32, epsilon_rounds=e, records=21574)
              for e in (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)]
    assert values == sorted(values)


def test_defaults_measure_supersets_when_the_rule_allows_enough_rounds():
    ds = latent_binary(8, 2000)
    w = Marginals.all_kway(ds.domain, 3)
    result, choices = run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(0))
    assert choices.candidates == "supersets"
    selected = [r["description"] for r in result.report()["rounds"]]
    assert len(selected) == choices.rounds >= SUPERSET_MIN_ROUNDS
    assert all(d.startswith("marginal(") and d.count(",") == 4 for d in selected)  # 5-way
    old, _ = run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(0),
                               candidates="workload", rounds=MAX_DEFAULT_ROUNDS)
    assert mean_l1(ds, result.histogram, w) < mean_l1(ds, old.histogram, w)  # 0.062 vs 0.180


@pytest.mark.parametrize("data, expected", [
    (lambda: latent_binary(10, 300), "auto"),  # too few rounds of supersets: the workload's
    (lambda: table([2, 3, 4, 2, 3, 4, 2], 5000), "auto"),  # supersets too large
])
def test_defaults_keep_the_workload_candidates_otherwise(data, expected):
    ds = data()
    w = Marginals.all_kway(ds.domain, 3)
    _, choices = run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(0))
    assert choices.candidates == expected


def test_zcdp_superset_rounds_rule():
    # rho_r n^2 / C for NLTCS at epsilon 0.1 / 1 / 3 (delta 1e-9): 12, 31, 50 rounds
    rounds = [zcdp_superset_rounds(ceiling=50, cells=32, rho_rounds=rho, records=21574)
              for rho in (1.75e-4, 0.0148, 0.119)]
    assert rounds == [12, 31, 50]
    assert zcdp_superset_rounds(ceiling=50, cells=32, rho_rounds=1e-6, records=300) == 1
    assert zcdp_superset_rounds(ceiling=7, cells=32, rho_rounds=1e308, records=1e308) == 7
    values = [zcdp_superset_rounds(ceiling=50, cells=32, rho_rounds=r, records=21574)
              for r in (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0)]
    assert values == sorted(values)


def test_zcdp_defaults_measure_supersets_in_fixed_rounds_within_rho():
    ds = latent_binary(8, 2000)
    w = Marginals.all_kway(ds.domain, 3)
    rho = 0.05
    result, choices = run_with_defaults(ds, w, rho=rho, privacy="zcdp", model="dense",
                                        rng=np.random.default_rng(0))
    assert choices.candidates == "supersets" and not choices.adaptive
    assert SUPERSET_MIN_ROUNDS <= choices.rounds <= MAX_SUPERSET_ROUNDS
    assert choices.rounds == zcdp_superset_rounds(
        ceiling=MAX_SUPERSET_ROUNDS, cells=32, rho_rounds=0.99 * rho,
        records=choices.record_count)
    selected = [r["description"] for r in result.report()["rounds"]]
    assert all(d.startswith("marginal(") and d.count(",") == 4 for d in selected)  # 5-way
    assert result.round_ledger == ()
    assert sum(entry.cost[0] for entry in result.ledger) <= Fraction(rho)


def test_zcdp_defaults_keep_the_workload_candidates_when_the_rule_gives_few_rounds():
    ds = latent_binary(10, 300)
    w = Marginals.all_kway(ds.domain, 3)
    _, choices = run_with_defaults(ds, w, epsilon=0.3, delta=1e-9, privacy="zcdp",
                           rng=np.random.default_rng(0))
    assert choices.candidates == "auto"


def test_given_candidates_and_fixed_zcdp_rounds_are_left_alone():
    ds = latent_binary(8, 2000)
    w = Marginals.all_kway(ds.domain, 3)
    _, given = run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(0), candidates="workload")
    assert given.candidates == "workload"
    _, zcdp = run_with_defaults(ds, w, epsilon=1.0, delta=1e-9, privacy="zcdp", rounds=5,
                        rng=np.random.default_rng(0))
    assert zcdp.candidates == "auto"


def test_a_superset_run_charges_its_plan_before_reading_and_stays_within_epsilon():
    ds = latent_binary(8, 2000)
    w = Marginals.all_kway(ds.domain, 3)
    acc = Accountant(epsilon=1.0)
    spy = RecordingDataset(ds, acc)
    result, choices = run_with_defaults(spy, w, epsilon=1.0, accountant=acc, rng=np.random.default_rng(2))
    assert choices.candidates == "supersets"
    assert spy.ledger_at_reads == [1, 1 + 2 * choices.rounds]
    assert sum(entry.cost[0] for entry in result.ledger) <= Fraction(1)


def test_rounds_fixed_keeps_the_rules_without_annealing():
    ds = table([2, 3, 2, 2], 3000)
    w = Marginals.all_kway(ds.domain, 2)
    result, choices = run_with_defaults(ds, w, epsilon=0.7, rounds="fixed",
                                        rng=np.random.default_rng(1))
    assert not choices.adaptive and choices.noise_test == NOISE_TEST_ALPHA
    assert choices.rounds_ceiling == min(MAX_DEFAULT_ROUNDS, w.n_groups)
    assert result.round_ledger == () and not choices.rounds_default  # asked for
    _, default = run_with_defaults(ds, w, epsilon=0.7, rng=np.random.default_rng(1))
    assert default.adaptive  # the default anneals here (dense, no supersets)
    with pytest.raises(ValueError, match="'fixed'"):
        run_with_defaults(ds, w, epsilon=0.7, rounds="fixd", rng=np.random.default_rng(1))


def test_the_annealing_default_keeps_a_signal_its_first_measurements_cannot_see():
    # 800 correlated records over 8 binary columns at epsilon 1: the 1-way measurements at the
    # annealing's first share are mostly noise, but later, larger measurements show the
    # structure, so the end-of-run test keeps the fitted model (a test of the first
    # measurements alone returned the uniform start here).
    ds = latent_binary(8, 800, seed=3)
    w = Marginals.all_kway(ds.domain, 3)
    uniform = mean_l1(ds, np.ones(ds.domain.size), w)
    scores = []
    for s in range(3):
        result, choices = run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(s))
        assert choices.adaptive and not result.updates_skipped
        scores.append(mean_l1(ds, result.histogram, w))
    assert np.mean(scores) < 0.8 * uniform


def test_a_factored_pure_default_keeps_fixed_rounds_without_the_first_round_test():
    ds = latent_binary(8, 800, seed=3)
    w = Marginals.all_kway(ds.domain, 3)
    result, choices = run_with_defaults(ds, w, epsilon=1.0, model="junction-tree",
                                        rng=np.random.default_rng(0))
    assert not choices.adaptive and choices.noise_test is None and choices.rounds >= 1
    assert not result.updates_skipped
    # a test asked for is kept
    _, choices = run_with_defaults(ds, w, epsilon=1.0, model="junction-tree", noise_test=0.05,
                                   rng=np.random.default_rng(0))
    assert choices.noise_test == 0.05


@pytest.mark.parametrize("top", [25, 50])
def test_a_factored_zcdp_default_runs_the_factored_ceiling_of_fixed_rounds(monkeypatch, top):
    from fastmwem.release.mwem import auto

    monkeypatch.setitem(auto.FACTORED_MAX_ROUNDS, "zcdp", top)
    ds = table([2, 3, 2, 2, 3, 2, 2, 2, 3, 2], 5000, seed=4)
    w = Marginals.all_kway(ds.domain, 2)
    result, choices = run_with_defaults(ds, w, epsilon=3.0, delta=1e-9, privacy="zcdp",
                                        model="junction-tree", rng=np.random.default_rng(0))
    assert not choices.adaptive
    # the factored candidates: the 45 pairs and the 10 columns (the workload's downward closure)
    assert choices.rounds_ceiling == min(top, 55) == choices.rounds
    # a dense model keeps MAX_DEFAULT_ROUNDS whatever the factored cap
    _, dense = run_with_defaults(ds, w, epsilon=0.05, delta=1e-9, privacy="zcdp",
                                 rounds="fixed", candidates="workload", model="dense",
                                 rng=np.random.default_rng(0))
    assert dense.rounds_ceiling == min(MAX_DEFAULT_ROUNDS, w.n_groups)


def test_a_default_run_takes_the_default_estimator_unless_one_is_given(monkeypatch):
    from fastmwem.release.mwem import auto

    ds = table([2, 3, 2, 2, 3, 2], 3000, seed=5)
    w = Marginals.all_kway(ds.domain, 2)

    def answers(**options):
        result, _ = run_with_defaults(ds, w, epsilon=1.0, delta=1e-9, privacy="zcdp",
                                      model="junction-tree", rng=np.random.default_rng(3),
                                      **options)
        return result.answer(w)

    passes, asked_fit = answers(estimator="passes"), answers(estimator="final-fit")
    assert not np.allclose(passes, asked_fit)  # the two estimators differ here
    assert auto.DEFAULT_ESTIMATOR["zcdp factored"] == "final-fit"  # the suite's winner
    np.testing.assert_array_equal(answers(), asked_fit)
    monkeypatch.setitem(auto.DEFAULT_ESTIMATOR, "zcdp factored", "passes")
    np.testing.assert_array_equal(answers(), passes)
    monkeypatch.setitem(auto.DEFAULT_ESTIMATOR, "zcdp factored", "final-fit")
    np.testing.assert_array_equal(answers(estimator="passes"), passes)  # given: it wins
    np.testing.assert_array_equal(answers(estimator="final-fit"), asked_fit)


@pytest.mark.parametrize("privacy", ["pure", "zcdp"])
def test_the_reuse_tolerance_is_the_definitions_default_unless_given(privacy):
    from fastmwem.release.mwem.auto import AUTO_REUSE_TOLERANCE

    ds = table([2, 3, 2, 2], 3000)
    w = Marginals.all_kway(ds.domain, 2)
    budget = {"privacy": privacy, **({"delta": 1e-9} if privacy == "zcdp" else {})}
    default, _ = run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(4), **budget)
    same, _ = run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(4),
                                reuse_tolerance=AUTO_REUSE_TOLERANCE[privacy], **budget)
    assert AUTO_REUSE_TOLERANCE == {"pure": 1e-3, "zcdp": 1e-4}
    assert np.array_equal(default.answer(w), same.answer(w))
    # the other definition's tolerance gives another model here: the value is the one used,
    # and a tolerance the caller gives is kept
    other = AUTO_REUSE_TOLERANCE["zcdp" if privacy == "pure" else "pure"]
    given, _ = run_with_defaults(ds, w, epsilon=1.0, rng=np.random.default_rng(4),
                                 reuse_tolerance=other, **budget)
    assert not np.array_equal(default.answer(w), given.answer(w))
