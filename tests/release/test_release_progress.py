"""Progress of an MWEM run: its final phase has a bar, estimates grow with the public sizes."""

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.release import MWEMConfig, mwem, mwem_resources
from fastmwem.workloads import Marginals

SMALL = Domain([f"x{i}" for i in range(6)], [2] * 6)
WIDE = Domain([f"a{i}" for i in range(12)], [10] * 12)


def _data():
    return Dataset(np.random.default_rng(0).integers(0, 2, (200, 6)), SMALL)


@pytest.mark.parametrize("options, shown", [
    ({"final_passes": 4}, "MWEM final passes (~"),
    ({"estimator": "final-fit"}, "MWEM final fit (~"),
])
def test_the_final_phase_has_a_bar_after_the_rounds(capsys, options, shown):
    mwem(_data(), Marginals.all_kway(SMALL, 2), epsilon=1, rounds=3, rng=0, progress=True,
         **options)
    err = capsys.readouterr().err
    assert "MWEM rounds (~" in err and "in all)" in err
    assert shown in err and err.index(shown) > err.index("MWEM rounds")


def test_without_progress_nothing_is_written(capsys):
    mwem(_data(), Marginals.all_kway(SMALL, 2), epsilon=1, rounds=3, rng=0, progress=False,
         final_passes=4)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("model", ["dense", "junction-tree"])
def test_estimates_grow_with_the_sizes_and_include_the_final_phase(model):
    domain = SMALL if model == "dense" else WIDE
    w2, w3 = Marginals.all_kway(domain, 2), Marginals.all_kway(domain, 3)

    def seconds(workload, **options):
        return mwem_resources(MWEMConfig(epsilon=1, **options), workload, model=model)

    base = seconds(w2, rounds=5)
    assert seconds(w2, rounds=10).seconds > base.seconds
    assert seconds(w3, rounds=5).seconds > base.seconds
    fit = seconds(w2, rounds=5, estimator="final-fit")
    assert fit.final_seconds > 0 and fit.seconds > fit.final_seconds
    passes = seconds(w2, rounds=5, final_passes=10)
    assert passes.final_seconds > 0
    assert seconds(w2, rounds=10, final_passes=10).final_seconds > passes.final_seconds
    if model != "dense":  # FINAL_PASSES_FACTORED by default
        assert base.final_seconds > 0


def test_sampling_estimate_grows_with_the_rows_and_with_matching():
    result = mwem(_data(), Marginals.all_kway(SMALL, 2), epsilon=1, rounds=2, rng=0)
    small = result.sample_seconds(1000, sampling="systematic")
    assert 0 < small < result.sample_seconds(10**5, sampling="systematic")
    assert result.sample_seconds(1000, sampling="matched") > small
    assert (result.sample_seconds(10**5, sampling="matched")
            > result.sample_seconds(1000, sampling="matched"))
