"""Nothing fails after the budget is charged: every input either runs or fails before the charge.

Each case below used to charge the whole budget and then fail (or, for the last ones, hang or
exhaust memory). Now each either succeeds with a valid result, or raises a clear error with the
accountant untouched and the data never read.
"""

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.data import Dataset, Domain
from fastmwem.release import mwem
from fastmwem.workloads import (
    LinearWorkload,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
)

DOMAIN = Domain([f"x{i}" for i in range(4)], [2] * 4)
TINY = Domain(["a"], [2])


class Spy:
    """A dataset stand-in that counts how often its histogram is read."""

    def __init__(self, dataset):
        self.domain = dataset.domain
        self._dataset = dataset
        self.reads = 0

    def histogram(self):
        self.reads += 1
        return self._dataset.histogram()


class NaNSensitivity(LinearWorkload):
    """A user workload that reports a NaN sensitivity."""

    def __init__(self, base, query=float("nan"), groups=None):
        self.domain = base.domain
        self._base = base
        self._query = query
        self._groups = groups

    @property
    def n_queries(self):
        return self._base.n_queries

    @property
    def query_sensitivity(self):
        return self._query

    @property
    def group_sensitivity(self):
        return self._base.group_sensitivity if self._groups is None else self._groups

    def answer(self, histogram):
        return self._base.answer(histogram)

    def answer_transpose(self, weights):
        return self._base.answer_transpose(weights)


def data(domain=DOMAIN, n=300, seed=0):
    rng = np.random.default_rng(seed)
    return Dataset(rng.integers(0, 2, (n, len(domain))), domain)


def marginals2():
    return Marginals.all_kway(DOMAIN, 2)


def zero_group_matrix():
    dense = marginals2().dense()
    dense[4:8] = 0.0  # the second marginal is all zero: sensitivity 0
    return MatrixWorkload(DOMAIN, dense, groups=marginals2().group_offsets)


def counting_with_an_empty_query():
    w = RandomCountingQueries(TINY, 6, rng=1)
    assert (w.group_sensitivity == 0).any()
    return w


# (name, dataset factory, workload factory, options)
CASES = [
    ("small epsilon 0.01", data, marginals2, {"epsilon": 0.01, "rounds": 6, "rng": 2}),
    ("epsilon 1e-6", data, marginals2, {"epsilon": 1e-6, "rounds": 6, "rng": 3}),
    ("subnormal epsilon", data, marginals2, {"epsilon": 1e-310, "rounds": 3}),
    ("round shares below the float range", data, marginals2, {"epsilon": 1e-306, "rounds": 3}),
    ("record-count share overflows", data, marginals2,
     {"epsilon": 1.0, "rounds": 3, "count_fraction": 1e-307}),
    ("initial-histogram share overflows", data, marginals2,
     {"epsilon": 1.0, "rounds": 3, "init": "noisy-histogram", "init_fraction": 1e-307}),
    ("fractions leave nothing for the rounds", data, marginals2,
     {"epsilon": 1.0, "rounds": 3, "init": "noisy-histogram", "init_fraction": 0.6,
      "count_fraction": 0.5}),
    ("public total beyond the float range", data, marginals2,
     {"epsilon": 1.0, "rounds": 3, "total": 10**400}),
    ("cell penalty that overflows the scores", data, marginals2,
     {"epsilon": 1.0, "rounds": 3, "cell_penalty": 1e308, "rng": 0}),
    ("all-zero matrix", data, lambda: MatrixWorkload(DOMAIN, np.zeros((3, DOMAIN.size))),
     {"epsilon": 1.0, "rounds": 2}),
    ("a group of sensitivity 0", data, zero_group_matrix,
     {"epsilon": 1.0, "rounds": 5, "rng": 1}),
    ("a group of sensitivity 0, every group selected", data, zero_group_matrix,
     {"epsilon": 1.0, "rounds": 6}),
    ("empty random counting query measured as a group", lambda: data(TINY),
     counting_with_an_empty_query, {"epsilon": 1.0, "rounds": 5, "measure": "group", "rng": 0}),
    ("empty random counting query, every query selected as a group", lambda: data(TINY),
     counting_with_an_empty_query, {"epsilon": 1.0, "rounds": 6, "measure": "group"}),
    ("entries of 1e308", data, lambda: MatrixWorkload(DOMAIN, np.full((2, DOMAIN.size), 1e308)),
     {"epsilon": 1.0, "rounds": 2}),
    ("entries of 1e200 (allowed)", data,
     lambda: MatrixWorkload(DOMAIN, 1e200 * marginals2().dense(),
                            groups=marginals2().group_offsets),
     {"epsilon": 1.0, "rounds": 3, "rng": 0}),
    ("huge sensitivity, tiny measurement epsilon", data,
     lambda: MatrixWorkload(DOMAIN, 1e200 * np.eye(DOMAIN.size)[:4]),
     {"epsilon": 1e-110, "rounds": 2}),
    ("NaN query sensitivity", data, lambda: NaNSensitivity(marginals2()),
     {"epsilon": 1.0, "rounds": 2}),
    ("group sensitivities of the wrong shape", data,
     lambda: NaNSensitivity(marginals2(), 1.0, np.ones(3)), {"epsilon": 1.0, "rounds": 2}),
    ("signed queries at epsilon 1e-6", data, lambda: Parities.all_kway(DOMAIN, 2),
     {"epsilon": 1e-6, "rounds": 5, "rng": 0}),
    ("query mode at epsilon 1e-6", data, marginals2,
     {"epsilon": 1e-6, "rounds": 5, "measure": "query", "rng": 0}),
    ("a million reuse passes", data, marginals2,
     {"epsilon": 1.0, "rounds": 2, "reuse_passes": 10**6}),
    ("a hundred million rounds", data, marginals2,
     {"epsilon": 1.0, "rounds": 10**8, "exclude_measured": False}),
    ("more memory than allowed", data, marginals2,
     {"epsilon": 1.0, "rounds": 2, "memory_limit": 1000}),
]


@pytest.mark.parametrize("name, make_data, make_workload, options", CASES,
                         ids=[c[0] for c in CASES])
def test_runs_or_fails_before_the_charge(name, make_data, make_workload, options):
    try:
        workload = make_workload()
    except ValueError:
        return  # refused when the workload is built: before any run at all
    spy = Spy(make_data())
    accountant = Accountant(epsilon=2.0)
    try:
        result = mwem(spy, workload, accountant=accountant, **options)
    except (ValueError, TypeError) as exc:
        assert str(exc), name
        assert accountant.ledger == (), f"{name}: charged, then failed with {exc!r}"
        assert spy.reads == 0
        return
    assert np.all(np.isfinite(result.histogram)) and np.all(result.histogram >= 0)
    assert np.isclose(result.distribution.sum(), 1.0)
    assert all(np.all(np.isfinite(m)) for m in result.measurements)


@pytest.mark.parametrize("name, expected", [
    ("subnormal epsilon", "smallest normal float"),
    ("round shares below the float range", "each round's selection"),
    ("record-count share overflows", "record count"),
    ("initial-histogram share overflows", "initial histogram"),
    ("fractions leave nothing for the rounds", "must be < 1"),
    ("public total beyond the float range", "total must be <="),
    ("all-zero matrix", "all zero"),
    ("entries of 1e308", "within \\+-1e\\+200"),
    ("huge sensitivity, tiny measurement epsilon", "noise scale"),
    ("NaN query sensitivity", "query_sensitivity"),
    ("group sensitivities of the wrong shape", "one entry per group"),
    ("a million reuse passes", "reuse_passes"),
    ("a hundred million rounds", "would need about"),
    ("more memory than allowed", "memory"),
])
def test_refusals_name_the_problem(name, expected):
    _, make_data, make_workload, options = next(c for c in CASES if c[0] == name)
    with pytest.raises((ValueError, TypeError), match=expected):
        mwem(make_data(), make_workload(), **options)


@pytest.mark.parametrize("name", [
    "cell penalty that overflows the scores",
    "a group of sensitivity 0",
    "empty random counting query measured as a group",
    "entries of 1e200 (allowed)",
    "small epsilon 0.01",
])
def test_these_cases_now_run(name):
    _, make_data, make_workload, options = next(c for c in CASES if c[0] == name)
    result = mwem(make_data(), make_workload(), **options)
    assert np.all(np.isfinite(result.histogram))


def test_zero_sensitivity_groups_are_never_selected():
    w = zero_group_matrix()
    for seed in range(5):
        result = mwem(data(), w, epsilon=1.0, rounds=5, rng=seed)
        assert 1 not in result.selected
    with pytest.raises(ValueError, match="5 candidate groups \\(of sensitivity > 0\\)"):
        mwem(data(), w, epsilon=1.0, rounds=6)


def test_all_zero_queries_are_never_selected_in_query_mode():
    # Single-query groups: a zero row has group sensitivity 0, so it is no candidate either
    # when rounds select single queries (its answer is 0 on every dataset: nothing to learn).
    dense = np.eye(DOMAIN.size)[:4]
    dense[1] = 0.0
    w = MatrixWorkload(DOMAIN, dense)
    for seed in range(5):
        result = mwem(data(), w, epsilon=1.0, rounds=3, rng=seed)
        assert 1 not in result.selected
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(ValueError, match="3 candidate queries \\(of sensitivity > 0\\)"):
        mwem(data(), w, epsilon=1.0, rounds=4, accountant=accountant)
    assert accountant.ledger == ()
    # In a multi-query group measured query by query, a query of a zero group is zero as well.
    zero = zero_group_matrix()
    result = mwem(data(), zero, epsilon=1.0, rounds=12, measure="query", rng=0)
    assert not set(result.selected) & set(range(4, 8))
