"""The machinery an MWEM run's rounds share: the start, the measurements, updates and reuse.

Used by the fixed-rounds loop (:mod:`fastmwem.release.mwem.run`) and the adaptive one
(:mod:`fastmwem.release.mwem.adaptive`). Everything here after the start is post-processing of
released measurements.

The first-measurement noise test (:func:`within_noise`): whether a noisy measurement shows
anything beyond its own noise.

MWEM's first measurement is of the group its selection found worst answered by the starting
distribution. If even that measurement lies within its own Laplace noise of the start, nothing
in the data is detectable at this noise level, and fitting the noise would only move the
synthetic data away from the data-independent start (on a uniform-looking table of a few
hundred records, 25 rounds at epsilon 1 score 0.31 mean 3-way marginal L1 where the uniform
start scores 0.10). The test reads only the noisy measurement, the synthetic distribution and
public noise scales: it is post-processing and costs no privacy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict, cast

import numpy as np

from fastmwem.data.domain import Domain
from fastmwem.models.factored import FactoredState
from fastmwem.models.fit import FitMeasurement, fit
from fastmwem.models.marginal_passes import fit_clique_marginals, fit_marginals
from fastmwem.models.passes import SparseRows, fit_queries
from fastmwem.models.state import (
    MAX_RECORDS,
    MWState,
    SyntheticState,
    clipped_targets,
    noisy_start,
)
from fastmwem.release._privacy import PureDefinition, integer_valued
from fastmwem.release.mwem.annealing import noise_std
from fastmwem.release.mwem.data_view import PrivateView
from fastmwem.release.mwem.plan import one_way_groups
from fastmwem.release.mwem.setup import MWEMSetup
from fastmwem.release.result import MWEMResult
from fastmwem.workloads.base import LinearWorkload, groups_of_queries

if TYPE_CHECKING:
    from collections.abc import Callable

    from typing_extensions import Unpack

    from fastmwem.accounting import LedgerEntry, PrivacyEvent
    from fastmwem.data.schema import Schema
    from fastmwem.release.mwem.config import MWEMConfig
    from fastmwem.release.result import RoundRecord

__all__ = ["Measurement", "Run", "start_state", "one_way_start", "update", "reuse", "refit",
           "result_of", "TotalEstimate", "refined_total", "noise_threshold", "synthetic_answers",
           "within_noise", "ResultFields"]


class ResultFields(TypedDict):
    """The :class:`MWEMResult` fields a run's driver passes through :func:`result_of`."""

    ledger: tuple[LedgerEntry, ...]
    privacy: PrivacyEvent
    schema: Schema | None
    guarantee: dict[str, object] | None


@dataclass
class Measurement:
    """One released measurement: its group, its queries, the noisy values and the noise's
    standard deviation (``std``; used to weigh it in the reuse passes of adaptive runs and
    by ``estimator="fit"``)."""

    group: int
    queries: slice
    values: np.ndarray
    std: float = 1.0


@dataclass
class Run:
    """The mutable part of a run: the state and its measurements.

    ``noise_test`` is the significance level of the test on the first measurement, until that
    test has run; ``updating`` turns false if it found the measurement within its noise.
    ``step`` scales every update's exponent; with ``weighted``, a measurement's step is further
    multiplied by ``(smallest std / its std)^2``, as a least-squares fit weighs them.
    """

    state: SyntheticState
    setup: MWEMSetup
    measurements: list[Measurement] = field(default_factory=list)
    noise_test: float | None = None
    measure_epsilon: float = 0.0
    updating: bool = True
    step: float = 1.0
    weighted: bool = False
    rows: SparseRows = field(default_factory=SparseRows)


def start_state(private: PrivateView, domain: Domain, config: MWEMConfig, model: str,
                rng: np.random.Generator, split: dict[str, float]
                ) -> tuple[SyntheticState, float | None]:
    """The starting state (noisy count, and noisy histogram or 1-way marginals if configured),
    and the standard deviation of its record count's noise (``None`` for an exact count)."""
    definition = config.definition
    if config.total is None:
        counter = definition.measurement(split["count"], 1.0)
        noisy = float(counter.release(private.count(), rng=rng))
        # Clipping the noisy count to the feasible range is post-processing.
        total = min(max(noisy, 1.0), MAX_RECORDS)
        std: float | None = noise_std(counter)
    else:
        total = float(config.total)
        std = config.total_std
    return _start(private, domain, config, model, rng, split, total), std


def one_way_start(private: PrivateView, workload: LinearWorkload, config: MWEMConfig,
                  model: str, setup: MWEMSetup, rng: np.random.Generator, total: float,
                  totals: TotalEstimate | None) -> tuple[SyntheticState, list[Measurement]]:
    """``init="one-way"``: measure every 1-way marginal, and start from their product.

    Each marginal is measured at ``config.one_way_share`` (as the plan charges it) with its
    group's sensitivity; the noisy marginals, clipped and mixed with ``init_uniform_mix``, make
    a product distribution (post-processing). Returns the state and the measurements, which
    the rounds' estimator keeps fitting. ``totals``, if any, takes in each marginal's sum.
    """
    domain, definition = workload.domain, config.definition
    ids = one_way_groups(workload)
    if private.dense:
        histogram = private.histogram()
        true = [workload.answer_group(histogram, g) for g in ids]
    else:
        true = [workload.answer_on_marginal(g, table) for g, table in zip(ids, private.one_way())]
    each, integer = config.one_way_share(len(domain)), integer_valued(workload)
    measured = []
    for g, answers in zip(ids, true):
        mechanism = definition.measurement(each, float(setup.sensitivities[g]), integer=integer)
        values = np.atleast_1d(np.asarray(mechanism.release(answers, rng=rng), dtype=np.float64))
        std = noise_std(mechanism)
        if totals is not None:
            total = totals.add(values, std)
        measured.append(Measurement(g, workload.group_queries(g), values, std))
    mix = config.init_uniform_mix
    if model == "dense":
        law = np.ones(())
        for m in measured:
            law = np.multiply.outer(law, noisy_start(m.values.copy(), total, mix))
        return MWState(domain, law.reshape(-1), total), measured
    state = FactoredState.from_noisy_marginals(
        domain, [m.values for m in measured], total, mix,
        max_clique_cells=config.max_clique_cells, product=model == "product",
        max_model_cells=config.max_model_cells)
    return state, measured


def _start(private: PrivateView, domain: Domain, config: MWEMConfig, model: str,
           rng: np.random.Generator, split: dict[str, float], total: float) -> SyntheticState:
    definition = config.definition
    mix = config.init_uniform_mix
    noisy_init = config.init == "noisy-histogram"
    if model == "dense":
        if noisy_init:
            hist = definition.measurement(split["init"], 1.0).release(private.histogram(), rng=rng)
            return MWState.from_noisy_histogram(domain, np.asarray(hist, dtype=np.float64),
                                                total, mix)
        return MWState.uniform(domain, total)
    cells, product = config.max_clique_cells, model == "product"
    if noisy_init:
        one_way = private.one_way()
        if isinstance(definition, PureDefinition):
            # One record moves each of the d 1-way marginals by 1: L1 sensitivity d, all at once.
            noisy = definition.measurement(split["init"], float(len(domain))).release(
                np.concatenate([m.reshape(-1) for m in one_way]), rng=rng)
            parts = np.split(noisy, np.cumsum([m.size for m in one_way])[:-1])
        else:  # each marginal at an equal share of rho (L2 sensitivity 1 each)
            each = definition.measurement(split["init"] / len(domain), 1.0)
            parts = [np.asarray(each.release(m.reshape(-1), rng=rng), dtype=np.float64)
                     for m in one_way]
        return FactoredState.from_noisy_marginals(domain, parts, total, mix,
                                                  max_clique_cells=cells, product=product,
                                                  max_model_cells=config.max_model_cells)
    return FactoredState(domain, total, max_clique_cells=cells, product=product,
                         max_model_cells=config.max_model_cells)


class TotalEstimate:
    """The record count, refined by every measurement of a whole marginal (post-processing).

    Each noisy marginal sums to the record count plus noise of variance ``cells * std^2``; the
    inverse-variance mean of those sums and the noisy count is a far better count than the
    count alone (at epsilon 0.1 on NLTCS the count's own noise is 2-5% of it, and the fitted
    distribution is biased towards uniform by about that share). The mean is updated in place
    (no sum of ``count / std^2``, which overflows at budgets near the float range); a count or
    measurement whose noise is too small for its weight to be a finite float counts as exact.
    """

    def __init__(self, count: float, std: float) -> None:
        self._estimate = float(count)
        self._weight = _precision(float(std) ** 2)

    def add(self, values: np.ndarray, std: float) -> float:
        """Add one marginal's noisy cells; return the new estimate (at least 1)."""
        weight = _precision(values.size * float(std) ** 2)
        if self._weight is not None and weight is not None:
            share = 1.0 / (1.0 + self._weight / weight)
            self._estimate += (float(values.sum()) - self._estimate) * share
            self._weight += weight
        return min(max(self._estimate, 1.0), MAX_RECORDS)


def _precision(variance: float) -> float | None:
    """``1 / variance``, or ``None`` (exact) when that is not a finite float."""
    if not variance > 0.0:
        return None
    weight = 1.0 / variance
    return weight if math.isfinite(weight) else None


def refined_total(state: SyntheticState, count_std: float | None, workload: LinearWorkload,
                  setup: MWEMSetup) -> TotalEstimate | None:
    """A :class:`TotalEstimate` from the state's noisy count, when the count is noisy and every
    measured group is a whole marginal (its cells sum to the record count); else ``None``."""
    if count_std is None or not setup.group_mode:
        return None
    if not getattr(workload, "groups_partition_cells", False):
        return None
    return TotalEstimate(state.total, count_std)


def update(run: Run, workload: LinearWorkload, m: Measurement, step: float = 1.0) -> None:
    """Apply one measurement (after the first-measurement noise test, if one is pending)."""
    if run.noise_test is not None:  # the first measurement decides whether any update is made
        scale = float(run.setup.sensitivities[m.group]) / run.measure_epsilon
        synthetic = synthetic_answers(run.state, workload, m.queries, run.setup.offsets)
        run.updating = not within_noise(m.values, synthetic, scale, run.noise_test)
        run.noise_test = None
    if not run.updating:
        return
    if run.setup.group_mode:
        if step == 1.0:
            run.state.update_group(workload, m.group, m.values)
        else:
            run.state.update_group(workload, m.group, m.values, step=step)
    else:
        run.state.update_query(workload, m.queries.start, float(m.values[0]),
                               offsets=run.setup.offsets)


def steps_of(run: Run) -> list[float]:
    """Each measurement's step: ``run.step``, times its precision weight when ``weighted``."""
    if not run.weighted:
        return [run.step] * len(run.measurements)
    best = min(m.std for m in run.measurements)
    return [run.step * (best / m.std) ** 2 for m in run.measurements]


def reuse(run: Run, workload: LinearWorkload, tolerance: float, passes: int,
          on_pass: Callable[[int], object] | None = None) -> int:
    """Up to ``passes`` passes over all measurements; return how many ran (``on_pass`` is told
    of each pass, or of the compiled passes at once, as they finish: a progress bar's update).

    Passes stop once one moves the distribution by less than ``tolerance`` in L1,
    measured against a checkpoint taken before the pass (for a factored state, the sum over its
    cliques of how far their marginals moved). The net movement of a pass is what counts: once
    the updates only go round in a cycle (noisy measurements are never quite consistent),
    further passes change nothing.
    """
    if not run.measurements or not run.updating:  # nothing would move: no structure either
        return 0
    if _compiled_passes(run, passes):
        done = _reuse_queries(run, workload, passes, tolerance)
        if on_pass is not None:
            on_pass(done)
        return done
    offsets = run.setup.offsets
    groups = [m.group if run.setup.group_mode
              else int(groups_of_queries(offsets, m.queries.start))
              for m in run.measurements]
    steps = steps_of(run)
    positions = run.state.pass_order(workload, groups)
    if run.setup.group_mode and run.noise_test is None:
        # marginals: the same steps, in compiled sweeps (of the histogram, or clique by clique)
        compiled = _compiled_group_passes(
            run.state, workload, [groups[i] for i in positions],
            [run.measurements[i].values for i in positions], [steps[i] for i in positions],
            passes, tolerance, on_pass)
        if compiled is not None:
            return compiled
    order = [(run.measurements[i], steps[i]) for i in positions]
    for done in range(1, passes + 1):
        checkpoint = run.state.checkpoint() if tolerance > 0 else None
        for m, step in order:
            update(run, workload, m, step)
        if on_pass is not None:
            on_pass(1)
        if tolerance > 0 and run.state.moved(checkpoint) < tolerance:
            return done
    return passes


def refit(run: Run, workload: LinearWorkload, config: MWEMConfig, *,
          final: bool = False) -> int:
    """``estimator="fit"``: refit the state to every measurement so far (or after the last
    round, ``final``); return the steps taken.

    The inverse-variance weighted least-squares fit of :func:`~fastmwem.models.fit.fit`, from
    the current state, for at most ``fit_iterations`` steps (final: ``final_fit_iterations``).
    Nothing is fitted once the noise test has stopped the updates. Post-processing of
    released values only.
    """
    if not run.measurements or not run.updating:
        return 0
    # The fit weighs by (total / std)^2, which must stay a finite float: a std below this
    # (a budget near the float range) weighs as this one, and its measurement is then as
    # good as exact anyway.
    floor = run.state.total * _FIT_STD_FLOOR
    records = [m if m.std >= floor else FitMeasurement(m.queries, m.values, floor)
               for m in run.measurements]
    state = cast("MWState | FactoredState", run.state)
    report = fit(state, workload, records, tolerance=config.fit_tolerance,
                 max_iterations=config.final_fit_iterations if final else config.fit_iterations)
    return report.iterations


#: Smallest noise std the fit weighs by, as a share of the record count (see :func:`refit`).
_FIT_STD_FLOOR = 1e-150

#: Largest query-row table (cells x measurements) the compiled reuse passes gather.
MAX_PASS_ROWS_CELLS = 2**22


def _compiled_group_passes(state: SyntheticState, workload: LinearWorkload, groups: list[int],
                           measured: list[np.ndarray], steps: list[float], passes: int,
                           tolerance: float, on_pass: Callable[[int], object] | None
                           ) -> int | None:
    """The group steps of :func:`update` as compiled sweeps: the passes run, or ``None``."""
    if type(state) is MWState:
        return fit_marginals(state, workload, groups, measured, steps, passes, tolerance,
                             on_pass)
    if type(state) is FactoredState:
        return fit_clique_marginals(state, workload, groups, measured, steps, passes,
                                    tolerance, on_pass)
    return None


def _compiled_passes(run: Run, passes: int) -> bool:
    """Whether the reuse passes can run as one compiled loop over gathered query rows: a dense
    state, single-query measurements, updates on, and a row table of modest size."""
    return (passes > 0 and run.updating and not run.setup.group_mode
            and isinstance(run.state, MWState)
            and len(run.measurements) * run.state.distribution.size <= MAX_PASS_ROWS_CELLS)


def _reuse_queries(run: Run, workload: LinearWorkload, passes: int, tolerance: float) -> int:
    """The reuse passes over single measured queries by
    :func:`~fastmwem.models.passes.fit_queries`: the steps of :func:`update`, in its order."""
    # each measured query's row is gathered once, by its nonzero cells
    for m in run.measurements[len(run.rows):]:
        run.rows.add(workload.row(m.queries.start))
    state = run.state
    if not isinstance(state, MWState):  # _compiled_passes admits only a dense state
        raise TypeError("compiled reuse passes need a dense state")
    s = float(workload.query_sensitivity)
    targets = clipped_targets(np.concatenate([m.values for m in run.measurements]), s,
                              bool(getattr(workload, "nonnegative_queries", False)), state.total)
    return fit_queries(state.distribution, run.rows, targets, s,
                       passes, tolerance)


def result_of(run: Run, domain: Domain, workload: LinearWorkload, iterates: np.ndarray | None,
              *, trace: tuple[RoundRecord, ...], round_ledger: tuple[LedgerEntry, ...] = (),
              **fields: Unpack[ResultFields]) -> MWEMResult:
    """The run's :class:`MWEMResult` (``fields``: ledger, privacy, schema, guarantee)."""
    state = run.state
    if isinstance(state, MWState):
        distribution = state.distribution if iterates is None else iterates
        histogram, factored = distribution * (state.total / distribution.sum()), None
    else:
        histogram, factored = None, state
    return MWEMResult(
        domain=domain,
        workload=workload,
        histogram=histogram,
        total=state.total,
        selected=tuple(m.group for m in run.measurements),
        measurements=tuple(m.values for m in run.measurements),
        group_mode=run.setup.group_mode,
        updates_skipped=not run.updating,
        model=factored,
        trace=trace,
        round_ledger=round_ledger,
        **fields,
    )



def noise_threshold(cells: int, scale: float, alpha: float) -> float:
    """The ``1 - alpha`` quantile of ``sum |Z_i|`` over ``cells`` draws ``Z_i ~ Laplace(scale)``.

    Each ``|Z_i|`` is exponential with mean ``scale``, so the sum follows a Gamma law of shape
    ``cells`` and scale ``scale``.

    >>> round(noise_threshold(1, 2.0, 0.5), 4)  # the median of an exponential of mean 2
    1.3863
    """
    from scipy.special import gammainccinv  # scipy is slow to import; only runs that test need it

    return float(scale) * float(gammainccinv(int(cells), float(alpha)))


def synthetic_answers(state: SyntheticState, workload: LinearWorkload, queries: slice,
                      offsets: np.ndarray) -> np.ndarray:
    """The synthetic counts ``total * q(p)`` of the consecutive ``queries`` (within one group)."""
    group = int(np.searchsorted(offsets, queries.start, side="right") - 1)
    start = queries.start - int(offsets[group])
    answers = state.answer_group(workload, group)
    return answers[start:start + (queries.stop - queries.start)] * state.total


def within_noise(measured: np.ndarray, synthetic: np.ndarray, scale: float,
                 alpha: float) -> bool:
    """Whether ``measured`` lies within its noise of ``synthetic`` at significance ``alpha``.

    True when the L1 distance is at most the ``1 - alpha`` quantile of the L1 norm of the
    Laplace noise alone: if the synthetic answers were exact, a larger distance would occur with
    probability at most ``alpha``.

    Args:
        measured: the noisy answers (true answers plus ``Laplace(scale)`` noise on each).
        synthetic: the synthetic distribution's answers to the same queries, in counts.
        scale: the Laplace scale of each measured answer.
        alpha: the significance level, in (0, 1).
    """
    measured = np.asarray(measured, dtype=np.float64)
    distance = float(np.abs(measured - synthetic).sum())
    return distance <= noise_threshold(measured.size, scale, alpha)
