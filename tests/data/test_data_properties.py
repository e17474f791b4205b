"""Property tests: counts agree with brute force, and decode/encode round-trips codes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastmwem.data import Categorical, Dataset, Domain, Integer, Numeric, Schema, write_csv


@st.composite
def datasets(draw):
    d = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 5), min_size=d, max_size=d))
    domain = Domain([f"a{i}" for i in range(d)], shape)
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    recs = np.column_stack([rng.integers(0, s, size=n) for s in shape])
    order = draw(st.permutations(range(d)))
    k = draw(st.integers(0, d))
    return Dataset(recs, domain), recs, [f"a{i}" for i in order[:k]]


@settings(max_examples=50, deadline=None)
@given(datasets())
def test_histogram_and_marginal_match_brute_force(case):
    ds, recs, attrs = case
    shape = ds.domain.shape
    expected = np.zeros(shape)
    for row in recs:
        expected[tuple(row)] += 1
    np.testing.assert_array_equal(ds.histogram(), expected.reshape(-1))
    m = ds.marginal(attrs)
    axes = [ds.domain.axis(a) for a in attrs]
    if not axes:
        assert m.shape == () and float(m) == len(recs)
        return
    want = np.zeros(tuple(shape[a] for a in axes))
    for row in recs:
        want[tuple(row[axes])] += 1
    np.testing.assert_array_equal(m, want)
    np.testing.assert_array_equal(ds.project(attrs).histogram(), want.reshape(-1))


@st.composite
def schemas_and_codes(draw):
    specs = []
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["cat", "num", "int"]))
        if kind == "cat":
            k = draw(st.integers(1, 5))
            labels = draw(st.lists(st.one_of(st.text(min_size=1, max_size=4), st.integers(-50, 50)),
                                   min_size=k, max_size=k, unique_by=str))
            other = draw(st.sampled_from([None, "zz-other"]))
            if other is not None and other in [str(x) for x in labels]:
                other = None
            specs.append(Categorical(f"c{i}", labels, other=other))
        elif kind == "num":
            steps = draw(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=6))
            start = draw(st.floats(-1000, 1000))
            edges = list(start + np.cumsum([0.0, *steps]))
            if len(set(edges)) == len(edges) and all(np.diff(edges) > 0):
                specs.append(Numeric(f"n{i}", edges=edges))
            else:
                specs.append(Numeric(f"n{i}", 0, 1, bins=len(steps)))
        else:
            lo = draw(st.integers(-20, 20))
            specs.append(Integer(f"i{i}", lo, lo + draw(st.integers(0, 6))))
    schema = Schema(specs)
    n = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    codes = np.column_stack([rng.integers(0, s, size=n) for s in schema.domain.shape])
    return schema, codes


@settings(max_examples=50, deadline=None)
@given(schemas_and_codes(), st.sampled_from(["midpoint", "uniform"]))
def test_decode_then_encode_returns_the_codes(case, numeric):
    schema, codes = case
    raw = schema.decode(codes, numeric=numeric, rng=3)
    assert isinstance(raw, pd.DataFrame)
    np.testing.assert_array_equal(schema.encode(raw).records, codes)


# Labels that pandas' default writer leaves unquoted and its reader then splits or skips: a
# carriage return (read as a line break) and a whitespace-only label alone on its line.
_CR = (Schema([Categorical("c0", ["\r", "0"])]), np.array([[0], [1], [0]]))
_BLANK = (Schema([Categorical("c0", [" ", "\t"])]), np.array([[1], [0], [0]]))
_MIXED = (Schema([Categorical("c0", ["a\rb", 'q"', "c,d", "e\nf"]), Integer("i1", 0, 2)]),
          np.array([[0, 2], [1, 1], [2, 0], [3, 1]]))


@pytest.mark.filterwarnings("ignore::fastmwem.data.SpreadsheetFormulaWarning")
@settings(max_examples=40, deadline=None)
@given(schemas_and_codes(), st.sampled_from(["midpoint", "uniform"]))
@example(_CR, "midpoint")
@example(_BLANK, "midpoint")
@example(_MIXED, "uniform")
def test_decode_csv_encode_csv_returns_the_codes(tmp_path_factory, case, numeric):
    schema, codes = case
    path = tmp_path_factory.mktemp("roundtrip") / "raw.csv"
    write_csv(schema.decode(codes, numeric=numeric, rng=5), path)
    np.testing.assert_array_equal(schema.encode_csv(path).records, codes)
