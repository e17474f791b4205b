"""The joint exponential mechanism for top-k, its permute-and-flip version, and the pruned one."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from fastmwem._validation import check_int, check_probability
from fastmwem.accounting import Accountant, BoundedRange, PureDP
from fastmwem.mechanisms.topk._common import TopKMechanism, check_k_fits, delta_of
from fastmwem.mechanisms.topk._levels import (
    SortedCounts,
    count_span,
    default_level_cap,
    log_num_sequences,
)
from fastmwem.mechanisms.topk._samplers import (
    sample_joint,
    sample_pnf_joint,
    sample_pruned_joint,
)

if TYPE_CHECKING:
    from fastmwem.random import RNGLike

__all__ = ["JointTopK", "PNFJointTopK", "PrunedJointTopK", "joint", "pnf_joint", "pruned_joint",
           "MAX_TABLE_CELLS"]

# Bound on the weight of the levels beyond the automatic cap, relative to level 0. It only sets
# how rarely the (exact) rejection step for deep levels runs.
_TAIL_BETA = 1e-10

# Largest (levels x k) table the joint samplers may have to build, as bounded from the public
# parameters (d, k, epsilon, level cap) alone. A cell costs at most one step of the level pass,
# about 15-35 ns of CPU on the 2-core development machine, so the limit keeps a call under
# about 10 s of CPU; beyond it the call is refused before the charge instead of running for
# minutes or hours.
MAX_TABLE_CELLS = 1 << 28

# Largest bound on the weight of the levels beyond an explicit level_cap (relative to level 0's
# at least 1): the rejection step then takes at most about this many attempts on average.
_MAX_TAIL_WEIGHT = 1e6


def _check_cap(level_cap: object) -> None:
    if level_cap is not None:
        check_int(level_cap, "level_cap", minimum=0)


def _check_table(name: str, k: int, d: int, epsilon: float, levels: int) -> None:
    """Refuse a (levels x k) table above :data:`MAX_TABLE_CELLS`, naming the figures."""
    cells = k * levels
    if cells > MAX_TABLE_CELLS:
        raise ValueError(
            f"{name} with k={k} over d={d} items at epsilon={epsilon:g} may have to count "
            f"{levels:,} error levels x k = {cells:.3g} table cells, above the limit of "
            f"{MAX_TABLE_CELLS:,} (seconds); the levels needed grow like "
            f"2 Delta k ln(d) / epsilon. Use a smaller k or a larger epsilon, or a method "
            f"whose time does not grow with k^2 (cdp-peel, laplace or gamma)"
        )


@dataclass(frozen=True)
class _JointBase(TopKMechanism):
    neighbors: str = "add-remove"
    level_cap: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_cap(self.level_cap)

    @property
    def sensitivity(self) -> int:
        """Sensitivity of u*(S): 1 for add-remove neighbours, 2 for replace."""
        return delta_of(self.neighbors)

    @property
    def scale(self) -> float:
        """``lambda = epsilon / (2 * sensitivity)``, the weight of one unit of error."""
        return float(self.epsilon) / (2.0 * self.sensitivity)

    def _check_size(self, d: int) -> None:
        # The cost bound uses public figures only: refusing on the count range would let the
        # refusal itself depend on the data.
        super()._check_size(d)
        log_sequences = log_num_sequences(d, self.k)
        need = math.ceil((log_sequences + math.log(1.0 / _TAIL_BETA)) / self.scale)
        if self.level_cap is not None:
            tail = log_sequences - self.scale * (self.level_cap + 1)
            if self.level_cap < need and tail > math.log(_MAX_TAIL_WEIGHT):
                raise ValueError(
                    f"level_cap={self.level_cap} is too low for k={self.k}, d={d}, "
                    f"epsilon={self.epsilon:g}: the levels beyond it may weigh up to "
                    f"e^{tail:.0f} times level 0, too much for the rejection step; use "
                    f"level_cap >= {need:,} or None"
                )
            need = min(need, self.level_cap)
        _check_table(self.label, self.k, d, self.epsilon, need + 1)

    def _levels(self, counts: np.ndarray) -> tuple[SortedCounts, int]:
        span = count_span(counts)
        if self.level_cap is None:
            last = default_level_cap(counts.size, self.k, span, self.scale, _TAIL_BETA)
        else:
            last = min(int(self.level_cap), span)
        return SortedCounts(counts, self.k, depth=last, span=span), last


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
    rejection step slow; it exists for tuning and testing). Expected time O(d) for a few
    passes over the counts, plus one step per (top-k position, count value within the cap
    below it) pair, at most ``k (L + 1)`` (about ``k^2 ln(d)/eps``); only the counts within
    ``L`` of the k-th largest are copied (sorted only when their values are sparse), so memory
    is O(n + k) for those n counts, plus bounded chunks, whatever the counts' distribution. A
    call whose table may exceed :data:`MAX_TABLE_CELLS` cells by the public bound
    ``k (2 Delta / epsilon)(ln(d!/(d-k)!) + ln 1e10)`` is refused before the charge (at
    ``d = 166,000`` and ``epsilon = 1``: ``k`` up to 3,342), and so is a ``level_cap`` that
    leaves the rejection step more than about a million attempts.

    >>> JointTopK(k=2, epsilon=50.0).select([3, 90, 7, 60], rng=0).tolist()
    [1, 3]
    """

    label: ClassVar[str] = "joint top-k"

    @property
    def privacy(self) -> BoundedRange:
        return BoundedRange(self.epsilon)

    def _select(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        sc, last = self._levels(counts)
        return sample_joint(sc, self.scale, last, rng)


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

    label: ClassVar[str] = "pnf-joint top-k"

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def _select(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        sc, last = self._levels(counts)
        return sample_pnf_joint(sc, self.scale, last, rng)


@dataclass(frozen=True)
class PrunedJointTopK(TopKMechanism):
    """Wu and Zhang's pruned joint mechanism (NeurIPS 2024): Joint with a clipped utility.

    Outputs ``S`` with probability proportional to
    ``exp(-epsilon * min(err(S), tau) / (2 * Delta))``, ``err(S) = max_i (c_(i) - c_{s_i})``,
    with the data-independent threshold
    ``tau = ceil((2 Delta / epsilon) (sum_{i=d-k+1}^{d} ln i + ln(1/beta)))``. Its law is within
    ``beta`` of Joint's in total variation.

    Privacy: ``epsilon``-DP, ``epsilon``-bounded range (the clipped utility keeps sensitivity
    ``Delta``; ``tau`` depends only on ``d``, ``k``, ``epsilon`` and ``beta``). Neighbouring
    relation and ``Delta`` as for :class:`JointTopK`. Sampled exactly, including the clipped
    level (by rejection from uniform sequences). A table of ``k (tau + 1)`` cells above
    :data:`MAX_TABLE_CELLS` is refused before the charge.
    """

    beta: float = 1e-6
    neighbors: str = "add-remove"
    label: ClassVar[str] = "pruned joint top-k"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_probability(self.beta, "beta")

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

    def _check_size(self, d: int) -> None:
        super()._check_size(d)
        _check_table(self.label, self.k, d, self.epsilon, self.tau(d) + 1)

    def _select(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        tau = self.tau(counts.size)
        span = count_span(counts)
        sc = SortedCounts(counts, self.k, depth=min(tau - 1, span), span=span)
        return sample_pruned_joint(sc, self.scale, tau, rng)


def joint(counts: object, k: int, *, epsilon: float, rng: RNGLike = None,
          neighbors: str = "add-remove", accountant: Accountant | None = None) -> np.ndarray:
    """Private top-k by the joint exponential mechanism; see :class:`JointTopK`.

    Privacy: ``epsilon``-DP (bounded range). ``neighbors``: ``"add-remove"`` (Delta 1) or
    ``"replace"`` (Delta 2), each user adding at most 1 to each count.
    """
    return JointTopK(k, epsilon, neighbors).select(counts, rng=rng, accountant=accountant)


def pnf_joint(counts: object, k: int, *, epsilon: float, rng: RNGLike = None,
              neighbors: str = "add-remove", accountant: Accountant | None = None) -> np.ndarray:
    """Private top-k by permute-and-flip over sequences; see :class:`PNFJointTopK`.

    Privacy: ``epsilon``-DP. ``neighbors`` as for :func:`joint`.
    """
    return PNFJointTopK(k, epsilon, neighbors).select(counts, rng=rng, accountant=accountant)


def pruned_joint(counts: object, k: int, *, epsilon: float, beta: float = 1e-6,
                 rng: RNGLike = None, neighbors: str = "add-remove",
                 accountant: Accountant | None = None) -> np.ndarray:
    """Private top-k by Wu and Zhang's clipped-utility joint mechanism; see :class:`PrunedJointTopK`.

    Privacy: ``epsilon``-DP (bounded range). ``neighbors`` as for :func:`joint`.
    """
    return PrunedJointTopK(k, epsilon, beta, neighbors).select(counts, rng=rng,
                                                               accountant=accountant)
