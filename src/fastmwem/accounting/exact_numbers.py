"""Exact privacy numbers: reading parameters as fractions, showing them, outward rounding.

Privacy numbers are kept as exact fractions. A float argument such as ``0.01`` is read as the
shortest decimal that prints as that float (``Fraction("0.01")``). Quantities that are irrational
(square roots and logarithms) are computed in floating point and then rounded *outwards* (up for a
cost, down for an allowance) by the helpers here, so accounting errs on the safe side.
"""

from __future__ import annotations

import math
import numbers
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction


def exact(value: object, name: str, *, allow_zero: bool = False) -> Fraction:
    """Return ``value`` as an exact non-negative ``Fraction``.

    Floats are read through their shortest decimal representation, so ``exact(0.1, "x")`` is
    ``Fraction(1, 10)``.

    >>> exact(0.01, "epsilon")
    Fraction(1, 100)
    >>> exact("1/3", "epsilon")
    Fraction(1, 3)
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got bool")
    if isinstance(value, Fraction):
        frac = value
    elif isinstance(value, numbers.Integral):
        frac = Fraction(int(value))
    elif isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x):
            raise ValueError(f"{name} must be finite, got {x}")
        frac = Fraction(repr(x))
    elif isinstance(value, str):
        try:
            frac = Fraction(value)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{name} must be a number, got {value!r}") from None
    else:
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}: {value!r}")
    if frac < 0 or (frac == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {float(frac)}")
    return frac


# Significant digits of a displayed privacy parameter. The exact fraction is kept for the
# accounting; the display only has to be short and true.
_SHOW_DIGITS = 12


def float_below(value: Fraction) -> float:
    """The largest float that is <= ``value``: a share a mechanism can use and an event can charge
    exactly (its binary value) without ever exceeding the exact share.

    >>> Fraction(float_below(Fraction(1, 10))) <= Fraction(1, 10) < Fraction(0.1)
    True
    """
    out = float(value)
    return math.nextafter(out, 0.0) if Fraction(out) > value else out


def show(x: Fraction) -> str:
    """``x`` as a short decimal (at most 12 significant digits), rounded *up*.

    A privacy parameter (epsilon, delta, rho) states a guarantee that stays true when the number
    is made larger, so a display that never goes below the exact value never claims more privacy
    than was charged. The privacy-safe roundings inside (a per-round epsilon rounded down to a
    float, say) then show as the number the user asked for.

    >>> show(Fraction(0.009999999999999998))   # the float below 0.01, as a split charges it
    '0.01'
    >>> show(Fraction(1, 3)), show(Fraction(5, 2)), show(Fraction(7))
    ('0.333333333334', '2.5', '7')
    """
    if x.denominator == 1:
        return str(x.numerator)
    with localcontext() as ctx:
        ctx.prec = _SHOW_DIGITS
        ctx.rounding = ROUND_CEILING
        dec = Decimal(x.numerator) / Decimal(x.denominator)
    if dec == dec.to_integral_value():
        return str(int(dec))
    as_float = float(dec)
    # Python's float repr is the familiar short form; it spells ``dec`` exactly whenever the
    # float is normal (12 digits are far inside a double's 15), else Decimal spells it.
    if as_float != 0.0 and math.isfinite(as_float) and Decimal(repr(as_float)) == dec:
        return repr(as_float)
    return str(dec.normalize())


# Relative margin for outward rounding. The float formulas below (log, sqrt, expm1, a few
# products and sums) are accurate to a handful of ulps (~1e-15 relative); 2**-40 (~9e-13) covers
# that with room to spare while staying far below any difference that matters for privacy.
_MARGIN = 2.0**-40


def _round_up(x: float) -> Fraction:
    """An exact fraction >= the real number that float ``x`` approximates (x >= 0)."""
    return Fraction(math.nextafter(x * (1.0 + _MARGIN), math.inf))


def _round_down(x: float) -> Fraction:
    """An exact fraction <= the real number that float ``x`` approximates, and >= 0."""
    return Fraction(max(0.0, math.nextafter(x * (1.0 - _MARGIN), 0.0)))


def _log_inverse(delta: Fraction) -> float:
    """``ln(1 / delta)`` for ``0 < delta < 1`` to a few ulps, including delta close to 0 or 1.

    ``log(1 / float(delta))`` loses all relative accuracy as delta approaches 1 (the argument is
    rounded before a nearly flat log), and ``float(delta)`` underflows for tiny fractions.
    """
    if delta > Fraction(1, 2):
        return -math.log1p(-float(1 - delta))
    as_float = float(delta)
    if as_float >= 1e-300:
        return -math.log(as_float)
    return math.log(delta.denominator) - math.log(delta.numerator)
