"""Fit a synthetic state to every noisy measurement at once, each weighed by its noise.

MWEM's reuse passes replay the measurements a fixed number of times with a fixed step. AIM
(McKenna, Mullins, Sheldon and Miklau, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", arXiv:2201.12677) instead estimates its model as
Private-PGM does: the distribution ``p`` minimising the weighted least-squares loss

    ``L(p) = sum_i ||total * A_i p - y_i||^2 / sigma_i^2``

over all measurements ``i`` (queries ``A_i``, noisy answers ``y_i``, noise standard deviation
``sigma_i``), found by entropic mirror descent: ``p <- p * exp(-eta * grad L(p))``, normalised,
with a backtracking line search on ``eta``. :func:`fit` runs that estimator on a dense
:class:`~fastmwem.models.state.MWState` or a junction-tree
:class:`~fastmwem.models.factored.FactoredState`.

On a factored state the gradient of ``L`` is a sum of functions of the measured marginals, each
inside one clique, so the step multiplies the joint by one factor per clique: each clique table
is multiplied in turn, as its component's root, exactly as
:meth:`~fastmwem.models.factored.FactoredState.update_group` multiplies it. The product of the
factors is the dense step's factor, so the model stays decomposable and the iterates are those
of the dense fit (up to the per-clique exponent clip below). Measured groups that no clique holds
are absorbed first, within ``max_clique_cells``.

On a dense state whose measured groups all have a marginal structure, the answers and the
gradient are computed for all groups at once along a trie of their attributes
(:mod:`fastmwem.models.fit_passes`): a few sweeps of the histogram per step instead of two per
group, with the same iterates up to float rounding.

Everything here is post-processing of released measurements: the fit never sees the data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np

from fastmwem._validation import check_int
from fastmwem.models.factored import FactoredState
from fastmwem.models.fit_passes import FLOOR as _FLOOR
from fastmwem.models.fit_passes import DenseMarginals, MarginalTrie
from fastmwem.models.fit_passes import inner as _inner
from fastmwem.models.fit_passes import sub_transpose as _sub_transpose
from fastmwem.models.state import _MAX_STEP, MWState
from fastmwem.workloads.base import LinearWorkload, groups_of_queries
from fastmwem.workloads.marginals import Marginals, merged_layout

__all__ = ["FitMeasurement", "FitReport", "Measured", "fit"]

# Armijo's constant: a step is accepted once it achieves this share of the decrease the
# gradient predicts, <grad, p - p_new>. One half accepts steps up to about the best one on a
# quadratic, and so never oscillates across the minimum.
_ARMIJO = 0.5

# Halvings of the step before the line search gives up: 2^-60 of the last step moves no cell
# by a float's last bit, so the objective is then as low as float arithmetic can make it.
_MAX_HALVINGS = 60

# Largest |exponent| before the shift: the step is capped so that eta * |gradient| stays a
# finite float (a step that large clips nearly every factor to e^-64 anyway).
_HUGE = 1e300

# Steps accepted at their first trial before the line search tries a doubled step. Doubling
# before every step wastes a trial on most steps: the fit's acceptable step is about constant,
# so the doubled one nearly always fails (1,994 trials for 1,000 steps on msq). Waiting for two
# clean steps takes 1.3-1.4 trials a step, and a thousand steps reach about as low a loss
# (benchmarks/fit_line_search.py, on synthetic tables kept out of the accuracy suite: 0.997x
# at the median, 1.07x at worst).
_GROW_AFTER = 2

# Whether a dense state's fit runs on the marginal trie (fit_passes) when every measured group
# has a marginal structure; off, it runs group by group (the tests compare the two).
_MARGINAL_TRIE = True


class Measured(Protocol):
    """What :func:`fit` reads of a measurement (the release's own records have it).

    ``queries`` is the slice of the workload's query ids measured (within one group),
    ``values`` their noisy answers (counts), ``std`` the standard deviation of their noise.
    """

    @property
    def queries(self) -> slice: ...

    @property
    def values(self) -> np.ndarray: ...

    @property
    def std(self) -> float: ...


@dataclass(frozen=True)
class FitMeasurement:
    """A measurement to fit: noisy counts of the queries ``queries`` (one group's), noise ``std``.

    The group is found from the query ids, so a release's measurement records (which also carry
    a ``group`` field, a query id in single-query runs) can be passed to :func:`fit` as they are.
    """

    queries: slice
    values: np.ndarray
    std: float = 1.0

    @classmethod
    def of_group(cls, workload: LinearWorkload, group: int, values: np.ndarray,
                 std: float = 1.0) -> FitMeasurement:
        """Every query of ``group``, measured."""
        return cls(workload.group_queries(group), np.asarray(values, dtype=np.float64), std)

    @classmethod
    def of_marginal(cls, workload: LinearWorkload, axes: Sequence[int], values: np.ndarray,
                    std: float = 1.0) -> FitMeasurement:
        """The group on the attributes ``axes`` (sorted domain axes), e.g. a marginal's table.

        Raises:
            ValueError: no group, or more than one, depends on exactly those attributes.
        """
        wanted = tuple(int(a) for a in axes)
        own = getattr(workload, "group_attributes", None)
        found = [] if own is None else [g for g in range(int(workload.n_groups))
                                        if own(g) is not None and tuple(own(g)) == wanted]
        if len(found) != 1:
            raise ValueError(f"axes {wanted} must name exactly one group of the workload, "
                             f"found {len(found)}")
        return cls.of_group(workload, found[0], np.asarray(values).reshape(-1), std)


@dataclass(frozen=True)
class FitReport:
    """How a fit went.

    Attributes:
        iterations: mirror-descent steps taken (accepted by the line search).
        objective: the final loss ``sum_i ||total A_i p - y_i||^2 / sigma_i^2``.
        converged: whether a stopping rule held before ``max_iterations``.
        objectives: the loss before the first step and after each step (non-increasing).
        trials: the steps the line search tried (each costs the model's answers once).
    """

    iterations: int
    objective: float
    converged: bool
    objectives: tuple[float, ...]
    trials: int = 0


@dataclass
class _Term:
    """The measurements of one group, merged: per query, the sum of the relative weights
    ``(sigma_min / sigma_i)^2`` (0 if unmeasured) and their weighted mean, as a fraction of
    ``total``. Merging changes the loss by a constant only (kept in :class:`_Problem`)."""

    group: int
    weights: np.ndarray
    targets: np.ndarray
    sensitivity: float


@dataclass
class _Problem:
    """The loss in fractions of ``total`` and relative weights: ``L = scale * loss``."""

    terms: list[_Term]
    constant: float
    scale: float

    def loss(self, answers: list[np.ndarray]) -> float:
        return self.constant + sum(_inner(t.weights, (a - t.targets) ** 2)
                                   for t, a in zip(self.terms, answers))

    def coefficients(self, answers: list[np.ndarray]) -> list[np.ndarray]:
        """The loss's gradient in each group's answers: ``2 w (a - t)``."""
        return [2.0 * t.weights * (a - t.targets) for t, a in zip(self.terms, answers)]

    def first_step(self) -> float:
        """``1 / smoothness``: the loss is that smooth in the L1 norm, so mirror descent with
        the entropy (1-strongly convex in L1, by Pinsker) decreases it at this step. A group's
        answers move by at most its L1 sensitivity times the L1 movement of ``p``."""
        return 1.0 / sum(2.0 * float(t.weights.max()) * t.sensitivity ** 2 for t in self.terms)


def _prepare(workload: LinearWorkload, measurements: Sequence[Measured], total: float
             ) -> _Problem:
    """Check the measurements (shapes, finiteness, noise) and merge them per group."""
    offsets = np.asarray(workload.group_offsets)
    n_queries = int(offsets[-1])
    checked = []
    for i, m in enumerate(measurements):
        q = m.queries
        if not isinstance(q, slice) or q.step not in (None, 1) or q.start is None or \
                q.stop is None or not 0 <= q.start < q.stop <= n_queries:
            raise ValueError(f"measurement {i}: queries must be a slice start:stop of query ids "
                             f"within 0..{n_queries}, got {q!r}")
        group = int(groups_of_queries(offsets, np.array([q.start]))[0])
        if q.stop > int(offsets[group + 1]):
            raise ValueError(f"measurement {i}: queries {q.start}:{q.stop} span more than one "
                             f"group")
        values = np.asarray(m.values, dtype=np.float64)
        if values.ndim != 1 or values.size != q.stop - q.start:
            raise ValueError(f"measurement {i}: values must be a flat array of one answer per "
                             f"query ({q.stop - q.start}), got shape {values.shape}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"measurement {i}: values must be finite")
        std = m.std
        if isinstance(std, bool) or not isinstance(std, (int, float, np.floating, np.integer)) \
                or not math.isfinite(float(std)) or float(std) <= 0:
            raise ValueError(f"measurement {i}: std must be a finite number > 0, got {std!r}")
        checked.append((group, q.start - int(offsets[group]), values / total, float(std)))
    if not checked:
        return _Problem([], 0.0, 1.0)
    smallest = min(c[3] for c in checked)
    if not math.isfinite((total / smallest) ** 2):
        raise ValueError(f"std must be large enough for (total / std)^2 to be a finite float, "
                         f"got {smallest!r}")
    sensitivity = np.asarray(workload.group_sensitivity, dtype=np.float64)
    terms: dict[int, _Term] = {}
    for group, start, values, std in checked:
        if group not in terms:
            size = int(offsets[group + 1] - offsets[group])
            terms[group] = _Term(group, np.zeros(size), np.zeros(size),
                                 float(sensitivity[group]))
        t, w, here = terms[group], (smallest / std) ** 2, slice(start, start + values.size)
        t.weights[here] += w
        t.targets[here] += w * values
    measured = {g: t.weights > 0 for g, t in terms.items()}
    for g, t in terms.items():
        t.targets[measured[g]] /= t.weights[measured[g]]
    # The part of the loss no distribution can remove: each value's spread about its mean.
    constant = 0.0
    for group, start, values, std in checked:
        t = terms[group]
        constant += (smallest / std) ** 2 * float(
            ((values - t.targets[start:start + values.size]) ** 2).sum())
    return _Problem([terms[g] for g in sorted(terms)], constant, (total / smallest) ** 2)


def _largest(gradient: np.ndarray | dict[int, np.ndarray]) -> float:
    """``max |gradient|`` over the cells (a dense gradient, or per-clique parts)."""
    parts = gradient.values() if isinstance(gradient, dict) else [gradient]
    return max(float(np.abs(g).max()) for g in parts)


def _clipped_factors(gradient: np.ndarray, eta: float) -> np.ndarray:
    """``exp(-eta * gradient)`` up to a constant, each factor within ``[e^-_MAX_STEP, 1]``.

    The shift is absorbed by the normalisation; the clip keeps every product positive and
    finite whatever the step (the line search rejects a clipped step that does not pay).
    """
    exponent = gradient * -eta
    exponent -= exponent.max()
    np.maximum(exponent, -_MAX_STEP, out=exponent)
    return np.exp(exponent, out=exponent)


def _renormalise(table: np.ndarray) -> None:
    table /= table.sum()
    np.maximum(table, _FLOOR, out=table)


class _Dense:
    """Mirror descent on the dense distribution of an :class:`MWState`, in place."""

    def __init__(self, state: MWState, workload: LinearWorkload, terms: list[_Term]) -> None:
        self.p = state.distribution
        self.saved = np.empty_like(self.p)
        self.workload, self.terms = workload, terms
        self.shape = state.domain.shape
        own = getattr(workload, "group_attributes", None)
        # Per group with a marginal structure: the histogram's shape with runs of other axes
        # merged (numpy broadcasts over a few long axes much faster than over many short
        # ones), the shape its marginal table broadcasts as, and the group over that marginal.
        self.marginal: list[tuple[tuple[int, ...], list[int], LinearWorkload, int] | None] = []
        for t in terms:
            axes = None if own is None else own(t.group)
            if axes is None:
                self.marginal.append(None)
                continue
            merged, kept = merged_layout(self.shape, tuple(axes))
            spread = [n if i in kept else 1 for i, n in enumerate(merged)]
            self.marginal.append((merged, spread, *workload.group_on_marginal(t.group,
                                                                             tuple(axes))))

    def answers(self) -> list[np.ndarray]:
        return [np.asarray(self.workload.answer_group(self.p, t.group), dtype=np.float64)
                for t in self.terms]

    def gradient(self, coefficients: list[np.ndarray]) -> np.ndarray:
        """``sum_i A_i^T c_i``: broadcasts of marginal tables where the workload has them."""
        grad = np.zeros(self.shape)
        rest: np.ndarray | None = None
        for t, c, marginal in zip(self.terms, coefficients, self.marginal):
            if marginal is None:
                if rest is None:
                    rest = np.zeros(self.workload.n_queries)
                rest[self.workload.group_queries(t.group)] += c
                continue
            merged, spread, sub, local = marginal
            grad.reshape(merged)[...] += _sub_transpose(sub, local, c).reshape(spread)
        flat = grad.reshape(-1)
        if rest is not None:
            flat += self.workload.answer_transpose(rest)
        return flat

    def begin(self) -> None:
        np.copyto(self.saved, self.p)

    def propose(self, gradient: np.ndarray, eta: float) -> float:
        """Move to the step of size ``eta`` from the saved point; return ``<grad, p - p_new>``."""
        np.multiply(self.saved, _clipped_factors(gradient, eta), out=self.p)
        _renormalise(self.p)
        return _inner(gradient, self.saved - self.p)

    def revert(self) -> None:
        np.copyto(self.p, self.saved)

    def movement(self) -> float:
        return float(np.abs(self.p - self.saved).sum())

    def largest(self, gradient: np.ndarray) -> float:
        return _largest(gradient)

    def finish(self) -> None:
        pass


class _Factored:
    """Mirror descent on the clique tables of a :class:`FactoredState`, in place.

    The tree is kept calibrated between steps (every table its clique's marginal); a step
    multiplies each clique's table by its factor while that clique is the root (so the joint is
    multiplied by it), then calibrates again. The measured groups of a clique are answered
    along one :class:`~fastmwem.models.fit_passes.MarginalTrie` of its table, and their
    gradient spread over it by the same trie backwards: equal to answering and broadcasting
    group by group up to float rounding (the sums are associated differently).
    """

    def __init__(self, state: FactoredState, workload: LinearWorkload, terms: list[_Term]
                 ) -> None:
        self.state, self.workload, self.terms = state, workload, terms
        groups = np.array([t.group for t in terms], dtype=np.int64)
        fits = state.measurable(workload, groups)
        if not np.all(fits):
            bad = int(groups[int(np.argmin(fits))])
            raise ValueError(f"group {bad} would need a clique above max_clique_cells = "
                             f"{state.max_clique_cells}")
        self.axes = [state._group_axes(workload, t.group) for t in terms]
        for axes in self.axes:
            state._clique_for(axes)  # absorbs (keeps the distribution); may raise at the cap
        tree = state.tree
        # Absorbing a later group may merge the clique of an earlier one: look them up now
        # (every group's axes are in some clique).
        self.cliques = [cast(int, tree.covering(axes)) for axes in self.axes]
        rank = tree.walk_order()
        self.order = sorted(set(self.cliques), key=lambda c: rank[c])
        self.subs = [workload.group_on_marginal(t.group, axes)
                     for t, axes in zip(terms, self.axes)]
        # Groups whose queries are their marginal's cells in C order need no workload call.
        self.direct = [type(sub) is Marginals and sub.axes == (tuple(range(len(axes))),)
                       for (sub, _), axes in zip(self.subs, self.axes)]
        # Per clique, its groups' marginals along one trie of its table's axes: the groups
        # of a clique share the large partial sums, and the gradient runs the trie backwards.
        self.members: dict[int, list[int]] = {}
        for i, cid in enumerate(self.cliques):
            self.members.setdefault(cid, []).append(i)
        self.tries = {cid: MarginalTrie(
            tree.cliques[cid].table.shape,
            [tuple(tree.cliques[cid].axes.index(a) for a in self.axes[i]) for i in members])
            for cid, members in self.members.items()}
        self.saved: dict[int, tuple[np.ndarray, int | None]] = {}

    def _changed(self) -> None:
        self.state._version += 1

    def answers(self) -> list[np.ndarray]:
        tree = self.state.tree
        tree.calibrate()  # every table its clique's marginal: the groups' marginals are sums
        out: list[np.ndarray] = [np.empty(0)] * len(self.terms)
        for cid, members in self.members.items():
            tables = self.tries[cid].marginals(tree.cliques[cid].table.reshape(-1))
            for i, table in zip(members, tables):
                out[i] = table if self.direct[i] else np.asarray(
                    self.workload.answer_on_marginal(self.terms[i].group, table),
                    dtype=np.float64)
        return out

    def gradient(self, coefficients: list[np.ndarray]) -> dict[int, np.ndarray]:
        """Per clique, the sum of its measured groups' ``A^T c`` spread over its table."""
        out: dict[int, np.ndarray] = {}
        for cid, members in self.members.items():
            tables = [coefficients[i] if self.direct[i] else
                      _sub_transpose(*self.subs[i], coefficients[i]) for i in members]
            out[cid] = self.tries[cid].expand(tables).reshape(
                self.state.tree.cliques[cid].table.shape)
        return out

    def begin(self) -> None:
        tree = self.state.tree
        tree.calibrate()
        self.saved = {c: (k.table.copy(), k.parent) for c, k in tree.cliques.items()}

    def propose(self, gradient: dict[int, np.ndarray], eta: float) -> float:
        self.revert()
        tree = self.state.tree
        for cid in self.order:
            tree.make_root(cid)
            table = tree.cliques[cid].table
            table *= _clipped_factors(gradient[cid], eta)
            _renormalise(table)
            tree.calibrated = False
        tree.calibrate()
        self._changed()
        # <grad, p - p_new> over the joint is the sum of <G_C, mu_C - mu_C'> over cliques.
        return sum(_inner(g, self.saved[c][0] - tree.cliques[c].table)
                   for c, g in gradient.items())

    def revert(self) -> None:
        tree = self.state.tree
        for c, (table, parent) in self.saved.items():
            np.copyto(tree.cliques[c].table, table)
            tree.cliques[c].parent = parent
        tree.calibrated = True
        self._changed()

    def movement(self) -> float:
        """Sum over cliques of the L1 distance their marginals moved (as ``moved`` measures)."""
        return float(sum(np.abs(k.table - self.saved[c][0]).sum()
                         for c, k in self.state.tree.cliques.items()))

    def largest(self, gradient: dict[int, np.ndarray]) -> float:
        return _largest(gradient)

    def finish(self) -> None:
        self._changed()


def _dense(state: MWState, workload: LinearWorkload, terms: list[_Term]
           ) -> _Dense | DenseMarginals:
    """The dense model: on the marginal trie when every measured group has a marginal
    structure (a sweep or two of the histogram per answer, whatever the number of groups),
    else group by group."""
    found = (DenseMarginals.build(state, workload, [t.group for t in terms])
             if _MARGINAL_TRIE else None)
    return _Dense(state, workload, terms) if found is None else found


def fit(state: MWState | FactoredState, workload: LinearWorkload,
        measurements: Sequence[Measured], *, tolerance: float = 1e-8,
        max_iterations: int = 1000) -> FitReport:
    """Fit ``state`` in place to all ``measurements``, each weighed by ``1 / std^2``.

    Minimises ``L(p) = sum_i ||total * A_i p - y_i||^2 / std_i^2`` (the estimator of Private-PGM
    that AIM, arXiv:2201.12677, uses) by entropic mirror descent from the state's current
    distribution: ``p <- p * exp(-eta * grad L(p))``, normalised. ``eta`` is found by
    backtracking until the Armijo condition ``L(p_new) <= L(p) - <grad, p - p_new> / 2`` holds,
    so ``L`` never increases; it starts from the last accepted step, doubled after two steps
    in a row were accepted at their first trial. Each step's
    exponent is clipped to ``[-64, 0]`` after a shift, and every cell keeps a positive mass.
    Noisy values (negative, or above ``total``) are fitted as they are: the loss needs no clip.

    Stops once a step lowers ``L`` by less than ``tolerance`` times ``L`` or moves the
    distribution by less than ``tolerance`` in L1 (a factored state: the sum over cliques of
    their marginals' movement), or when no step lowers ``L`` at all (converged), or after
    ``max_iterations`` steps (not converged). Post-processing only: no privacy cost.

    Args:
        state: a dense or factored state (refitted in place; a factored state first absorbs
            measured groups no clique holds).
        workload: the workload the measurements' query ids refer to.
        measurements: records with ``queries`` (a slice of query ids within one group),
            ``values`` (their noisy counts) and ``std``; e.g. :class:`FitMeasurement`, or a
            release's own measurement records.
        tolerance: the stopping threshold (>= 0; 0 runs until no step helps).
        max_iterations: most mirror-descent steps.

    Raises:
        ValueError: a measurement's queries, values or std are malformed (named by position),
            or a factored state cannot hold a measured group within its clique cap.
        TypeError: the state is neither dense nor factored.
    """
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or \
            not math.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    iterations = check_int(max_iterations, "max_iterations", minimum=0)
    if not isinstance(state, (MWState, FactoredState)):
        raise TypeError(f"state must be an MWState or a FactoredState, got "
                        f"{type(state).__name__}")
    problem = _prepare(workload, measurements, state.total)
    if not problem.terms:
        return FitReport(0, 0.0, True, (0.0,))
    model: _Dense | DenseMarginals | _Factored = (
        _dense(state, workload, problem.terms) if isinstance(state, MWState)
        else _Factored(state, workload, problem.terms))
    answers = model.answers()
    loss = problem.loss(answers)
    history = [loss]
    eta = problem.first_step() / 2.0
    done, trials, converged = 0, 0, loss == 0.0
    clean = _GROW_AFTER  # steps in a row accepted at their first trial (the first one grows)
    while not converged and done < iterations:
        gradient = model.gradient(problem.coefficients(answers))
        largest = model.largest(gradient)  # type: ignore[arg-type]
        if largest == 0.0:  # a stationary point
            converged = True
            break
        model.begin()
        accepted = False
        if clean >= _GROW_AFTER:
            eta, clean = 2.0 * eta, 0
        eta = min(eta, _HUGE / largest)
        before = trials
        for _ in range(_MAX_HALVINGS):
            trials += 1
            predicted = model.propose(gradient, eta)  # type: ignore[arg-type]
            if not predicted > 0.0 and model.movement() == 0.0:
                break  # no step moves any cell: the gradient is constant over the cells
            if predicted > 0.0 and math.isfinite(predicted):
                trial = model.answers()
                trial_loss = problem.loss(trial)
                if trial_loss <= loss - _ARMIJO * predicted:
                    accepted = True
                    break
            eta /= 2.0
        if not accepted:  # no step lowers the loss in float arithmetic: a stationary point
            model.revert()
            converged = True
            break
        done += 1
        clean = clean + 1 if trials == before + 1 else 0
        moved = model.movement()
        converged = (trial_loss == 0.0 or loss - trial_loss <= tolerance * loss
                     or moved <= tolerance)
        loss, answers = trial_loss, trial
        history.append(loss)
    model.finish()
    return FitReport(done, loss * problem.scale, converged,
                     tuple(h * problem.scale for h in history), trials)
