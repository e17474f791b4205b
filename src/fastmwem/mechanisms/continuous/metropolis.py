"""Metropolis-Hastings for the continuous exponential mechanism, with its delta cost.

A chain of ``m`` steps from a data-independent start releases a point whose law is within total
variation ``(1 - beta)^m`` of the exponential mechanism, where ``beta`` is a Doeblin
(minorisation) constant valid for every dataset: ``P(y, .) >= beta nu_0(.)`` for all ``y``. By
Theorem 1 of arXiv:2204.01132 (from Minami et al.), the release is then
``(epsilon, delta_m)``-DP with ``delta_m = (1 + e^epsilon) (1 - beta)^m``.

Data-free minorisation constants from a loss bound ``L_max >= sup_X sup_y loss_X(y)``, with
``s = epsilon / (2 sensitivity)`` (our derivation):

* uniform independence proposal: ``min{1, g(y')/g(y)} >= g(y') >= exp(-s L_max)``, so
  ``beta_U = exp(-s L_max)`` (with ``nu_0`` uniform); sharper: ``inf_X C_X / vol(Y)``, e.g.
  :func:`~fastmwem.mechanisms.continuous.examples.mean_l1_doeblin_uniform`;
* Laplace random walk of rate ``a`` (proposals off the space rejected): ``q(y, y') >=
  (a/2)^d exp(-a D_1)`` with ``D_1`` the L1 diameter, so
  ``beta_L = vol(Y) (a/2)^d exp(-a D_1 - s L_max)``.

The draw is not exact: prefer :func:`~fastmwem.mechanisms.continuous.atom_perfect` for pure DP.
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_positive, check_probability
from fastmwem.accounting import Accountant, ApproxDP
from fastmwem.mechanisms.continuous._common import charge_draws, check_size
from fastmwem.mechanisms.continuous.density import ExponentialDensity
from fastmwem.mechanisms.continuous.draws import ContinuousDraw, ContinuousDraws
from fastmwem.mechanisms.continuous.proposals import LaplaceProposal, UniformProposal
from fastmwem.mechanisms.continuous.space import as_points
from fastmwem.random import RNGLike, make_rng

__all__ = ["metropolis", "doeblin_constant", "metropolis_delta", "metropolis_steps"]

_TINY = 5e-324  # smallest positive double: a delta that underflows is reported as this, never 0


def doeblin_constant(mech: ExponentialDensity,
                     proposal: UniformProposal | LaplaceProposal, *,
                     loss_bound: float | None = None) -> float:
    """A data-free minorisation constant of the Metropolis kernel (formulas in the module doc).

    Args:
        mech: the mechanism (its ``loss_bound`` is used when ``loss_bound`` is not given).
        proposal: :class:`UniformProposal` or :class:`LaplaceProposal`.
        loss_bound: data-independent ``sup_X sup_y loss_X(y)``.
    """
    bound = mech.loss_bound if loss_bound is None else check_positive(loss_bound, "loss_bound")
    if bound is None:
        raise ValueError("a loss_bound (or an explicit beta) is needed for the Metropolis delta")
    s = mech.scale
    if isinstance(proposal, UniformProposal):
        return math.exp(-s * bound)
    if isinstance(proposal, LaplaceProposal):
        space = mech.space
        a = proposal.rate
        log_beta = (space.log_volume + space.dim * math.log(a / 2.0)
                    - a * space.l1_diameter - s * bound)
        return math.exp(min(0.0, log_beta))
    raise TypeError(f"proposal must be UniformProposal or LaplaceProposal, got {proposal!r}")


def _check_beta(beta: object) -> float:
    return check_probability(beta, "beta", open_right=False)


def metropolis_delta(beta: float, steps: int, epsilon: float) -> float:
    """``delta_m = (1 + e^epsilon) (1 - beta)^m``, rounded up (never 0).

    >>> round(metropolis_delta(0.5, 10, 1.0), 6)
    0.003631
    """
    b = _check_beta(beta)
    m = check_int(steps, "steps", minimum=0)
    eps = check_epsilon(epsilon)
    if b == 1.0:
        return _TINY if m > 0 else min(1.0, 1.0 + math.exp(eps))
    log_delta = float(np.logaddexp(0.0, eps)) + m * math.log1p(-b)
    if log_delta >= 0.0:
        return 1.0
    delta = math.nextafter(math.nextafter(math.exp(log_delta), math.inf), math.inf)
    return max(delta, _TINY)


def metropolis_steps(beta: float, delta: float, epsilon: float) -> int:
    """Smallest ``m`` with ``(1 + e^epsilon) (1 - beta)^m <= delta``.

    >>> metropolis_steps(0.7869, 0.1, 0.1)
    2
    """
    b = _check_beta(beta)
    d = check_probability(delta, "delta")
    eps = check_epsilon(epsilon)
    if b == 1.0:
        return 1
    m = max(0, math.ceil((math.log(d) - float(np.logaddexp(0.0, eps))) / math.log1p(-b)))
    # Guard the ceiling against rounding in the logarithms (a few steps at most; beyond 2^52
    # consecutive m give the same float and the ceiling is as good as it gets).
    for _ in range(8):
        if metropolis_delta(b, m, eps) <= d:
            break
        m += 1
    for _ in range(8):
        if m == 0 or metropolis_delta(b, m - 1, eps) > d:
            break
        m -= 1
    return m


def metropolis(mech: ExponentialDensity, *, size: int | None = None,
               rng: RNGLike = None, accountant: Accountant | None = None,
               steps: int | None = None, delta: float | None = None,
               proposal: UniformProposal | LaplaceProposal | None = None,
               beta: float | None = None, start: object = None,
               ) -> ContinuousDraw | ContinuousDraws:
    """Plain Metropolis-Hastings for ``steps`` steps; ``(epsilon, delta_m)``-DP.

    Privacy: ``ApproxDP(epsilon, delta_m)`` with ``delta_m = (1 + e^epsilon)(1 - beta)^m``
    (arXiv:2204.01132 Thm 1 with the Doeblin bound ``TV <= (1 - beta)^m``). ``beta`` must hold for
    every dataset; by default it is :func:`doeblin_constant` from the mechanism's ``loss_bound``.
    Sensitivity assumption: as the mechanism's.

    Args:
        size: ``None`` for one draw, ``n`` for ``n`` independent chains (vectorised).
        steps: chain length ``m``; or give ``delta`` and the shortest ``m`` reaching it is used.
        delta: target delta in (0, 1) (alternative to ``steps``).
        proposal: :class:`UniformProposal` (default) or :class:`LaplaceProposal`.
        beta: a minorisation constant valid for all datasets, in (0, 1].
        start: a fixed data-independent start point; default a fresh uniform point per chain.
    """
    proposal = UniformProposal() if proposal is None else proposal
    if not isinstance(proposal, (UniformProposal, LaplaceProposal)):
        raise TypeError(f"proposal must be UniformProposal or LaplaceProposal, got {proposal!r}")
    if not isinstance(mech, ExponentialDensity):
        raise TypeError(f"mech must be a ContinuousExponentialMechanism, got {type(mech).__name__}")
    n = check_size(size, mech.dim)
    b = doeblin_constant(mech, proposal) if beta is None else _check_beta(beta)
    if (steps is None) == (delta is None):
        raise ValueError("give exactly one of steps and delta")
    m = metropolis_steps(b, delta, mech.epsilon) if delta is not None else check_int(
        steps, "steps", minimum=1)
    delta_m = metropolis_delta(b, m, mech.epsilon)
    if delta_m >= 1.0:
        raise ValueError(f"steps={m} is too short: the delta bound is >= 1 (beta={b})")
    fixed_start = None
    if start is not None:
        fixed_start = as_points(start, mech.dim, "start")
        if fixed_start.shape[0] != 1 or not mech.space.contains(fixed_start)[0]:
            raise ValueError("start must be one point inside the space")
    gen = make_rng(rng)
    event = ApproxDP(mech.epsilon, delta_m)
    count = n or 1
    charge_draws(accountant, event, "continuous exponential mechanism (metropolis)", count,
                 check=lambda: mech.check_loss(fixed_start))

    space = mech.space
    x = (space.uniform(count, rng=gen) if fixed_start is None
         else np.repeat(fixed_start, count, axis=0))
    logg = mech.log_weight(x)
    evaluations = np.ones(count, dtype=np.int64)
    for _ in range(m):
        cand = proposal.propose(x, space, gen)
        inside = space.contains(cand)
        logg_c = np.full(count, -np.inf)
        if inside.any():
            logg_c[inside] = mech.log_weight(cand[inside])
            evaluations += inside
        with np.errstate(under="ignore"):
            accept = inside & (gen.random(count) < np.exp(np.minimum(logg_c - logg, 0.0)))
        x[accept] = cand[accept]
        logg[accept] = logg_c[accept]
    draws = ContinuousDraws(
        values=x, proposals=np.full(count, m, dtype=np.int64), runs=np.ones(count, dtype=np.int64),
        loss_evaluations=evaluations, from_discrete=np.zeros(count, dtype=bool), privacy=event,
        method="metropolis",
    )
    return draws[0] if n is None else draws
