"""The violation bounds the acceptance tests use by default (Fast-MWEM s.4.1 and s.4.2).

Both are Hedge regret plus the exponential mechanism's error over the rounds: with probability
``1 - beta``, ``2 width sqrt(ln(N) / T) + (2 sensitivity / epsilon0) ln(R T / beta)``, where ``N``
is the number of experts of the multiplicative weights and ``R`` the number of candidates of each
round's exponential mechanism. The paper's text gives their shape only; the constants are
derived here, not quoted.
"""

from __future__ import annotations

import math

__all__ = ["scalar_alpha", "dense_alpha"]


def _alpha(width: float, log_experts: float, rounds: int, sensitivity: float, epsilon0: float,
           candidates: float, beta: float) -> float:
    regret = 2.0 * width * math.sqrt(log_experts / rounds)
    return regret + 2.0 * sensitivity / epsilon0 * math.log(candidates * rounds / beta)


def scalar_alpha(width: float, d: int, rows: int, rounds: int, sensitivity: float,
                 epsilon0: float, beta: float) -> float:
    """The violation bound of S1/S2: with probability ``1 - beta``, ``max_i (A_i xbar - b_i)``
    is at most ``2 width sqrt(ln d / T) + (2 sensitivity / epsilon0) ln(m T / beta)``.

    >>> round(scalar_alpha(0.672, 50, 2000, 1000, 0.01, 50.0, 0.05), 4)  # m = 2000, d = 50
    0.0911
    """
    return _alpha(width, math.log(d), rounds, sensitivity, epsilon0, rows, beta)


def dense_alpha(width: float, max_constraints: int, density: float, rounds: int,
                score_sensitivity: float, epsilon0: float, d: int, beta: float) -> float:
    """The violation level of C1/C2: with probability ``1 - beta`` fewer than ``s`` constraints
    have ``A_i xbar > b_i + alpha``, with
    ``alpha = 2 width sqrt(ln(M / s) / T) + (2 score_sensitivity / epsilon0) ln(d T / beta)``.

    >>> round(dense_alpha(1.0, 3000, 30, 4000, 0.0, 1.0, 40, 0.05), 4)
    0.0679
    """
    return _alpha(width, math.log(max_constraints / density), rounds, score_sensitivity,
                  epsilon0, d, beta)
