"""Argument checks for the LP solvers: arrays, public bounds, budget, the shape of the set-up.

Every check runs before any randomness or budget is used and raises a ``ValueError`` (or a
``TypeError`` for a wrong type) naming the argument. Checks against the data (a width below the
data's observable width, entries outside a public bound) read private values: a refusal reveals
that the public bound was wrong about the data, so public bounds should come from public
knowledge, never from the data itself. A message names the argument and the public bound or rule
that fails, never a value read from the data: no entry, position, minimum or maximum, width, row
count or shape of the private arrays.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_positive, check_probability
from fastmwem.indices import real_matrix
from fastmwem.lp.plan import COMPOSITIONS, check_epsilon_bound

__all__ = [
    "LPData",
    "check_lp",
    "check_delta",
    "check_width",
    "check_density",
    "check_rounds",
    "check_choice",
    "check_real",
    "row_width",
    "Budget",
    "DEFAULT_ROUNDS",
    "budget",
    "selection",
    "objective_range",
    "tolerance",
    "rounds",
    "flag",
]

# Rows per block of a blockwise product: bounds the float64 temporary of float32 data.
BLOCK = 65536


def _finite(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` as float32 (kept) or float64, refusing NaN and infinities (not saying where)."""
    out = arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float64)
    if not bool(np.isfinite(out).all()):
        raise ValueError(f"{name} must be finite: it holds a NaN or an infinity")
    return out


def _array(values: object, name: str) -> np.ndarray:
    """``real_matrix`` with numpy's message on ragged input (it quotes shapes) left out."""
    try:
        return real_matrix(values, name)
    except ValueError:
        raise ValueError(f"{name} must be a rectangular array of real numbers") from None


def _matrix(values: object, name: str, columns: int | None) -> np.ndarray:
    arr = _array(values, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (one row per constraint), got a "
                         f"{arr.ndim}-D array")
    if columns is not None and arr.shape[1] != columns:
        raise ValueError(f"{name} must have {columns} columns (one per variable), got "
                         f"{arr.shape[1]}")
    return _finite(arr, name)


def _vector(values: object, name: str, length: int | None, what: str) -> np.ndarray:
    arr = _array(values, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got a {arr.ndim}-D array")
    if length is not None and arr.size != length:  # lengths are row counts: never quoted
        raise ValueError(f"{name} must have {what}")
    return _finite(arr, name).astype(np.float64, copy=False)


_NEEDS_C = "c is required: the public costs, one per variable"


@dataclass(frozen=True)
class LPData:
    """A checked LP ``c @ x`` subject to ``A @ x <= b``: ``A`` is float32 or float64."""

    c: np.ndarray | None
    A: np.ndarray
    b: np.ndarray

    @property
    def objective(self) -> np.ndarray:
        """``c``, which the optimising solvers and the constraint-private model need."""
        if self.c is None:
            raise TypeError(_NEEDS_C)
        return self.c

    @property
    def m(self) -> int:
        return int(self.A.shape[0])

    @property
    def d(self) -> int:
        return int(self.A.shape[1])


def check_lp(c: object | None, A_ub: object, b_ub: object, A_lb: object = None,
             b_lb: object = None) -> LPData:
    """Check and stack ``A_ub @ x <= b_ub`` and ``A_lb @ x >= b_lb`` into one ``A x <= b``.

    Rows ``A_lb @ x >= b_lb`` become ``-A_lb @ x <= -b_lb`` (the sign convention of
    docs/lp.md: the violation of a row is always ``A_i x - b_i``).
    """
    cv = None if c is None else _vector(c, "c", None, "")
    if cv is not None and cv.size == 0:
        raise ValueError("c must have at least one entry (one per variable)")
    d = None if cv is None else cv.size
    blocks_a, blocks_b = [], []
    for a_name, b_name, a_val, b_val, sign in (("A_ub", "b_ub", A_ub, b_ub, 1.0),
                                               ("A_lb", "b_lb", A_lb, b_lb, -1.0)):
        if (a_val is None) != (b_val is None):
            given, missing = (a_name, b_name) if b_val is None else (b_name, a_name)
            raise ValueError(f"{given} is given without {missing}: pass both or neither")
        if a_val is None:
            continue
        a = _matrix(a_val, a_name, d)
        d = a.shape[1]
        if d == 0:
            raise ValueError(f"{a_name} must have at least one column (one per variable)")
        b = _vector(b_val, b_name, a.shape[0], f"one entry per row of {a_name}")
        blocks_a.append(a if sign > 0 else -a)
        blocks_b.append(b if sign > 0 else -b)
    if not blocks_a:
        raise ValueError("no constraints: pass A_ub and b_ub (and/or A_lb and b_lb)")
    A = blocks_a[0] if len(blocks_a) == 1 else np.concatenate(
        [blk.astype(np.result_type(*blocks_a), copy=False) for blk in blocks_a])
    b = blocks_b[0] if len(blocks_b) == 1 else np.concatenate(blocks_b)
    if A.shape[0] == 0:
        raise ValueError("A_ub must have at least one row (constraint)")
    return LPData(cv, A, b)


def check_real(value: object, name: str) -> float:
    """A finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}: {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def check_delta(delta: object) -> float:
    """The delta of an (epsilon, delta) budget: a number in [0, 1)."""
    return check_probability(delta, "delta", open_left=False)


def check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def check_rounds(rounds: object, n_experts: float, what: str) -> int:
    """T >= 1 with ``ln(n_experts) <= T`` so that the learning rate ``sqrt(ln(.)/T)`` is <= 1."""
    t = check_int(rounds, "rounds", minimum=1)
    if math.log(max(n_experts, 1.0)) > t:
        raise ValueError(f"rounds must be >= ln({what}) = {math.log(n_experts):.3g} so that the "
                         f"learning rate sqrt(ln({what}) / rounds) is at most 1, got {t}")
    return t


def check_density(density: object, m: int) -> float:
    """The density ``s`` of the dense distributions: a number in [1, m].

    ``m`` (the number of constraints) is private under constraint neighbours: the message names the
    rule, not ``m``.
    """
    s = check_positive(density, "density")
    if not 1.0 <= s <= m:
        raise ValueError(f"density must lie in [1, m] (m = the number of constraints), got {s}")
    return s


def row_width(A: np.ndarray, b: np.ndarray, scale: np.ndarray | None = None) -> float:
    """``max_{i,j} |A_ij s_j - b_i|`` (``s = 1`` by default): the data's observable LP width.

    Blockwise, so float32 data is never copied whole to float64.
    """
    top = 0.0
    for s in range(0, A.shape[0], BLOCK):
        block = np.asarray(A[s:s + BLOCK], dtype=np.float64)
        if scale is not None:
            block = block * scale
        hi = block.max(axis=1) - b[s:s + BLOCK]
        lo = block.min(axis=1) - b[s:s + BLOCK]
        top = max(top, float(np.abs(hi).max()), float(np.abs(lo).max()))
    return top


def check_width(width: object, observable: float, what: str) -> float:
    """A public width, refused when it is below the width the data shows (``observable``, which
    is private: the message never quotes it)."""
    if width is None:
        raise ValueError(f"width is required: a public bound on {what}; it is never computed "
                         "from the private data")
    w = check_positive(width, "width")
    if w < observable:
        raise ValueError(f"width = {w} does not bound {what} on this data: the "
                         "multiplicative-weights losses would leave [-1, 1]")
    return w


# -- the arguments every front end shares: budget, selection, objective range, flags ---------

@dataclass(frozen=True)
class Budget:
    """The budget arguments of a solve, checked."""

    epsilon: float
    delta: float
    composition: str
    test_fraction: float


#: Rounds T when ``rounds=None`` (the instance of docs/lp.md's measurements, after Fast-MWEM s.5.2).
DEFAULT_ROUNDS = 200
_SELECTIONS = ("exponential", "lazy")


def budget(epsilon: object, delta: object, composition: object, test_fraction: object
           ) -> Budget:
    """The checked budget arguments of a solve (epsilon at most ``plan.MAX_EPSILON``)."""
    eps = check_epsilon(epsilon)
    check_epsilon_bound(eps)
    d = check_delta(delta)
    comp = check_choice(composition, "composition", COMPOSITIONS)
    if comp != "basic" and d == 0:
        raise ValueError(f"composition={comp!r} needs delta > 0; pass composition='basic' for "
                         "pure epsilon-DP")
    return Budget(eps, d, comp, check_probability(test_fraction, "test_fraction"))


def selection(value: object, index: object) -> str:
    """``"exponential"`` or ``"lazy"``; an index only goes with the lazy selection."""
    sel = check_choice(value, "selection", _SELECTIONS)
    if sel == "exponential" and index is not None:
        raise ValueError("index is used only with selection='lazy'")
    return sel


def objective_range(value: object, default: tuple[float, float] | None,
                    ) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo < hi``, or ``default`` when ``value`` is None."""
    if value is None:
        if default is None:
            raise ValueError("objective_range is required: a public interval (lo, hi) holding "
                             "the optimal value of c @ x")
        return default
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise TypeError("objective_range must be a pair (lo, hi)")
    pair = cast("Sequence[object]", value)  # a sized value, indexed as a pair
    lo = check_real(pair[0], "objective_range[0]")
    hi = check_real(pair[1], "objective_range[1]")
    if not lo < hi:
        raise ValueError(f"objective_range must have lo < hi, got ({lo}, {hi})")
    return lo, hi


def tolerance(value: object) -> float | None:
    return None if value is None else check_real(value, "tolerance")


def rounds(value: object) -> object:
    return DEFAULT_ROUNDS if value is None else value


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value
