"""The lazy exponential mechanism: the exponential mechanism's exact law from a top-k oracle.

Fast-MWEM (Haris, Choi, Laksanawisit, arXiv 2602.03732, s.3.3, App. C-D, F) after Mussmann, Levy
and Ermon (arXiv 1707.03372, Alg. 1): Gumbel-max over ``N`` candidates instantiates only the
exact top-k set ``S`` and the few tail candidates whose Gumbel could beat the best noisy score of
``S``. With ``k = ceil(sqrt(N))`` a selection costs one top-k search plus ``O(sqrt(N))`` Gumbels
and score evaluations in expectation, instead of all ``N`` scores.

Sampling, for log-weights ``y_i`` (``epsilon * score_i / (2 sensitivity)``):

1. ``G_i ~ Gumbel(0, 1)`` for ``i in S``; ``M = max_S (y_i + G_i)``; margin
   ``B = M - min_S y_i`` (minus the certified gap ``c`` in the privacy-preserving mode).
2. ``t ~ Binomial(N - k, p_B)`` with ``p_B = 1 - exp(-exp(-B))``: how many tail Gumbels exceed
   ``B``. Only those could win, since every tail ``y_j <= min_S y``.
3. ``t`` distinct tail ids uniformly (rejection sampling, expected ``O(t)``), Gumbels conditioned
   on ``G > B`` by the inverse CDF, their exact scores from the oracle; the output is the argmax
   over ``S`` and the tail ids.

Given the Gumbels of ``S``, the set of tail Gumbels above ``B`` is exactly a Binomial-size uniform
subset with iid truncated values, so the output law is exactly ``softmax(y)``
(Mussmann, Levy and Ermon's theorem; Fast-MWEM Thm D.1), and ``E[t] <= (N - k) / (k + 1)``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np

from fastmwem._validation import check_epsilon, check_int, check_positive, check_scores
from fastmwem.accounting import Accountant, BoundedRange, PureDP, exact
from fastmwem.mechanisms._lazy_draws import (
    _better_sides,
    _both_sides,
    _merged_top,
    _noisy_best,
    _tail_ids,
    _truncated_gumbel,
)
from fastmwem.mechanisms.base import charge
from fastmwem.mechanisms.exponential import _log_weights
from fastmwem.random import RNGLike, make_rng

if TYPE_CHECKING:  # the oracle protocol lives in indices/, a peer layer: typing only
    from fastmwem.indices.base import AbsTopKOracle, TopKOracle

__all__ = [
    "LazyExponentialMechanism",
    "LazyStats",
    "Uncertified",
    "UncertifiedOracleWarning",
]

_MODES = ("privacy", "runtime")
_ORACLE_MEMBERS = ("n_keys", "dimension", "exact", "search", "score")


class UncertifiedOracleWarning(UserWarning):
    """A lazy mechanism runs over an approximate oracle without a certified gap: the exponential
    mechanism's privacy guarantee does not hold for its output."""


class Uncertified(BoundedRange):
    """The privacy record of a lazy mechanism over an uncertified approximate oracle.

    It composes like ``BoundedRange(epsilon)`` (the nominal cost, had the oracle been exact), so
    budgets and ledgers still add up, but ``exact_guarantee`` is False and its repr says so in
    every ledger: a missed top-k key changes the output law by an unbounded factor, so no
    differential-privacy guarantee is proven for the run.
    """

    exact_guarantee = False

    def __repr__(self) -> str:
        return (f"Uncertified(nominal={BoundedRange(self.epsilon)!r}, exact_guarantee=False: "
                "approximate top-k oracle without a certified gap; NO privacy guarantee holds)")


class LazyStats(NamedTuple):
    """What one lazy selection did (for benchmarks and tests; never data to release)."""

    index: int  # type: ignore[assignment]  # the field shadows tuple.index, on purpose
    n_candidates: int  # candidates left after exclusions
    k: int  # size of the top set searched
    n_tail: int  # tail candidates drawn (t)
    margin: float  # B, after any lowering by the certified gap
    from_tail: bool  # the output came from the tail


def _check_oracle(oracle: object) -> None:
    missing = [name for name in _ORACLE_MEMBERS if not hasattr(oracle, name)]
    if missing:
        raise TypeError(f"oracle must be a top-k oracle (indices.TopKOracle); "
                        f"{type(oracle).__name__} lacks {', '.join(missing)}")
    exact = getattr(oracle, "exact", None)
    if not isinstance(exact, bool):
        raise TypeError(f"oracle.exact must be a bool, got {type(exact).__name__}")


def _check_flag(value: object, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


@dataclass(frozen=True)
class LazyExponentialMechanism:
    """The exponential mechanism over ``<key_i, query_vector>``, sampled lazily from a top-k oracle.

    Selects candidate ``i`` with probability proportional to
    ``exp(epsilon * score_i / (2 * sensitivity))`` (``/ sensitivity`` when ``monotonic``), where
    ``score_i = <key_i, query_vector>`` over the oracle's keys; with ``absolute=True`` the score is
    ``|<key_i, v>|``; with ``complement=True`` there are ``2m`` candidates, id ``j < m`` scoring
    ``<key_j, v>`` and id ``m + j`` scoring ``-<key_j, v>`` (the complement-closed query set of
    Fast-MWEM, with no negated keys stored). Over an exact oracle the output law is exactly the
    :class:`ExponentialMechanism` law on those scores (see the module docstring).

    Privacy: over an exact oracle (``oracle.exact``), ``epsilon``-DP and ``epsilon``-bounded
    range (``privacy`` is ``BoundedRange(epsilon)``). Over an oracle with a certified gap ``g``
    (score units; no missed key beats the k-th returned score by more than ``g``), with
    ``c = epsilon g / (2 sensitivity)``: ``approximate="privacy"`` lowers the margin by ``c`` and
    keeps the exact law (``BoundedRange(epsilon)``; ``E[t]`` grows by up to ``e^c``,
    Fast-MWEM Thm F.10), ``approximate="runtime"`` keeps the margin and is
    ``(epsilon + 2c)``-DP (``PureDP``; Thm F.2). Over an approximate oracle without a
    certificate (HNSW, IVF) it runs only with ``allow_uncertified=True``, warns, and ``privacy`` is
    :class:`Uncertified`: no guarantee.

    Sensitivity assumption: on neighbouring datasets every score changes by at most
    ``sensitivity`` (for MWEM's ``<q, h - p>`` over histograms of ``n`` records, ``1/n``);
    ``monotonic`` additionally needs all scores to move in the same direction, which signed
    complements and absolute values break, so it is refused with them.

    Args:
        oracle: a top-k oracle (``fastmwem.indices.TopKOracle``: an index or a workload's).
        epsilon: privacy parameter.
        sensitivity: sensitivity of every score.
        absolute: score ``|<key, v>|`` (``N = m`` candidates).
        complement: signed scores over ``2m`` candidates (keys and their negations).
        monotonic: the scores are monotonic (see above).
        k: size of the top set; default ``ceil(sqrt(N))``.
        approximate: how a certified gap is spent: ``"privacy"`` or ``"runtime"``.
        allow_uncertified: run over an approximate oracle that has no certificate.

    >>> from fastmwem.indices import FlatIndex
    >>> index = FlatIndex()
    >>> index.add(np.eye(4))
    >>> mech = LazyExponentialMechanism(index, epsilon=1.0)
    >>> mech.privacy
    BoundedRange(epsilon=1)
    >>> mech.select([0.0, 100.0, 0.0, 0.0], rng=0)
    1
    """

    oracle: TopKOracle
    _: KW_ONLY
    epsilon: float
    sensitivity: float = 1.0
    absolute: bool = False
    complement: bool = False
    monotonic: bool = False
    k: int | None = None
    approximate: str = "privacy"
    allow_uncertified: bool = False

    def __post_init__(self) -> None:
        _check_oracle(self.oracle)
        check_epsilon(self.epsilon)
        check_positive(self.sensitivity, "sensitivity")
        for name in ("absolute", "complement", "monotonic", "allow_uncertified"):
            _check_flag(getattr(self, name), name)
        if self.absolute and self.complement:
            raise ValueError("absolute and complement are two different laws: choose one")
        if self.monotonic and (self.absolute or self.complement):
            raise ValueError("monotonic cannot hold with absolute or complement scores (a score "
                             "and its negation move in opposite directions)")
        if self.k is not None:
            check_int(self.k, "k", minimum=1)
        if self.approximate not in _MODES:
            raise ValueError(f"approximate must be one of {_MODES}, got {self.approximate!r}")
        gap = self._certified_gap()
        if gap is None:
            if not self.allow_uncertified:
                raise ValueError(
                    f"oracle {type(self.oracle).__name__} is approximate (exact=False) and "
                    "carries no certified gap, so the exponential mechanism's guarantee would not "
                    "hold; pass allow_uncertified=True to run anyway without a privacy guarantee")
            warnings.warn("LazyExponentialMechanism over an approximate oracle without a "
                          "certified gap: the output has NO differential-privacy guarantee",
                          UncertifiedOracleWarning, stacklevel=3)

    # -- calibration -------------------------------------------------------------------------
    def _certified_gap(self) -> float | None:
        """The oracle's gap in score units: 0 when exact, None when nothing is certified."""
        if self.oracle.exact:
            return 0.0
        gap = getattr(self.oracle, "certified_gap", None)
        if gap is None:
            return None
        if isinstance(gap, bool) or not isinstance(gap, numbers.Real) or not (
                math.isfinite(gap) and float(gap) >= 0):
            raise ValueError(f"oracle.certified_gap must be None or a finite number >= 0, "
                             f"got {gap!r}")
        return float(gap)

    @property
    def scale(self) -> float:
        """Multiplier of a score in the log-weight: ``epsilon / (2 sensitivity)``, or
        ``epsilon / sensitivity`` when monotonic."""
        divisor = self.sensitivity if self.monotonic else 2.0 * self.sensitivity
        return float(self.epsilon) / float(divisor)

    @property
    def gap(self) -> float | None:
        """The certified gap in log-weight units (``c``): 0 for an exact oracle, None if none."""
        gap = self._certified_gap()
        return None if gap is None else gap * self.scale

    @property
    def exact_guarantee(self) -> bool:
        """Whether a proven privacy guarantee holds (False over an uncertified oracle)."""
        return self._certified_gap() is not None

    @property
    def privacy(self) -> BoundedRange | PureDP:
        gap = self._certified_gap()
        if gap is None:
            return Uncertified(self.epsilon)
        if gap == 0 or self.approximate == "privacy":
            return BoundedRange(self.epsilon)
        eps = exact(self.epsilon, "epsilon")
        divisor = exact(self.sensitivity, "sensitivity") * (1 if self.monotonic else 2)
        return PureDP(eps + 2 * eps * exact(gap, "certified_gap") / divisor)

    @property
    def n_candidates(self) -> int:
        """Number of candidates ``N``: the oracle's keys, twice over with ``complement``."""
        return int(self.oracle.n_keys) * (2 if self.complement else 1)

    # -- argument checks ---------------------------------------------------------------------
    def _check_query(self, query_vector: object) -> np.ndarray:
        v = check_scores(query_vector, "query_vector")
        if v.size != self.oracle.dimension:
            raise ValueError(f"query_vector must have length {self.oracle.dimension} (the "
                             f"oracle's dimension), got {v.size}")
        return v

    @staticmethod
    def _check_exclude(exclude: object, n: int) -> np.ndarray:
        if exclude is None:
            return np.empty(0, dtype=np.int64)
        if isinstance(exclude, (str, bytes)):
            raise TypeError("exclude must be a sequence of candidate ids")
        arr = np.atleast_1d(np.asarray(exclude))
        if arr.ndim != 1:
            raise ValueError(f"exclude must be 1-D, got shape {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError(f"exclude must hold integer candidate ids, got dtype {arr.dtype}")
        ids = arr.astype(np.int64, copy=False)
        if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):  # else sorted and distinct
            ids = np.unique(ids)
        if ids.size and (ids[0] < 0 or ids[-1] >= n):
            bad = ids[0] if ids[0] < 0 else ids[-1]
            raise ValueError(f"exclude ids must lie in 0 .. {n - 1}, got {bad}")
        if ids.size >= n:
            raise ValueError("exclude removes every candidate: nothing left to select")
        return ids

    def _k_for(self, n: int, n_excluded: int) -> int:
        k = self.k if self.k is not None else math.isqrt(n - 1) + 1  # ceil(sqrt(n))
        return min(int(k), n - n_excluded)

    def _checked(self, query_vector: object, exclude: object) -> tuple[np.ndarray, np.ndarray]:
        v = self._check_query(query_vector)
        n = self.n_candidates
        if n == 0:
            raise ValueError("the oracle holds no keys: nothing to select")
        return v, self._check_exclude(exclude, n)

    # -- scores ------------------------------------------------------------------------------
    def _candidate_scores(self, ids: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
        """Exact scores of candidate ids (mapped through ``absolute`` / ``complement``)."""
        ids = np.asarray(ids, dtype=np.int64)
        m = int(self.oracle.n_keys)
        base = ids % m if self.complement else ids
        values = np.asarray(self.oracle.score(base, query_vector), dtype=np.float64)
        if self.complement:
            return np.where(ids >= m, -values, values)
        return np.abs(values) if self.absolute else values

    def _search_abs(self, v: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """The oracle's top-``depth`` keys by ``|score|``: ids and signed scores, no padding."""
        # Called only for an oracle that has search_abs (checked where it is called).
        scores, ids = cast("AbsTopKOracle", self.oracle).search_abs(v[None, :], depth)
        ids = np.asarray(ids[0], dtype=np.int64)
        scores = np.asarray(scores[0], dtype=np.float64)
        keep = ids >= 0
        return ids[keep], scores[keep]

    def _retrieve(self, v: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate (ids, scores) that contain a top-``depth`` set of the candidate scores."""
        m = int(self.oracle.n_keys)
        depth = min(depth, m)
        if not (self.absolute or self.complement):
            scores, ids = self.oracle.search(v[None, :], depth)
            return ids[0], scores[0]
        if hasattr(self.oracle, "search_abs"):
            ids, scores = self._search_abs(v, depth)
            return (ids, np.abs(scores)) if self.absolute else _both_sides(ids, scores, m)
        # Both signs: the top of +v and of -v together hold the top by |score| and over 2m.
        scores, ids = self.oracle.search(np.stack([v, -v]), depth)
        if self.complement:
            return np.concatenate([ids[0], np.where(ids[1] >= 0, ids[1] + m, -1)]), \
                np.concatenate([scores[0], scores[1]])
        return np.concatenate([ids[0], ids[1]]), np.abs(np.concatenate([scores[0], scores[1]]))

    def _top(self, v: np.ndarray, k: int, excluded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The top-``k`` candidate ids (not excluded) and their scores, best first."""
        m = int(self.oracle.n_keys)
        if self.complement and not excluded.size and k <= m and hasattr(self.oracle,
                                                                         "search_abs"):
            ids, scores = self._search_abs(v, k)
            if ids.size == k:
                return _better_sides(ids, scores, m)
            ids, scores = _both_sides(ids, scores, m)
        else:
            ids, scores = self._retrieve(v, k + excluded.size)
        return _merged_top(ids, scores, k, excluded, self.oracle)

    # -- sampling ----------------------------------------------------------------------------
    def select(self, query_vector: object, *, rng: RNGLike = None, exclude: object = None,
               accountant: Accountant | None = None) -> int:
        """Return one candidate id drawn from the mechanism's law.

        Args:
            query_vector: the vector scored against every key (length ``oracle.dimension``).
            rng: seed or Generator (see ``fastmwem.random.make_rng``).
            exclude: candidate ids removed from the selection (e.g. queries already measured);
                the law on the rest is the mechanism's law restricted to them. The set must be
                public (chosen without looking at the data, or released earlier).
            accountant: charged ``privacy`` before the oracle is searched.
        """
        return self.select_with_stats(query_vector, rng=rng, exclude=exclude,
                                      accountant=accountant).index

    def select_with_stats(self, query_vector: object, *, rng: RNGLike = None,
                          exclude: object = None,
                          accountant: Accountant | None = None) -> LazyStats:
        """As :meth:`select`, returning the selected id with the work it took."""
        v, excluded = self._checked(query_vector, exclude)
        n = self.n_candidates
        k = self._k_for(n, excluded.size)
        generator = make_rng(rng)
        if accountant is not None:
            charge(accountant, self.privacy, "lazy exponential mechanism")
        top_ids, top_scores = self._top(v, k, excluded)
        return self._draw(v, top_ids, top_scores, excluded, generator)

    def _draw(self, v: np.ndarray, top_ids: np.ndarray, top_scores: np.ndarray,
              excluded: np.ndarray, generator: np.random.Generator) -> LazyStats:
        n = self.n_candidates
        scale = self.scale
        best_score = float(top_scores.max())
        winner, best, lowest = _noisy_best(top_scores, scale, best_score,
                                           generator.gumbel(size=top_scores.size))
        gap = self.gap if self.approximate == "privacy" else None
        lowered = gap if gap else 0.0
        margin = best - lowest - lowered * (1.0 + 2.0**-40)
        pool = n - top_ids.size - excluded.size
        n_tail = 0
        if pool > 0 and margin < math.inf:
            p_tail = 1.0 if margin < -700.0 else -math.expm1(-math.exp(-margin))
            n_tail = int(generator.binomial(pool, p_tail)) if p_tail > 0 else 0
        if n_tail:
            tail_ids = _tail_ids(generator, n, top_ids, excluded, n_tail)
            g_tail = _truncated_gumbel(generator, n_tail, p_tail, margin)
            j, best_tail, _ = _noisy_best(self._candidate_scores(tail_ids, v), scale,
                                          best_score, g_tail)
            if best_tail > best:
                return LazyStats(int(tail_ids[j]), n - excluded.size, top_ids.size, n_tail,
                                 margin, True)
        return LazyStats(int(top_ids[winner]), n - excluded.size, top_ids.size, n_tail, margin,
                         False)

    # -- the exact law (full scan; for tests and small N) --------------------------------------
    def log_probabilities(self, query_vector: object, *, exclude: object = None) -> np.ndarray:
        """The exact output law over all ``N`` candidates, as natural-log probabilities
        (``-inf`` for excluded ids). Scores every key: ``O(N d)``."""
        v, excluded = self._checked(query_vector, exclude)
        scores = self._candidate_scores(np.arange(self.n_candidates), v)
        keep = np.ones(scores.size, dtype=bool)
        keep[excluded] = False
        logw = np.full(scores.size, -np.inf)
        logw[keep] = _log_weights(scores[keep], self.scale)
        finite = logw[np.isfinite(logw)]
        return logw - np.log(np.exp(finite).sum())

    def probabilities(self, query_vector: object, *, exclude: object = None) -> np.ndarray:
        """The exact output law (see :meth:`log_probabilities`)."""
        return np.exp(self.log_probabilities(query_vector, exclude=exclude))

