"""Top-k oracles over a workload's query vectors, for the lazy selection of a round.

Everything here is built from the workload alone (public), never from the data.
"""

from __future__ import annotations

import numpy as np

__all__ = ["workload_oracle"]

#: Rows materialised at a time while an index is filled from a workload.
_BLOCK_ROWS = 8192


def workload_oracle(workload: object, index: object, *, allow_uncertified: bool) -> object:
    """The oracle a lazy round searches: the workload's own, a named index, or ``index`` itself.

    Raises:
        ValueError: an approximate index without a certificate and without the opt-in, or an
            oracle whose keys do not match the workload.
    """
    from fastmwem.indices import TopKOracle, make_index

    if index is None:
        own = getattr(workload, "top_k_oracle", None)
        if callable(own):
            return _checked(own(), workload, allow_uncertified)
        index = "bitpacked" if _is_binary(workload) else "flat"
    if isinstance(index, str):
        built = make_index(index, dimension=workload.domain.size)  # type: ignore[attr-defined]
        for start in range(0, workload.n_queries, _BLOCK_ROWS):  # type: ignore[attr-defined]
            stop = min(start + _BLOCK_ROWS, workload.n_queries)  # type: ignore[attr-defined]
            built.add(_rows(workload, start, stop))
        return _checked(built, workload, allow_uncertified)
    if not isinstance(index, TopKOracle):
        raise TypeError(f"index must be a name or a top-k oracle, got {type(index).__name__}")
    return _checked(index, workload, allow_uncertified)


def _checked(oracle: object, workload: object, allow_uncertified: bool) -> object:
    n, d = workload.n_queries, workload.domain.size  # type: ignore[attr-defined]
    if oracle.n_keys != n or oracle.dimension != d:  # type: ignore[attr-defined]
        raise ValueError(
            f"the oracle holds {oracle.n_keys} keys of dimension {oracle.dimension}; "  # type: ignore[attr-defined]
            f"the workload has {n} queries over {d} cells")
    if not oracle.exact and oracle.certified_gap is None and not allow_uncertified:  # type: ignore[attr-defined]
        raise ValueError(
            "the oracle is approximate with no certified gap: its output law would not be the "
            "exponential mechanism's and the run would have no exact privacy guarantee; pass "
            "allow_uncertified=True to run it anyway")
    return oracle


def _rows(workload: object, start: int, stop: int) -> np.ndarray:
    """Dense query vectors ``start .. stop - 1`` (float32 is exact for 0/1 and small integers)."""
    vectors = getattr(workload, "query_vectors", None)
    ids = np.arange(start, stop)
    if callable(vectors):
        return np.asarray(vectors(ids), dtype=np.float32)
    return np.stack([workload.row(int(q)) for q in ids]).astype(np.float32)  # type: ignore[attr-defined]


def _is_binary(workload: object) -> bool:
    """Whether every query vector is 0/1 (checked on a bounded prefix plus the flag if any)."""
    flag = getattr(workload, "binary_queries", None)
    if isinstance(flag, bool):
        return flag
    sample = _rows(workload, 0, min(workload.n_queries, 256))  # type: ignore[attr-defined]
    return bool(np.all((sample == 0) | (sample == 1)))
