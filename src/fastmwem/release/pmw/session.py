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
import json
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol, cast

import numpy as np

from fastmwem._deprecation import warn_renamed
from fastmwem._validation import check_epsilon, check_int, check_probability
from fastmwem.accounting import (
    Accountant,
    BudgetExceededError,
    LedgerEntry,
    MemoryLedgerStore,
    PureDP,
    entry_from_record,
    entry_to_record,
    exact,
)
from fastmwem.data.domain import Domain, check_dense
from fastmwem.data.io.files import load_json
from fastmwem.mechanisms.laplace import Geometric
from fastmwem.mechanisms.seeding import check_rng
from fastmwem.mechanisms.sparse_vector import MAX_SV_VALUE, SparseVector, SparseVectorRun
from fastmwem.models.state import MWState
from fastmwem.random import RNGLike, make_rng
from fastmwem.release.pmw.queries import query_spec, query_vector
from fastmwem.workloads.base import MAX_QUERY_VALUE

__all__ = ["PMWSession", "PMWConfig", "PMWRecord", "Answer", "SessionExhaustedError",
           "UnstableUpdateError", "GRID", "EPOCH_LABEL", "COUNT_LABEL", "MIN_QUERY_PEAK",
           "check_query", "mw_steps"]

#: Each query is scaled to integer weights within +-GRID (2**20) for the sparse-vector test and
#: for non-integer measurements, so that every noisy comparison and release is on integers.
GRID = 2**20

#: Largest record count: counts times GRID stay far inside int64.
MAX_RECORDS = 2**40

#: Smallest largest-absolute-weight a query may have. Its grid step ``max|q| / GRID`` is then a
#: normal float (at least 2**-1020), and so is every quantity of the test and the update: the
#: multiplicative-weights exponent ``q(x) r / (2 max|q|)`` stays within +-1 and every factor
#: within e^(+-1). A smaller peak would be rounded into subnormal floats or to zero, where the
#: update divides by (almost) nothing and the distribution turns into NaN.
MIN_QUERY_PEAK = 2.0**-1000

#: Ledger labels of the session's charges (a store reads the number of paid epochs from them).
EPOCH_LABEL = "PMW epoch"
COUNT_LABEL = "PMW record count"


class _Records(Protocol):
    """What a session reads from its dataset: a Dataset (checked when the session is set up)."""

    def __len__(self) -> int: ...

    def histogram(self) -> np.ndarray: ...


class SessionExhaustedError(BudgetExceededError):
    """The session has made all of its ``max_updates`` updates; it answers no more queries."""


class UnstableUpdateError(ArithmeticError):
    """A multiplicative-weights step that would leave the distribution non-finite (refused)."""


@dataclass(frozen=True)
class PMWConfig:
    """The public parameters of a session; its privacy plan follows from them alone.

    Args:
        epsilon: total privacy budget (pure epsilon-DP).
        alpha: accuracy threshold as a fraction of the record count: a query whose synthetic
            answer is (noisily) within ``alpha * n * s`` of the truth is answered synthetically
            (``s`` the query's largest absolute weight; ``s = 1`` for counting queries).
        max_updates: the number T of multiplicative-weights updates (measured queries) allowed.
        sv_fraction: share of each epoch's epsilon spent on its sparse-vector run; the rest
            pays for the measurement.
        total: a public record count, or ``None`` to spend ``count_fraction`` of epsilon on a
            noisy count.
        count_fraction: share of epsilon spent on the noisy count (when ``total`` is None).
        reuse_passes: after each update, this many multiplicative-weights passes over all
            measurements so far (post-processing; MWEM's reuse).
    """

    epsilon: float
    alpha: float
    max_updates: int
    sv_fraction: float = 0.5
    total: int | None = None
    count_fraction: float = 0.01
    reuse_passes: int = 0

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_probability(self.alpha, "alpha")
        check_int(self.max_updates, "max_updates", minimum=1, maximum=10**6)
        check_probability(self.sv_fraction, "sv_fraction")
        check_probability(self.count_fraction, "count_fraction")
        check_int(self.reuse_passes, "reuse_passes", minimum=0, maximum=1000)
        if self.total is not None:
            check_int(self.total, "total", minimum=1, maximum=MAX_RECORDS)
        split = self.split()
        # Every mechanism is built here once, so a calibration it refuses fails before a charge.
        SparseVector(epsilon=split["sv"], sensitivity=GRID + 1)
        Geometric(epsilon=split["measure"], sensitivity=GRID)
        if split["count"]:
            Geometric(epsilon=split["count"])

    def split(self) -> dict[str, float]:
        """The epsilon of the count and of each epoch's sparse vector and measurement.

        The floats are shrunk until their exact binary values, as charged, add up to at most
        ``epsilon``: count + max_updates * (sv + measure) <= epsilon.
        """
        budget = exact(self.epsilon, "epsilon")
        count = float(self.epsilon) * self.count_fraction if self.total is None else 0.0
        epoch = (float(self.epsilon) - count) / self.max_updates
        sv = epoch * self.sv_fraction
        measure = epoch - sv

        def plan() -> Fraction:
            return Fraction(count) + self.max_updates * (Fraction(sv) + Fraction(measure))

        while plan() > budget:
            count, sv, measure = (math.nextafter(x, 0.0) for x in (count, sv, measure))
        return {"count": count, "sv": sv, "measure": measure}

    def epoch_event(self) -> PureDP:
        split = self.split()
        return PureDP(Fraction(split["sv"]) + Fraction(split["measure"]))

    def to_dict(self) -> dict[str, object]:
        return {"epsilon": self.epsilon, "alpha": self.alpha, "max_updates": self.max_updates,
                "sv_fraction": self.sv_fraction, "total": self.total,
                "count_fraction": self.count_fraction, "reuse_passes": self.reuse_passes}


@dataclass(frozen=True)
class Answer:
    """One released answer.

    Attributes:
        value: the answer (a synthetic answer, or a noisy measurement on the integer grid).
        source: ``"synthetic"`` (from the distribution, no privacy cost beyond the epoch's) or
            ``"measured"`` (a noisy measurement, followed by an update).
        updates: the number of updates made so far, this one included.
        charged: epsilon charged by this call (an epoch opened for it), else 0.
    """

    value: float
    source: str
    updates: int
    charged: float = 0.0


@dataclass
class PMWRecord:
    """Everything a session needs to resume exactly: its configuration, the noisy record count,
    the measurements (queries as JSON forms and released values), the sparse-vector state and
    the ledger. ``to_dict``/``from_dict`` give a JSON-ready dictionary and back,
    ``to_json``/``from_json`` a JSON file (as for :class:`~fastmwem.data.Domain` and
    :class:`~fastmwem.data.Schema`).

    ``noisy_threshold`` is secret: it is kept with the data and never released (so is a file
    written by ``to_json``).
    """

    config: PMWConfig
    total: float | None = None
    count_paid: bool = False
    epochs_paid: int = 0
    noisy_threshold: int | None = None
    measurements: list[tuple[dict[str, object], float]] = field(default_factory=list)
    ledger: list[LedgerEntry] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """The record as a JSON-ready dictionary (format ``"fastmwem-pmw-1"``)."""
        return {"format": "fastmwem-pmw-1", "config": self.config.to_dict(), "total": self.total,
                "count_paid": self.count_paid, "epochs_paid": self.epochs_paid,
                "noisy_threshold": self.noisy_threshold,
                "measurements": [{"query": q, "value": v} for q, v in self.measurements],
                "ledger": [entry_to_record(e) for e in self.ledger]}

    def to_json(self, path: str | os.PathLike[str] | None = None) -> dict[str, object] | None:
        """Write :meth:`to_dict` to the JSON file ``path``.

        The file is replaced atomically: it holds the session's ledger, and a write cut short
        must not leave a record that forgets what was spent. ``to_json()`` without a path is
        the deprecated form of :meth:`to_dict` (it warns and returns the dictionary).
        """
        if path is None:
            warn_renamed("to_json() without a path", "to_dict()", where="PMWRecord")
            return self.to_dict()
        target = os.fspath(path)
        temporary = f"{target}.{os.getpid()}.tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as fh:
                json.dump(self.to_dict(), fh, indent=1, allow_nan=False)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temporary, target)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
        return None

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> PMWRecord:
        """Read a record written by :meth:`to_json`.

        A dictionary instead of a path is the deprecated form of :meth:`from_dict` (it warns).
        """
        if isinstance(path, dict):
            warn_renamed("from_json(dict)", "from_dict(dict)", where="PMWRecord")
            return cls.from_dict(path)
        return cls.from_dict(load_json(path, "PMW session record"))

    @classmethod
    def from_dict(cls, data: object) -> PMWRecord:
        """The record of a :meth:`to_dict` dictionary (checked field by field)."""
        if not isinstance(data, dict) or data.get("format") != "fastmwem-pmw-1":
            raise ValueError("not a PMW session record (format 'fastmwem-pmw-1')")
        try:
            return cls(
                config=PMWConfig(**data["config"]),
                total=None if data["total"] is None else float(data["total"]),
                count_paid=bool(data["count_paid"]),
                epochs_paid=int(data["epochs_paid"]),
                noisy_threshold=(None if data["noisy_threshold"] is None
                                 else int(data["noisy_threshold"])),
                measurements=[(m["query"], float(m["value"])) for m in data["measurements"]],
                ledger=[entry_from_record(r) for r in data["ledger"]],
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"PMW session record: missing or malformed field ({exc})") from None


def _check_record(record: PMWRecord) -> None:
    """A record's fields must agree with each other (a store may have been edited by hand)."""
    done = len(record.measurements)
    if done > record.config.max_updates:
        raise ValueError(f"the record holds {done} measurements, more than max_updates="
                         f"{record.config.max_updates}")
    if record.epochs_paid not in (done, done + 1):
        raise ValueError(f"the record has {record.epochs_paid} paid epochs for {done} updates; "
                         "it must be the number of updates or one more")
    if record.noisy_threshold is not None and record.epochs_paid != done + 1:
        raise ValueError("the record has a noisy threshold but no paid epoch open")
    if record.total is None and done:
        raise ValueError("the record has measurements but no record count")
    if record.total is not None and not (math.isfinite(record.total) and record.total > 0):
        raise ValueError("the record's record count must be a finite number > 0")
    for i, (_, value) in enumerate(record.measurements, 1):
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"the record's measurement {i} is not a finite number")


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
    post-processing. An epoch is charged (``EPOCH_LABEL``) when the first query after the previous
    update arrives, before its noisy threshold is drawn; a refused charge spends nothing and
    changes nothing. Released measurements are integers times a public scale, so the noise is
    safe against floating-point attacks.

    Args:
        dataset: a :class:`~fastmwem.data.Dataset` (at most ``MAX_RECORDS`` records).
        epsilon, alpha, max_updates, **options: see :class:`PMWConfig`.
        rng: ``None`` for a release; an integer seed for tests only (it warns).
        accountant: charged for every epoch (default ``Accountant(epsilon=epsilon)``).

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
        _check_record(record)
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

    def record(self) -> PMWRecord:
        """A snapshot of the session's state (see :class:`PMWRecord`), ledger included."""
        r = self._record
        return PMWRecord(r.config, r.total, r.count_paid, r.epochs_paid, r.noisy_threshold,
                         list(r.measurements), list(self.accountant.ledger))

    # -- answering -------------------------------------------------------------------------------
    def answer(self, query: object, *, accountant: Accountant | None = None) -> Answer:
        """Answer one query (see :mod:`fastmwem.release.pmw.queries` for the forms).

        ``accountant`` (default: the session's) is charged if this query opens an epoch.

        Raises:
            ValueError, TypeError: the query does not fit the domain, or its scale cannot be
                represented (see :data:`MIN_QUERY_PEAK`); nothing is spent.
            SessionExhaustedError: all ``max_updates`` updates are used.
            BudgetExceededError: the accountant refuses the epoch's charge (nothing is spent).
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
        charged = 0.0
        if record.epochs_paid == self.updates:
            event = self.config.epoch_event()
            acc.compose(event, label=f"{EPOCH_LABEL} {self.updates + 1}")
            record.epochs_paid += 1
            charged = float(event.epsilon)
        if self._run is None:
            threshold = round(self.config.alpha * self.total * GRID)
            self._run = self._sv.start(min(threshold, MAX_SV_VALUE), rng=self._rng)
            record.noisy_threshold = self._run.noisy_threshold
        return self._test_and_answer(q, charged)

    def _test_and_answer(self, q: _Query, charged: float) -> Answer:
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
        measure = Geometric(epsilon=self.config.split()["measure"], sensitivity=q.sensitivity)
        value = int(measure.release(truth, rng=self._rng)) * q.scale
        self._record.measurements.append((q.spec, value))
        self._record.noisy_threshold = None
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
