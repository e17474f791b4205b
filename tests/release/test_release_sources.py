"""mwem() reads a query-engine source as it reads a Dataset: same counts, same result."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fastmwem.accounting import Accountant
from fastmwem.data import Dataset, Domain
from fastmwem.release.mwem import mwem
from fastmwem.workloads import Marginals
from tests._engines import require


def test_mwem_on_duckdb_equals_mwem_on_memory(tmp_path):
    require("duckdb")
    from fastmwem.data.sources.duckdb import DuckDBSource

    domain = Domain(["a", "b", "c"], [3, 2, 4])
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({a: rng.integers(0, s, 500) for a, s in zip(domain.attributes,
                                                                      domain.shape)})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    workload = Marginals.all_kway(domain, 2)
    with pytest.warns(Warning):  # seeded runs warn
        want = mwem(Dataset.from_csv(path, domain), workload, epsilon=1.0, rounds=3, rng=4)
    with DuckDBSource(path, domain) as source, pytest.warns(Warning):
        got = mwem(source, workload, epsilon=1.0, rounds=3, rng=4)
    np.testing.assert_array_equal(got.histogram, want.histogram)
    assert got.selected == want.selected


def test_bad_engine_data_spends_nothing(tmp_path):
    require("duckdb")
    from fastmwem.data.sources import open_source

    domain = Domain(["a"], [2])
    path = tmp_path / "bad.csv"
    path.write_text("a\n0\n5\n")
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(ValueError, match="column 'a' has 1 values outside 0..1, first rows \\[1\\]"):
        source = open_source(path, domain, "duckdb")
        mwem(source, Marginals.all_kway(domain, 1), epsilon=1.0, accountant=accountant)
    assert accountant.ledger == ()


def _nan_file(path) -> None:
    values = np.tile(np.array([0.0, 1.0]), 600)
    values[1197] = np.nan  # Parquet statistics leave NaN out: max says 1
    pq = require("pyarrow.parquet")
    pa = require("pyarrow")
    pq.write_table(pa.table({"a": values}), path, row_group_size=300)


def _lying_file(path) -> None:
    from tests.data.sources.conftest import forge_statistics

    values = np.tile(np.arange(2), 600)
    values[700] = 987654321
    pq = require("pyarrow.parquet")
    pa = require("pyarrow")
    pq.write_table(pa.table({"a": values}), path, row_group_size=300)
    forge_statistics(path, 987654321, 1)  # the statistics claim max 1


@pytest.mark.parametrize("make", [_nan_file, _lying_file], ids=["nan", "lying-statistics"])
def test_bad_values_parquet_statistics_hide_spend_nothing(tmp_path, make):
    # refused when opened, as the memory engine refuses them, so mwem never charges
    require("duckdb")
    from fastmwem.data.sources import open_source

    domain = Domain(["a"], [2])
    path = str(tmp_path / "bad.parquet")
    make(path)
    with pytest.raises(ValueError) as want:
        Dataset.from_parquet(path, domain)
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(ValueError) as got:
        source = open_source(path, domain, "duckdb")
        mwem(source, Marginals.all_kway(domain, 1), epsilon=1.0, accountant=accountant)
    assert str(got.value) == str(want.value)
    assert accountant.ledger == ()
    assert accountant.spent().epsilon == 0
