"""Parities: the Walsh-Hadamard transform, brute force from the codes, validation."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pytest
from scipy.linalg import hadamard

from fastmwem.data.domain import Domain
from fastmwem.workloads import Marginals, Parities, walsh_hadamard


def binary(d: int) -> Domain:
    return Domain([f"b{i}" for i in range(d)], [2] * d)


def brute_force(domain: Domain, w: Parities, hist: np.ndarray, queries) -> np.ndarray:
    codes = np.indices(domain.shape).reshape(len(domain), -1)
    out = []
    for q in queries:
        axes = list(domain.axes(w.subsets[q]))
        ones = codes[axes].sum(axis=0) if axes else np.zeros(domain.size, dtype=int)
        out.append(np.sum(np.where(ones % 2 == 0, 1.0, -1.0) * hist))
    return np.array(out)


@pytest.mark.parametrize("u", [0, 1, 2, 5, 8])
def test_walsh_hadamard_is_the_sylvester_matrix(u: int) -> None:
    x = np.random.default_rng(u).normal(size=1 << u)
    np.testing.assert_allclose(walsh_hadamard(x), hadamard(1 << u) @ x, atol=1e-9)
    np.testing.assert_allclose(walsh_hadamard(walsh_hadamard(x)), (1 << u) * x, atol=1e-8)


def test_walsh_hadamard_rejects_other_lengths() -> None:
    with pytest.raises(ValueError, match="power-of-two"):
        walsh_hadamard(np.ones(6))
    with pytest.raises(ValueError, match="power-of-two"):
        walsh_hadamard(np.ones(0))


def test_answers_match_brute_force() -> None:
    d = Domain(["a", "b", "c", "e"], [2, 2, 2, 2])
    w = Parities(d, [["c", "a"], [], ["e"], ["a", "b", "c", "e"]])
    h = np.random.default_rng(0).random(d.size)
    np.testing.assert_allclose(w.answer(h), brute_force(d, w, h, range(4)), rtol=1e-12)
    assert w.answer(h)[1] == pytest.approx(h.sum())
    assert w.describe(0) == "parity(a, c)"
    assert w.subsets[0] == ("a", "c")


def test_all_kway_counts_and_order() -> None:
    d = binary(6)
    low = Parities.all_kway(d, 3)
    assert low.n_queries == sum(comb(6, r) for r in range(4))
    assert low.subsets[0] == ()
    assert [len(s) for s in low.subsets] == sorted(len(s) for s in low.subsets)
    exact = Parities.all_kway(d, 3, include_lower=False)
    assert exact.n_queries == comb(6, 3)
    assert set(exact.subsets) == set(itertools.combinations(d.attributes, 3))
    assert Parities.all_kway(d, 0).n_queries == 1


def test_low_order_parities_determine_the_marginals() -> None:
    # MWEM paper (arXiv:1012.4763) s.3.2: every k-way marginal is recovered from the parities of
    # size <= k.
    d = binary(5)
    h = np.random.default_rng(1).random(d.size)
    w = Parities.all_kway(d, 2)
    answers = dict(zip(w.subsets, w.answer(h)))
    marginals = Marginals.all_kway(d, 2)
    for g, attrs in enumerate(marginals.attribute_sets):
        recovered = []
        for cell in itertools.product((0, 1), repeat=2):
            total = 0.0
            for r in range(3):
                for s in itertools.combinations(range(2), r):
                    sign = (-1) ** sum(cell[i] for i in s)
                    total += sign * answers[tuple(attrs[i] for i in s)]
            recovered.append(total / 4)
        np.testing.assert_allclose(recovered, marginals.answer_group(h, g), rtol=1e-10)


def test_non_binary_attributes_rejected_by_name() -> None:
    d = Domain(["a", "age", "c"], [2, 5, 2])
    with pytest.raises(ValueError, match="'age' has 5 values"):
        Parities(d, [["a"], ["age", "c"]])
    with pytest.raises(ValueError, match="'age' has 5 values"):
        Parities.all_kway(d, 1)
    # A non-binary attribute no subset names is summed over.
    w = Parities(d, [["a", "c"]])
    h = np.random.default_rng(2).random(d.size)
    np.testing.assert_allclose(w.answer(h), brute_force(d, w, h, [0]), rtol=1e-12)


def test_bad_arguments_rejected() -> None:
    d = binary(3)
    with pytest.raises(ValueError, match="repeat"):
        Parities(d, [["b0", "b1"], ["b1", "b0"]])
    with pytest.raises(ValueError, match="at least one"):
        Parities(d, [])
    with pytest.raises(ValueError, match="unique"):
        Parities(d, [["b0", "b0"]])
    with pytest.raises(ValueError, match="unknown attribute"):
        Parities(d, [["zz"]])
    with pytest.raises(TypeError, match="subsets"):
        Parities(d, "b0")
    with pytest.raises(TypeError, match="subsets"):
        Parities(d, 3)
    with pytest.raises(TypeError, match="domain"):
        Parities("domain", [["b0"]])
    with pytest.raises(ValueError, match="k"):
        Parities.all_kway(d, 4)
    with pytest.raises(ValueError, match="k"):
        Parities.all_kway(d, 0, include_lower=False)
    with pytest.raises(TypeError, match="include_lower"):
        Parities.all_kway(d, 1, include_lower="yes")


def test_large_binary_domain_matches_brute_force() -> None:
    # 2^20 cells; a subset of the parities checked from the definition.
    d = binary(20)
    w = Parities.all_kway(d, 3)
    h = np.random.default_rng(3).random(d.size)
    answers = w.answer(h)
    picks = np.random.default_rng(4).choice(w.n_queries, size=6, replace=False)
    np.testing.assert_allclose(answers[picks], brute_force(d, w, h, picks), rtol=1e-9)
    weights = np.random.default_rng(5).normal(size=w.n_queries)
    probe = np.random.default_rng(6).random(d.size)
    assert w.answer_transpose(weights) @ probe == pytest.approx(weights @ w.answer(probe), rel=1e-9)


def test_multiply_group_flips_the_factor_on_odd_cells() -> None:
    d = binary(3)
    w = Parities(d, [["b0", "b2"]])
    h = np.ones(d.size)
    w.multiply_group(h, 0, [0.5])
    codes = np.indices(d.shape).reshape(3, -1)
    odd = (codes[0] + codes[2]) % 2 == 1
    np.testing.assert_allclose(h[odd], np.exp(-0.5))
    np.testing.assert_allclose(h[~odd], np.exp(0.5))


@pytest.mark.parametrize("u", [16, 17, 19])
def test_walsh_hadamard_blocked_path_on_long_vectors(u: int) -> None:
    # Beyond 2^15 cells the transform runs blockwise; check entries from the definition.
    x = np.random.default_rng(u).normal(size=1 << u)
    y = walsh_hadamard(x)
    cells = np.arange(1 << u)
    for s in np.random.default_rng(u + 1).integers(0, 1 << u, size=5):
        parity = cells & int(s)
        for shift in (16, 8, 4, 2, 1):
            parity = parity ^ (parity >> shift)
        parity &= 1
        assert y[s] == pytest.approx(np.sum(np.where(parity == 0, x, -x)), abs=1e-8)
    np.testing.assert_allclose(walsh_hadamard(y), (1 << u) * x, atol=1e-6)
