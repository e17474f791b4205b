"""MatrixWorkload: dense and sparse storage, group offsets, sensitivities, validation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fastmwem.data.domain import Domain
from fastmwem.workloads import MatrixWorkload

D = Domain(["a", "b"], [2, 3])


def test_sensitivities_by_hand() -> None:
    m = np.array([
        [1.0, -2.0, 0.0, 0.0, 0.5, 0.0],
        [0.0, 3.0, 0.0, 0.0, -0.5, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    ])
    for mat in (m, sp.csr_array(m), sp.coo_matrix(m)):
        w = MatrixWorkload(D, mat, groups=[0, 2, 4])
        assert w.query_sensitivity == 3.0
        np.testing.assert_array_equal(w.group_sensitivity, [5.0, 1.0])
        single = MatrixWorkload(D, mat)
        np.testing.assert_array_equal(single.group_sensitivity, [2.0, 3.0, 0.0, 1.0])
        assert single.describe_group(1) == "matrix row 1"
        assert w.describe_group(0) == "matrix rows 0..1"


def test_sparse_stays_sparse_on_a_large_domain() -> None:
    # 2^22 cells x 500 rows would need 16 GiB dense; stored as CSR it is a few kB.
    d = Domain(["x", "y"], [2048, 2048])
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(500), 4)
    cols = rng.integers(0, d.size, size=2000)
    mat = sp.coo_array((np.ones(2000), (rows, cols)), shape=(500, d.size))
    w = MatrixWorkload(d, mat)
    assert w.sparse and sp.issparse(w.matrix)
    h = rng.random(d.size)
    np.testing.assert_allclose(w.answer(h), mat.tocsr() @ h, rtol=1e-12)
    expected_row = np.zeros(d.size)
    np.add.at(expected_row, cols[28:32], 1.0)
    np.testing.assert_array_equal(w.row(7), expected_row)
    before = h.copy()
    w.multiply_group(h, 3, [np.log(2.0)])
    changed = np.flatnonzero(h != before)
    assert set(changed) == set(cols[12:16])


def test_dense_input_types() -> None:
    w = MatrixWorkload(D, np.ones((2, 6), dtype=np.int8))
    assert not w.sparse and w.matrix.dtype == np.float64 and w.matrix.flags.c_contiguous
    w = MatrixWorkload(D, [[True, False, True, False, True, False]])
    assert w.answer(np.arange(6.0)).tolist() == [6.0]


@pytest.mark.parametrize(
    ("matrix", "error", "match"),
    [
        (np.ones(6), ValueError, "2-D"),
        (np.ones((2, 5)), ValueError, "columns"),
        (np.ones((0, 6)), ValueError, "at least one row"),
        (np.full((1, 6), np.nan), ValueError, "finite"),
        (sp.csr_array(np.array([[np.inf, 0, 0, 0, 0, 0]])), ValueError, "finite"),
        (np.ones((1, 6), dtype=complex), TypeError, "real"),
        (np.array([["a"] * 6]), TypeError, "real"),
        ("matrix", TypeError, "matrix"),
        (None, TypeError, "matrix"),
        ([[1, 2], [3]], ValueError, "matrix"),
    ],
)
def test_bad_matrices_rejected(matrix, error, match) -> None:
    with pytest.raises(error, match=match):
        MatrixWorkload(D, matrix)


@pytest.mark.parametrize(
    ("groups", "error", "match"),
    [
        ([0, 2], ValueError, "end at n_queries"),
        ([1, 3], ValueError, "start at 0"),
        ([0, 2, 2, 3], ValueError, "strictly increasing"),
        ([0, 2.0, 3], TypeError, "integer"),
        ([3], ValueError, "offsets"),
        ("03", TypeError, "groups"),
    ],
)
def test_bad_groups_rejected(groups, error, match) -> None:
    with pytest.raises(error, match=match):
        MatrixWorkload(D, np.ones((3, 6)), groups=groups)


def test_domain_must_be_a_domain() -> None:
    with pytest.raises(TypeError, match="domain"):
        MatrixWorkload((2, 3), np.ones((1, 6)))


def test_answer_transpose_rejects_non_finite_weights() -> None:
    w = MatrixWorkload(D, np.ones((2, 6)))
    with pytest.raises(ValueError, match="weights"):
        w.answer_transpose([1.0, np.nan])


def test_chunked_dense_checks_match_whole_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastmwem.workloads import matrix as matrix_module

    d = Domain(["a", "b"], [4, 5])
    m = np.random.default_rng(0).normal(size=(23, d.size))
    monkeypatch.setattr(matrix_module, "_CHUNK_ENTRIES", 45)  # two rows per chunk
    groups = [0, 1, 6, 7, 23]
    w = MatrixWorkload(d, m, groups=groups)
    expected = [np.abs(m[a:b]).sum(axis=0).max() for a, b in zip(groups[:-1], groups[1:])]
    np.testing.assert_allclose(w.group_sensitivity, expected, rtol=1e-12)
    np.testing.assert_allclose(MatrixWorkload(d, m).group_sensitivity, np.abs(m).max(axis=1))
    assert w.query_sensitivity == np.abs(m).max()
    bad = m.copy()
    bad[20, 3] = np.inf
    with pytest.raises(ValueError, match="finite"):
        MatrixWorkload(d, bad)
