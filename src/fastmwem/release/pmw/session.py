"""Online Private Multiplicative Weights: answer linear queries one at a time.

Hardt and Rothblum 2010 (FOCS), as presented in Ullman's lecture notes "Private Multiplicative
Weights" (the online variant): the curator keeps a synthetic distribution ``p`` (the
multiplicative-weights state shared with MWEM, :class:`~fastmwem.models.state.MWState`). For each
query the sparse vector technique asks whether the synthetic answer is within ``alpha * n`` of the
true one; if so the synthetic answer is released (``source="synthetic"``, no further privacy
cost), otherwise the query is measured with noise (``source="measured"``), ``p`` takes a
multiplicative-weights step towards the measurement, and a new sparse-vector run with a fresh
noisy threshold starts.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol, cast

import numpy as np

from fastmwem.accounting import (
    Accountant,
    BudgetExceededError,
    MemoryLedgerStore,
    PureDP,
)
from fastmwem.data.domain import Domain, check_dense
from fastmwem.mechanisms.laplace import Geometric
from fastmwem.mechanisms.seeding import check_rng
from fastmwem.mechanisms.sparse_vector import MAX_SV_VALUE, SparseVector, SparseVectorRun
from fastmwem.models.state import MWState
from fastmwem.random import RNGLike, make_rng
from fastmwem.release.pmw.plan import (
    COUNT_LABEL,
    EPOCH_LABEL,
    GRID,
    MAX_RECORDS,
    PMWConfig,
    PMWRecord,
    check_record,
)
from fastmwem.release.pmw.queries import query_spec, query_vector
from fastmwem.workloads.base import MAX_QUERY_VALUE

__all__ = ["PMWSession", "PMWConfig", "PMWRecord", "Answer", "SessionExhaustedError",
           "UnstableUpdateError", "GRID", "EPOCH_LABEL", "COUNT_LABEL", "MIN_QUERY_PEAK",
           "check_query", "mw_steps"]


#: Smallest largest-absolute-weight a query may have. Its grid step ``max|q| / GRID`` is then a
#: normal float (at least 2**-1020), and so is every quantity of the test and the update: the
#: multiplicative-weights exponent ``q(x) r / (2 max|q|)`` stays within +-1 and every factor
#: within e^(+-1). A smaller peak would be rounded into subnormal floats or to zero, where the
#: update divides by (almost) nothing and the distribution turns into NaN.
MIN_QUERY_PEAK = 2.0**-1000


class _Records(Protocol):
    """What a session reads from its dataset: a Dataset (checked when the session is set up)."""

    def __len__(self) -> int: ...

    def histogram(self) -> np.ndarray: ...


class SessionExhaustedError(BudgetExceededError):
    """The session has made all of its ``max_updates`` updates; it answers no more queries."""


class UnstableUpdateError(ArithmeticError):
    """A multiplicative-weights step that would leave the distribution non-finite (refused)."""


@dataclass(frozen=True)
class Answer:
    """One released answer.

    Attributes:
        value: the answer (a synthetic answer, or a noisy measurement on the integer grid).
        source: ``"synthetic"`` (from the distribution, no privacy cost beyond the epoch's) or
            ``"measured"`` (a noisy measurement, followed by an update).
        updates: the number of updates made so far, this one included.
        charged: epsilon charged by this call: the sparse-vector run it opened, and the
            measurement it triggered (``source="measured"``), else 0.
    """

    value: float
    source: str
    updates: int
    charged: float = 0.0


@dataclass(frozen=True)
class _Query:
    """A query on the integer grid: ``vector = weights * scale`` is what is answered."""

    spec: dict[str, object]
    weights: np.ndarray  # int64
    scale: float
    sensitivity: int  # max |weights|
    vector: np.ndarray


def _on_grid(spec: dict[str, object], vec: np.ndarray) -> _Query:
    """Integer weights: the query itself when its weights are integers within +-GRID, else
    ``round(q / max|q| * GRID)`` (the answered query then differs by at most 2**-21 of max|q|).

    Raises:
        ValueError: the query's scale cannot be represented (weights not finite, or a largest
            absolute weight outside ``[MIN_QUERY_PEAK, MAX_QUERY_VALUE]``).
    """
    if not np.all(np.isfinite(vec)):
        raise ValueError("query weights must be finite numbers")
    peak = float(np.abs(vec).max())
    if not MIN_QUERY_PEAK <= peak <= MAX_QUERY_VALUE:
        raise ValueError(
            f"the query's largest absolute weight must lie within [2**-1000, {MAX_QUERY_VALUE:g}]: "
            "a query scaled smaller (or larger) cannot be represented in floating point; "
            "multiply its weights by a constant"
        )
    if peak <= GRID and np.array_equal(vec, np.round(vec)):
        weights, scale = vec.astype(np.int64), 1.0
    else:
        weights, scale = np.round(vec / peak * GRID).astype(np.int64), peak / GRID
    return _Query(spec, weights, scale, int(np.abs(weights).max()), weights * scale)


def check_query(domain: Domain, query: object) -> None:
    """Refuse (``ValueError``/``TypeError``) a query a session cannot answer, as
    :meth:`PMWSession.answer` would before any charge: the same checks, nothing spent."""
    _on_grid(query_spec(query), query_vector(domain, query))


def mw_steps(state: MWState, steps: Sequence[tuple[np.ndarray, float]]) -> None:
    """Multiplicative-weights steps towards measurements, in order, all or none.

    Post-processing of the measurements. The state is changed only if every step keeps the
    distribution finite, non-negative and of positive mass; otherwise it is left exactly as it
    was.

    Raises:
        UnstableUpdateError: a step would leave the distribution non-finite (or of zero mass).
    """
    before = state.distribution.copy()
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
            for vector, value in steps:
                state.update_vector(vector, value)
        p = state.distribution
        if not (np.all(np.isfinite(p)) and p.min() >= 0 and p.sum() > 0):
            raise UnstableUpdateError("the multiplicative-weights step would leave the "
                                      "distribution non-finite")
    except (ArithmeticError, ValueError) as exc:
        np.copyto(state.distribution, before)
        if isinstance(exc, UnstableUpdateError):
            raise
        raise UnstableUpdateError("the multiplicative-weights step would leave the "
                                  "distribution non-finite") from None


class PMWSession:
    """An online Private Multiplicative Weights session over a dataset.

    Privacy: ``epsilon``-DP (pure) under add/remove-one-record neighbours for everything the
    session ever releases, to every analyst, by basic composition of: the record count (two-sided
    geometric, ``count`` share, unless ``total`` is public) and ``max_updates`` epochs, each one
    sparse-vector run (:class:`~fastmwem.mechanisms.sparse_vector.SparseVector`, sensitivity
    ``GRID + 1`` on the scaled test statistic) plus one measurement (two-sided geometric on the
    query's integer weights, sensitivity ``max |weights|``). Synthetic answers are
    post-processing. An epoch's sparse vector is charged when the first query after the previous
    update arrives, before its noisy threshold is drawn, and its measurement when a query is
    found inaccurate, before the noise is drawn (labels in :mod:`fastmwem.release.pmw.plan`).
    A query is tested only if the accountant can afford both, so a refused charge comes before
    the data is touched, spends nothing and changes nothing. Released measurements are integers times a public scale, so the noise is
    safe against floating-point attacks.

    Args:
        dataset: a :class:`~fastmwem.data.Dataset` (at most ``MAX_RECORDS`` records).
        epsilon, alpha, max_updates, **options: see :class:`PMWConfig`.
        rng: ``None`` for a release; an integer seed for tests only (it warns).
        accountant: charged for every run and measurement (default
            ``Accountant(epsilon=epsilon)``).

    >>> from fastmwem.data import Dataset, Domain
    >>> ds = Dataset([[0, 1], [1, 1], [1, 0]] * 50, Domain(["a", "b"], [2, 2]))
    >>> s = PMWSession(ds, epsilon=1.0, alpha=0.05, max_updates=5, total=150, rng=np.random.default_rng(0))
    >>> s.answer({"cell": {"a": 1}}).source in ("synthetic", "measured")
    True
    """

    def __init__(self, dataset: object, *, epsilon: float, alpha: float, max_updates: int,
                 rng: RNGLike = None, accountant: Accountant | None = None,
                 **options: Any) -> None:
        config = PMWConfig(epsilon=epsilon, alpha=alpha, max_updates=max_updates, **options)
        self._setup(dataset, PMWRecord(config), rng, accountant)
        self._pay_count()

    @classmethod
    def resume(cls, dataset: object, record: PMWRecord, *, rng: RNGLike = None,
               accountant: Accountant | None = None) -> PMWSession:
        """The session ``record`` describes, in the same state (same distribution, same
        sparse-vector run). Without ``accountant``, the record's ledger is charged again into a
        fresh ``Accountant(epsilon=...)``; with one, its ledger is taken as it stands.
        """
        if not isinstance(record, PMWRecord):
            raise TypeError(f"record must be a PMWRecord, got {type(record).__name__}")
        if accountant is None:
            accountant = Accountant(epsilon=record.config.epsilon,
                                    store=MemoryLedgerStore(record.ledger))
        session = cls.__new__(cls)
        session._setup(dataset, record, rng, accountant)
        session._replay()
        session._pay_count()
        return session

    # -- set-up ----------------------------------------------------------------------------------
    def _setup(self, dataset: object, record: PMWRecord, rng: RNGLike,
               accountant: Accountant | None) -> None:
        domain = getattr(dataset, "domain", None)
        if not isinstance(domain, Domain) or not callable(getattr(dataset, "histogram", None)):
            raise TypeError(f"dataset must be a fastmwem Dataset, got {type(dataset).__name__}")
        check_dense(domain.size, "the domain", "PMWSession keeps a dense histogram")
        records = cast(_Records, dataset)  # a Dataset (checked above)
        # The record count is private: the refusal names the public bound only.
        if len(records) > MAX_RECORDS:
            raise ValueError("PMWSession handles at most 2**40 records")
        if accountant is None:
            accountant = Accountant(epsilon=record.config.epsilon)
        elif not isinstance(accountant, Accountant):
            raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
        check_record(record)
        self.domain = domain
        self.config = record.config
        self.accountant = accountant
        self._dataset = records
        self._record = record
        self._rng = make_rng(rng)
        self.rng_provenance = check_rng(rng, "PMWSession", stacklevel=4)
        self.seeded = "seeded" in self.rng_provenance
        self._histogram: np.ndarray | None = None
        self._measured: list[tuple[np.ndarray, float]] = []
        split = record.config.split()
        self._sv = SparseVector(epsilon=split["sv"], sensitivity=GRID + 1)
        self._run: SparseVectorRun | None = None if record.noisy_threshold is None else self._sv.resume(
            record.noisy_threshold, rng=self._rng)
        self._state: MWState | None = None

    def _pay_count(self) -> None:
        """The record count: public, or paid for (once) and drawn before any query."""
        record = self._record
        if record.total is not None:
            pass
        elif self.config.total is not None:
            record.total = float(self.config.total)
        else:
            split = self.config.split()
            if not record.count_paid:
                self.accountant.compose(PureDP(Fraction(split["count"])), label=COUNT_LABEL)
                record.count_paid = True
            n = len(self._dataset)
            noisy = int(Geometric(epsilon=split["count"]).release(n, rng=self._rng))
            record.total = float(max(1, noisy))  # clipping is post-processing
        if self._state is None:
            self._state = MWState.uniform(self.domain, record.total)

    def _replay(self) -> None:
        """Redo every update in order from the uniform start: the same floats as before."""
        record = self._record
        if record.total is None:
            return
        self._state = MWState.uniform(self.domain, record.total)
        for i, (spec, value) in enumerate(record.measurements, 1):
            try:
                vector = _on_grid(spec, query_vector(self.domain, spec)).vector
            except (ValueError, TypeError) as exc:
                raise ValueError(f"the record's measurement {i} is not a query this session "
                                 f"can answer: {exc}") from None
            self._apply(vector, value)

    # -- state -----------------------------------------------------------------------------------
    @property
    def updates(self) -> int:
        """Updates made so far."""
        return len(self._record.measurements)

    @property
    def updates_left(self) -> int:
        return self.config.max_updates - self.updates

    @property
    def total(self) -> float:
        """The (noisy or public) record count the synthetic answers are scaled to."""
        total = self._record.total
        if total is None:  # set by the constructor (paid for or public) before it returns
            raise RuntimeError("the session has no record count yet")
        return float(total)

    @property
    def distribution(self) -> np.ndarray:
        """A copy of the synthetic distribution (public: post-processing of releases)."""
        return self._mw().distribution.copy()

    @property
    def noisy_threshold(self) -> int | None:
        """The open sparse-vector run's noisy threshold (secret: store it, never release it)."""
        return self._record.noisy_threshold

    def charges_due(self) -> list[tuple[PureDP, str]]:
        """The charges the next query may cause (see :meth:`PMWRecord.charges_due`)."""
        return self._record.charges_due()

    def record(self) -> PMWRecord:
        """A snapshot of the session's state (see :class:`PMWRecord`), ledger included."""
        r = self._record
        return PMWRecord(r.config, r.total, r.count_paid, r.epochs_paid, r.noisy_threshold,
                         list(r.measurements), list(self.accountant.ledger), r.measurement_paid)

    # -- answering -------------------------------------------------------------------------------
    def answer(self, query: object, *, accountant: Accountant | None = None) -> Answer:
        """Answer one query (see :mod:`fastmwem.release.pmw.queries` for the forms).

        ``accountant`` (default: the session's) is charged for the sparse-vector run this query
        opens and the measurement it triggers; it must afford both before the query is tested.

        Raises:
            ValueError, TypeError: the query does not fit the domain, or its scale cannot be
                represented (see :data:`MIN_QUERY_PEAK`); nothing is spent.
            SessionExhaustedError: all ``max_updates`` updates are used.
            BudgetExceededError: the accountant cannot afford the charges this query may
                cause (nothing is spent).
        """
        vec = query_vector(self.domain, query)
        # The scale is checked here, before any charge: past it, no step can go non-finite.
        q = _on_grid(copy.deepcopy(query_spec(query)), vec)
        acc = self.accountant if accountant is None else accountant
        if not isinstance(acc, Accountant):
            raise TypeError(f"accountant must be an Accountant, got {type(acc).__name__}")
        if self.updates >= self.config.max_updates:
            raise SessionExhaustedError(
                f"the session has made all of its max_updates={self.config.max_updates} "
                "updates; it cannot answer further queries"
            )
        record = self._record
        due = record.charges_due()
        # Both charges are checked now: once the data is tested, a refusal would tell its result.
        acc.check_fits(list(due))
        charged = 0.0
        if record.epochs_paid == self.updates:
            event, label = due.pop(0)
            acc.compose(event, label=label)
            record.epochs_paid += 1
            charged = float(event.epsilon)
        if self._run is None:
            threshold = round(self.config.alpha * self.total * GRID)
            self._run = self._sv.start(min(threshold, MAX_SV_VALUE), rng=self._rng)
            record.noisy_threshold = self._run.noisy_threshold
        return self._test_and_answer(q, charged, acc, due)

    def _test_and_answer(self, q: _Query, charged: float, acc: Accountant,
                         due: list[tuple[PureDP, str]]) -> Answer:
        state = self._mw()
        # einsum, not BLAS: a threaded BLAS dot is 100x slower on a busy machine (and a server
        # is busy), and one thread sums in a fixed order.
        synthetic = self.total * float(np.einsum("i,i->", q.vector, state.distribution))
        truth = int(q.weights @ self._counts())
        # The error in grid units of the query's scale: K (synthetic - truth) / max|weights|,
        # rounded exactly with integers; one record moves it by at most GRID + 1.
        diff = round(synthetic / q.scale) - truth
        stat = min(abs((2 * GRID * diff + q.sensitivity) // (2 * q.sensitivity)), MAX_SV_VALUE)
        if not self._open_run().test(stat):
            return Answer(synthetic, "synthetic", self.updates, charged)
        record = self._record
        if not record.measurement_paid:  # checked to fit before the test
            event, label = due[-1]
            acc.compose(event, label=label)
            record.measurement_paid = True
            charged += float(event.epsilon)
        measure = Geometric(epsilon=self.config.split()["measure"], sensitivity=q.sensitivity)
        value = int(measure.release(truth, rng=self._rng)) * q.scale
        record.measurements.append((q.spec, value))
        record.noisy_threshold, record.measurement_paid = None, False
        self._run = None
        self._apply(q.vector, value)
        return Answer(value, "measured", self.updates, charged)

    def _apply(self, vector: np.ndarray, value: float) -> None:
        """One MW step towards a measurement, then the reuse passes over all of them.

        A step the state refuses (:func:`mw_steps`) moves nothing. That cannot happen for a
        query that passed :func:`_on_grid`'s scale check (every factor lies within e^(+-1));
        should it happen, the measurement is still released and counted, which keeps the
        accounting exact (the epoch paid for it), it is left out of later reuse passes, and a
        resume skips it the same way.
        """
        measured = [*self._measured, (vector, value)]
        steps = [(vector, value)] + [m for _ in range(self.config.reuse_passes) for m in measured]
        try:
            mw_steps(self._mw(), steps)
        except UnstableUpdateError:
            warnings.warn("PMWSession: a multiplicative-weights step was refused (it would "
                          "leave the distribution non-finite); the distribution is unchanged",
                          RuntimeWarning, stacklevel=3)
            return
        self._measured = measured

    def _mw(self) -> MWState:
        if self._state is None:
            raise RuntimeError("the session has no record count yet")
        return self._state

    def _open_run(self) -> SparseVectorRun:
        if self._run is None:
            raise RuntimeError("no sparse-vector run is open")
        return self._run

    def _counts(self) -> np.ndarray:
        if self._histogram is None:
            self._histogram = np.rint(self._dataset.histogram()).astype(np.int64)
        return self._histogram
