"""Small public datasets bundled with fastmwem (see README.md in this package for sources).

>>> ds = load_nltcs()
>>> len(ds), len(ds.domain), ds.domain.size
(21574, 16, 65536)
"""

from __future__ import annotations

import pathlib
from importlib import resources

from fastmwem.data.dataset import Dataset
from fastmwem.data.domain import Domain

__all__ = ["load_nltcs", "nltcs_paths"]


def _package_file(name: str) -> pathlib.Path:
    traversable = resources.files(__name__).joinpath(name)
    # Package data lives on the file system for every supported install (wheel, sdist, editable);
    # a zipped install would need resources.as_file, which we do not support.
    path = pathlib.Path(str(traversable))
    if not path.is_file():
        raise FileNotFoundError(
            f"bundled data file {name!r} not found at {path}; the fastmwem install is incomplete"
        )
    return path


def nltcs_paths() -> tuple[pathlib.Path, pathlib.Path]:
    """Paths of the bundled NLTCS CSV and its ``{"column": size}`` domain JSON."""
    return _package_file("nltcs.csv"), _package_file("nltcs-domain.json")


def load_nltcs() -> Dataset:
    """The NLTCS dataset: 21,574 records of 16 binary attributes (65,536 cells).

    Source and provenance: ``ryan112358/hd-datasets`` ``clean/nltcs.csv`` (see this package's
    README.md). Attributes are in the domain file's (alphabetical) order.
    """
    csv_path, domain_path = nltcs_paths()
    return Dataset.from_csv(csv_path, Domain.from_json(domain_path))
