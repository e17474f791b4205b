"""Privacy events, their composition, and an accountant that refuses overspend.

Privacy numbers are kept as exact fractions. A float argument such as ``0.01`` is read as the
shortest decimal that prints as that float (``Fraction("0.01")``), so one hundred charges of
``0.01`` fill a budget of ``1`` exactly. Quantities that are irrational (square roots and
logarithms in advanced composition and zCDP conversion) are computed in floating point and then
rounded *outwards* (up for a cost, down for an allowance), so accounting errs on the safe side.

Events:

* :class:`PureDP` -- ``epsilon``-differential privacy.
* :class:`BoundedRange` -- ``epsilon``-bounded range (the exponential mechanism): it implies
  ``epsilon``-DP and ``epsilon**2 / 8``-zCDP (Cesar and Rogers 2021).
* :class:`ApproxDP` -- ``(epsilon, delta)``-differential privacy.
* :class:`ZCDP` -- ``rho``-zero-concentrated DP; pure ``epsilon``-DP implies ``epsilon**2 / 2``.

>>> acc = Accountant(epsilon=1)
>>> for _ in range(100):
...     _ = acc.compose(PureDP(0.01))
>>> acc.spent()
PureDP(epsilon=1)
>>> acc.remaining()
PureDP(epsilon=0)
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction
from typing import Protocol, Union, runtime_checkable

from fastmwem._validation import check_int

__all__ = [
    "float_below",
    "PureDP",
    "BoundedRange",
    "ApproxDP",
    "ZCDP",
    "PrivacyEvent",
    "Accountant",
    "BudgetExceededError",
    "LedgerEntry",
    "LedgerStore",
    "MemoryLedgerStore",
    "entry_to_record",
    "entry_from_record",
    "ledger_records",
    "exact",
    "show",
    "advanced_composition",
    "zcdp_to_approx_dp",
    "approx_dp_to_zcdp_budget",
    "CONVERSIONS",
    "per_round_epsilon",
]


class BudgetExceededError(RuntimeError):
    """A charge would take an :class:`Accountant` past its budget; nothing was spent."""


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


@dataclass(frozen=True)
class PureDP:
    """``epsilon``-differential privacy."""

    epsilon: Fraction

    def __init__(self, epsilon: object) -> None:
        object.__setattr__(self, "epsilon", exact(epsilon, "epsilon", allow_zero=True))

    def __repr__(self) -> str:
        return f"PureDP(epsilon={show(self.epsilon)})"

    def pure_epsilon(self) -> Fraction | None:
        return self.epsilon

    def zcdp_rho(self) -> Fraction | None:
        return self.epsilon**2 / 2

    def approx(self) -> tuple[Fraction, Fraction]:
        return self.epsilon, Fraction(0)


@dataclass(frozen=True)
class BoundedRange:
    """``epsilon``-bounded range: ``epsilon``-DP, and ``epsilon**2 / 8``-zCDP."""

    epsilon: Fraction

    def __init__(self, epsilon: object) -> None:
        object.__setattr__(self, "epsilon", exact(epsilon, "epsilon", allow_zero=True))

    def __repr__(self) -> str:
        return f"BoundedRange(epsilon={show(self.epsilon)})"

    def pure_epsilon(self) -> Fraction | None:
        return self.epsilon

    def zcdp_rho(self) -> Fraction | None:
        return self.epsilon**2 / 8

    def approx(self) -> tuple[Fraction, Fraction]:
        return self.epsilon, Fraction(0)


@dataclass(frozen=True)
class ApproxDP:
    """``(epsilon, delta)``-differential privacy (``0 <= delta < 1``)."""

    epsilon: Fraction
    delta: Fraction

    def __init__(self, epsilon: object, delta: object) -> None:
        d = exact(delta, "delta", allow_zero=True)
        if d >= 1:
            raise ValueError(f"delta must be < 1, got {float(d)}")
        object.__setattr__(self, "epsilon", exact(epsilon, "epsilon", allow_zero=True))
        object.__setattr__(self, "delta", d)

    def __repr__(self) -> str:
        return f"ApproxDP(epsilon={show(self.epsilon)}, delta={show(self.delta)})"

    def pure_epsilon(self) -> Fraction | None:
        return self.epsilon if self.delta == 0 else None

    def zcdp_rho(self) -> Fraction | None:
        return self.epsilon**2 / 2 if self.delta == 0 else None

    def approx(self) -> tuple[Fraction, Fraction]:
        return self.epsilon, self.delta


@dataclass(frozen=True)
class ZCDP:
    """``rho``-zero-concentrated differential privacy."""

    rho: Fraction

    def __init__(self, rho: object) -> None:
        object.__setattr__(self, "rho", exact(rho, "rho", allow_zero=True))

    def __repr__(self) -> str:
        return f"ZCDP(rho={show(self.rho)})"

    def pure_epsilon(self) -> Fraction | None:
        return None if self.rho > 0 else Fraction(0)

    def zcdp_rho(self) -> Fraction | None:
        return self.rho

    def approx(self) -> tuple[Fraction, Fraction] | None:
        return None


PrivacyEvent = Union[PureDP, BoundedRange, ApproxDP, ZCDP]
_EVENT_TYPES = (PureDP, BoundedRange, ApproxDP, ZCDP)


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


@dataclass(frozen=True)
class LedgerEntry:
    """One accepted charge: the event as given and what it cost in the accountant's currency."""

    label: str
    event: PrivacyEvent
    cost: tuple[Fraction, ...]


def entry_to_record(entry: LedgerEntry) -> dict[str, object]:
    """A ledger entry as a JSON-ready record with exact fraction strings (read back with
    :func:`entry_from_record`).

    >>> entry_to_record(LedgerEntry("a", PureDP(0.25), (Fraction(1, 4),)))
    {'label': 'a', 'event': 'PureDP', 'params': {'epsilon': '1/4'}, 'cost': ['1/4']}
    """
    params = {key: str(getattr(entry.event, key)) for key in _EVENT_PARAMS[type(entry.event)]}
    return {"label": entry.label, "event": type(entry.event).__name__, "params": params,
            "cost": [str(c) for c in entry.cost]}


def entry_from_record(record: object) -> LedgerEntry:
    """The ledger entry a record of :func:`entry_to_record` describes (exact round trip).

    Raises:
        ValueError: the record is not such a record (names the field at fault).
    """
    if not isinstance(record, dict):
        raise ValueError(f"a ledger record must be a JSON object, got {type(record).__name__}")
    kinds = {cls.__name__: cls for cls in _EVENT_TYPES}
    kind = record.get("event")
    if kind not in kinds:
        raise ValueError(f"ledger record: unknown event {kind!r}; expected one of {sorted(kinds)}")
    params, cost, label = record.get("params"), record.get("cost"), record.get("label")
    names = _EVENT_PARAMS[kinds[kind]]
    if not isinstance(params, dict) or sorted(params) != sorted(names):
        raise ValueError(f"ledger record: params of {kind} must be exactly {list(names)}")
    if not isinstance(cost, list) or not cost or not all(isinstance(c, str) for c in cost):
        raise ValueError("ledger record: cost must be a non-empty list of fraction strings")
    if not isinstance(label, str):
        raise ValueError("ledger record: label must be a string")
    event = kinds[kind](*(exact(params[n], f"ledger record {n}", allow_zero=True) for n in names))
    return LedgerEntry(label, event, tuple(exact(c, "ledger record cost", allow_zero=True)
                                           for c in cost))


_EVENT_PARAMS: dict[type, tuple[str, ...]] = {
    PureDP: ("epsilon",), BoundedRange: ("epsilon",), ApproxDP: ("epsilon", "delta"),
    ZCDP: ("rho",),
}

#: ``admit(spent)`` raises :class:`BudgetExceededError` to refuse a charge given what is spent.
Admit = Callable[[tuple[Fraction, ...]], None]


@runtime_checkable
class LedgerStore(Protocol):
    """Where an :class:`Accountant` keeps its accepted charges (in memory, SQLite, PostgreSQL).

    ``commit`` is the only write. It must be atomic and isolated against every other writer of
    the same ledger (threads or processes): read the total spent, call ``admit`` with it (which
    raises to refuse the charge), append ``entries``, and make that durable, all or nothing. A
    durable store commits before it returns, so a charge it has accepted counts as spent even if
    the process dies right after.
    """

    def entries(self) -> tuple[LedgerEntry, ...]:
        """Every accepted charge, in commit order."""

    def spent(self, width: int) -> tuple[Fraction, ...]:
        """The sum of the stored costs (``width`` zeros for an empty ledger)."""

    def commit(self, entries: Sequence[LedgerEntry], admit: Admit) -> None:
        """Atomically: ``admit(spent)``, then append ``entries``."""


class MemoryLedgerStore:
    """A ledger in this process's memory (the default store); thread-safe.

    ``entries`` may hold a ledger read back with :func:`entry_from_record`.
    """

    def __init__(self, entries: Iterable[LedgerEntry] = ()) -> None:
        self._entries = list(entries)
        for entry in self._entries:
            if not isinstance(entry, LedgerEntry):
                raise TypeError(f"entries must be LedgerEntry objects, got {type(entry).__name__}")
        # The running total, so that a charge costs O(1) rather than a pass over the ledger
        # (a service's ledger grows by one entry per answer); None until first needed.
        self._sum: tuple[Fraction, ...] | None = None
        self._lock = threading.Lock()

    def entries(self) -> tuple[LedgerEntry, ...]:
        with self._lock:
            return tuple(self._entries)

    def spent(self, width: int) -> tuple[Fraction, ...]:
        with self._lock:
            return self._running(width)

    def commit(self, entries: Sequence[LedgerEntry], admit: Admit) -> None:
        with self._lock:
            width = len(entries[0].cost) if entries else 0
            total = self._running(width)
            added = _total(entries, width)  # also refuses a batch that mixes currencies
            admit(total)
            self._entries.extend(entries)
            self._sum = tuple(t + a for t, a in zip(total, added))

    def _running(self, width: int) -> tuple[Fraction, ...]:
        if self._sum is None or len(self._sum) != width:
            self._sum = _total(self._entries, width)  # exact sums: any order gives the same
        return self._sum

    def __getstate__(self) -> dict[str, Iterable[LedgerEntry]]:
        # A lock cannot be pickled or copied; a copy gets a fresh one.
        return {"_entries": self.entries()}

    def __setstate__(self, state: dict[str, Iterable[LedgerEntry]]) -> None:
        self._entries = list(state["_entries"])
        self._sum = None
        self._lock = threading.Lock()


def _total(entries: Iterable[LedgerEntry], width: int) -> tuple[Fraction, ...]:
    total = [Fraction(0)] * width
    for entry in entries:
        if len(entry.cost) != width:
            raise ValueError(f"the ledger mixes currencies: a cost of {len(entry.cost)} numbers "
                             f"among costs of {width}")
        total = [t + c for t, c in zip(total, entry.cost)]
    return tuple(total)


#: The Accountant's budget and ledger attributes, which no assignment may change.
_READ_ONLY = frozenset({"epsilon", "delta", "rho", "composition", "store", "_mode", "_budget",
                        "_store"})


class Accountant:
    """Composes privacy events against a budget and refuses any charge that would overspend.

    Give exactly one budget:

    * ``Accountant(epsilon=e)``: pure DP, basic composition (sum of epsilons).
    * ``Accountant(epsilon=e, delta=d)``: approximate DP, basic composition (sums of both).
    * ``Accountant(rho=r)``: zCDP, rhos add up.
    * ``Accountant(epsilon=e, delta=d, composition="zcdp")``: charges are composed in zCDP and
      the total must convert to at most ``(e, d)``-DP.

    The budget is read-only: assigning ``epsilon`` (``delta``, ``rho``, ``composition`` or the
    store) raises ``AttributeError``; make a new accountant for a new budget. Charges live in a
    :class:`LedgerStore` (``store=``; a fresh :class:`MemoryLedgerStore` by default), and every
    charge, from :meth:`compose` or :meth:`compose_all`, goes through the store's one commit
    point. A refused charge raises :class:`BudgetExceededError` and leaves the ledger unchanged.
    Charging is thread-safe (and process-safe with a database store). There is no global
    default accountant.

    >>> acc = Accountant(epsilon=1)
    >>> _ = acc.compose(PureDP(0.5), label="first half")
    >>> acc.compose(PureDP(0.75))
    Traceback (most recent call last):
    ...
    fastmwem.accounting.BudgetExceededError: charge PureDP(epsilon=0.75) would exceed the budget: spent PureDP(epsilon=0.5) of PureDP(epsilon=1)
    >>> acc.spent()
    PureDP(epsilon=0.5)
    """

    # Set once, by __init__ through object.__setattr__ (assignment is refused afterwards).
    _mode: str
    _budget: tuple[Fraction, ...]
    _store: LedgerStore
    _given_epsilon: object
    _given_delta: object
    _given_rho: object
    _given_composition: str

    def __init__(self, epsilon: object = None, delta: object = 0, rho: object = None,
                 composition: str = "basic", *, store: LedgerStore | None = None) -> None:
        budget: tuple[Fraction, ...]
        if composition not in ("basic", "zcdp"):
            raise ValueError(f"composition must be 'basic' or 'zcdp', got {composition!r}")
        if rho is not None:
            if epsilon is not None:
                raise ValueError("give either rho or epsilon as the budget, not both")
            mode, budget = "zcdp", (exact(rho, "rho"),)
        elif epsilon is None:
            raise ValueError("Accountant needs a budget: epsilon (and delta) or rho")
        else:
            eps = exact(epsilon, "epsilon")
            d = exact(delta, "delta", allow_zero=True)
            if d >= 1:
                raise ValueError(f"delta must be < 1, got {float(d)}")
            if composition == "zcdp":
                if d == 0:
                    raise ValueError("composition='zcdp' needs delta > 0")
                mode, budget = "zcdp", (approx_dp_to_zcdp_budget(eps, d),)
            elif d == 0:
                mode, budget = "pure", (eps,)
            else:
                mode, budget = "approx", (eps, d)
        if store is None:
            store = MemoryLedgerStore()
        elif not isinstance(store, LedgerStore):
            raise TypeError(f"store must be a LedgerStore, got {type(store).__name__}")
        given = {"epsilon": epsilon, "delta": delta, "rho": rho, "composition": composition}
        for key, value in {**given, "_mode": mode, "_budget": budget, "_store": store}.items():
            object.__setattr__(self, key if key.startswith("_") else "_given_" + key, value)
        self._check_stored_ledger()

    def __setattr__(self, name: str, value: object) -> None:
        if name in _READ_ONLY or name.startswith("_given_"):
            raise AttributeError(
                f"Accountant is read-only: cannot set {name!r} (a budget cannot change once "
                "charges are made against it; make a new Accountant)"
            )
        object.__setattr__(self, name, value)  # a subclass's own bookkeeping

    def __delattr__(self, name: str) -> None:
        if name in _READ_ONLY or name.startswith("_given_"):
            raise AttributeError(f"Accountant is read-only: cannot delete {name!r}")
        object.__delattr__(self, name)

    def __repr__(self) -> str:
        return (f"Accountant(epsilon={self.epsilon!r}, delta={self.delta!r}, rho={self.rho!r}, "
                f"composition={self.composition!r})")

    @property
    def epsilon(self) -> object:
        """The epsilon budget as given (read-only)."""
        return self._given_epsilon

    @property
    def delta(self) -> object:
        """The delta budget as given (read-only)."""
        return self._given_delta

    @property
    def rho(self) -> object:
        """The zCDP budget as given (read-only)."""
        return self._given_rho

    @property
    def composition(self) -> str:
        return self._given_composition

    @property
    def store(self) -> LedgerStore:
        """The ledger store this accountant commits to."""
        return self._store

    def _check_stored_ledger(self) -> None:
        """A store handed over with entries must hold costs in this accountant's currency."""
        entries = self.store.entries()
        for entry in entries:
            if self._cost(entry.event) != tuple(entry.cost):
                raise ValueError(
                    f"the stored ledger entry {entry.label!r} costs {entry.cost} in another "
                    "currency than this accountant's; was the store made for another budget?"
                )
        if entries and not self._fits(self.store.spent(len(self._budget))):
            raise ValueError("the stored ledger already spends more than this budget")

    # -- conversions -------------------------------------------------------------------------
    def _cost(self, event: PrivacyEvent) -> tuple[Fraction, ...]:
        if not isinstance(event, _EVENT_TYPES):
            raise TypeError(f"event must be a privacy event, got {type(event).__name__}")
        if self._mode == "pure":
            eps = event.pure_epsilon()
            if eps is None:
                raise ValueError(f"{event!r} has no pure-DP cost; this accountant holds pure DP")
            return (eps,)
        if self._mode == "approx":
            pair = event.approx()
            if pair is None:
                raise ValueError(
                    f"{event!r} needs a delta to convert; use Accountant(..., composition='zcdp')"
                )
            return pair
        rho = event.zcdp_rho()
        if rho is None:
            raise ValueError(f"{event!r} has no zCDP cost; this accountant composes in zCDP")
        return (rho,)

    def _as_event(self, values: tuple[Fraction, ...]) -> PrivacyEvent:
        if self._mode == "pure":
            return PureDP(values[0])
        if self._mode == "approx":
            return ApproxDP(values[0], values[1])
        return ZCDP(values[0])

    def _overspend(self, cost: tuple[Fraction, ...], spent_now: tuple[Fraction, ...]) -> str:
        """The tail of a refusal message: what was spent of what budget."""
        spent, budget = self._as_event(spent_now), self._as_event(self._budget)
        text = f"would exceed the budget: spent {spent!r} of {budget!r}"
        values = (*cost, *spent_now, *self._budget)
        if any(Fraction(show(x)) != x for x in values):
            # The short displays are rounded; say exactly why the charge does not fit.
            left = ", ".join(str(b - s) for b, s in zip(self._budget, spent_now))
            need = ", ".join(str(c) for c in cost)
            text += f" (exactly: the charge needs {need}, the budget has {left} left)"
        return text
    def _fits(self, values: tuple[Fraction, ...]) -> bool:
        return all(v <= b for v, b in zip(values, self._budget))

    def _commit(self, events: list[tuple[PrivacyEvent, str]], what: str, *,
                charge: bool = True) -> None:
        """The one commit point: charge every event, or none (``BudgetExceededError``); with
        ``charge=False`` only refuse what would not fit now."""
        entries = [LedgerEntry(str(label), event, self._cost(event)) for event, label in events]
        if not entries:
            return
        total = tuple(sum(costs, Fraction(0)) for costs in zip(*(e.cost for e in entries)))

        def admit(spent: tuple[Fraction, ...]) -> None:
            if not self._fits(tuple(s + c for s, c in zip(spent, total))):
                shown = repr(entries[0].event) if len(entries) == 1 else repr(self._as_event(total))
                raise BudgetExceededError(f"{what} {shown} {self._overspend(total, spent)}")

        if charge:
            self.store.commit(entries, admit)
        else:
            admit(self._spent())

    # -- public API --------------------------------------------------------------------------
    def can_afford(self, event: PrivacyEvent) -> bool:
        """Whether ``event`` fits in the remaining budget now (nothing is charged)."""
        cost = self._cost(event)
        return self._fits(tuple(s + c for s, c in zip(self._spent(), cost)))

    def check_fits(self, events: list[tuple[PrivacyEvent, str]]) -> None:
        """Refuse, as :meth:`compose_all` would, a plan that does not fit the remaining budget
        now; nothing is charged."""
        self._commit(list(events), "a plan costing", charge=False)

    def compose(self, event: PrivacyEvent, *, label: str = "") -> Accountant:
        """Charge ``event``; return ``self``. Raises :class:`BudgetExceededError` on overspend."""
        self._commit([(event, label)], "charge")
        return self

    charge = compose

    def compose_all(self, events: list[tuple[PrivacyEvent, str]]) -> Accountant:
        """Charge several ``(event, label)`` pairs atomically: all of them, or none.

        Algorithms that know their whole privacy plan in advance (MWEM's rounds) charge it here
        before touching the data, so a refused plan spends nothing.
        """
        self._commit(list(events), "a plan costing")
        return self

    def _spent(self) -> tuple[Fraction, ...]:
        return self.store.spent(len(self._budget))

    def spent(self) -> PrivacyEvent:
        """What has been charged, in this accountant's currency."""
        return self._as_event(self._spent())

    def remaining(self) -> PrivacyEvent:
        """What is left of the budget."""
        return self._as_event(tuple(b - s for b, s in zip(self._budget, self._spent())))

    def budget(self) -> PrivacyEvent:
        """The whole budget, in this accountant's currency."""
        return self._as_event(self._budget)

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        """Every accepted charge, in order."""
        return self.store.entries()

    def ledger_records(self) -> list[dict[str, object]]:
        """The ledger as JSON-ready dictionaries (numbers as floats and exact strings)."""
        return ledger_records(self.ledger)

    def __getstate__(self) -> dict[str, object]:
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, object]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)


def ledger_records(entries: tuple[LedgerEntry, ...] | list[LedgerEntry]) -> list[dict[str, object]]:
    """Ledger entries as JSON-ready dictionaries.

    Each record holds the label, the event, and each parameter twice: as a short number
    (:func:`show`, rounded up, so never below what was charged) and as the exact fraction string
    that the accountant composed.

    >>> below = Fraction(0.009999999999999998)   # the float below 0.01, charged exactly
    >>> ledger_records([LedgerEntry("count", PureDP(below), (below,))])[0]
    ... # doctest: +NORMALIZE_WHITESPACE
    {'label': 'count', 'event': 'PureDP(epsilon=0.01)', 'epsilon': 0.01,
     'epsilon_exact': '2882303761517117/288230376151711744'}
    """
    records = []
    for entry in entries:
        rec: dict[str, object] = {"label": entry.label, "event": repr(entry.event)}
        for key in ("epsilon", "delta", "rho"):
            if hasattr(entry.event, key):
                value = getattr(entry.event, key)
                rec[key] = _json_number(value)
                rec[key + "_exact"] = str(value)
        records.append(rec)
    return records


def _json_number(value: Fraction) -> float | int:
    """The :func:`show` decimal as a JSON number (a float whose repr is that decimal)."""
    text = show(value)
    if value.denominator == 1 or text.isdigit():
        return int(text)
    number = float(text)
    # Only a parameter beyond the double range (below ~1e-308) has no such float; keep it
    # positive rather than let it print as a claim of zero.
    return number if number > 0 else math.ulp(0.0)
