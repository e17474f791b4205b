"""Random LPs and sampling helpers shared by the tests of fastmwem.lp (not a test module)."""

from __future__ import annotations

import numpy as np


def simplex_lp(rng: np.random.Generator, m: int, d: int, noise: float = 0.05,
               dtype: type = np.float64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The instance of docs/lp.md's measurements: ``A ~ U[0, 1]``, ``x* ~ Dirichlet(1)``,
    ``b = A x* + U[0, noise]`` (so ``x*`` is feasible)."""
    A = rng.random((m, d)).astype(dtype)
    xstar = rng.dirichlet(np.ones(d))
    b = A.astype(np.float64) @ xstar + rng.random(m) * noise
    return A, b, xstar


def packing_lp(rng: np.random.Generator, m: int, d: int, noise: float = 0.05
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A packing LP in scipy's form: ``c < 0``, ``A ~ U[0, 1]``, ``b = A x* + U[0, noise]``."""
    A = rng.random((m, d))
    xstar = rng.dirichlet(np.ones(d))
    b = A @ xstar + rng.random(m) * noise
    c = -rng.uniform(0.5, 1.5, d)
    return c, A, b, xstar


def draw_counts(select, x: np.ndarray, n_outcomes: int, n_draws: int, seed: int) -> np.ndarray:
    """Counts of ``select(x, generator)`` over ``n_draws`` calls sharing one seeded stream."""
    generator = np.random.default_rng(seed)
    draws = np.fromiter((select(x, generator) for _ in range(n_draws)), dtype=np.int64,
                        count=n_draws)
    return np.bincount(draws, minlength=n_outcomes)
