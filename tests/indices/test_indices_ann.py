"""The optional ANN adapters: faiss Flat is exact; IVF/HNSW/hnswlib meet a recall@k floor.

Recall floors are measured on clustered keys, where these graphs work (on random 0/1 keys they do
not: see benchmarks/lazy_selection.py). Skipped when the extra "ann" is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import make_index, mips_query_to_l2, mips_to_l2


def _clustered(rng, n=5000, d=32, clusters=50):
    centers = rng.normal(size=(clusters, d))
    keys = centers[rng.integers(0, clusters, n)] + 0.3 * rng.normal(size=(n, d))
    queries = centers[:20] + 0.1 * rng.normal(size=(20, d))
    return keys, queries


def _recall(index, truth, queries, k):
    got = []
    for q in queries:
        _, a = truth.search(q, k)
        _, b = index.search(q, k)
        got.append(np.intersect1d(a[0], b[0]).size / k)
    return float(np.mean(got))


# (spec, options, floor on mean recall@50); measured 1.0, 0.91, 0.93 at seed 0.
APPROXIMATE = [
    ("faiss:IVF16,Flat", {"params": {"nprobe": 4}}, 0.9),
    ("faiss:HNSW16", {"params": {"efSearch": 64}}, 0.7),
    ("hnswlib", {"ef": 64}, 0.7),
]


@pytest.mark.parametrize(("spec", "options", "floor"), APPROXIMATE, ids=[a[0] for a in APPROXIMATE])
def test_recall_floor_on_clustered_keys(spec, options, floor):
    pytest.importorskip(spec.split(":")[0])
    rng = np.random.default_rng(0)
    keys, queries = _clustered(rng)
    flat = make_index("flat", keys)
    index = make_index(spec, keys, progress=False, **options)
    assert not index.exact
    assert _recall(index, flat, queries, 50) >= floor
    # whatever the graph returns is scored exactly, best first
    scores, ids = index.search(queries[0], 50)
    np.testing.assert_allclose(scores[0], keys[ids[0]] @ queries[0], rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(scores[0]) <= 0)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_faiss_flat_matches_flat_on_binary_keys_with_ties(metric):
    pytest.importorskip("faiss")
    rng = np.random.default_rng(1)
    keys = (rng.random((3000, 24)) < 0.5).astype(np.float64)
    flat = make_index("flat", keys)
    index = make_index("faiss:Flat", keys, metric=metric, progress=False)
    assert index.exact == (metric == "ip")
    # all-ones and one-hot queries tie hundreds of keys at the k-th score: the retrieval deepens
    for v in (rng.normal(size=24), np.ones(24), np.eye(24)[3], 1.0 + 1e-11 * np.arange(24)):
        for k in (1, 40, 500):
            a, _ = flat.search(v, k)
            b, ids = index.search(v, k)
            # (the two round a sum in different orders: equal to a few ulps)
            if metric == "ip":
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(b[0], index.score(ids[0], v))


def test_mips_to_l2_preserves_the_order():
    rng = np.random.default_rng(2)
    keys = rng.normal(size=(400, 7))
    augmented, bound = mips_to_l2(keys)
    assert augmented.shape == (400, 8)
    np.testing.assert_allclose(np.linalg.norm(augmented, axis=1), bound)
    v = rng.normal(size=7)
    q = mips_query_to_l2(v)[0]
    dist = ((augmented - q) ** 2).sum(axis=1)
    np.testing.assert_allclose(dist, bound**2 + v @ v - 2 * keys @ v, rtol=1e-9, atol=1e-9)
    assert np.array_equal(np.argsort(dist)[:20], np.argsort(-(keys @ v))[:20])
    with pytest.raises(ValueError, match="max_norm"):
        mips_to_l2(keys, max_norm=0.5)
