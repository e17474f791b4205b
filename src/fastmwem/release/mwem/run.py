"""MWEM: the multiplicative weights exponential mechanism (Hardt, Ligett and McSherry 2012).

Figure 1 of the MWEM paper (arXiv:1012.4763) with the practical variations of its s.2.3.3 and s.3.3: measurement reuse,
noisy-histogram initialisation, last iterate or average, and whole-group (marginal) measurement
with a cell-count penalty in the selection score.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from fastmwem.accounting import Accountant
from fastmwem.data.domain import Domain
from fastmwem.mechanisms.seeding import check_rng
from fastmwem.models.state import MWState, SyntheticState
from fastmwem.progress import LiveBar, about
from fastmwem.random import RNGLike, make_rng
from fastmwem.release._privacy import (
    PureDefinition,
    integer_valued,
    measurement_grid,
)
from fastmwem.release._protocol import as_linear_workload
from fastmwem.release.mwem.adaptive import run_adaptive
from fastmwem.release.mwem.annealing import measured_rho, noise_std
from fastmwem.release.mwem.config import (
    FINAL_PASSES_FACTORED,
    PROGRESS_SECONDS,
    MWEMConfig,
    ProgressBar,
)
from fastmwem.release.mwem.data_view import PrivateView
from fastmwem.release.mwem.plan import (
    MWEMPlan,
    check_run_inputs,
    plan_mwem,
)
from fastmwem.release.mwem.rounds import (
    Measurement,
    ResultFields,
    Run,
    one_way_start,
    refined_total,
    refit,
    result_of,
    reuse,
    start_state,
    update,
)
from fastmwem.release.mwem.setup import (
    MWEMSetup,
    candidate_groups,
    check_release_inputs,
    selectable,
    worth_measuring,
)
from fastmwem.release.result import MWEMResult, RoundRecord
from fastmwem.release.selection.candidates import workload_weights
from fastmwem.workloads.base import LinearWorkload, Workload

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastmwem.data.schema import Schema
    from fastmwem.release.mwem.resources import MWEMResources

__all__ = ["mwem", "run_plan"]


def mwem(
    dataset: object,
    workload: Workload | LinearWorkload,
    *,
    epsilon: float | None = None,
    rounds: int | None = 20,
    rng: RNGLike = None,
    accountant: Accountant | None = None,
    schema: Schema | None = None,
    progress: bool | None = None,
    memory_limit: int | None = None,
    **options: Any,
) -> MWEMResult:
    """Run MWEM and return a synthetic distribution that answers ``workload``.

    Each round selects the group (or query) worst answered by the current synthetic
    distribution with the exponential mechanism on ``|q(A) - q(B)|`` (L1 error of a group) at
    ``epsilon_round / 2``, measures it with Laplace noise at ``epsilon_round / 2``, and applies the
    multiplicative-weights update ``A(x) <- A(x) exp(q(x) (m - q(A)) / (2 n))`` (see
    :class:`~fastmwem.release.MWState` for its numerically safe form), followed by up to
    ``reuse_passes`` passes over all measurements so far, or with ``estimator="fit"`` by the
    inverse-variance weighted least-squares fit to them all (post-processing either way).

    The synthetic distribution is a dense histogram when the domain allows one; on a larger
    domain (above ``MAX_DENSE_CELLS`` or the memory) it is a junction tree of clique tables
    (:class:`~fastmwem.models.factored.FactoredState`, MWEM paper s.4 and beyond): the same
    updates, applied inside cliques, answers by inference, records sampled clique by clique, and
    the data read only as marginals. Such a run needs a workload with marginal structure; it
    selects among the workload's marginals and their sub-marginals (``candidates``), leaves out
    groups whose clique would pass ``max_clique_cells``, and fits all measurements again after
    the last round (``final_passes``). See :class:`MWEMConfig`.

    Privacy (add/remove-one-record neighbours), by composition of the plan in
    :func:`mwem_privacy_plan`: ``epsilon``-DP (pure, the default), or with ``privacy="zcdp"``
    ``rho``-zCDP, where ``rho`` is given or converted from ``(epsilon, delta)`` so that the run
    is also ``(epsilon, delta)``-DP. Sensitivity: one record moves each query answer by at
    most ``workload.query_sensitivity`` and each group's answers by at most its
    ``group_sensitivity`` in L1 (which bounds the L2 sensitivity that calibrates a Gaussian); the
    selection score has the same sensitivity (an adaptive run's weighted score ``w_r`` times
    it, with the weights at most 1). The record count ``n`` is either public (``total=``) or
    measured. The whole plan is charged to ``accountant`` (a fresh one holding the budget if
    none) atomically, before the data is read; if it does not fit, nothing is spent and nothing
    is computed. With ``rounds=None`` the rounds' part of the plan is a ceiling within which the
    adaptive rounds are charged one by one (:mod:`fastmwem.release.mwem.annealing`); the result's
    ``round_ledger`` lists them.

    Everything that could make the run fail is checked before the charge: the options, the
    workload's sizes and sensitivities (groups of sensitivity 0 are never selected), every noise
    scale, and the memory the run needs (:func:`~fastmwem.release.mwem_resources`).

    Args:
        dataset: a :class:`fastmwem.data.Dataset`, or anything with ``domain`` and
            ``histogram()`` (dense runs) or ``marginal(names)`` / ``marginals(list of names)``
            (factored runs).
        workload: linear queries over the same domain: a
            :class:`~fastmwem.workloads.LinearWorkload`, or any object satisfying the
            :class:`~fastmwem.workloads.Workload` protocol (run on a dense model; the result's
            ``workload`` is then a :class:`~fastmwem.release._protocol.ProtocolWorkload` view
            whose ``wrapped`` is the object).
        epsilon: total privacy budget (with ``privacy="zcdp"``: with ``delta=``, or give
            ``rho=`` instead).
        rounds: number of rounds T, or ``None`` for adaptive rounds and budget.
        rng: ``None`` (OS entropy, for releases), a Generator, or an integer seed for tests: a
            seed emits a :class:`~fastmwem.mechanisms.seeding.SeededRunWarning` (a
            ``PrivacyLeakWarning``) and the result's report says it is not private; so does a
            Generator the caller made (``CallerRNGWarning``), unless ``secure_rng()`` made it.
        accountant: accountant to charge; its ledger is in the result.
        schema: the public :class:`~fastmwem.data.Schema` the dataset was encoded with, so that
            ``result.sample()`` decodes records to raw labels. Its domain must be the dataset's.
        progress: show a progress bar on stderr; ``None`` shows one when the run is estimated
            to take more than ``PROGRESS_SECONDS`` and stderr is a terminal.
        memory_limit: bytes the run may use; ``None`` uses the machine's memory (or
            ``$FASTMWEM_MEMORY_LIMIT``).
        **options: the other fields of :class:`MWEMConfig`.

    Returns:
        An :class:`MWEMResult`.

    Raises:
        ResourceLimitError: (a ``ValueError``) the run would need more memory than allowed.
    """
    config = MWEMConfig(epsilon=epsilon, rounds=rounds, **options)
    workload = as_linear_workload(workload)
    check_release_inputs(dataset, workload)
    planned = plan_mwem(config, workload, memory_limit)
    check_run_inputs(planned, dataset, schema)
    definition = config.definition
    if accountant is None:
        accountant = definition.default_accountant(config.budget())
    definition.check_accountant(accountant)
    generator = make_rng(rng)
    provenance = check_rng(rng, "mwem")
    return run_plan(planned, dataset, accountant, generator, schema=schema, progress=progress,
                    provenance=provenance)


def run_plan(planned: MWEMPlan, dataset: object, accountant: Accountant,
             generator: np.random.Generator, *, schema: Schema | None = None,
             progress: bool | None = None,
             provenance: tuple[str, ...] | None = None) -> MWEMResult:
    """Charge ``planned``'s events to ``accountant`` (all or none), then run it on ``dataset``.

    Everything that could fail is checked by :func:`~fastmwem.release.mwem.plan.plan_mwem` and
    :func:`~fastmwem.release.mwem.plan.check_run_inputs` before this is called.
    """
    config, model, measured, setup = planned.config, planned.model, planned.measured, planned.setup
    workload, resources, domain = planned.workload, planned.resources, planned.workload.domain
    definition = config.definition
    weights = (workload_weights(measured, workload) if config.adaptive
               else np.ones(int(measured.n_groups)))
    plan = list(planned.events)
    accountant.compose_all(plan)  # all or nothing, before the data is read

    if progress is None:
        progress = resources.seconds > PROGRESS_SECONDS and sys.stderr.isatty()
    bar = _progress_bar(config, resources) if progress else None
    try:
        # A dense run reads the histogram, so it needs no list of groups (m entries to sort).
        private = PrivateView(dataset, measured, dense=model == "dense",
                              groups=None if model == "dense"
                              else candidate_groups(setup, measured))
        # the result takes the ledger and the spend again from the accountant after the run
        fields: ResultFields = {
            "ledger": (), "privacy": accountant.spent(), "schema": schema,
            "guarantee": definition.guarantee(definition.plan_total(plan))}
        if config.adaptive:
            result = _run_adaptive(private, measured, domain, config, setup, model, generator,
                                   weights, bar, fields, resources.final_seconds)
        else:
            result = _run(private, measured, domain, config, setup, model, generator, bar,
                          fields, resources.final_seconds)
        result = dataclasses.replace(result, ledger=accountant.ledger,
                                     privacy=accountant.spent())
        if measured is not workload:
            result = dataclasses.replace(result, workload=workload, measured_workload=measured)
        return (result if provenance is None
                else dataclasses.replace(result, rng_provenance=provenance))
    finally:
        if bar is not None:
            bar.close()


def _progress_bar(config: MWEMConfig, resources: MWEMResources) -> ProgressBar:
    """The rounds' bar; it ticks while the data is read and the first round selects."""
    total = about(resources.seconds)
    final = "" if not resources.final_seconds else f", {total} in all"
    return LiveBar(f"MWEM rounds ({about(resources.seconds - resources.final_seconds)}{final})",
                   total=config.rounds, unit="round")


def _dense(state: SyntheticState) -> MWState:
    """The dense state of a run averaging its iterates (the plan refuses a factored one)."""
    if not isinstance(state, MWState):
        raise TypeError("output='average' needs a dense histogram")
    return state


def _final_passes(config: MWEMConfig, model: str) -> int:
    if config.final_passes is not None:
        return int(config.final_passes)
    return 0 if model == "dense" else FINAL_PASSES_FACTORED


def _estimate(run: Run, workload: LinearWorkload, config: MWEMConfig, passes: int, *,
              final: bool = False, on_pass: Callable[[int], object] | None = None) -> int:
    """The run's estimator after a measurement or the last round: ``passes`` reuse passes, or
    the weighted fit (``config.estimator``); return the passes or steps taken."""
    if config.estimator == "fit" or (final and config.estimator == "final-fit"):
        return refit(run, workload, config, final=final)
    if on_pass is None:
        return reuse(run, workload, config.reuse_tolerance, passes)
    return reuse(run, workload, config.reuse_tolerance, passes, on_pass)


def _final(run: Run, workload: LinearWorkload, config: MWEMConfig, model: str,
           bar: ProgressBar | None, seconds: float) -> None:
    """The estimator after the last round, with a bar of its own when the rounds have one:
    the final passes count up (and stop early once they converge), a final fit ticks."""
    passes = _final_passes(config, model)
    fits = config.estimator in ("fit", "final-fit")
    if bar is not None:
        bar.close()  # the rounds are done; the final phase says so itself
    if bar is None or not (fits or passes):
        _estimate(run, workload, config, passes, final=True)
        return
    desc = f"MWEM final {'fit' if fits else 'passes'} ({about(seconds)})"
    final = LiveBar(desc, total=None if fits else passes, unit="step" if fits else "pass")
    try:
        done = _estimate(run, workload, config, passes, final=True, on_pass=final.update)
        final.set_postfix(done=done)
    finally:
        final.close()


def _run(private: PrivateView, workload: LinearWorkload, domain: Domain, config: MWEMConfig,
         setup: MWEMSetup, model: str, rng: np.random.Generator, bar: ProgressBar | None,
         fields: ResultFields, final_seconds: float = 0.0) -> MWEMResult:
    split = config.budget_split(model)
    state, count_std = start_state(private, domain, config, model, rng, split)
    totals = refined_total(state, count_std, workload, setup)
    start: list[Measurement] = []
    if config.init == "one-way":
        state, start = one_way_start(private, workload, config, model, setup, rng, state.total,
                                     totals)
    if config.rounds == 0:  # the 1-way marginals alone: their product, fitted as configured
        private.release()
        run = Run(state, setup, measurements=start)
        _final(run, workload, config, model, bar, final_seconds)
        return result_of(run, domain, workload, None, trace=(), **fields)
    if model != "dense":
        setup = worth_measuring(setup, state.total)
        private.groups = candidate_groups(setup, workload)
    chooser = setup.selection.prepare(
        workload, private, epsilon=split["select"], group_mode=setup.group_mode,
        sensitivities=setup.sensitivities, penalties=setup.penalties)
    private.release()  # the chooser keeps what its rounds need (all answers, or the histogram)

    run = Run(state, setup, measurements=start, noise_test=config.noise_test,
              measure_epsilon=split["measure"])
    integer = integer_valued(workload)  # public: integer answers get integer noise
    available = setup.candidates.copy()
    trace: list[RoundRecord] = []
    iterates = np.zeros(domain.size) if config.output == "average" else None
    definition = config.definition
    pure = isinstance(definition, PureDefinition)
    for t in range(1, config.round_count(len(domain)) + 1):
        started = time.perf_counter()
        choice = chooser.choose(state, selectable(state, setup, workload, available), rng)
        if config.excludes_measured:
            available[choice] = False
        queries = workload.group_queries(choice) if setup.group_mode else slice(choice, choice + 1)
        measure = definition.measurement(split["measure"], float(setup.sensitivities[choice]),
                                         integer=integer)
        values = np.atleast_1d(np.asarray(measure.release(chooser.true_answers(queries), rng=rng),
                                          dtype=np.float64))
        std = noise_std(measure)
        run.measurements.append(Measurement(choice, queries, values, std))
        if totals is not None:
            state.total = totals.add(values, std)

        update(run, workload, run.measurements[-1])
        passes = _estimate(run, workload, config, config.reuse_passes)
        if iterates is not None:
            iterates += _dense(state).distribution
        trace.append(RoundRecord(
            round=t,
            selected=choice,
            description=(workload.describe_group(choice) if setup.group_mode
                         else workload.describe(choice)),
            epsilon_select=split["select"],
            epsilon_measure=split["measure"] if pure else None,
            seconds=time.perf_counter() - started,
            rho_measure=None if pure else measured_rho(measure),
            grid=measurement_grid(measure, values.size),
        ))
        if bar is not None:
            bar.set_postfix(reuse_passes=passes, refresh=False)
            bar.update()
    _final(run, workload, config, model, bar, final_seconds)
    return result_of(run, domain, workload, iterates, trace=tuple(trace), **fields)


def _run_adaptive(private: PrivateView, workload: LinearWorkload, domain: Domain,
                  config: MWEMConfig, setup: MWEMSetup, model: str, rng: np.random.Generator,
                  weights: np.ndarray, bar: ProgressBar | None, fields: ResultFields,
                  final_seconds: float = 0.0) -> MWEMResult:
    split = config.budget_split(model, rounds=config.round_count(len(domain)))
    rounds, schedule = run_adaptive(private, workload, domain, config, setup, model, rng, split,
                                    weights, bar)
    _final(rounds.run, workload, config, model, bar, final_seconds)
    return result_of(rounds.run, domain, workload, None, trace=tuple(rounds.trace),
                     round_ledger=schedule.ledger, **fields)
