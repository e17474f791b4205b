"""The adaptive MWEM loop (``rounds=None``): the rule of :mod:`fastmwem.release.mwem.annealing`.

The caller has charged the rounds' whole budget (the ceiling) before the data was read; here each
round is charged within it on the schedule's own accountant, which refuses any overspend.
"""

from __future__ import annotations

import copy
import math
import time
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from fastmwem.accounting import Accountant
from fastmwem.data.domain import Domain
from fastmwem.models.state import MWState
from fastmwem.release._privacy import (
    PureDefinition,
    ZCDPDefinition,
    integer_valued,
    measurement_grid,
)
from fastmwem.release.mwem.annealing import (
    ADAPTIVE_REUSE_PASSES,
    ADAPTIVE_STEP,
    Annealing,
    expected_abs_noise,
    measured_rho,
    noise_scale,
    noise_std,
    should_anneal,
)
from fastmwem.release.mwem.rounds import (
    Measurement,
    Run,
    TotalEstimate,
    one_way_start,
    refit,
    reuse,
    start_state,
    synthetic_answers,
    update,
    within_noise,
)
from fastmwem.release.mwem.setup import MWEMSetup, selectable
from fastmwem.release.result import RoundRecord
from fastmwem.release.selection.base import Chooser
from fastmwem.workloads.base import LinearWorkload

if TYPE_CHECKING:
    from fastmwem.mechanisms.gaussian import DiscreteGaussian
    from fastmwem.mechanisms.laplace import Laplace
    from fastmwem.release.mwem.config import MWEMConfig, ProgressBar
    from fastmwem.release.mwem.data_view import PrivateView

__all__ = ["AdaptiveRun", "run_adaptive"]


class AdaptiveChooser(Chooser, Protocol):
    """A chooser an adaptive run retunes every round (a selection marked ``adaptive``)."""

    def retuned(self, epsilon: float, penalties: np.ndarray, weights: np.ndarray | None,
                sensitivity: float) -> AdaptiveChooser:
        """The same chooser at ``epsilon``, scoring ``weight * (L1 error - penalty)``."""
        ...


class AdaptiveRun:
    """An adaptive run's rounds over a prepared chooser (see :func:`run_adaptive`)."""

    def __init__(self, run: Run, workload: LinearWorkload, schedule: Annealing,
                 chooser: AdaptiveChooser,
                 weights: np.ndarray, config: MWEMConfig) -> None:
        self.run = run
        self.workload = workload
        self.schedule = schedule
        self.chooser = chooser
        self.weights = weights
        self.config = config
        setup = run.setup
        self.cells = np.diff(setup.offsets).astype(np.float64)
        self.available = setup.candidates.copy()
        self.trace: list[RoundRecord] = []
        self.anneals = 0
        self.totals: TotalEstimate | None = None

    # -- one measurement ---------------------------------------------------------------------------
    def _measure(self, group: int, share: float, rng: np.random.Generator
                 ) -> tuple[Laplace | DiscreteGaussian, Measurement]:
        setup, workload = self.run.setup, self.workload
        mech = self.config.definition.measurement(share, float(setup.sensitivities[group]),
                           integer=integer_valued(workload))
        queries = workload.group_queries(group)
        values = np.atleast_1d(np.asarray(
            mech.release(self.chooser.true_answers(queries), rng=rng), dtype=np.float64))
        std = noise_std(mech)
        if self.totals is not None:
            self.run.state.total = self.totals.add(values, std)
        return mech, Measurement(group, queries, values, std=std)

    def _record(self, t: int, group: int, select: float, share: float,
                mech: Laplace | DiscreteGaussian, started: float) -> None:
        pure = isinstance(self.config.definition, PureDefinition)
        self.trace.append(RoundRecord(
            round=t, selected=group, description=self.workload.describe_group(group),
            epsilon_select=select, epsilon_measure=share if pure else None,
            seconds=time.perf_counter() - started,
            rho_measure=None if pure else measured_rho(mech),
            noise_scale=noise_scale(mech),
            grid=measurement_grid(mech, _entries(self.workload.group_queries(group)))))

    def one_way_first(self, rng: np.random.Generator) -> None:
        """Measure every 1-way candidate marginal at the first round's measurement share.

        Skipped when they would take more than half of the budget (a tiny ``initial_rounds``).
        """
        setup = self.run.setup
        own = getattr(self.workload, "group_attributes", None)
        if own is None:
            return
        ids = [int(g) for g in np.flatnonzero(setup.candidates)
               if (axes := own(int(g))) is not None and len(axes) == 1]
        _, share = self.schedule.current()
        if not ids or len(ids) * Fraction(share) > self.schedule.remaining() / 2:
            return
        started = time.perf_counter()
        self.schedule.charge([(self.config.definition.event(share),
                               f"1-way {self.workload.describe_group(g)}: measure")
                              for g in ids])
        for g in ids:
            mech, m = self._measure(g, share, rng)
            self.run.measurements.append(m)
            update(self.run, self.workload, m, self.run.step)
            self._record(0, g, 0.0, share, mech, started)
        self._reuse()

    def signal_found(self, start: np.ndarray) -> bool:
        """The noise test of a run, once its rounds are done: whether some measurement lies
        beyond its Laplace noise of the answers of ``start`` (the starting distribution, dense),
        at ``noise_test / measurements`` each (a Bonferroni bound: on a table that ``start``
        describes, the test finds a signal with probability at most ``noise_test``).

        Each measurement is compared with ``start``'s answers rescaled to its own sum, so that
        the error of the noisy record count does not read as a signal. Post-processing of
        released values only.
        """
        run = self.run
        alpha = float(self.config.noise_test or 0.0) / max(len(run.measurements), 1)
        probe = copy.copy(run.state)
        probe.distribution = start  # type: ignore[attr-defined]  # a dense state's vector
        for m in run.measurements:
            expected = synthetic_answers(probe, self.workload, m.queries, run.setup.offsets)
            mass = float(expected.sum())
            if mass > 0:
                expected = expected * (float(m.values.sum()) / mass)
            if not within_noise(m.values, expected, m.std / math.sqrt(2.0), alpha):
                return True
        return False

    def _reuse(self) -> None:
        """The estimator after a measurement: reuse passes, or the weighted fit."""
        if self.config.estimator == "fit":
            refit(self.run, self.workload, self.config)
            return
        passes = min(self.config.reuse_passes, ADAPTIVE_REUSE_PASSES)
        reuse(self.run, self.workload, self.config.reuse_tolerance, passes)

    # -- one round -----------------------------------------------------------------------------------
    def _retune(self, select: float, share: float) -> None:
        """The chooser at this round's epsilon, with penalties for this round's noise."""
        setup = self.run.setup
        sens = setup.sensitivities
        unit = expected_abs_noise(self.config.definition.measurement(share, 1.0))
        penalties = np.minimum(unit * sens * self.cells, 1e300)
        live = setup.candidates
        sensitivity = float((self.weights[live] * sens[live]).max())
        self.chooser = self.chooser.retuned(select, penalties, self.weights, sensitivity)

    def round(self, t: int, rng: np.random.Generator) -> bool:
        """Run round ``t``; return whether it was the last."""
        started = time.perf_counter()
        run, setup, workload = self.run, self.run.setup, self.workload
        left = int(np.count_nonzero(self.available))
        budget = self.schedule.next_round(last=self.config.excludes_measured and left <= 1)
        selection = self.run.setup.selection  # bound by the plan
        self.schedule.charge([
            (selection.event(Fraction(budget.select)), f"round {t}: select ({selection.name})"),
            (self.config.definition.event(budget.measure), f"round {t}: measure"),
        ])
        self._retune(budget.select, budget.measure)
        choice = self.chooser.choose(run.state, selectable(run.state, setup, workload,
                                                           self.available), rng)
        if self.config.excludes_measured:
            self.available[choice] = False
        queries = workload.group_queries(choice)
        before = synthetic_answers(run.state, workload, queries, setup.offsets)
        mech, m = self._measure(choice, budget.measure, rng)
        run.measurements.append(m)
        update(run, workload, m, run.step)
        self._reuse()
        after = synthetic_answers(run.state, workload, queries, setup.offsets)
        self._record(t, choice, budget.select, budget.measure, mech, started)
        if budget.last:
            return True
        if should_anneal(before, after, self.cells[choice] * expected_abs_noise(mech)):
            self.schedule.anneal()
            self.anneals += 1
        return False


def run_adaptive(private: PrivateView, workload: LinearWorkload, domain: Domain, config: MWEMConfig,
                 setup: MWEMSetup, model: str, rng: np.random.Generator, split: dict[str, float],
                 weights: np.ndarray, bar: ProgressBar | None) -> tuple[AdaptiveRun, Accountant]:
    """Start the state, measure the 1-way marginals, then run rounds until the budget is spent.

    The 1-way marginals are measured at the first round's share (:meth:`AdaptiveRun.one_way_first`),
    or with ``init="one-way"`` at the start's share, charged in the plan.

    Returns the finished rounds and the schedule's accountant (its ledger is every round's
    charge within the ceiling).
    """
    state, count_std = start_state(private, domain, config, model, rng, split)
    totals = (TotalEstimate(state.total, count_std)
              if count_std is not None and getattr(workload, "groups_partition_cells", False)
              else None)
    start: list[Measurement] = []
    if config.init == "one-way":  # measured at the start's share, not the first round's
        state, start = one_way_start(private, workload, config, model, setup, rng, state.total,
                                     totals)
    if model != "dense":
        from fastmwem.release.mwem.setup import candidate_groups, worth_measuring

        setup = worth_measuring(setup, state.total)
        private.groups = candidate_groups(setup, workload)
    # The plan admits only selections marked ``adaptive``, whose choosers retune.
    chooser = cast(AdaptiveChooser, setup.selection.prepare(
        workload, private, epsilon=split["select"], group_mode=setup.group_mode,
        sensitivities=setup.sensitivities, penalties=setup.penalties))
    private.release()
    schedule = Annealing(config.privacy, config.rounds_budget(),
                         config._select_fraction_exact(model),
                         config.round_count(len(domain)),
                         config.select_rho_per_epsilon2() if isinstance(config.definition, ZCDPDefinition)
                         else Fraction(1, 8))
    run = Run(state, setup, measurements=start, step=ADAPTIVE_STEP, weighted=True)
    rounds = AdaptiveRun(run, workload, schedule, chooser, weights, config)
    rounds.totals = totals
    # The noise test (dense models; the plan refuses others) compares every measurement with
    # the start: a copy of its distribution is all it needs.
    initial = (np.array(state.distribution, copy=True)
               if config.noise_test is not None and isinstance(state, MWState) else None)
    if not start:
        rounds.one_way_first(rng)
    t = 0
    while True:
        t += 1
        last = rounds.round(t, rng)
        if bar is not None:
            bar.update()
        if last:
            break
    if initial is not None and not rounds.signal_found(initial):
        np.copyto(cast(MWState, run.state).distribution, initial)
        run.updating = False  # nothing in the data was detectable: the output is the start
    return rounds, schedule.accountant


def _entries(queries: slice) -> int:
    return int(queries.stop - queries.start)
