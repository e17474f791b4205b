"""Private Multiplicative Weights, offline: the variant Fast-MWEM accelerates.

Hardt and Rothblum's private multiplicative weights as taught in Ullman's lecture notes
("Private Multiplicative Weights") and as Algorithms 1-2 of Fast-MWEM (Haris, Choi and
Laksanawisit 2026, arXiv:2602.03732): no noisy measurements, only selections. Each round the
exponential mechanism picks, over the complement-closed query set ``{q} U {-q}``, a query on which
the synthetic distribution most over-estimates the data (signed score
``<q, n_hat p_t - h>``), and the multiplicative-weights step with loss ``q`` moves mass off it.
The output is the average of the iterates.

With ``selection="lazy"`` the choice is made by the lazy exponential mechanism over an exact
top-k oracle, whose output law is exactly the exponential mechanism's: same privacy, same
accuracy, a round sublinear in the number of queries when the oracle is.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_probability
from fastmwem.accounting import (
    Accountant,
    ApproxDP,
    BoundedRange,
    PrivacyEvent,
    PureDP,
    advanced_composition,
    approx_dp_to_zcdp_budget,
    exact,
    float_below,
    per_round_epsilon,
)
from fastmwem.data.domain import Domain, check_dense
from fastmwem.mechanisms.exponential import ExponentialMechanism
from fastmwem.mechanisms.laplace import Laplace
from fastmwem.mechanisms.lazy import Uncertified
from fastmwem.mechanisms.seeding import check_rng
from fastmwem.random import RNGLike, make_rng
from fastmwem.release._protocol import as_linear_workload
from fastmwem.release.mwem.setup import check_release_inputs
from fastmwem.release.result import MWEMResult, RoundRecord

if TYPE_CHECKING:
    from fastmwem.data.schema import Schema
    from fastmwem.workloads.base import LinearWorkload

__all__ = ["OfflinePMWConfig", "pmw_offline", "pmw_offline_privacy_plan", "MAX_LEARNING_RATE"]

#: Largest MW step ``eta``. A step multiplies cells by up to ``exp(+-eta)``: far below the float
#: range's ``exp(709)``, so no update can overflow, or erase the whole distribution at once.
MAX_LEARNING_RATE = 100.0


class _Histogram(Protocol):
    """What a run reads from its dataset."""

    def histogram(self) -> np.ndarray: ...


@dataclass(frozen=True)
class OfflinePMWConfig:
    """Public parameters of an offline private-multiplicative-weights run.

    Args:
        epsilon, delta: the total ``(epsilon, delta)``-DP budget (add/remove-one neighbours).
        rounds: the number of rounds T.
        composition: ``"zcdp"`` (each selection is ``epsilon0``-bounded range, hence
            ``epsilon0**2 / 8``-zCDP; the sum is converted to ``(epsilon, delta)``) or
            ``"advanced"`` (Dwork-Rothblum-Vadhan over T ``epsilon0``-DP rounds).
        selection: ``"exponential"`` (scan all ``2m`` scores) or ``"lazy"`` (top-k oracle).
        index: oracle for ``"lazy"`` (see :class:`fastmwem.release.selection.LazySelection`).
        k: top-k size for ``"lazy"`` (default ``ceil(sqrt(2m))``).
        allow_uncertified: let ``"lazy"`` run over an approximate index without a certified gap
            (HNSW, IVF). Such a run has NO privacy guarantee; its rounds are recorded as
            :class:`~fastmwem.mechanisms.Uncertified` (zCDP) or labelled so (advanced).
        learning_rate: the MW step ``eta`` (default ``sqrt(ln |X| / T)``, the lecture's choice;
            at most ``MAX_LEARNING_RATE``).
        total: a public record count; ``None`` spends ``count_fraction`` of epsilon on a Laplace
            count.
        count_fraction: the share of epsilon for the noisy count.
    """

    epsilon: float
    delta: float
    rounds: int = 100
    composition: str = "zcdp"
    selection: str = "exponential"
    index: object = None
    k: int | None = None
    allow_uncertified: bool = False
    learning_rate: float | None = None
    total: int | None = None
    count_fraction: float = 0.01

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_probability(self.delta, "delta")
        check_int(self.rounds, "rounds", minimum=1)
        if self.composition not in ("zcdp", "advanced"):
            raise ValueError(f"composition must be 'zcdp' or 'advanced', got {self.composition!r}")
        if self.selection not in ("exponential", "lazy"):
            raise ValueError(f"selection must be 'exponential' or 'lazy', got {self.selection!r}")
        if not isinstance(self.allow_uncertified, bool):
            raise TypeError("allow_uncertified must be a bool, got "
                            f"{type(self.allow_uncertified).__name__}")
        if self.selection != "lazy" and (self.index is not None or self.k is not None
                                         or self.allow_uncertified):
            raise ValueError("index=, k= and allow_uncertified= apply to selection='lazy' only")
        if self.k is not None:
            check_int(self.k, "k", minimum=1)
        if self.learning_rate is not None:
            rate = float(self.learning_rate)
            if not math.isfinite(rate) or rate <= 0 or rate > MAX_LEARNING_RATE:
                raise ValueError(f"learning_rate must be a number in (0, {MAX_LEARNING_RATE:g}], "
                                 f"got {rate}")
        if self.total is not None:
            check_int(self.total, "total", minimum=1)
        check_probability(self.count_fraction, "count_fraction")

    def count_epsilon(self) -> float:
        """Epsilon of the noisy record count (0 with a public ``total``), rounded down."""
        if self.total is not None:
            return 0.0
        share = exact(self.epsilon, "epsilon") * exact(self.count_fraction, "count_fraction")
        return float_below(share)

    def round_epsilon(self) -> float:
        """The largest per-round ``epsilon0`` whose plan fits ``(epsilon, delta)``."""
        count = self.count_epsilon()
        if self.composition == "advanced":
            rest = exact(self.epsilon, "epsilon") - Fraction(count)
            return per_round_epsilon(rest, self.rounds, self.delta, method="advanced")
        rho = approx_dp_to_zcdp_budget(self.epsilon, self.delta) - Fraction(count) ** 2 / 2
        if rho <= 0:
            raise ValueError("the record count's share leaves no budget for the rounds")
        eps0 = math.sqrt(8.0 * float(rho) / self.rounds)
        # Step down until the exact plan provably fits (float rounding of the square root).
        while Fraction(eps0) ** 2 * self.rounds / 8 > rho:
            eps0 = math.nextafter(eps0, 0.0)
        return eps0



def pmw_offline_privacy_plan(config: OfflinePMWConfig, *,
                     certified: bool = True) -> list[tuple[PrivacyEvent, str]]:
    """The ``(event, label)`` list a run charges, from public parameters only.

    ``certified=False`` (an approximate oracle run with ``allow_uncertified``) records the rounds
    as carrying no privacy guarantee.
    """
    plan: list[tuple[PrivacyEvent, str]] = []
    warning = "" if certified else " (uncertified oracle: NO privacy guarantee)"
    count = config.count_epsilon()
    if count > 0:
        plan.append((PureDP(Fraction(count)), "record count (Laplace)"))
    eps0 = config.round_epsilon()
    if config.composition == "advanced":
        eps_all, delta_all = advanced_composition(eps0, config.rounds, config.delta)
        plan.append((ApproxDP(eps_all, delta_all), f"{config.rounds} rounds: select "
                     f"({config.selection}), advanced composition{warning}"))
    else:
        event = BoundedRange if certified else Uncertified
        for t in range(1, config.rounds + 1):
            plan.append((event(Fraction(eps0)),
                         f"round {t}: select ({config.selection}){warning}"))
    return plan


def _accountant_for(config: OfflinePMWConfig) -> Accountant:
    if config.composition == "zcdp":
        return Accountant(epsilon=config.epsilon, delta=config.delta, composition="zcdp")
    return Accountant(epsilon=config.epsilon, delta=config.delta)


def pmw_offline(dataset: object, workload: LinearWorkload, *, epsilon: float, delta: float, rounds: int = 100,
        rng: RNGLike = None, accountant: Accountant | None = None, schema: Schema | None = None,
        **options: Any) -> MWEMResult:
    """Offline private multiplicative weights (Fast-MWEM Algorithm 2 with ``selection="lazy"``).

    Privacy: ``(epsilon, delta)``-DP under add/remove-one-record neighbours. Each round is one
    exponential mechanism at ``epsilon0`` over ``2m`` candidates with score
    ``+-<q, n_hat p_t - h>``, whose sensitivity is the workload's ``query_sensitivity`` (one
    record moves ``h`` by one cell; ``n_hat p_t`` is post-processing of earlier outputs). The
    rounds compose by zCDP (bounded range) or advanced composition; the noisy count is pure DP.
    The whole plan is charged before the data is read.

    Utility (lecture notes): the averaged distribution answers every query within
    ``2 sqrt(ln|X| / T) + 2 ln(2m) / (epsilon0 n)`` in expectation (normalised answers).

    Args:
        dataset: a :class:`~fastmwem.data.Dataset`.
        workload: the queries (``query_sensitivity`` bounds ``|q(x)|``): a
            :class:`~fastmwem.workloads.LinearWorkload` or any object satisfying the
            :class:`~fastmwem.workloads.Workload` protocol.
        epsilon, delta: total budget.
        rounds: T.
        rng: seed (tests only) or Generator.
        accountant: charged with the plan; default a fresh one of the right kind.
        schema: decodes sampled records, as in :func:`fastmwem.mwem`.
        **options: other fields of :class:`OfflinePMWConfig`.

    Returns:
        An :class:`~fastmwem.release.result.MWEMResult` whose ``measurements`` are empty and whose
        ``selected`` ids run over ``2m`` candidates (``j >= m`` is the negated query ``j - m``).
    """
    config = OfflinePMWConfig(epsilon=epsilon, delta=delta, rounds=rounds, **options)
    workload = as_linear_workload(workload)
    domain = check_release_inputs(dataset, workload)
    check_dense(domain.size, "the domain", "pmw_offline keeps a dense histogram")
    chooser = _make_chooser(config, workload)
    plan = pmw_offline_privacy_plan(config, certified=chooser.certified)
    if accountant is None:
        accountant = _accountant_for(config)
    elif not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    generator = make_rng(rng)
    provenance = check_rng(rng, "pmw_offline")
    accountant.compose_all(plan)  # all or nothing, before the data is read
    # a Dataset (check_release_inputs); the dense run reads its histogram
    result = _run(cast(_Histogram, dataset), workload, domain, config, chooser, generator,
                  accountant, schema)
    return dataclasses.replace(result, rng_provenance=provenance)


class _ScanChooser:
    """Exponential mechanism over all ``2m`` signed scores (the classic round)."""

    def __init__(self, workload: LinearWorkload, epsilon0: float) -> None:
        self.workload = workload
        self.mechanism = ExponentialMechanism(
            epsilon=epsilon0, sensitivity=float(workload.query_sensitivity))
        self.true_answers: np.ndarray | None = None
        self.certified = True

    def bind(self, true_hist: np.ndarray) -> None:
        self.true_answers = self.workload.answer(true_hist)

    def choose(self, synthetic: np.ndarray, true_hist: np.ndarray,
               rng: np.random.Generator) -> int:
        signed = self.workload.answer(synthetic) - self.true_answers
        return self.mechanism.select(np.concatenate([signed, -signed]), rng=rng)


class _LazyChooser:
    """The lazy exponential mechanism over the complement-closed keys (same law)."""

    def __init__(self, workload: LinearWorkload, epsilon0: float, index: object, k: int | None,
                 allow_uncertified: bool = False) -> None:
        from fastmwem.mechanisms.lazy import LazyExponentialMechanism
        from fastmwem.release.selection.oracles import workload_oracle

        oracle = workload_oracle(workload, index, allow_uncertified=allow_uncertified)
        self.mechanism = LazyExponentialMechanism(
            oracle, epsilon=epsilon0, sensitivity=float(workload.query_sensitivity),
            complement=True, k=k, allow_uncertified=allow_uncertified)
        self.certified = self.mechanism.exact_guarantee

    def bind(self, true_hist: np.ndarray) -> None:
        return None

    def choose(self, synthetic: np.ndarray, true_hist: np.ndarray,
               rng: np.random.Generator) -> int:
        return int(self.mechanism.select(synthetic - true_hist, rng=rng))


def _make_chooser(config: OfflinePMWConfig, workload: LinearWorkload) -> _ScanChooser | _LazyChooser:
    eps0 = config.round_epsilon()
    if config.selection == "lazy":
        return _LazyChooser(workload, eps0, config.index, config.k, config.allow_uncertified)
    return _ScanChooser(workload, eps0)


def _run(dataset: _Histogram, workload: LinearWorkload, domain: Domain, config: OfflinePMWConfig,
         chooser: _ScanChooser | _LazyChooser, rng: np.random.Generator,
         accountant: Accountant, schema: Schema | None) -> MWEMResult:
    true_hist = np.asarray(dataset.histogram(), dtype=np.float64)
    if config.total is None:
        noisy = Laplace(epsilon=config.count_epsilon(), integer=True).release(
            float(true_hist.sum()), rng=rng)
        total = max(float(noisy), 1.0)
    else:
        total = float(config.total)
    chooser.bind(true_hist)
    size = domain.size
    eta = (config.learning_rate if config.learning_rate is not None
           else math.sqrt(math.log(size) / config.rounds) if size > 1 else 1.0)
    m = workload.n_queries
    scale = float(workload.query_sensitivity)
    offsets = np.asarray(workload.group_offsets)
    p = np.full(size, 1.0 / size)
    average = np.zeros(size)
    selected: list[int] = []
    trace: list[RoundRecord] = []
    eps0 = config.round_epsilon()
    for t in range(1, config.rounds + 1):
        started = time.perf_counter()
        average += p
        choice = chooser.choose(total * p, true_hist, rng)
        query, sign = (choice, 1.0) if choice < m else (choice - m, -1.0)
        # Loss +-q / sensitivity in [-1, 1]: move mass off the over-estimated side.
        group = int(np.searchsorted(offsets, query, side="right") - 1)
        factors = np.zeros(int(offsets[group + 1] - offsets[group]))
        factors[query - int(offsets[group])] = -sign * eta / scale
        workload.multiply_group(p, group, factors)
        p /= p.sum()
        selected.append(choice)
        trace.append(RoundRecord(round=t, selected=choice,
                                 description=("-" if sign < 0 else "") + workload.describe(query),
                                 epsilon_select=eps0, epsilon_measure=0.0,
                                 seconds=time.perf_counter() - started))
    histogram = total * average / config.rounds
    return MWEMResult(domain=domain, workload=workload, histogram=histogram, total=total,
                      selected=tuple(selected), measurements=tuple(np.empty(0) for _ in selected),
                      group_mode=False, ledger=accountant.ledger, privacy=accountant.spent(),
                      trace=tuple(trace), schema=schema)
