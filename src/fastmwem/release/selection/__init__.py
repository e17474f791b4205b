"""How a round of multiplicative weights chooses what to measure next.

A :class:`RoundSelection` is public configuration: it names the private mechanism a round uses
and the privacy event one round costs, so a release can charge its whole plan before the data is
read. Only after the charge does ``prepare`` look at the private histogram, returning a
:class:`Chooser` that picks one group (or query) per round.

Two families ship:

* :class:`ScanSelection` scores every candidate each round (its answers on the synthetic state,
  ``O(m |X|)`` on a dense histogram, by inference on a factored one) and samples the exponential
  mechanism or permute-and-flip over them: MWEM as published.
* :class:`LazySelection` is Fast-MWEM's round: the score of query ``q`` is
  ``|<q, h - a>|`` for the private histogram ``h`` and the synthetic one ``a``, so one exact
  top-k search over the query vectors and the lazy Gumbel sampler draw from exactly the same law
  as the exponential mechanism over all ``m`` queries, without computing all ``m`` answers. It
  needs both histograms as dense vectors (``requires_dense``).

New selections plug in through :func:`register_selection`; releases never switch on names.

A selection holds no cache. One that builds something public and costly for a workload (the lazy
selection's index) offers ``bind(workload)``: the same selection with it built. A plan binds its
selection once (:func:`~fastmwem.release.mwem.plan.plan_mwem`), and the run, like the plans of
other configurations of the same workload that share it, uses what the plan built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from fastmwem.accounting import BoundedRange, PrivacyEvent, PureDP
from fastmwem.mechanisms.exponential import ExponentialMechanism, PermuteAndFlip
from fastmwem.workloads.base import LinearWorkload, groups_of_queries, queries_of_groups

if TYPE_CHECKING:
    from fastmwem.indices.base import TopKOracle
    from fastmwem.mechanisms.lazy import LazyExponentialMechanism
    from fastmwem.models.state import SyntheticState

__all__ = [
    "Chooser",
    "PrivateData",
    "LazySelection",
    "RoundSelection",
    "ScanSelection",
    "register_selection",
    "resolve_selection",
    "selection_names",
]


class PrivateData(Protocol):
    """What a chooser may read from the private data (after the charge)."""

    def histogram(self) -> np.ndarray:
        """The private histogram over every cell (dense domains only)."""
        ...

    def answers(self) -> np.ndarray:
        """The private answers of every query that may ever be selected (others NaN)."""
        ...


class Chooser(Protocol):
    """A prepared selection: one private choice per call."""

    def choose(self, state: SyntheticState, available: np.ndarray | None,
               rng: np.random.Generator) -> int:
        """Index of the group (or query) to measure next.

        Args:
            state: the synthetic state of the current round (a
                :class:`~fastmwem.models.state.SyntheticState`: ``answer_groups``, ``total``).
            available: boolean mask of the candidates that may be chosen, or ``None`` for all.
            rng: the run's generator.
        """
        ...

    def true_answers(self, queries: slice) -> np.ndarray:
        """The private answers of the queries ``queries`` (what a measurement adds noise to)."""
        ...


@runtime_checkable
class RoundSelection(Protocol):
    """Public description of a round's selection: its name, privacy event and preparation.

    A selection may also define ``bind(workload)``, returning the same selection with whatever
    it builds from the (public) workload built, for ``check`` and ``prepare`` to use; plans call
    it once, before ``check``.
    """

    @property
    def name(self) -> str: ...

    def event(self, epsilon: float | Fraction) -> PrivacyEvent:
        """The privacy event of one round run at ``epsilon``."""
        ...

    def check(self, workload: LinearWorkload, *, epsilon: float, group_mode: bool,
              sensitivities: np.ndarray) -> None:
        """Raise ``ValueError``/``TypeError`` if this selection cannot run on ``workload``.

        Runs before any budget is charged, so nothing can fail on public input after it.
        """
        ...

    def prepare(self, workload: LinearWorkload, private: PrivateData, *, epsilon: float,
                group_mode: bool, sensitivities: np.ndarray, penalties: np.ndarray) -> Chooser:
        """Bind to the private data (after the charge) and return the round's chooser.

        Args:
            workload: the (public) workload.
            private: the private data: its histogram (dense domains) or true answers.
            epsilon: the epsilon of one round's selection.
            group_mode: whether candidates are groups (True) or single queries.
            sensitivities: the L1 sensitivity of each candidate.
            penalties: a data-independent amount subtracted from each candidate's score.
        """
        ...


#: Scores are capped at this magnitude. Only the data-independent penalty can come near it (a
#: huge penalty or a tiny measurement epsilon); capping is 1-Lipschitz, so the sensitivity, and
#: privacy, are unchanged.
SCORE_CAP = 1e300


@dataclass(frozen=True)
class ScanSelection:
    """Score every candidate each round and sample ``mechanism`` over the scores.

    The score of a group is the L1 error of its answers on the synthetic histogram minus
    ``penalty`` per query (data-independent); of a single query its absolute error. Its
    sensitivity is the largest group (or query) sensitivity of the workload.

    Args:
        mechanism: ``"exponential"`` (Gumbel-max; ``BoundedRange`` per round) or
            ``"permute-and-flip"`` (``PureDP`` per round).
    """

    mechanism: str = "exponential"

    def __post_init__(self) -> None:
        if self.mechanism not in _SCAN_MECHANISMS:
            raise ValueError(
                f"mechanism must be one of {sorted(_SCAN_MECHANISMS)}, got {self.mechanism!r}")

    @property
    def name(self) -> str:
        return self.mechanism

    def event(self, epsilon: float | Fraction) -> PrivacyEvent:
        return BoundedRange(epsilon) if self.mechanism == "exponential" else PureDP(epsilon)

    def _selector(self, epsilon: float, sensitivities: np.ndarray) -> ScanMechanism:
        return _SCAN_MECHANISMS[self.mechanism](epsilon=epsilon,
                                                sensitivity=float(sensitivities.max()))

    def check(self, workload: LinearWorkload, *, epsilon: float, group_mode: bool,
              sensitivities: np.ndarray) -> None:
        self._selector(epsilon, sensitivities)

    #: An adaptive run may retune the chooser every round (``_ScanChooser.retuned``).
    adaptive = True

    def prepare(self, workload: LinearWorkload, private: PrivateData, *, epsilon: float,
                group_mode: bool, sensitivities: np.ndarray, penalties: np.ndarray) -> Chooser:
        return _ScanChooser(workload, private.answers(), self._selector(epsilon, sensitivities),
                            group_mode, penalties)


ScanMechanism = ExponentialMechanism | PermuteAndFlip

_SCAN_MECHANISMS: dict[str, type[ScanMechanism]] = {
    "exponential": ExponentialMechanism,
    "permute-and-flip": PermuteAndFlip,
}


@dataclass
class _ScanChooser:
    workload: LinearWorkload
    answers: np.ndarray
    selector: ScanMechanism
    group_mode: bool
    penalties: np.ndarray
    weights: np.ndarray | None = None

    def retuned(self, epsilon: float, penalties: np.ndarray, weights: np.ndarray | None,
                sensitivity: float) -> _ScanChooser:
        """The same chooser at another epsilon, with new penalties and score weights.

        The score of a candidate becomes ``weight * (L1 error - penalty)``; ``sensitivity`` must
        bound ``weight * (group sensitivity)`` over the candidates. Adaptive runs retune every
        round; the private answers are shared, not copied.
        """
        selector = type(self.selector)(epsilon=epsilon, sensitivity=sensitivity)
        return _ScanChooser(self.workload, self.answers, selector, self.group_mode, penalties,
                            weights)

    def choose(self, state: SyntheticState, available: np.ndarray | None,
               rng: np.random.Generator) -> int:
        offsets = np.asarray(self.workload.group_offsets)
        n = offsets.size - 1 if self.group_mode else int(offsets[-1])
        candidates = np.arange(n) if available is None else np.flatnonzero(available)
        scores = self._scores(state, candidates, offsets)
        return int(candidates[self.selector.select(scores, rng=rng)])

    def _scores(self, state: SyntheticState, candidates: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Each candidate's L1 error on the data (capped at ``SCORE_CAP``) less its penalty.

        A dense state answers every query at once (sharing work between groups); any other
        state answers only the candidates' groups, which may be far fewer and cheaper.
        """
        if getattr(state, "distribution", None) is not None:
            errors = state.answer(self.workload)
            true, starts = self.answers, offsets[:-1]
            picked = candidates
        else:
            groups = (candidates if self.group_mode
                      else np.unique(groups_of_queries(offsets, candidates)))
            queries = queries_of_groups(offsets, groups)
            errors = state.answer_groups(self.workload, groups)
            true = self.answers[queries]
            starts = np.concatenate([[0], np.cumsum(offsets[groups + 1] - offsets[groups])[:-1]])
            picked = (np.arange(groups.size) if self.group_mode
                      else np.searchsorted(queries, candidates))
        errors *= state.total
        errors -= true
        np.abs(errors, out=errors)
        if self.group_mode:
            errors = np.add.reduceat(errors, starts)
        np.minimum(errors, SCORE_CAP, out=errors)
        errors = errors[picked]
        errors -= self.penalties[candidates]
        if self.weights is not None:
            errors *= self.weights[candidates]
        return errors

    def true_answers(self, queries: slice) -> np.ndarray:
        return self.answers[queries]


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
        if available is not None and not available.all():
            closed = np.flatnonzero(~available)
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


def _approximate(name: str) -> bool:
    """Whether the index ``name`` is approximate by construction (no certificate)."""
    return name == "hnswlib" or (name.startswith("faiss:") and name != "faiss:Flat")


def _known_index(name: str) -> bool:
    """Whether ``name`` is an index name :func:`fastmwem.indices.make_index` understands."""
    return name in ("flat", "bitpacked", "hnswlib") or (name.startswith("faiss:")
                                                        and len(name) > len("faiss:"))


def _scan(mechanism: str) -> Callable[..., RoundSelection]:
    def make(**options: object) -> RoundSelection:
        if options:
            raise ValueError(f"selection {mechanism!r} takes no options, got {sorted(options)} "
                             "(index=, k= and allow_uncertified= are for selection='lazy')")
        return ScanSelection(mechanism)

    return make


_REGISTRY: dict[str, Callable[..., RoundSelection]] = {
    "exponential": _scan("exponential"),
    "permute-and-flip": _scan("permute-and-flip"),
    "lazy": lambda **options: LazySelection(**options),
}


def register_selection(name: str, factory: Callable[..., RoundSelection]) -> None:
    """Make ``name`` usable as ``selection=name``; ``factory(**options)`` builds the selection."""
    if not isinstance(name, str) or not name:
        raise ValueError("a selection name must be a non-empty string")
    _REGISTRY[name] = factory


def selection_names() -> tuple[str, ...]:
    """The registered selection names (for command-line choices)."""
    return tuple(_REGISTRY)


def resolve_selection(selection: object, **options: object) -> RoundSelection:
    """A :class:`RoundSelection` from a registered name (with its options) or an object."""
    if isinstance(selection, str):
        if selection not in _REGISTRY:
            raise ValueError(f"selection must be one of {list(_REGISTRY)}, got {selection!r}")
        return _REGISTRY[selection](**{k: v for k, v in options.items() if v is not None})
    if options and any(v is not None for v in options.values()):
        raise ValueError("selection options (index=, k=) go with a selection name, not an object")
    if not isinstance(selection, RoundSelection):
        raise TypeError(
            f"selection must be a name or a RoundSelection, got {type(selection).__name__}")
    return selection
