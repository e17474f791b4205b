"""Scalar-private LPs: multiplicative weights over the simplex with a private worst-constraint
choice (Algorithms S1 and S2 of docs/lp.md; Fast-MWEM, arXiv:2602.03732, s.4.1, after Hsu, Roth,
Roughgarden and Ullman, "Privately Solving Linear Programs", arXiv 1402.3631).

Problem: find ``x`` in the simplex with ``A x <= b + alpha``. ``A`` (and ``c``) are public; ``b``
is private, and neighbouring datasets have ``|b - b'|_inf <= sensitivity``.

Each round plays ``x_t = softmax(logw)``, picks a constraint ``i_t`` by the exponential mechanism
on the violations ``u_i = A_i x_t - b_i`` (score sensitivity ``sensitivity``: ``x_t`` depends only
on earlier selections), and takes the loss ``(A_{i_t} - mid(A_{i_t})) / width``. The textbook loss
``(A_{i_t} - b_{i_t}) / width`` differs from it by a constant across the coordinates, which moves
no weight of the softmax; but in floating point subtracting the private ``b_{i_t}`` would round
differently for neighbouring ``b``, and the bits of ``x`` would tell them apart. The public
midrange of the row keeps the loss in [-1, 1] (its half-range is at most ``width``) and makes
``x`` a function of ``A``, ``width`` and the selections alone. The output is the average iterate,
post-processing of the selections. Classic selection (S1) scores every row; the
fast one (S2) runs the lazy exponential mechanism over an exact oracle on keys ``[A_i, -b_i]``
with query ``[x_t, 1]``; both have exactly the exponential mechanism's law.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fastmwem.indices.warm import WarmStartIndex
from fastmwem.lp._checks import BLOCK
from fastmwem.lp.oracles import scalar_oracle
from fastmwem.lp.result import LPRound, violation_summary
from fastmwem.mechanisms.exponential import ExponentialMechanism
from fastmwem.mechanisms.laplace import Laplace
from fastmwem.mechanisms.lazy import LazyExponentialMechanism

if TYPE_CHECKING:
    from fastmwem.indices.base import TopKOracle

__all__ = ["ScalarRows", "scalar_selector", "run_primal", "ScalarTest"]

Selector = Callable[[np.ndarray, np.random.Generator], int]


@dataclass(frozen=True)
class ScalarRows:
    """The rows ``A x <= b`` (private ``b``) and public extra rows ``E x <= f``."""

    A: np.ndarray
    b: np.ndarray
    E: np.ndarray
    f: np.ndarray

    @property
    def m(self) -> int:
        return int(self.A.shape[0])

    def scores(self, x: np.ndarray) -> np.ndarray:
        """The violations ``A_i x - b_i`` of every row, extra rows last (float64, blockwise)."""
        out = np.empty(self.m + self.E.shape[0])
        for s in range(0, self.m, BLOCK):
            stop = min(s + BLOCK, self.m)
            out[s:stop] = np.asarray(self.A[s:stop], dtype=np.float64) @ x
        out[:self.m] -= self.b
        out[self.m:] = self.E @ x - self.f
        return out

    def public_row(self, i: int) -> np.ndarray:
        """Row ``i`` of ``[A; E]`` in float64, without its (private) right-hand side."""
        if i < self.m:
            return np.asarray(self.A[i], dtype=np.float64)
        return np.asarray(self.E[i - self.m], dtype=np.float64)


def scalar_selector(rows: ScalarRows, *, epsilon0: float, sensitivity: float, selection: str,
                    oracle: TopKOracle | None = None, target: float | None = None) -> Selector:
    """The per-round choice of a constraint: ``epsilon0``-DP, bounded range, exactly the
    exponential mechanism on ``A_i x - b_i`` with score sensitivity ``sensitivity``.

    ``"exponential"`` scores every row; ``"lazy"`` queries ``oracle`` (from
    :func:`~fastmwem.lp.oracles.scalar_oracle`; with a ``target``, its objective key is row m).
    """
    if selection == "exponential":
        em = ExponentialMechanism(epsilon=epsilon0, sensitivity=sensitivity)
        return lambda x, g: em.select(rows.scores(x), rng=g)
    if isinstance(oracle, WarmStartIndex):
        if target is not None:
            oracle = oracle.with_extra_rows(rows.E, -rows.f)
        tail = np.array([1.0])
    else:
        tail = np.array([1.0]) if target is None else np.array([1.0, -target])
    if oracle is None:
        raise ValueError("selection='lazy' needs an oracle")
    lazy = LazyExponentialMechanism(oracle, epsilon=epsilon0, sensitivity=sensitivity)
    return lambda x, g: lazy.select(np.concatenate([x, tail]), rng=g)


def _centred(row: np.ndarray) -> np.ndarray:
    """``row`` minus its midrange: a shift by a public constant (halves: no overflow)."""
    return row - (0.5 * float(row.max()) + 0.5 * float(row.min()))


def _softmax(logw: np.ndarray) -> np.ndarray:
    x = np.exp(logw - logw.max())
    return x / x.sum()


def run_primal(rows: ScalarRows, select: Selector, *, rounds: int, width: float,
               generator: np.random.Generator, probe: int = 0, track: bool = False
               ) -> tuple[np.ndarray, list[LPRound]]:
    """Algorithm S1/S2's loop: ``rounds`` rounds of Hedge over the ``d`` coordinates.

    Returns the average iterate and the round records. The learning rate is
    ``sqrt(ln d / T)``; losses ``(A_{i_t} - mid(A_{i_t})) / width`` lie in [-1, 1]. They read
    the selected row of ``A`` (or the public objective row) but never ``b`` (module docstring),
    so the iterates, bit for bit, depend on the private data only through the selections.
    """
    d = rows.A.shape[1]
    eta = math.sqrt(math.log(d) / rounds)
    logw = np.zeros(d)
    total = np.zeros(d)
    trace = []
    for t in range(1, rounds + 1):
        x = _softmax(logw)
        total += x
        i = select(x, generator)
        logw -= eta * _centred(rows.public_row(i)) / width
        frac = worst = None
        if track:  # a diagnostic on the private data
            frac, worst = violation_summary(rows.A, rows.b, total / t)
        trace.append(LPRound(probe, t, int(i), frac, worst))
    return total / rounds, trace


@dataclass(frozen=True)
class ScalarTest:
    """The private acceptance test of a target (this library's design; see docs/lp.md).

    The statistic ``max_i (A_i xbar - b_i)`` over every row (the objective row included) has
    sensitivity ``sensitivity``; it is released with Laplace noise at ``epsilon`` and the target
    is accepted when the noisy value is at most ``tolerance + (sensitivity / epsilon) ln(K / beta)``
    (``K`` tests), so a target whose run met ``tolerance`` is accepted with probability at least
    ``1 - beta / (2K)``.
    """

    epsilon: float
    sensitivity: float
    tolerance: float
    tests: int
    beta: float

    @property
    def threshold(self) -> float:
        return self.tolerance + self.sensitivity / self.epsilon * math.log(self.tests / self.beta)

    def __call__(self, rows: ScalarRows, x: np.ndarray,
                 generator: np.random.Generator) -> tuple[float, bool]:
        statistic = float(rows.scores(x).max())
        noisy = Laplace(epsilon=self.epsilon, sensitivity=self.sensitivity).release(
            statistic, rng=generator)
        return float(noisy), bool(noisy <= self.threshold)


def objective_rows(A: np.ndarray, b: np.ndarray, c: np.ndarray | None,
                   target: float | None) -> ScalarRows:
    """The rows of a probe: ``A x <= b`` plus the public row ``c x <= target``, if any."""
    d = A.shape[1]
    if c is None or target is None:
        return ScalarRows(A, b, np.empty((0, d)), np.empty(0))
    return ScalarRows(A, b, c[None, :], np.array([float(target)]))


def build_oracle(A: np.ndarray, b: np.ndarray, spec: str, c: np.ndarray | None) -> TopKOracle:
    """The private oracle a lazy scalar solve queries (see :func:`scalar_selector`)."""
    return scalar_oracle(A, b, spec, objective=c)
