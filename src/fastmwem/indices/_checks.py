"""Argument checks shared by the indices: keys, query batches, k, saved-file paths."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import numpy as np

from fastmwem._validation import check_int

__all__ = [
    "check_dimension", "check_keys", "check_queries", "check_k", "check_ids", "check_save_path",
    "real_matrix", "row_blocks",
]


def check_dimension(dimension: object, name: str = "dimension") -> int:
    """Return a key dimension as an int >= 1."""
    return check_int(dimension, name, minimum=1)


def real_matrix(values: object, name: str) -> np.ndarray:
    """``values`` as a float64 array of any shape, refusing non-numeric input with a TypeError."""
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{name} must be an array of real numbers, got {type(values).__name__}")
    try:
        arr = np.asarray(values)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"{name} must be a rectangular array of real numbers: {exc}") from None
    if arr.dtype.kind not in "biuf":  # bool, signed, unsigned, float (a cheap issubdtype)
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return arr


def _finite_2d(values: object, name: str, dimension: int | None, *, allow_1d: bool) -> np.ndarray:
    arr = real_matrix(values, name)
    if allow_1d and arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (rows of length {dimension or 'd'}), "
                         f"got shape {arr.shape}")
    if dimension is not None and arr.shape[1] != dimension:
        raise ValueError(f"{name} must have {dimension} columns (the index dimension), "
                         f"got {arr.shape[1]}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column")
    if arr.dtype.kind == "f":
        for start, block in row_blocks(arr):
            bad = ~np.isfinite(block)
            if bad.any():
                row, col = np.argwhere(bad)[0]
                raise ValueError(f"{name} must be finite: {name}[{start + row}, {col}] = "
                                 f"{block[row, col]}")
    return arr


def row_blocks(arr: np.ndarray, rows: int = 8192, *, progress: str | None = None
               ) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, arr[start:start + rows])`` over the rows: bounds the temporaries of a pass over
    a large key matrix (a million keys of 1024 entries are 4 GB in float32). With ``progress``
    (a label), a bar on stderr shows the pass if it lasts more than two seconds."""
    if progress is None:  # the common case (every query check): no bar object at all
        for start in range(0, arr.shape[0], rows):
            yield start, arr[start:start + rows]
        return
    from tqdm import tqdm

    with tqdm(total=arr.shape[0], desc=progress, unit="keys", file=sys.stderr,
              delay=2.0) as bar:
        for start in range(0, arr.shape[0], rows):
            block = arr[start:start + rows]
            yield start, block
            bar.update(block.shape[0])


def check_keys(keys: object, dimension: int | None, name: str = "keys") -> np.ndarray:
    """Keys as a finite 2-D array of ``dimension`` columns and at least one row (dtype kept)."""
    arr = _finite_2d(keys, name, dimension, allow_1d=False)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one key")
    return arr


def check_queries(queries: object, dimension: int, name: str = "queries") -> np.ndarray:
    """Query vectors as a finite float64 ``(n, dimension)`` array; one 1-D vector is one row."""
    arr = _finite_2d(queries, name, dimension, allow_1d=True)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one query")
    return arr.astype(np.float64, copy=False)


def check_k(k: object) -> int:
    """The number of neighbours asked for: an int >= 1."""
    return check_int(k, "k", minimum=1)


def check_ids(ids: object, n_keys: int, name: str = "ids") -> np.ndarray:
    """Key ids as a 1-D int64 array with every entry in ``0 .. n_keys - 1``."""
    arr = real_matrix(ids, name)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    out = arr.astype(np.int64, copy=False)
    if out.size and (out.min() < 0 or out.max() >= n_keys):
        bad = out[(out < 0) | (out >= n_keys)][0]
        raise ValueError(f"{name} must lie in 0 .. {n_keys - 1}, got {bad}")
    return out


def check_save_path(path: object, overwrite: object) -> str:
    """A path to save to: a str/PathLike whose folder exists; an existing file needs overwrite.

    An existing symbolic link, FIFO, device or socket is refused even with ``overwrite``.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be a bool, got {type(overwrite).__name__}")
    out = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise ValueError(f"path: folder {folder!r} does not exist")
    if os.path.isdir(out):
        raise ValueError(f"path {out!r} is a folder")
    if os.path.islink(out):
        raise ValueError(f"path {out!r} is a symbolic link; give the target path itself")
    if os.path.lexists(out) and not os.path.isfile(out):
        # the file is renamed into place: that would replace a FIFO or device node
        raise ValueError(f"path {out!r} exists and is not a regular file (a FIFO, device or "
                         "socket); refusing to replace it")
    if os.path.exists(out) and not overwrite:
        raise ValueError(f"path {out!r} exists; pass overwrite=True to replace it")
    return out
