"""The sparse vector technique: AboveThreshold on integer-valued queries, with discrete noise.

AboveThreshold (Dwork and Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
Algorithm 1 and Theorem 3.23; the sparse-vector step of Online Private Multiplicative Weights,
Hardt and Rothblum 2010) answers a stream of queries with "below" until the first query whose
noisy value reaches a noisy threshold, answers that one "above", and halts.

Here the queries take integer values and the noise is the two-sided geometric (discrete Laplace)
law, so every comparison is between integers and nothing depends on floating-point rounding:

* threshold noise ``P[rho = z]`` proportional to ``exp(-epsilon |z| / (2 sensitivity))``;
* fresh noise for each query, ``exp(-epsilon |z| / (4 sensitivity))``;
* query ``i`` is "above" when ``value_i + nu_i >= threshold + rho``.

Privacy: ``epsilon``-DP (pure) for the whole run (every "below" and the one "above") when each
query's value moves by at most ``sensitivity`` (an integer) between neighbouring datasets; the
queries may be chosen adaptively. Theorem 3.23's shift argument holds verbatim on the integers:
shifting the threshold noise by ``sensitivity`` and the above query's noise by
``2 sensitivity`` costs ``epsilon / 2`` each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_epsilon, check_int
from fastmwem.accounting import Accountant, PureDP
from fastmwem.mechanisms.base import charge
from fastmwem.mechanisms.laplace import Geometric
from fastmwem.random import RNGLike, make_rng

__all__ = ["SparseVector", "SparseVectorRun", "MAX_SV_VALUE", "above_threshold_law"]

#: Largest ``|value|`` and ``|threshold|`` accepted; with the noise bounded by
#: :data:`Geometric.MAX_VALUE` (2**62) the sums stay inside int64.
MAX_SV_VALUE = 2**60


def _integer(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = int(value)
    if abs(v) > MAX_SV_VALUE:
        raise ValueError(f"{name} must lie within +-2**60")
    return v


@dataclass(frozen=True)
class SparseVector:
    """AboveThreshold with discrete Laplace noise (see the module docstring for the law).

    Args:
        epsilon: the privacy cost of one run (``privacy`` is ``PureDP(epsilon)``).
        sensitivity: integer bound on how much one record moves any query's value.

    >>> sv = SparseVector(epsilon=1.0, sensitivity=1)
    >>> run = sv.start(threshold=10, rng=1)
    >>> run.test(0), run.halted
    (False, False)
    """

    epsilon: float
    sensitivity: int = 1
    if TYPE_CHECKING:  # set by __post_init__: the threshold's and the queries' noise
        _noises: tuple[Geometric, Geometric] = field(init=False)

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_int(self.sensitivity, "sensitivity", minimum=1)
        # Both noise laws are built (and their calibration checked) here, before any charge.
        eps, sens = float(self.epsilon), int(self.sensitivity)
        object.__setattr__(self, "_noises", (Geometric(epsilon=eps / 2, sensitivity=sens),
                                              Geometric(epsilon=eps / 4, sensitivity=sens)))

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    @property
    def threshold_noise(self) -> Geometric:
        """The threshold's noise: two-sided geometric of parameter ``epsilon / 2``."""
        return self._noises[0]

    @property
    def query_noise(self) -> Geometric:
        """Each query's noise: two-sided geometric of parameter ``epsilon / 4``."""
        return self._noises[1]

    def start(self, threshold: int, *, rng: RNGLike = None,
              accountant: Accountant | None = None) -> SparseVectorRun:
        """Charge ``privacy`` to ``accountant`` (if any), then draw the noisy threshold."""
        t = _integer(threshold, "threshold")
        generator = make_rng(rng)
        charge(accountant, self.privacy, "sparse vector")
        noisy = int(self.threshold_noise.release(t, rng=generator))
        return SparseVectorRun(self, noisy, generator)

    def resume(self, noisy_threshold: int, *, rng: RNGLike = None) -> SparseVectorRun:
        """A run whose noisy threshold was drawn (and paid for) before, e.g. before a restart.

        The noisy threshold is secret state: keep it where the data is kept, never release it.
        """
        return SparseVectorRun(self, _integer(noisy_threshold, "noisy_threshold"), make_rng(rng))


class SparseVectorRun:
    """One AboveThreshold run: ``test`` each query's value until one is above."""

    def __init__(self, mechanism: SparseVector, noisy_threshold: int,
                 rng: np.random.Generator) -> None:
        self.mechanism = mechanism
        self.noisy_threshold = noisy_threshold
        self._rng = rng
        self.halted = False

    def test(self, value: int) -> bool:
        """``True`` ("above", and the run halts) when ``value + noise >= noisy threshold``."""
        if self.halted:
            raise RuntimeError("this sparse vector run has halted: start a new one (and pay)")
        v = _integer(value, "value")
        noisy = int(self.mechanism.query_noise.release(v, rng=self._rng))
        self.halted = noisy >= self.noisy_threshold
        return self.halted


def above_threshold_law(values: list[int], threshold: int, epsilon: float,
                        sensitivity: int = 1, *, width: int | None = None) -> np.ndarray:
    """Exact probabilities that the run halts at query ``0 .. len(values) - 1``, or never (last).

    For tests: sums over the threshold noise out to ``width`` (default: where the tail is below
    1e-17), with each query's halting probability in closed form.
    """
    a_t = math.exp(-float(epsilon) / (2 * sensitivity))
    a_q = math.exp(-float(epsilon) / (4 * sensitivity))
    if width is None:
        width = int(math.ceil(40 / (1 - a_t))) + 10
    z = np.arange(-width, width + 1)
    p_rho = (1 - a_t) / (1 + a_t) * a_t ** np.abs(z)

    def p_above(v: int) -> np.ndarray:
        # P[v + nu >= t + z] = P[nu >= k] with k = t + z - v.
        k = threshold + z - v
        upper = a_q ** np.maximum(k, 0) / (1 + a_q)
        lower = 1 - a_q ** np.maximum(1 - k, 0) / (1 + a_q)
        return np.where(k > 0, upper, lower)

    out = np.empty(len(values) + 1)
    alive = p_rho.copy()
    for i, v in enumerate(values):
        up = p_above(v)
        out[i] = float((alive * up).sum())
        alive = alive * (1 - up)
    out[-1] = float(alive.sum())
    return out
