"""MWEM: the multiplicative weights exponential mechanism (Hardt, Ligett and McSherry 2012).

mwem.txt Figure 1 with the practical variations of its s.2.3.3 and s.3.3: measurement reuse,
noisy-histogram initialisation, last iterate or average, and whole-group (marginal) measurement
with a cell-count penalty in the selection score.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_probability
from fastmwem.accounting import Accountant, BoundedRange, PrivacyEvent, PureDP, exact
from fastmwem.data.domain import Domain
from fastmwem.mechanisms.exponential import ExponentialMechanism, PermuteAndFlip
from fastmwem.mechanisms.laplace import Laplace
from fastmwem.mechanisms.seeding import warn_if_seeded
from fastmwem.random import make_rng
from fastmwem.release.result import MWEMResult, RoundRecord
from fastmwem.release.state import MWState
from fastmwem.workloads.base import MAX_DENSE_CELLS, LinearWorkload

__all__ = ["mwem", "MWEMConfig", "mwem_privacy_plan"]

_SELECTORS = {"exponential": ExponentialMechanism, "permute-and-flip": PermuteAndFlip}


@dataclass(frozen=True)
class MWEMConfig:
    """Every public parameter of an MWEM run, validated; its privacy plan follows from it alone.

    Args:
        epsilon: total privacy budget (pure ``epsilon``-DP).
        rounds: number of rounds T (selections and measurements).
        measure: ``"group"`` measures a whole group (a marginal) with one Laplace measurement
            calibrated to the group's L1 sensitivity (mwem.txt s.3.3); ``"query"`` measures
            single queries (Figure 1). ``"auto"`` is ``"group"`` when the workload has groups
            larger than one query.
        reuse_passes: multiplicative-weights passes over all measurements so far after each
            round (s.2.3.3; 0 gives the single update of Figure 1).
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
        selection: ``"exponential"`` (Gumbel-max) or ``"permute-and-flip"``.
        total: a *public* record count, if the data owner publishes one; ``None`` spends
            ``count_fraction`` of epsilon on a Laplace count.
        count_fraction: share of epsilon spent on the noisy record count when ``total`` is None.
    """

    epsilon: float
    rounds: int = 20
    measure: str = "auto"
    reuse_passes: int = 20
    init: str = "uniform"
    init_fraction: float = 0.1
    init_uniform_mix: float = 0.1
    output: str = "last"
    exclude_measured: bool = True
    cell_penalty: float | None = None
    selection: str = "exponential"
    total: int | None = None
    count_fraction: float = 0.01

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_int(self.rounds, "rounds", minimum=1)
        check_int(self.reuse_passes, "reuse_passes", minimum=0)
        _choice(self.measure, "measure", ("auto", "group", "query"))
        _choice(self.init, "init", ("uniform", "noisy-histogram"))
        _choice(self.output, "output", ("last", "average"))
        _choice(self.selection, "selection", tuple(_SELECTORS))
        check_probability(self.init_fraction, "init_fraction")
        check_probability(self.init_uniform_mix, "init_uniform_mix")
        check_probability(self.count_fraction, "count_fraction")
        if not isinstance(self.exclude_measured, bool):
            raise TypeError("exclude_measured must be a bool")
        if self.cell_penalty is not None:
            penalty = float(self.cell_penalty)
            if not np.isfinite(penalty) or penalty < 0:
                raise ValueError(f"cell_penalty must be a finite number >= 0, got {self.cell_penalty}")
        if self.total is not None:
            check_int(self.total, "total", minimum=1)

    # -- the privacy plan --------------------------------------------------------------------
    def budget_split(self) -> dict[str, float]:
        """Epsilon of each step: the noisy count, the initial histogram, and per-round shares.

        Each share is a float rounded *down* from its exact value, and the privacy plan charges
        exactly those floats, so the plan never adds up to more than ``epsilon``.
        """
        eps = exact(self.epsilon, "epsilon")
        count = eps * exact(self.count_fraction, "count_fraction") if self.total is None else 0
        init = (eps * exact(self.init_fraction, "init_fraction")
                if self.init == "noisy-histogram" else 0)
        per_round = (eps - count - init) / self.rounds
        return {
            "count": _float_below(Fraction(count)),
            "init": _float_below(Fraction(init)),
            "select": _float_below(per_round / 2),
            "measure": _float_below(per_round / 2),
        }


def _float_below(value: Fraction) -> float:
    """The largest float that is <= ``value``."""
    out = float(value)
    if Fraction(out) > value:
        out = math.nextafter(out, 0.0)
    return out


def _choice(value: object, name: str, options: tuple[str, ...]) -> None:
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")


def _group_mode(config: MWEMConfig, workload: LinearWorkload) -> bool:
    if config.measure == "auto":
        return bool(np.any(workload.group_sizes() > 1))
    return config.measure == "group"


def mwem_privacy_plan(config: MWEMConfig, workload: LinearWorkload) -> list[tuple[PrivacyEvent, str]]:
    """The ordered list of ``(event, label)`` an MWEM run charges; it depends only on public input.

    Selection rounds are :class:`~fastmwem.accounting.BoundedRange` (exponential mechanism) or
    :class:`~fastmwem.accounting.PureDP` (permute-and-flip); counts and measurements are Laplace
    (``PureDP``). The plan's pure epsilons add up to ``config.epsilon``.
    """
    split = config.budget_split()
    select_event = BoundedRange if config.selection == "exponential" else PureDP
    plan: list[tuple[PrivacyEvent, str]] = []
    # Events hold the exact binary value of each float share, so the plan sums to <= epsilon.
    if split["count"] > 0:
        plan.append((PureDP(Fraction(split["count"])), "record count (Laplace)"))
    if split["init"] > 0:
        plan.append((PureDP(Fraction(split["init"])), "initial histogram (Laplace)"))
    for t in range(1, config.rounds + 1):
        plan.append((select_event(Fraction(split["select"])),
                     f"round {t}: select ({config.selection})"))
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
    progress: bool = False,
    **options: object,
) -> MWEMResult:
    """Run MWEM and return a synthetic distribution that answers ``workload``.

    Each round selects the group (or query) worst answered by the current synthetic
    distribution with the exponential mechanism on ``|q(A) - q(B)|`` (L1 error of a group) at
    ``epsilon_round / 2``, measures it with Laplace noise at ``epsilon_round / 2``, and applies the
    multiplicative-weights update ``A(x) <- A(x) exp(q(x) (m - q(A)) / (2 n))``.

    Privacy: ``epsilon``-DP (pure) under add/remove-one-record neighbours, by basic composition of
    the plan in :func:`mwem_privacy_plan`. Sensitivity: one record moves each query answer by at
    most ``workload.query_sensitivity`` and each group's answers by at most its
    ``group_sensitivity`` in L1; the selection score has the same sensitivity. The record count
    ``n`` is either public (``total=``) or measured with Laplace noise. The whole plan is charged
    to ``accountant`` (a fresh ``Accountant(epsilon=epsilon)`` if none) atomically, before the data
    is read; if it does not fit, nothing is spent and nothing is computed.

    Args:
        dataset: a :class:`fastmwem.data.Dataset` (anything with ``domain`` and ``histogram()``).
        workload: linear queries over the same domain.
        epsilon: total privacy budget.
        rounds: number of rounds T.
        rng: ``None`` (OS entropy, for releases), a Generator, or an integer seed for tests: a
            seed emits a :class:`~fastmwem.mechanisms.seeding.SeededRunWarning` (a
            ``PrivacyLeakWarning``) and the result's report says it is not private.
        accountant: accountant to charge; its ledger is in the result.
        schema: the public :class:`~fastmwem.data.Schema` the dataset was encoded with, so that
            ``result.sample()`` decodes records to raw labels. Its domain must be the dataset's.
        progress: show a progress bar on stderr.
        **options: the other fields of :class:`MWEMConfig`.

    Returns:
        An :class:`MWEMResult`.
    """
    config = MWEMConfig(epsilon=epsilon, rounds=rounds, **options)  # type: ignore[arg-type]
    domain = _check_inputs(dataset, workload)
    group_mode = _group_mode(config, workload)
    n_candidates = workload.n_groups if group_mode else workload.n_queries
    if config.exclude_measured and config.rounds > n_candidates:
        raise ValueError(
            f"rounds ({config.rounds}) exceeds the {n_candidates} candidate "
            f"{'groups' if group_mode else 'queries'} while exclude_measured=True"
        )
    if accountant is None:
        accountant = Accountant(epsilon=config.epsilon)
    elif not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    if schema is not None and getattr(schema, "domain", None) != domain:
        raise ValueError("schema must describe the dataset's domain")
    generator = make_rng(rng)
    seeded = warn_if_seeded(rng, "mwem")
    plan = mwem_privacy_plan(config, workload)
    accountant.compose_all(plan)  # all or nothing, before the data is read

    result = _run(dataset, workload, domain, config, group_mode, generator, accountant, progress,
                  schema)
    return dataclasses.replace(result, seeded=True) if seeded else result


def _check_inputs(dataset: object, workload: LinearWorkload) -> Domain:
    if not isinstance(workload, LinearWorkload):
        raise TypeError(f"workload must be a fastmwem workload, got {type(workload).__name__}")
    domain = getattr(dataset, "domain", None)
    if not isinstance(domain, Domain) or not callable(getattr(dataset, "histogram", None)):
        raise TypeError(f"dataset must be a fastmwem Dataset, got {type(dataset).__name__}")
    if domain != workload.domain:
        raise ValueError(
            f"dataset and workload have different domains: {domain} and {workload.domain}"
        )
    if domain.size > MAX_DENSE_CELLS:
        raise ValueError(
            f"the domain has {domain.size} cells, more than the dense-histogram limit of "
            f"{MAX_DENSE_CELLS} (2**{MAX_DENSE_CELLS.bit_length() - 1}); use fewer attributes or "
            "coarser bins"
        )
    return domain


@dataclass
class _Measurement:
    group: int
    queries: slice
    values: np.ndarray


@dataclass
class _Run:
    state: MWState
    measurements: list[_Measurement] = field(default_factory=list)


def _run(dataset: object, workload: LinearWorkload, domain: Domain, config: MWEMConfig,
         group_mode: bool, rng: np.random.Generator, accountant: Accountant,
         progress: bool, schema: object) -> MWEMResult:
    split = config.budget_split()
    true_hist = dataset.histogram()  # type: ignore[attr-defined]
    if config.total is None:
        total = float(Laplace(epsilon=split["count"]).release(true_hist.sum(), rng=rng))
        total = max(total, 1.0)
    else:
        total = float(config.total)

    if config.init == "noisy-histogram":
        noisy = Laplace(epsilon=split["init"]).release(true_hist, rng=rng)
        state = MWState.from_noisy_histogram(domain, noisy, total, config.init_uniform_mix)
    else:
        state = MWState.uniform(domain, total)

    true_answers = workload.answer(true_hist)
    offsets = workload.group_offsets
    if group_mode:
        sensitivities = np.asarray(workload.group_sensitivity, dtype=np.float64)
        cells = np.diff(offsets).astype(np.float64)
    else:
        sensitivities = np.full(workload.n_queries, float(workload.query_sensitivity))
        cells = np.ones(workload.n_queries)
    score_sensitivity = float(sensitivities.max())
    selector = _SELECTORS[config.selection](epsilon=split["select"], sensitivity=score_sensitivity)
    penalty = config.cell_penalty
    if penalty is None:
        penalty = score_sensitivity / split["measure"] if group_mode else 0.0

    run = _Run(state)
    available = np.ones(cells.size, dtype=bool)
    trace: list[RoundRecord] = []
    iterates = np.zeros(domain.size) if config.output == "average" else None
    rounds = range(1, config.rounds + 1)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(rounds, desc="MWEM", unit="round", leave=False)
        rounds = bar
    for t in rounds:
        started = time.perf_counter()
        errors = np.abs(workload.answer(state.distribution) * state.total - true_answers)
        if group_mode:
            scores = np.add.reduceat(errors, offsets[:-1]) - penalty * cells
        else:
            scores = errors
        if config.exclude_measured:
            candidates = np.flatnonzero(available)
            choice = int(candidates[selector.select(scores[candidates], rng=rng)])
            available[choice] = False
        else:
            choice = selector.select(scores, rng=rng)
        queries = workload.group_queries(choice) if group_mode else slice(choice, choice + 1)
        measure = Laplace(epsilon=split["measure"], sensitivity=float(sensitivities[choice]))
        values = np.atleast_1d(measure.release(true_answers[queries], rng=rng))
        run.measurements.append(_Measurement(choice, queries, values))

        _update(state, workload, run.measurements[-1], group_mode)
        for _ in range(config.reuse_passes):
            for m in run.measurements:
                _update(state, workload, m, group_mode)
        if iterates is not None:
            iterates += state.histogram
        trace.append(RoundRecord(
            round=t,
            selected=choice,
            description=(workload.describe_group(choice) if group_mode
                         else workload.describe(choice)),
            epsilon_select=split["select"],
            epsilon_measure=split["measure"],
            seconds=time.perf_counter() - started,
        ))
    if bar is not None:
        bar.close()
    histogram = state.histogram if iterates is None else iterates / config.rounds
    return MWEMResult(
        domain=domain,
        workload=workload,
        histogram=histogram.copy(),
        total=total,
        selected=tuple(m.group for m in run.measurements),
        measurements=tuple(m.values for m in run.measurements),
        group_mode=group_mode,
        ledger=accountant.ledger,
        privacy=accountant.spent(),
        trace=tuple(trace),
        schema=schema,
    )


def _update(state: MWState, workload: LinearWorkload, measurement: _Measurement,
            group_mode: bool) -> None:
    if group_mode:
        state.update_group(workload, measurement.group, measurement.values)
    else:
        state.update_query(workload, measurement.queries.start, float(measurement.values[0]))
