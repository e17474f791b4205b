"""Simulating the atom kernel: Algorithm 1-D runs, and ConfAtomPerfect's repeated runs.

A run starts at the atom and applies the remainder kernel ``R`` a ``Geom0(beta)`` number of
times; by the split-chain identity ``pi = sum_n beta (1 - beta)^n delta_* R^n`` its end point is
an exact draw of the mixture ``(1 - k_X) mu_X + k_X delta_*`` (see
:mod:`~fastmwem.mechanisms.continuous.design` for the kernel). The proposals of one run are
exactly ``Geom0(beta / (beta + 1 - w))``.
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem.mechanisms.continuous._common import Progress
from fastmwem.mechanisms.continuous.density import ExponentialDensity
from fastmwem.mechanisms.continuous.design import AtomDesign

__all__ = ["atom_runs", "first_exits"]

# Relative slack when checking "w * alpha(y -> *) >= beta" at visited points (rounding only).
_BOUND_TOL = 1e-9

# Runs simulated at once by first_exits when few draws are pending: enough for numpy to work at
# full speed (more only adds runs that are simulated and then discarded), and at most 32 MB of
# end-point coordinates in high dimension.
_BATCH_RUNS = 1 << 16
_BATCH_VALUES = 1 << 22

# ConfAtomPerfect restarts runs in place while at least this many draws are busy, for at most
# this many steps: cheap for many draws of moderate cost; the rest goes to the batches.
_RESTART_ABOVE = 256
_RESTART_STEPS = 256


def atom_runs(mech: ExponentialDensity, design: AtomDesign, n: int,
              rng: np.random.Generator, *, pad: bool = False, restart_above: int | None = None,
              restart_steps: int = 0) -> dict[str, np.ndarray]:
    """Run Algorithm 1-D for ``n`` independent slots at once (no privacy charge: internal).

    Each slot makes one run, or, with ``restart_above``, a slot whose run ends at the atom
    starts a fresh one (ConfAtomPerfect) for as long as at least ``restart_above`` slots are
    still busy and for the first ``restart_steps`` steps; after that the runs in progress finish
    and a slot left at the atom is returned as such.
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
    restarting = restart_above is not None
    step = 0

    while True:
        restarting = (restarting and restart_above is not None and active.size >= restart_above
                      and step < restart_steps)
        step += 1
        while restarting:
            # A run that ended at the atom is discarded and a fresh one starts (Algorithm 2).
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


def first_exits(mech: ExponentialDensity, design: AtomDesign, n: int, rng: np.random.Generator,
                *, progress: bool | None = None) -> dict[str, np.ndarray]:
    """For each of ``n`` slots, the end point of the first run that ends in the space.

    This is ConfAtomPerfect (Algorithm 2 of arXiv:2204.01132): runs are repeated until one ends
    in ``Y``, ``Geom1(1 - k_X)`` runs in all. The runs of a slot are i.i.d., so they are
    simulated side by side: first each slot restarts in place (as long as many slots are busy,
    for a bounded number of steps); the slots still waiting then get batches of runs that double
    in size (``2r`` more runs at once after ``r``, up to ``2^16`` runs in a batch), and the
    first run of a batch in order that ends in ``Y`` is taken. The law is exactly that of the
    one-at-a-time loop, and a draw that needs millions of runs (a large ``epsilon`` with the
    uniform exit) takes a second instead of minutes.

    Returns arrays ``values`` (n, d) and, counted as the one-at-a-time loop would count them
    (runs up to and including the first that ends in ``Y``; the batch's later runs are
    discarded unseen), ``proposals``, ``runs`` and ``evaluations``.
    """
    out = atom_runs(mech, design, n, rng, restart_above=_RESTART_ABOVE, restart_steps=_RESTART_STEPS)
    values = out["values"]
    totals = {key: out[key] for key in ("proposals", "runs", "evaluations")}
    pending = np.flatnonzero(out["at_atom"])
    per_slot = 2
    simulated = int(totals["runs"].sum())
    bar = Progress(n, "atom_perfect", show=progress)
    bar.update(n - pending.size, simulated)
    try:
        while pending.size:
            out = atom_runs(mech, design, pending.size * per_slot, rng)
            simulated += pending.size * per_slot
            ended_in_y = ~out["at_atom"].reshape(pending.size, per_slot)
            found = ended_in_y.any(axis=1)
            first = np.argmax(ended_in_y, axis=1)
            counted = np.where(found, first + 1, per_slot)
            mask = np.arange(per_slot)[None, :] < counted[:, None]
            totals["runs"][pending] += counted
            for key in ("proposals", "evaluations"):
                totals[key][pending] += (out[key].reshape(pending.size, per_slot) * mask).sum(1)
            picked = out["values"].reshape(pending.size, per_slot, mech.dim)
            values[pending[found]] = picked[found, first[found]]
            pending = pending[~found]
            bar.update(int(found.sum()), simulated)
            batch = min(_BATCH_RUNS, _BATCH_VALUES // mech.dim)
            per_slot = max(1, min(2 * per_slot, batch // max(1, pending.size)))
    finally:
        bar.close()
    return {"values": values, **totals}
