"""Argument checks and the set-up shared by every top-k mechanism."""

from __future__ import annotations

import abc
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from fastmwem._validation import check_epsilon, check_int
from fastmwem.accounting import Accountant, PrivacyEvent
from fastmwem.mechanisms.base import charge
from fastmwem.mechanisms.seeding import check_rng
from fastmwem.random import RNGLike, make_rng

__all__ = ["NEIGHBORS", "TopKMechanism", "check_counts", "check_k", "check_k_fits",
           "check_neighbors", "delta_of"]

#: Neighbouring relations understood by every top-k mechanism.
NEIGHBORS: tuple[str, ...] = ("add-remove", "replace")

_INT64_MAX = np.iinfo(np.int64).max


def check_neighbors(neighbors: object) -> str:
    """Return ``neighbors`` after checking it is ``"add-remove"`` or ``"replace"``."""
    if not isinstance(neighbors, str):
        raise TypeError(f"neighbors must be a string, got {type(neighbors).__name__}")
    if neighbors not in NEIGHBORS:
        raise ValueError(f"neighbors must be one of {NEIGHBORS}, got {neighbors!r}")
    return neighbors


def delta_of(neighbors: str) -> int:
    """Sensitivity of the sequence utility u*(S) = -max_i (c_(i) - c_{s_i}).

    Each user adds at most one to each item count. Adding or removing a user moves every count
    by at most one in the same direction, so every difference c_(i) - c_j moves by at most one.
    Replacing a user can raise one count and lower another, so a difference can move by two.
    """
    return 1 if neighbors == "add-remove" else 2


def check_k(k: object) -> int:
    """Return ``k`` as an int >= 1 (the upper bound is checked against the counts later)."""
    return check_int(k, "k", minimum=1)


def check_k_fits(k: int, d: int) -> None:
    if k > d:
        raise ValueError(f"k must be <= the number of items ({d}), got {k}")


def check_counts(counts: object) -> np.ndarray:
    """Return item counts as a 1-D int64 array: non-empty, finite, integral and non-negative.

    Counts are compared exactly as integers everywhere in the joint samplers, so floats are
    accepted only when they hold whole numbers. The caller's array itself is returned when it
    is already contiguous int64: it must not be written to.
    """
    if isinstance(counts, (str, bytes)):
        raise TypeError(f"counts must be a 1-D array of integers, got {type(counts).__name__}")
    try:
        arr = np.asarray(counts)
    except ValueError as exc:  # ragged nested sequences
        raise ValueError(f"counts must be a 1-D array of integers: {exc}") from None
    if arr.dtype == object:
        if not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in arr.ravel()):
            raise TypeError("counts must hold integers")
        try:
            arr = arr.astype(np.float64) if arr.size else arr.astype(np.int64)
        except (TypeError, ValueError, OverflowError):
            raise TypeError("counts must hold integers") from None
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"counts must hold integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"counts must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("counts must not be empty")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"counts must be finite: counts[{i}] = {arr[i]}")
        frac = arr != np.floor(arr)
        if frac.any():
            i = int(np.argmax(frac))
            raise ValueError(f"counts must be whole numbers: counts[{i}] = {arr[i]}")
        if arr.max() >= 2.0**63:
            raise ValueError("counts must be < 2**63")
    neg = arr < 0
    if neg.any():
        i = int(np.argmax(neg))
        raise ValueError(f"counts must be non-negative: counts[{i}] = {arr[i]}")
    if arr.dtype == np.uint64 and int(arr.max()) > _INT64_MAX:
        raise ValueError("counts must be < 2**63")
    # No copy of counts that are already contiguous int64 (80 MB at d = 10^7): the mechanisms
    # only read them.
    return np.ascontiguousarray(arr, dtype=np.int64)


@dataclass(frozen=True)
class TopKMechanism(abc.ABC):
    """What every top-k mechanism does before it looks at the counts.

    At construction: ``k`` and ``epsilon`` (and the subclass's ``neighbors``) are checked.
    In :meth:`select`, in this order: the counts are validated, ``k`` is checked against their
    number (with any other check of :meth:`_check_size`), the generator is made, and the
    accountant is charged; only then does :meth:`_select` see the counts. So bad input never
    costs budget or randomness, and nothing that could have been checked fails after the charge.
    Subclasses define ``neighbors``, ``privacy`` and :meth:`_select`.
    """

    k: int
    epsilon: float

    #: The ledger label of a charge.
    label: ClassVar[str] = "top-k"

    if TYPE_CHECKING:
        @property
        def neighbors(self) -> str: ...  # a field of each subclass

    def __post_init__(self) -> None:
        check_k(self.k)
        check_epsilon(self.epsilon)
        check_neighbors(self.neighbors)

    @property
    @abc.abstractmethod
    def privacy(self) -> PrivacyEvent:
        """The privacy event of one call, known before any data is seen."""

    def _check_size(self, d: int) -> None:
        """Checks that need the number of items ``d`` (public); run before the charge."""
        check_k_fits(self.k, d)

    @abc.abstractmethod
    def _select(self, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The mechanism proper, on validated counts, after the charge."""

    def select(self, counts: object, *, rng: RNGLike = None,
               accountant: Accountant | None = None) -> np.ndarray:
        """Return ``k`` distinct indices into ``counts``, best first (in selection order)."""
        values = check_counts(counts)
        self._check_size(values.size)
        generator = make_rng(rng)
        check_rng(rng, self.label, stacklevel=3)
        charge(accountant, self.privacy, self.label)
        return self._select(values, generator)
