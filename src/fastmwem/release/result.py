"""The record an MWEM run returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, SupportsFloat, cast

import numpy as np

from fastmwem._validation import check_int, check_memory
from fastmwem.accounting import LedgerEntry, PrivacyEvent, ledger_records
from fastmwem.data.domain import Domain
from fastmwem.models.factored import FactoredState, marginal_axes
from fastmwem.models.matching import match_bytes, scored_sets
from fastmwem.models.sampling import check_sampling
from fastmwem.models.state import SyntheticState, sample_records
from fastmwem.random import RNGLike, make_rng
from fastmwem.release.mwem.config import MWEMConfig
from fastmwem.workloads.base import LinearWorkload

if TYPE_CHECKING:
    import pandas as pd

    from fastmwem.data.schema import Schema

__all__ = ["MWEMResult", "MWEMChoices", "RoundRecord", "sample_records", "CHUNK_ROWS"]

#: Records drawn at a time by :meth:`MWEMResult.sample_chunks`.
CHUNK_ROWS = 10**6

# Seconds of sampling (MWEMResult.sample_seconds): per record and attribute drawn, and for
# matching, a start (the model's marginals by inference, the compiled loop) and per record and
# scored marginal. Measured on 2 loaded cores, 3-way marginals: adult (factored, 364 sets)
# 48,936 matched records in 28 s wall, 20,000 in 12 s and 5,000 in 34 s as a first draw; NLTCS
# (dense, 560 sets) 21,668 in 3.5 s; systematic draws of 20,000 adult records 0.07 s.
_SECONDS_PER_RECORD_VALUE = 2e-7
_MATCH_DENSE = (0.5, 3e-7)  # start, per record and set
_MATCH_FACTORED = (12.0, 1e-6)


@dataclass(frozen=True)
class RoundRecord:
    """What one round did (no true answers or errors of the private data).

    ``seconds`` is the round's wall time. It stays out of the report: the time of a lazy
    round depends on the data (how far its top-k search and tail draws go). A zCDP round has
    ``rho_measure`` (the discrete Gaussian's rho) instead of ``epsilon_measure``; ``noise_scale``
    is the measurement's Laplace scale or Gaussian sigma. Round 0 records the 1-way marginals an adaptive run measures first.
    ``grid`` is the public grid that a pure-DP measurement of real-valued queries lies on
    (``None`` when the measurement is integers, as for counts and every zCDP measurement).
    """

    round: int
    selected: int
    description: str
    epsilon_select: float
    epsilon_measure: float | None
    seconds: float
    rho_measure: float | None = None
    noise_scale: float | None = None
    grid: float | None = None


@dataclass(frozen=True)
class MWEMChoices:
    """What :func:`mwem_with_defaults` chose, for the run's report (all public or already released).

    Attributes:
        rounds: the number of rounds run (an adaptive run's, known after it).
        rounds_default: whether the rounds came from the default (else from the caller).
        rounds_ceiling: the most rounds the rule could choose (fixed rounds), or ``None``.
        noise_test: the significance level of the first-round noise test, or None.
        count_epsilon: the budget spent on the record count (0 if the count was public): an
            epsilon (pure DP) or a rho (zCDP).
        adaptive: whether rounds and budgets were chosen as the run went (``rounds=None`` under
            zCDP, ``rounds="adaptive"``).
        record_count: the released (or public) record count the rows default to.
        candidates: what the rounds selected among: ``"supersets"`` when the rounds rule chose
            them (see :func:`superset_rounds`), else the ``candidates`` option as given.
        reuse_passes: the most reuse passes per round (``AUTO_REUSE_PASSES`` unless given,
            or a zCDP run on a dense model: ``MWEMConfig``'s 20).
        regime: ``"rounds"``, or ``"one-way only"`` when the default rounds found that no
            round could help and released the noisy 1-way marginals alone
            (:mod:`fastmwem.release.mwem.regime`).
        predicted_errors: with the default rounds, the predictions that rule read
            (:meth:`~fastmwem.release.mwem.regime.PredictedErrors.summary`: each candidate
            marginal's predicted error with the whole budget, and the 1-way marginals'), or
            ``None``.
        estimator: the estimator run (``MWEMConfig.estimator``: given, or the default's
            ``DEFAULT_ESTIMATOR`` for the definition and model).
    """

    rounds: int
    rounds_default: bool
    rounds_ceiling: int | None
    noise_test: float | None
    count_epsilon: float
    adaptive: bool = False
    record_count: float = 0.0
    candidates: str = "auto"
    reuse_passes: int = MWEMConfig.reuse_passes
    regime: str = "rounds"
    predicted_errors: dict[str, object] | None = None
    estimator: str = "passes"


@dataclass(frozen=True)
class MWEMResult:
    """Synthetic data from MWEM, with everything it released and what it spent.

    Attributes:
        domain: the domain of the synthetic data.
        workload: the workload it was fitted to.
        histogram: synthetic counts per cell (flat, C order), summing to ``total``; ``None``
            when the run kept a factored model (see ``model``).
        total: the (noisy or public) record count.
        selected: the group (or query) chosen in each round.
        measurements: the noisy answers measured in each round.
        group_mode: whether ``selected`` indexes groups (True) or single queries.
        ledger: the accountant's ledger after the run.
        privacy: the accountant's total spend after the run.
        trace: one :class:`RoundRecord` per round.
        schema: the public Schema that decodes sampled records, if one was given.
        rng_provenance: why the run's randomness is not private
            (:func:`~fastmwem.mechanisms.seeding.rng_provenance`): ``("seeded",)`` for an
            integer seed, ``("caller_rng",)`` for a caller's generator, ``()`` for randomness
            from the operating system. The report says so; ``seeded`` reads the first.
        updates_skipped: whether the first measurement lay within its noise of the start
            (``MWEMConfig.noise_test``), so that no update was made and the output is the start.
        measured_workload: the workload whose groups ``selected`` and the trace index, when it
            is not ``workload`` (a factored run may also measure sub-marginals), else ``None``.
        model: the factored synthetic distribution
            (:class:`~fastmwem.models.factored.FactoredState`) of a run on a large domain, or
            ``None`` when ``histogram`` holds it.
        guarantee: the guarantee this run's charges give: ``{"definition": "pure",
            "epsilon"}`` or ``{"definition": "zcdp", "rho", "epsilon", "delta"}`` (epsilon and
            delta when a delta was given).
        round_ledger: an adaptive run's charges within its ceiling, round by round (the
            caller's ledger holds the ceiling); empty for fixed rounds.
        choices: what :func:`~fastmwem.release.mwem_with_defaults` chose (public input and
            the released count only), or ``None`` for a plain :func:`~fastmwem.release.mwem`.
    """

    domain: Domain
    workload: LinearWorkload
    histogram: np.ndarray | None
    total: float
    selected: tuple[int, ...]
    measurements: tuple[np.ndarray, ...]
    group_mode: bool
    ledger: tuple[LedgerEntry, ...]
    privacy: PrivacyEvent
    trace: tuple[RoundRecord, ...]
    schema: Schema | None = None
    rng_provenance: tuple[str, ...] = ()
    updates_skipped: bool = False
    model: SyntheticState | None = None
    measured_workload: LinearWorkload | None = None
    guarantee: dict[str, object] | None = None
    round_ledger: tuple[LedgerEntry, ...] = ()
    choices: MWEMChoices | None = None

    @property
    def seeded(self) -> bool:
        """Whether the run drew its noise from an integer seed."""
        return "seeded" in self.rng_provenance

    @property
    def _factored(self) -> SyntheticState:
        """The model of a result without a histogram (a release sets exactly one of the two)."""
        return cast(SyntheticState, self.model)

    @property
    def distribution(self) -> np.ndarray:
        """The synthetic distribution over every cell (dense runs only)."""
        if self.histogram is None:
            raise ValueError(
                f"this synthetic distribution is factored ({self._factored.kind}, "
                f"{self.domain.size} cells): use answer() or sample(), not a dense histogram")
        return self.histogram / self.histogram.sum()

    def answer(self, workload: LinearWorkload | None = None) -> np.ndarray:
        """Answers (counts) of ``workload`` (default: the fitted one) on the synthetic data.

        A factored model answers workloads with a marginal structure, by inference.
        """
        w = self.workload if workload is None else workload
        if w.domain != self.domain:
            raise ValueError("workload has a different domain from the synthetic data")
        if self.histogram is None:
            return self._factored.answer(w) * self.total
        return w.answer(self.histogram)

    def sample(self, n: int | None = None, *, rng: RNGLike = None, decode: bool = True,
               sampling: str = "matched") -> pd.DataFrame:
        """Draw ``n`` synthetic records (default: the rounded record count).

        ``sampling="systematic"`` gives every cell (of a factored model: every clique cell,
        within each separator value) ``floor`` or ``ceil`` of its expected count, and each
        record's law is the synthetic distribution (:mod:`fastmwem.models.sampling`).
        ``"matched"`` (the default) then moves values of the records until their marginals on
        the workload's attribute sets are what the model says, to integer rounding
        (:mod:`fastmwem.models.matching`): the records answer the workload almost exactly as
        the model does, though they are no longer draws from it one by one. ``"independent"``
        draws the records independently (a multinomial). With a schema, codes are decoded to
        the raw labels unless ``decode=False``.

        Raises:
            ResourceLimitError: (a ``ValueError``) the records would not fit in memory; checked
                before anything is drawn.
        """
        method = check_sampling(sampling)
        count = self._count(n)
        self._check_memory(count, method)
        return self._draw(count, make_rng(rng), decode, method)

    def sample_chunks(self, n: int | None = None, *, rng: RNGLike = None, decode: bool = True,
                      chunk_rows: int | None = None, sampling: str = "matched"
                      ) -> Iterator[pd.DataFrame]:
        """Draw ``n`` synthetic records (default: the rounded record count) in blocks.

        Each block of at most ``chunk_rows`` records is drawn as by :meth:`sample` (with
        ``sampling``), independently of the other blocks, while memory holds one block at a
        time: any ``n`` can be streamed to a file. ``chunk_rows`` defaults to
        :data:`CHUNK_ROWS`. Arguments and memory are checked here, before the first block is
        drawn.
        """
        method = check_sampling(sampling)
        count = self._count(n)
        chunk_rows = CHUNK_ROWS if chunk_rows is None else chunk_rows
        size = min(count, check_int(chunk_rows, "chunk_rows", minimum=1))
        self._check_memory(size, method)
        return self._blocks(count, size, make_rng(rng), decode, method)

    def _blocks(self, count: int, size: int, generator: np.random.Generator,
                decode: bool, method: str) -> Iterator[pd.DataFrame]:
        done = 0
        while True:
            block = min(size, count - done)
            yield self._draw(block, generator, decode, method)
            done += block
            if done >= count:
                return

    def sample_seconds(self, n: int | None = None, *, sampling: str = "matched") -> float:
        """A rough time for :meth:`sample` of ``n`` records, from public sizes only (the rows,
        the attributes, the marginals matched and the kind of model), for a progress bar."""
        method = check_sampling(sampling)
        count = self._count(n)
        seconds = count * len(self.domain) * _SECONDS_PER_RECORD_VALUE
        if method == "matched":
            sets = len(scored_sets(marginal_axes(self.workload) or [], self.domain.shape))
            start, per_set = _MATCH_DENSE if self.histogram is not None else _MATCH_FACTORED
            seconds += start + count * sets * per_set
        return float(seconds)

    def _count(self, n: int | None) -> int:
        return max(1, int(round(self.total))) if n is None else check_int(n, "n", minimum=0)

    def _check_memory(self, count: int, method: str) -> None:
        # Cell indices (drawn, shuffled) and one int64 column per attribute, plus a copy; and
        # what matching the records to the model's marginals keeps.
        extra = (match_bytes(marginal_axes(self.workload) or [], self.domain.shape)
                 if method == "matched" else 0)
        check_memory(count * (16 + 24 * len(self.domain)) + extra, f"sampling {count} records")

    def _draw(self, count: int, generator: np.random.Generator, decode: bool,
              method: str) -> pd.DataFrame:
        systematic = method != "independent"
        match = (marginal_axes(self.workload) or []) if method == "matched" else []
        if self.histogram is None:
            frame = self._factored.sample(count, generator, systematic=systematic, match=match)
        else:
            frame = sample_records(self.histogram, self.domain, count, generator,
                                   systematic=systematic, match=match)
        if decode and self.schema is not None:
            return self.schema.decode(frame)
        return frame

    def report(self) -> dict[str, object]:
        """A JSON-ready record of the private outputs and the privacy ledger only (no timings).

        ``"private"`` is false, with the reasons in ``"not_private_because"``, when the run was
        seeded or drew from a caller's generator, or a step has no exact guarantee (a lazy
        selection over an uncertified approximate oracle, run with ``allow_uncertified=True``).
        The seed itself is never recorded.
        """
        reasons = list(self.rng_provenance)
        if any(getattr(e.event, "exact_guarantee", True) is False for e in self.ledger):
            reasons.append("uncertified approximate top-k oracle")
        return {
            "private": not reasons,
            "not_private_because": reasons,
            "privacy": self._privacy_record(),
            "domain": self.domain.to_dict(),
            "model": self._model_record(),
            # rounded: the released count is post-processing of integer measurements
            "record_count": int(round(self.total)),
            "updates_skipped": self.updates_skipped,
            "rounds": [
                {
                    "round": r.round,
                    "selected": r.selected,
                    "description": r.description,
                    "measurement": [released_number(v) for v in m],
                    "epsilon_select": r.epsilon_select,
                    "epsilon_measure": r.epsilon_measure,
                    **({} if r.rho_measure is None else {"rho_measure": r.rho_measure}),
                    **({} if r.grid is None else {"measurement_grid": r.grid}),
                }
                for r, m in zip(self.trace, self.measurements[self._start_count():])
            ],
            **self._start_record(),
            # public: chosen from public input and the released count
            **({} if self.choices is None else {"choices": dataclasses.asdict(self.choices)}),
        }

    def _start_count(self) -> int:
        """How many measurements precede the rounds (a one-way start's, which no round traces)."""
        return max(len(self.measurements) - len(self.trace), 0)

    def _start_record(self) -> dict[str, object]:
        """The start's measurements (the 1-way marginals of ``init="one-way"``), if any."""
        count = self._start_count()
        if not count:
            return {}
        workload = self.measured_workload or self.workload
        return {"start": [
            {"selected": int(g), "description": workload.describe_group(int(g)),
             "measurement": [released_number(v) for v in m]}
            for g, m in zip(self.selected[:count], self.measurements[:count])]}

    def _privacy_record(self) -> dict[str, object]:
        """The guarantee, what the accountant spent, its ledger, and an adaptive run's rounds."""
        record: dict[str, object] = dict(self.guarantee or {})
        record["spent"] = repr(self.privacy)
        record["ledger"] = ledger_records(self.ledger)
        if self.round_ledger:
            record["round_ledger"] = ledger_records(self.round_ledger)
        return record

    def _model_record(self) -> dict[str, object]:
        """The kind of synthetic model and, when factored, its cliques (public structure)."""
        if self.model is None:
            return {"kind": "dense"}
        # A model kept instead of a dense histogram is a factored one.
        factored = cast(FactoredState, self.model)
        return {"kind": factored.kind, "cliques": [list(c) for c in factored.cliques]}


def released_number(value: SupportsFloat) -> int | float:
    """A noisy value as JSON writes it: an ``int`` when it is one (integer noise), else a float.

    >>> released_number(3.0), released_number(0.5)
    (3, 0.5)
    """
    number = float(value)
    return int(number) if number.is_integer() else number
