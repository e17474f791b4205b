"""MWEM: the multiplicative weights exponential mechanism (Hardt, Ligett and McSherry 2012).

Figure 1 of the MWEM paper (arXiv:1012.4763) with the practical variations of its s.2.3.3 and s.3.3: measurement reuse,
noisy-histogram initialisation, last iterate or average, and whole-group (marginal) measurement
with a cell-count penalty in the selection score.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from fastmwem._validation import (
    check_epsilon,
    check_int,
    check_memory,
    check_noise_scale,
    check_probability,
)
from fastmwem.accounting import Accountant, PrivacyEvent, PureDP, exact
from fastmwem.data.domain import Domain
from fastmwem.mechanisms.laplace import Laplace
from fastmwem.mechanisms.seeding import warn_if_seeded
from fastmwem.random import make_rng
from fastmwem.release._candidates import CANDIDATE_SETS
from fastmwem.release._model import (
    candidate_groups,
    candidate_workload,
    check_dataset,
    check_release_inputs,
    choose_model,
    selectable,
    within_cap,
    worth_measuring,
)
from fastmwem.release._passes import fit_queries
from fastmwem.release._private import PrivateView
from fastmwem.release._setup import MWEMSetup, prepare
from fastmwem.release.factored import DEFAULT_MAX_CLIQUE_CELLS, FactoredState
from fastmwem.release.noise import synthetic_answers, within_noise
from fastmwem.release.resources import _FACTORED_FINAL_PASSES, mwem_resources
from fastmwem.release.result import MWEMResult, RoundRecord
from fastmwem.release.selection import RoundSelection, resolve_selection
from fastmwem.release.state import MAX_RECORDS, MWState, SyntheticState, clipped_targets
from fastmwem.workloads.base import LinearWorkload, groups_of_queries

__all__ = ["mwem", "MWEMConfig", "mwem_privacy_plan", "choose_model", "plan_setup",
           "MAX_REUSE_PASSES",
           "PROGRESS_SECONDS", "MODELS"]

#: Largest number of reuse passes per round.
MAX_REUSE_PASSES = 1000

#: Largest number of final reuse passes.
MAX_FINAL_PASSES = 100_000

#: Final reuse passes of a factored run (``MWEMConfig.final_passes=None``).
FINAL_PASSES_FACTORED = _FACTORED_FINAL_PASSES

#: Share of a round's epsilon a factored run spends on selection (``select_fraction=None``).
SELECT_FRACTION_FACTORED_EXACT = Fraction(1, 10)
SELECT_FRACTION_FACTORED = float(SELECT_FRACTION_FACTORED_EXACT)

#: The synthetic models a run can keep (``MWEMConfig.model``).
MODELS = ("auto", "dense", "junction-tree", "product")

#: With ``progress=None``, runs estimated to take longer than this (seconds) show progress.
PROGRESS_SECONDS = 30.0


@dataclass(frozen=True)
class MWEMConfig:
    """Every public parameter of an MWEM run, validated; its privacy plan follows from it alone.

    Args:
        epsilon: total privacy budget (pure ``epsilon``-DP).
        rounds: number of rounds T (selections and measurements).
        measure: ``"group"`` measures a whole group (a marginal) with one Laplace measurement
            calibrated to the group's L1 sensitivity (MWEM paper, arXiv:1012.4763, s.3.3); ``"query"`` measures
            single queries (Figure 1). ``"auto"`` is ``"group"`` when the workload has groups
            larger than one query.
        reuse_passes: at most this many multiplicative-weights passes over all measurements so
            far after each round (s.2.3.3; 0 gives the single update of Figure 1; at most
            ``MAX_REUSE_PASSES``).
        reuse_tolerance: stop a round's reuse passes early once a pass moves the synthetic
            distribution by less than this in L1 distance (0 never stops early). The test looks
            only at the noisy measurements and the synthetic distribution, so it is
            post-processing and costs no privacy.
        init: ``"uniform"`` or ``"noisy-histogram"`` (s.2.3.3; charged to the budget).
        init_fraction: share of epsilon spent on the noisy histogram.
        init_uniform_mix: weight of the uniform distribution mixed into the noisy-histogram start,
            so that no cell starts at zero (multiplicative weights can never revive a zero cell).
        output: ``"last"`` iterate (the paper's experiments) or ``"average"`` of the iterates (the
            theorem's output).
        exclude_measured: do not select a group measured before (the set is public).
        cell_penalty: subtract ``cell_penalty * (cells in group)`` from a group's score; ``None``
            uses the expected absolute Laplace error of one measured cell (data-independent, so
            privacy is unaffected; s.3.3 subtracts the number of cells).
        selection: how a round selects: ``"exponential"`` (Gumbel-max over every candidate's
            score), ``"permute-and-flip"``, ``"lazy"`` (Fast-MWEM: the lazy exponential mechanism
            over an exact top-k oracle; same law as the exponential mechanism over single
            queries' absolute errors, without computing all answers), any name added with
            :func:`~fastmwem.release.selection.register_selection`, or a
            :class:`~fastmwem.release.selection.RoundSelection` object.
        index: the top-k oracle of ``selection="lazy"``: ``None`` (the workload's own exact
            oracle, else ``"bitpacked"`` for 0/1 queries, else ``"flat"``), an index name for
            :func:`fastmwem.indices.make_index`, or a built oracle.
        top_k: the size of the lazy mechanism's exact top-k set (default ``ceil(sqrt(m))``).
        allow_uncertified: let ``selection="lazy"`` run over an approximate index without a
            certified gap (``"faiss:HNSW32"``, ``"faiss:IVF..."``, ``"hnswlib"``). Such a run has
            NO privacy guarantee: its selection rounds are recorded as
            :class:`~fastmwem.mechanisms.Uncertified` in the ledger. For experiments only.
        total: a *public* record count, if the data owner publishes one (at most 2**53);
            ``None`` spends ``count_fraction`` of epsilon on a Laplace count.
        count_fraction: share of epsilon spent on the noisy record count when ``total`` is None.
        noise_test: ``None`` (the default) or a significance level in (0, 1): if the first
            round's measurement lies within its Laplace noise of the starting distribution's
            answers at that level (:func:`~fastmwem.release.noise.within_noise`), no update is
            made in any round and the output is the start. Post-processing: it reads only the
            noisy measurement and the synthetic distribution, so it costs no privacy.
        model: the synthetic distribution: ``"dense"`` (a vector over every cell),
            ``"junction-tree"`` (a decomposable model of clique tables,
            :class:`~fastmwem.release.factored.FactoredState`), ``"product"`` (disjoint factors,
            mwem.txt s.4), or ``"auto"``: dense when the domain is within the dense limit and
            the run's memory, else the junction tree.
        max_clique_cells: the largest clique (cells) of a factored model. Groups whose
            measurement would need a larger clique are left out of the selection; which ones
            follows from the domain and the groups already selected (public).
        candidates: what a round may select: ``"workload"`` (its groups), ``"closure"`` (also
            the marginals on subsets of each marginal group's attributes, which are cheaper to
            measure; :mod:`fastmwem.release._candidates`), or ``"auto"``: the closure for a
            factored model of a marginal workload, else the workload.
        select_fraction: the share of each round's epsilon spent on the selection (the rest
            measures); ``None``: 1/2 for a dense model (the paper's even split) and
            ``SELECT_FRACTION_FACTORED`` for a factored one, whose many small candidates a
            selection tells apart with little epsilon while each measurement needs all it can
            get (on adult at epsilon 1: mean 2-way L1 0.085 against 0.107 with an even split).
        final_passes: reuse passes over all measurements after the last round (stopping early
            as ``reuse_tolerance`` says; at most ``MAX_FINAL_PASSES``), so that the last
            measurements are fitted as well as the first; ``None``: none for a dense model,
            ``FINAL_PASSES_FACTORED`` for a factored one, whose large marginals
            multiplicative weights fits slowly.

    Each step's share of epsilon must leave a finite noise scale: a tiny epsilon spread over many
    rounds is refused here, with the share named, rather than failing after the charge.
    """

    epsilon: float
    rounds: int = 20
    measure: str = "auto"
    reuse_passes: int = 20
    reuse_tolerance: float = 1e-4
    init: str = "uniform"
    init_fraction: float = 0.1
    init_uniform_mix: float = 0.1
    output: str = "last"
    exclude_measured: bool = True
    cell_penalty: float | None = None
    selection: object = "exponential"
    index: object = None
    top_k: int | None = None
    allow_uncertified: bool = False
    total: int | None = None
    count_fraction: float = 0.01
    noise_test: float | None = None
    model: str = "auto"
    max_clique_cells: int = DEFAULT_MAX_CLIQUE_CELLS
    candidates: str = "auto"
    final_passes: int | None = None
    select_fraction: float | None = None

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_int(self.rounds, "rounds", minimum=1)
        check_int(self.reuse_passes, "reuse_passes", minimum=0, maximum=MAX_REUSE_PASSES)
        _check_tolerance(self.reuse_tolerance)
        _choice(self.measure, "measure", ("auto", "group", "query"))
        _choice(self.init, "init", ("uniform", "noisy-histogram"))
        _choice(self.output, "output", ("last", "average"))
        _choice(self.model, "model", MODELS)
        check_int(self.max_clique_cells, "max_clique_cells", minimum=1)
        _choice(self.candidates, "candidates", CANDIDATE_SETS)
        if self.final_passes is not None:
            check_int(self.final_passes, "final_passes", minimum=0, maximum=MAX_FINAL_PASSES)
        if self.select_fraction is not None:
            check_probability(self.select_fraction, "select_fraction", open_right=True)
        if not isinstance(self.allow_uncertified, bool):
            raise TypeError("allow_uncertified must be a bool, got "
                            f"{type(self.allow_uncertified).__name__}")
        # The resolved selection object is public configuration, derived once. The opt-in is
        # passed only when given, so that the scan selections refuse it by name.
        object.__setattr__(self, "round_selection", resolve_selection(
            self.selection, index=self.index, k=self.top_k,
            allow_uncertified=self.allow_uncertified or None))
        check_probability(self.init_fraction, "init_fraction")
        check_probability(self.init_uniform_mix, "init_uniform_mix")
        check_probability(self.count_fraction, "count_fraction")
        if self.noise_test is not None:
            check_probability(self.noise_test, "noise_test")
        if not isinstance(self.exclude_measured, bool):
            raise TypeError("exclude_measured must be a bool")
        if self.cell_penalty is not None:
            penalty = float(self.cell_penalty)
            if not np.isfinite(penalty) or penalty < 0:
                raise ValueError(f"cell_penalty must be a finite number >= 0, got {self.cell_penalty}")
        if self.total is not None:
            check_int(self.total, "total", minimum=1, maximum=int(MAX_RECORDS))
        self._check_shares()

    def _check_shares(self) -> None:
        """Refuse a split of epsilon that leaves some step a noise scale that is not finite."""
        count = self.count_fraction if self.total is None else 0.0
        init = self.init_fraction if self.init == "noisy-histogram" else 0.0
        if count + init >= 1:
            raise ValueError(
                f"count_fraction ({count}) and init_fraction ({init}) leave no budget for the "
                "rounds: their sum must be < 1"
            )
        # The split may depend on the model, decided later: check every model's.
        for model in ("dense", "junction-tree"):
            split = self.budget_split(model)
            select = self._select_fraction(model)
            shares = [("select", f"each round's selection (epsilon * {select:g} / "
                                 f"{self.rounds} rounds)"),
                      ("measure", f"each round's measurement (epsilon * {1 - select:g} / "
                                  f"{self.rounds} rounds)")]
            if count:
                shares.append(("count", "the record count (epsilon * count_fraction)"))
            if init:
                shares.append(("init", "the initial histogram (epsilon * init_fraction)"))
            for key, what in shares:
                if split[key] <= 0:
                    raise ValueError(f"epsilon={self.epsilon} leaves {what} no budget at all")
                check_noise_scale(1.0, split[key], f"epsilon={self.epsilon} leaves {what} "
                                  f"only {split[key]:.3g}")

    def _select_fraction(self, model: str) -> float:
        if self.select_fraction is not None:
            return float(self.select_fraction)
        return 0.5 if model == "dense" else SELECT_FRACTION_FACTORED

    # -- the privacy plan --------------------------------------------------------------------
    def budget_split(self, model: str = "dense") -> dict[str, float]:
        """Epsilon of each step: the noisy count, the initial histogram, and per-round shares.

        ``model`` (see :func:`choose_model`) sets the default ``select_fraction``. Each share is
        a float rounded *down* from its exact value, and the privacy plan charges exactly those
        floats, so the plan never adds up to more than ``epsilon``.
        """
        eps = exact(self.epsilon, "epsilon")
        count = eps * exact(self.count_fraction, "count_fraction") if self.total is None else 0
        init = (eps * exact(self.init_fraction, "init_fraction")
                if self.init == "noisy-histogram" else 0)
        per_round = (eps - count - init) / self.rounds
        select = (exact(self.select_fraction, "select_fraction")
                  if self.select_fraction is not None
                  else Fraction(1, 2) if model == "dense" else SELECT_FRACTION_FACTORED_EXACT)
        return {
            "count": _float_below(Fraction(count)),
            "init": _float_below(Fraction(init)),
            "select": _float_below(per_round * select),
            "measure": _float_below(per_round * (1 - select)),
        }


def _float_below(value: Fraction) -> float:
    """The largest float that is <= ``value``."""
    out = float(value)
    if Fraction(out) > value:
        out = math.nextafter(out, 0.0)
    return out


def _check_tolerance(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"reuse_tolerance must be a real number, got {type(value).__name__}")
    if not math.isfinite(float(value)) or float(value) < 0:
        raise ValueError(f"reuse_tolerance must be a finite number >= 0, got {value}")


def _choice(value: object, name: str, options: tuple[str, ...]) -> None:
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")


def mwem_privacy_plan(config: MWEMConfig, workload: LinearWorkload, *,
                      model: str | None = None) -> list[tuple[PrivacyEvent, str]]:
    """The ordered list of ``(event, label)`` an MWEM run charges; it depends only on public input.

    ``model`` is the run's model (default: :func:`choose_model` on this machine's memory); it
    sets the default split of each round between selection and measurement, and names the noisy
    start (a histogram when dense, the 1-way marginals when factored).

    Selection rounds are :class:`~fastmwem.accounting.BoundedRange` (exponential mechanism) or
    :class:`~fastmwem.accounting.PureDP` (permute-and-flip); counts and measurements are Laplace
    (``PureDP``). The plan's pure epsilons add up to ``config.epsilon``.
    """
    if model is None:
        model = choose_model(config, workload)
    split = config.budget_split(model)
    selection: RoundSelection = config.round_selection  # type: ignore[attr-defined]
    plan: list[tuple[PrivacyEvent, str]] = []
    # Events hold the exact binary value of each float share, so the plan sums to <= epsilon.
    if split["count"] > 0:
        plan.append((PureDP(Fraction(split["count"])), "record count (Laplace)"))
    if split["init"] > 0:
        start = "histogram" if model == "dense" else "1-way marginals"
        plan.append((PureDP(Fraction(split["init"])), f"initial {start} (Laplace)"))
    for t in range(1, config.rounds + 1):
        plan.append((selection.event(Fraction(split["select"])),
                     f"round {t}: select ({selection.name})"))
        plan.append((PureDP(Fraction(split["measure"])), f"round {t}: measure (Laplace)"))
    return plan


def mwem(
    dataset: object,
    workload: LinearWorkload,
    *,
    epsilon: float,
    rounds: int = 20,
    rng: object = None,
    accountant: Accountant | None = None,
    schema: object = None,
    progress: bool | None = None,
    memory_limit: int | None = None,
    **options: object,
) -> MWEMResult:
    """Run MWEM and return a synthetic distribution that answers ``workload``.

    Each round selects the group (or query) worst answered by the current synthetic
    distribution with the exponential mechanism on ``|q(A) - q(B)|`` (L1 error of a group) at
    ``epsilon_round / 2``, measures it with Laplace noise at ``epsilon_round / 2``, and applies the
    multiplicative-weights update ``A(x) <- A(x) exp(q(x) (m - q(A)) / (2 n))`` (see
    :class:`~fastmwem.release.MWState` for its numerically safe form), followed by up to
    ``reuse_passes`` passes over all measurements so far.

    The synthetic distribution is a dense histogram when the domain allows one; on a larger
    domain (above ``MAX_DENSE_CELLS`` or the memory) it is a junction tree of clique tables
    (:class:`~fastmwem.release.factored.FactoredState`, mwem.txt s.4 and beyond): the same
    updates, applied inside cliques, answers by inference, records sampled clique by clique, and
    the data read only as marginals. Such a run needs a workload with marginal structure; it
    selects among the workload's marginals and their sub-marginals (``candidates``), leaves out
    groups whose clique would pass ``max_clique_cells``, and fits all measurements again after
    the last round (``final_passes``). See :class:`MWEMConfig`.

    Privacy: ``epsilon``-DP (pure) under add/remove-one-record neighbours, by basic composition of
    the plan in :func:`mwem_privacy_plan`. Sensitivity: one record moves each query answer by at
    most ``workload.query_sensitivity`` and each group's answers by at most its
    ``group_sensitivity`` in L1; the selection score has the same sensitivity. The record count
    ``n`` is either public (``total=``) or measured with Laplace noise. The whole plan is charged
    to ``accountant`` (a fresh ``Accountant(epsilon=epsilon)`` if none) atomically, before the data
    is read; if it does not fit, nothing is spent and nothing is computed.

    Everything that could make the run fail is checked before the charge: the options, the
    workload's sizes and sensitivities (groups of sensitivity 0 are never selected), every noise
    scale, and the memory the run needs (:func:`~fastmwem.release.mwem_resources`).

    Args:
        dataset: a :class:`fastmwem.data.Dataset`, or anything with ``domain`` and
            ``histogram()`` (dense runs) or ``marginal(names)`` / ``marginals(list of names)``
            (factored runs).
        workload: linear queries over the same domain.
        epsilon: total privacy budget.
        rounds: number of rounds T.
        rng: ``None`` (OS entropy, for releases), a Generator, or an integer seed for tests: a
            seed emits a :class:`~fastmwem.mechanisms.seeding.SeededRunWarning` (a
            ``PrivacyLeakWarning``) and the result's report says it is not private.
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
    config = MWEMConfig(epsilon=epsilon, rounds=rounds, **options)  # type: ignore[arg-type]
    domain = check_release_inputs(dataset, workload)
    if memory_limit is not None:
        check_int(memory_limit, "memory_limit", minimum=1)
    model, measured, setup = plan_setup(config, workload, memory_limit)
    check_dataset(dataset, model)
    if config.exclude_measured and config.rounds > setup.n_candidates:
        raise ValueError(
            f"rounds ({config.rounds}) exceeds the {setup.n_candidates} candidate "
            f"{'groups' if setup.group_mode else 'queries'} (of sensitivity > 0) while "
            "exclude_measured=True"
        )
    if accountant is None:
        accountant = Accountant(epsilon=config.epsilon)
    elif not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    if schema is not None and getattr(schema, "domain", None) != domain:
        raise ValueError("schema must describe the dataset's domain")
    resources = mwem_resources(config, measured, model=model)
    check_memory(resources.memory_bytes, f"MWEM ({model}) on {resources.cells} cells",
                 memory_limit)
    generator = make_rng(rng)
    seeded = warn_if_seeded(rng, "mwem")
    plan = mwem_privacy_plan(config, workload, model=model)
    accountant.compose_all(plan)  # all or nothing, before the data is read

    if progress is None:
        progress = resources.seconds > PROGRESS_SECONDS and sys.stderr.isatty()
    bar = _progress_bar(config, resources.seconds) if progress else None
    try:
        # A dense run reads the histogram, so it needs no list of groups (m entries to sort).
        private = PrivateView(dataset, measured, dense=model == "dense",
                              groups=None if model == "dense"
                              else candidate_groups(setup, measured))
        result = _run(private, measured, domain, config, setup, model, generator, accountant,
                      bar, schema)
        if measured is not workload:
            result = dataclasses.replace(result, workload=workload, measured_workload=measured)
        return dataclasses.replace(result, seeded=True) if seeded else result
    finally:
        if bar is not None:
            bar.close()


def plan_setup(config: MWEMConfig, workload: LinearWorkload, memory_limit: int | None = None
               ) -> tuple[str, LinearWorkload, MWEMSetup]:
    """The public plan of a run: its model, the workload it measures, and the candidates.

    Reads only public input (the configuration, the workload, the domain and the memory).
    """
    model = choose_model(config, workload, memory_limit)
    measured = candidate_workload(config, workload, model)
    setup = prepare(config, measured, model)
    if model != "dense":
        setup = within_cap(setup, measured, config.max_clique_cells)
    return model, measured, setup


def _progress_bar(config: MWEMConfig, seconds: float):  # -> tqdm
    from tqdm import tqdm

    return tqdm(total=config.rounds, desc=f"MWEM (at most ~{seconds:.0f} s)", unit="round",
                leave=False)


@dataclass
class _Measurement:
    group: int
    queries: slice
    values: np.ndarray


@dataclass
class _Run:
    """The mutable part of a run: the state and its measurements.

    ``noise_test`` is the significance level of the test on the first measurement, until that
    test has run; ``updating`` turns false if it found the measurement within its noise.
    """

    state: SyntheticState
    setup: MWEMSetup
    measurements: list[_Measurement] = field(default_factory=list)
    noise_test: float | None = None
    measure_epsilon: float = 0.0
    updating: bool = True
    rows: list[np.ndarray] = field(default_factory=list)


def _start(private: PrivateView, domain: Domain, config: MWEMConfig, model: str,
           rng: np.random.Generator) -> SyntheticState:
    """The starting state (noisy count, and noisy histogram or 1-way marginals if configured)."""
    split = config.budget_split(model)
    if config.total is None:
        noisy = float(Laplace(epsilon=split["count"]).release(private.count(), rng=rng))
        # Clipping the noisy count to the feasible range is post-processing.
        total = min(max(noisy, 1.0), MAX_RECORDS)
    else:
        total = float(config.total)
    if model == "dense":
        if config.init == "noisy-histogram":
            noisy_hist = Laplace(epsilon=split["init"]).release(private.histogram(), rng=rng)
            return MWState.from_noisy_histogram(domain, noisy_hist, total,
                                                config.init_uniform_mix)
        return MWState.uniform(domain, total)
    options = {"max_clique_cells": config.max_clique_cells, "product": model == "product"}
    if config.init == "noisy-histogram":
        # One record moves each of the d 1-way marginals by 1: L1 sensitivity d, all at once.
        one_way = private.one_way()
        noisy = Laplace(epsilon=split["init"], sensitivity=float(len(domain))).release(
            np.concatenate([m.reshape(-1) for m in one_way]), rng=rng)
        parts = np.split(noisy, np.cumsum([m.size for m in one_way])[:-1])
        return FactoredState.from_noisy_marginals(domain, parts, total, config.init_uniform_mix,
                                                  **options)
    return FactoredState(domain, total, **options)  # type: ignore[arg-type]


def _run(private: PrivateView, workload: LinearWorkload, domain: Domain, config: MWEMConfig,
         setup: MWEMSetup, model: str, rng: np.random.Generator, accountant: Accountant,
         bar: object, schema: object) -> MWEMResult:
    split = config.budget_split(model)
    state = _start(private, domain, config, model, rng)
    if model != "dense":
        setup = worth_measuring(setup, state.total)
        private.groups = candidate_groups(setup, workload)
    chooser = setup.selection.prepare(
        workload, private, epsilon=split["select"], group_mode=setup.group_mode,
        sensitivities=setup.sensitivities, penalties=setup.penalties)
    private.release()  # the chooser keeps what its rounds need (all answers, or the histogram)

    run = _Run(state, setup, noise_test=config.noise_test, measure_epsilon=split["measure"])
    available = setup.candidates.copy()
    trace: list[RoundRecord] = []
    iterates = np.zeros(domain.size) if config.output == "average" else None
    for t in range(1, config.rounds + 1):
        started = time.perf_counter()
        choice = chooser.choose(state, selectable(state, setup, workload, available), rng)
        if config.exclude_measured:
            available[choice] = False
        queries = workload.group_queries(choice) if setup.group_mode else slice(choice, choice + 1)
        measure = Laplace(epsilon=split["measure"], sensitivity=float(setup.sensitivities[choice]))
        values = np.atleast_1d(measure.release(chooser.true_answers(queries), rng=rng))
        run.measurements.append(_Measurement(choice, queries, values))

        _update(run, workload, run.measurements[-1])
        passes = _reuse(run, workload, config, config.reuse_passes)
        if iterates is not None:
            iterates += state.distribution  # type: ignore[attr-defined]
        trace.append(RoundRecord(
            round=t,
            selected=choice,
            description=(workload.describe_group(choice) if setup.group_mode
                         else workload.describe(choice)),
            epsilon_select=split["select"],
            epsilon_measure=split["measure"],
            seconds=time.perf_counter() - started,
        ))
        if bar is not None:
            bar.set_postfix(reuse_passes=passes, refresh=False)  # type: ignore[attr-defined]
            bar.update()  # type: ignore[attr-defined]
    final = config.final_passes
    if final is None:
        final = 0 if model == "dense" else FINAL_PASSES_FACTORED
    _reuse(run, workload, config, final)
    if isinstance(state, MWState):
        distribution = state.distribution if iterates is None else iterates
        histogram, factored = distribution * (state.total / distribution.sum()), None
    else:
        histogram, factored = None, state
    return MWEMResult(
        domain=domain,
        workload=workload,
        histogram=histogram,  # type: ignore[arg-type]
        total=state.total,
        selected=tuple(m.group for m in run.measurements),
        measurements=tuple(m.values for m in run.measurements),
        group_mode=setup.group_mode,
        ledger=accountant.ledger,
        privacy=accountant.spent(),
        trace=tuple(trace),
        schema=schema,
        updates_skipped=not run.updating,
        model=factored,
    )


def _update(run: _Run, workload: LinearWorkload, measurement: _Measurement) -> None:
    if run.noise_test is not None:  # the first measurement decides whether any update is made
        scale = float(run.setup.sensitivities[measurement.group]) / run.measure_epsilon
        synthetic = synthetic_answers(run.state, workload, measurement.queries, run.setup.offsets)
        run.updating = not within_noise(measurement.values, synthetic, scale, run.noise_test)
        run.noise_test = None
    if not run.updating:
        return
    if run.setup.group_mode:
        run.state.update_group(workload, measurement.group, measurement.values)
    else:
        run.state.update_query(workload, measurement.queries.start,
                               float(measurement.values[0]), offsets=run.setup.offsets)


def _reuse(run: _Run, workload: LinearWorkload, config: MWEMConfig, passes: int) -> int:
    """Up to ``passes`` passes over all measurements; return how many ran.

    Passes stop once one moves the distribution by less than ``reuse_tolerance`` in L1,
    measured against a checkpoint taken before the pass (for a factored state, the sum over its
    cliques of how far their marginals moved). The net movement of a pass is what counts: once
    the updates only go round in a cycle (noisy measurements are never quite consistent),
    further passes change nothing.
    """
    tolerance = config.reuse_tolerance
    if _compiled_passes(run, passes):
        return _reuse_queries(run, workload, passes, tolerance)
    offsets = run.setup.offsets
    groups = [m.group if run.setup.group_mode else groups_of_queries(offsets, m.queries.start)
              for m in run.measurements]
    order = [run.measurements[i] for i in run.state.pass_order(workload, groups)]
    for done in range(1, passes + 1):
        checkpoint = run.state.checkpoint() if tolerance > 0 else None
        for m in order:
            _update(run, workload, m)
        if tolerance > 0 and run.state.moved(checkpoint) < tolerance:
            return done
    return passes


#: Largest query-row table (cells x measurements) the compiled reuse passes gather.
MAX_PASS_ROWS_CELLS = 2**22


def _compiled_passes(run: _Run, passes: int) -> bool:
    """Whether the reuse passes can run as one compiled loop over gathered query rows: a dense
    state, single-query measurements, updates on, and a row table of modest size."""
    return (passes > 0 and run.updating and not run.setup.group_mode
            and isinstance(run.state, MWState)
            and len(run.measurements) * run.state.distribution.size <= MAX_PASS_ROWS_CELLS)


def _reuse_queries(run: _Run, workload: LinearWorkload, passes: int, tolerance: float) -> int:
    """The reuse passes over single measured queries, by :func:`~fastmwem.release._passes.fit_queries`
    (the same steps as :func:`_update`, in the same order)."""
    for m in run.measurements[len(run.rows):]:
        run.rows.append(workload.row(m.queries.start))
    state = run.state
    s = float(workload.query_sensitivity)
    targets = clipped_targets(np.concatenate([m.values for m in run.measurements]), s,
                              bool(getattr(workload, "nonnegative_queries", False)), state.total)
    return fit_queries(state.distribution, np.stack(run.rows), targets, s,  # type: ignore[attr-defined]
                       passes, tolerance)
