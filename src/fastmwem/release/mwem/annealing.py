"""Adaptive rounds and budget for MWEM: budget annealing in the manner of AIM.

McKenna, Mullins, Sheldon and Miklau, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data" (arXiv:2201.12677) choose each round's budget as they go.
An adaptive MWEM run (``rounds=None``) does the same:

1. **Start conservatively.** A round first gets the budget of one of ``T0`` equal rounds
   (``T0 = INITIAL_ROUNDS_PER_ATTRIBUTE * d`` for ``d`` attributes: AIM's ``16 d`` under zCDP,
   ``4 d`` under pure DP), split
   between selection and measurement by ``select_fraction``. The 1-way marginals are measured
   first at that round's measurement budget each.
2. **Anneal.** After a round measures marginal ``r`` and the synthetic distribution is refitted,
   if the model's answers to ``r`` moved by at most the expected L1 norm of the measurement's
   noise (``cells * E|noise|``: ``b`` for Laplace of scale ``b``, ``sqrt(2 / pi) sigma`` for a
   Gaussian), the measurement taught the model little at this noise: the noise scale halves for
   the next rounds (pure DP: both epsilons double; zCDP: sigma halves and the selection epsilon
   doubles, 4x the round's rho).
3. **Stop exactly.** When less than two rounds' budget is left, the next round takes exactly what
   remains, and is the last.

Selection scores are AIM's: ``w_r (||q_r(n p) - q_r(B)||_1 - cells_r E|noise_r|)``, where the
workload weight ``w_r`` (:func:`~fastmwem.release.selection.candidates.workload_weights`) favours
marginals that share attributes with many workload marginals, and the penalty makes a marginal
worth measuring only where its error exceeds the noise a measurement would add. Reuse passes
weigh each measurement by its precision (``(sigma_min / sigma_i)^2``, as a least-squares fit
weighs Gaussian measurements) with a larger step than the paper's (``ADAPTIVE_STEP``), at
most ``ADAPTIVE_REUSE_PASSES`` a round. The record count is refined as measurements come in
(:class:`~fastmwem.release.mwem.rounds.TotalEstimate`): every marginal sums to it.

Privacy. Every decision reads only released values (the noisy measurements, the synthetic
distribution fitted to them) and public ones (noise scales, the domain): post-processing. The
per-round budgets are chosen adaptively, so the run composes as a *privacy filter*: the charges
of every round are made on an accountant of the run's whole budget that refuses any overspend,
and this schedule never asks for more than it has left. For pure DP, basic composition holds
with adaptively chosen epsilons that sum to at most the budget (Rogers, Roth, Ullman and
Vadhan, "Privacy Odometers and Filters", arXiv:1605.08462); for zCDP, adaptively chosen rhos
that sum to at most the budget (Feldman and Zrnic, "Individual Privacy Accounting via a Renyi
Filter", arXiv:2008.11193; zCDP is Renyi DP at every order at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from fastmwem.accounting import ZCDP, Accountant, PrivacyEvent, PureDP, float_below
from fastmwem.mechanisms.gaussian import DiscreteGaussian
from fastmwem.mechanisms.laplace import Laplace

__all__ = ["Annealing", "RoundBudget", "should_anneal", "expected_abs_noise", "noise_std",
           "split_round", "ADAPTIVE_REUSE_PASSES",
           "INITIAL_ROUNDS_PER_ATTRIBUTE", "ADAPTIVE_STEP"]

#: The conservative start: a round first gets ``1 / (k d)`` of the rounds' budget, with AIM's
#: ``k = 16`` under zCDP. Under pure DP a round's epsilon adds up linearly (not as its square),
#: so conservative rounds cost more: ``k = 4`` (NLTCS, 3-way marginals, epsilon 1: mean L1 0.023
#: at k = 4, 0.024 at k = 8, 0.033 at k = 16).
INITIAL_ROUNDS_PER_ATTRIBUTE = {"zcdp": 16, "pure": 4}

#: Step of the reuse passes of an adaptive run (1 is the MWEM paper's). On NLTCS (3-way
#: marginals, zCDP, 3 seeds) step 4 with 8 passes a round scored 0.087 / 0.015 mean L1 at
#: epsilon 0.1 / 1 in 2.5 / 3.9 CPU-s; step 1 with 20 passes 0.096 / 0.016 in 3.9 / 8.2 s.
ADAPTIVE_STEP = 4.0

#: Most reuse passes per round of an adaptive run (``min(reuse_passes, this)``): its rounds
#: are many and cheap, and a larger step fits them in fewer passes.
ADAPTIVE_REUSE_PASSES = 8



def split_round(privacy: str, amount: Fraction, select_fraction: Fraction,
                select_rho_per_epsilon2: Fraction = Fraction(1, 8)) -> tuple[float, float]:
    """One round's ``amount`` of budget as (selection epsilon, measurement share).

    Pure DP: the selection gets ``select_fraction * amount`` as its epsilon and the measurement
    the rest (an epsilon). zCDP: the selection's epsilon costs ``select_fraction * amount`` of
    rho (``epsilon**2 * select_rho_per_epsilon2``) and the measurement gets the rest (a rho).
    Both are floats whose exact values add up to at most ``amount``.
    """
    amount = Fraction(amount)
    share = amount * Fraction(select_fraction)
    if privacy == "pure":
        select = float_below(share)
        return select, float_below(amount - Fraction(select))
    per = Fraction(select_rho_per_epsilon2)
    select = float_below(Fraction(math.sqrt(float(share / per))))
    while select > 0 and Fraction(select) ** 2 * per > share:
        select = math.nextafter(select, 0.0)
    return select, float_below(amount - Fraction(select) ** 2 * per)


def expected_abs_noise(mechanism: Laplace | DiscreteGaussian) -> float:
    """``E|noise|`` of one measured answer: ``b`` for Laplace, ``sqrt(2/pi) sigma`` for Gaussian."""
    if isinstance(mechanism, DiscreteGaussian):
        return math.sqrt(2.0 / math.pi) * float(mechanism.sigma)
    return float(mechanism.scale)


def noise_std(mechanism: Laplace | DiscreteGaussian) -> float:
    """The standard deviation of one measured answer's noise (``sqrt(2) b`` for Laplace)."""
    if isinstance(mechanism, DiscreteGaussian):
        return float(mechanism.sigma)
    return math.sqrt(2.0) * float(mechanism.scale)


def noise_scale(mechanism: Laplace | DiscreteGaussian) -> float:
    """The noise's own scale: ``sigma`` for the Gaussian, ``b`` for Laplace."""
    if isinstance(mechanism, DiscreteGaussian):
        return float(mechanism.sigma)
    return float(mechanism.scale)


def measured_rho(mechanism: Laplace | DiscreteGaussian) -> float | None:
    """The zCDP rho a measurement costs; ``None`` for a pure-DP (Laplace) one."""
    if isinstance(mechanism, DiscreteGaussian):
        return float(mechanism.privacy.rho)
    return None


def should_anneal(before: np.ndarray, after: np.ndarray, expected_noise_l1: float) -> bool:
    """Whether a measurement moved the model's answers by at most its expected noise (in L1).

    ``before`` and ``after`` are the synthetic answers (counts) of the measured marginal before
    the measurement and after the refit: both are computed from released values only.
    """
    moved = float(np.abs(np.asarray(after, dtype=np.float64)
                         - np.asarray(before, dtype=np.float64)).sum())
    return moved <= float(expected_noise_l1)


@dataclass(frozen=True)
class RoundBudget:
    """One round's shares: the selection's epsilon and the measurement's epsilon (pure) or rho
    (zCDP), as floats no larger than their exact shares; ``last`` marks the final round."""

    select: float
    measure: float
    last: bool


class Annealing:
    """The budget schedule of an adaptive run, charged round by round within ``budget``.

    Args:
        privacy: ``"pure"`` (``budget`` is an epsilon) or ``"zcdp"`` (a rho).
        budget: what all the adaptive steps together may spend (exact).
        select_fraction: share of a round's budget spent on the selection.
        initial_rounds: ``T0``: the first round gets ``budget / T0``.
        select_rho_per_epsilon2: the selection event's zCDP cost per ``epsilon**2`` (1/8 for
            the exponential mechanism, bounded range; 1/2 for a pure-DP selection).

    The schedule's own :class:`~fastmwem.accounting.Accountant` holds the budget: every
    :meth:`charge` goes through it, so the run can never spend more than ``budget``.
    """

    def __init__(self, privacy: str, budget: Fraction, select_fraction: Fraction,
                 initial_rounds: int, select_rho_per_epsilon2: Fraction = Fraction(1, 8)) -> None:
        self.privacy = privacy
        self.select_fraction = Fraction(select_fraction)
        self._per_eps2 = Fraction(select_rho_per_epsilon2)
        self.accountant = (Accountant(epsilon=budget) if privacy == "pure"
                           else Accountant(rho=budget))
        self._amount = Fraction(budget) / initial_rounds

    # -- shares ----------------------------------------------------------------------------------
    def split(self, amount: Fraction) -> tuple[float, float]:
        """``amount`` of budget as (selection epsilon, measurement share), rounded down."""
        return split_round(self.privacy, amount, self.select_fraction, self._per_eps2)

    def current(self) -> tuple[float, float]:
        """The shares of a round at the current (annealed) budget."""
        return self.split(self._amount)

    def remaining(self) -> Fraction:
        event = self.accountant.remaining()
        # The accountant holds one currency (see __init__): epsilon when pure, else rho.
        if isinstance(event, PureDP):
            return event.epsilon
        if isinstance(event, ZCDP):
            return event.rho
        raise TypeError(f"an annealing schedule holds epsilon or rho, not {type(event).__name__}")

    # -- the rule ----------------------------------------------------------------------------------
    def next_round(self, last: bool = False) -> RoundBudget:
        """The next round's shares: the current ones, or all that is left when less than two
        rounds' worth remains (or ``last`` is asked for)."""
        left = self.remaining()
        if last or left < 2 * self._amount:
            select, measure = self.split(left)
            return RoundBudget(select, measure, True)
        select, measure = self.current()
        return RoundBudget(select, measure, False)

    def anneal(self) -> None:
        """Halve the noise scale of the next rounds (2x epsilon pure, 4x rho zCDP)."""
        self._amount *= 2 if self.privacy == "pure" else 4

    def charge(self, events: list[tuple[PrivacyEvent, str]]) -> None:
        """Charge one round's events (all or nothing) to the run's budget."""
        self.accountant.compose_all(events)
