"""DuckDBSource keeps to its memory limit: explicit settings, marginals in bounded batches.

DuckDB holds a hash table per grouping set and thread for the whole query, so one GROUPING SETS
query over every 3-way marginal of 45 binary columns (14,190 sets, 3,000 rows) took 17 GB and
then ran out of memory, after the privacy charge.
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.data.sources._engine import (
    _MAX_GROUPED_COLUMNS,
    _RESULT_VALUES,
    SETS_PER_QUERY,
    _batches,
)
from tests.data.sources.conftest import write

pytestmark = pytest.mark.usefixtures("duckdb_installed")


def _duck(path, target, **kwargs):
    from fastmwem.data.sources.duckdb import DuckDBSource

    return DuckDBSource(path, target, **kwargs)


def _binary(tmp_path, columns: int, rows: int = 3000) -> tuple[str, Domain]:
    domain = Domain([f"x{i}" for i in range(columns)], [2] * columns)
    rng = np.random.default_rng(columns)
    frame = pd.DataFrame(rng.integers(0, 2, (rows, columns)), columns=domain.attributes)
    return write(frame, tmp_path / "binary.parquet"), domain


def _three_way_counts_match(path, domain, **settings) -> list[int]:
    """Count every 3-way marginal with DuckDB and memory; return the sets of each query."""
    sets = list(itertools.combinations(domain.attributes, 3))
    batches: list[int] = []
    with _duck(path, domain, **settings) as source:
        count = source._count

        def spy(batch):
            batches.append(len(batch))
            return count(batch)

        source._count = spy
        got = source.marginals(sets)
    want = Dataset.from_parquet(path, domain).marginals(sets)
    assert len(got) == len(want) == len(sets)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert sum(batches) == len(sets)
    return batches


def test_many_marginals_within_a_small_memory_limit(tmp_path):
    # 1,140 sets in one query needed more than 256 MB; in batches of 30 they fit
    path, domain = _binary(tmp_path, 20)
    batches = _three_way_counts_match(path, domain, memory_limit="256MB", threads=2)
    assert max(batches) == 30  # 244 MiB / (2 threads x 2 MiB per set, half the limit)


@pytest.mark.slow
def test_every_three_way_marginal_of_45_binary_columns(tmp_path):
    path, domain = _binary(tmp_path, 45)
    batches = _three_way_counts_match(path, domain, memory_limit="1GB", threads=2)
    assert max(batches) == 119  # 953 MiB / (2 threads x 2 MiB per set, half the limit)
    assert len(batches) == math.ceil(14_190 / 119)


def test_settings_are_explicit(tmp_path, monkeypatch):
    path, domain = _binary(tmp_path, 2, rows=10)
    monkeypatch.setenv("FASTMWEM_MEMORY_LIMIT", "1G")
    with _duck(path, domain) as source:
        limit, threads = source._con.execute(
            "SELECT current_setting('memory_limit'), current_setting('threads')").fetchall()[0]
    assert limit == "512.0 MiB"  # half of what fastmwem may use, not DuckDB's 80% of RAM
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert int(threads) == cores
    with _duck(path, domain, memory_limit="4GB", threads=1) as source:
        assert source._sets_per_query == SETS_PER_QUERY  # the memory allows more: the cap


def test_settings_duckdb_cannot_work_with_are_refused_on_open(tmp_path):
    path, domain = _binary(tmp_path, 2, rows=10)
    with pytest.raises(ValueError, match=r"memory_limit \(2.8 MiB\) is too small .* 1 thread"):
        _duck(path, domain, memory_limit="3MB", threads=1)
    with pytest.raises(ValueError, match="memory_limit='5000'"):
        _duck(path, domain, memory_limit="5000")
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    with pytest.raises(ValueError, match="is not a directory"):
        _duck(path, domain, temp_directory=not_a_directory)
    with _duck(path, domain, temp_directory=tmp_path / "new" / "spill") as source:
        assert len(source) == 10  # a directory DuckDB can make is fine


def test_batches_stay_within_their_limits():
    shape = [2] * 50 + [1000] * 10
    sets = [*itertools.combinations(range(50), 2), *itertools.combinations(range(50, 60), 2)]
    seen = []
    for batch in _batches(sets, shape, 10**9, 7):
        seen.extend(batch)
        columns = {j for s in batch for j in s}
        rows = sum(min(math.prod(shape[j] for j in s), 10**9) for s in batch)
        assert len(batch) <= 7 and len(columns) <= _MAX_GROUPED_COLUMNS
        assert len(batch) == 1 or rows * (2 * len(columns) + 1) <= _RESULT_VALUES
    assert seen == sets
    # a set above the result limit alone is its own batch; few records bound the rows
    big = [(50, 51, 52), (53, 54, 55)]
    assert list(_batches(big, shape, 10**9, 7)) == [[big[0]], [big[1]]]
    assert list(_batches(big, shape, 100, 7)) == [big]
