"""Fast-MWEM's round: the lazy exponential mechanism over an exact top-k oracle.

The score of query ``q`` is ``|<q, h - a>|`` for the private histogram ``h`` and the synthetic
one ``a``, so one exact top-k search over the query vectors and the lazy Gumbel sampler draw
from exactly the same law as the exponential mechanism over all ``m`` queries, without
computing all ``m`` answers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from fastmwem.accounting import BoundedRange, PrivacyEvent
from fastmwem.release.selection.base import Chooser, PrivateData
from fastmwem.workloads.base import LinearWorkload

if TYPE_CHECKING:
    from fastmwem.indices.base import TopKOracle
    from fastmwem.mechanisms.lazy import LazyExponentialMechanism
    from fastmwem.models.state import SyntheticState

__all__ = ["LazySelection"]


@dataclass(frozen=True)
class LazySelection:
    """Fast-MWEM's round: the lazy exponential mechanism over an exact top-k oracle.

    The candidates are the workload's single queries with score ``|<q, h - a>|``
    (sensitivity: the workload's ``query_sensitivity``). In group mode the chosen query's whole
    group is measured, and the queries of groups already measured are excluded from the choice.
    The output law of each round is exactly the exponential mechanism's over those scores, so a
    round costs ``BoundedRange(epsilon)`` as long as the oracle is exact (or certified); an
    oracle without a certificate runs only with ``allow_uncertified=True`` and then the run has
    no exact guarantee (the mechanism's privacy record says so).

    The oracle is built from the workload alone; :meth:`bind` builds it once and returns the
    selection holding it (a plan does so; an unbound selection builds it on every use).

    Args:
        index: the oracle: ``None`` for the workload's own exact oracle
            (``workload.top_k_oracle()``) when it has one, else ``"bitpacked"`` for 0/1 queries
            and ``"flat"`` otherwise; an index name for :func:`fastmwem.indices.make_index`; or a
            built oracle over the workload's query vectors.
        k: size of the exact top-k set (default ``ceil(sqrt(m))``).
        allow_uncertified: opt in to an approximate oracle without a certified gap.
    """

    index: object = None
    k: int | None = None
    allow_uncertified: bool = False
    #: The workload :meth:`bind` built the oracle over, and the oracle (``None``: unbound).
    _built: tuple[LinearWorkload, TopKOracle] | None = field(default=None, compare=False,
                                                              repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.index, str) and not _known_index(self.index):
            from fastmwem.indices.factory import INDEX_SPECS

            raise ValueError(f"index must be one of {', '.join(INDEX_SPECS)}, got {self.index!r}")
        if isinstance(self.index, str) and not self.allow_uncertified and _approximate(self.index):
            # Refused by name, before any (possibly long) build of the index.
            raise ValueError(
                f"index {self.index!r} is an approximate index with no certified gap: its "
                "output law would not be the exponential mechanism's and the run would have no "
                "exact privacy guarantee; use an exact one (flat, bitpacked, faiss:Flat) or pass "
                "allow_uncertified=True (--allow-uncertified) to run it anyway")

    #: The scores ``|<q, h - n a>|`` need the private and synthetic histograms as dense vectors.
    requires_dense = True

    @property
    def name(self) -> str:
        return "lazy"

    def event(self, epsilon: float | Fraction) -> PrivacyEvent:
        """``BoundedRange(epsilon)``; with the opt-in, :class:`~fastmwem.mechanisms.Uncertified`
        unless the oracle built by :meth:`bind` is known to be exact or certified."""
        if self.allow_uncertified and not self._certified():
            from fastmwem.mechanisms.lazy import Uncertified

            return Uncertified(epsilon)
        return BoundedRange(epsilon)

    def _certified(self) -> bool:
        """Whether the bound oracle is exact or carries a certified gap (False when unbound:
        the plan then records the weaker claim)."""
        if self._built is None:
            return False
        oracle = self._built[1]
        return bool(oracle.exact or getattr(oracle, "certified_gap", None) is not None)

    def bind(self, workload: LinearWorkload) -> LazySelection:
        """This selection with its oracle over ``workload``'s query vectors built (public).

        Returns ``self`` when it is bound to ``workload`` already.

        Raises:
            ValueError: the oracle cannot be built or is refused (see
                :func:`~fastmwem.release.selection.oracles.workload_oracle`).
        """
        if self._built is not None and self._built[0] is workload:
            return self
        return dataclasses.replace(self, _built=(workload, self._oracle(workload)))

    def check(self, workload: LinearWorkload, *, epsilon: float, group_mode: bool,
              sensitivities: np.ndarray) -> None:
        self._mechanism(workload, epsilon)

    def _oracle(self, workload: LinearWorkload) -> TopKOracle:
        """The oracle over the workload's query vectors: the bound one, else a new one."""
        if self._built is not None and self._built[0] is workload:
            return self._built[1]
        from fastmwem.release.selection.oracles import workload_oracle

        return workload_oracle(workload, self.index, allow_uncertified=self.allow_uncertified)

    def _mechanism(self, workload: LinearWorkload, epsilon: float) -> LazyExponentialMechanism:
        from fastmwem.mechanisms.lazy import LazyExponentialMechanism

        return LazyExponentialMechanism(
            self._oracle(workload), epsilon=epsilon,
            sensitivity=float(workload.query_sensitivity),
            absolute=True, k=self.k, allow_uncertified=self.allow_uncertified)

    def prepare(self, workload: LinearWorkload, private: PrivateData, *, epsilon: float,
                group_mode: bool, sensitivities: np.ndarray, penalties: np.ndarray) -> Chooser:
        # The offsets are read once: some workloads build an array of m + 1 entries per access.
        return _LazyChooser(workload, np.asarray(private.histogram(), dtype=np.float64),
                            self._mechanism(workload, epsilon), group_mode,
                            np.asarray(workload.group_offsets))


@dataclass
class _LazyChooser:
    workload: LinearWorkload
    true_histogram: np.ndarray
    mechanism: LazyExponentialMechanism
    group_mode: bool
    offsets: np.ndarray
    tail_draws: list[int] = field(default_factory=list)

    def choose(self, state: SyntheticState, available: np.ndarray | None,
               rng: np.random.Generator) -> int:
        distribution = getattr(state, "distribution", None)
        if distribution is None:
            raise ValueError("selection='lazy' needs a dense synthetic histogram; this state is "
                             f"{getattr(state, 'kind', type(state).__name__)}")
        total = state.total
        offsets = self.offsets
        exclude = None
        closed = None if available is None else _closed(available)
        if closed is not None and closed.size:
            if self.group_mode:
                exclude = np.concatenate([np.arange(offsets[g], offsets[g + 1]) for g in closed])
            else:
                exclude = closed
        # v = h - n a: the scores |<q, v>| are the absolute errors of single queries
        vector = distribution * -total
        vector += self.true_histogram
        stats = self.mechanism.select_with_stats(vector, rng=rng, exclude=exclude)
        query = stats.index
        self.tail_draws.append(int(stats.n_tail))
        if not self.group_mode:
            return int(query)
        return int(np.searchsorted(offsets, query, side="right") - 1)

    def true_answers(self, queries: slice) -> np.ndarray:
        """Answers of the measured queries alone: no round computes all ``m`` answers."""
        offsets = self.offsets
        group = int(np.searchsorted(offsets, queries.start, side="right") - 1)
        answers = self.workload.answer_group(self.true_histogram, group)
        base = int(offsets[group])
        return np.asarray(answers)[queries.start - base:queries.stop - base]


#: Eight True bytes read as one 64-bit word (any byte order).
_OPEN_WORD = np.uint64(0x0101010101010101)


def _closed(available: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(~available)`` for a 1-D boolean mask, reading it 8 entries at a time:
    the mask has an entry per query (a million) and rounds close one each, so most words are
    all open and only the others are looked at."""
    mask = np.asarray(available)
    if mask.dtype != np.bool_ or mask.ndim != 1 or not mask.flags.c_contiguous:
        return np.empty(0, dtype=np.intp) if mask.all() else np.flatnonzero(~mask)
    from fastmwem.mechanisms._lazy_draws import _tail_kernels

    kernels = _tail_kernels()
    if kernels is not None:  # one compiled pass
        return kernels.false_positions(mask)
    whole = mask.size - mask.size % 8
    words = np.flatnonzero(mask[:whole].view(np.uint64) != _OPEN_WORD)
    near = (8 * words[:, None] + np.arange(8)).reshape(-1)
    near = np.concatenate([near, np.arange(whole, mask.size)])
    return near[~mask[near]]


def _approximate(name: str) -> bool:
    """Whether the index ``name`` is approximate by construction (no certificate)."""
    return name == "hnswlib" or (name.startswith("faiss:") and name != "faiss:Flat")


def _known_index(name: str) -> bool:
    """Whether ``name`` is an index name :func:`fastmwem.indices.make_index` understands."""
    return name in ("flat", "bitpacked", "hnswlib") or (name.startswith("faiss:")
                                                        and len(name) > len("faiss:"))
