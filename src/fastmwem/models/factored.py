"""A factored synthetic distribution for domains too large for a dense histogram.

The MWEM paper (Hardt, Ligett and McSherry, "A Simple and Practical Algorithm for Differentially
Private Data Release", arXiv:1012.4763) observes in s.4 that when no measured query spans two
groups of attributes, the
multiplicative-weights distribution is a product over those groups. :class:`FactoredState` goes
further and keeps it as a decomposable model: a junction tree of cliques with
``P = prod(clique marginals) / prod(separator marginals)`` (:mod:`fastmwem.models.junction`).

* A measured group whose attributes lie inside a clique updates that clique's table with the
  very rule of the dense state (:func:`~fastmwem.models.state.mw_group_step`): the update
  multiplies the joint by a function of the clique's attributes, which keeps the model
  decomposable, and the other cliques follow by message passing.
* A group that spans several cliques first *absorbs* its attributes: they are added along tree
  paths, or a new clique joins independent components, which keeps the distribution and the
  junction-tree property. ``max_clique_cells`` caps every clique: :meth:`measurable` tells which
  groups could be absorbed within the cap, from the structure alone (public).
* ``product=True`` keeps disjoint factors only (no separators), the MWEM paper's s.4 literally:
  absorbing merges whole factors.

Marginals inside a clique are read off; others come from exact inference. Records are drawn
clique by clique down the tree. No array over the whole domain is ever built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from fastmwem._validation import check_int
from fastmwem.data.domain import Domain
from fastmwem.models.junction import JunctionTree, Plan
from fastmwem.models.matching import match_records
from fastmwem.models.state import group_of, mw_group_step, mw_query_step, noisy_start
from fastmwem.models.tables import outer
from fastmwem.workloads.base import LinearWorkload

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FactoredState", "DEFAULT_MAX_CLIQUE_CELLS", "marginal_axes"]

#: Default cap on the cells of one clique of a factored state.
DEFAULT_MAX_CLIQUE_CELLS = 2**16


def marginal_axes(workload: LinearWorkload) -> list[tuple[int, ...]] | None:
    """Every group's attributes (``group_attributes``), or ``None`` if some group has none."""
    own = getattr(workload, "group_attributes", None)
    if own is None:
        return None
    out = []
    for g in range(int(workload.n_groups)):
        axes = own(g)
        if axes is None:
            return None
        out.append(tuple(axes))
    return out


class FactoredState:
    """A synthetic distribution over ``domain`` kept as a junction tree of clique tables.

    Starts as the uniform law (every attribute its own clique). Meets
    :class:`~fastmwem.models.state.SyntheticState`; workloads need a marginal structure
    (``group_attributes`` and ``group_on_marginal``).

    Args:
        domain: the domain (any size).
        total: the record count the distribution is scaled to.
        max_clique_cells: the largest clique (cells) a measurement may create.
        product: keep disjoint factors only (no separators).
        max_model_cells: the most cells all clique tables may hold together after a
            measurement (``None``: no bound but the cliques'), as AIM bounds its model's size.

    >>> d = Domain(["a", "b", "c"], [2, 3, 2])
    >>> s = FactoredState(d, 10.0)
    >>> s.marginal((0, 2)).tolist()
    [[0.25, 0.25], [0.25, 0.25]]
    """

    def __init__(self, domain: Domain, total: float, *,
                 max_clique_cells: int = DEFAULT_MAX_CLIQUE_CELLS, product: bool = False,
                 max_model_cells: int | None = None) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {type(domain).__name__}")
        if not np.isfinite(total) or total <= 0:
            raise ValueError(f"total must be a finite number > 0, got {total}")
        self.domain = domain
        self.total = float(total)
        self.max_clique_cells = check_int(max_clique_cells, "max_clique_cells",
                                          minimum=max(domain.shape))
        self.max_model_cells = (None if max_model_cells is None else
                                check_int(max_model_cells, "max_model_cells",
                                          minimum=sum(domain.shape)))
        self.tree = JunctionTree(domain.shape, product=bool(product))
        self._version = 0  # bumped by every change of the distribution or the structure
        self._marginals: dict[tuple[int, ...], np.ndarray] = {}
        self._marginals_version = 0
        self._plans: dict[tuple[int, ...], tuple[tuple[int, ...], Plan]] = {}
        self._structure = 0
        self._holders: dict[tuple[int, ...], int] = {}  # clique ids until an absorption
        self._subs: dict[tuple[int, tuple[int, ...]], tuple[LinearWorkload, int]] = {}
        self._subs_of: object = None
        self._axes: dict[int, tuple[int, ...]] = {}
        self._axes_of: object = None

    @classmethod
    def from_noisy_marginals(cls, domain: Domain, noisy: list[np.ndarray], total: float,
                             uniform_mix: float, *,
                             max_clique_cells: int = DEFAULT_MAX_CLIQUE_CELLS,
                             product: bool = False,
                             max_model_cells: int | None = None) -> FactoredState:
        """Independent attributes from noisy 1-way marginals (clipped, mixed with uniform)."""
        state = cls(domain, total, max_clique_cells=max_clique_cells, product=product,
                    max_model_cells=max_model_cells)
        if len(noisy) != len(domain):
            raise ValueError(f"noisy must hold one marginal per attribute ({len(domain)}), "
                             f"got {len(noisy)}")
        for a, values in enumerate(noisy):
            clique = state.tree.cliques[state.tree.holder((a,))]
            clique.table[...] = noisy_start(np.array(values, dtype=np.float64), total,
                                            uniform_mix)
        return state

    @property
    def kind(self) -> str:
        return "product" if self.tree.product else "junction-tree"

    @property
    def cliques(self) -> list[tuple[str, ...]]:
        """The cliques' attribute names (public: they follow from the measured groups only)."""
        names = self.domain.attributes
        return sorted(tuple(names[a] for a in c.axes) for c in self.tree.cliques.values())

    @property
    def model_cells(self) -> int:
        """Cells of all clique tables together."""
        return sum(c.table.size for c in self.tree.cliques.values())

    # -- answers -------------------------------------------------------------------------------
    def marginal(self, axes: tuple[int, ...]) -> np.ndarray:
        """The synthetic marginal (fractions) on ``axes``, sorted domain axes, as a table."""
        if self._marginals_version != self._version:
            self._marginals.clear()
            self._marginals_version = self._version
        table = self._marginals.get(axes)
        if table is None:
            parts = self.tree.split(axes)
            if len(parts) == 1:
                table = self.tree.marginal(axes)
            else:  # independent components: the product of their (cached) marginals
                table = outer([(here, self.marginal(here)) for _, here in parts])[1]
            self._marginals[axes] = table
        return table

    def _group_axes(self, workload: LinearWorkload, group: int) -> tuple[int, ...]:
        """The attributes of ``group`` (cached per workload: every round asks for all)."""
        if self._axes_of is not workload:
            self._axes.clear()
            self._axes_of = workload
        axes = self._axes.get(group)
        if axes is None:
            own = getattr(workload, "group_attributes", None)
            found = None if own is None else own(group)
            if found is None:
                raise TypeError(
                    f"a factored state needs a workload with a marginal structure; "
                    f"{type(workload).__name__} group {group} spans no known attributes")
            axes = self._axes[group] = tuple(found)
        return axes

    def answer_group(self, workload: LinearWorkload, group: int) -> np.ndarray:
        axes = self._group_axes(workload, group)
        return np.asarray(workload.answer_on_marginal(group, self.marginal(axes)),
                          dtype=np.float64)

    def answer_groups(self, workload: LinearWorkload, groups: np.ndarray) -> np.ndarray:
        parts = [self.answer_group(workload, int(g)) for g in np.asarray(groups)]
        return np.concatenate(parts) if parts else np.zeros(0)

    def answer(self, workload: LinearWorkload) -> np.ndarray:
        return self.answer_groups(workload, np.arange(int(workload.n_groups)))

    # -- structure -----------------------------------------------------------------------------
    def plan(self, axes: tuple[int, ...]) -> Plan:
        """How measuring a group on ``axes`` would change the structure.

        Cached while the components holding ``axes`` keep their structure.
        """
        stamps = tuple(self.tree.stamps[a] for a in axes)
        cached = self._plans.get(axes)
        if cached is None or cached[0] != stamps:
            cached = (stamps, self.tree.plan(axes))
            self._plans[axes] = cached
        return cached[1]

    def fits(self, axes: tuple[int, ...]) -> bool:
        """Whether a group on ``axes`` can be measured within the caps (clique and model)."""
        return self._refusal(self.plan(axes)) is None

    def _refusal(self, plan: Plan) -> str | None:
        """Which cap absorbing ``plan`` would break (``None``: neither)."""
        if plan.covered:
            return None
        if plan.largest > self.max_clique_cells:
            return (f"a clique of {plan.largest} cells, above max_clique_cells = "
                    f"{self.max_clique_cells}")
        if self.max_model_cells is not None and \
                self.model_cells + plan.growth > self.max_model_cells:
            return (f"a model of {self.model_cells + plan.growth} cells, above "
                    f"max_model_cells = {self.max_model_cells}")
        return None

    def measurable(self, workload: LinearWorkload, groups: np.ndarray) -> np.ndarray:
        return np.array([self.fits(self._group_axes(workload, int(g))) for g in groups],
                        dtype=bool)

    def _clique_for(self, axes: tuple[int, ...]) -> int:
        """The clique holding ``axes``, absorbing them first if needed (within the cap)."""
        # Reuse passes ask for the same few groups' cliques thousands of times; the answer
        # depends only on the structure, which changes only by an absorption below.
        cid = self._holders.get(axes)
        if cid is not None:
            return cid
        plan = self.plan(axes)
        if plan.covered:
            cid = self._holders[axes] = self.tree.holder(axes)
            return cid
        refusal = self._refusal(plan)
        if refusal is not None:
            names = [self.domain.attributes[a] for a in axes]
            raise ValueError(f"measuring {names} needs {refusal}")
        cid = self.tree.absorb(plan)
        self._structure += 1
        self._holders.clear()
        self._version += 1
        return cid

    def _sub(self, workload: LinearWorkload, group: int, axes: tuple[int, ...]
             ) -> tuple[LinearWorkload, int]:
        """``group`` over the marginal domain of clique ``axes`` (cached per workload)."""
        if self._subs_of is not workload:
            self._subs.clear()
            self._subs_of = workload
        key = (group, axes)
        if key not in self._subs:
            self._subs[key] = workload.group_on_marginal(group, axes)
        return self._subs[key]

    # -- updates -------------------------------------------------------------------------------
    def _clique_table(self, workload: LinearWorkload, group: int
                      ) -> tuple[np.ndarray, LinearWorkload, int]:
        """The (root) table of the clique holding ``group``, and the group over it."""
        cid, sub, local = self.clique_of(workload, group)
        return self.root_table(cid), sub, local

    def holds(self, workload: LinearWorkload, group: int) -> bool:
        """Whether a clique already holds ``group`` (so that :meth:`clique_of` absorbs
        nothing)."""
        return self.tree.covering(self._group_axes(workload, group)) is not None

    def clique_of(self, workload: LinearWorkload, group: int
                  ) -> tuple[int, LinearWorkload, int]:
        """The clique holding ``group`` (absorbed first if needed), and the group over its
        table: ``(clique id, workload over the clique's marginal domain, its group there)``."""
        cid = self._clique_for(self._group_axes(workload, group))
        return (cid, *self._sub(workload, group, self.tree.cliques[cid].axes))

    def root_table(self, cid: int) -> np.ndarray:
        """Clique ``cid``'s table, flat, after making it the root: the caller updates it in
        place (the joint is multiplied as the table is; the tree is no longer calibrated).

        The state's cached marginals are dropped here, before the caller's write: read nothing
        of the state (no :meth:`marginal`, no answer) until the writes are done.
        """
        self.tree.make_root(cid)
        self.tree.calibrated = False
        self._version += 1
        return self.tree.cliques[cid].table.reshape(-1)

    def update_group(self, workload: LinearWorkload, group: int, measured: np.ndarray, *,
                     step: float = 1.0) -> None:
        table, sub, local = self._clique_table(workload, group)
        mw_group_step(table, sub, local, measured, self.total, step)

    def update_query(self, workload: LinearWorkload, query: int, measured: float, *,
                     offsets: np.ndarray | None = None) -> None:
        if offsets is None:
            offsets = workload.group_offsets
        group = group_of(offsets, query)
        table, sub, local = self._clique_table(workload, group)
        position = query - int(offsets[group])
        mw_query_step(table, sub, local, position, measured, self.total)

    # -- reuse passes and records ----------------------------------------------------------------
    def pass_order(self, workload: LinearWorkload, groups: list[int]) -> list[int]:
        """Measurements grouped by clique, cliques in depth-first tree order.

        Consecutive updates in one clique need no message; a depth-first walk passes each
        message of the tree at most twice per reuse pass.
        """
        axes = [self._group_axes(workload, g) for g in groups]
        for a in axes:  # absorbing one group may re-shape the cliques found for another
            self._clique_for(a)
        rank = self.tree.walk_order()
        keys = [rank[self._clique_for(a)] for a in axes]
        return sorted(range(len(groups)), key=lambda i: (keys[i], i))

    def checkpoint(self) -> tuple[int, dict[int, np.ndarray]]:
        self.tree.calibrate()
        return self._structure, {c: k.table.copy() for c, k in self.tree.cliques.items()}

    def moved(self, checkpoint: object) -> float:
        """Sum over cliques of the L1 distance their marginals moved (inf after a new clique)."""
        structure, tables = cast("tuple[int, dict[int, np.ndarray]]", checkpoint)  # ours
        if structure != self._structure:
            return math.inf
        self.tree.calibrate()
        return float(sum(np.abs(k.table - tables[c]).sum() for c, k in self.tree.cliques.items()))

    def log_probability(self, codes: np.ndarray) -> np.ndarray:
        """``log p(x)`` of each row of integer codes (``-inf`` where the model puts no mass)."""
        return self.tree.log_probability(np.asarray(codes, dtype=np.int64))

    def sample(self, n: int, rng: np.random.Generator, *, systematic: bool = True,
               match: Sequence[Sequence[int]] = ()) -> pd.DataFrame:
        import pandas as pd
        codes = self.tree.sample(n, rng, systematic=systematic)
        if match:
            match_records(codes, self.domain.shape, match, self.marginal, rng)
        return pd.DataFrame({a: codes[:, i] for i, a in enumerate(self.domain.attributes)})
