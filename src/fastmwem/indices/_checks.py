"""Argument checks shared by the indices: keys, query batches, k, saved-file paths."""

from __future__ import annotations

import os

import numpy as np

from fastmwem._validation import check_int

__all__ = [
    "check_dimension", "check_keys", "check_queries", "check_k", "check_ids", "check_save_path",
    "real_matrix",
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
        bad = ~np.isfinite(arr)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ValueError(f"{name} must be finite: {name}[{row}, {col}] = {arr[row, col]}")
    return arr


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
    """A path to save to: a str/PathLike whose folder exists; an existing file needs overwrite."""
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
    if os.path.exists(out) and not overwrite:
        raise ValueError(f"path {out!r} exists; pass overwrite=True to replace it")
    return out
