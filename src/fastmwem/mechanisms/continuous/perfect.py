"""Exact samplers with an artificial atom: ConfAtomPerfect and RandomAtomPerfect.

Both run Algorithm 1-D of exact-continuous-sampling.md s.5.2 on the corrected modified kernel
of s.3 (not the paper's literal kernel, which does not target the mixture it claims: s.3.4).
The state space is ``Y`` plus an abstract atom ``*``; the unnormalised target is ``g_X`` on ``Y``
and ``kappa`` at ``*``. One step of the kernel from ``y`` proposes ``*`` with probability ``w``
(accepted with ``min{1, kappa (1 - w) h(y) / (w g(y))}``), otherwise a ``Q``-move with the
usual Metropolis acceptance; from ``*`` it leaves with probability ``1 - w`` through a draw of the
exit density ``h``. Every state reaches ``*`` with probability at least
``beta = w min{1, kappa (1 - w) / (w M)}`` where ``M >= sup g / h``, so by the split-chain
identity ``pi = sum_n beta (1 - beta)^n delta_* R^n`` a run that starts at ``*`` and applies the
remainder kernel ``R`` a ``Geom0(beta)`` number of times is an exact draw of the mixture
``(1 - k_X) mu_X + k_X delta_*`` with ``k_X = kappa / (kappa + C_X)``.

Atom weight, two variants (spec s.2):

* **U** (default): ``kappa`` is a data-independent constant; by default the "always-accept"
  ``kappa = w M / (1 - w)``, giving ``beta = w``. ``k_X`` depends on the data.
* **N**: pass ``k`` and the exact normalising constant ``C_X``; ``kappa_X = k C_X / (1 - k)`` and
  the atom weight is exactly ``k``.

Costs (spec s.5.2, s.6): the proposals of one run are exactly ``Geom0(beta / (beta + 1 - w))``
(mean ``(1 - w) / beta``), a law free of the data whenever ``beta`` is. ConfAtomPerfect repeats runs
until one ends in ``Y``: ``Geom1(1 - k_X)`` runs and ``(1 - w) / (beta (1 - k_X))`` proposals on
average, which depends on the data.

Runtime privacy ([FIX], spec s.7.3). The paper's Corollary 2 ("ConfAtomAndRuntimePerfect")
claims a runtime that is independent of the data after geometric padding of the inner loop. That
is not exact: even when the number of runs is made data-independent, a run's length and whether it
succeeds are correlated through the data, so the law of the total number of proposals still
depends on the data (its mean does not). This module therefore does not offer that corollary. The
runtime of :func:`atom_perfect` is *not* private; only its output is. :func:`random_atom_perfect`
with a data-independent ``beta`` has a runtime law that is exactly free of the data
(``Geom0(beta / (beta + 1 - w))`` proposals plus ``n_points`` loss evaluations). That statement is
about the runtime alone: the pair (output, runtime) is not claimed to be jointly DP, because the
output's conditional law given the runtime depends on the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fastmwem._validation import check_int, check_positive, check_probability
from fastmwem.accounting import Accountant, BoundedRange, PrivacyEvent, PureDP
from fastmwem.mechanisms.continuous.mechanism import (
    ContinuousDraw,
    ContinuousDraws,
    ContinuousExponentialMechanism,
)
from fastmwem.mechanisms.continuous.proposals import (
    LaplaceExit,
    LaplaceProposal,
    UniformExit,
    UniformProposal,
)
from fastmwem.mechanisms.continuous.space import as_points
from fastmwem.random import make_rng

__all__ = ["AtomDesign", "atom_design", "atom_perfect", "random_atom_perfect", "atom_runs",
           "discrete_epsilon"]

# Relative slack when checking "w * alpha(y -> *) >= beta" at visited points (rounding only).
_BOUND_TOL = 1e-9


@dataclass(frozen=True)
class AtomDesign:
    """The resolved parameters of the modified kernel (see :func:`atom_design`).

    Attributes:
        w: probability of proposing the atom.
        kappa: unnormalised atom mass used by the kernel.
        beta: minorisation constant used by Algorithm 1-D (``0 < beta <= w``).
        variant: ``"U"`` (fixed ``kappa``) or ``"N"`` (fixed atom weight ``k``).
        k: the atom weight in variant N, else ``None``.
        ratio_bound: ``M >= sup g / h`` used for ``beta``.
        beta_data_independent: whether ``beta`` is free of the data (then the per-run proposal
            law is too).
        proposal, exit: the kernels ``Q`` and ``h``.
    """

    w: float
    kappa: float
    beta: float
    variant: str
    k: float | None
    ratio_bound: float
    beta_data_independent: bool
    proposal: UniformProposal | LaplaceProposal
    exit: UniformExit | LaplaceExit

    @property
    def always_accept(self) -> bool:
        """Whether every proposal of the atom is accepted (``beta == w``)."""
        return self.beta == self.w

    @property
    def run_success(self) -> float:
        """Parameter ``p`` of the per-run proposal law ``Geom0(p)``, ``p = beta / (beta + 1 - w)``."""
        return self.beta / (self.beta + 1.0 - self.w)

    @property
    def expected_run_proposals(self) -> float:
        """``(1 - w) / beta``: mean number of proposals of one run."""
        return (1.0 - self.w) / self.beta

    def atom_weight(self, normalising_constant: float) -> float:
        """``k_X = kappa / (kappa + C_X)`` for the given ``C_X``."""
        return self.kappa / (self.kappa + normalising_constant)

    def expected_atom_proposals(self, normalising_constant: float) -> float:
        """Mean total proposals of :func:`atom_perfect`: ``(1 - w) / (beta (1 - k_X))``."""
        return self.expected_run_proposals / (1.0 - self.atom_weight(normalising_constant))


def atom_design(mech: ContinuousExponentialMechanism, *, w: float = 0.5,
                kappa: float | None = None, k: float | None = None,
                normalising_constant: float | None = None,
                normalising_constant_lower: float | None = None,
                proposal: UniformProposal | LaplaceProposal | None = None,
                exit: UniformExit | LaplaceExit | None = None) -> AtomDesign:
    """Validate and resolve the kernel parameters (no data is touched).

    Args:
        mech: the mechanism.
        w: probability of proposing the atom, in (0, 1).
        kappa: variant U atom mass (> 0, must not depend on the data); default always-accept
            ``w M / (1 - w)`` with ``M`` the exit density's ratio bound.
        k: variant N atom weight in (0, 1); needs ``normalising_constant``.
        normalising_constant: the exact ``C_X = integral of g_X`` (variant N only).
        normalising_constant_lower: a data-independent lower bound on ``C_X`` over all datasets
            (variant N); if given, ``beta`` is computed from it and is data-independent.
        proposal: ``Q`` for moves inside the space (default :class:`UniformProposal`).
        exit: exit density ``h`` (default :class:`UniformExit`).
    """
    if not isinstance(mech, ContinuousExponentialMechanism):
        raise TypeError(f"mech must be a ContinuousExponentialMechanism, got {type(mech).__name__}")
    w = check_probability(w, "w")
    proposal = UniformProposal() if proposal is None else proposal
    exit = UniformExit() if exit is None else exit
    if not isinstance(proposal, (UniformProposal, LaplaceProposal)):
        raise TypeError(f"proposal must be UniformProposal or LaplaceProposal, got {proposal!r}")
    if not isinstance(exit, (UniformExit, LaplaceExit)):
        raise TypeError(f"exit must be UniformExit or LaplaceExit, got {exit!r}")
    bound = exit.bound(mech.space)
    if kappa is not None and k is not None:
        raise ValueError("give either kappa (variant U) or k (variant N), not both")
    if k is None:
        if normalising_constant is not None or normalising_constant_lower is not None:
            raise ValueError("normalising_constant is used only with k (variant N)")
        kap = w * bound / (1.0 - w) if kappa is None else check_positive(kappa, "kappa")
        beta = w * min(1.0, kap * (1.0 - w) / (w * bound))
        return AtomDesign(w=w, kappa=kap, beta=beta, variant="U", k=None, ratio_bound=bound,
                          beta_data_independent=True, proposal=proposal, exit=exit)
    k = check_probability(k, "k")
    if normalising_constant is None:
        raise ValueError("k (variant N) needs the exact normalising_constant C_X")
    c_x = check_positive(normalising_constant, "normalising_constant")
    if c_x > mech.space.volume * (1.0 + 1e-12):
        raise ValueError(
            f"normalising_constant must be <= the volume of the space ({mech.space.volume}) since "
            f"the weight is <= 1, got {c_x}"
        )
    kap = k * c_x / (1.0 - k)
    c_beta = c_x
    if normalising_constant_lower is not None:
        c_beta = check_positive(normalising_constant_lower, "normalising_constant_lower")
        if c_beta > c_x:
            raise ValueError(
                f"normalising_constant_lower ({c_beta}) exceeds normalising_constant ({c_x})"
            )
    beta = w * min(1.0, k * c_beta / (1.0 - k) * (1.0 - w) / (w * bound))
    return AtomDesign(w=w, kappa=kap, beta=beta, variant="N", k=k, ratio_bound=bound,
                      beta_data_independent=normalising_constant_lower is not None,
                      proposal=proposal, exit=exit)


def discrete_epsilon(design: AtomDesign, epsilon: float) -> float:
    """Epsilon of the discrete part of RandomAtomPerfect: ``epsilon`` (variant N), ``epsilon / 2`` (U).

    In variant U the weight ``kappa / (kappa + C_X)`` of the discrete part itself moves by up to
    ``e^(epsilon/2)`` between neighbours, leaving ``epsilon / 2`` for the discrete choice.
    """
    return epsilon if design.variant == "N" else epsilon / 2.0


def _size(size: object) -> int | None:
    return None if size is None else check_int(size, "size", minimum=1)


def _charge(accountant: Accountant | None, event: PrivacyEvent, label: str, count: int) -> None:
    if accountant is None:
        return
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    if count == 1:
        accountant.compose(event, label=label)
    else:
        accountant.compose_all([(event, label)] * count)


def atom_runs(mech: ContinuousExponentialMechanism, design: AtomDesign, n: int,
              rng: np.random.Generator, *, restart: bool, pad: bool = False,
              ) -> dict[str, np.ndarray]:
    """Run Algorithm 1-D for ``n`` independent slots at once (no privacy charge: internal).

    With ``restart`` (ConfAtomPerfect) a slot whose run ends at the atom starts a fresh run.
    With ``pad`` a proposal outside the space still costs one loss evaluation (at a fixed
    interior point, result discarded), so the work is exactly one evaluation per proposal;
    otherwise whether a proposal falls outside, which depends on the current state and so on the
    data, would show in the amount of work.
    Returns arrays ``values`` (n, d), ``at_atom``, ``proposals``, ``runs``, ``evaluations``.
    """
    space = mech.space
    w, beta = design.w, design.beta
    log_w, log_1mw = math.log(w), math.log1p(-w)
    log_kappa = math.log(design.kappa)
    p_branch_a = (1.0 - w) / (1.0 - beta)
    # w * alpha(y -> *) >= beta must hold at every visited y; in log form on alpha.
    log_alpha_floor = math.log(beta / w) - _BOUND_TOL
    move_out = w > beta

    x = np.zeros((n, space.dim))
    logg = np.zeros(n)
    log_alpha_out = np.zeros(n)  # log alpha(x -> *) of the current state (cached)
    at_atom = np.ones(n, dtype=bool)
    remaining = rng.geometric(beta, size=n) - 1
    proposals = np.zeros(n, dtype=np.int64)
    evaluations = np.zeros(n, dtype=np.int64)
    runs = np.ones(n, dtype=np.int64)
    active = np.arange(n)

    while True:
        if restart:
            # A run that ended at the atom is discarded and a fresh one starts (Algorithm 2).
            while True:
                redo = active[(remaining[active] == 0) & at_atom[active]]
                if redo.size == 0:
                    break
                runs[redo] += 1
                remaining[redo] = rng.geometric(beta, size=redo.size) - 1
        active = active[remaining[active] > 0]
        if active.size == 0:
            break
        u = rng.random(active.size)
        branch_a = u < p_branch_a
        ia = active[branch_a]
        ib = active[~branch_a]

        if ia.size:
            proposals[ia] += 1
            from_atom = ia[at_atom[ia]]
            from_y = ia[~at_atom[ia]]
            cand = np.empty((ia.size, space.dim))
            n_atom = from_atom.size
            cand[:n_atom] = design.exit.sample(n_atom, space, rng)
            cand[n_atom:] = design.proposal.propose(x[from_y], space, rng)
            owners = np.concatenate([from_atom, from_y])
            inside = space.contains(cand)
            logg_c = np.full(ia.size, -np.inf)
            if pad:
                padded = np.where(inside[:, None], cand, space.interior_point)
                logg_c[inside] = mech.log_weight(padded)[inside]
                evaluations[owners] += 1
            elif inside.any():
                logg_c[inside] = mech.log_weight(cand[inside])
                evaluations[owners[inside]] += 1
            log_acc = np.empty(ia.size)
            log_acc[:n_atom] = (log_w - log_kappa - log_1mw + logg_c[:n_atom]
                                - design.exit.log_density(cand[:n_atom], space))
            log_acc[n_atom:] = logg_c[n_atom:] - logg[from_y]
            with np.errstate(under="ignore"):
                accept = inside & (rng.random(ia.size) < np.exp(np.minimum(log_acc, 0.0)))
            if accept.any():
                new = owners[accept]
                pts = cand[accept]
                lg = logg_c[accept]
                la_out = np.minimum(
                    0.0, log_kappa + log_1mw + design.exit.log_density(pts, space) - log_w - lg
                )
                if np.any(la_out < log_alpha_floor):
                    raise RuntimeError(
                        "the exit density's ratio_bound is not an upper bound of g/h at a visited "
                        "point, so beta is invalid and the draw would not be exact; use a larger "
                        "ratio_bound"
                    )
                x[new] = pts
                logg[new] = lg
                log_alpha_out[new] = la_out
                at_atom[new] = False

        if move_out and ib.size:
            # Remainder kernel's move to the atom: probability (w alpha - beta) / (w - beta).
            yb = ib[~at_atom[ib]]
            if yb.size:
                p_out = (w * np.exp(log_alpha_out[yb]) - beta) / (w - beta)
                go = rng.random(yb.size) < p_out
                at_atom[yb[go]] = True

        remaining[active] -= 1

    return {"values": x, "at_atom": at_atom, "proposals": proposals, "runs": runs,
            "evaluations": evaluations}


def atom_perfect(mech: ContinuousExponentialMechanism, *, size: int | None = None,
                 rng: object = None, accountant: Accountant | None = None, w: float = 0.5,
                 kappa: float | None = None, k: float | None = None,
                 normalising_constant: float | None = None,
                 normalising_constant_lower: float | None = None,
                 proposal: UniformProposal | LaplaceProposal | None = None,
                 exit: UniformExit | LaplaceExit | None = None,
                 ) -> ContinuousDraw | ContinuousDraws:
    """ConfAtomPerfect (corrected): exact draws from the exponential mechanism.

    Runs Algorithm 1-D until a run ends in the space (spec s.6, Algorithm 2) and releases that
    point. The output law is exactly ``mu_X`` whatever the kernel options (they change only the
    cost), so each draw is ``epsilon``-DP and ``epsilon``-bounded range (``BoundedRange``).
    The runtime depends on the data and is not private (see the module docstring).

    Args:
        mech: the mechanism.
        size: ``None`` for one :class:`ContinuousDraw`, or ``n`` for :class:`ContinuousDraws`.
        rng: seed or Generator.
        accountant: charged ``size`` times (atomically) before the loss is evaluated.
        w, kappa, k, normalising_constant, normalising_constant_lower, proposal, exit: kernel
            options, see :func:`atom_design`.

    Source: arXiv:2204.01132 Thm 2 / Algorithm 2; kernel and costs from
    exact-continuous-sampling.md s.3, s.5.2, s.6.
    """
    n = _size(size)
    design = atom_design(mech, w=w, kappa=kappa, k=k, normalising_constant=normalising_constant,
                         normalising_constant_lower=normalising_constant_lower,
                         proposal=proposal, exit=exit)
    gen = make_rng(rng)
    event = BoundedRange(mech.epsilon)
    _charge(accountant, event, "continuous exponential mechanism (atom_perfect)", n or 1)
    out = atom_runs(mech, design, n or 1, gen, restart=True)
    draws = ContinuousDraws(
        values=out["values"], proposals=out["proposals"], runs=out["runs"],
        loss_evaluations=out["evaluations"], from_discrete=np.zeros(n or 1, dtype=bool),
        privacy=event, method="atom",
    )
    return draws[0] if n is None else draws


def random_atom_perfect(mech: ContinuousExponentialMechanism, *, size: int | None = None,
                        rng: object = None, accountant: Accountant | None = None,
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

    Privacy: ``epsilon``-DP (``PureDP(epsilon)``). Budget split (spec s.7.1): in variant U the
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

    Source: arXiv:2204.01132 Cor. 1 / Algorithm 3; privacy fix and cost from
    exact-continuous-sampling.md s.7.1.
    """
    n = _size(size)
    design = atom_design(mech, w=w, kappa=kappa, k=k, normalising_constant=normalising_constant,
                         normalising_constant_lower=normalising_constant_lower,
                         proposal=proposal, exit=exit)
    fixed = None
    if points is not None:
        fixed = as_points(points, mech.dim, "points")
        if not np.all(np.isfinite(fixed)) or not np.all(mech.space.contains(fixed)):
            raise ValueError("points must be finite and lie inside the space")
        ell = fixed.shape[0]
    else:
        ell = check_int(n_points, "n_points", minimum=1)
    gen = make_rng(rng)
    eps_disc = discrete_epsilon(design, mech.epsilon)
    event = PureDP(mech.epsilon)
    _charge(accountant, event, "continuous exponential mechanism (random_atom_perfect)", n or 1)
    count = n or 1
    out = atom_runs(mech, design, count, gen, restart=False, pad=True)
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
        values=values, proposals=out["proposals"], runs=out["runs"],
        loss_evaluations=out["evaluations"] + ell,
        from_discrete=at_atom.copy(), privacy=event, method="random-atom",
    )
    return draws[0] if n is None else draws
