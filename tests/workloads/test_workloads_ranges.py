"""RangeQueries: brute force from the codes, random generation (MWEM paper, arXiv:1012.4763,
s.3.1), validation."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.data.domain import Domain
from fastmwem.testing.stats import chi_square_pvalue
from fastmwem.workloads import RangeQueries


def brute_force(domain: Domain, w: RangeQueries, hist: np.ndarray, queries) -> np.ndarray:
    """Answers from the definition: sum of h over the cells whose codes lie in every interval."""
    codes = np.indices(domain.shape).reshape(len(domain), -1)
    axes = domain.axes(w.attributes)
    out = []
    for q in queries:
        inside = np.ones(domain.size, dtype=bool)
        for j, a in enumerate(axes):
            inside &= (codes[a] >= w.lower[q, j]) & (codes[a] <= w.upper[q, j])
        out.append(hist[inside].sum())
    return np.array(out)


def test_small_domain_matches_brute_force() -> None:
    d = Domain(["a", "b", "c"], [4, 3, 5])
    w = RangeQueries(d, ["c", "a"], lower=[[0, 0], [1, 2], [4, 3], [2, 0]], upper=[[4, 3], [3, 2], [4, 3], [2, 1]])
    h = np.random.default_rng(3).random(d.size)
    np.testing.assert_allclose(w.answer(h), brute_force(d, w, h, range(4)), rtol=1e-12)
    np.testing.assert_allclose(w.answer(h)[0], h.sum(), rtol=1e-12)  # the full box
    assert w.describe(1) == "c in [1, 3], a in [2, 2]"
    assert w.describe_group(3) == "range(c in [2, 2], a in [0, 1])"


def test_one_dimensional_bounds_accepted_as_vectors() -> None:
    d = Domain(["x"], [10])
    w = RangeQueries(d, "x", lower=[0, 3, 9], upper=[9, 5, 9])
    h = np.arange(10.0)
    np.testing.assert_array_equal(w.answer(h), [45.0, 12.0, 9.0])
    assert w.lower.shape == (3, 1) and w.attributes == ("x",)


def test_random_is_reproducible_and_seed_dependent() -> None:
    d = Domain(["x", "y"], [50, 7])
    a = RangeQueries.random(d, ["x", "y"], 100, rng=11)
    b = RangeQueries.random(d, ["x", "y"], 100, rng=11)
    c = RangeQueries.random(d, ["x", "y"], 100, rng=12)
    np.testing.assert_array_equal(a.lower, b.lower)
    np.testing.assert_array_equal(a.upper, b.upper)
    assert not np.array_equal(a.lower, c.lower)
    assert np.all(a.lower <= a.upper)
    assert a.lower.min() >= 0 and a.upper[:, 0].max() <= 49 and a.upper[:, 1].max() <= 6


def _endpoint_law(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Law of (min, max) of two independent uniform draws from 0..n-1."""
    i = np.arange(n)
    lower = (2 * (n - i) - 1) / n**2
    upper = (2 * i + 1) / n**2
    return lower, upper


def test_random_endpoints_follow_the_uniform_pair_law() -> None:
    # alpha = 1e-6 per chi-square test; the power check below rejects uniform lower bounds.
    alpha = 1e-6
    n_values, n_queries = 12, 20000
    d = Domain(["x"], [n_values])
    w = RangeQueries.random(d, "x", n_queries, rng=2024)
    lower_law, upper_law = _endpoint_law(n_values)
    lower_counts = np.bincount(w.lower[:, 0], minlength=n_values)
    upper_counts = np.bincount(w.upper[:, 0], minlength=n_values)
    assert chi_square_pvalue(lower_counts, lower_law) > alpha
    assert chi_square_pvalue(upper_counts, upper_law) > alpha
    # Power: the same counts are far from a uniform law for the lower end.
    assert chi_square_pvalue(lower_counts, np.full(n_values, 1 / n_values)) < alpha


def test_random_validates_before_drawing() -> None:
    d = Domain(["x"], [5])
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(ValueError, match="unknown attribute"):
        RangeQueries.random(d, "nope", 3, rng=gen)
    with pytest.raises(ValueError, match="n_queries"):
        RangeQueries.random(d, "x", 0, rng=gen)
    with pytest.raises(TypeError, match="n_queries"):
        RangeQueries.random(d, "x", 2.0, rng=gen)
    assert gen.bit_generator.state == state


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"lower": [[0]], "upper": [[5]]}, ValueError, "upper"),
        ({"lower": [[-1]], "upper": [[2]]}, ValueError, "lower"),
        ({"lower": [[3]], "upper": [[2]]}, ValueError, "lower must be <= upper"),
        ({"lower": [[0.0]], "upper": [[2]]}, TypeError, "lower"),
        ({"lower": [[True]], "upper": [[1]]}, TypeError, "lower"),
        ({"lower": [[0], [1]], "upper": [[2]]}, ValueError, "same shape"),
        ({"lower": [[0, 1]], "upper": [[2, 2]]}, ValueError, "shape"),
        ({"lower": np.zeros((0, 1), dtype=int), "upper": np.zeros((0, 1), dtype=int)}, ValueError, "at least one"),
        ({"lower": "0", "upper": [[1]]}, TypeError, "lower"),
    ],
)
def test_bad_bounds_rejected(kwargs, error, match) -> None:
    d = Domain(["x", "y"], [5, 3])
    with pytest.raises(error, match=match):
        RangeQueries(d, ["x"], **kwargs)


def test_bad_attributes_and_domain_rejected() -> None:
    d = Domain(["x", "y"], [5, 3])
    with pytest.raises(ValueError, match="unknown attribute"):
        RangeQueries(d, ["z"], [[0]], [[1]])
    with pytest.raises(ValueError, match="unique"):
        RangeQueries(d, ["x", "x"], [[0, 0]], [[1, 1]])
    with pytest.raises(ValueError, match="at least one attribute"):
        RangeQueries(d, [], [[0]], [[1]])
    with pytest.raises(TypeError, match="domain"):
        RangeQueries({"x": 5}, ["x"], [[0]], [[1]])
    with pytest.raises(TypeError, match="attributes"):
        RangeQueries(d, 3, [[0]], [[1]])


def test_bounds_are_read_only() -> None:
    w = RangeQueries(Domain(["x"], [5]), "x", [1], [3])
    with pytest.raises(ValueError):
        w.lower[0, 0] = 0


def test_large_domain_one_dimensional_and_boxes_match_brute_force() -> None:
    # 2^20 cells: 1-D ranges on a 1024-value attribute and boxes over three attributes.
    d = Domain(["a", "b", "c", "e"], [1024, 8, 16, 8])
    h = np.random.default_rng(5).random(d.size)
    hs = h.reshape(d.shape)
    for attrs in (["a"], ["e", "a", "c"], ["a", "b", "c", "e"]):
        w = RangeQueries.random(d, attrs, 3000, rng=6)
        answers = w.answer(h)
        axes = d.axes(attrs)
        for q in np.random.default_rng(7).choice(w.n_queries, size=12, replace=False):
            box = [slice(None)] * len(d)
            for j, a in enumerate(axes):
                box[a] = slice(int(w.lower[q, j]), int(w.upper[q, j]) + 1)
            assert answers[q] == pytest.approx(hs[tuple(box)].sum(), rel=1e-9)


def test_boxes_over_twenty_binary_attributes() -> None:
    # Inclusion-exclusion over 20 axes keeps only the corners of intervals not starting at 0.
    d = Domain([f"b{i}" for i in range(20)], [2] * 20)
    w = RangeQueries.random(d, d.attributes, 500, rng=8)
    h = np.random.default_rng(9).random(d.size)
    hs = h.reshape(d.shape)
    answers = w.answer(h)
    for q in range(0, 500, 50):
        box = tuple(slice(int(lo), int(hi) + 1) for lo, hi in zip(w.lower[q], w.upper[q]))
        assert answers[q] == pytest.approx(hs[box].sum(), rel=1e-9)
    weights = np.random.default_rng(10).normal(size=w.n_queries)
    transpose = w.answer_transpose(weights)
    probe = np.random.default_rng(11).random(d.size)
    # <A^T w, p> == <w, A p>: the transpose is checked against the answers on 2^20 cells.
    assert transpose @ probe == pytest.approx(weights @ w.answer(probe), rel=1e-9)


def test_multiply_group_touches_only_the_box() -> None:
    d = Domain(["x", "y"], [6, 4])
    w = RangeQueries(d, ["y", "x"], [[1, 2]], [[2, 3]])
    h = np.ones(d.size)
    w.multiply_group(h, 0, [np.log(3.0)])
    hs = h.reshape(d.shape)
    np.testing.assert_allclose(hs[2:4, 1:3], 3.0, rtol=1e-12)
    assert np.count_nonzero(hs != 1.0) == 4
    assert hs.sum() == pytest.approx(d.size + 2 * 4)


def test_multiply_group_refuses_copies_it_could_not_update() -> None:
    d = Domain(["x", "y"], [6, 4])
    w = RangeQueries(d, ["x"], [[1]], [[2]])
    with pytest.raises(TypeError, match="histogram"):
        w.multiply_group([1.0] * d.size, 0, [0.1])
    with pytest.raises(TypeError, match="float64"):
        w.multiply_group(np.ones(d.size, dtype=np.float32), 0, [0.1])
    with pytest.raises(ValueError, match="contiguous"):
        w.multiply_group(np.asfortranarray(np.ones(d.shape)), 0, [0.1])
    with pytest.raises(ValueError, match="log_factors"):
        w.multiply_group(np.ones(d.size), 0, [np.nan])


def test_corner_limit_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastmwem.workloads import ranges

    d = Domain([f"b{i}" for i in range(12)], [2] * 12)
    ones = np.ones((3, 12), dtype=int)
    assert RangeQueries(d, d.attributes, ones, ones).n_queries == 3  # 3 * 2^12 corners
    monkeypatch.setattr(ranges, "MAX_CORNERS", 3 * 2**12 - 1)
    with pytest.raises(ValueError, match="MAX_CORNERS"):
        RangeQueries(d, d.attributes, ones, ones)
