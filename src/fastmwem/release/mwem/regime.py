"""Small data: the error a measurement is predicted to add, and when rounds cannot help.

A marginal of ``C`` cells measured with noise of expected absolute value ``E|noise|`` per cell
(Laplace of scale ``b``: ``b``; a Gaussian of deviation ``sigma``: ``sqrt(2 / pi) sigma``) gets
an expected L1 error of ``C E|noise|``, while the ``n`` records move its answers by ``n Delta``
in L1 (``Delta`` its sensitivity, 1 for a marginal of counts). The *predicted error* of a
measurement is their ratio, ``C E|noise| / (n Delta)``: the normalised L1 error the noise alone
adds. It reads only public input (the domain, the workload, the budget) and a record count that
is public or already released, so it is post-processing and can be computed before any data is
touched (:func:`predicted_errors`).

The rule (``ONE_WAY_ONLY_ERROR``). A round of MWEM measures one candidate marginal with a part of
the rounds' budget. If even the most accurate candidate of order >= 2, measured alone with the
*whole* budget, has a predicted error of at least 1, its noise's expected L1 mass is at least
the records' own: noise dominates signal, so no round can teach the model anything about how
attributes relate. :func:`~fastmwem.release.mwem_with_defaults` then releases the noisy 1-way
marginals only (``init="one-way"`` with ``rounds=0``) and warns (:class:`SmallDataWarning`).
The constant is where noise and signal have equal L1 mass; it was not tuned on any table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from fastmwem._validation import check_int, check_positive
from fastmwem.accounting import exact, float_below
from fastmwem.data.domain import Domain
from fastmwem.release._privacy import PrivacyDefinition, definition_of, integer_valued
from fastmwem.release.mwem.annealing import expected_abs_noise
from fastmwem.release.selection.candidates import _marginal_groups
from fastmwem.warnings import SmallDataWarning
from fastmwem.workloads.base import LinearWorkload

__all__ = ["MarginalError", "PredictedErrors", "predicted_errors", "signal_rounds",
           "ONE_WAY_ONLY_ERROR",
           "REPORT_MAX_MARGINALS", "REGIME_ROUNDS", "REGIME_ONE_WAY", "SmallDataWarning"]

#: Predicted error (noise L1 mass over the records' own) at or above which a measurement's
#: noise dominates its signal: if every candidate of order >= 2 reaches it with the whole
#: budget, the defaults release the 1-way marginals only.
ONE_WAY_ONLY_ERROR = 1.0
#: Most candidate marginals a summary lists (the most accurate first).
REPORT_MAX_MARGINALS = 100
#: The regimes :func:`~fastmwem.release.mwem_with_defaults` records in its choices.
REGIME_ROUNDS = "rounds"
REGIME_ONE_WAY = "one-way only"


@dataclass(frozen=True)
class MarginalError:
    """One marginal's predicted error.

    Attributes:
        name: the marginal, as the workload describes it.
        attributes: its attributes.
        cells: its number of cells (``C``).
        sensitivity: its L1 sensitivity (``Delta``).
        error: ``C E|noise| / (n Delta)``.
    """

    name: str
    attributes: tuple[str, ...]
    cells: int
    sensitivity: float
    error: float

    def record(self) -> dict[str, object]:
        """JSON-ready: name, cells and predicted error."""
        return {"name": self.name, "cells": self.cells, "predicted_error": self.error}


@dataclass(frozen=True)
class PredictedErrors:
    """Predicted errors of a workload's candidate marginals and of the 1-way marginals.

    Attributes:
        privacy: ``"pure"`` (Laplace noise) or ``"zcdp"`` (discrete Gaussian noise).
        budget: what the measurements may spend: an epsilon, or a rho under zCDP.
        records: the record count (public or released).
        marginals: each candidate measured alone with the whole budget.
        one_way: each 1-way marginal when all ``d`` are measured together with the whole
            budget (``budget / d`` each, sensitivity 1): the product-of-1-way model.
    """

    privacy: str
    budget: float
    records: float
    marginals: tuple[MarginalError, ...]
    one_way: tuple[MarginalError, ...]

    @property
    def best_interaction(self) -> MarginalError | None:
        """The candidate of order >= 2 with the smallest predicted error (``None``: none)."""
        higher = [m for m in self.marginals if len(m.attributes) >= 2]
        return min(higher, key=lambda m: m.error) if higher else None

    @property
    def one_way_error(self) -> float:
        """The mean predicted error of the 1-way marginals measured together."""
        return float(np.mean([m.error for m in self.one_way]))

    @property
    def rounds_can_help(self) -> bool:
        """False when even :attr:`best_interaction` reaches ``ONE_WAY_ONLY_ERROR`` (true when
        there is no candidate of order >= 2: the rule does not apply)."""
        best = self.best_interaction
        return best is None or best.error < ONE_WAY_ONLY_ERROR

    def summary(self, limit: int = REPORT_MAX_MARGINALS) -> dict[str, object]:
        """JSON-ready: the inputs, the rule, the 1-way prediction and the candidates' (at most
        ``limit``, the most accurate first)."""
        ranked = sorted(self.marginals, key=lambda m: m.error)
        best = self.best_interaction
        return {
            "privacy": self.privacy,
            "budget": self.budget,
            "records": self.records,
            "threshold": ONE_WAY_ONLY_ERROR,
            "rounds_can_help": self.rounds_can_help,
            "best_interaction": None if best is None else best.record(),
            "one_way_only": self.one_way_error,
            "one_way": [m.record() for m in self.one_way],
            "marginals": [m.record() for m in ranked[:limit]],
            "marginals_omitted": max(0, len(ranked) - limit),
        }

    def message(self) -> str:
        """The warning of the one-way-only regime (public values only)."""
        best = self.best_interaction
        if best is None:
            raise ValueError("no candidate marginal of order >= 2: the rule does not apply")
        return (f"small data, regime {REGIME_ONE_WAY!r}: rounds cannot help. Measured alone "
                "with the whole budget, even the most accurate candidate of order >= 2 "
                f"({best.name}, {best.cells} cells) has predicted normalised L1 error "
                f"{best.error:.3g} >= "
                f"{ONE_WAY_ONLY_ERROR:g} (its noise outweighs the records), so only the noisy "
                f"1-way marginals are released (predicted error {self.one_way_error:.3g} each, "
                "on average) and the output is their product")


def predicted_errors(domain: Domain, workload: LinearWorkload | Iterable[Sequence[str]], *,
                     budget: float | Fraction, records: float,
                     privacy: str | PrivacyDefinition = "pure") -> PredictedErrors:
    """Predicted errors of measuring each marginal of ``workload`` alone with ``budget``, and of
    the 1-way marginals measured together with it.

    Post-processing: reads only public input and ``records``, which must be public or already
    released (a noisy count); nothing is drawn or charged, and no data is needed.

    Args:
        domain: the public domain.
        workload: a workload of whole marginals (each group one marginal; others have no
            marginal to predict), or the marginals' attribute names (sensitivity 1 each).
        budget: what a measurement may spend: an epsilon (pure), or a rho (zCDP).
        records: the record count (at least 1 is used).
        privacy: ``"pure"`` (Laplace), ``"zcdp"`` (discrete Gaussian) or a definition.

    >>> d = Domain(["a", "b"], [4, 5])
    >>> p = predicted_errors(d, [("a", "b")], budget=0.5, records=100)
    >>> p.marginals[0].error, round(p.one_way_error, 3)  # 20 / 0.5 / 100; (4 + 5) / 2 * 4 / 100
    (0.4, 0.18)
    """
    definition = definition_of(privacy)
    share = _budget(budget)
    check_positive(records, "records")
    if isinstance(workload, LinearWorkload):
        if workload.domain != domain:
            raise ValueError("the workload's domain must be the given domain")
        found = candidate_marginals(workload)
        integer = integer_valued(workload)
    else:
        found = [_named(domain, names) for names in workload]
        integer = True
    return _predict(domain, found, definition, share, float(records), integer)


def candidate_marginals(workload: LinearWorkload, candidates: np.ndarray | None = None
                        ) -> list[tuple[str, tuple[str, ...], int, float]]:
    """``(name, attributes, cells, sensitivity)`` of each distinct marginal group of
    ``workload`` (among ``candidates``, a mask over its groups); none without marginal
    structure."""
    groups = _marginal_groups(workload)
    if groups is None:
        return []
    names, shape = workload.domain.attributes, workload.domain.shape
    sensitivity = np.asarray(workload.group_sensitivity, dtype=np.float64)
    seen: set[tuple[int, ...]] = set()
    found = []
    for g, axes in enumerate(groups):
        if (candidates is not None and not candidates[g]) or axes in seen or not axes:
            continue
        seen.add(axes)
        cells = math.prod(int(shape[a]) for a in axes)
        found.append((workload.describe_group(g), tuple(names[a] for a in axes), cells,
                      float(sensitivity[g])))
    return found


def regime_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The settings of the one-way-only regime: the 1-way start with the whole budget and no
    rounds (``rounds=0`` is given with them; there is no round to test)."""
    return {**config, "init": "one-way", "noise_test": None}


def _predict(domain: Domain, found: list[tuple[str, tuple[str, ...], int, float]],
             definition: PrivacyDefinition, budget: float, records: float,
             integer: bool) -> PredictedErrors:
    records = max(1.0, records)
    noise: dict[tuple[float, float], float] = {}

    def error(cells: int, sensitivity: float, share: float) -> float:
        if sensitivity <= 0:  # nothing to measure: a group of sensitivity 0 is never selected
            return 0.0
        if (sensitivity, share) not in noise:
            mechanism = definition.measurement(share, sensitivity, integer=integer)
            noise[(sensitivity, share)] = expected_abs_noise(mechanism)
        return cells * noise[(sensitivity, share)] / (records * sensitivity)

    marginals = tuple(MarginalError(name, attrs, cells, s, error(cells, s, budget))
                      for name, attrs, cells, s in found)
    each = float_below(Fraction(budget) / len(domain))
    one_way = tuple(MarginalError(f"marginal({a})", (a,), int(k), 1.0, error(int(k), 1.0, each))
                    for a, k in zip(domain.attributes, domain.shape))
    return PredictedErrors(definition.name, budget, records, marginals, one_way)


def signal_rounds(found: list[tuple[str, tuple[str, ...], int, float]],
                  definition: PrivacyDefinition, budget: float, records: float, *,
                  ceiling: int, share: float, select_fraction: float, integer: bool) -> int:
    """The most rounds (in ``[1, ceiling]``) at which a typical pair still carries signal.

    The typical pair is the candidate marginal of order 2 of median cells (of every candidate
    if none has order 2). Measured in one of ``T`` rounds, with ``(1 - select_fraction) /
    T`` of ``budget``, its predicted error (noise L1 mass over the records', as in
    :func:`predicted_errors`) must be at most ``share``. Under pure DP that error grows as
    ``T``, under zCDP as ``sqrt(T)``, so this is a bound on the rounds from the budget, the
    released count and the candidates' sizes alone (public): few rounds on a small table of
    large pairs, where many would each measure mostly noise.

    >>> from fastmwem.release._privacy import definition_of
    >>> pairs = [("m", ("a", "b"), 100, 1.0)]
    >>> signal_rounds(pairs, definition_of("pure"), 1.0, 10_100.0, ceiling=50, share=0.5,
    ...               select_fraction=0.1, integer=True)  # 100 T / (0.9 * 10,100) <= 0.5
    45
    """
    check_int(ceiling, "ceiling", minimum=1)
    pairs = [(c, s) for _, attrs, c, s in found if len(attrs) == 2 and s > 0]
    pool = sorted(pairs or [(c, s) for _, _, c, s in found if s > 0])
    if not pool:
        return int(ceiling)
    cells, sensitivity = pool[(len(pool) - 1) // 2]
    measure = Fraction(budget) * (1 - Fraction(select_fraction))

    def fits(t: int) -> bool:
        mechanism = definition.measurement(float_below(measure / t), sensitivity,
                                           integer=integer)
        return cells * expected_abs_noise(mechanism) <= share * max(records, 1.0) * sensitivity

    low, high = 1, int(ceiling)  # the error grows with t: the largest t that fits, or 1
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def _budget(budget: float | Fraction) -> float:
    value = exact(budget, "budget")
    if not 0 < value or not math.isfinite(float(value)):
        raise ValueError(f"budget must be a finite number > 0, got {float(value)}")
    return float(budget)


def _named(domain: Domain, names: Sequence[str]) -> tuple[str, tuple[str, ...], int, float]:
    attrs = tuple(str(a) for a in ([names] if isinstance(names, str) else names))
    unknown = [a for a in attrs if a not in domain.attributes]
    if unknown or not attrs:
        raise ValueError(f"a marginal must name attributes of the domain, got {list(attrs)}")
    cells = math.prod(int(domain.shape[domain.attributes.index(a)]) for a in attrs)
    return f"marginal({', '.join(attrs)})", attrs, cells, 1.0
