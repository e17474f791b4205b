"""Helpers shared by the workload implementations (validation, projections, broadcasts)."""

from __future__ import annotations

import numpy as np

from fastmwem._validation import check_memory
from fastmwem.data.domain import Domain

__all__ = [
    "check_domain",
    "check_subset_count",
    "check_inplace_histogram",
    "check_log_factors",
    "flat_histogram",
    "merged_layout",
    "project",
    "broadcastable",
]


def check_domain(domain: object, name: str = "domain") -> Domain:
    """Return ``domain`` after checking it is a :class:`Domain`."""
    if not isinstance(domain, Domain):
        raise TypeError(f"{name} must be a Domain, got {type(domain).__name__}")
    return domain


# Python objects kept per attribute subset of a marginal or parity workload (axes, names,
# layout tuples, the duplicate check): a generous average.
_BYTES_PER_SUBSET = 512


def check_subset_count(count: int, what: str) -> None:
    """Refuse, before enumerating them, more attribute subsets than fit in memory."""
    check_memory(count * _BYTES_PER_SUBSET, f"{count} {what}")


def check_inplace_histogram(histogram: object, domain: Domain, name: str = "histogram") -> np.ndarray:
    """Return a flat *view* of ``histogram`` for an in-place update.

    The multiplicative-weights state is updated in place, so a copy would silently lose the
    update: the array must be a writable, C-contiguous float64 ndarray of ``domain.size`` cells
    (flat or of ``domain.shape``). Entries are not scanned for NaN: this is the per-update hot
    path, and an update may touch far fewer cells than the whole histogram.
    """
    if not isinstance(histogram, np.ndarray):
        raise TypeError(f"{name} must be a numpy array updated in place, got {type(histogram).__name__}")
    if histogram.dtype != np.float64:
        raise TypeError(f"{name} must have dtype float64 to be updated in place, got {histogram.dtype}")
    if histogram.shape != domain.shape and histogram.shape != (domain.size,):
        raise ValueError(
            f"{name} must have {domain.size} cells (domain shape {domain.shape}), got shape {histogram.shape}"
        )
    if not histogram.flags.c_contiguous or not histogram.flags.writeable:
        raise ValueError(f"{name} must be a writable C-contiguous array to be updated in place")
    return histogram.reshape(-1)


def flat_histogram(histogram: object, domain: Domain, name: str = "histogram") -> np.ndarray:
    """Return ``histogram`` as a flat float64 array of ``domain.size`` cells, checking the shape only.

    For ``answer_group``, which may read far fewer cells than the histogram holds; ``answer``
    uses :func:`~fastmwem.workloads.base.check_histogram`, which also rejects NaN and inf.
    """
    arr = np.asarray(histogram, dtype=np.float64)
    if arr.shape != domain.shape and arr.shape != (domain.size,):
        raise ValueError(
            f"{name} must have {domain.size} cells (domain shape {domain.shape}), got shape {arr.shape}"
        )
    return arr.reshape(-1)


def check_log_factors(log_factors: object, size: int, name: str = "log_factors") -> np.ndarray:
    """Return ``log_factors`` as a float64 vector of ``size`` finite entries."""
    arr = np.asarray(log_factors, dtype=np.float64)
    if arr.ndim == 0 and size == 1:
        arr = arr.reshape(1)
    if arr.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def merged_layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shape with each run of axes not in ``axes`` merged into one, and where ``axes`` landed.

    ``axes`` must be sorted. Reducing or broadcasting over a few merged axes is much faster in
    numpy than over many small ones.
    """
    merged: list[int] = []
    kept: list[int] = []
    run = 1
    wanted = set(axes)
    for i, n in enumerate(shape):
        if i in wanted:
            if run > 1:
                merged.append(run)
            run = 1
            kept.append(len(merged))
            merged.append(n)
        else:
            run *= n
    if run > 1:
        merged.append(run)
    return tuple(merged), tuple(kept)


def project(flat: np.ndarray, layout: tuple[tuple[int, ...], tuple[int, ...]]) -> np.ndarray:
    """The marginal of a flat histogram on the kept axes of ``layout`` (shape of the kept axes)."""
    merged, kept = layout
    other = tuple(i for i in range(len(merged)) if i not in kept)
    arr = flat.reshape(merged)
    return arr.sum(axis=other) if other else arr.copy()


def broadcastable(values: np.ndarray, layout: tuple[tuple[int, ...], tuple[int, ...]]) -> np.ndarray:
    """``values`` over the kept axes, reshaped to broadcast against ``flat.reshape(merged)``."""
    merged, kept = layout
    shape = [1] * len(merged)
    for pos in kept:
        shape[pos] = merged[pos]
    return np.asarray(values).reshape(shape)
