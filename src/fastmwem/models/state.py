"""Multiplicative-weights state: the synthetic distribution MWEM refines, behind one interface.

:class:`SyntheticState` is what a release needs from a synthetic distribution: answers,
multiplicative-weights updates, and records. :class:`MWState` keeps a dense vector over every
cell (small domains); :class:`~fastmwem.models.factored.FactoredState` keeps a decomposable
model that never materialises the domain. The update arithmetic lives in
:func:`mw_group_step` and :func:`mw_query_step`, which work on any normalised table, so both
states apply exactly the same rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

import numpy as np

from fastmwem.data.domain import Domain, check_dense
from fastmwem.models.matching import dense_marginals, match_records, scored_sets
from fastmwem.models.sampling import systematic_counts
from fastmwem.workloads.base import LinearWorkload, groups_of_queries, queries_of_groups

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MWState", "SyntheticState", "MAX_RECORDS", "mw_group_step", "mw_query_step",
           "clipped_targets",
           "noisy_start", "partition_log_factors", "sample_records"]

#: Largest record count the state works with. A noisy count above it is clipped (free
#: post-processing): no dense histogram holds more records than a float64 counts exactly.
MAX_RECORDS = float(2**53)

# Largest |exponent| one multiply may apply. Each factor then lies in [e^-64, e^64], so the new
# total mass is positive and finite whatever the measurement; a larger step is split into equal
# sub-steps, renormalising in between, which multiplies out to the same update.
_MAX_STEP = 64.0


@runtime_checkable
class SyntheticState(Protocol):
    """A synthetic distribution over ``domain`` scaled to ``total`` records, refined in place.

    Answers are on the normalised distribution (fractions of records); multiply by ``total``
    for counts. Everything a state does is post-processing: it never sees the private data.
    """

    domain: Domain
    total: float

    @property
    def kind(self) -> str:
        """``"dense"``, ``"junction-tree"`` or ``"product"``."""
        ...

    def answer(self, workload: LinearWorkload) -> np.ndarray:
        """Answers of every query of ``workload``."""
        ...

    def answer_group(self, workload: LinearWorkload, group: int) -> np.ndarray:
        """Answers of the queries of one group."""
        ...

    def answer_groups(self, workload: LinearWorkload, groups: np.ndarray) -> np.ndarray:
        """Answers of the queries of ``groups`` (sorted group ids), concatenated in that order."""
        ...

    def measurable(self, workload: LinearWorkload, groups: np.ndarray) -> np.ndarray:
        """Which of ``groups`` the state can measure now (public: from its structure only)."""
        ...

    def update_group(self, workload: LinearWorkload, group: int, measured: np.ndarray, *,
                     step: float = 1.0) -> None:
        """Multiplicative-weights step for a measured group (``step`` scales its exponent)."""
        ...

    def update_query(self, workload: LinearWorkload, query: int, measured: float, *,
                     offsets: np.ndarray | None = None) -> None:
        """Multiplicative-weights step for one measured query."""
        ...

    def pass_order(self, workload: LinearWorkload, groups: list[int]) -> list[int]:
        """The order in which a reuse pass applies measurements of ``groups`` (positions)."""
        ...

    def checkpoint(self) -> object:
        """A snapshot for :meth:`moved` (may reuse one buffer: only the latest is valid)."""
        ...

    def moved(self, checkpoint: object) -> float:
        """How far the distribution moved since ``checkpoint`` (L1; may consume it)."""
        ...

    def sample(self, n: int, rng: np.random.Generator, *, systematic: bool = True,
               match: Sequence[Sequence[int]] = ()) -> pd.DataFrame:
        """``n`` records drawn from the distribution, as integer codes per attribute.

        ``systematic``: each cell's (or clique cell's) count within one of its expectation
        (:mod:`fastmwem.models.sampling`); else independent draws. ``match``: attribute sets
        (axes) whose marginals the drawn records are then moved to match
        (:mod:`fastmwem.models.matching`), after which a record is no longer a draw from the
        distribution on its own.
        """
        ...


def _residuals(workload: LinearWorkload, measured: np.ndarray, current: np.ndarray,
               total: float) -> tuple[np.ndarray, float]:
    """Unit residuals ``(clip(m / total) - q(p)) / s`` in ``[-2, 2]``, and ``s``."""
    s = float(workload.query_sensitivity)
    nonnegative = bool(getattr(workload, "nonnegative_queries", False))
    return _unit_residuals(measured, current, s, nonnegative, total), s


def _unit_residuals(measured: np.ndarray, current: np.ndarray, s: float, nonnegative: bool,
                    total: float) -> np.ndarray:
    return (clipped_targets(measured, s, nonnegative, total) - current) / s


def clipped_targets(measured: np.ndarray, s: float, nonnegative: bool,
                    total: float) -> np.ndarray:
    """Measured counts as fractions of ``total``, clipped to what a distribution can answer."""
    low = 0.0 if nonnegative else -s
    return np.clip(np.asarray(measured, dtype=np.float64) / total, low, s)


def mw_group_step(p: np.ndarray, workload: LinearWorkload, group: int, measured: np.ndarray,
                  total: float, step: float = 1.0) -> None:
    """In place on the normalised ``p``: the multiplicative-weights step for a measured group.

    ``p`` is a histogram of ``workload`` (a flat float64 array summing to 1). ``step > 0``
    multiplies the exponent: 1 is the MWEM paper's rule; adaptive runs weigh each measurement by
    its precision (see :mod:`fastmwem.release.annealing`).
    """
    current = workload.answer_group(p, group)
    s = float(workload.query_sensitivity)
    targets = clipped_targets(measured, s, bool(getattr(workload, "nonnegative_queries", False)),
                              total)
    if getattr(workload, "groups_partition_cells", False):
        workload.multiply_group(p, group, partition_log_factors(current, targets, s, step))
        return
    residuals = (targets - current) / s
    log_factors = residuals / (2.0 * s) if step == 1.0 else residuals * (step / (2.0 * s))
    # |sum_q log_factors[q] q(x)| <= sum_q |residuals[q]| / 2, as |q(x)| <= s.
    steps = max(1, math.ceil(float(np.abs(residuals).sum()) * step / (2.0 * _MAX_STEP)))
    for _ in range(steps):
        workload.multiply_group(p, group, log_factors / steps)
        p /= p.sum()


def partition_log_factors(current: np.ndarray, targets: np.ndarray, s: float,
                          step: float = 1.0) -> np.ndarray:
    """The log-factors of a group whose queries partition the cells, normalisation included.

    ``current``: the group's answers on the normalised distribution; ``targets``: its
    measurements as :func:`clipped_targets` gives them. Each cell lies in exactly one query of
    the group with ``q(x) = 1``, so the new total mass is known from the group's answers: it is
    folded into the factors, which saves a pass over the histogram. The residuals lie in
    ``[-2, 2]``, so every shifted factor is at least ``e^(-2 step)`` and so is the mass (the
    group's answers sum to 1).
    """
    residuals = (targets - current) / s
    log_factors = residuals / (2.0 * s) if step == 1.0 else residuals * (step / (2.0 * s))
    shifted: np.ndarray = log_factors - log_factors.max()
    mass = float((current * np.exp(shifted)).sum())
    return shifted - math.log(mass)


def mw_query_step(p: np.ndarray, workload: LinearWorkload, group: int, position: int,
                  measured: float, total: float) -> None:
    """In place on the normalised ``p``: the step for query ``position`` of ``group``."""
    answers = workload.answer_group(p, group)
    current = answers[position:position + 1]
    residual, s = _residuals(workload, np.array([measured]), current, total)
    log_factors = np.zeros(answers.size)
    # |residual| <= 2 and |q(x)| <= s: the factors lie within e^(+-1), no split needed.
    log_factors[position] = float(residual[0]) / (2.0 * s)
    workload.multiply_group(p, group, log_factors)
    p /= p.sum()


def group_of(offsets: np.ndarray, query: int) -> int:
    """The group holding ``query``, given the workload's ``group_offsets``."""
    return int(groups_of_queries(offsets, np.array([query]))[0])


class MWState:
    """A probability vector over the cells of ``domain`` and a record count ``total``.

    ``histogram`` is ``total * distribution``. Updates are the multiplicative-weights rule of
    the MWEM paper's (arXiv:1012.4763) Figure 1, written for the normalised distribution ``p`` and for queries scaled to
    values in ``[-1, 1]`` (``q / s`` with ``s`` the workload's ``query_sensitivity``; ``s = 1``
    for counting queries, marginals and parities, where this is exactly the paper's rule):
    ``p(x) <- p(x) exp((q(x) / s) (m / total - q(p)) / (2 s))``, then renormalised.

    Numerics: a noisy measurement ``m`` is first clipped to the answers a distribution can give,
    ``[0, s]`` (non-negative queries) or ``[-s, s]`` times ``total``; then every update factor is
    bounded whatever the noise, and nothing overflows or divides by zero, even at epsilon 1e-6.
    The clip is post-processing of a private measurement. All of it is post-processing: the
    state never sees the data.
    """

    def __init__(self, domain: Domain, distribution: np.ndarray, total: float) -> None:
        check_dense(domain.size, "the domain", "use a factored state")
        p = np.asarray(distribution, dtype=np.float64).reshape(-1)
        if p.size != domain.size:
            raise ValueError(f"distribution must have {domain.size} cells, got {p.size}")
        if not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise ValueError("distribution must be finite, non-negative and not all zero")
        if not np.isfinite(total) or total <= 0:
            raise ValueError(f"total must be a finite number > 0, got {total}")
        self.domain = domain
        self.distribution = p / p.sum()
        self.total = float(total)
        self._scratch: np.ndarray | None = None

    @classmethod
    def uniform(cls, domain: Domain, total: float) -> MWState:
        return cls(domain, np.full(domain.size, 1.0 / domain.size), total)

    @classmethod
    def from_noisy_histogram(cls, domain: Domain, noisy: np.ndarray, total: float,
                             uniform_mix: float) -> MWState:
        """Start from a noisy histogram clipped to ``[0, total]``, mixed with the uniform law.

        The mix keeps every cell positive: a multiplicative update can never revive a zero.
        Clipping each cell to the counts a histogram of ``total`` records can hold keeps the sum
        finite whatever the noise. A writable float64 ``noisy`` is overwritten (it is usually a
        fresh noisy array the size of the domain, so this saves a copy).
        """
        start = noisy_start(noisy, total, uniform_mix)
        return cls(domain, start, total)

    @property
    def histogram(self) -> np.ndarray:
        return self.distribution * self.total

    @property
    def kind(self) -> str:
        return "dense"

    # -- answers -------------------------------------------------------------------------------
    def answer(self, workload: LinearWorkload) -> np.ndarray:
        return workload.answer(self.distribution)

    def answer_group(self, workload: LinearWorkload, group: int) -> np.ndarray:
        return workload.answer_group(self.distribution, group)

    def answer_groups(self, workload: LinearWorkload, groups: np.ndarray) -> np.ndarray:
        groups = np.asarray(groups, dtype=np.int64)
        offsets = np.asarray(workload.group_offsets)
        if 4 * groups.size > offsets.size - 1:
            # Most groups: one full answer shares work between groups.
            return self.answer(workload)[queries_of_groups(offsets, groups)]
        return np.concatenate([self.answer_group(workload, int(g)) for g in groups])

    def measurable(self, workload: LinearWorkload, groups: np.ndarray) -> np.ndarray:
        return np.ones(np.asarray(groups).size, dtype=bool)

    # -- updates -------------------------------------------------------------------------------
    def update_group(self, workload: LinearWorkload, group: int, measured: np.ndarray, *,
                     step: float = 1.0) -> None:
        """Multiplicative-weights step for a measured group (one noisy answer per query)."""
        mw_group_step(self.distribution, workload, group, measured, self.total, step)

    def update_query(self, workload: LinearWorkload, query: int, measured: float, *,
                     offsets: np.ndarray | None = None) -> None:
        """Multiplicative-weights step for one measured query.

        ``offsets`` (the workload's ``group_offsets``) may be passed to save building them
        again: some workloads make a new array of ``n_queries`` entries on each call.
        """
        if offsets is None:
            offsets = workload.group_offsets
        group = group_of(offsets, query)
        mw_query_step(self.distribution, workload, group, query - int(offsets[group]),
                      measured, self.total)

    def _normalise(self) -> None:
        self.distribution /= self.distribution.sum()

    def update_vector(self, query: np.ndarray, measured: float) -> None:
        """Multiplicative-weights step for one measured query given as a vector over the cells.

        The same rule as :meth:`update_query` (Online Private Multiplicative Weights measures
        queries one at a time, outside any workload); ``s`` is ``max |query|``.
        """
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        if q.size != self.distribution.size:
            raise ValueError(f"query must have {self.distribution.size} cells, got {q.size}")
        s = float(np.abs(q).max())
        if not np.isfinite(s) or s == 0:
            raise ValueError("query must be finite and not all zero")
        current = np.array([float(np.einsum("i,i->", q, self.distribution))])  # no BLAS threads
        residual = float(_unit_residuals(np.array([measured]), current, s, bool(q.min() >= 0),
                                         self.total)[0])
        # |residual| <= 2 and |q(x)| / s <= 1: every factor lies within e^(+-1).
        self.distribution *= np.exp(q * (residual / (2.0 * s)))
        self._normalise()

    # -- reuse passes and records ----------------------------------------------------------------
    def pass_order(self, workload: LinearWorkload, groups: list[int]) -> list[int]:
        """Measurements in the order they were taken."""
        return list(range(len(groups)))

    def checkpoint(self) -> np.ndarray:
        if self._scratch is None:
            self._scratch = np.empty_like(self.distribution)
        np.copyto(self._scratch, self.distribution)
        return self._scratch

    def moved(self, checkpoint: object) -> float:
        """``sum |p - checkpoint|``, computed in ``checkpoint`` (which it overwrites)."""
        scratch = cast(np.ndarray, checkpoint)  # the buffer checkpoint() returned
        np.subtract(self.distribution, scratch, out=scratch)
        np.abs(scratch, out=scratch)
        return float(scratch.sum())

    def sample(self, n: int, rng: np.random.Generator, *, systematic: bool = True,
               match: Sequence[Sequence[int]] = ()) -> pd.DataFrame:
        return sample_records(self.distribution, self.domain, n, rng, systematic=systematic,
                              match=match)


def sample_records(distribution: np.ndarray, domain: Domain, n: int,
                   rng: np.random.Generator, *, systematic: bool = True,
                   match: Sequence[Sequence[int]] = ()) -> pd.DataFrame:
    """Draw ``n`` records from a distribution over the cells, as integer codes per attribute.

    ``systematic``: each cell gets ``floor`` or ``ceil`` of its expected count
    (:func:`~fastmwem.models.sampling.systematic_counts`), else a multinomial draw. A cell's
    count that close still leaves a marginal cell (a sum of many cells) off by more, so
    ``match`` moves the records towards the distribution's marginals on those attribute sets
    (:func:`~fastmwem.models.matching.match_records`).
    """
    import pandas as pd
    counts = (systematic_counts(distribution, n, rng) if systematic
              else rng.multinomial(n, distribution / distribution.sum()))
    cells = np.repeat(np.arange(distribution.size), counts)
    rng.shuffle(cells)
    codes = np.stack(np.unravel_index(cells, domain.shape), axis=1).astype(np.int64)
    if match:
        scored = scored_sets(match, domain.shape)
        marginal = dense_marginals(np.reshape(distribution, domain.shape), scored)
        match_records(codes, domain.shape, scored, marginal, rng)
    return pd.DataFrame({a: codes[:, i] for i, a in enumerate(domain.attributes)})


def noisy_start(noisy: np.ndarray, total: float, uniform_mix: float) -> np.ndarray:
    """A noisy table clipped to ``[0, total]``, normalised and mixed with the uniform law.

    The mix keeps every cell positive (multiplicative weights never revive a zero); clipping
    keeps the sum finite whatever the noise. A writable float64 ``noisy`` is overwritten.
    """
    start = np.asarray(noisy, dtype=np.float64).reshape(-1)
    if not start.flags.writeable:
        start = start.copy()
    np.clip(start, 0.0, float(total), out=start)
    mass = float(start.sum())
    if mass <= 0:
        start.fill(1.0 / start.size)
    else:
        start *= (1 - uniform_mix) / mass
        start += uniform_mix / start.size
    return start
