"""The MarginalSource protocol: Dataset meets it; attribute sets are checked before counting."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.data.sources import MarginalSource, check_attribute_sets
from fastmwem.data.sources.base import fill_marginal


def test_dataset_is_a_marginal_source(domain, codes):
    ds = Dataset(codes, domain)
    assert isinstance(ds, MarginalSource)
    sets = [("b",), ("c", "a"), (), ["a", "b", "c"]]
    got = ds.marginals(sets)
    for s, m in zip(sets, got):
        np.testing.assert_array_equal(m, ds.marginal(s))
    assert got[2] == 300
    np.testing.assert_array_equal(got[1], ds.marginal(["a", "c"]).T)
    with pytest.raises(TypeError, match="not one string"):
        ds.marginals("ab")


def test_attribute_sets_are_checked(domain, monkeypatch):
    assert check_attribute_sets(domain, ["a", ("b", "c"), []]) == [("a",), ("b", "c"), ()]
    with pytest.raises(ValueError, match="unknown attribute 'z'"):
        check_attribute_sets(domain, [("a", "z")])
    with pytest.raises(ValueError, match="unique"):
        check_attribute_sets(domain, [("a", "a")])
    with pytest.raises(TypeError, match="attribute names"):
        check_attribute_sets(domain, [("a", 1)])
    with pytest.raises(TypeError, match="not one string"):
        check_attribute_sets(domain, "abc")
    with pytest.raises(TypeError, match="list of attribute sets"):
        check_attribute_sets(domain, 3)
    monkeypatch.setattr("fastmwem.data.domain.MAX_DENSE_CELLS", 16)
    with pytest.raises(ValueError, match=r"the marginal on \['b', 'c'\] has 20 cells"):
        check_attribute_sets(domain, [("b", "c")])


def test_fill_marginal():
    out = fill_marginal((2, 3), [np.array([0, 1]), np.array([2, 0])], np.array([4.0, 5.0]))
    np.testing.assert_array_equal(out, [[0, 0, 4], [5, 0, 0]])
    assert fill_marginal((), [], np.array([7])) == 7.0


def test_protocol_is_structural():
    class Counts:
        domain = Domain(["a"], [2])

        def __len__(self):
            return 1

        def marginal(self, attrs):
            return np.array([1.0, 0.0])

        def marginals(self, sets):
            return [self.marginal(s) for s in sets]

        def histogram(self):
            return self.marginal(["a"])

    assert isinstance(Counts(), MarginalSource)
    assert not isinstance(object(), MarginalSource)
