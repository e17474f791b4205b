"""``mwem_with_defaults``: one result holding its choices; ``mwem_auto`` its deprecated alias."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import fastmwem
from fastmwem.data import Dataset, Domain
from fastmwem.mechanisms.seeding import SeededRunWarning
from fastmwem.release import MWEMChoices, mwem_auto, mwem_with_defaults
from fastmwem.release.mwem.auto import check_options
from fastmwem.workloads import Marginals


@pytest.fixture
def table():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    rng = np.random.default_rng(0)
    data = Dataset(np.column_stack([rng.integers(0, n, 400) for n in domain.shape]), domain)
    return data, Marginals.all_kway(domain, 2)


def test_one_result_carries_the_choices_and_reports_them(table):
    data, work = table
    result = mwem_with_defaults(data, work, epsilon=1.0, rng=3)
    assert isinstance(result.choices, MWEMChoices)
    assert result.choices.rounds == sum(1 for r in result.trace if r.round > 0)
    report = json.loads(json.dumps(result.report()))
    assert report["choices"]["rounds"] == result.choices.rounds
    assert fastmwem.mwem_with_defaults is mwem_with_defaults


def test_plain_mwem_has_no_choices(table):
    data, work = table
    result = fastmwem.mwem(data, work, epsilon=1.0, rounds=2, rng=3)
    assert result.choices is None and "choices" not in result.report()


def test_mwem_auto_is_a_deprecated_alias_returning_the_old_pair(table):
    data, work = table
    with pytest.warns(DeprecationWarning, match="mwem_auto is deprecated.*mwem_with_defaults"):
        result, choices = mwem_auto(data, work, epsilon=1.0, rng=3)
    new = mwem_with_defaults(data, work, epsilon=1.0, rng=3)
    assert choices == new.choices == result.choices
    np.testing.assert_array_equal(result.histogram, new.histogram)


def test_check_options_refuses_bad_options_before_any_data():
    check_options(epsilon=1.0, rounds="adaptive", privacy="zcdp", delta=1e-9)
    with pytest.raises(ValueError, match="epsilon"):
        check_options(epsilon=0.0)
    with pytest.raises(ValueError):
        check_options(epsilon=1.0, rounds=0)


def test_the_alias_points_its_warnings_at_the_caller(table):
    data, work = table
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mwem_auto(data, work, epsilon=1.0, rng=3)
    categories = {w.category for w in record}
    assert categories == {DeprecationWarning, SeededRunWarning}
    assert all(w.filename == __file__ for w in record)
