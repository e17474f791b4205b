"""Exact samplers with an artificial atom: ConfAtomPerfect and RandomAtomPerfect.

Both run the atom kernel of :mod:`~fastmwem.mechanisms.continuous.design` (Algorithm 1-D,
simulated in :mod:`~fastmwem.mechanisms.continuous.kernel`); a run is an exact draw of the
mixture ``(1 - k_X) mu_X + k_X delta_*`` with ``k_X = kappa / (kappa + C_X)``.

Costs: the proposals of one run are exactly ``Geom0(beta / (beta + 1 - w))`` (mean
``(1 - w) / beta``), a law free of the data whenever ``beta`` is. ConfAtomPerfect repeats runs
until one ends in ``Y``: ``Geom1(1 - k_X)`` runs and ``(1 - w) / (beta (1 - k_X))`` proposals on
average, which depends on the data.

Runtime privacy. The paper's Corollary 2 ("ConfAtomAndRuntimePerfect") claims a runtime that is
independent of the data after geometric padding of the inner loop. That is not exact: even when
the number of runs is made data-independent, a run's length and whether it succeeds are
correlated through the data, so the law of the total number of proposals still depends on the
data (its mean does not). This module therefore does not offer that corollary. The runtime of
:func:`atom_perfect` is *not* private; only its output is. :func:`random_atom_perfect` with a
data-independent ``beta`` has a runtime law that is exactly free of the data
(``Geom0(beta / (beta + 1 - w))`` proposals plus ``n_points`` loss evaluations). That statement is
about the runtime alone: the pair (output, runtime) is not claimed to be jointly DP, because the
output's conditional law given the runtime depends on the data.

Source: Seeman, Reimherr and Slavkovic, "Exact Privacy Guarantees for Markov Chain
Implementations of the Exponential Mechanism with Artificial Atoms", arXiv:2204.01132.
"""

from __future__ import annotations

import numpy as np

from fastmwem._validation import check_int
from fastmwem.accounting import Accountant, BoundedRange, PureDP
from fastmwem.mechanisms.continuous._common import (
    charge_draws,
    check_memory,
    check_progress,
    check_size,
)
from fastmwem.mechanisms.continuous.density import ExponentialDensity
from fastmwem.mechanisms.continuous.design import atom_design, discrete_epsilon
from fastmwem.mechanisms.continuous.draws import ContinuousDraw, ContinuousDraws
from fastmwem.mechanisms.continuous.kernel import atom_runs, first_exits
from fastmwem.mechanisms.continuous.proposals import (
    LaplaceExit,
    LaplaceProposal,
    UniformExit,
    UniformProposal,
)
from fastmwem.mechanisms.continuous.space import as_points
from fastmwem.random import RNGLike, make_rng

__all__ = ["atom_perfect", "random_atom_perfect", "discrete_epsilon"]


def atom_perfect(mech: ExponentialDensity, *, size: int | None = None,
                 rng: RNGLike = None, accountant: Accountant | None = None, w: float = 0.5,
                 kappa: float | None = None, k: float | None = None,
                 normalising_constant: float | None = None,
                 normalising_constant_lower: float | None = None,
                 proposal: UniformProposal | LaplaceProposal | None = None,
                 exit: UniformExit | LaplaceExit | None = None,
                 progress: bool | None = None,
                 ) -> ContinuousDraw | ContinuousDraws:
    """ConfAtomPerfect (corrected): exact draws from the exponential mechanism.

    Runs Algorithm 1-D until a run ends in the space (Algorithm 2) and releases that
    point. The output law is exactly ``mu_X`` whatever the kernel options (they change only the
    cost), so each draw is ``epsilon``-DP and ``epsilon``-bounded range (``BoundedRange``).
    The runtime depends on the data and is not private (see the module docstring).

    Args:
        mech: the mechanism.
        size: ``None`` for one :class:`ContinuousDraw`, or ``n`` for :class:`ContinuousDraws`.
        rng: seed or Generator.
        accountant: charged ``size`` times (atomically) before the loss is evaluated (but
            for its check on public points, ``ExponentialDensity.check_loss``).
        w, kappa, k, normalising_constant, normalising_constant_lower, proposal, exit: kernel
            options, see :func:`atom_design`.
        progress: a progress bar on stderr: ``None`` (default) shows one only if the call runs
            longer than 2 seconds, ``True`` always, ``False`` never. A draw needs
            ``1 + kappa / C_X`` runs on average, which grows without bound as ``C_X`` shrinks
            (large ``epsilon`` with the uniform exit); an exit density close to ``g``, such as
            ``MeanL1Loss.laplace_exit``, keeps it small.

    Source: Seeman, Reimherr and Slavkovic, arXiv:2204.01132, Thm 2 / Algorithm 2, with the
    corrected kernel of :mod:`~fastmwem.mechanisms.continuous.design`.
    """
    check_progress(progress)
    design = atom_design(mech, w=w, kappa=kappa, k=k, normalising_constant=normalising_constant,
                         normalising_constant_lower=normalising_constant_lower,
                         proposal=proposal, exit=exit)
    n = check_size(size, mech.dim)
    gen = make_rng(rng)
    event = BoundedRange(mech.epsilon)
    charge_draws(accountant, event, "continuous exponential mechanism (atom_perfect)", n or 1,
                 check=mech.check_loss)
    out = first_exits(mech, design, n or 1, gen, progress=progress)
    draws = ContinuousDraws(
        values=out["values"], proposals=out["proposals"], runs=out["runs"],
        loss_evaluations=out["evaluations"], from_discrete=np.zeros(n or 1, dtype=bool),
        privacy=event, method="atom",
    )
    return draws[0] if n is None else draws


def random_atom_perfect(mech: ExponentialDensity, *, size: int | None = None,
                        rng: RNGLike = None, accountant: Accountant | None = None,
                        n_points: int = 100, points: object = None, w: float = 0.5,
                        kappa: float | None = None, k: float | None = None,
                        normalising_constant: float | None = None,
                        normalising_constant_lower: float | None = None,
                        proposal: UniformProposal | LaplaceProposal | None = None,
                        exit: UniformExit | LaplaceExit | None = None,
                        ) -> ContinuousDraw | ContinuousDraws:
    """RandomAtomPerfect: one run of Algorithm 1-D; on the atom, a discrete exponential mechanism.

    Releases the run's point if it ends in the space, otherwise a point chosen from ``n_points``
    candidates by the discrete exponential mechanism with ``epsilon_disc``. The candidates are
    uniform in the space (fresh for each draw) or the caller's ``points``; either way they must
    not depend on the data. The ``n_points`` discrete scores are always computed, so the cost is
    exactly ``Geom0(beta / (beta + 1 - w))`` proposals plus ``n_points`` loss evaluations, and
    ``loss_evaluations == proposals + n_points`` (a proposal outside the space is padded with an
    evaluation at a fixed interior point).

    Privacy: ``epsilon``-DP (``PureDP(epsilon)``). Budget split: in variant U the
    mixing weight ``k_X = kappa / (kappa + C_X)`` depends on the data and moves by a factor of
    at most ``e^(epsilon/2)``, so the discrete part uses ``epsilon_disc = epsilon / 2``; in variant
    N (exact ``C_X``, fixed weight ``k``) it uses ``epsilon_disc = epsilon``. The runtime law is
    free of the data when ``design.beta_data_independent`` (always in variant U; in variant N
    when ``normalising_constant_lower`` is given); the runtime alone is then 0-DP, but the pair
    (output, runtime) is not claimed to be jointly private.

    Args:
        n_points: number ``l`` of discrete candidates (>= 1).
        points: optional fixed public candidates, shape (l, d), inside the space.
        Other arguments: as :func:`atom_perfect`.

    Source: Seeman, Reimherr and Slavkovic, arXiv:2204.01132, Cor. 1 / Algorithm 3. The budget
    split and the padded cost are ours: the paper assumes a fixed atom weight, and with a fixed
    ``kappa`` (variant U) the discrete part at the whole ``epsilon`` would be only
    ``1.5 epsilon``-DP.
    """
    design = atom_design(mech, w=w, kappa=kappa, k=k, normalising_constant=normalising_constant,
                         normalising_constant_lower=normalising_constant_lower,
                         proposal=proposal, exit=exit)
    n = check_size(size, mech.dim)
    fixed = None
    if points is not None:
        fixed = as_points(points, mech.dim, "points")
        if not np.all(np.isfinite(fixed)) or not np.all(mech.space.contains(fixed)):
            raise ValueError("points must be finite and lie inside the space")
        ell = fixed.shape[0]
    else:
        ell = check_int(n_points, "n_points", minimum=1)
    # A chunk of draws holds its candidates, their weights and Gumbel noise: at least one draw's.
    check_memory(3 * ell * (mech.dim + 2), f"n_points={ell} candidates in dimension {mech.dim}")
    gen = make_rng(rng)
    eps_disc = discrete_epsilon(design, mech.epsilon)
    event = PureDP(mech.epsilon)
    charge_draws(accountant, event, "continuous exponential mechanism (random_atom_perfect)",
                 n or 1, check=lambda: mech.check_loss(fixed))
    count = n or 1
    out = atom_runs(mech, design, count, gen, pad=True)
    values = out["values"]
    chosen = np.empty((count, mech.dim))
    # Scores are computed for every draw, landed on the atom or not, so the cost does not reveal
    # which branch was taken; chunks bound the memory of (draws x l x d) candidate arrays.
    chunk = max(1, (1 << 20) // max(1, ell * mech.dim))
    for start in range(0, count, chunk):
        stop = min(count, start + chunk)
        m = stop - start
        if fixed is None:
            cands = mech.space.uniform(m * ell, rng=gen).reshape(m, ell, mech.dim)
            logw = mech.log_weight(cands.reshape(-1, mech.dim), epsilon=eps_disc).reshape(m, ell)
        else:
            cands = np.broadcast_to(fixed, (m, ell, mech.dim))
            logw = np.broadcast_to(mech.log_weight(fixed, epsilon=eps_disc), (m, ell))
        pick = np.argmax(logw + gen.gumbel(size=(m, ell)), axis=1)
        chosen[start:stop] = cands[np.arange(m), pick]
    at_atom = out["at_atom"]
    values[at_atom] = chosen[at_atom]
    draws = ContinuousDraws(
        values=values, proposals=out["proposals"], runs=np.ones(count, dtype=np.int64),
        loss_evaluations=out["evaluations"] + ell,
        from_discrete=at_atom.copy(), privacy=event, method="random-atom",
    )
    return draws[0] if n is None else draws
