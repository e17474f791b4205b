"""The numbers of a quality report: which marginals to score, their distances, associations.

Everything here reads the real data and is NOT differentially private.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np

from fastmwem.data.domain import Domain, check_dense

__all__ = ["SCALE", "ASSOCIATION", "INDEPENDENT", "BANNER", "MarginalScore", "DEFAULT_MAX_MARGINALS", "MarginalCounts", "cramers_v", "independent_answers",
           "independent_table", "marginal_plan", "total_variation"]

#: The most 2-way (and 3-way) marginals a report scores by default.
DEFAULT_MAX_MARGINALS = 2000

# A 2-way marginal with more cells than this is left out of the report (its table would be
# counted for the real data, the synthetic data and the baseline, and drawn as a heat map).
_MAX_TABLE_CELLS = 2**20
# The scored 2-way marginals together have at most this many cells (fewer pairs are spread
# over the columns when they would have more): each is held for the real data, the synthetic
# data and the baseline.
_MAX_TWO_WAY_CELLS = 2**23
# 3-way marginals are scored only when all of them together have at most this many cells.
_MAX_THREE_WAY_CELLS = 2**22


#: What the report's distances are, in words.
SCALE = ("total variation distance (TVD): half the L1 distance between normalised marginals, "
         "0 = identical, 1 = disjoint (L1 runs from 0 to 2)")
#: What the association matrices hold, in words.
ASSOCIATION = ("Cramer's V between the binned columns (the schema's bins and categories): "
               "0 = independent, 1 = one column determines the other")
INDEPENDENT = ("independent columns: the product of the synthetic data's own 1-way marginals "
               "(what the same budget buys without correlations; no extra budget)")
BANNER = "NOT PRIVATE: computed from the real data"


@dataclasses.dataclass(frozen=True)
class MarginalScore:
    """The distance of one marginal of the synthetic data (and the baseline) to the real one."""

    attributes: tuple[str, ...]
    tvd: float
    baseline_tvd: float


def total_variation(real: np.ndarray, synthetic: np.ndarray) -> float:
    """Total variation distance of two count tables, each normalised to sum to one.

    Half the L1 distance between the normalised tables: 0 when they are equal, 1 when no cell
    has mass in both. An empty table counts as uniform.

    >>> total_variation(np.array([3.0, 1.0]), np.array([1.0, 1.0]))
    0.25
    """
    p, q = _normalised(real), _normalised(synthetic)
    if p.shape != q.shape:
        raise ValueError(f"tables must have the same shape, got {p.shape} and {q.shape}")
    return float(0.5 * np.abs(p - q).sum())


def _normalised(table: np.ndarray) -> np.ndarray:
    t = np.asarray(table, dtype=np.float64)
    total = t.sum()
    return t / total if total > 0 else np.full(t.shape, 1.0 / max(t.size, 1))


def cramers_v(table: np.ndarray) -> float:
    """Cramer's V of a 2-way count table: ``sqrt(phi^2 / (min(r, c) - 1))``.

    ``r`` and ``c`` count the rows and columns that hold records (no bias correction). 0 for
    independent columns, 1 when either column determines the other; NaN when a column has a
    single value in the data (no association can be measured).

    >>> cramers_v(np.array([[5.0, 0.0], [0.0, 5.0]]))
    1.0
    >>> cramers_v(np.array([[1.0, 1.0], [1.0, 1.0]]))
    0.0
    """
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2:
        raise ValueError(f"Cramer's V needs a 2-way table, got {t.ndim} dimensions")
    total = t.sum()
    rows, cols = t.sum(axis=1), t.sum(axis=0)
    t = t[rows > 0][:, cols > 0]
    k = min(t.shape) - 1
    if total <= 0 or k < 1:
        return float("nan")
    p = t / total
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    phi2 = float(np.sum(p * p / expected)) - 1.0
    return float(math.sqrt(min(max(phi2 / k, 0.0), 1.0)))


def independent_table(one_way: Sequence[np.ndarray]) -> np.ndarray:
    """The table of independent columns with the given 1-way marginals (normalised).

    >>> independent_table([np.array([1.0, 3.0]), np.array([1.0, 1.0])]).tolist()
    [[0.125, 0.125], [0.375, 0.375]]
    """
    out = np.ones(())
    for marginal in one_way:
        out = np.multiply.outer(out, _normalised(marginal))
    return out


def independent_answers(workload: object, one_way: Sequence[np.ndarray]) -> np.ndarray | None:
    """A workload's answers (fractions) on independent columns with these 1-way marginals.

    ``one_way[i]`` holds the counts of attribute ``i`` of the workload's domain. Workloads with
    marginal structure are answered group by group; others through the dense histogram. None
    when neither is possible (no marginal structure and a domain above the dense limit).
    """
    from fastmwem.workloads.base import LinearWorkload

    if not isinstance(workload, LinearWorkload):
        raise TypeError(f"workload must be a LinearWorkload, got {type(workload).__name__}")
    own = getattr(workload, "group_attributes", None)
    axes = None if own is None else [own(g) for g in range(int(workload.n_groups))]
    if axes is None or any(a is None for a in axes):
        try:
            check_dense(workload.domain.size, "the domain")
        except ValueError:
            return None
        return workload.answer(independent_table(one_way).reshape(-1))
    return np.concatenate([
        workload.answer_on_marginal(g, independent_table([one_way[i] for i in a]))
        for g, a in enumerate(axes)])


def marginal_plan(domain: Domain, max_marginals: int = DEFAULT_MAX_MARGINALS
                  ) -> tuple[dict[int, list[tuple[str, ...]]], list[str]]:
    """The attribute sets a report scores, by size (1, 2 and maybe 3), and notes on what is not.

    Every column; the 2-way marginals of at most ``max_marginals`` pairs (spread evenly over
    them in lexicographic order when there are more, skipping pairs of more than 2**20 cells,
    and fewer when they would have more than 2**23 cells together);
    the 3-way marginals only when all of them fit in ``max_marginals`` and 2**22 cells. The
    plan depends on the public domain only.
    """
    if isinstance(max_marginals, bool) or not isinstance(max_marginals, (int, np.integer)):
        raise TypeError(f"max_marginals must be a whole number, got {max_marginals!r}")
    if max_marginals < 1:
        raise ValueError(f"max_marginals must be >= 1, got {max_marginals}")
    attrs, size = domain.attributes, dict(zip(domain.attributes, domain.shape))
    plan: dict[int, list[tuple[str, ...]]] = {1: [(a,) for a in attrs]}
    notes: list[str] = []
    pairs: list[tuple[str, ...]] = [p for p in itertools.combinations(attrs, 2)
                                     if size[p[0]] * size[p[1]] <= _MAX_TABLE_CELLS]
    if len(pairs) < math.comb(len(attrs), 2):
        notes.append(f"{math.comb(len(attrs), 2) - len(pairs)} pairs of columns with more than "
                     f"{_MAX_TABLE_CELLS:,} cells are not scored")
    plan[2] = _spread(pairs, int(max_marginals))
    while _cells(plan[2], size) > _MAX_TWO_WAY_CELLS:  # a pair alone is within it
        plan[2] = _spread(pairs, len(plan[2]) * _MAX_TWO_WAY_CELLS // _cells(plan[2], size))
    if len(plan[2]) < len(pairs):
        notes.append(f"{len(plan[2]):,} of {len(pairs):,} pairs of columns scored (evenly "
                     "spread, within max_marginals and 2**23 cells)")
    n_triples = math.comb(len(attrs), 3)
    if n_triples and n_triples <= max_marginals:
        triples: list[tuple[str, ...]] = list(itertools.combinations(attrs, 3))
        if _cells(triples, size) <= _MAX_THREE_WAY_CELLS:
            plan[3] = triples
    if n_triples and 3 not in plan:
        notes.append("3-way marginals not scored: more than max_marginals of them, or more "
                     "than 2**22 cells together")
    return plan, notes


def _cells(sets: Iterable[tuple[str, ...]], size: dict[str, int]) -> int:
    return sum(math.prod(size[a] for a in s) for s in sets)


def _spread(items: list[tuple[str, ...]], most: int) -> list[tuple[str, ...]]:
    if len(items) <= most:
        return items
    picks = np.unique(np.linspace(0, len(items) - 1, most).round().astype(np.int64))
    return [items[int(i)] for i in picks]


class MarginalCounts:
    """Counts of chosen marginals of records seen block by block (records written as a stream).

    Answers :meth:`marginals` for the attribute sets it counts, like a
    :class:`~fastmwem.data.sources.MarginalSource`, without holding the records.

    >>> counts = MarginalCounts(Domain(["a", "b"], [2, 3]), [("a",), ("a", "b")])
    >>> counts.add(np.array([[0, 2], [1, 2], [1, 0]]))
    >>> len(counts), counts.marginal("a").tolist()
    (3, [1.0, 2.0])
    """

    def __init__(self, domain: Domain, attribute_sets: Iterable[Iterable[str]]) -> None:
        self._domain = domain
        self._rows = 0
        self._tables: dict[tuple[str, ...], np.ndarray] = {}
        self._axes: dict[tuple[str, ...], tuple[int, ...]] = {}
        for attrs in attribute_sets:
            names = tuple(attrs)
            axes = domain.axes(names)
            shape = tuple(domain.shape[i] for i in axes)
            check_dense(math.prod(shape), f"the marginal on {list(names)}")
            self._axes[names] = tuple(axes)
            self._tables[names] = np.zeros(shape)

    @property
    def domain(self) -> Domain:
        return self._domain

    def __len__(self) -> int:
        return self._rows

    def add(self, codes: np.ndarray) -> None:
        """Count a block of records (rows of integer codes in the domain's column order)."""
        block = np.asarray(codes)
        for names, table in self._tables.items():
            axes = self._axes[names]
            cells = np.ravel_multi_index(tuple(block[:, a] for a in axes), table.shape)
            table += np.bincount(cells, minlength=table.size).reshape(table.shape)
        self._rows += len(block)

    def marginal(self, attrs: str | Iterable[str]) -> np.ndarray:
        """The counts of one counted marginal, shaped by its attributes' sizes."""
        names = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        if names not in self._tables:
            raise ValueError(f"the marginal on {list(names)} was not counted")
        return self._tables[names].copy()

    def marginals(self, attribute_sets: Iterable[str | Iterable[str]]) -> list[np.ndarray]:
        """:meth:`marginal` of each attribute set, in order."""
        return [self.marginal(attrs) for attrs in attribute_sets]

    def histogram(self) -> np.ndarray:
        """Not available: only the chosen marginals are counted."""
        raise ValueError("only chosen marginals are counted, not the full histogram")
