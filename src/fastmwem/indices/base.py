"""The top-k oracle protocol shared by indices and structured workloads.

An oracle holds ``n_keys`` key vectors of dimension ``dimension`` and answers maximum
inner-product searches in faiss's shape: ``search(queries, k)`` returns ``(scores, ids)`` of
shape ``(n_queries, k)``, best first, padded with score ``-inf`` and id ``-1`` when fewer than
``k`` keys exist. ``score(ids, query)`` gives the exact inner products of chosen keys, which the
lazy exponential mechanism needs for the tail candidates it draws.

``search`` must return, for the keys it lists, exactly the scores ``score`` returns for them
(the lazy mechanism compares the two). An oracle that can also rank by absolute value in one pass
offers ``search_abs`` (:class:`AbsTopKOracle`); the lazy mechanism's absolute and complement modes
use it when present, and otherwise search ``v`` and ``-v`` and merge.

``exact`` says whether ``search`` always returns a true top-k set (ties broken arbitrarily). An
oracle that is not exact gives no privacy guarantee to a mechanism that trusts it, unless it
carries a certified approximation bound ``certified_gap`` (in score units): no key outside the
returned set beats the smallest returned score by more than that gap.

Workloads meet this protocol structurally (they never import this module), so indices and
workloads stay independent of each other.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["TopKOracle", "AbsTopKOracle"]


@runtime_checkable
class TopKOracle(Protocol):
    """Exact (or certified approximate) maximum inner-product search over a fixed key set."""

    @property
    def n_keys(self) -> int:
        """Number of keys (candidates)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every key and query vector."""
        ...

    @property
    def exact(self) -> bool:
        """True when ``search`` always returns a true top-k set."""
        ...

    @property
    def certified_gap(self) -> float | None:
        """For an inexact oracle, a proven bound on how far a missed key can beat the k-th
        returned score (score units); ``0.0`` for exact oracles, ``None`` when nothing is
        certified."""
        ...

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` keys by inner product with each row of ``queries`` (shape ``(n, d)``).

        Returns ``(scores, ids)``, both of shape ``(n, k)``, best first; float64 scores and
        int64 ids, padded with ``-inf`` / ``-1`` where fewer than ``k`` keys exist.
        """
        ...

    def score(self, ids: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Exact inner products of the keys ``ids`` with the vector ``query`` (float64)."""
        ...


@runtime_checkable
class AbsTopKOracle(TopKOracle, Protocol):
    """An oracle that also ranks keys by the absolute value of their score, in one pass."""

    def search_abs(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` keys by ``|<key, query>|`` for each row, best first; the returned scores keep
        their sign (they are the inner products). Shapes and padding as ``search``."""
        ...
