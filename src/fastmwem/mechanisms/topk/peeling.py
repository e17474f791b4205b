"""Baselines for private top-k: peeling (permute-and-flip, Gumbel), Laplace and Gamma noise.

All follow Gillenwater et al. (ICML 2022), Section 4 and Appendix C.3, and their public code.
Counts are validated as non-negative integers; noise is added to the exact integer gaps to the
largest count, so very large counts lose no precision as long as the gaps are below 2**53.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_noise_scale, check_probability
from fastmwem.accounting import Accountant, ApproxDP, PureDP
from fastmwem.mechanisms.topk._common import TopKMechanism, delta_of

if TYPE_CHECKING:
    from fastmwem.random import RNGLike

__all__ = [
    "PNFPeel",
    "CDPPeel",
    "LaplaceTopK",
    "GammaTopK",
    "pnf_peel",
    "cdp_peel",
    "laplace_topk",
    "gamma_topk",
    "cdp_peel_epsilon",
    "cdp_peel_local_epsilon",
]


def _gaps(counts: np.ndarray) -> np.ndarray:
    """``c_j - max(c)`` as float64, computed exactly in int64 first."""
    return (counts - counts.max()).astype(np.float64)


def _sorted_top_k(noisy: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest entries, largest first."""
    if k == noisy.size:
        part = np.arange(k)
    else:
        part = np.argpartition(-noisy, k - 1)[:k]
    return part[np.argsort(-noisy[part], kind="stable")]


def cdp_peel_epsilon(local_epsilon: float, k: int, delta: float) -> float:
    """Total epsilon of k Gumbel-peeling rounds at ``local_epsilon`` each (Lemma 4.2).

    ``epsilon = k eps'^2 / 8 + eps' sqrt(k ln(1/delta) / 2)`` (Durfee and Rogers 2019, via
    bounded-range composition), at the given ``delta``.
    """
    e = check_epsilon(local_epsilon, "local_epsilon")
    k = check_int(k, "k", minimum=1)
    dl = check_probability(delta, "delta")
    return k * e * e / 8.0 + e * math.sqrt(k * math.log(1.0 / dl) / 2.0)


def cdp_peel_local_epsilon(epsilon: float, k: int, delta: float) -> float:
    """Per-round epsilon of CDP-Peel for a total ``(epsilon, delta)``.

    The larger of ``epsilon / k`` (basic composition) and the inverse of Lemma 4.2,
    ``sqrt(8 (ln(1/delta) + epsilon) / k) - sqrt(8 ln(1/delta) / k)``, rounded down so that
    :func:`cdp_peel_epsilon` of it never exceeds ``epsilon``.
    """
    eps = check_epsilon(epsilon)
    k = check_int(k, "k", minimum=1)
    dl = check_probability(delta, "delta")
    log_inv = math.log(1.0 / dl)
    local = math.sqrt(8.0 * (log_inv + eps) / k) - math.sqrt(8.0 * log_inv / k)
    while local > 0 and cdp_peel_epsilon(local, k, dl) > eps:
        local = math.nextafter(local, 0.0)
    return max(eps / k, local)


@dataclass(frozen=True)
class _NoisyCounts(TopKMechanism):
    """Noise added once to every count (as exact integer gaps to the largest); the k largest win."""

    @abc.abstractmethod
    def _noise(self, d: int, rng: np.random.Generator) -> np.ndarray:
        """``d`` noise values, one per count."""

    def _select(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return _sorted_top_k(_gaps(counts) + self._noise(counts.size, rng), self.k)


@dataclass(frozen=True)
class PNFPeel(TopKMechanism):
    """k rounds of permute-and-flip on the remaining counts (Algorithm 2, McKenna-Sheldon 2020).

    Each round adds fresh ``Expo(epsilon / (k * Delta'))`` noise to the counts of the items not
    chosen yet and takes the largest (report-noisy-max with exponential noise = permute-and-flip).
    With ``neighbors="add-remove"`` the counts are a monotone utility of sensitivity 1, so
    ``Delta' = 1`` (no factor 2); with ``"replace"`` counts move by at most 1 in either
    direction and ``Delta' = 2``.

    Privacy: ``epsilon``-DP by basic composition of k ``epsilon/k``-DP rounds
    (``PureDP(epsilon)``). Time O(d k), memory O(d).
    """

    neighbors: str = "add-remove"
    label: ClassVar[str] = "pnf-peel top-k"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_noise_scale(self.k * delta_of(self.neighbors), float(self.epsilon), "pnf-peel")

    @property
    def rate(self) -> float:
        return float(self.epsilon) / (self.k * delta_of(self.neighbors))

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def _select(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = _gaps(counts)
        scale = 1.0 / self.rate
        out = np.empty(self.k, dtype=np.int64)
        noise = np.empty_like(x)
        for r in range(self.k):
            rng.standard_exponential(out=noise)
            noise *= scale
            noise += x  # chosen items hold -inf and stay out
            j = int(np.argmax(noise))
            out[r] = j
            x[j] = -np.inf
        return out


@dataclass(frozen=True)
class CDPPeel(_NoisyCounts):
    """One-shot Gumbel peeling (Durfee and Rogers 2019; Algorithm 3 of Gillenwater et al.).

    Adds ``Gumbel(Delta' / eps')`` noise to every count and returns the k largest, largest first;
    this is k rounds of the exponential mechanism ``P(j) ~ exp(eps' c_j / Delta')`` on the
    remaining items. ``eps' = cdp_peel_local_epsilon(epsilon, k, delta)``. ``Delta' = 1`` for
    add-remove neighbours (monotone counts), 2 for replace.

    Privacy: ``(epsilon, delta)``-DP (``ApproxDP(epsilon, delta)``) by Lemma 4.2 (bounded-range
    composition); when ``eps' = epsilon / k`` it is even ``epsilon``-DP. Time O(d + k log k).
    """

    delta: float = 1e-6
    neighbors: str = "add-remove"
    label: ClassVar[str] = "cdp-peel top-k"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_probability(self.delta, "delta")
        check_noise_scale(delta_of(self.neighbors), self.local_epsilon, "cdp-peel")

    @property
    def local_epsilon(self) -> float:
        return cdp_peel_local_epsilon(self.epsilon, self.k, self.delta)

    @property
    def privacy(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    def _noise(self, d: int, rng: np.random.Generator) -> np.ndarray:
        return rng.gumbel(scale=delta_of(self.neighbors) / self.local_epsilon, size=d)


@dataclass(frozen=True)
class LaplaceTopK(_NoisyCounts):
    """Noisy top-k with Laplace noise (Ding et al. 2021; Qiao et al. 2021; paper App. C.3).

    Adds ``Laplace(Delta' * min(k, c) / epsilon)`` to every count and returns the k largest,
    largest first. ``c`` is the largest number of items one user contributes to (``None``: any
    number, i.e. ``d``); ``Delta' = 1`` for add-remove neighbours (monotone counts), 2 for replace.

    Privacy: ``epsilon``-DP (``PureDP(epsilon)``).
    """

    max_items_per_user: int | None = None
    neighbors: str = "add-remove"
    label: ClassVar[str] = "laplace top-k"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_items_per_user is not None:
            check_int(self.max_items_per_user, "max_items_per_user", minimum=1)
        check_noise_scale(delta_of(self.neighbors) * self.k, float(self.epsilon), "laplace top-k")

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def scale(self, d: int) -> float:
        c = d if self.max_items_per_user is None else min(d, self.max_items_per_user)
        return delta_of(self.neighbors) * min(self.k, c) / float(self.epsilon)

    def _noise(self, d: int, rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(scale=self.scale(d), size=d)


@dataclass(frozen=True)
class GammaTopK(_NoisyCounts):
    """Noisy top-k with the l_inf exponential mechanism's noise (Steinke and Ullman, Thm 4.1).

    Draws ``r ~ Gamma(d + 1, 1 / epsilon)`` and adds ``r * Uniform(-1, 1)`` to every count (a
    draw from the density proportional to ``exp(-epsilon ||z||_inf)``), then returns the k
    largest, largest first. Every count moves by at most 1 under both add-remove and replace
    neighbours, so the l_inf sensitivity is 1 for both.

    Privacy: ``epsilon``-DP (``PureDP(epsilon)``).
    """

    neighbors: str = "add-remove"
    label: ClassVar[str] = "gamma top-k"

    def _check_size(self, d: int) -> None:
        super()._check_size(d)
        check_noise_scale(2.0 * (d + 40), float(self.epsilon), "gamma top-k")

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def _noise(self, d: int, rng: np.random.Generator) -> np.ndarray:
        radius = rng.gamma(d + 1, 1.0 / float(self.epsilon))
        return radius * rng.uniform(-1.0, 1.0, size=d)


def pnf_peel(counts: object, k: int, *, epsilon: float, rng: RNGLike = None,
             neighbors: str = "add-remove", accountant: Accountant | None = None) -> np.ndarray:
    """Permute-and-flip peeling; ``epsilon``-DP. See :class:`PNFPeel`."""
    return PNFPeel(k, epsilon, neighbors).select(counts, rng=rng, accountant=accountant)


def cdp_peel(counts: object, k: int, *, epsilon: float, delta: float = 1e-6,
             rng: RNGLike = None, neighbors: str = "add-remove",
             accountant: Accountant | None = None) -> np.ndarray:
    """One-shot Gumbel peeling; ``(epsilon, delta)``-DP. See :class:`CDPPeel`."""
    return CDPPeel(k, epsilon, delta, neighbors).select(counts, rng=rng, accountant=accountant)


def laplace_topk(counts: object, k: int, *, epsilon: float, rng: RNGLike = None,
                 max_items_per_user: int | None = None, neighbors: str = "add-remove",
                 accountant: Accountant | None = None) -> np.ndarray:
    """Laplace noisy top-k; ``epsilon``-DP. See :class:`LaplaceTopK`."""
    return LaplaceTopK(k, epsilon, max_items_per_user, neighbors).select(
        counts, rng=rng, accountant=accountant)


def gamma_topk(counts: object, k: int, *, epsilon: float, rng: RNGLike = None,
               neighbors: str = "add-remove", accountant: Accountant | None = None) -> np.ndarray:
    """Gamma (l_inf) noisy top-k; ``epsilon``-DP. See :class:`GammaTopK`."""
    return GammaTopK(k, epsilon, neighbors).select(counts, rng=rng, accountant=accountant)
