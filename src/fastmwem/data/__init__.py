"""Domains, datasets of integer codes, and schemas that encode raw tables."""

from fastmwem.data.dataset import Dataset, codes_array, dense_cell_limit
from fastmwem.data.domain import Domain
from fastmwem.data.io.csv import read_csv_columns, write_csv
from fastmwem.data.io.files import read_lines
from fastmwem.data.schema import Categorical, ColumnSpec, Integer, Numeric, Schema
from fastmwem.warnings import PrivacyLeakWarning, SpreadsheetFormulaWarning

__all__ = [
    "Categorical",
    "ColumnSpec",
    "Dataset",
    "Domain",
    "Integer",
    "Numeric",
    "PrivacyLeakWarning",
    "Schema",
    "SpreadsheetFormulaWarning",
    "codes_array",
    "dense_cell_limit",
    "read_csv_columns",
    "read_lines",
    "write_csv",
]
