"""Single linear queries over a domain, as vectors over its cells, from several public forms.

An online session (:class:`~fastmwem.release.pmw.session.PMWSession`) is asked one query at a time; a
query is public (the analyst wrote it) and is turned into a dense vector ``q`` over the domain's
cells (C order, as for histograms), whose answer on a dataset is ``sum_records q(record)``.

Forms accepted by :func:`query_vector`:

* ``{"cell": {"attr": code, ...}}``: a marginal cell, the records whose named attributes take
  those codes (a counting query);
* ``{"range": {"attr": [low, high], ...}}``: the records with ``low <= attr <= high`` on every
  named attribute (inclusive codes; a counting query);
* ``{"vector": [...]}``: explicit weights, one per cell (0/1 for a counting query, or reals);
* a numpy array (or list) of ``domain.size`` weights, or shaped like the domain;
* ``(workload, i)``: row ``i`` of any :class:`~fastmwem.workloads.base.LinearWorkload` over the
  same domain.

>>> from fastmwem.data import Domain
>>> d = Domain(["a", "b"], [2, 3])
>>> query_vector(d, {"cell": {"b": 2}}).tolist()
[0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
>>> query_vector(d, {"range": {"a": [1, 1], "b": [0, 1]}}).tolist()
[0.0, 0.0, 0.0, 1.0, 1.0, 0.0]
"""

from __future__ import annotations

import numbers
from typing import TypeGuard

import numpy as np

from fastmwem.data.domain import Domain, check_dense
from fastmwem.workloads.base import MAX_QUERY_VALUE, LinearWorkload

__all__ = ["query_vector", "query_spec", "QUERY_FORMS"]

#: The keys of the JSON forms.
QUERY_FORMS = ("cell", "range", "vector")


def query_vector(domain: Domain, query: object) -> np.ndarray:
    """The query as a flat float64 vector of ``domain.size`` finite weights, not all zero.

    Raises:
        ValueError: the query does not fit the domain (an unknown attribute, a code out of
            range, a vector of the wrong length, weights all zero or not finite).
        TypeError: the query is of none of the forms above.
    """
    if not isinstance(domain, Domain):
        raise TypeError(f"domain must be a Domain, got {type(domain).__name__}")
    check_dense(domain.size, "the domain")
    if isinstance(query, dict):
        vec = _from_spec(domain, query)
    elif isinstance(query, tuple) and len(query) == 2 and isinstance(query[0], LinearWorkload):
        workload, row = query
        if workload.domain != domain:
            raise ValueError(f"the workload's domain {workload.domain} is not the session's "
                             f"domain {domain}")
        vec = np.asarray(workload.row(row), dtype=np.float64)
    elif isinstance(query, (np.ndarray, list)):
        vec = _weights(domain, query)
    else:
        raise TypeError("query must be a {'cell'|'range'|'vector': ...} object, an array of "
                        f"weights or a (workload, row) pair, got {type(query).__name__}")
    return _checked(vec)


def query_spec(query: object) -> dict[str, object]:
    """A JSON-ready form of a query that :func:`query_vector` reads back to the same vector."""
    if isinstance(query, dict):
        return query
    if isinstance(query, tuple) and len(query) == 2 and isinstance(query[0], LinearWorkload):
        return {"vector": np.asarray(query[0].row(query[1]), dtype=np.float64).tolist()}
    return {"vector": np.asarray(query, dtype=np.float64).reshape(-1).tolist()}


def _checked(vec: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(vec)):
        raise ValueError("query weights must be finite numbers")
    peak = float(np.abs(vec).max())
    if peak == 0:
        raise ValueError("query weights are all zero: the query counts nothing")
    if peak > MAX_QUERY_VALUE:
        raise ValueError(f"query weights must lie within +-{MAX_QUERY_VALUE:g}")
    return vec


def _weights(domain: Domain, values: object) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise ValueError(f"query weights must be numbers, got {arr.dtype} values")
    arr = arr.astype(np.float64)
    if arr.shape == domain.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1 or arr.size != domain.size:
        raise ValueError(f"a query vector must have {domain.size} weights (one per cell of the "
                         f"domain {domain.to_dict()}), got shape {arr.shape}")
    return arr


def _from_spec(domain: Domain, spec: dict[str, object]) -> np.ndarray:
    if len(spec) != 1 or next(iter(spec)) not in QUERY_FORMS:
        raise ValueError(f"a query must have exactly one of the keys {list(QUERY_FORMS)}, got "
                         f"{sorted(map(str, spec))}")
    form, body = next(iter(spec.items()))
    if form == "vector":
        if not isinstance(body, list):
            raise ValueError("'vector' must be a list of numbers, one per cell")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in body):
            raise ValueError("'vector' must hold numbers only")
        return _weights(domain, body)
    if not isinstance(body, dict) or not body:
        raise ValueError(f"{form!r} must map at least one attribute name to "
                         f"{'a code' if form == 'cell' else 'a [low, high] pair of codes'}")
    mask = np.ones(domain.shape, dtype=bool)
    for attr, value in body.items():
        if attr not in domain:
            raise ValueError(f"unknown attribute {attr!r}; the domain has "
                             f"{list(domain.attributes)}")
        axis = domain.axis(attr)
        size = domain.shape[axis]
        pair = (value, value) if form == "cell" else _pair(attr, value)
        low, high = (_code(form, attr, code, size) for code in pair)
        if low > high:
            raise ValueError(f"range of {attr!r}: low {low} is above high {high}")
        keep = np.zeros(size, dtype=bool)
        keep[low:high + 1] = True
        shape = [1] * len(domain)
        shape[axis] = size
        mask &= keep.reshape(shape)
    return mask.reshape(-1).astype(np.float64)


def _pair(attr: str, value: object) -> tuple[object, object]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"range of {attr!r} must be a [low, high] pair of codes, got {value!r}")
    return value[0], value[1]


def _code(form: str, attr: str, code: object, size: int) -> int:
    if not _is_int(code) or not 0 <= code < size:
        raise ValueError(f"{form} of {attr!r}: codes must be integers in 0..{size - 1}, "
                         f"got {code!r}")
    return code


def _is_int(value: object) -> TypeGuard[int]:
    """An integer, numpy's too (they compare and index as ints), never a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
