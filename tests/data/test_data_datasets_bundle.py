"""The bundled NLTCS dataset loads from package data, not from the shared folder."""

from __future__ import annotations

import json

import numpy as np

import fastmwem
from fastmwem.data import Dataset, Domain
from fastmwem.datasets import load_nltcs, nltcs_paths


def test_nltcs_shape():
    ds = load_nltcs()
    assert isinstance(ds, Dataset)
    assert len(ds) == 21574
    assert ds.records.shape == (21574, 16)
    assert ds.domain.size == 65536
    assert set(ds.domain.shape) == {2}
    h = ds.histogram()
    assert h.shape == (65536,)
    assert h.sum() == 21574


def test_nltcs_paths_are_inside_the_package():
    csv_path, domain_path = nltcs_paths()
    pkg = fastmwem.__file__.rsplit("/", 1)[0]
    for p in (csv_path, domain_path):
        assert p.is_file()
        assert str(p).startswith(pkg)
        assert "shared" not in p.parts
    assert json.loads(domain_path.read_text()) == Domain.from_json(domain_path).to_dict()
    assert (csv_path.parent / "README.md").is_file()


def test_nltcs_columns_matched_by_name():
    # the CSV's column order differs from the domain's; values must follow the names
    ds = load_nltcs()
    csv_path, _ = nltcs_paths()
    header = csv_path.read_text().splitlines()[0].split(",")
    first = [int(x) for x in csv_path.read_text().splitlines()[1].split(",")]
    by_name = dict(zip(header, first))
    np.testing.assert_array_equal(ds.records[0], [by_name[a] for a in ds.columns])
