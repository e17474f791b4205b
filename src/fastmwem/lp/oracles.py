"""Top-k oracles for the fast (lazy) selections of the LP solvers, and the rule for which may run.

The keys of the scalar-private LP, ``[A_i, -b_i]``, hold the private ``b``; the keys of the
constraint-private dual oracle, ``-A_{:,j} / c'_j``, hold the private ``A``. An approximate index
(IVF, HNSW) misses keys depending on those private values, so its output law, and the privacy of
the run, would depend on them too. Only exact oracles, or oracles with a certified gap (which the
lazy mechanism absorbs exactly), run in the private path; every index built here is private, so
``save`` refuses.
"""

from __future__ import annotations

import numpy as np

from fastmwem.indices import TopKOracle, make_index
from fastmwem.indices.warm import WarmStartIndex

__all__ = ["check_index_spec", "scalar_oracle", "dense_oracle", "SCALAR_DEFAULT", "DENSE_DEFAULT"]

#: Default oracle of the fast scalar solver: exact, and sublinear while the iterates move little.
SCALAR_DEFAULT = "warm"
#: Default oracle of the fast dual oracle (the candidates are the d vertices).
DENSE_DEFAULT = "flat"


def check_index_spec(index: object, dimension: int, *, scalar: bool) -> str:
    """Refuse (ValueError) an index that is not exact or certified, before any data is read.

    ``"warm"`` (scalar LP only) and ``"flat"`` are exact; a faiss or hnswlib spec is built empty
    to read its ``exact`` / ``certified_gap`` flags (that needs ``pip install "fastmwem[ann]"``).
    """
    default = SCALAR_DEFAULT if scalar else DENSE_DEFAULT
    spec = default if index is None else index
    if not isinstance(spec, str):
        raise TypeError(f"index must be an index name such as 'flat', got {type(spec).__name__}")
    if spec == "warm":
        if not scalar:
            raise ValueError("index='warm' serves the scalar-private LP (keys [A_i, -b_i]); the "
                             "constraint-private dual oracle takes 'flat' or 'faiss:Flat'")
        return spec
    if spec == "bitpacked":
        raise ValueError("index='bitpacked' needs 0/1 keys; the LP keys ([A_i, -b_i], or "
                         "-A_{:,j} / c_j) are real-valued: use 'flat'")
    empty = make_index(spec, dimension=dimension, private=True,
                       **({"progress": False} if spec != "flat" else {}))
    gap = getattr(empty, "certified_gap", None)
    if not (empty.exact or gap is not None):
        raise ValueError(
            f"index={spec!r} is approximate without a certified gap: its recall depends on the "
            "private keys, so the exponential mechanism's law (and privacy) would too. Only exact "
            "or certified oracles run in the private path: use 'flat'"
            + (" or 'warm'" if scalar else "") + " (benchmarks may time approximate indices "
            "outside the solver)")
    return spec


def scalar_oracle(A: np.ndarray, b: np.ndarray, spec: str, *, objective: np.ndarray | None = None
                  ) -> TopKOracle:
    """A private oracle over the scalar LP's rows, for queries ``[x, 1]``.

    With ``objective`` (the public ``c``), one more key stands for the objective row
    ``c x <= w``: for ``"warm"`` call ``with_extra_rows`` per target; for other indices the keys
    are ``[A_i, -b_i, 0]`` and ``[c, 0, 1]``, queried with ``[x, 1, -w]``, so one index serves
    every target.
    """
    if spec == "warm":
        return WarmStartIndex(A, -b)
    m = A.shape[0]
    # float32 keys when that loses nothing (the index then stores half the bytes)
    narrow = A.dtype == np.float32 and bool(np.all(b.astype(np.float32) == b)) and (
        objective is None or bool(np.all(objective.astype(np.float32) == objective)))
    dtype = np.float32 if narrow else np.float64
    if objective is None:
        keys = np.empty((m, A.shape[1] + 1), dtype=dtype)
        keys[:, :-1] = A
        keys[:, -1] = -b
    else:
        keys = np.zeros((m + 1, A.shape[1] + 2), dtype=dtype)
        keys[:m, :-2] = A
        keys[:m, -2] = -b
        keys[m, :-2] = objective
        keys[m, -1] = 1.0
    return make_index(spec, keys, private=True, **({"progress": False} if spec != "flat" else {}))


def dense_oracle(A: np.ndarray, c_pos: np.ndarray, spec: str) -> TopKOracle:
    """A private oracle over the d vertex keys ``-A_{:,j} / c'_j`` (dimension m), for queries
    ``z y`` (target ``z``, dense distribution ``y``): the scores are the dual oracle's."""
    keys = -(np.asarray(A, dtype=np.float64) / c_pos).T
    return make_index(spec, keys, private=True, **({"progress": False} if spec != "flat" else {}))
