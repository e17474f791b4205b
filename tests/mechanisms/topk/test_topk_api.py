"""Top-k API: validation before randomness or budget, accounting, distinct outputs, metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastmwem.accounting import Accountant, ApproxDP, BoundedRange, BudgetExceededError, PureDP
from fastmwem.mechanisms.topk import (
    METHODS,
    JointTopK,
    PNFJointTopK,
    PrunedJointTopK,
    cdp_peel,
    gamma_topk,
    joint,
    laplace_topk,
    pnf_joint,
    pnf_peel,
    pruned_joint,
    topk_errors,
)
from fastmwem.mechanisms.topk._levels import log_num_sequences
from fastmwem.mechanisms.topk.joint import MAX_TABLE_CELLS

FUNCS = [joint, pnf_joint, pnf_peel, cdp_peel, laplace_topk, gamma_topk, pruned_joint]


def _heavy(d, seed):
    rng = np.random.default_rng(seed)
    return np.ceil(np.exp(rng.normal(1.0, 1.4, d))).astype(np.int64)


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize("kwargs,exc,word", [
    (dict(counts=[3, 2, 1], k=0, epsilon=1.0), ValueError, "k"),
    (dict(counts=[3, 2, 1], k=4, epsilon=1.0), ValueError, "k"),
    (dict(counts=[3, 2, 1], k=1.5, epsilon=1.0), TypeError, "k"),
    (dict(counts=[3, 2, 1], k=True, epsilon=1.0), TypeError, "k"),
    (dict(counts=[3, -2, 1], k=1, epsilon=1.0), ValueError, "counts"),
    (dict(counts=[3, np.nan, 1], k=1, epsilon=1.0), ValueError, "counts"),
    (dict(counts=[3, 2.5, 1], k=1, epsilon=1.0), ValueError, "counts"),
    (dict(counts=[], k=1, epsilon=1.0), ValueError, "counts"),
    (dict(counts=[[3, 2]], k=1, epsilon=1.0), ValueError, "counts"),
    (dict(counts=["a", "b"], k=1, epsilon=1.0), TypeError, "counts"),
    (dict(counts=[3, 2, 1], k=1, epsilon=0.0), ValueError, "epsilon"),
    (dict(counts=[3, 2, 1], k=1, epsilon=-1.0), ValueError, "epsilon"),
    (dict(counts=[3, 2, 1], k=1, epsilon=float("inf")), ValueError, "epsilon"),
    (dict(counts=[3, 2, 1], k=1, epsilon=1.0, neighbors="swap"), ValueError, "neighbors"),
])
def test_topk_bad_input_fails_before_budget(func, kwargs, exc, word):
    acc = Accountant(epsilon=10, delta=1e-3)
    kwargs = dict(kwargs)
    counts = kwargs.pop("counts")
    k = kwargs.pop("k")
    with pytest.raises(exc, match=word):
        func(counts, k, rng=0, accountant=acc, **kwargs)
    assert acc.ledger == ()


def test_topk_bad_rng_and_delta_fail_before_budget():
    acc = Accountant(epsilon=10, delta=1e-3)
    with pytest.raises(TypeError, match="rng"):
        joint([3, 2, 1], 1, epsilon=1.0, rng=1.5, accountant=acc)
    with pytest.raises(ValueError, match="delta"):
        cdp_peel([3, 2, 1], 1, epsilon=1.0, delta=0.0, accountant=acc)
    with pytest.raises(ValueError, match="level_cap"):
        JointTopK(1, 1.0, level_cap=-1)
    assert acc.ledger == ()


@pytest.mark.parametrize("func,event", [
    (joint, BoundedRange(0.5)), (pnf_joint, PureDP(0.5)), (pnf_peel, PureDP(0.5)),
    (cdp_peel, ApproxDP(0.5, 1e-6)), (laplace_topk, PureDP(0.5)), (gamma_topk, PureDP(0.5)),
    (pruned_joint, BoundedRange(0.5)),
])
def test_topk_accountant_is_charged_the_privacy_event(func, event):
    acc = Accountant(epsilon=1, delta=1e-5)
    out = func([9, 4, 4, 1, 0], 2, epsilon=0.5, rng=0, accountant=acc)
    assert len(set(out.tolist())) == 2
    assert [entry.event for entry in acc.ledger] == [event]
    tight = Accountant(epsilon=0.4, delta=1e-5)
    with pytest.raises(BudgetExceededError):
        func([9, 4, 4, 1, 0], 2, epsilon=0.5, rng=0, accountant=tight)
    assert tight.ledger == ()


def test_topk_privacy_events_without_sampling():
    assert JointTopK(3, 1.0).privacy == BoundedRange(1.0)
    assert METHODS["pnf-joint"](3, 1.0).privacy == PureDP(1.0)
    assert METHODS["cdp-peel"](3, 1.0, 1e-6).privacy == ApproxDP(1.0, 1e-6)
    assert JointTopK(3, 1.0, "replace").scale == pytest.approx(0.25)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_topk_distinct_outputs_at_scale(name):
    # d = 10,000, k = 200: every output must be 200 distinct valid indices (Wu-Zhang's code
    # repeats items here). The joint samplers get several seeds and epsilons.
    counts = _heavy(10_000, 3)
    mech_cls = METHODS[name]
    draws = 25 if name in ("joint", "pnf-joint", "pruned-joint") else 3
    for seed in range(draws):
        eps = (0.01, 0.3, 1.0, 10.0, 100.0)[seed % 5]
        out = mech_cls(200, eps).select(counts, rng=seed)
        assert out.shape == (200,)
        assert len(set(out.tolist())) == 200
        assert out.min() >= 0 and out.max() < counts.size


def test_topk_joint_large_range_uses_the_lazy_tail_and_stays_distinct():
    # Counts spread up to 1e12: the level cap is far below the range, so the exact tail step is
    # live (it should almost never fire at eps = 1).
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 10**12, size=10_000)
    for seed in range(10):
        out = joint(counts, 200, epsilon=1.0, rng=seed)
        assert len(set(out.tolist())) == 200
        # With gaps of ~1e8 between top counts Joint returns the true top 200 in order.
        assert (out == np.argsort(-counts, kind="stable")[:200]).all()


def test_topk_joint_accepts_float_and_unsigned_counts():
    a = joint(np.array([5.0, 90.0, 3.0]), 2, epsilon=100.0, rng=0)
    b = joint(np.array([5, 90, 3], dtype=np.uint16), 2, epsilon=100.0, rng=0)
    assert a.tolist() == b.tolist() == [1, 0]


def test_topk_errors_metrics():
    counts = [10, 50, 30, 20, 40]
    e = topk_errors(counts, [1, 2, 4])  # true top 3 = 50, 40, 30
    assert (e.linf, e.l1, e.k_relative, e.linf_index) == (10, 20, 0, 1)
    e = topk_errors(counts, [0, 1])
    assert (e.linf, e.l1, e.k_relative, e.linf_index) == (40, 50, 30, 0)
    with pytest.raises(ValueError, match="selected"):
        topk_errors(counts, [5])
    with pytest.raises(ValueError, match="selected"):
        topk_errors(counts, [0.5])


def test_topk_pruned_tau_is_data_independent():
    mech = PrunedJointTopK(5, 1.0, beta=1e-6)
    assert mech.tau(1000) == mech.tau(1000)
    assert mech.tau(1000) < mech.tau(100_000)


@pytest.mark.parametrize("name", sorted(METHODS))
@pytest.mark.parametrize("counts,k", [([0], 1), ([0, 0, 0], 3), ([5, 1, 9], 3), ([7, 7], 1),
                                      (list(range(300)), 300)])
def test_topk_edge_sizes(name, counts, k):
    out = METHODS[name](k, 1.0).select(counts, rng=3)
    assert out.dtype.kind == "i" and out.shape == (k,)
    assert len(set(out.tolist())) == k


# -- resource bounds ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [JointTopK, PNFJointTopK, PrunedJointTopK])
def test_topk_joint_table_beyond_the_limit_is_refused_before_the_charge(cls):
    # k = 50,000 of 166,000 items at epsilon = 1: the public bound on the table is ~6e10 cells
    # (the CLI ran past 180 s). All-zero counts would be fast, but the refusal must not depend
    # on the counts, so it comes all the same, before any budget or randomness.
    acc = Accountant(epsilon=10)
    with pytest.raises(ValueError, match=r"k=50000 over d=166000.*above the limit of 268,435,456"):
        cls(k=50_000, epsilon=1.0).select(np.zeros(166_000, dtype=np.int64), rng=0,
                                          accountant=acc)
    assert acc.ledger == ()


def test_topk_joint_table_limit_is_public_and_tight():
    # The largest k allowed at d = 166,000 and epsilon = 1, from the public bound alone.
    d, k = 166_000, 3342
    need = math.ceil((log_num_sequences(d, k) + math.log(1e10)) / 0.5)
    assert k * (need + 1) <= MAX_TABLE_CELLS < (k + 1) * (need + 25)
    JointTopK(k, 1.0)._check_size(d)  # accepted
    with pytest.raises(ValueError, match="limit"):
        JointTopK(k + 1, 1.0)._check_size(d)
    with pytest.raises(ValueError, match="limit"):
        JointTopK(k, 0.9)._check_size(d)  # a smaller epsilon needs more levels


@pytest.mark.parametrize("cls", [JointTopK, PNFJointTopK])
def test_topk_level_cap_far_below_the_tail_bound_is_refused_before_the_charge(cls):
    # 50!/40! ~ e^38 sequences and a cap of 0: the levels beyond the cap may weigh e^37 times
    # level 0. PNF-Joint used to raise "tail ... too heavy" after the charge, Joint to loop.
    counts = np.arange(50) * 1000
    acc = Accountant(epsilon=10)
    with pytest.raises(ValueError, match="level_cap=0 is too low"):
        cls(10, 1.0, level_cap=0).select(counts, rng=0, accountant=acc)
    assert acc.ledger == ()
    # A cap at or above the automatic one is fine, and so is a low cap when the tail is light.
    cls(10, 1.0, level_cap=10_000).select(counts, rng=0, accountant=acc)
    cls(2, 1.0, level_cap=0).select([5, 3, 3, 1, 0], rng=0)
