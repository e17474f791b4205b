"""The signal bound of a factored default run's rounds (``FACTORED_NOISE_SHARE``)."""

from fractions import Fraction

import numpy as np
import pytest

from fastmwem.accounting import float_below
from fastmwem.data import Dataset, Domain
from fastmwem.release._privacy import definition_of
from fastmwem.release.mwem.annealing import expected_abs_noise
from fastmwem.release.mwem.regime import candidate_marginals, signal_rounds
from fastmwem.release.selection.candidates import closure_workload
from fastmwem.workloads import Marginals
from tests.release._auto import run_with_defaults


def table(sizes, n, seed=0):
    rng = np.random.default_rng(seed)
    domain = Domain([f"c{i}" for i in range(len(sizes))], sizes)
    # each column a noisy copy of the first: pairs carry signal
    first = rng.integers(0, min(sizes), n)
    columns = [np.where(rng.random(n) < 0.6, first % s, rng.integers(0, s, n)) for s in sizes]
    return Dataset(np.column_stack(columns), domain)


def predicted(definition, cells, budget, rounds, records, fraction=0.1):
    share = float_below(Fraction(budget) * (1 - Fraction(fraction)) / rounds)
    return cells * expected_abs_noise(definition.measurement(share, 1.0, integer=True)) / records


@pytest.mark.parametrize("privacy, budget", [("pure", 1.0), ("pure", 0.1), ("zcdp", 0.0118),
                                              ("zcdp", 0.3)])
@pytest.mark.parametrize("share", [0.1, 0.5, 2.0])
def test_the_rounds_are_the_most_whose_typical_pair_stays_within_the_share(privacy, budget,
                                                                           share):
    definition = definition_of(privacy)
    # the pairs' cells 30, 100, 400 (median 100), a 1-way and a 3-way that are not pairs
    found = [("m", ("a", "b"), 30, 1.0), ("m", ("a", "c"), 400, 1.0),
             ("m", ("b", "c"), 100, 1.0), ("m", ("a",), 2, 1.0), ("m", ("a", "b", "c"), 9, 1.0)]
    t = signal_rounds(found, definition, budget, 5000.0, ceiling=60, share=share,
                      select_fraction=0.1, integer=True)
    assert 1 <= t <= 60
    if t > 1:
        assert predicted(definition, 100, budget, t, 5000.0) <= share
    if t < 60:
        assert predicted(definition, 100, budget, t + 1, 5000.0) > share


def test_pure_rounds_grow_linearly_and_zcdp_rounds_quadratically_with_the_share():
    pairs = [("m", ("a", "b"), 100, 1.0)]
    pure = [signal_rounds(pairs, definition_of("pure"), 1.0, 9100.0, ceiling=10**6,
                          share=s, select_fraction=0.1, integer=True) for s in (0.5, 1.0)]
    assert pure == [40, 81]  # 100 T / (0.9 * 9100) <= share: T <= 40.95, 81.9
    zcdp = [signal_rounds(pairs, definition_of("zcdp"), 0.01, 9000.0, ceiling=10**6,
                          share=s, select_fraction=0.1, integer=True) for s in (0.5, 1.0)]
    assert 3.9 < zcdp[1] / zcdp[0] < 4.1


def test_without_pairs_the_median_candidate_decides_and_without_candidates_the_ceiling():
    pure = definition_of("pure")
    ones = [("m", ("a",), 10, 1.0), ("m", ("b",), 1000, 1.0), ("m", ("c",), 20, 1.0)]
    assert signal_rounds(ones, pure, 1.0, 9000.0, ceiling=500, share=0.5,
                         select_fraction=0.1, integer=True) == 202  # 20 cells: T <= 202.5
    assert signal_rounds([], pure, 1.0, 9000.0, ceiling=7, share=0.5, select_fraction=0.1,
                         integer=True) == 7
    # a share no round can keep still gives one round
    assert signal_rounds(ones, pure, 1.0, 9000.0, ceiling=7, share=1e-9, select_fraction=0.1,
                         integer=True) == 1


@pytest.mark.parametrize("privacy", ["pure", "zcdp"])
def test_a_factored_default_run_takes_the_signal_bound_when_it_is_set(monkeypatch, privacy):
    from fastmwem.release.mwem import auto

    ds = table([6, 7, 5, 6, 4, 5], 2000, seed=1)
    w = Marginals.all_kway(ds.domain, 2)
    budget = dict(epsilon=1.0) if privacy == "pure" else dict(epsilon=1.0, delta=1e-9)

    def chosen(**options):
        return run_with_defaults(ds, w, privacy=privacy, model="junction-tree",
                                 rng=np.random.default_rng(0), **budget, **options)[1]

    monkeypatch.setitem(auto.FACTORED_ROUNDS_FLOOR, privacy, False)
    monkeypatch.setitem(auto.FACTORED_NOISE_SHARE, privacy, None)
    unbounded = chosen()
    assert unbounded.rounds == unbounded.rounds_ceiling  # no bound: the ceiling
    monkeypatch.setitem(auto.FACTORED_NOISE_SHARE, privacy, 0.2)
    bounded = chosen()
    definition = definition_of(privacy)
    rest = bounded.predicted_errors["budget"]
    found = candidate_marginals(closure_workload(w))  # the run's candidates
    expected = signal_rounds(found, definition, rest, bounded.record_count,
                             ceiling=unbounded.rounds_ceiling, share=0.2,
                             select_fraction=0.1, integer=True)
    assert 1 <= bounded.rounds == expected < unbounded.rounds
    # rounds given by the caller are kept; a dense model ignores the bound
    assert chosen(rounds=9).rounds == 9
    dense = run_with_defaults(ds, w, privacy=privacy, model="dense", rounds="fixed",
                              rng=np.random.default_rng(0), **budget)[1]
    monkeypatch.setitem(auto.FACTORED_NOISE_SHARE, privacy, None)
    again = run_with_defaults(ds, w, privacy=privacy, model="dense", rounds="fixed",
                              rng=np.random.default_rng(0), **budget)[1]
    assert dense.rounds == again.rounds


def test_the_defaults_bound_the_rounds_with_a_floor_under_both_definitions():
    from fastmwem.release.mwem import auto

    # the accuracy suite's leave-one-table-out choices (docs/mwem.md)
    assert auto.FACTORED_NOISE_SHARE == {"pure": 0.5, "zcdp": 0.3}
    assert auto.FACTORED_ROUNDS_FLOOR == {"pure": True, "zcdp": True}


@pytest.mark.parametrize("privacy", ["pure", "zcdp"])
def test_the_floor_keeps_a_round_per_attribute(monkeypatch, privacy):
    from fastmwem.release.mwem import auto

    ds = table([6, 7, 5, 6, 4, 5], 2000, seed=1)
    w = Marginals.all_kway(ds.domain, 2)
    budget = dict(epsilon=1.0) if privacy == "pure" else dict(epsilon=1.0, delta=1e-9)
    monkeypatch.setitem(auto.FACTORED_NOISE_SHARE, privacy, 1e-6)  # one round without floor
    monkeypatch.setitem(auto.FACTORED_ROUNDS_FLOOR, privacy, False)

    def rounds():
        return run_with_defaults(ds, w, privacy=privacy, model="junction-tree",
                                 rng=np.random.default_rng(0), **budget)[1].rounds

    assert rounds() == 1
    monkeypatch.setitem(auto.FACTORED_ROUNDS_FLOOR, privacy, True)
    assert rounds() == 6  # the attributes
    monkeypatch.setitem(auto.FACTORED_NOISE_SHARE, privacy, 100.0)  # the ceiling stays on top
    monkeypatch.setitem(auto.FACTORED_MAX_ROUNDS, privacy, 4)
    assert rounds() == 4
