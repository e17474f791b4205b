"""Dataset: validation messages, histogram / marginal correctness, CSV and DataFrame paths."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from fastmwem.data import Dataset, Domain
from fastmwem.workloads.base import MAX_DENSE_CELLS


@pytest.fixture
def domain() -> Domain:
    return Domain(["age", "sex", "edu"], [5, 2, 3])


def _random_records(domain: Domain, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.integers(0, s, size=n) for s in domain.shape])


def _brute_histogram(records: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    h = np.zeros(shape)
    for row in records:
        h[tuple(row)] += 1
    return h.reshape(-1)


# -- construction and accessors ------------------------------------------------------------


def test_dataset_basic_accessors(domain):
    recs = _random_records(domain, 50, seed=1)
    ds = Dataset(recs, domain)
    assert len(ds) == 50
    assert ds.domain == domain
    assert ds.columns == ("age", "sex", "edu")
    assert ds.records.dtype == np.int64
    assert ds.records.shape == (50, 3)
    np.testing.assert_array_equal(ds.records, recs)
    assert "n=50" in repr(ds)


def test_dataset_records_are_read_only_copy(domain):
    recs = _random_records(domain, 10, seed=2)
    ds = Dataset(recs, domain)
    recs[0, 0] = 4 - recs[0, 0]  # the caller's array changes; the dataset must not
    assert ds.records[0, 0] != recs[0, 0]
    with pytest.raises(ValueError):
        ds.records[0, 0] = 1


def test_dataset_accepts_small_unsigned_ints(domain):
    recs = _random_records(domain, 20, seed=3).astype(np.uint8)
    ds = Dataset(recs, domain)
    assert ds.records.dtype == np.int64
    np.testing.assert_array_equal(ds.records, recs)


def test_dataframe_round_trip_reorders_columns(domain):
    recs = _random_records(domain, 30, seed=4)
    df = pd.DataFrame(recs, columns=domain.attributes)[["edu", "age", "sex"]]
    ds = Dataset.from_dataframe(df, domain)
    np.testing.assert_array_equal(ds.records, recs)
    back = ds.to_dataframe()
    assert list(back.columns) == list(domain.attributes)
    np.testing.assert_array_equal(back.to_numpy(), recs)
    back.iloc[0, 0] = 0  # the frame is a writable copy
    assert Dataset(df, domain).records.shape == (30, 3)


def test_csv_round_trip(tmp_path, domain):
    recs = _random_records(domain, 40, seed=5)
    path = tmp_path / "d.csv"
    pd.DataFrame(recs, columns=domain.attributes)[["sex", "edu", "age"]].to_csv(path, index=False)
    ds = Dataset.from_csv(path, domain)
    np.testing.assert_array_equal(ds.records, recs)


def test_csv_whole_floats_accepted(tmp_path):
    d = Domain(["a", "b"], [3, 2])
    path = tmp_path / "f.csv"
    path.write_text("a,b\n1.0,0\n2.0,1\n0,1.0\n")
    ds = Dataset.from_csv(path, d)
    np.testing.assert_array_equal(ds.records, [[1, 0], [2, 1], [0, 1]])


def test_csv_extra_columns_ignore(tmp_path):
    d = Domain(["a", "b"], [3, 2])
    path = tmp_path / "x.csv"
    path.write_text("id,a,b,note\n7,1,0,hello\n8,2,1,world\n")
    with pytest.raises(ValueError, match=r"unexpected columns \['id', 'note'\]"):
        Dataset.from_csv(path, d)
    ds = Dataset.from_csv(path, d, extra_columns="ignore")
    np.testing.assert_array_equal(ds.records, [[1, 0], [2, 1]])
    with pytest.raises(ValueError, match="extra_columns"):
        Dataset.from_csv(path, d, extra_columns="drop")


# -- bad input -----------------------------------------------------------------------------


def test_out_of_range_codes_name_column_and_rows(domain):
    recs = np.zeros((50, 3), dtype=np.int64)
    recs[[5, 17, 40], 0] = [5, 7, -1]
    with pytest.raises(ValueError) as exc:
        Dataset(recs, domain)
    msg = str(exc.value)
    assert "column 'age' has 3 values outside 0..4, first rows [5, 17, 40]" in msg


def test_several_bad_columns_are_all_listed(domain):
    recs = np.zeros((10, 3), dtype=np.int64)
    recs[2, 0] = 9
    recs[[3, 4], 2] = 3
    with pytest.raises(ValueError) as exc:
        Dataset(recs, domain)
    msg = str(exc.value)
    assert "column 'age' has 1 values outside 0..4, first rows [2]" in msg
    assert "column 'edu' has 2 values outside 0..2, first rows [3, 4]" in msg


def test_only_first_rows_are_listed(domain):
    recs = np.zeros((100, 3), dtype=np.int64)
    recs[10:60, 1] = 2
    with pytest.raises(ValueError, match=r"column 'sex' has 50 values outside 0..1, first rows \[10, 11, 12, 13, 14\]"):
        Dataset(recs, domain)


def test_empty_records_rejected(domain):
    with pytest.raises(ValueError, match="empty"):
        Dataset(np.zeros((0, 3), dtype=np.int64), domain)
    with pytest.raises(ValueError, match="no data rows"):
        Dataset(pd.DataFrame({a: pd.Series([], dtype="int64") for a in domain}), domain)


def test_empty_csv_rejected(tmp_path, domain):
    header_only = tmp_path / "h.csv"
    header_only.write_text("age,sex,edu\n")
    with pytest.raises(ValueError, match="no data rows"):
        Dataset.from_csv(header_only, domain)
    blank = tmp_path / "b.csv"
    blank.write_text("")
    with pytest.raises(ValueError, match="no header"):
        Dataset.from_csv(blank, domain)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Dataset.from_csv(tmp_path / "nope.csv", domain)


def test_wrong_width_and_dims(domain):
    with pytest.raises(ValueError, match="2 columns but the domain has 3"):
        Dataset(np.zeros((4, 2), dtype=int), domain)
    with pytest.raises(ValueError, match="2-D"):
        Dataset(np.zeros(3, dtype=int), domain)
    with pytest.raises(TypeError, match="Domain"):
        Dataset(np.zeros((4, 3), dtype=int), {"age": 5})


def test_float_and_bool_arrays_rejected(domain):
    with pytest.raises(TypeError, match="integer codes, got dtype float64"):
        Dataset(np.zeros((4, 3)), domain)
    with pytest.raises(TypeError, match="integer codes, got dtype bool"):
        Dataset(np.zeros((4, 3), dtype=bool), domain)
    df = pd.DataFrame({"age": [1.0, 2.0], "sex": [0, 1], "edu": [0, 0]})
    with pytest.raises(ValueError, match="column 'age' has dtype float64, not an integer dtype"):
        Dataset.from_dataframe(df, domain)


def test_dataframe_missing_and_extra_columns(domain):
    df = pd.DataFrame({"age": [1], "edu": [0], "zip": [3]})
    with pytest.raises(ValueError) as exc:
        Dataset.from_dataframe(df, domain)
    msg = str(exc.value)
    assert "missing columns ['sex']" in msg
    assert "unexpected columns ['zip']" in msg


def test_dataframe_nullable_missing_values(domain):
    df = pd.DataFrame(
        {"age": pd.array([1, None, 2], dtype="Int64"), "sex": [0, 1, 0], "edu": [0, 1, 2]}
    )
    with pytest.raises(ValueError, match=r"column 'age' has 1 missing \(NaN/empty\) values, first rows \[1\]"):
        Dataset(df, domain)


def test_csv_missing_columns_named(tmp_path, domain):
    path = tmp_path / "m.csv"
    path.write_text("age,zip\n1,2\n")
    with pytest.raises(ValueError) as exc:
        Dataset.from_csv(path, domain)
    msg = str(exc.value)
    assert "m.csv" in msg
    assert "missing columns ['sex', 'edu']" in msg


def test_csv_repeated_column_named(tmp_path, domain):
    path = tmp_path / "r.csv"
    path.write_text("age,sex,edu,age\n1,0,0,1\n")
    with pytest.raises(ValueError, match=r"repeated columns \['age'\]"):
        Dataset.from_csv(path, domain)


def test_csv_bad_cells_named(tmp_path, domain):
    path = tmp_path / "bad.csv"
    path.write_text("age,sex,edu\n1,0,0\n,1,1\n2,x,2\n3.5,0,9\n4,1,2\n")
    with pytest.raises(ValueError) as exc:
        Dataset.from_csv(path, domain)
    msg = str(exc.value)
    assert "column 'age' has 1 missing (NaN/empty) values, first rows [1]" in msg
    assert "column 'sex' has 1 non-numeric values, first rows [2]" in msg
    assert "column 'edu' has 1 values outside 0..2, first rows [3]" in msg
    path.write_text("age,sex,edu\n1,0,0\n3.5,0,1\n")
    with pytest.raises(ValueError, match=r"column 'age' has 1 non-integer values, first rows \[1\]"):
        Dataset.from_csv(path, domain)
    path.write_text("age,sex,edu\n1,0,0\nnan,0,1\n")
    with pytest.raises(ValueError, match=r"column 'age' has 1 missing \(NaN/empty\) values, first rows \[1\]"):
        Dataset.from_csv(path, domain)


# -- statistics ------------------------------------------------------------------------------


def test_histogram_matches_brute_force(domain):
    recs = _random_records(domain, 500, seed=6)
    h = Dataset(recs, domain).histogram()
    assert h.dtype == np.float64
    assert h.shape == (domain.size,)
    np.testing.assert_array_equal(h, _brute_histogram(recs, domain.shape))
    assert h.sum() == 500


def test_histogram_cell_order_is_c_order():
    d = Domain(["a", "b"], [2, 3])
    h = Dataset([[1, 2]], d).histogram()
    assert h[np.ravel_multi_index((1, 2), (2, 3))] == 1
    assert h[5] == 1


@pytest.mark.parametrize("attrs", [["age"], ["edu", "age"], ["sex", "edu"], ["edu", "sex", "age"]])
def test_marginal_matches_brute_force(domain, attrs):
    recs = _random_records(domain, 400, seed=7)
    ds = Dataset(recs, domain)
    m = ds.marginal(attrs)
    axes = [domain.attributes.index(a) for a in attrs]
    shape = tuple(domain.shape[a] for a in axes)
    assert m.shape == shape
    expected = np.zeros(shape)
    for cell in itertools.product(*(range(s) for s in shape)):
        expected[cell] = np.sum(np.all(recs[:, axes] == np.array(cell), axis=1))
    np.testing.assert_array_equal(m, expected)
    # the same numbers as summing the full histogram over the other axes
    full = ds.histogram().reshape(domain.shape)
    others = tuple(i for i in range(len(domain)) if i not in axes)
    summed = full.sum(axis=others)
    kept = sorted(axes)
    np.testing.assert_array_equal(m, np.transpose(summed, [kept.index(a) for a in axes]))


def test_marginal_single_name_and_empty(domain):
    ds = Dataset(_random_records(domain, 25, seed=8), domain)
    np.testing.assert_array_equal(ds.marginal("sex"), ds.marginal(["sex"]))
    total = ds.marginal([])
    assert total.shape == ()
    assert float(total) == 25.0
    with pytest.raises(ValueError, match="unknown attribute 'zip'"):
        ds.marginal(["zip"])
    with pytest.raises(ValueError, match="unique"):
        ds.marginal(["sex", "sex"])


def test_project(domain):
    recs = _random_records(domain, 60, seed=9)
    ds = Dataset(recs, domain)
    p = ds.project(["edu", "age"])
    assert p.domain == Domain(["edu", "age"], [3, 5])
    np.testing.assert_array_equal(p.records, recs[:, [2, 0]])
    np.testing.assert_array_equal(p.histogram().reshape(3, 5), ds.marginal(["edu", "age"]))
    assert not p.records.flags.writeable


def test_histogram_at_2_pow_24_cells_works():
    d = Domain([f"b{i}" for i in range(24)], [2] * 24)
    assert d.size == 2**24
    recs = np.zeros((3, 24), dtype=np.int64)
    recs[1, :] = 1
    recs[2, 23] = 1
    h = Dataset(recs, d).histogram()
    assert h.shape == (2**24,)
    assert h[0] == 1 and h[-1] == 1 and h[1] == 1
    assert h.sum() == 3


def test_histogram_above_limit_names_limit():
    d = Domain(["a", "b"], [2**14, 2**13])  # 2**27 cells
    assert d.size > MAX_DENSE_CELLS
    ds = Dataset([[1, 2]], d)
    with pytest.raises(ValueError) as exc:
        ds.histogram()
    msg = str(exc.value)
    assert str(d.size) in msg
    assert "MAX_DENSE_CELLS" in msg and str(MAX_DENSE_CELLS) in msg
    # marginals below the limit still work on that domain
    assert ds.marginal(["a"])[1] == 1
    with pytest.raises(ValueError, match="MAX_DENSE_CELLS"):
        ds.marginal(["a", "b"])


def test_pickle_round_trip_stays_read_only(domain):
    import pickle

    ds = Dataset(_random_records(domain, 12, seed=10), domain)
    back = pickle.loads(pickle.dumps(ds))
    assert back.domain == ds.domain
    np.testing.assert_array_equal(back.records, ds.records)
    assert not back.records.flags.writeable


def test_csv_with_utf8_bom(tmp_path):
    d = Domain(["a", "b"], [3, 2])
    path = tmp_path / "bom.csv"
    path.write_bytes("a,b\n1,0\n2,1\n".encode("utf-8-sig"))
    np.testing.assert_array_equal(Dataset.from_csv(path, d).records, [[1, 0], [2, 1]])
