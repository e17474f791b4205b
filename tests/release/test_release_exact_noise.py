"""Every noisy number a release reports is an integer, or a multiple of its declared grid.

Raw floating-point Laplace noise can be read bit by bit (Mironov, CCS 2012): the measurements,
the record count and the counts of the offline PMW and the LP are drawn from exact integer
samplers instead. A real-valued workload's measurements lie on the public grid the report
declares.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.release import mwem
from fastmwem.release.pmw.offline import pmw_offline
from fastmwem.workloads import Marginals, MatrixWorkload

DOMAIN = Domain([f"x{i}" for i in range(5)], [2, 3, 2, 2, 4])


def _data(n: int = 2_000) -> Dataset:
    rng = np.random.default_rng(3)
    return Dataset(np.stack([rng.integers(0, s, n) for s in DOMAIN.shape], axis=1), DOMAIN)


def _released(report: dict) -> list:
    return [v for r in report["rounds"] for v in r["measurement"]]


@pytest.mark.parametrize("options", [
    {"privacy": "pure"},
    {"privacy": "zcdp", "delta": 1e-9},
    {"privacy": "pure", "measure": "query"},
    {"privacy": "pure", "selection": "lazy"},
])
def test_every_reported_measurement_is_an_integer(options):
    result = mwem(_data(), Marginals.all_kway(DOMAIN, 2), epsilon=1.0, rounds=6, rng=1, **options)
    report = json.loads(json.dumps(result.report()))
    values = _released(report)
    assert values and all(isinstance(v, int) for v in values)
    assert isinstance(report["record_count"], int)
    assert all("measurement_grid" not in r for r in report["rounds"])


def test_real_valued_measurements_lie_on_the_declared_grid():
    rng = np.random.default_rng(4)
    weights = rng.random((12, DOMAIN.size))  # real coefficients: answers are not integers
    result = mwem(_data(), MatrixWorkload(DOMAIN, weights), epsilon=1.0, rounds=4, rng=2)
    report = json.loads(json.dumps(result.report()))
    for r in report["rounds"]:
        grid = r["measurement_grid"]
        assert grid > 0 and np.log2(grid) == np.rint(np.log2(grid))  # a power of two
        steps = np.asarray(r["measurement"], dtype=np.float64) / grid
        assert np.all(steps == np.rint(steps))
    assert isinstance(report["record_count"], int)


def test_pmw_offline_count_is_an_integer():
    result = pmw_offline(_data(), Marginals.all_kway(DOMAIN, 2), epsilon=1.0, delta=1e-6, rounds=5, rng=5)
    assert float(result.total) == round(float(result.total))


@pytest.mark.slow
def test_cli_demo_report_holds_only_integer_measurements(tmp_path):
    # The audit's case: a default run on the bundled table, no seed.
    out, report = tmp_path / "s.csv", tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "fastmwem", "synth", "--demo", "--epsilon", "1",
                    "--out", str(out), "--report", str(report)], check=True,
                   capture_output=True)
    record = json.loads(report.read_text())
    values = _released(record)
    assert len(values) > 100 and all(isinstance(v, int) for v in values)
    assert record["private"] is True
