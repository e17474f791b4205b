"""The public parameters of an online PMW session, its privacy plan, and its record.

A session spends its budget in this order (each charge before the data it pays for is touched):
the record count (unless public), then for each of the ``max_updates`` epochs its sparse-vector
run (charged by the query that opens the run, before the noisy threshold is drawn) and its
measurement (charged by the query the sparse vector finds inaccurate, before the noise is
drawn). A query may only be tested when the accountant can afford every charge it could cause
(:meth:`PMWRecord.charges_due`), so that no charge is refused after the test.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from fractions import Fraction

from fastmwem._deprecation import warn_renamed
from fastmwem._validation import check_epsilon, check_int, check_probability
from fastmwem.accounting import (
    LedgerEntry,
    PureDP,
    entry_from_record,
    entry_to_record,
    exact,
)
from fastmwem.data.io.files import load_json
from fastmwem.mechanisms.laplace import Geometric
from fastmwem.mechanisms.sparse_vector import SparseVector

__all__ = ["PMWConfig", "PMWRecord", "GRID", "MAX_RECORDS", "EPOCH_LABEL", "COUNT_LABEL",
           "sv_label", "measurement_label", "paid_from_labels", "check_record"]

#: Each query is scaled to integer weights within +-GRID (2**20) for the sparse-vector test and
#: for non-integer measurements, so that every noisy comparison and release is on integers.
GRID = 2**20

#: Largest record count: counts times GRID stay far inside int64.
MAX_RECORDS = 2**40

#: Ledger labels of the session's charges (a store reads what was paid from them): the record
#: count, and per epoch ``k`` its sparse vector (``"PMW epoch k sparse vector"``) and its
#: measurement (``"PMW epoch k measurement"``). A label ``"PMW epoch k"`` alone is a whole
#: epoch paid at once, as sessions before the split charged it.
EPOCH_LABEL = "PMW epoch"
COUNT_LABEL = "PMW record count"


def sv_label(epoch: int) -> str:
    return f"{EPOCH_LABEL} {epoch} sparse vector"


def measurement_label(epoch: int) -> str:
    return f"{EPOCH_LABEL} {epoch} measurement"


def paid_from_labels(labels: list[str]) -> tuple[bool, int, int]:
    """What a ledger's labels paid for: the record count (whether), the sparse-vector runs and
    the measurements (a whole-epoch label pays for one of each)."""
    runs = measures = 0
    for label in labels:
        if not label.startswith(EPOCH_LABEL + " "):
            continue
        kind = label[len(EPOCH_LABEL) + 1:].partition(" ")[2]  # after the epoch's number
        runs += kind in ("", "sparse vector")
        measures += kind in ("", "measurement")
    return COUNT_LABEL in labels, runs, measures


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


@dataclass
class PMWRecord:
    """Everything a session needs to resume exactly: its configuration, the noisy record count,
    the measurements (queries as JSON forms and released values), the sparse-vector state and
    the ledger. ``to_dict``/``from_dict`` give a JSON-ready dictionary and back,
    ``to_json``/``from_json`` a JSON file (as for :class:`~fastmwem.data.Domain` and
    :class:`~fastmwem.data.Schema`).

    ``epochs_paid`` counts the sparse-vector runs paid for (the open one included);
    ``measurement_paid`` says whether the open epoch's measurement is paid for too (a charge
    whose answer was lost in a crash: it is used without a second charge).
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
    measurement_paid: bool = False

    def charges_due(self) -> list[tuple[PureDP, str]]:
        """The charges the next query may cause: the sparse-vector run it would open, and the
        measurement it would trigger, when these are not paid for yet."""
        split, k = self.config.split(), len(self.measurements) + 1
        due = [] if self.epochs_paid == k else [(PureDP(Fraction(split["sv"])), sv_label(k))]
        if not self.measurement_paid:
            due.append((PureDP(Fraction(split["measure"])), measurement_label(k)))
        return due

    def to_dict(self) -> dict[str, object]:
        """The record as a JSON-ready dictionary (format ``"fastmwem-pmw-1"``)."""
        return {"format": "fastmwem-pmw-1", "config": self.config.to_dict(), "total": self.total,
                "count_paid": self.count_paid, "epochs_paid": self.epochs_paid,
                "measurement_paid": self.measurement_paid, "noisy_threshold": self.noisy_threshold,
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
            epochs, done = int(data["epochs_paid"]), len(data["measurements"])
            return cls(
                config=PMWConfig(**data["config"]),
                total=None if data["total"] is None else float(data["total"]),
                count_paid=bool(data["count_paid"]),
                epochs_paid=epochs,
                # Records made before the split paid whole epochs: an open one had its
                # measurement paid for.
                measurement_paid=bool(data.get("measurement_paid", epochs == done + 1)),
                noisy_threshold=(None if data["noisy_threshold"] is None
                                 else int(data["noisy_threshold"])),
                measurements=[(m["query"], float(m["value"])) for m in data["measurements"]],
                ledger=[entry_from_record(r) for r in data["ledger"]],
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"PMW session record: missing or malformed field ({exc})") from None


def check_record(record: PMWRecord) -> None:
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
    if record.measurement_paid and record.epochs_paid != done + 1:
        raise ValueError("the record has a paid measurement but no paid epoch open")
    if record.total is None and done:
        raise ValueError("the record has measurements but no record count")
    if record.total is not None and not (math.isfinite(record.total) and record.total > 0):
        raise ValueError("the record's record count must be a finite number > 0")
    for i, (_, value) in enumerate(record.measurements, 1):
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"the record's measurement {i} is not a finite number")
