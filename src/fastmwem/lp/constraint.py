"""Constraint-private LPs by dense multiplicative weights (Algorithms C1 and C2 of docs/lp.md;
Fast-MWEM, arXiv:2602.03732, s.4.2 and App. A, G, after Hsu, Roth, Roughgarden and Ullman,
arXiv 1402.3631).

Problem (a packing LP in scipy's form): ``c < 0`` public, ``0 <= A <= entry_bound``, ``b >= 0``;
neighbouring datasets differ by one constraint row ``(A_i, b_i)`` added or removed. For a public
target ``z = -(c @ x)`` the solver looks for ``x`` in ``K = {x >= 0 : c'x = z}`` (``c' = -c``)
violating at most ``s`` constraints by more than ``alpha``.

Each round projects the *cumulative* gains (lazy projection, so neighbours' pre-projection
weights agree on their shared rows) onto the ``s``-dense distributions, picks a vertex
``x_j = (z / c'_j) e_j`` of ``K`` by the exponential mechanism on
``q(j) = -<y, V_{:,j}>`` with ``V_ij = z A_ij / c'_j`` (sensitivity ``rho_A / s``,
``rho_A = z entry_bound / min c'``, by the neighbour lemma), and adds the gains
``(V_{i j} - b_i) / width``. The fast dual oracle (C2) runs the lazy exponential mechanism over the
vertex keys ``-A_{:,j} / c'_j`` with query ``z y``.

The learning rate ``sqrt(ln(M / s) / T)`` uses a public bound ``M`` on the number of constraints:
``m`` itself differs between neighbours, and a learning rate read from it would scale every
shared weight differently on the two sides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fastmwem.lp._checks import BLOCK
from fastmwem.lp.projection import project_log_weights
from fastmwem.lp.result import LPRound, violation_summary
from fastmwem.mechanisms.exponential import ExponentialMechanism
from fastmwem.mechanisms.laplace import Geometric
from fastmwem.mechanisms.lazy import LazyExponentialMechanism

if TYPE_CHECKING:
    from fastmwem.indices.base import TopKOracle

__all__ = ["DenseLP", "DenseMWU", "run_dense", "DenseTest", "vertex_selector"]


@dataclass(frozen=True)
class DenseLP:
    """A checked packing LP: ``A >= 0`` (m x d), ``b``, and the positive costs ``c' = -c``."""

    A: np.ndarray
    b: np.ndarray
    c_pos: np.ndarray

    def values(self, j: int, target: float) -> np.ndarray:
        """``V_{:,j} = target A_{:,j} / c'_j``: every row's left-hand side at vertex ``j``."""
        return np.asarray(self.A[:, j], dtype=np.float64) * (target / self.c_pos[j])

    def weighted_columns(self, y: np.ndarray) -> np.ndarray:
        """``y @ A`` (length d), blockwise in float64."""
        out = np.zeros(self.A.shape[1])
        for s in range(0, self.A.shape[0], BLOCK):
            out += y[s:s + BLOCK] @ np.asarray(self.A[s:s + BLOCK], dtype=np.float64)
        return out


class DenseMWU:
    """Multiplicative weights over the constraints, projected onto ``s``-dense distributions.

    The state is the cumulative gain of each row; every round's distribution is the projection of
    ``eta * gains`` (lazy projection, docs/lp.md): never the previous projected
    distribution updated again.
    """

    def __init__(self, m: int, density: float, eta: float) -> None:
        self.gains = np.zeros(m)
        self.density = float(density)
        self.eta = float(eta)

    def log_weights(self) -> np.ndarray:
        return self.eta * self.gains

    def distribution(self) -> np.ndarray:
        return project_log_weights(self.log_weights(), self.density)

    def update(self, gains: np.ndarray) -> None:
        self.gains += gains


def vertex_selector(lp: DenseLP, *, target: float, epsilon0: float, score_sensitivity: float,
                    selection: str, oracle: TopKOracle | None = None):
    """The dual oracle: a vertex ``j`` by the exponential mechanism on ``q(j) = -<y, V_{:,j}>``
    (``epsilon0``-DP, bounded range, score sensitivity ``score_sensitivity``).

    ``"exponential"`` scores the d vertices from ``y @ A``; ``"lazy"`` queries ``oracle`` (keys
    ``-A_{:,j} / c'_j``) with ``target * y``. The constant ``sum_i y_i b_i`` is left out of the
    score: it moves no probability but would add to the sensitivity.
    """
    if selection == "exponential":
        em = ExponentialMechanism(epsilon=epsilon0, sensitivity=score_sensitivity)
        return lambda y, g: em.select(-target * lp.weighted_columns(y) / lp.c_pos, rng=g)
    if oracle is None:
        raise ValueError("selection='lazy' needs an oracle")
    lazy = LazyExponentialMechanism(oracle, epsilon=epsilon0, sensitivity=score_sensitivity)
    return lambda y, g: lazy.select(target * y, rng=g)


def run_dense(lp: DenseLP, select, *, target: float, density: float, eta: float, rounds: int,
              width: float, generator: np.random.Generator, probe: int = 0,
              track: bool = False) -> tuple[np.ndarray, list[LPRound]]:
    """Algorithm C1/C2's loop; returns the average vertex and the round records."""
    mwu = DenseMWU(lp.A.shape[0], density, eta)
    counts = np.zeros(lp.A.shape[1])
    trace = []
    for t in range(1, rounds + 1):
        y = mwu.distribution()
        j = select(y, generator)
        counts[j] += 1
        # b_i is row i's own offset (the experts are the rows), not a shift common to every
        # expert: it stays, and neighbours' shared rows get bit-identical gains.
        mwu.update((lp.values(j, target) - lp.b) / width)
        frac = worst = None
        if track:
            frac, worst = violation_summary(lp.A, lp.b, target / lp.c_pos * counts / t)
        trace.append(LPRound(probe, t, int(j), frac, worst))
    return target / lp.c_pos * counts / rounds, trace


@dataclass(frozen=True)
class DenseTest:
    """The private acceptance test of a target under constraint neighbours.

    The statistic, the number of constraints with ``A_i xbar > b_i + tolerance``, changes by at
    most one when a row is added or removed; it is released with two-sided geometric noise at
    ``epsilon`` and the target accepted when the noisy count is at most
    ``density + ln(K / beta) / epsilon`` (``K`` tests).
    """

    epsilon: float
    tolerance: float
    density: float
    tests: int
    beta: float

    @property
    def threshold(self) -> float:
        return self.density + math.log(self.tests / self.beta) / self.epsilon

    def __call__(self, lp: DenseLP, x: np.ndarray,
                 generator: np.random.Generator) -> tuple[float, bool]:
        count = 0
        for s in range(0, lp.A.shape[0], BLOCK):
            v = np.asarray(lp.A[s:s + BLOCK], dtype=np.float64) @ x - lp.b[s:s + BLOCK]
            count += int(np.count_nonzero(v > self.tolerance))
        noisy = Geometric(epsilon=self.epsilon, sensitivity=1).release(count, rng=generator)
        return float(noisy), bool(noisy <= self.threshold)
