"""MWEM estimates its memory and time from public parameters and refuses what cannot fit."""

import numpy as np
import pytest

from fastmwem._validation import MEMORY_LIMIT_ENV, ResourceLimitError
from fastmwem.accounting import Accountant
from fastmwem.data import Dataset, Domain
from fastmwem.release import MWEMConfig, mwem, mwem_resources
from fastmwem.release.mwem import choose_model
from fastmwem.workloads import Marginals, RandomCountingQueries

SMALL = Domain([f"x{i}" for i in range(6)], [2] * 6)
BIG = Domain([f"a{i}" for i in range(26)], [2] * 26)  # 2**26 cells, the dense limit


class Unread:
    """A dataset that must never be read."""

    def __init__(self, domain):
        self.domain = domain

    def histogram(self):  # pragma: no cover - reaching it fails the test
        raise AssertionError("the data was read")

    def marginal(self, attrs):  # pragma: no cover - reaching it fails the test
        raise AssertionError("the data was read")


def test_estimate_depends_on_public_sizes_only():
    w = Marginals.all_kway(SMALL, 2)
    small = mwem_resources(MWEMConfig(epsilon=1, rounds=5, reuse_passes=2), w)
    assert (small.cells, small.queries, small.groups) == (64, 60, 15)
    assert small.max_updates == 5 + 2 * 5 * 6 // 2
    more = mwem_resources(MWEMConfig(epsilon=1, rounds=10, reuse_passes=2), w)
    assert more.max_updates > small.max_updates and more.seconds > small.seconds
    average = mwem_resources(MWEMConfig(epsilon=1, rounds=5, output="average"), w)
    assert average.memory_bytes > small.memory_bytes


def test_the_2_to_the_26_cell_case_is_estimated_before_anything_is_allocated(monkeypatch):
    """It used to be killed by the kernel at 24 GB after 9.5 minutes."""
    w = Marginals.all_kway(BIG, 3)
    est = mwem_resources(MWEMConfig(epsilon=1, rounds=25, reuse_passes=20), w)
    assert 2 * 2**30 < est.memory_bytes < 8 * 2**30  # a handful of 512 MB histograms
    assert est.max_updates == 25 + 20 * 25 * 26 // 2
    assert "GiB of memory" in est.describe() and "6525 updates" in est.describe()
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "2G")
    acc = Accountant(epsilon=1)
    with pytest.raises(ResourceLimitError, match=r"MWEM \(dense\) on 67108864 cells would need "
                                                 r"about \d+\.\d GB of memory, more than"):
        mwem(Unread(BIG), w, epsilon=1, rounds=25, accountant=acc, model="dense")
    assert acc.ledger == ()
    # By itself MWEM keeps a factored model when the dense one does not fit.
    assert choose_model(MWEMConfig(epsilon=1, rounds=25), w) == "junction-tree"


def test_memory_limit_argument_refuses_before_the_charge():
    acc = Accountant(epsilon=1)
    w = Marginals.all_kway(SMALL, 2)
    with pytest.raises(ResourceLimitError, match=r"more than the memory limit \(1000 bytes\)"):
        mwem(Unread(SMALL), w, epsilon=1, rounds=3, accountant=acc, memory_limit=1000)
    assert acc.ledger == ()
    with pytest.raises(ValueError, match="memory_limit"):
        mwem(Unread(SMALL), w, epsilon=1, rounds=3, memory_limit=0)


def test_many_queries_count_against_memory(monkeypatch):
    w = RandomCountingQueries(SMALL, 200_000, rng=0)
    assert mwem_resources(MWEMConfig(epsilon=1), w).memory_bytes > 200_000 * 8 * 5
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "8M")
    with pytest.raises(ResourceLimitError):
        mwem(Unread(SMALL), w, epsilon=1, rounds=2)


def test_progress_bar_shows_the_estimate(capsys):
    rng = np.random.default_rng(0)
    ds = Dataset(rng.integers(0, 2, (200, 6)), SMALL)
    mwem(ds, Marginals.all_kway(SMALL, 2), epsilon=1, rounds=3, rng=0, progress=True)
    err = capsys.readouterr().err
    assert "MWEM rounds (~" in err and "round" in err


def test_sampling_more_records_than_fit_is_refused_before_drawing(monkeypatch):
    rng = np.random.default_rng(0)
    ds = Dataset(rng.integers(0, 2, (200, 6)), SMALL)
    result = mwem(ds, Marginals.all_kway(SMALL, 2), epsilon=1, rounds=2, rng=0)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1G")
    with pytest.raises(ResourceLimitError, match="sampling 1000000000000 records would need"):
        result.sample(10**12, rng=0)
    assert len(result.sample(1000, rng=0)) == 1000


def test_progress_shows_by_default_for_long_runs_on_a_terminal(capsys, monkeypatch):
    import sys

    from fastmwem.release.mwem import run as module
    rng = np.random.default_rng(0)
    ds = Dataset(rng.integers(0, 2, (200, 6)), SMALL)
    w = Marginals.all_kway(SMALL, 2)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    mwem(ds, w, epsilon=1, rounds=2, rng=0)  # estimated well under PROGRESS_SECONDS
    assert "MWEM" not in capsys.readouterr().err
    monkeypatch.setattr(module, "PROGRESS_SECONDS", 0.0)
    mwem(ds, w, epsilon=1, rounds=2, rng=0)
    assert "MWEM rounds (~" in capsys.readouterr().err
