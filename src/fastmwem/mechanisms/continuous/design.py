"""The kernel with an artificial atom: its parameters, minorisation constant and costs.

The state space is ``Y`` plus an abstract atom ``*``; the unnormalised target is ``g_X`` on ``Y``
and ``kappa`` at ``*``. One step from ``y`` proposes ``*`` with probability ``w`` (accepted with
``min{1, kappa (1 - w) h(y) / (w g(y))}``), otherwise a ``Q``-move with the usual Metropolis
acceptance; from ``*`` it leaves with probability ``1 - w`` through a draw of the exit density
``h``. Every state reaches ``*`` with probability at least ``beta = w min{1, kappa (1 - w) / (w M)}``
where ``M >= sup g / h``. This is the modified kernel of Seeman, Reimherr and Slavkovic ("Exact
Privacy Guarantees for Markov Chain Implementations of the Exponential Mechanism with Artificial
Atoms", arXiv:2204.01132), corrected: the paper's literal kernel does not have the atom mixture
it claims as its stationary law (it is reversible only for a uniform proposal on a unit-volume
space, and even then its atom weight differs), so this one is built by detailed balance on
``Y`` plus ``*``.

Atom weight, two variants:

* **U** (default): ``kappa`` is a data-independent constant; by default the "always-accept"
  ``kappa = w M / (1 - w)``, giving ``beta = w``. ``k_X = kappa / (kappa + C_X)`` depends on
  the data.
* **N**: pass ``k`` and the exact normalising constant ``C_X``; ``kappa_X = k C_X / (1 - k)`` and
  the atom weight is exactly ``k``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastmwem._validation import check_positive, check_probability
from fastmwem.mechanisms.continuous.density import ExponentialDensity
from fastmwem.mechanisms.continuous.proposals import (
    LaplaceExit,
    LaplaceProposal,
    UniformExit,
    UniformProposal,
)

__all__ = ["AtomDesign", "atom_design", "discrete_epsilon"]


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


def atom_design(mech: ExponentialDensity, *, w: float = 0.5,
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
    if not isinstance(mech, ExponentialDensity):
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
