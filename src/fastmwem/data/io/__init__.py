"""Reading and writing tables: CSV and Parquet files, input-file checks, and cell checks.

:mod:`~fastmwem.data.io.csv` and :mod:`~fastmwem.data.io.parquet` read columns by name and write
tables; :mod:`~fastmwem.data.io.files` opens inputs with errors that name the file;
:mod:`~fastmwem.data.io.checks` turns bad cells into one error that names no private value.
"""

from fastmwem.data.io.csv import read_csv_columns, write_csv
from fastmwem.data.io.files import read_lines

__all__ = ["read_csv_columns", "read_lines", "write_csv"]
