"""The contract every Workload implementation passes.

To add an implementation, add a factory to ``FACTORIES``: a function of a numpy Generator that
builds a small workload on a small random domain. Every test below then runs on it.

The reference for each workload is its matrix rebuilt from ``answer`` on the unit histograms
(column ``x`` is ``answer(e_x)``), which does not go through ``row``/``answer_transpose``; the
implementation-specific tests in tests/workloads/ compare against brute force from the codes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import scipy.sparse as sp

from fastmwem import workloads
from fastmwem.data.domain import Domain
from fastmwem.indices import TopKOracle
from fastmwem.workloads import (
    AllIntervals,
    Concatenate,
    LinearWorkload,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
    Workload,
    cuboids,
)


def _domain(rng: np.random.Generator, *, binary: bool = False, min_attrs: int = 2) -> Domain:
    d = int(rng.integers(min_attrs, 5))
    sizes = [2] * d if binary else [int(s) for s in rng.integers(1, 5, size=d)]
    return Domain([f"x{i}" for i in range(d)], sizes)


def _marginals_all_kway(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    return Marginals.all_kway(d, int(rng.integers(1, len(d) + 1)))


def _marginals_mixed(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng, min_attrs=3)
    a = list(d.attributes)
    return Marginals(d, [[a[-1]], [a[2], a[0]], a[:2]])


def _random_groups(rng: np.random.Generator, n: int) -> list[int]:
    cuts = sorted(rng.choice(np.arange(1, n), size=min(3, n - 1), replace=False).tolist())
    return [0, *cuts, n]


def _matrix_dense(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    n = int(rng.integers(2, 12))
    m = rng.normal(size=(n, d.size)) * (rng.random((n, d.size)) < 0.6)
    return MatrixWorkload(d, m, groups=_random_groups(rng, n))


def _matrix_dense_single(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    return MatrixWorkload(d, rng.integers(-3, 4, size=(7, d.size)))


def _matrix_sparse(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    n = int(rng.integers(2, 12))
    m = sp.random(n, d.size, density=0.4, random_state=int(rng.integers(1 << 30)), format="coo")
    m.data = m.data * 2 - 1
    return MatrixWorkload(d, m, groups=_random_groups(rng, n))


def _ranges_1d(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    return RangeQueries.random(d, d.attributes[-1], 9, rng=rng)


def _ranges_box(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng, min_attrs=3)
    # Attributes deliberately out of domain order.
    return RangeQueries.random(d, [d.attributes[2], d.attributes[0]], 12, rng=rng)


def _ranges_all(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    return RangeQueries.random(d, list(reversed(d.attributes)), 15, rng=rng)


def _intervals(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    return AllIntervals(d, d.attributes[int(rng.integers(len(d)))])


def _parities_kway(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng, binary=True)
    return Parities.all_kway(d, int(rng.integers(1, len(d) + 1)))


def _parities_mixed(rng: np.random.Generator) -> LinearWorkload:
    # One non-binary attribute that no subset names (it is summed over).
    d = Domain(["a", "b", "c", "e"], [2, int(rng.integers(3, 5)), 2, 2])
    return Parities(d, [["e"], ["a", "c"], [], ["c", "a", "e"]])


def _counting_half(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    return RandomCountingQueries(d, 10, rng=rng)


def _counting_sparse(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    return RandomCountingQueries(d, 40, rng=rng, density=0.2)


def _cuboids(rng: np.random.Generator) -> LinearWorkload:
    return cuboids(_domain(rng))


def _concatenate(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng, binary=True)
    m = rng.integers(-2, 3, size=(5, d.size))
    return Concatenate([
        Marginals.all_kway(d, 2),
        RangeQueries.random(d, d.attributes[:2], 4, rng=rng),
        MatrixWorkload(d, m, groups=[0, 2, 5]),
        Parities.all_kway(d, 1),
        RandomCountingQueries(d, 3, rng=rng),
        AllIntervals(d, d.attributes[0]),
    ])


def _concatenate_single(rng: np.random.Generator) -> LinearWorkload:
    d = _domain(rng)
    return Concatenate([Marginals.all_kway(d, 1)])


FACTORIES: dict[str, Callable[[np.random.Generator], LinearWorkload]] = {
    "marginals_all_kway": _marginals_all_kway,
    "marginals_mixed": _marginals_mixed,
    "matrix_dense": _matrix_dense,
    "matrix_dense_single": _matrix_dense_single,
    "matrix_sparse": _matrix_sparse,
    "ranges_1d": _ranges_1d,
    "ranges_box": _ranges_box,
    "ranges_all_attributes": _ranges_all,
    "intervals": _intervals,
    "parities_kway": _parities_kway,
    "parities_mixed": _parities_mixed,
    "counting_half": _counting_half,
    "counting_sparse": _counting_sparse,
    "cuboids": _cuboids,
    "concatenate": _concatenate,
    "concatenate_single": _concatenate_single,
}

CASES = [pytest.param((name, seed), id=f"{name}-{seed}") for name in FACTORIES for seed in (0, 1, 2)]


@pytest.fixture(params=CASES)
def case(request: pytest.FixtureRequest) -> tuple[LinearWorkload, np.ndarray, np.random.Generator]:
    name, seed = request.param
    rng = np.random.default_rng(seed)
    w = FACTORIES[name](rng)
    reference = np.column_stack([w.answer(np.eye(1, w.domain.size, x).ravel()) for x in range(w.domain.size)])
    return w, reference, rng


def test_every_exported_workload_class_has_a_factory() -> None:
    """A new workload exported from fastmwem.workloads must be added to FACTORIES."""
    exported = {
        obj for obj in (getattr(workloads, name) for name in workloads.__all__)
        if isinstance(obj, type) and issubclass(obj, LinearWorkload) and obj is not LinearWorkload
    }
    covered = {type(f(np.random.default_rng(0))) for f in FACTORIES.values()}
    assert exported == covered
    assert {Marginals, MatrixWorkload, RangeQueries, Parities, RandomCountingQueries, Concatenate} <= covered


def test_protocol_and_sizes(case) -> None:
    w, ref, _ = case
    assert isinstance(w, Workload)
    assert ref.shape == (w.n_queries, w.domain.size)
    offsets = np.asarray(w.group_offsets)
    assert offsets[0] == 0 and offsets[-1] == w.n_queries
    assert np.all(np.diff(offsets) > 0)
    assert w.n_groups == offsets.size - 1 == np.asarray(w.group_sensitivity).size
    assert len(w) == w.n_queries


def test_row_and_dense_match_answers_on_unit_histograms(case) -> None:
    w, ref, _ = case
    for q in range(w.n_queries):
        np.testing.assert_allclose(w.row(q), ref[q], atol=1e-12)
    np.testing.assert_allclose(w.dense(), ref, atol=1e-12)


def test_answer_is_dense_times_histogram(case) -> None:
    w, ref, rng = case
    dense = w.dense()
    for _ in range(3):
        h = rng.random(w.domain.size) * 10
        np.testing.assert_allclose(w.answer(h), dense @ h, rtol=1e-10, atol=1e-10)
        # A histogram may also be given in the domain's shape.
        np.testing.assert_allclose(w.answer(h.reshape(w.domain.shape)), dense @ h, rtol=1e-10, atol=1e-10)


def test_answer_group_matches_answer(case) -> None:
    w, _, rng = case
    h = rng.random(w.domain.size)
    full = w.answer(h)
    for g in range(w.n_groups):
        np.testing.assert_allclose(w.answer_group(h, g), full[w.group_queries(g)], rtol=1e-10, atol=1e-12)


def test_answer_transpose_is_dense_transpose_times_weights(case) -> None:
    w, _, rng = case
    dense = w.dense()
    weights = rng.normal(size=w.n_queries)
    np.testing.assert_allclose(w.answer_transpose(weights), dense.T @ weights, rtol=1e-10, atol=1e-10)


def test_multiply_group_is_exponentiated_transpose(case) -> None:
    w, _, rng = case
    dense = w.dense()
    for g in range(w.n_groups):
        rows = w.group_queries(g)
        log_factors = rng.normal(size=rows.stop - rows.start)
        h = rng.random(w.domain.size) + 0.1
        expected = h * np.exp(dense[rows].T @ log_factors)
        w.multiply_group(h, g, log_factors)
        np.testing.assert_allclose(h, expected, rtol=1e-12)
    # In place on a histogram held in the domain's shape too.
    h = np.ones(w.domain.shape)
    w.multiply_group(h, 0, np.full(w.group_sizes()[0], 0.5))
    np.testing.assert_allclose(h.ravel(), np.exp(0.5 * dense[w.group_queries(0)].sum(axis=0)), rtol=1e-12)


def test_sensitivities_match_dense(case) -> None:
    w, _, _ = case
    dense = np.abs(w.dense())
    assert w.query_sensitivity == pytest.approx(dense.max())
    expected = [dense[w.group_queries(g)].sum(axis=0).max() for g in range(w.n_groups)]
    np.testing.assert_allclose(w.group_sensitivity, expected, rtol=1e-12)


def test_descriptions_are_strings(case) -> None:
    w, _, _ = case
    for q in range(w.n_queries):
        assert isinstance(w.describe(q), str) and w.describe(q)
    for g in range(w.n_groups):
        assert isinstance(w.describe_group(g), str) and w.describe_group(g)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_answer_rejects_non_finite_histograms(case, bad: float) -> None:
    w, _, _ = case
    h = np.ones(w.domain.size)
    h[-1] = bad
    with pytest.raises(ValueError, match="histogram"):
        w.answer(h)


def test_bad_histogram_shapes_rejected(case) -> None:
    w, _, _ = case
    d = w.domain
    others = [np.ones(d.size + 1), np.ones(max(d.size - 1, 0)), np.ones((d.size, 1)), np.ones((1, d.size))]
    for h in others:
        with pytest.raises(ValueError):
            w.answer(h)
        with pytest.raises(ValueError):
            w.answer_group(h, 0)
    for h in others[:2]:
        with pytest.raises(ValueError):
            w.multiply_group(h, 0, np.zeros(w.group_sizes()[0]))


def test_histogram_of_another_domain_rejected(case) -> None:
    w, _, _ = case
    d = w.domain
    # Same number of cells, other shape: e.g. the attributes in another order, or one more axis.
    other_shapes = [tuple(reversed(d.shape)) + (2,), (*d.shape, 3)]
    if len(set(d.shape)) > 1:
        other_shapes.append(tuple(reversed(d.shape)))
    for shape in other_shapes:
        h = np.ones(shape)
        with pytest.raises(ValueError):
            w.answer(h)


def test_bad_weights_and_indices_rejected(case) -> None:
    w, _, _ = case
    with pytest.raises(ValueError):
        w.answer_transpose(np.ones(w.n_queries + 1))
    with pytest.raises(ValueError):
        w.row(w.n_queries)
    with pytest.raises(ValueError):
        w.answer_group(np.ones(w.domain.size), w.n_groups)
    with pytest.raises(TypeError):
        w.row(1.5)
    with pytest.raises(ValueError):
        w.multiply_group(np.ones(w.domain.size), 0, np.zeros(w.group_sizes()[0] + 1))


def test_answer_does_not_modify_its_input(case) -> None:
    w, _, rng = case
    h = rng.random(w.domain.size)
    before = h.copy()
    w.answer(h)
    for g in range(w.n_groups):
        w.answer_group(h, g)
    np.testing.assert_array_equal(h, before)


def test_linearity_of_answers(case) -> None:
    w, _, rng = case
    a, b = rng.random((2, w.domain.size))
    np.testing.assert_allclose(w.answer(2 * a - 3 * b), 2 * w.answer(a) - 3 * w.answer(b), rtol=1e-9, atol=1e-9)



def _vectors(rng: np.random.Generator, size: int) -> list[np.ndarray]:
    """Histograms and signed difference vectors, including ties (all equal, zero, one spike)."""
    spike = np.zeros(size)
    spike[rng.integers(size)] = 2.0
    return [rng.random(size), rng.normal(size=size), np.ones(size), np.zeros(size), spike,
            np.where(np.arange(size) % 2 == 0, 1.0, -1.0), rng.integers(-1, 2, size=size) * 1.0]


def test_answer_queries_matches_answer(case) -> None:
    w, _, rng = case
    for h in _vectors(rng, w.domain.size):
        full = w.answer(h)
        ids = rng.integers(0, w.n_queries, size=7)  # repeats allowed
        np.testing.assert_allclose(w.answer_queries(h, ids), full[ids], rtol=1e-10, atol=1e-10)
        every = np.arange(w.n_queries)
        np.testing.assert_allclose(w.answer_queries(h, every), full, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(w.answer_queries(h.reshape(w.domain.shape), every[::-1].reshape(1, -1)),
                                   full[None, ::-1], rtol=1e-10, atol=1e-10)
        for q in (0, w.n_queries - 1):
            assert w.answer_queries(h, [q]) == pytest.approx(full[q], rel=1e-10, abs=1e-10)
    assert w.answer_queries(np.ones(w.domain.size), np.array([], dtype=np.int64)).shape == (0,)


def test_answer_queries_rejects_bad_input(case) -> None:
    w, _, _ = case
    h = np.ones(w.domain.size)
    for bad in ([w.n_queries], [-1], [0, w.n_queries + 3]):
        with pytest.raises(ValueError, match="ids"):
            w.answer_queries(h, bad)
    for bad in ([0.0], [True], "0"):
        with pytest.raises(TypeError, match="ids"):
            w.answer_queries(h, bad)
    bad_h = h.copy()
    bad_h[0] = np.nan
    with pytest.raises(ValueError, match="histogram"):
        w.answer_queries(bad_h, [0])
    with pytest.raises(ValueError, match="histogram"):
        w.answer_queries(np.ones(w.domain.size + 1), [0])


def test_top_k_oracle_is_exact_for_every_k(case) -> None:
    """The workload's oracle against a brute-force scan of its dense rows, k = 1 .. m + 1."""
    w, _, rng = case
    oracle = w.top_k_oracle()
    assert isinstance(oracle, TopKOracle)
    assert oracle.exact and oracle.certified_gap == 0.0
    assert (oracle.n_keys, oracle.dimension) == (w.n_queries, w.domain.size)
    dense = w.dense()
    for v in _vectors(rng, w.domain.size):
        truth = np.sort(dense @ v)[::-1]
        for k in range(1, w.n_queries + 2):
            scores, ids = oracle.search(np.stack([v, -v]), k)  # the lazy mechanism's batch
            n = min(k, w.n_queries)
            assert np.unique(ids[0, :n]).size == n and np.all(ids[:, n:] == -1)
            np.testing.assert_allclose(scores[0, :n], truth[:n], rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(scores[0, :n], dense[ids[0, :n]] @ v, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(scores[1, :n], np.sort(-(dense @ v))[::-1][:n], rtol=1e-9, atol=1e-9)
            # Tail scores round exactly as the top-k scores do (the lazy sampler compares them).
            np.testing.assert_array_equal(oracle.score(ids[0, :n], v), scores[0, :n])
