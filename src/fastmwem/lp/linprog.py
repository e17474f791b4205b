"""Private linear programs in the style of ``scipy.optimize.linprog``: minimise ``c @ x`` subject
to ``A_ub @ x <= b_ub`` (and ``A_lb @ x >= b_lb``), under one of two neighbouring relations
(``neighbors=``, a :class:`~fastmwem.lp.neighbors.ScalarNeighbors` or
:class:`~fastmwem.lp.neighbors.ConstraintNeighbors`, or its string form with loose keywords).

* ``neighbors="scalar"`` (Fast-MWEM, arXiv:2602.03732, s.4.1): ``A`` and ``c`` are public, ``b``
  is private, and neighbouring datasets have ``|b - b'|_inf <= sensitivity``. ``x`` ranges over
  the probability simplex (scale the variables to fit). Feasibility by S1/S2, the objective by a
  private binary search over the target ``c @ x <= w``.
* ``neighbors="constraint"`` (Fast-MWEM s.4.2): neighbouring datasets differ by one constraint
  row. The LP must be a packing LP (``c < 0``, ``0 <= A_ub <= entry_bound``, ``b_ub >= 0``,
  ``x >= 0``); the answer may violate up to ``density`` constraints by more than ``alpha``.
  Dense MWU (C1/C2) for each target, and the same binary search with a noisy count as its test.

``selection="exponential"`` scores every candidate each round; ``selection="lazy"`` samples the
same law from an exact top-k oracle (``index``).

The guarantee is always ``(epsilon, delta)``-DP (``epsilon``-DP with ``delta = 0``);
``composition=`` is the rule that composes the rounds into it (``"advanced"``, ``"zcdp"`` or
``"basic"``), not a choice of privacy definition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from fastmwem._deprecation import renamed_keyword
from fastmwem.lp import _checks
from fastmwem.lp._checks import _NEEDS_C, check_lp
from fastmwem.lp.constraint import dense_feasibility, dense_linprog
from fastmwem.lp.neighbors import ConstraintNeighbors, ScalarNeighbors, as_neighbors
from fastmwem.lp.result import LPResult
from fastmwem.lp.solve_scalar import scalar_feasibility, scalar_linprog

if TYPE_CHECKING:
    from fastmwem.accounting import Accountant
    from fastmwem.random import RNGLike

__all__ = ["private_linprog", "scalar_feasibility", "dense_feasibility"]


class _Common(TypedDict):
    """The arguments both neighbouring relations take, as :func:`private_linprog` declares them."""

    width: float | None
    rounds: int | None
    selection: str
    index: str | None
    probes: int
    objective_range: tuple[float, float] | None
    tolerance: float | None
    beta: float
    track: bool
    rng: RNGLike
    accountant: Accountant | None


def private_linprog(c: object, A_ub: object = None, b_ub: object = None, *, A_lb: object = None,
                    b_lb: object = None, epsilon: float, delta: float,
                    neighbors: str | ScalarNeighbors | ConstraintNeighbors = "scalar",
                    selection: str = "exponential", index: str | None = None,
                    rounds: int | None = None, width: float | None = None, rng: RNGLike = None,
                    accountant: Accountant | None = None, sensitivity: float | None = None,
                    density: float | None = None, entry_bound: float | None = None,
                    max_constraints: int | None = None,
                    objective_range: tuple[float, float] | None = None, probes: int = 8,
                    tolerance: float | None = None, beta: float = 0.05,
                    composition: str = "advanced", test_fraction: float = 0.1,
                    track: bool = False, privacy: str | None = None) -> LPResult:
    """Minimise ``c @ x`` subject to ``A_ub @ x <= b_ub`` (and ``A_lb @ x >= b_lb``) privately.

    Privacy: ``(epsilon, delta)``-DP (``epsilon``-DP with ``delta = 0`` and
    ``composition="basic"``) under the chosen neighbouring relation (module docstring). The
    whole plan (``(probes + 1) T`` rounds and ``probes`` tests for ``"scalar"``, ``probes T``
    rounds and ``probes`` tests for ``"constraint"``) is charged to ``accountant`` before the
    data is read; a refused charge spends nothing. Every argument, including checks against the
    data (a width below the data's width, entries outside ``entry_bound``), is checked before
    that.

    The objective search (docs/lp.md) halves ``objective_range`` ``probes`` times. Probe
    ``j`` solves for ``c @ x <= mid`` and releases a noisy statistic: the largest violation
    (Laplace, sensitivity ``sensitivity``) under scalar neighbours, the number of rows violated
    by more than ``tolerance`` (geometric, sensitivity 1) under constraint neighbours. A target is
    accepted when the statistic is at most ``tolerance`` (resp. ``density``) plus the noise's
    ``ln(probes / beta)`` tail. ``tolerance=None`` uses the theoretical ``alpha``
    (:func:`~fastmwem.lp.theory.scalar_alpha`, :func:`~fastmwem.lp.theory.dense_alpha`), which
    is loose; a smaller public tolerance gives sharper answers.

    Args:
        c: public costs (length d).
        A_ub, b_ub: ``A_ub @ x <= b_ub``.
        A_lb, b_lb: ``A_lb @ x >= b_lb`` (stacked as ``-A_lb @ x <= -b_lb``).
        epsilon, delta: privacy budget of the whole solve.
        neighbors: the neighbouring relation: ``ScalarNeighbors(sensitivity)`` (private ``b``,
            ``x`` in the simplex) or ``ConstraintNeighbors(density, entry_bound,
            max_constraints)`` (one constraint row added or removed); or the string
            ``"scalar"`` or ``"constraint"`` with the loose keywords below (not both).
        selection: ``"exponential"`` (classic) or ``"lazy"`` (fast, same law).
        index: exact oracle of the lazy selection (``"warm"``, ``"flat"``, ``"faiss:Flat"``).
        rounds: T per probe (default 200).
        width: public LP width (``max |A_ij - b_i|``; for ``"constraint"``
            ``max |z A_ij / (-c_j) - b_i|`` at the largest target ``z = -objective_range[0]``).
        rng: ``None`` for a release; an integer seed warns and marks the result seeded.
        accountant: the :class:`~fastmwem.accounting.Accountant` to charge.
        sensitivity: with ``neighbors="scalar"``: the public bound on ``|b - b'|_inf``.
        density, entry_bound, max_constraints: with ``neighbors="constraint"``: ``s``, the
            public bound on ``A_ub``'s entries, and the public bound on the number of rows.
        objective_range: public ``(lo, hi)`` holding the optimal ``c @ x`` (``"scalar"``:
            default ``(min c, max c)``; ``"constraint"``: required, ``hi <= 0``).
        probes: binary-search steps (``"scalar"``: 0 solves feasibility only).
        tolerance, beta: the tests' level (see above) and failure probability.
        composition: the composition rule of the rounds and tests: ``"advanced"``, ``"zcdp"``
            (composed in zCDP, converted to ``(epsilon, delta)``) or ``"basic"``.
        test_fraction: share of the budget spent on the tests.
        track: per-round diagnostics on the private data (not private; slow).
        privacy: deprecated alias of ``neighbors`` (warns; removed in the next release).

    Returns:
        An :class:`~fastmwem.lp.result.LPResult`.

    >>> import numpy as np
    >>> A = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> res = private_linprog([1.0, 2.0], A, [0.9, 0.9], epsilon=1.0, delta=1e-6,
    ...                       sensitivity=0.01, width=1.0, rounds=50, probes=0, rng=0)
    >>> res.x.shape, round(float(res.x.sum()), 9), res.privacy
    ((2,), 1.0, ApproxDP(epsilon=1, delta=1e-06))
    """
    neighbors = renamed_keyword("privacy", "neighbors", privacy, neighbors,
                                where="private_linprog", default="scalar")
    relation = as_neighbors(neighbors, sensitivity=sensitivity, density=density,
                            entry_bound=entry_bound, max_constraints=max_constraints)
    if c is None:
        raise TypeError(_NEEDS_C)
    budget = _checks.budget(epsilon, delta, composition, test_fraction)
    common = _Common(width=width, rounds=rounds, selection=selection, index=index,
                     probes=probes, objective_range=objective_range, tolerance=tolerance,
                     beta=beta, track=track, rng=rng, accountant=accountant)
    if isinstance(relation, ScalarNeighbors):
        data = check_lp(c, A_ub, b_ub, A_lb, b_lb)
        return scalar_linprog(data, budget, relation, **common)
    if A_lb is not None or b_lb is not None:
        raise ValueError("A_lb and b_lb do not apply to neighbors='constraint', which takes "
                         "packing constraints A_ub @ x <= b_ub only")
    data = check_lp(c, A_ub, b_ub)
    return dense_linprog(data, budget, relation, **common)
