"""Every workload family runs through MWEM and its answers improve on the uniform start."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastmwem.data import Dataset, Domain
from fastmwem.release import mwem
from fastmwem.workloads import (
    Concatenate,
    LinearWorkload,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
)

DOMAIN = Domain(["a", "b", "c", "e", "f", "g"], [2, 2, 2, 2, 2, 2])


def _records() -> np.ndarray:
    # A skewed distribution: a few heavy cells, so that the uniform start answers badly.
    rng = np.random.default_rng(0)
    heavy = rng.integers(0, 2, size=(4, len(DOMAIN)))
    picks = rng.choice(4, size=3000, p=[0.55, 0.25, 0.15, 0.05])
    records = heavy[picks]
    noise = rng.random(records.shape) < 0.05
    return np.where(noise, 1 - records, records)


def _workloads() -> dict[str, LinearWorkload]:
    d = DOMAIN
    marg = Marginals.all_kway(d, 2)
    return {
        "marginals": marg,
        "ranges": RangeQueries.random(d, ["a", "c", "e"], 60, rng=1),
        "parities": Parities.all_kway(d, 2),
        "counting": RandomCountingQueries(d, 60, rng=2, density=0.2),
        "matrix_sparse": MatrixWorkload(d, sp.csr_array(marg.dense()), groups=marg.group_offsets),
        "concatenate": Concatenate([Marginals.all_kway(d, 1), RangeQueries.random(d, ["b", "f"], 20, rng=3)]),
    }


@pytest.mark.parametrize("name", list(_workloads()))
def test_mwem_improves_on_uniform(name: str) -> None:
    w = _workloads()[name]
    data = Dataset(_records(), DOMAIN)
    truth = w.answer(data.histogram())
    uniform = np.full(DOMAIN.size, 3000 / DOMAIN.size)
    before = np.abs(w.answer(uniform) - truth).mean()
    rounds = min(8, w.n_groups)
    result = mwem(data, w, epsilon=200.0, rounds=rounds, rng=4, total=3000)
    syn = np.asarray(result.histogram)
    assert syn.shape == (DOMAIN.size,) and np.all(np.isfinite(syn)) and np.all(syn >= 0)
    assert syn.sum() == pytest.approx(3000)
    after = np.abs(w.answer(syn) - truth).mean()
    # Nearly noiseless measurements (epsilon = 200): the fit must beat the uniform start clearly.
    assert after < 0.6 * before
