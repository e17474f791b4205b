"""The exponential mechanism (Gumbel-max) and permute-and-flip over a finite score vector."""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import comb

import numpy as np

from fastmwem._validation import check_epsilon, check_positive, check_scores
from fastmwem.accounting import Accountant, BoundedRange, PureDP
from fastmwem.mechanisms.base import charge
from fastmwem.random import RNGLike, make_rng

__all__ = ["ExponentialMechanism", "PermuteAndFlip"]


def _check_common(epsilon: object, sensitivity: object, monotonic: object) -> None:
    check_epsilon(epsilon)
    check_positive(sensitivity, "sensitivity")
    if not isinstance(monotonic, bool):
        raise TypeError(f"monotonic must be a bool, got {type(monotonic).__name__}")


def _log_weights(scores: np.ndarray, scale: float, top: float | None = None) -> np.ndarray:
    """``scale * (scores - top)`` with overflow mapped to ``-inf`` (probability 0).

    ``top`` defaults to ``max(scores)``; the lazy mechanism passes the maximum over all
    candidates, of which ``scores`` may be a part.

    Shifting by the maximum first keeps every finite log-weight <= 0, so nothing is ever
    exponentiated above 1, whatever the magnitude of the scores or of epsilon. The difference is
    taken on halved scores, which cannot overflow even for scores near +-1.8e308. An infinite
    ``scale`` (epsilon / sensitivity beyond the float range) is the limit law: uniform on the
    maxima, which avoids the ``0 * inf = nan`` of the direct product.
    """
    top = scores.max() if top is None else top
    if math.isinf(scale):
        return np.where(scores == top, 0.0, -np.inf)
    half_gap = scores * 0.5 - top * 0.5
    with np.errstate(over="ignore"):
        out = (half_gap * scale) * 2.0
    out[np.isnan(out)] = -np.inf  # cannot happen for finite scores and scale; kept as a guard
    return out


@dataclass(frozen=True)
class _ScoreSelector:
    """Calibration shared by the selectors: epsilon, score sensitivity, monotonic flag."""

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False

    def __post_init__(self) -> None:
        _check_common(self.epsilon, self.sensitivity, self.monotonic)

    @property
    def scale(self) -> float:
        """Multiplier of a score in the log-weight: ``epsilon / (2 sensitivity)``, or
        ``epsilon / sensitivity`` when monotonic."""
        divisor = self.sensitivity if self.monotonic else 2.0 * self.sensitivity
        return float(self.epsilon) / float(divisor)


@dataclass(frozen=True)
class ExponentialMechanism(_ScoreSelector):
    """The exponential mechanism of McSherry and Talwar, sampled by Gumbel-max in log space.

    Selects index ``i`` with probability proportional to
    ``exp(epsilon * scores[i] / (2 * sensitivity))``, or ``exp(epsilon * scores[i] /
    sensitivity)`` when ``monotonic`` is true.

    Privacy: ``epsilon``-DP, and more precisely ``epsilon``-bounded range, hence
    ``epsilon**2 / 8``-zCDP (Cesar and Rogers 2021). Its ``privacy`` is ``BoundedRange(epsilon)``.

    Sensitivity assumption: on neighbouring datasets every score changes by at most
    ``sensitivity`` in absolute value; with ``monotonic=True`` additionally all scores move in
    the same direction. Source: the MWEM paper (arXiv:1012.4763) s.2.1; Fast-MWEM (arXiv:2602.03732) Lemma 3.2 (Gumbel-max).

    Numerics: log-weights are shifted by the maximum, so scores of magnitude 1e300 and epsilon up
    to 1e6 neither overflow nor produce NaN. The Gumbel noise is floating point (only the index
    is released): its law is within total variation ``(2m + 551) 2**-53`` of the exact
    mechanism's over ``m`` candidates, so a selection is ``(epsilon, (1 + e^epsilon) tau)``-DP
    with that ``tau`` (docs/exactness.md gives the proof and the measured figures).

    >>> mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    >>> mech.privacy
    BoundedRange(epsilon=1)
    >>> mech.select([0.0, 100.0, 0.0], rng=0)
    1
    """

    @property
    def privacy(self) -> BoundedRange:
        return BoundedRange(self.epsilon)

    def log_probabilities(self, scores: object) -> np.ndarray:
        """The exact output law, as natural-log probabilities."""
        logw = _log_weights(check_scores(scores), self.scale)
        finite = logw[np.isfinite(logw)]
        return logw - np.log(np.exp(finite).sum())

    def probabilities(self, scores: object) -> np.ndarray:
        """The exact output law."""
        return np.exp(self.log_probabilities(scores))

    def select(self, scores: object, *, rng: RNGLike = None,
               accountant: Accountant | None = None) -> int:
        """Return one index drawn from the mechanism's law."""
        values = check_scores(scores)
        generator = make_rng(rng)
        charge(accountant, self.privacy, "exponential mechanism")
        noisy = _log_weights(values, self.scale) + generator.gumbel(size=values.size)
        return int(np.argmax(noisy))


@dataclass(frozen=True)
class PermuteAndFlip(_ScoreSelector):
    """Permute-and-flip (McKenna and Sheldon 2020).

    Visits the candidates in a uniformly random order and accepts candidate ``i`` with
    probability ``exp(epsilon * (scores[i] - max(scores)) / (2 * sensitivity))`` (no factor 2 when
    ``monotonic``); the first acceptance is the output. The maximum is always accepted, so it
    stops after at most ``len(scores)`` coins.

    Privacy: ``epsilon``-DP (``privacy`` is ``PureDP(epsilon)``); never worse than the
    exponential mechanism in expected score. Sensitivity assumption: as for
    :class:`ExponentialMechanism`.

    >>> PermuteAndFlip(epsilon=1.0).select([0.0, 50.0, 1.0], rng=3)
    1
    """

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def probabilities(self, scores: object) -> np.ndarray:
        """The exact output law, by the closed form over the acceptance probabilities.

        With ``p_i`` the acceptance probability and ``n`` candidates, the chance that ``i`` is
        first accepted is ``p_i`` times the average over random orders of the product of
        ``1 - p_j`` over the candidates before it. That average is computed exactly by an
        ``O(n^2)`` dynamic programme over the number of predecessors, so use it for small n only.
        """
        values = check_scores(scores)
        accept = np.exp(_log_weights(values, self.scale))
        n = values.size
        out = np.empty(n)
        for i in range(n):
            others = np.delete(1.0 - accept, i)
            # e[m] = elementary symmetric polynomial of degree m of the others' rejection probs.
            e = np.zeros(n)
            e[0] = 1.0
            for r in others:
                e[1:] = e[1:] + r * e[:-1]
            # Predecessor set of size m is uniform over the m-subsets: weight 1/(n * C(n-1, m)).
            avg = sum(e[m] / comb(n - 1, m) for m in range(n)) / n
            out[i] = accept[i] * avg
        return out / out.sum()

    def select(self, scores: object, *, rng: RNGLike = None,
               accountant: Accountant | None = None) -> int:
        """Return one index drawn from the mechanism's law."""
        values = check_scores(scores)
        generator = make_rng(rng)
        charge(accountant, self.privacy, "permute-and-flip")
        log_accept = _log_weights(values, self.scale)
        order = generator.permutation(values.size)
        # Drawing every coin at once is the same law as drawing them one by one in order: the
        # output is the first accepted candidate of the permutation.
        # 1 - U lies in (0, 1], so its log is finite: no divide-by-zero on a zero draw.
        log_u = np.log1p(-generator.random(values.size))
        accepted = log_u <= log_accept[order]
        return int(order[int(np.argmax(accepted))])
