"""How accurate an online PMW answer is: its noise scale and a 95% interval, from public values.

Everything here is computed from the session's public parameters, its (noisy or public) record
count ``n`` and the query, never from the data: post-processing, no privacy cost.

* A **measured** answer is ``(w . x + Z) * s``: the query on its integer grid (weights ``w``,
  public factor ``s``; ``s = 1`` for counting queries) plus two-sided geometric noise ``Z`` of
  the exact scale ``b`` drawn (:class:`~fastmwem.mechanisms.laplace.Geometric`). Its noise scale
  is ``b * s`` and its interval ``value +- m * s`` with ``m`` the smallest integer such that
  ``P(|Z| > m) <= 5%``: it holds the true answer with probability at least 95%, whatever
  happened before (the noise is drawn after the test).
* A **synthetic** answer passed the sparse vector's test ``stat + nu < T + rho`` (``stat`` the
  error in grid units, ``T = round(alpha * n * 2**20)``, ``rho`` and ``nu`` the threshold's and
  the query's discrete Laplace noise). What the test certifies is therefore ``alpha * n`` plus
  the noise margin ``m``, the smallest integer such that ``P(rho - nu > m) <= 5%``: the chance
  that a query is answered synthetically *and* its error exceeds the half-width
  ``s * (floor((T + m - 1/2) * max|w| / 2**20) + 1/2)`` is at most 5% (the sparse vector's
  accuracy argument, Dwork and Roth 2014, Theorem 3.24, for one query, exact for the discrete
  laws). Its noise scale is that of the test's per-query noise ``nu``, in the answer's units.
  There is no other failure probability in a session: 5% is this interval's.

The interval is for the query as answered (on its grid: within ``2**-21 * max|q|`` of each
weight asked for, exact for integer weights). Tail probabilities are evaluated in double
precision from closed forms (the difference of two discrete Laplace variables is a signed
mixture of the two laws).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from fastmwem.data.domain import Domain
from fastmwem.mechanisms.laplace import Geometric
from fastmwem.mechanisms.sparse_vector import MAX_SV_VALUE
from fastmwem.release.pmw.plan import GRID, PMWConfig
from fastmwem.release.pmw.queries import query_spec, query_vector
from fastmwem.release.pmw.session import _on_grid

__all__ = ["Accuracy", "LEVEL", "answer_accuracy", "measured_accuracy", "synthetic_accuracy",
           "sv_noise_scale", "abs_quantile", "difference_quantile", "fit_advice"]

#: The intervals' coverage.
LEVEL = 0.95


@dataclass(frozen=True)
class Accuracy:
    """An answer's noise scale and the half-width of its interval (``None``: none certified)."""

    noise_scale: float
    half_width: float | None
    level: float = LEVEL

    def interval(self, value: float) -> list[float] | None:
        if self.half_width is None:
            return None
        return [value - self.half_width, value + self.half_width]


def _tail(b: float, m: int) -> float:
    """``P(Z > m)`` for ``m >= 0``, ``Z`` discrete Laplace of scale ``b``: ``a^(m+1) / (1 + a)``
    with ``a = exp(-1 / b)``."""
    return math.exp(-(m + 1) / b) / (2 + math.expm1(-1 / b))


def _smallest(tail: Callable[[int], float], beta: float) -> int:
    """The smallest ``m >= 0`` with ``tail(m) <= beta`` (``tail`` decreasing)."""
    high = 1
    while tail(high) > beta:
        high *= 2
    low = -1  # tail(low) > beta, or below the range
    while high - low > 1:
        mid = (low + high) // 2
        if mid >= 0 and tail(mid) <= beta:
            high = mid
        else:
            low = mid
    return high


@lru_cache(maxsize=256)
def abs_quantile(b: Fraction, level: float = LEVEL) -> int:
    """The smallest ``m >= 0`` with ``P(|Z| > m) <= 1 - level`` for ``Z`` discrete Laplace of
    scale ``b`` (``P[Z = z]`` proportional to ``exp(-|z| / b)``)."""
    scale = float(b)
    return _smallest(lambda m: 2 * _tail(scale, m), 1 - level)


@lru_cache(maxsize=256)
def difference_quantile(b1: Fraction, b2: Fraction, level: float = LEVEL) -> int:
    """The smallest ``m >= 0`` with ``P(X - Y > m) <= 1 - level`` for independent discrete
    Laplace ``X``, ``Y`` of scales ``b1 != b2``.

    The law of ``X - Y`` (``Y`` is symmetric: of ``X + Y``) is ``w1 L(b1) + w2 L(b2)`` with
    ``u_i = (1 - a_i)^2 / (2 a_i)``, ``w1 = u2 / (u2 - u1)``, ``w2 = 1 - w1`` (partial fractions
    of the product of the two characteristic functions).
    """
    s1, s2 = float(b1), float(b2)
    if s1 == s2:
        raise ValueError("difference_quantile needs two different scales")

    def u(scale: float) -> float:
        return math.expm1(-1 / scale) ** 2 / (2 * math.exp(-1 / scale))

    w1 = u(s2) / (u(s2) - u(s1))
    return _smallest(lambda m: w1 * _tail(s1, m) + (1 - w1) * _tail(s2, m), 1 - level)


def _sv_scales(config: PMWConfig) -> tuple[Fraction, Fraction]:
    """The exact scales (grid units) of the sparse vector's threshold and per-query noise."""
    sv = config.split()["sv"]
    return (Geometric(epsilon=sv / 2, sensitivity=GRID + 1).scale,
            Geometric(epsilon=sv / 4, sensitivity=GRID + 1).scale)


def sv_noise_scale(config: PMWConfig) -> float:
    """The scale of the sparse vector's per-query noise, in records (per unit of the query's
    largest absolute weight): about ``4 / epsilon_sv``."""
    return float(_sv_scales(config)[1] / GRID)


def measured_accuracy(config: PMWConfig, scale: float, sensitivity: int,
                      level: float = LEVEL) -> Accuracy:
    """A measurement of a query with integer weights of largest absolute value ``sensitivity``,
    released times ``scale``."""
    b = Geometric(epsilon=config.split()["measure"], sensitivity=sensitivity).scale
    return Accuracy(float(b) * scale, abs_quantile(b, level) * scale, level)


def synthetic_accuracy(config: PMWConfig, total: float, scale: float, sensitivity: int,
                       level: float = LEVEL) -> Accuracy:
    """What the sparse vector certifies for a synthetic answer (see the module docstring)."""
    threshold_b, query_b = _sv_scales(config)
    noise = float(query_b / GRID) * sensitivity * scale
    threshold = min(round(config.alpha * total * GRID), MAX_SV_VALUE)  # as the session sets it
    m = difference_quantile(threshold_b, query_b, level)
    if threshold + m - 1 >= MAX_SV_VALUE:  # the test statistic saturates: nothing is certified
        return Accuracy(noise, None, level)
    steps = math.floor(Fraction(2 * (threshold + m) - 1, 2) * sensitivity / GRID)
    return Accuracy(noise, (steps + 0.5) * scale, level)


def grid_form(domain: Domain, query: object) -> tuple[float, int]:
    """The public factor and the largest absolute integer weight of ``query`` on its grid."""
    q = _on_grid(query_spec(query), query_vector(domain, query))
    return q.scale, q.sensitivity


def answer_accuracy(config: PMWConfig, total: float, domain: Domain, query: object,
                    source: str, level: float = LEVEL) -> Accuracy:
    """The accuracy of an answer to ``query`` released as ``source`` (``"measured"`` or
    ``"synthetic"``) by a session with ``config`` and record count ``total``."""
    scale, sensitivity = grid_form(domain, query)
    if source == "measured":
        return measured_accuracy(config, scale, sensitivity, level)
    if source == "synthetic":
        return synthetic_accuracy(config, total, scale, sensitivity, level)
    raise ValueError(f"source must be 'measured' or 'synthetic', got {source!r}")


def fit_advice(config: PMWConfig, total: float) -> str | None:
    """A warning when ``alpha * n`` is below the sparse vector's noise scale (the test then
    mostly measures, and synthetic answers are certified only loosely), with settings that fit;
    None when it is not. Public values only: ``n`` is the noisy or public record count."""
    noise, fit = sv_noise_scale(config), config.alpha * total
    if fit >= noise:
        return None
    options = []
    alpha = _smallest_fitting(noise / total, lambda a: a < 1 and a * total >= noise)
    if alpha is not None:
        options.append(f"--alpha {alpha:g}")
    epsilon = _smallest_fitting(config.epsilon * noise / fit, lambda e: _fits(config, e, fit))
    if epsilon is not None:
        options.append(f"--epsilon {epsilon:g}")
    updates = math.floor(config.max_updates * fit / noise)
    while updates >= 1 and sv_noise_scale(dataclasses.replace(config, max_updates=updates)) > fit:
        updates -= 1
    if updates >= 1:
        options.append(f"--max-updates {updates}")
    half = synthetic_accuracy(config, total, 1.0, 1).half_width
    certified = "" if half is None else f" (a 95% interval of +-{half:,.0f} records)"
    return (f"alpha * n = {fit:,.0f} records (n = {total:,.0f}) is below the sparse vector's "
            f"noise scale of {noise:,.0f} records (epsilon {config.epsilon:g} over "
            f"{config.max_updates} updates): most queries will be measured and spend updates, "
            f"and a synthetic answer is certified only to within alpha * n plus that noise"
            f"{certified}. Settings that fit (for a new state: a state's settings are "
            "read-only): " + (", or ".join(options) or "none") + ".")


def _fits(config: PMWConfig, epsilon: float, fit: float) -> bool:
    try:
        return sv_noise_scale(dataclasses.replace(config, epsilon=epsilon)) <= fit
    except ValueError:  # an epsilon no session accepts
        return False


def _smallest_fitting(estimate: float, fits: Callable[[float], bool]) -> float | None:
    """The estimate rounded up to three significant digits, stepped up until it ``fits``."""
    step = 10.0 ** (math.floor(math.log10(estimate)) - 2)
    units = math.ceil(estimate / step)
    for _ in range(20):  # the estimate is off by float rounding only: a step or two at most
        value = float(f"{units * step:.3g}")
        if fits(value):
            return value
        units += 1
    return None
