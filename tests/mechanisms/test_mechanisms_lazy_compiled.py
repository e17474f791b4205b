"""The lazy draw's compiled steps (numba) give what its numpy steps give, bit for bit.

``mechanisms._lazy_draws`` runs the merge of an oracle's candidates, the Gumbel-max and the
tail ids compiled when numba is installed; the same inputs must give the same ids, the same
floats and the same argmax as the numpy code (the merge: as the code before the compiled path,
kept below as the reference), whatever the input: ties, padding, ids listed twice, exclusions
sorted or not, scores whose log-weights overflow.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.mechanisms import _lazy_draws as draws
from fastmwem.mechanisms.exponential import _log_weights

pytestmark = pytest.mark.skipif(draws._tail_kernels() is None, reason="numba is not installed")


def _reference_merged_top(ids, scores, k, excluded):
    """The merge before the compiled path (an isin, two stable sorts, a partition)."""
    ids = np.asarray(ids, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    keep = ids >= 0
    if excluded.size:
        keep &= ~np.isin(ids, excluded)
    by_id = np.argsort(ids[keep], kind="stable")
    ids, scores = ids[keep][by_id], scores[keep][by_id]
    first = np.ones(ids.size, dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    ids, scores = ids[first], scores[first]
    if ids.size == 0:
        raise RuntimeError("no keys")
    if ids.size > k:
        near = scores >= np.partition(scores, ids.size - k)[ids.size - k]
        ids, scores = ids[near], scores[near]
    order = np.argsort(-scores, kind="stable")[:k]
    return ids[order], scores[order]


def _numpy_only(monkeypatch):
    monkeypatch.setattr(draws, "_kernels", None)


def _candidates(rng: np.random.Generator, case: str) -> tuple[np.ndarray, np.ndarray]:
    n = int(rng.integers(1, 300))
    ids = rng.choice(5000, size=n, replace=False).astype(np.int64)
    # few distinct values: many ties
    scores = rng.integers(-4, 5, size=n).astype(np.float64) * rng.choice([1.0, 0.25])
    if case == "ordered":  # an exact oracle's list: best first, ties by id, padded
        order = np.lexsort((ids, -scores))
        ids, scores = ids[order], scores[order]
        pad = int(rng.integers(0, 4))
        ids = np.concatenate([ids, np.full(pad, -1)])
        scores = np.concatenate([scores, np.full(pad, -np.inf)])
    elif case == "both signs":  # each id twice, as a search of v and of -v lists them
        ids = np.concatenate([ids, ids[::-1]])
        scores = np.abs(np.concatenate([scores, scores[::-1]]))
    elif case == "twice":  # ordered, but one id listed twice with two scores
        order = np.lexsort((ids, -scores))
        ids, scores = ids[order], scores[order]
        if ids.size > 2:
            ids[-1] = ids[0]
    return ids, scores


@pytest.mark.parametrize("case", ["ordered", "shuffled", "both signs", "twice"])
@pytest.mark.parametrize("exclusion", ["none", "sorted", "unsorted"])
def test_the_merge_equals_the_reference(case, exclusion, monkeypatch):
    rng = np.random.default_rng(len(case) * 7 + len(exclusion))
    for _ in range(60):
        ids, scores = _candidates(rng, case)
        real = np.unique(ids[ids >= 0])
        excluded = np.empty(0, dtype=np.int64)
        if exclusion != "none" and real.size > 1:  # all but one id at most
            excluded = rng.choice(real, size=int(rng.integers(1, real.size)), replace=False)
            excluded = np.concatenate([excluded, [7001, 9999]])
            if exclusion == "sorted":
                excluded = np.unique(excluded)
        k = int(rng.integers(1, ids.size + 3))
        want = _reference_merged_top(ids, scores, k, excluded)
        got = draws._merged_top(ids, scores, k, excluded, object())
        with monkeypatch.context() as patch:
            _numpy_only(patch)
            plain = draws._merged_top(ids, scores, k, excluded, object())
        for result in (got, plain):
            np.testing.assert_array_equal(result[0], want[0])
            np.testing.assert_array_equal(result[1], want[1])
            assert result[0].dtype == np.int64 and result[1].dtype == np.float64


def test_a_merge_with_every_candidate_excluded_raises_in_both_paths(monkeypatch):
    ids, scores = np.array([3, 1, -1]), np.array([2.0, 1.0, -np.inf])
    with pytest.raises(RuntimeError, match="returned no keys"):
        draws._merged_top(ids, scores, 2, np.array([1, 3]), object())
    _numpy_only(monkeypatch)
    with pytest.raises(RuntimeError, match="returned no keys"):
        draws._merged_top(ids, scores, 2, np.array([1, 3]), object())


@pytest.mark.parametrize("scale", [1e-3, 0.7, 25.0, 1e300])
def test_the_gumbel_max_equals_numpys(scale, monkeypatch):
    rng = np.random.default_rng(int(scale * 1000) % 97)
    for _ in range(50):
        n = int(rng.integers(1, 400))
        scores = rng.normal(size=n) * rng.choice([1.0, 1e3, 1e300])
        scores[rng.random(n) < 0.2] = scores[0]  # ties
        top = float(scores.max())
        gumbels = rng.gumbel(size=n)
        if rng.random() < 0.2:
            gumbels[:] = 0.0  # ties in the noisy values: the first wins
        got = draws._noisy_best(scores, scale, top, gumbels)
        y = _log_weights(scores, scale, top)
        noisy = y + gumbels
        winner = int(np.argmax(noisy))
        assert got == (winner, float(noisy[winner]), float(y.min()))
        with monkeypatch.context() as patch:
            _numpy_only(patch)
            assert draws._noisy_best(scores, scale, top, gumbels) == got


def test_the_tail_ids_are_those_of_the_sorted_union():
    rng = np.random.default_rng(5)
    for seed in range(30):
        n = int(rng.integers(50, 10**6))
        forbidden = rng.choice(n, size=int(rng.integers(0, min(n // 4, 2000))), replace=False)
        split = int(rng.integers(0, forbidden.size + 1))
        top, excluded = forbidden[:split].astype(np.int64), np.sort(forbidden[split:])
        t = int(rng.integers(1, max(2, n // 4)))
        got = draws._tail_ids(np.random.default_rng(seed), n, top, excluded, t)
        want = draws._distinct_ids(np.random.default_rng(seed), n, np.sort(forbidden), t)
        np.testing.assert_array_equal(got, want)
