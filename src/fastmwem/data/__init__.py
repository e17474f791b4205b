"""Domains, datasets of integer codes, and schemas that encode raw tables."""

from fastmwem.data.dataset import Dataset, codes_array, dense_cell_limit
from fastmwem.data.domain import Domain
from fastmwem.data.schema import Categorical, ColumnSpec, Integer, Numeric, Schema
from fastmwem.data.warnings import PrivacyLeakWarning

__all__ = [
    "Categorical",
    "ColumnSpec",
    "Dataset",
    "Domain",
    "Integer",
    "Numeric",
    "PrivacyLeakWarning",
    "Schema",
    "codes_array",
    "dense_cell_limit",
]
