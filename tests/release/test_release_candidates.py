"""Candidate sets: the closure (sub-marginals) and the supersets of a marginal workload."""

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.release import mwem
from fastmwem.release.selection.candidates import superset_groups, superset_workload
from fastmwem.workloads import Marginals, Parities

BINARY = Domain([f"b{i}" for i in range(6)], [2] * 6)


def test_supersets_of_all_3_way_marginals_are_all_5_way_ones_after_the_workload():
    w = Marginals.all_kway(BINARY, 3)
    found = superset_workload(w)
    assert found.n_groups == w.n_groups + 6  # C(6, 5) = 6
    assert [found.group_attributes(g) for g in range(w.n_groups)] == list(w.axes)
    extra = [found.group_attributes(g) for g in range(w.n_groups, found.n_groups)]
    assert all(len(axes) == 5 for axes in extra) and len(set(extra)) == 6
    mask = superset_groups(found, w)
    assert not mask[:w.n_groups].any() and mask[w.n_groups:].all()


def test_supersets_contain_a_workload_marginal():
    w = Marginals(BINARY, [("b0", "b1")])
    found = superset_workload(w)
    extra = [set(found.group_attributes(g)) for g in range(1, found.n_groups)]
    assert len(extra) == 6 and all({0, 1} < axes and len(axes) == 4 for axes in extra)


@pytest.mark.parametrize("workload", [
    Marginals.all_kway(Domain(["a", "b", "c", "d", "e"], [3] * 5), 3),  # 9x the cells
    Marginals.all_kway(Domain(["a", "b", "c", "d"], [2] * 4), 3),  # no 5 attributes
    Parities(BINARY, [("b0", "b1", "b2"), ("b3",)]),  # no marginal groups
])
def test_no_supersets_where_they_do_not_fit(workload):
    assert superset_workload(workload) is None


def test_mwem_with_superset_candidates_measures_supersets_only():
    rng = np.random.default_rng(0)
    ds = Dataset(rng.integers(0, 2, (1000, 6)), BINARY)
    w = Marginals.all_kway(BINARY, 3)
    result = mwem(ds, w, epsilon=1.0, rounds=4, rng=np.random.default_rng(1),
                  candidates="supersets")
    rounds = result.report()["rounds"]
    assert len(rounds) == 4 and all(r["description"].count(",") == 4 for r in rounds)
    assert result.answer(w).shape == (w.n_queries,)


def test_mwem_refuses_superset_candidates_without_supersets():
    domain = Domain(["a", "b", "c", "d", "e"], [3] * 5)
    ds = Dataset(np.zeros((10, 5), dtype=np.int64), domain)
    with pytest.raises(ValueError, match="candidates='supersets' needs"):
        mwem(ds, Marginals.all_kway(domain, 3), epsilon=1.0, rounds=2,
             rng=np.random.default_rng(0), candidates="supersets")


@pytest.mark.parametrize("options", [{"rounds": None}, {"rounds": 2, "model": "junction-tree"}])
def test_superset_candidates_need_a_dense_model_and_fixed_rounds(options):
    ds = Dataset(np.zeros((10, 6), dtype=np.int64), BINARY)
    with pytest.raises(ValueError, match="needs a dense model and fixed rounds"):
        mwem(ds, Marginals.all_kway(BINARY, 3), epsilon=1.0, rng=np.random.default_rng(0),
             candidates="supersets", **options)
