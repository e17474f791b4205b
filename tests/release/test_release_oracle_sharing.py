"""The lazy selection's index is built once per plan and handed on explicitly, never cached.

A module-level cache of the last oracle once shared indices between independent releases; now
a plan binds its selection (the plan holds the built oracle), the run uses the plan's, and the
automatic defaults share the candidates they plan between their configurations.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem import Accountant, mwem
from fastmwem.data import Dataset, Domain
from fastmwem.release.mwem import MWEMConfig, mwem_with_defaults, plan_mwem, run_plan
from fastmwem.release.selection import oracles as _oracles
from fastmwem.workloads import Marginals, RandomCountingQueries


@pytest.fixture
def builds(monkeypatch):
    """The ``(workload, oracle)`` of every oracle built from now on."""
    built: list[tuple[object, object]] = []
    real = _oracles.workload_oracle

    def counted(workload, *args, **kwargs):
        oracle = real(workload, *args, **kwargs)
        built.append((workload, oracle))
        return oracle

    monkeypatch.setattr(_oracles, "workload_oracle", counted)
    return built


def _data(domain: Domain, n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    return Dataset(np.column_stack([rng.integers(0, s, n) for s in domain.shape]), domain)


def test_the_defaults_build_the_index_exactly_once(builds):
    domain = Domain(["a", "b", "c"], [4, 4, 2])
    workload = RandomCountingQueries(domain, 60, rng=np.random.default_rng(3))
    result = mwem_with_defaults(_data(domain, 400, 4), workload, epsilon=1.0,
                                rng=np.random.default_rng(5), selection="lazy")
    assert result.choices is not None and result.choices.rounds > 1
    assert len(builds) == 1 and builds[0][0] is workload


def test_the_defaults_build_one_index_per_candidate_set(builds):
    # Marginals on enough attributes: the defaults plan the workload's own groups and its
    # supersets, and must build each set's index once (the cache built five).
    domain = Domain([f"c{i}" for i in range(6)], [2, 3, 2, 2, 2, 2])
    workload = Marginals.all_kway(domain, 2)
    result = mwem_with_defaults(_data(domain, 800, 0), workload, epsilon=1.0, rng=9,
                                selection="lazy")
    assert result.choices is not None and result.choices.candidates == "supersets"
    built_over = [w for w, _ in builds]
    assert len(built_over) == 2 and built_over[0] is workload and built_over[1] is not workload


def test_independent_releases_do_not_share_an_index(builds):
    domain = Domain(["a", "b"], [4, 4])
    workload = RandomCountingQueries(domain, 50, rng=np.random.default_rng(3))
    dataset = _data(domain, 200, 4)
    for seed in (1, 2):
        mwem(dataset, workload, epsilon=1.0, rounds=3, rng=seed, selection="lazy")
    assert len(builds) == 2
    assert builds[0][1] is not builds[1][1]


def test_the_plan_holds_the_index_the_run_searches(builds):
    domain = Domain(["a", "b"], [4, 4])
    workload = RandomCountingQueries(domain, 50, rng=np.random.default_rng(3))
    config = MWEMConfig(epsilon=1.0, rounds=3, selection="lazy", index="flat")
    planned = plan_mwem(config, workload)
    assert len(builds) == 1
    assert planned.setup.selection._oracle(workload) is builds[0][1]
    assert config.round_selection._built is None  # the configuration itself stays unbound
    result = run_plan(planned, _data(domain, 200, 4), Accountant(epsilon=1.0),
                      np.random.default_rng(6))
    assert len(builds) == 1 and len(result.selected) == 3
