"""Conversions between privacy notions and composition rules: zCDP to and from
``(epsilon, delta)``-DP, advanced composition, and the per-round share of a budget.
"""

from __future__ import annotations

import math
from fractions import Fraction

from fastmwem._validation import check_int
from fastmwem.accounting.exact_numbers import _log_inverse, _round_down, _round_up, exact

#: Conversions from zCDP to (epsilon, delta)-DP: ``"bun-steinke"`` (Bun and Steinke 2016,
#: Prop. 1.3) and ``"tight"`` (Canonne, Kamath and Steinke, "The Discrete Gaussian for
#: Differential Privacy", arXiv:2004.00010, Cor. 13), which allows a larger ``rho`` for the same
#: ``(epsilon, delta)`` (1.27x at epsilon 1, delta 1e-9).
CONVERSIONS = ("bun-steinke", "tight")

# Absolute margin, in log(delta), that a tight conversion keeps from its target: the float
# evaluation of the bound is accurate to ~1e-13 there, so the margin makes the rounding safe.
_LOG_DELTA_MARGIN = 1e-9


def _check_conversion(conversion: object) -> None:
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {list(CONVERSIONS)}, got {conversion!r}")


def _tight_log_delta(rho: float, epsilon: float, alpha: float) -> float:
    """``log delta`` of ``rho``-zCDP at ``epsilon`` through the Renyi order ``alpha > 1``.

    ``delta = exp((alpha - 1)(alpha rho - epsilon)) (1 - 1/alpha)^alpha / (alpha - 1)``; every
    ``alpha > 1`` gives a valid ``delta`` (arXiv:2004.00010, Cor. 13).
    """
    return ((alpha - 1.0) * (alpha * rho - epsilon) + alpha * math.log1p(-1.0 / alpha)
            - math.log(alpha - 1.0))


def _tight_best(rho: float, epsilon: float) -> tuple[float, float]:
    """``(log delta, alpha)`` with ``alpha`` near the minimiser of :func:`_tight_log_delta`.

    The function is smooth and unimodal in ``log(alpha - 1)``: a golden-section search there.
    """
    lo, hi = -30.0, math.log(epsilon / rho + 2.0) + 2.0
    ratio = (math.sqrt(5.0) - 1.0) / 2.0

    def f(u: float) -> float:
        return _tight_log_delta(rho, epsilon, 1.0 + math.exp(u))

    for _ in range(200):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if f(a) <= f(b):
            hi = b
        else:
            lo = a
    u = (lo + hi) / 2
    return f(u), 1.0 + math.exp(u)


def zcdp_to_approx_dp(rho: object, delta: object, *, conversion: str = "bun-steinke") -> float:
    """Epsilon such that ``rho``-zCDP implies ``(epsilon, delta)``-DP, rounded up.

    ``"bun-steinke"``: ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` (Bun and Steinke 2016);
    ``"tight"``: the smallest epsilon of arXiv:2004.00010, Cor. 13 (see :data:`CONVERSIONS`).

    >>> round(zcdp_to_approx_dp(0.5, 1e-6), 4)
    5.7565
    >>> zcdp_to_approx_dp(0.5, 1e-6, conversion="tight") < 5.7565
    True
    """
    _check_conversion(conversion)
    r = float(exact(rho, "rho", allow_zero=True))
    d = exact(delta, "delta")
    if d >= 1:
        raise ValueError(f"delta must be < 1, got {float(d)}")
    loose = float(_round_up(r + 2.0 * math.sqrt(r * _log_inverse(d))))
    if conversion == "bun-steinke" or r == 0:
        return loose
    # A smaller margin than the budget's, so that a budget's epsilon converts back within it.
    target = -_log_inverse(d) - _LOG_DELTA_MARGIN / 100
    lo, hi = 0.0, loose  # the tight epsilon is at most the Bun-Steinke one
    for _ in range(100):
        mid = (lo + hi) / 2
        if _tight_best(r, mid)[0] <= target:
            hi = mid
        else:
            lo = mid
    return float(_round_up(hi))


#: Largest epsilon converted to a zCDP budget: rho grows like epsilon, and the conversion's
#: float evaluation overflows near 1e154.
MAX_ZCDP_EPSILON = 10**100


def approx_dp_to_zcdp_budget(epsilon: object, delta: object, *,
                             conversion: str = "bun-steinke") -> Fraction:
    """The largest ``rho`` whose zCDP-to-DP conversion fits in ``(epsilon, delta)``, rounded down.

    ``"bun-steinke"`` solves ``rho + 2 sqrt(rho L) = epsilon`` with ``L = ln(1/delta)``:
    ``rho = (sqrt(L + epsilon) - sqrt(L))**2``. ``"tight"`` finds the largest ``rho`` for which
    some Renyi order ``alpha`` gives ``delta`` in arXiv:2004.00010, Cor. 13, with a safety margin
    on the float evaluation (see :data:`CONVERSIONS`).

    >>> tight = approx_dp_to_zcdp_budget(1, 1e-9, conversion="tight")
    >>> round(float(tight / approx_dp_to_zcdp_budget(1, 1e-9)), 2)
    1.27
    """
    _check_conversion(conversion)
    e_exact = exact(epsilon, "epsilon")
    e = float(e_exact)
    d = exact(delta, "delta")
    if d >= 1:
        raise ValueError(f"delta must be < 1, got {float(d)}")
    if e_exact > MAX_ZCDP_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_ZCDP_EPSILON:.0e} for a zCDP budget (its "
                         "conversion would overflow the float range)")
    if conversion == "tight":
        return _tight_budget(e, d)
    log_term = _log_inverse(d)
    # Written as e^2 / (sqrt(L+e) + sqrt(L))^2 to avoid cancellation when L >> e.
    rho = _round_down(e * e / (math.sqrt(log_term + e) + math.sqrt(log_term)) ** 2)
    # Both directions are rounded conservatively, so the round trip through the (rounded-up)
    # conversion must land within epsilon; step down the few ulps needed to guarantee it.
    while rho > 0 and Fraction(zcdp_to_approx_dp(rho, d)) > e_exact:
        rho = _round_down(float(rho))
    return rho


def _tight_budget(epsilon: float, delta: Fraction) -> Fraction:
    """The largest ``rho`` (rounded down) whose tight conversion gives ``(epsilon, delta)``.

    Bisection on ``rho``; the answer is checked again at the Renyi order found for it, and that
    one order suffices: any ``alpha > 1`` gives a valid ``delta``.
    """
    target = -_log_inverse(delta) - _LOG_DELTA_MARGIN
    lo, hi = 0.0, epsilon
    for _ in range(200):
        mid = (lo + hi) / 2
        if _tight_best(mid, epsilon)[0] <= target:
            lo = mid
        else:
            hi = mid
    rho = _round_down(lo)
    while rho > 0 and _tight_best(float(rho), epsilon)[0] > target:
        rho = _round_down(float(rho))
    return rho


def advanced_composition(epsilon0: object, rounds: int, delta_prime: object) -> tuple[float, float]:
    """Advanced composition (Dwork, Rothblum and Vadhan 2010).

    As quoted in Haris, Choi and Laksanawisit, "Fast-MWEM: Private Data Release in Sublinear
    Time" (arXiv:2602.03732), Thm B.1.

    ``rounds`` adaptive ``epsilon0``-DP steps are ``(epsilon', delta_prime)``-DP with
    ``epsilon' = epsilon0 sqrt(2 T ln(1/delta')) + T epsilon0 (e^epsilon0 - 1)`` (rounded up).

    >>> eps, delta = advanced_composition(0.01, 100, 1e-6)
    >>> round(eps, 4), delta
    (0.5357, 1e-06)
    """
    e0 = float(exact(epsilon0, "epsilon0"))
    t = check_int(rounds, "rounds", minimum=1)
    d_exact = exact(delta_prime, "delta_prime")
    # The returned delta is a cost: never let it underflow to 0.0 (a claim of pure DP).
    d = max(float(d_exact), math.ulp(0.0))
    if d_exact >= 1:
        raise ValueError(f"delta_prime must be < 1, got {d}")
    if e0 > 700.0:  # e^e0 overflows: the composed epsilon is beyond every float
        return math.inf, d
    value = e0 * math.sqrt(2.0 * t * _log_inverse(d_exact)) + t * e0 * math.expm1(e0)
    if not math.isfinite(value):
        return math.inf, d
    return float(_round_up(value)), d


def per_round_epsilon(epsilon: object, rounds: int, delta: object = 0, *,
                      method: str = "best", bounded_range: bool = False) -> float:
    """The largest per-round ``epsilon0`` such that ``rounds`` adaptive rounds fit the budget.

    Args:
        epsilon: total epsilon.
        rounds: number of adaptive rounds T, each ``epsilon0``-DP.
        delta: total delta; ``0`` allows only basic composition.
        method: ``"basic"`` (``epsilon / T``), ``"advanced"`` (Dwork-Rothblum-Vadhan with
            ``delta' = delta``), ``"zcdp"`` (each round is ``epsilon0**2 / 2``-zCDP, or
            ``epsilon0**2 / 8`` when ``bounded_range``), or ``"best"``: the largest of those that
            apply. An :class:`Accountant` composes by basic or zCDP composition only: a value
            from ``"advanced"`` (or ``"best"`` when advanced wins) is a claim about the whole
            T-round plan, to be charged as one ``ApproxDP`` event, not round by round.
        bounded_range: the rounds are bounded-range (exponential mechanism) steps.

    Returns:
        ``epsilon0`` as a float, rounded down.

    >>> per_round_epsilon(1, 10)
    0.1
    >>> per_round_epsilon(1, 100, 1e-6, method="advanced") > 0.01
    True
    """
    total = exact(epsilon, "epsilon")
    t = check_int(rounds, "rounds", minimum=1)
    d = exact(delta, "delta", allow_zero=True)
    if d >= 1:
        raise ValueError(f"delta must be < 1, got {float(d)}")
    if method not in ("basic", "advanced", "zcdp", "best"):
        raise ValueError(f"method must be 'basic', 'advanced', 'zcdp' or 'best', got {method!r}")
    if method in ("advanced", "zcdp") and d == 0:
        raise ValueError(f"method={method!r} needs delta > 0")
    candidates: list[float] = []
    if method in ("basic", "best"):
        basic = float(total / t)
        # Keep the float whose decimal reading (the accountant's convention) still fits exactly.
        while Fraction(repr(basic)) * t > total:
            basic = math.nextafter(basic, 0.0)
        candidates.append(basic)
    if method in ("advanced", "best") and d > 0:
        target = float(total)
        lo, hi = 0.0, min(target, 700.0)  # above 700 the composed epsilon is infinite
        for _ in range(200):
            mid = (lo + hi) / 2
            if advanced_composition(mid, t, d)[0] <= target:
                lo = mid
            else:
                hi = mid
        candidates.append(float(_round_down(lo)))
    if method in ("zcdp", "best") and d > 0:
        rho = approx_dp_to_zcdp_budget(total, d)
        factor = 8 if bounded_range else 2
        zcdp = float(_round_down(math.sqrt(factor * float(rho) / t)))
        # The accountant reads the float by its decimal form; make sure T of those still fit.
        while zcdp > 0 and t * Fraction(repr(zcdp)) ** 2 / factor > rho:
            zcdp = math.nextafter(zcdp, 0.0)
        candidates.append(zcdp)
    return max(candidates)
