"""Online PMW sessions: the law of an answer, charging, exhaustion, bad queries, exact resume.

Law test (ALPHA = 1e-4, N = 12,000 fresh sessions on 4 cells): the first answer is synthetic
with probability 1 - P(nu + rho >= T - v) and otherwise measured with two-sided geometric noise
around the true count. The sparse vector works on a grid of 2**20 steps per record, so its
discrete noise equals the Laplace law (scales 4 (K+1)/(K eps) and 2 (K+1)/(K eps) records) to
within 1e-5 in every probability, far below this test's resolution; the measurement law is exact.
Power check: a session at 1.3 times the epsilon must be rejected by the same test.
"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from fastmwem import Accountant, BudgetExceededError, PureDP, SessionExhaustedError
from fastmwem.data import Dataset, Domain
from fastmwem.models.state import MWState
from fastmwem.release.pmw import (
    EPOCH_LABEL,
    GRID,
    PMWRecord,
    PMWSession,
    UnstableUpdateError,
    mw_steps,
)
from fastmwem.testing import chi_square_pvalue
from fastmwem.workloads.marginals import Marginals

ALPHA = 1e-4
N = 12_000
DOMAIN = Domain(["a", "b"], [2, 2])
# Cell counts 40, 10, 30, 20 (C order over a, b): 100 records.
DATA = Dataset([[0, 0]] * 40 + [[0, 1]] * 10 + [[1, 0]] * 30 + [[1, 1]] * 20, DOMAIN)
FIRST = {"cell": {"a": 0, "b": 0}}  # truth 40, uniform synthetic answer 25
K_TAIL = 12


def _session(epsilon=2.0, rng=None, **kw):
    options = {"alpha": 0.1, "max_updates": 1, "total": 100, "sv_fraction": 0.5}
    options.update(kw)
    return PMWSession(DATA, epsilon=epsilon, rng=rng, **options)


def _sum_tail(t: float, b1: float, b2: float) -> float:
    """P(X + Y >= t) for independent Laplace(b1) and Laplace(b2), b1 != b2."""
    if t < 0:
        return 1 - _sum_tail(-t, b1, b2)
    return (b1**2 * math.exp(-t / b1) - b2**2 * math.exp(-t / b2)) / (2 * (b1**2 - b2**2))


def _first_answer_law(epsilon: float) -> np.ndarray:
    """Outcomes: synthetic, measured with noise z in -K_TAIL..K_TAIL, and the two tails."""
    eps_sv = eps_m = epsilon / 2
    stretch = (GRID + 1) / GRID
    p_measured = _sum_tail(10 - 15, 4 * stretch / eps_sv, 2 * stretch / eps_sv)
    a = math.exp(-eps_m)
    z = np.arange(-K_TAIL, K_TAIL + 1)
    core = (1 - a) / (1 + a) * a ** np.abs(z)
    tail = a ** (K_TAIL + 1) / (1 + a)
    return np.concatenate([[1 - p_measured], p_measured * np.concatenate([[tail], core, [tail]])])


def _first_answer_counts(epsilon: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    counts = np.zeros(2 * K_TAIL + 4, dtype=np.int64)
    for _ in range(N):
        ans = _session(epsilon, rng=rng).answer(FIRST)
        if ans.source == "synthetic":
            assert ans.value == 25.0
            counts[0] += 1
        else:
            noise = int(ans.value) - 40
            assert ans.value == int(ans.value)  # a count: an integer release
            counts[2 + K_TAIL + max(-K_TAIL - 1, min(K_TAIL + 1, noise))] += 1
    return counts


def test_first_answer_follows_the_session_law():
    law = _first_answer_law(2.0)
    assert law.sum() == pytest.approx(1.0)
    assert chi_square_pvalue(_first_answer_counts(2.0, seed=41), law) > ALPHA


def test_power_a_session_at_another_epsilon_is_rejected():
    assert chi_square_pvalue(_first_answer_counts(2.6, seed=42), _first_answer_law(2.0)) < ALPHA


# -- charging and exhaustion -----------------------------------------------------------------


def test_epochs_are_charged_when_opened_and_add_up_to_epsilon():
    s = PMWSession(DATA, epsilon=1.0, alpha=0.01, max_updates=3, rng=np.random.default_rng(1))
    labels = [e.label for e in s.accountant.ledger]
    assert labels == ["PMW record count"]  # paid at construction, before any query
    charged = 0.0
    while s.updates_left:
        charged += s.answer({"range": {"a": [0, 1], "b": [0, 0]}}).charged
    assert [e.label for e in s.accountant.ledger][1:] == [
        f"{EPOCH_LABEL} {i} {part}" for i in (1, 2, 3) for part in ("sparse vector", "measurement")]
    assert s.accountant.spent().epsilon <= 1
    assert charged == pytest.approx(float(s.accountant.spent().epsilon) - 0.01, abs=1e-9)
    with pytest.raises(SessionExhaustedError, match="max_updates=3"):
        s.answer(FIRST)
    assert len(s.accountant.ledger) == 7


def test_a_refused_epoch_charge_spends_nothing_and_changes_nothing():
    s = _session(rng=np.random.default_rng(2))
    tight = Accountant(epsilon=0.5)
    before = s.record().to_dict()
    with pytest.raises(BudgetExceededError):
        s.answer(FIRST, accountant=tight)
    assert tight.spent() == PureDP(0) and s.record().to_dict() == before
    s.answer(FIRST)  # the session's own accountant can pay
    assert s.record().epochs_paid == 1


@pytest.mark.parametrize(("query", "error", "match"), [
    ({"cell": {"zzz": 0}}, ValueError, "unknown attribute 'zzz'"),
    ({"cell": {"a": 2}}, ValueError, "0..1"),
    ({"cell": {"a": True}}, ValueError, "integers"),
    ({"range": {"a": [1, 0]}}, ValueError, "above"),
    ({"range": {"a": 1}}, ValueError, "pair"),
    ({"vector": [1, 0, 0]}, ValueError, "4 weights"),
    ({"vector": [0, 0, 0, 0]}, ValueError, "all zero"),
    ({"vector": ["x", 0, 0, 0]}, ValueError, "numbers"),
    ({"cell": {}}, ValueError, "at least one"),
    ({"cells": {"a": 0}}, ValueError, "exactly one of the keys"),
    (np.array([1.0, np.nan, 0, 0]), ValueError, "finite"),
    ("a=1", TypeError, "query must be"),
    ((Marginals.all_kway(Domain(["x", "y"], [2, 2]), 1), 0), ValueError, "domain"),
])
def test_bad_queries_are_refused_before_any_charge(query, error, match):
    s = _session(rng=np.random.default_rng(3))
    with pytest.raises(error, match=match):
        s.answer(query)
    assert s.accountant.spent() == PureDP(0) and s.record().epochs_paid == 0


def test_query_forms_give_the_same_answers():
    w = Marginals(DOMAIN, [("a", "b")])
    forms = [FIRST, {"range": {"a": [0, 0], "b": [0, 0]}}, {"vector": [1, 0, 0, 0]},
             np.array([[1.0, 0.0], [0.0, 0.0]]), (w, 0)]
    values = set()
    for form in forms:
        s = _session(epsilon=1e4, alpha=0.5, rng=np.random.default_rng(4))
        values.add(s.answer(form).value)
    assert values == {25.0}  # all synthetic (25 is within 0.5 * 100 of 40), all equal


def test_real_valued_queries_are_released_on_a_grid():
    s = _session(epsilon=2.0, alpha=0.001, rng=np.random.default_rng(5))
    ans = s.answer({"vector": [0.3, -0.7, 0.1, 0.0]})
    assert ans.source == "measured"
    units = ans.value / (0.7 / GRID)
    assert units == pytest.approx(round(units), abs=1e-6)


# -- exact resume ----------------------------------------------------------------------------

STREAM = [{"cell": {"a": int(i % 2), "b": int(i // 2 % 2)}} for i in range(40)]


def test_record_round_trips_through_json_and_resumes_exactly():
    g = np.random.default_rng(6)
    s = PMWSession(DATA, epsilon=3.0, alpha=0.05, max_updates=30, rng=g, reuse_passes=2)
    for q in STREAM[:15]:
        s.answer(q)
    assert 0 < s.updates < 30 and s.record().noisy_threshold is not None
    record = PMWRecord.from_dict(json.loads(json.dumps(s.record().to_dict())))
    g_copy = copy.deepcopy(g)
    resumed = PMWSession.resume(DATA, record, rng=g_copy)
    np.testing.assert_array_equal(resumed.distribution, s.distribution)
    assert resumed.accountant.spent() == s.accountant.spent()
    assert resumed.record().to_dict() == s.record().to_dict()
    rest = [(a.value, a.source) for a in (s.answer(q) for q in STREAM[15:20])]
    again = [(a.value, a.source) for a in (resumed.answer(q) for q in STREAM[15:20])]
    assert rest == again


def test_a_paid_epoch_whose_threshold_was_lost_is_not_charged_again():
    s = _session(epsilon=2.0, alpha=0.4, max_updates=2, rng=np.random.default_rng(7))
    assert s.answer(FIRST).source == "synthetic"  # error 15 against a threshold of 40
    record = s.record()
    record.noisy_threshold = None  # as if the process died before the threshold was stored
    resumed = PMWSession.resume(DATA, record, rng=np.random.default_rng(8))
    spent = resumed.accountant.spent()
    assert resumed.answer(FIRST).charged == 0.0
    assert resumed.accountant.spent() == spent and resumed.record().noisy_threshold is not None


@pytest.mark.parametrize(("field", "value", "match"), [
    ("epochs_paid", 3, "paid epochs"), ("noisy_threshold", 5, "noisy threshold"),
])
def test_inconsistent_records_are_refused(field, value, match):
    record = _session(rng=np.random.default_rng(9)).record()
    setattr(record, field, value)
    with pytest.raises(ValueError, match=match):
        PMWSession.resume(DATA, record)


def test_bad_configuration_is_refused_before_any_charge():
    acc = Accountant(epsilon=1)
    for kwargs, error in [({"alpha": 0.0}, ValueError), ({"alpha": 1.5}, ValueError),
                          ({"max_updates": 0}, ValueError), ({"max_updates": 2.5}, TypeError),
                          ({"sv_fraction": 1.0}, ValueError), ({"total": 0}, ValueError),
                          ({"epsilon": 1e-300}, ValueError)]:
        options = {"epsilon": 1.0, "alpha": 0.1, "max_updates": 3, **kwargs}
        with pytest.raises(error):
            PMWSession(DATA, accountant=acc, rng=np.random.default_rng(0), **options)
    assert acc.spent() == PureDP(0)


# -- query scales and the multiplicative-weights state ---------------------------------------


@pytest.mark.parametrize("tiny", [1e-310, 5e-324])
def test_a_query_scaled_below_the_floats_is_refused_before_any_charge(tiny):
    # Once measured, 1e-310 turned the distribution into NaN; 5e-324 divided by zero.
    s = _session(alpha=0.001, max_updates=2, rng=np.random.default_rng(10))
    before = s.record().to_dict()
    for query in ({"vector": [tiny, 0, 0, 0]}, np.array([0.0, -tiny, 0, 0])):
        with pytest.raises(ValueError, match=r"largest absolute weight must lie within"):
            s.answer(query)
    assert s.accountant.spent() == PureDP(0) and s.record().to_dict() == before
    ans = s.answer({"vector": [2.0**-1000, 0, 0, 0]})  # the smallest scale allowed works
    assert ans.source == "measured" and np.all(np.isfinite(s.distribution))
    s.answer(FIRST)
    assert np.all(np.isfinite(s.distribution))
    resumed = PMWSession.resume(DATA, s.record())
    np.testing.assert_array_equal(resumed.distribution, s.distribution)


@pytest.mark.parametrize(("measurement", "match"), [
    (({"vector": [1e-310, 0, 0, 0]}, 3.5e-309), "measurement 1 is not a query"),
    (({"cell": {"a": 0}}, float("nan")), "measurement 1 is not a finite number"),
    (({"cell": {"a": 0}}, float("inf")), "measurement 1 is not a finite number"),
])
def test_a_record_whose_measurement_would_poison_the_distribution_is_refused(measurement, match):
    record = _session(rng=np.random.default_rng(11)).record()
    record.measurements, record.epochs_paid = [measurement], 1
    with pytest.raises(ValueError, match=match):
        PMWSession.resume(DATA, record)


def test_mw_steps_refuse_a_non_finite_step_and_leave_the_state_unchanged():
    state = MWState.uniform(DOMAIN, 100.0)
    mw_steps(state, [(np.array([1.0, 0, 0, 0]), 60.0)])
    before = state.distribution.copy()
    subnormal = np.array([1e-310, 0, 0, 0])
    with pytest.raises(UnstableUpdateError, match="non-finite"):
        mw_steps(state, [(np.array([0, 1.0, 0, 0]), 0.0), (subnormal, 1e-309)])
    np.testing.assert_array_equal(state.distribution, before)  # the first step is undone too


def test_a_step_the_state_refuses_moves_nothing_and_the_measurement_still_counts(monkeypatch):
    def poison(self, query, measured):
        self.distribution *= np.nan

    monkeypatch.setattr(MWState, "update_vector", poison)
    s = _session(alpha=0.001, max_updates=2, rng=np.random.default_rng(12))
    uniform = s.distribution
    with pytest.warns(RuntimeWarning, match="step was refused"):
        ans = s.answer(FIRST)
    assert ans.source == "measured" and s.updates == 1  # released, paid for, counted
    np.testing.assert_array_equal(s.distribution, uniform)
    with pytest.warns(RuntimeWarning, match="step was refused"):
        resumed = PMWSession.resume(DATA, s.record())
    np.testing.assert_array_equal(resumed.distribution, uniform)
