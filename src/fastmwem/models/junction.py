"""A decomposable distribution: a junction forest of clique tables.

The joint law is ``P(x) = prod_C P(x_C) / prod_S P(x_S)`` over the cliques ``C`` and the
separators ``S`` (edges) of a forest whose cliques containing any one attribute are connected
(the running intersection property). Components are independent (their "separators" are empty),
so a forest of single-attribute cliques is the product of its 1-way marginals, and a forest
without separators is the disjoint product of the MWEM paper's s.4 (Hardt, Ligett and McSherry,
"A Simple and Practical Algorithm for Differentially Private Data Release", arXiv:1012.4763).

Tables are kept lazily: each component has a *root*, and a clique's table is its marginal as
of the last time it was calibrated against its parent (towards the root). The joint is then
``root table * prod_{C != root} table_C / table_C(x_S)``, i.e. the root's marginal times each
other clique's conditional given its separator. Updating the root changes only the root's
table; moving the root along an edge passes one message. :meth:`calibrate` makes every table
the true marginal again.

Structure changes (:meth:`plan` and :meth:`absorb`) depend only on the sets of attributes
absorbed, never on the tables: which structure a run ends with is public when those sets are.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from fastmwem.models.sampling import stratified_uniforms
from fastmwem.models.tables import divide, expand, marginalise, outer, product_sum

__all__ = ["JunctionTree", "Plan"]


@dataclass
class Clique:
    """One clique: its sorted axes, its table, its parent towards the root and neighbours."""

    axes: tuple[int, ...]
    table: np.ndarray
    parent: int | None = None
    neighbours: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Plan:
    """How absorbing ``axes`` would change the structure.

    Attributes:
        axes: the attributes to bring into one clique.
        covered: whether a clique already holds them (nothing changes).
        merges: per component touched, its target clique and the attributes added along paths
            towards it, ``(target, ((attribute, path), ...))``; in product mode, the cliques
            merged into one.
        join: whether a new clique on ``axes`` joins several components.
        largest: cells of the largest clique the plan creates or grows (0 if none).
        growth: at most the cells the clique tables gain together: a new clique counts whole
            and the targets of a join that it contains (then folded away) count negative;
            other cliques that end up inside a neighbour are folded away too, and not
            subtracted.
    """

    axes: tuple[int, ...]
    covered: bool
    merges: tuple[tuple[int, tuple[tuple[int, tuple[int, ...]], ...]], ...] = ()
    join: bool = False
    largest: int = 0
    growth: int = 0


class JunctionTree:
    """A junction forest over a domain of ``shape``; starts as the uniform product law.

    Args:
        shape: the domain's attribute sizes.
        product: keep disjoint factors only (absorbing merges whole components into one
            clique; MWEM paper, arXiv:1012.4763, s.4) instead of a junction tree with separators.
    """

    def __init__(self, shape: tuple[int, ...], *, product: bool = False) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.product = product
        self.cliques: dict[int, Clique] = {}
        self._holding: list[set[int]] = [set() for _ in self.shape]
        #: Per attribute, bumped whenever its component changes structure.
        self.stamps = [0] * len(self.shape)
        self._next = 0
        self._components: list[list[int]] | None = None
        self._component_index: dict[int, int] = {}
        self.calibrated = True
        for a, n in enumerate(self.shape):
            self._add((a,), np.full(n, 1.0 / n))

    # -- bookkeeping ---------------------------------------------------------------------------
    def cells(self, axes: tuple[int, ...]) -> int:
        return math.prod(self.shape[a] for a in axes)

    def _add(self, axes: tuple[int, ...], table: np.ndarray) -> int:
        self._components = None
        cid = self._next
        self._next += 1
        self.cliques[cid] = Clique(axes, np.ascontiguousarray(table, dtype=np.float64))
        for a in axes:
            self._holding[a].add(cid)
        return cid

    def _remove(self, cid: int) -> None:
        self._components = None
        clique = self.cliques.pop(cid)
        for a in clique.axes:
            self._holding[a].discard(cid)
        for other in clique.neighbours:
            self.cliques[other].neighbours.discard(cid)

    def _set_axes(self, cid: int, axes: tuple[int, ...], table: np.ndarray) -> None:
        clique = self.cliques[cid]
        for a in set(axes) - set(clique.axes):
            self._holding[a].add(cid)
        clique.axes, clique.table = axes, np.ascontiguousarray(table)

    def _link(self, u: int, v: int) -> None:
        self._components = None
        self.cliques[u].neighbours.add(v)
        self.cliques[v].neighbours.add(u)

    def covering(self, axes: tuple[int, ...]) -> int | None:
        """The smallest clique holding every attribute of ``axes`` (``None`` if none does)."""
        if not axes:
            return min(self.cliques, key=lambda c: (self.cells(self.cliques[c].axes), c))
        common = set.intersection(*(self._holding[a] for a in axes))
        if not common:
            return None
        return min(common, key=lambda c: (self.cells(self.cliques[c].axes), c))

    def holder(self, axes: tuple[int, ...]) -> int:
        """:meth:`covering` for attributes that some clique holds."""
        cid = self.covering(axes)
        if cid is None:
            raise LookupError(f"no clique holds the attributes {list(axes)}")
        return cid

    def components(self) -> list[list[int]]:
        """Clique ids of each component, breadth first from its smallest id (cached)."""
        if self._components is None:
            self._components = self._find_components()
            self._component_index = {v: i for i, order in enumerate(self._components)
                                     for v in order}
        return self._components

    def _find_components(self) -> list[list[int]]:
        seen: set[int] = set()
        out = []
        for start in sorted(self.cliques):
            if start not in seen:
                order = self._bfs(start)[0]
                seen.update(order)
                out.append(order)
        return out

    def walk_order(self) -> dict[int, int]:
        """Position of each clique in a depth-first walk of each component."""
        rank: dict[int, int] = {}
        for order in self.components():
            stack = [order[0]]
            while stack:
                v = stack.pop()
                if v not in rank:
                    rank[v] = len(rank)
                    stack.extend(sorted(self.cliques[v].neighbours - rank.keys(), reverse=True))
        return rank

    def _bfs(self, start: int) -> tuple[list[int], dict[int, int | None]]:
        """Cliques of ``start``'s component breadth first, and their parents towards it."""
        parent: dict[int, int | None] = {start: None}
        order = [start]
        queue = deque([start])
        while queue:
            u = queue.popleft()
            for v in sorted(self.cliques[u].neighbours):
                if v not in parent:
                    parent[v] = u
                    order.append(v)
                    queue.append(v)
        return order, parent

    # -- messages ------------------------------------------------------------------------------
    def _separator(self, u: int, v: int) -> tuple[int, ...]:
        return tuple(sorted(set(self.cliques[u].axes) & set(self.cliques[v].axes)))

    def _pass(self, u: int, v: int) -> None:
        """Make ``v``'s marginal on the separator equal ``u``'s (``v`` keeps its conditional)."""
        sep = self._separator(u, v)
        if not sep:
            return
        cu, cv = self.cliques[u], self.cliques[v]
        ratio = divide(marginalise(cu.table, cu.axes, sep), marginalise(cv.table, cv.axes, sep))
        cv.table *= expand(ratio, sep, cv.axes)
        cv.table /= cv.table.sum()

    def make_root(self, cid: int) -> None:
        """Make ``cid`` its component's root, so that its table is its true marginal."""
        path = [cid]
        up = self.cliques[cid].parent
        while up is not None:
            path.append(up)
            up = self.cliques[up].parent
        for i in range(len(path) - 1, 0, -1):
            u, v = path[i], path[i - 1]
            if not self.calibrated:
                self._pass(u, v)
            self.cliques[u].parent = v
        self.cliques[cid].parent = None

    def calibrate(self) -> None:
        """Make every table its clique's true marginal (one pass down from each root)."""
        if self.calibrated:
            return
        for cid, clique in self.cliques.items():
            if clique.parent is None:
                order, parent = self._bfs(cid)
                for v in order[1:]:  # only the root has no parent
                    self._pass(cast(int, parent[v]), v)
        self.calibrated = True

    def _reroot_all(self) -> None:
        """Parents from a breadth-first search of each component (tables must be calibrated)."""
        for order in self.components():
            parent = self._bfs(order[0])[1]
            for v in order:
                self.cliques[v].parent = parent[v]

    # -- inference -----------------------------------------------------------------------------
    def marginal(self, axes: tuple[int, ...]) -> np.ndarray:
        """The marginal on ``axes`` (sorted), as a table over them.

        Read off the smallest clique holding them; otherwise each component's part by variable
        elimination over the smallest subtree that holds it, and the parts multiplied.
        """
        cid = self.covering(axes)
        if cid is not None:
            self.make_root(cid)
            clique = self.cliques[cid]
            return np.ascontiguousarray(marginalise(clique.table, clique.axes, axes))
        parts = [(here, self._component_marginal(here)) for _, here in self.split(axes)]
        return outer(parts)[1]

    def _component_marginal(self, axes: tuple[int, ...]) -> np.ndarray:
        cid = self.covering(axes)
        if cid is not None:
            return self.marginal(axes)
        root = max(set().union(*(self._holding[a] for a in axes)),
                   key=lambda c: (len(set(axes) & set(self.cliques[c].axes)), -c))
        self.make_root(root)
        keep: dict[int, set[int]] = {}
        for a in axes:
            # The top of the subtree of cliques holding a, then the path from it to the root.
            top = next(iter(self._holding[a]))
            parent = self.cliques[top].parent
            while parent is not None and a in self.cliques[parent].axes:
                top, parent = parent, self.cliques[parent].parent
            v: int | None = top
            while v is not None:
                keep.setdefault(v, set()).add(a)
                v = self.cliques[v].parent
        children: dict[int, list[int]] = {v: [] for v in keep}
        for v in keep:
            p = self.cliques[v].parent
            if p is not None:
                children[p].append(v)
        return self._eliminate(root, children, keep)

    def _eliminate(self, v: int, children: dict[int, list[int]], keep: dict[int, set[int]]
                   ) -> np.ndarray:
        """The message of ``v``'s subtree: its conditional times its children's, summed out."""
        clique = self.cliques[v]
        factors = [(clique.axes, clique.table)]
        if clique.parent is not None:
            sep = self._separator(v, clique.parent)
            factors = [(clique.axes, divide(clique.table, expand(
                marginalise(clique.table, clique.axes, sep), sep, clique.axes)))]
            out = tuple(sorted(set(sep) | keep[v]))
        else:
            out = tuple(sorted(keep[v]))
        for w in children[v]:
            message = self._eliminate(w, children, keep)
            factors.append((tuple(sorted(set(self._separator(w, v)) | keep[w])), message))
        return product_sum(factors, out)

    # -- structure -----------------------------------------------------------------------------
    def plan(self, axes: tuple[int, ...]) -> Plan:
        """How :meth:`absorb` would bring ``axes`` into one clique (structure only).

        The plan depends only on the components holding ``axes``: it stays valid while their
        attributes' :attr:`stamps` do not change.
        """
        if self.covering(axes) is not None:
            return Plan(axes, True)
        groups = self.split(axes)
        if self.product:
            # Each component is one clique: merge the touched ones into their product.
            touched = [order[0] for order, _ in groups]
            union = tuple(sorted(a for v in touched for a in self.cliques[v].axes))
            merged = self.cells(union)
            return Plan(axes, False, tuple((v, ()) for v in touched), False, merged,
                        merged - sum(self.cliques[v].table.size for v in touched))
        merges = []
        largest = growth = self.cells(axes) if len(groups) > 1 else 0
        for order, here in groups:
            target, additions, grown = self._best_target(order, here)
            merges.append((target, additions))
            largest = max(largest, *grown.values()) if grown else largest
            growth += sum(cells - self.cliques[u].table.size for u, cells in grown.items())
            if len(groups) > 1 and not grown and set(self.cliques[target].axes) <= set(axes):
                growth -= self.cliques[target].table.size  # folded into the new clique
        return Plan(axes, False, tuple(merges), len(groups) > 1, largest, growth)

    def split(self, axes: tuple[int, ...]) -> list[tuple[list[int], tuple[int, ...]]]:
        """The components holding some of ``axes``, each with the axes it holds."""
        orders = self.components()
        index = self._component_index
        held: dict[int, list[int]] = {}
        for a in axes:
            held.setdefault(index[next(iter(self._holding[a]))], []).append(a)
        return [(orders[c], tuple(here)) for c, here in sorted(held.items())]

    def _best_target(self, order: list[int], axes: tuple[int, ...]
                     ) -> tuple[int, tuple[tuple[int, tuple[int, ...]], ...], dict[int, int]]:
        """The target clique in one component that keeps the grown cliques smallest.

        Each attribute not in the target is added to every clique on the path from its nearest
        clique to the target (a junction tree stays one after each such step).
        """
        cid = self.covering(axes)
        if cid is not None:
            return cid, (), {}
        options = [self._grow_towards(target, axes) for target in order]
        best = min(options, key=lambda o: (max(o[2].values()), sum(o[2].values()), o[0]))
        return best

    def _grow_towards(self, target: int, axes: tuple[int, ...]
                      ) -> tuple[int, tuple[tuple[int, tuple[int, ...]], ...], dict[int, int]]:
        """The paths that bring ``axes`` into ``target``, and the cells of the grown cliques."""
        parent = self._bfs(target)[1]
        depth = _depths(parent)
        added: dict[int, set[int]] = {}
        additions = []
        for a in axes:
            if a in self.cliques[target].axes:
                continue
            v = min(self._holding[a], key=lambda c: (depth[c], c))
            path = [v]
            up = parent[v]
            while up is not None:
                path.append(up)
                up = parent[up]
            additions.append((a, tuple(path)))
            for u in path[1:]:
                added.setdefault(u, set()).add(a)
        grown = {u: self.cells(tuple(set(self.cliques[u].axes) | extra))
                 for u, extra in added.items()}
        return target, tuple(additions), grown

    def absorb(self, plan: Plan) -> int:
        """Apply ``plan``; return the clique that now holds its axes. Keeps the distribution."""
        if plan.covered:
            return self.holder(plan.axes)
        touched = {a for order, _ in self.split(plan.axes) for v in order
                   for a in self.cliques[v].axes}
        for a in touched:
            self.stamps[a] += 1
        self.calibrate()
        if self.product:
            self._merge_product([v for v, _ in plan.merges])
        else:
            targets = [self._grow(target, additions) for target, additions in plan.merges]
            if plan.join:
                self._join(plan.axes, targets)
        self._reroot_all()
        return self.holder(plan.axes)

    def _merge_product(self, merged: list[int]) -> int:
        """Replace whole components (single cliques) by the product of their tables."""
        axes, table = outer([(self.cliques[v].axes, self.cliques[v].table) for v in merged])
        for v in merged:
            self._remove(v)
        return self._add(axes, table)

    def _grow(self, target: int, additions: tuple[tuple[int, tuple[int, ...]], ...]) -> int:
        for a, path in additions:
            for prev, u in zip(path, path[1:]):
                self._add_attribute(prev, u, a)
        return self._prune(target)

    def _add_attribute(self, prev: int, u: int, a: int) -> None:
        """Add ``a`` to ``u``: ``P(x_u, x_a) = P(x_u) P(x_a | x_S)``, from ``prev`` (holds a)."""
        sep = self._separator(prev, u)
        cp, cu = self.cliques[prev], self.cliques[u]
        joint = marginalise(cp.table, cp.axes, tuple(sorted(sep + (a,))))
        cond_axes = tuple(sorted(sep + (a,)))
        cond = divide(joint, expand(marginalise(joint, cond_axes, sep), sep, cond_axes))
        axes = tuple(sorted(cu.axes + (a,)))
        table = expand(cu.table, cu.axes, axes) * expand(cond, cond_axes, axes)
        self._set_axes(u, axes, table)

    def _join(self, axes: tuple[int, ...], targets: list[int]) -> int:
        """A new clique on ``axes`` joining the components' targets (independent parts)."""
        parts = []
        for t in targets:
            clique = self.cliques[t]
            here = tuple(a for a in axes if a in clique.axes)
            parts.append((here, marginalise(clique.table, clique.axes, here)))
        joined = self._add(*outer(parts))
        for t in targets:
            self._link(joined, t)
        return self._prune(joined)

    def _prune(self, cid: int) -> int:
        """Fold away cliques contained in a neighbour; return what ``cid`` became."""
        changed = True
        while changed:
            changed = False
            for w in list(self.cliques):
                clique = self.cliques[w]
                host = next((v for v in sorted(clique.neighbours)
                             if set(clique.axes) <= set(self.cliques[v].axes)), None)
                if host is None:
                    continue
                for x in clique.neighbours - {host}:
                    self._link(x, host)
                self._remove(w)
                cid = host if w == cid else cid
                changed = True
        return cid

    # -- records -------------------------------------------------------------------------------
    def log_probability(self, codes: np.ndarray) -> np.ndarray:
        """``log P(x)`` of each record (row of codes): cliques' logs less separators' logs."""
        self.calibrate()
        out = np.zeros(codes.shape[0])
        with np.errstate(divide="ignore"):
            for order in self.components():
                parent = self._bfs(order[0])[1]
                for v in order:
                    clique = self.cliques[v]
                    out += np.log(clique.table[tuple(codes[:, a] for a in clique.axes)])
                    up = parent[v]
                    if up is not None:
                        sep = self._separator(up, v)
                        if sep:
                            table = marginalise(clique.table, clique.axes, sep)
                            out -= np.log(table[tuple(codes[:, a] for a in sep)])
        return out

    def sample(self, n: int, rng: np.random.Generator, *, systematic: bool = True) -> np.ndarray:
        """``n`` records as an ``(n, d)`` array of codes, drawn clique by clique down each tree.

        Every draw is an inverse-CDF lookup of a uniform; ``systematic`` spreads the uniforms
        evenly within each stratum, over the attributes drawn before
        (:func:`~fastmwem.models.sampling.stratified_uniforms`), else they are independent.
        """
        self.calibrate()
        codes = np.zeros((n, len(self.shape)), dtype=np.int64)
        drawn: list[int] = []
        for order in self.components():
            parent = self._bfs(order[0])[1]
            root = self.cliques[order[0]]
            cumulative = np.cumsum(_probabilities(root.table))
            uniforms = self._uniforms(np.zeros(n, dtype=np.int64), codes, drawn, rng, systematic)
            cells = np.minimum(np.searchsorted(cumulative / cumulative[-1], uniforms,
                                               side="right"), root.table.size - 1)
            _put(codes, root.axes, cells, root.table.shape)
            drawn.extend(root.axes)
            for v in order[1:]:  # only the root has no parent
                self._sample_child(codes, cast(int, parent[v]), v, rng,
                                   drawn if systematic else None)
        return codes

    @staticmethod
    def _uniforms(strata: np.ndarray, codes: np.ndarray, drawn: list[int] | None,
                  rng: np.random.Generator, systematic: bool) -> np.ndarray:
        if not systematic or drawn is None:
            return rng.random(strata.size)
        # A random priority among the earlier attributes, so that none is always balanced last.
        priority = rng.permutation(np.asarray(drawn, dtype=np.int64))
        return stratified_uniforms(strata, rng, tuple(codes[:, a] for a in priority))

    def _sample_child(self, codes: np.ndarray, u: int, v: int, rng: np.random.Generator,
                      drawn: list[int] | None) -> None:
        """Draw ``v``'s attributes outside the separator given the codes drawn on it.

        ``drawn``: the attributes drawn so far, for systematic draws (``None``: independent).
        """
        sep = self._separator(u, v)
        clique = self.cliques[v]
        rest = tuple(a for a in clique.axes if a not in sep)
        if not rest:
            return
        order = [clique.axes.index(a) for a in sep + rest]
        n_sep, n_rest = self.cells(sep), self.cells(rest)
        table = clique.table.transpose(order).reshape(n_sep, n_rest)
        mass = table.sum(axis=1, keepdims=True)
        cdf = np.cumsum(np.where(mass > 0, table, 1.0), axis=1)
        cdf /= cdf[:, -1:]
        # Row r's cumulative law shifted by r: one sorted key array for every row.
        keys = (cdf + np.arange(n_sep)[:, None]).reshape(-1)
        row = (np.ravel_multi_index(tuple(codes[:, a] for a in sep), [self.shape[a] for a in sep])
               if sep else np.zeros(codes.shape[0], dtype=np.int64))
        earlier = None if drawn is None else [a for a in drawn if a not in sep]
        uniforms = self._uniforms(row, codes, earlier, rng, drawn is not None)
        pos = np.searchsorted(keys, row + uniforms, side="right")
        inner = np.clip(pos - row * n_rest, 0, n_rest - 1)
        _put(codes, rest, inner, tuple(self.shape[a] for a in rest))
        if drawn is not None:
            drawn.extend(rest)


def _depths(parent: dict[int, int | None]) -> dict[int, int]:
    depth: dict[int, int] = {}
    for v in parent:  # breadth-first order: parents come first
        p = parent[v]
        depth[v] = 0 if p is None else depth[p] + 1
    return depth


def _probabilities(table: np.ndarray) -> np.ndarray:
    p = table.reshape(-1)
    return p / p.sum()


def _put(codes: np.ndarray, axes: tuple[int, ...], cells: np.ndarray, shape: tuple[int, ...]
         ) -> None:
    for a, column in zip(axes, np.unravel_index(cells, shape)):
        codes[:, a] = column
