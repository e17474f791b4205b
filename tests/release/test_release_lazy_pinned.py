"""Lazy MWEM runs pinned to the outputs they released before the round was sped up.

The lazy round and the dense reuse passes were rewritten for speed (fewer array operations per
round, compiled helpers); the same seed must release exactly what it did before: the same
selected queries, the same noisy measurements and the same final histogram. The pins were
computed by the code before those changes. Selections and (integer) measurements are compared
exactly; the histogram through its values rounded to 6 decimals, as elsewhere in the suite.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from fastmwem import mwem
from fastmwem.data import Dataset, Domain
from fastmwem.indices import BitPackedIndex
from fastmwem.release.selection import LazySelection
from fastmwem.workloads import Marginals, RandomCountingQueries


def _data(domain: Domain, n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    cells = rng.choice(domain.size, size=n, p=rng.dirichlet(np.full(domain.size, 0.5)))
    return Dataset(np.column_stack(np.unravel_index(cells, domain.shape)), domain)


def _fingerprint(result) -> str:
    h = hashlib.sha256(np.asarray(result.selected, dtype=np.int64).tobytes())
    for values in result.measurements:
        h.update(np.asarray(values, dtype=np.float64).tobytes())
    h.update((np.round(np.asarray(result.histogram, dtype=np.float64), 6) + 0.0).tobytes())
    return h.hexdigest()[:16]


_BITPACKED = ([18322, 22660, 17509, 2002, 3176, 22781, 97, 11848, 19352, 27946, 1587, 20887,
               1103, 19141, 22981], "9070278dd9ef7978")


@pytest.mark.parametrize("backend", ["auto", "numpy"])
def test_a_bitpacked_lazy_run_releases_what_it_did_before(backend):
    domain = Domain([f"b{i}" for i in range(8)], [2] * 8)
    workload = RandomCountingQueries(domain, 30_000, rng=np.random.default_rng(21))
    index = BitPackedIndex(domain.size, backend=backend, progress=False)
    index.add_packed(workload.packed)
    result = mwem(_data(domain, 2000, 3), workload, epsilon=1.0, rounds=15, rng=7,
                  selection=LazySelection(index=index), progress=False, reuse_passes=20)
    assert list(result.selected) == _BITPACKED[0]
    assert _fingerprint(result) == _BITPACKED[1]


def test_a_default_lazy_run_releases_what_it_did_before():
    domain = Domain([f"b{i}" for i in range(8)], [2] * 8)
    workload = RandomCountingQueries(domain, 30_000, rng=np.random.default_rng(21))
    result = mwem(_data(domain, 2000, 3), workload, epsilon=1.0, rounds=15, rng=7,
                  selection="lazy", progress=False, reuse_passes=20)
    assert list(result.selected) == _BITPACKED[0]
    assert _fingerprint(result) == _BITPACKED[1]


def test_a_flat_index_lazy_run_releases_what_it_did_before():
    domain = Domain(["a", "b", "c"], [4, 4, 4])
    workload = RandomCountingQueries(domain, 3000, rng=np.random.default_rng(5))
    result = mwem(_data(domain, 500, 4), workload, epsilon=0.5, rounds=12, rng=8,
                  selection=LazySelection(index="flat"), progress=False, reuse_passes=20)
    assert list(result.selected) == [1387, 1401, 1549, 712, 2871, 1876, 1216, 1603, 2949, 1453,
                                     291, 1495]
    assert _fingerprint(result) == "d10bbb2fb695ae8b"


def test_a_group_mode_lazy_run_releases_what_it_did_before():
    domain = Domain([f"c{i}" for i in range(5)], [2, 3, 2, 2, 3])
    result = mwem(_data(domain, 800, 6), Marginals.all_kway(domain, 2), epsilon=1.0, rounds=6,
                  rng=9, selection="lazy", progress=False)
    assert list(result.selected) == [8, 7, 2, 5, 6, 3]
    assert _fingerprint(result) == "49e823702d548d68"
