"""Private linear programs by multiplicative weights, classic and fast (Fast-MWEM s.4).

* :func:`private_linprog`: ``scipy.optimize.linprog``-style front end (scalar or constraint
  neighbours, classic or lazy selection, private binary search over the objective).
* :class:`ScalarNeighbors`, :class:`ConstraintNeighbors`: the neighbouring relations, with
  their public parameters (``neighbors=``).
* :func:`scalar_feasibility` (Algorithms S1/S2) and :func:`dense_feasibility` (C1/C2).
* :func:`dense_projection`: the exact KL projection onto s-dense distributions.
* :class:`WarmStartIndex`: an exact top-k oracle for the slowly moving MWU queries.
* :func:`plan_privacy`: the per-round epsilon and the events a solve charges.

The non-private optimum (``scipy.optimize.linprog``, HiGHS) is only a reference line for tests and
benchmarks; it never runs in the private path.
"""

from fastmwem.indices.warm import WarmStartIndex
from fastmwem.lp.linprog import dense_feasibility, private_linprog, scalar_feasibility
from fastmwem.lp.neighbors import ConstraintNeighbors, ScalarNeighbors
from fastmwem.lp.plan import PrivacyPlan, plan_privacy
from fastmwem.lp.projection import dense_projection
from fastmwem.lp.result import LPProbe, LPResult, LPRound
from fastmwem.lp.theory import dense_alpha, scalar_alpha

__all__ = [
    "private_linprog",
    "ScalarNeighbors",
    "ConstraintNeighbors",
    "scalar_feasibility",
    "dense_feasibility",
    "dense_projection",
    "WarmStartIndex",
    "plan_privacy",
    "PrivacyPlan",
    "LPResult",
    "LPRound",
    "LPProbe",
    "scalar_alpha",
    "dense_alpha",
]
