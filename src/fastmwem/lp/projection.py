"""The KL (Bregman) projection onto s-dense distributions, exactly (Fast-MWEM App. A).

Fast-MWEM is Haris, Choi and Laksanawisit, arXiv:2602.03732.

A distribution ``y`` over ``m`` constraints is ``s``-dense when ``max_i y_i <= 1/s``
(Fast-MWEM Def. A.1). The KL projection of ``p`` onto that set is
``y_i = min(1/s, c p_i)`` with the one ``c > 0`` that makes ``y`` sum to 1 (Def. A.2; Herbster
and Warmuth 2001). At most ``floor(s)`` entries are capped (capped entries alone carry ``r/s``),
so only the ``floor(s) + 1`` largest weights are sorted: ``O(m + s log s)`` per projection.
Everything is computed in log space, so weights that would underflow ``exp`` keep their ratios.
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem._validation import check_scores
from fastmwem.lp._checks import check_density

__all__ = ["dense_projection", "project_log_weights"]

# Relative slack of the "largest uncapped entry respects the cap" test. At a tie the capped and
# uncapped values agree, so the slack only stops rounding from flipping between equal answers.
_SLACK = 1e-12


def _logsumexp(values: np.ndarray) -> float:
    if values.size == 0:
        return -math.inf
    top = float(values.max())
    return top + math.log(float(np.exp(values - top).sum()))


def project_log_weights(log_weights: np.ndarray, density: float) -> np.ndarray:
    """Algorithm P on checked input: the s-dense KL projection of ``softmax(log_weights)``."""
    lw = log_weights
    m = lw.size
    s = float(density)
    q = min(m, math.floor(s) + 1)
    if q < m:
        top = np.argpartition(lw, m - q)[m - q:]
        rest = np.ones(m, dtype=bool)
        rest[top] = False
        rest_lse = _logsumexp(lw[rest])
    else:
        top = np.arange(m)
        rest_lse = -math.inf
    top = top[np.argsort(-lw[top], kind="stable")]
    sorted_lw = lw[top]
    # suffix[r] = log of the total weight of every entry not among the r largest.
    suffix = np.logaddexp.accumulate(sorted_lw[::-1])[::-1]
    suffix = np.logaddexp(suffix, rest_lse)
    r = np.arange(q)
    with np.errstate(divide="ignore"):
        log_free = np.log1p(-np.minimum(r / s, 1.0))  # log of the mass left to the uncapped
    fits = (r <= s) & (sorted_lw - suffix + log_free <= -math.log(s) + _SLACK)
    cut = int(np.argmax(fits)) if fits.any() else q
    if cut == q:  # every candidate capped: only possible when s = m
        return np.full(m, 1.0 / m)
    # Capping in log space first keeps exp from overflowing on the capped entries.
    out = np.exp(np.minimum(lw - suffix[cut] + log_free[cut], -math.log(s)))
    out[top[:cut]] = 1.0 / s
    return np.minimum(out, 1.0 / s, out=out)


def dense_projection(log_weights: object, density: float) -> np.ndarray:
    """The KL projection of ``softmax(log_weights)`` onto the ``density``-dense distributions.

    Args:
        log_weights: unnormalised log-weights of the ``m`` constraints (finite).
        density: ``s`` in ``[1, m]``; the output satisfies ``max_i y_i <= 1/s``.

    Returns:
        ``y`` with ``y_i = min(1/s, c exp(log_weights_i))`` summing to 1. ``s = 1`` gives the
        plain normalisation, ``s = m`` the uniform distribution.

    >>> dense_projection([0.0, 0.0, 5.0, 0.0], 2).round(4)
    array([0.1667, 0.1667, 0.5   , 0.1667])
    """
    lw = check_scores(log_weights, "log_weights")
    return project_log_weights(lw, check_density(density, lw.size))
