"""The joint exponential mechanism for top-k, its permute-and-flip version, and the pruned one."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_probability
from fastmwem.accounting import Accountant, BoundedRange, PureDP
from fastmwem.mechanisms.base import charge
from fastmwem.mechanisms.seeding import warn_if_seeded
from fastmwem.mechanisms.topk._common import (
    check_counts,
    check_k,
    check_k_fits,
    check_neighbors,
    delta_of,
)
from fastmwem.mechanisms.topk._levels import SortedCounts, default_level_cap, log_num_sequences
from fastmwem.mechanisms.topk._samplers import (
    sample_joint,
    sample_pnf_joint,
    sample_pruned_joint,
)
from fastmwem.random import make_rng

__all__ = ["JointTopK", "PNFJointTopK", "PrunedJointTopK", "joint", "pnf_joint", "pruned_joint"]

# Bound on the weight of the levels beyond the automatic cap, relative to level 0. It only sets
# how rarely the (exact) rejection step for deep levels runs.
_TAIL_BETA = 1e-10


def _check_cap(level_cap: object) -> None:
    if level_cap is not None:
        check_int(level_cap, "level_cap", minimum=0)


@dataclass(frozen=True)
class _JointBase:
    k: int
    epsilon: float
    neighbors: str = "add-remove"
    level_cap: int | None = None

    def __post_init__(self) -> None:
        check_k(self.k)
        check_epsilon(self.epsilon)
        check_neighbors(self.neighbors)
        _check_cap(self.level_cap)

    @property
    def sensitivity(self) -> int:
        """Sensitivity of u*(S): 1 for add-remove neighbours, 2 for replace."""
        return delta_of(self.neighbors)

    @property
    def scale(self) -> float:
        """``lambda = epsilon / (2 * sensitivity)``, the weight of one unit of error."""
        return float(self.epsilon) / (2.0 * self.sensitivity)

    def _prepare(self, counts: object, rng: object, accountant: Accountant | None,
                 label: str) -> tuple[SortedCounts, np.random.Generator, int]:
        values = check_counts(counts)
        check_k_fits(self.k, values.size)
        generator = make_rng(rng)
        warn_if_seeded(rng, label, stacklevel=4)
        charge(accountant, self.privacy, label)  # type: ignore[attr-defined]
        sc = SortedCounts(values, self.k)
        if self.level_cap is None:
            last = default_level_cap(sc, self.scale, _TAIL_BETA)
        else:
            last = min(int(self.level_cap), sc.span)
        return sc, generator, last


@dataclass(frozen=True)
class JointTopK(_JointBase):
    """The joint exponential mechanism for top-k (Gillenwater et al., ICML 2022, Algorithm 1).

    Outputs an ordered sequence ``S`` of ``k`` distinct items, best first, with probability
    proportional to ``exp(epsilon * u*(S) / (2 * Delta))`` where
    ``u*(S) = -max_i (c_(i) - c_{s_i})`` and ``c_(1) >= ... >= c_(d)`` are the sorted counts.

    Privacy: ``epsilon``-DP, in fact ``epsilon``-bounded range (``privacy`` is
    ``BoundedRange(epsilon)``). Neighbouring relation: each user adds at most 1 to each item
    count (any number of items); ``neighbors="add-remove"`` (one user added or removed) gives
    ``Delta = 1``, ``"replace"`` (one user's items changed) gives ``Delta = 2``.

    Sampling (Wu and Zhang, NeurIPS 2024 counting): sequences are counted per integer error
    level in log space, with exact integer comparisons of counts; error levels beyond
    ``level_cap`` (default: Wu and Zhang's threshold for a 1e-10 tail bound, capped by the
    count range) are reached lazily by exact rejection, so the law is exactly Joint's for every
    ``level_cap`` and only the speed depends on it (a cap far below the default makes the
    rejection step slow; it exists for tuning and testing). Expected time
    O(d log d + k^2 ln(d)/eps), and no more than k times the number of distinct count
    differences when the count range is wide; memory O(d + k) plus a bounded chunk of the
    level table.

    >>> JointTopK(k=2, epsilon=50.0).select([3, 90, 7, 60], rng=0).tolist()
    [1, 3]
    """

    @property
    def privacy(self) -> BoundedRange:
        return BoundedRange(self.epsilon)

    def select(self, counts: object, *, rng: object = None,
               accountant: Accountant | None = None) -> np.ndarray:
        """Return ``k`` distinct indices into ``counts``, best first."""
        sc, generator, last = self._prepare(counts, rng, accountant, "joint top-k")
        return sc.items(sample_joint(sc, self.scale, last, generator))


@dataclass(frozen=True)
class PNFJointTopK(_JointBase):
    """Permute-and-flip over all top-k sequences (Gillenwater et al. 2022, Appendix D).

    Report-noisy-max with ``Expo(epsilon / (2 * Delta))`` noise on ``u*(S)`` for every ordered
    sequence ``S`` of ``k`` distinct items (equivalently permute-and-flip, McKenna and Sheldon
    2020; Ding et al. 2021). The noise of all sequences with one error level is drawn at once as
    a maximum of exponentials, in log space, so it works for every ``k`` (the reference overflows
    beyond ``k`` of about 60 at ``d = 166,000``).

    Privacy: ``epsilon``-DP (``PureDP(epsilon)``). Neighbouring relation and ``Delta`` as for
    :class:`JointTopK`; the factor 2 stays because ``u*`` is not monotone.

    >>> PNFJointTopK(k=2, epsilon=50.0).select([3, 90, 7, 60], rng=0).tolist()
    [1, 3]
    """

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def select(self, counts: object, *, rng: object = None,
               accountant: Accountant | None = None) -> np.ndarray:
        """Return ``k`` distinct indices into ``counts``, best first."""
        sc, generator, last = self._prepare(counts, rng, accountant, "pnf-joint top-k")
        return sc.items(sample_pnf_joint(sc, self.scale, last, generator))


@dataclass(frozen=True)
class PrunedJointTopK:
    """Wu and Zhang's pruned joint mechanism (NeurIPS 2024): Joint with a clipped utility.

    Outputs ``S`` with probability proportional to
    ``exp(-epsilon * min(err(S), tau) / (2 * Delta))``, ``err(S) = max_i (c_(i) - c_{s_i})``,
    with the data-independent threshold
    ``tau = ceil((2 Delta / epsilon) (sum_{i=d-k+1}^{d} ln i + ln(1/beta)))``. Its law is within
    ``beta`` of Joint's in total variation.

    Privacy: ``epsilon``-DP, ``epsilon``-bounded range (the clipped utility keeps sensitivity
    ``Delta``; ``tau`` depends only on ``d``, ``k``, ``epsilon`` and ``beta``). Neighbouring
    relation and ``Delta`` as for :class:`JointTopK`. Sampled exactly, including the clipped
    level (by rejection from uniform sequences).
    """

    k: int
    epsilon: float
    beta: float = 1e-6
    neighbors: str = "add-remove"

    def __post_init__(self) -> None:
        check_k(self.k)
        check_epsilon(self.epsilon)
        check_probability(self.beta, "beta")
        check_neighbors(self.neighbors)

    @property
    def scale(self) -> float:
        return float(self.epsilon) / (2.0 * delta_of(self.neighbors))

    @property
    def privacy(self) -> BoundedRange:
        return BoundedRange(self.epsilon)

    def tau(self, d: int) -> int:
        """The clipping threshold for ``d`` items."""
        check_k_fits(self.k, check_int(d, "d", minimum=1))
        return math.ceil((log_num_sequences(d, self.k) + math.log(1.0 / self.beta)) / self.scale)

    def select(self, counts: object, *, rng: object = None,
               accountant: Accountant | None = None) -> np.ndarray:
        """Return ``k`` distinct indices into ``counts``, best first."""
        values = check_counts(counts)
        check_k_fits(self.k, values.size)
        generator = make_rng(rng)
        warn_if_seeded(rng, "pruned joint top-k")
        tau = self.tau(values.size)
        charge(accountant, self.privacy, "pruned joint top-k")
        sc = SortedCounts(values, self.k)
        return sc.items(sample_pruned_joint(sc, self.scale, tau, generator))


def joint(counts: object, k: int, *, epsilon: float, rng: object = None,
          neighbors: str = "add-remove", accountant: Accountant | None = None) -> np.ndarray:
    """Private top-k by the joint exponential mechanism; see :class:`JointTopK`.

    Privacy: ``epsilon``-DP (bounded range). ``neighbors``: ``"add-remove"`` (Delta 1) or
    ``"replace"`` (Delta 2), each user adding at most 1 to each count.
    """
    return JointTopK(k, epsilon, neighbors).select(counts, rng=rng, accountant=accountant)


def pnf_joint(counts: object, k: int, *, epsilon: float, rng: object = None,
              neighbors: str = "add-remove", accountant: Accountant | None = None) -> np.ndarray:
    """Private top-k by permute-and-flip over sequences; see :class:`PNFJointTopK`.

    Privacy: ``epsilon``-DP. ``neighbors`` as for :func:`joint`.
    """
    return PNFJointTopK(k, epsilon, neighbors).select(counts, rng=rng, accountant=accountant)


def pruned_joint(counts: object, k: int, *, epsilon: float, beta: float = 1e-6,
                 rng: object = None, neighbors: str = "add-remove",
                 accountant: Accountant | None = None) -> np.ndarray:
    """Private top-k by Wu and Zhang's clipped-utility joint mechanism; see :class:`PrunedJointTopK`.

    Privacy: ``epsilon``-DP (bounded range). ``neighbors`` as for :func:`joint`.
    """
    return PrunedJointTopK(k, epsilon, beta, neighbors).select(counts, rng=rng,
                                                               accountant=accountant)
