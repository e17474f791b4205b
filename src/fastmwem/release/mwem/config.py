"""MWEM's configuration: every option of a run, validated from public input alone.

:class:`MWEMConfig` lives apart from the driver (:mod:`fastmwem.release.mwem`) so that the
modules the driver uses (set-up, rounds, adaptive rounds, planning) can name it without importing
the driver back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol

import numpy as np

from fastmwem._deprecation import renamed_field
from fastmwem._validation import (
    check_int,
    check_noise_scale,
    check_positive,
    check_probability,
)
from fastmwem.accounting import exact, float_below
from fastmwem.models.factored import DEFAULT_MAX_CLIQUE_CELLS
from fastmwem.models.state import MAX_RECORDS
from fastmwem.release._privacy import (
    PRIVACY_DEFINITIONS,
    PrivacyDefinition,
    PureDefinition,
    definition_of,
)
from fastmwem.release.mwem.annealing import INITIAL_ROUNDS_PER_ATTRIBUTE, split_round
from fastmwem.release.selection import resolve_selection
from fastmwem.release.selection.candidates import CANDIDATE_SETS

if TYPE_CHECKING:
    from fastmwem.release.selection import RoundSelection

__all__ = ["MWEMConfig", "MAX_REUSE_PASSES", "MAX_FINAL_PASSES", "FINAL_PASSES_FACTORED",
           "SELECT_FRACTION_FACTORED", "SELECT_FRACTION_FACTORED_EXACT",
           "SELECT_FRACTION_ADAPTIVE", "MODELS", "PROGRESS_SECONDS", "ESTIMATORS", "INITS",
           "MAX_FIT_ITERATIONS", "FINAL_FIT_ITERATIONS", "ProgressBar"]

#: Largest number of reuse passes per round.
MAX_REUSE_PASSES = 1000

#: Largest number of final reuse passes.
MAX_FINAL_PASSES = 100_000

#: Final reuse passes of a factored run (``MWEMConfig.final_passes=None``).
FINAL_PASSES_FACTORED = 5000

#: Share of a round's epsilon a factored run spends on selection (``select_fraction=None``).
SELECT_FRACTION_FACTORED_EXACT = Fraction(1, 10)
SELECT_FRACTION_FACTORED = float(SELECT_FRACTION_FACTORED_EXACT)

#: Share of an adaptive round's budget spent on selection (``select_fraction=None``): AIM's
#: 0.1 under zCDP, where the exponential mechanism costs ``epsilon**2 / 8``; 0.3 under pure DP,
#: where it costs ``epsilon`` (NLTCS, 3-way marginals, epsilon 0.1 and 1: 0.113 / 0.023 at 0.3
#: against 0.117 / 0.024 at 0.5).
SELECT_FRACTION_ADAPTIVE = {"zcdp": Fraction(1, 10), "pure": Fraction(3, 10)}

#: The synthetic models a run can keep (``MWEMConfig.model``).
MODELS = ("auto", "dense", "junction-tree", "product")

#: How a run refits its synthetic state to the measurements (``MWEMConfig.estimator``).
ESTIMATORS = ("passes", "fit", "final-fit")

#: How a run starts (``MWEMConfig.init``).
INITS = ("uniform", "noisy-histogram", "one-way")

#: Largest ``fit_iterations``.
MAX_FIT_ITERATIONS = 100_000

#: Default most mirror-descent steps of the fit after the last round (``estimator="fit"`` or
#: ``"final-fit"``; ``MWEMConfig.final_fit_iterations``), which stops earlier once
#: ``fit_tolerance`` holds: the rounds' fits are capped, the final one runs longer.
FINAL_FIT_ITERATIONS = 1000

#: With ``progress=None``, runs estimated to take longer than this (seconds) show progress.
PROGRESS_SECONDS = 30.0


class ProgressBar(Protocol):
    """What a run asks of its progress bar (a ``tqdm`` bar): one tick a round."""

    def update(self, n: int = 1) -> object: ...

    def set_postfix(self, *, refresh: bool = True, **values: object) -> None: ...

    def close(self) -> None: ...


@renamed_field("top_k", "k")
@dataclass(frozen=True)
class MWEMConfig:
    """Every public parameter of an MWEM run, validated; its privacy plan follows from it alone.

    Args:
        epsilon: total privacy budget: pure ``epsilon``-DP, or with ``privacy="zcdp"`` and
            ``delta`` the ``(epsilon, delta)``-DP guarantee whose zCDP budget the run spends.
        rounds: number of rounds T (selections and measurements), or ``None`` for adaptive
            rounds and budget (:mod:`fastmwem.release.mwem.annealing`: AIM's budget annealing;
            rounds continue until the budget is spent, the last one taking exactly what is
            left). ``0`` only with ``init="one-way"``: the run releases the noisy 1-way
            marginals alone, with everything the record count leaves (``init_fraction`` is then
            unused), and its output is their product after the estimator's final fit.
        privacy: ``"pure"`` (epsilon-DP: Laplace measurements) or ``"zcdp"`` (zero-concentrated
            DP: discrete Gaussian measurements, :class:`~fastmwem.mechanisms.DiscreteGaussian`;
            the exponential mechanism costs ``epsilon**2 / 8`` of rho as bounded range).
        delta: with ``privacy="zcdp"`` and ``epsilon``: the run spends the largest rho whose
            conversion to DP gives ``(epsilon, delta)`` (the tight conversion of
            arXiv:2004.00010, :func:`~fastmwem.accounting.approx_dp_to_zcdp_budget`).
        rho: with ``privacy="zcdp"``, the zCDP budget itself (instead of epsilon and delta).
        initial_rounds: an adaptive run's ``T0``: its first round gets ``1 / T0`` of the rounds'
            budget (``None``: ``16 d`` for ``d`` attributes, AIM's choice).
        measure: ``"group"`` measures a whole group (a marginal) with one Laplace measurement
            calibrated to the group's L1 sensitivity (MWEM paper, arXiv:1012.4763, s.3.3); ``"query"`` measures
            single queries (Figure 1). ``"auto"`` is ``"group"`` when the workload has groups
            larger than one query.
        reuse_passes: at most this many multiplicative-weights passes over all measurements so
            far after each round (s.2.3.3; 0 gives the single update of Figure 1; at most
            ``MAX_REUSE_PASSES``).
        reuse_tolerance: stop a round's reuse passes early once a pass moves the synthetic
            distribution by less than this in L1 distance (0 never stops early). The test looks
            only at the noisy measurements and the synthetic distribution, so it is
            post-processing and costs no privacy.
        init: ``"uniform"``, ``"noisy-histogram"`` (s.2.3.3; charged to the budget; a factored
            model measures the 1-way marginals instead), or ``"one-way"``: every 1-way marginal
            is measured first, each at ``1 / d`` of ``init_fraction`` of the budget (``d``
            attributes; sensitivity 1 each), the run starts from their product (mixed with
            ``init_uniform_mix``), and they stay measurements that the estimator fits with the
            rounds' ones (dense or factored; whole-group measurement only). An adaptive run
            with ``"one-way"`` measures them so instead of at its first round's share.
        init_fraction: share of epsilon spent on the noisy histogram or the 1-way marginals.
        init_uniform_mix: weight of the uniform distribution mixed into the noisy-histogram start,
            so that no cell starts at zero (multiplicative weights can never revive a zero cell).
        output: ``"last"`` iterate (the paper's experiments) or ``"average"`` of the iterates (the
            theorem's output).
        exclude_measured: do not select a group measured before (the set is public); ``None``:
            true for fixed rounds, false for adaptive ones (AIM measures a marginal again at a
            smaller noise).
        cell_penalty: subtract ``cell_penalty * (cells in group)`` from a group's score; ``None``
            uses the expected absolute Laplace error of one measured cell (data-independent, so
            privacy is unaffected; s.3.3 subtracts the number of cells).
        selection: how a round selects: ``"exponential"`` (Gumbel-max over every candidate's
            score), ``"permute-and-flip"``, ``"lazy"`` (Fast-MWEM: the lazy exponential mechanism
            over an exact top-k oracle; same law as the exponential mechanism over single
            queries' absolute errors, without computing all answers), any name added with
            :func:`~fastmwem.release.selection.register_selection`, or a
            :class:`~fastmwem.release.selection.RoundSelection` object.
        index: the top-k oracle of ``selection="lazy"``: ``None`` (the workload's own exact
            oracle, else ``"bitpacked"`` for 0/1 queries, else ``"flat"``), an index name for
            :func:`fastmwem.indices.make_index`, or a built oracle.
        k: the size of the lazy mechanism's exact top-k set (default ``ceil(sqrt(m))``;
            ``top_k`` is its deprecated alias).
        allow_uncertified: let ``selection="lazy"`` run over an approximate index without a
            certified gap (``"faiss:HNSW32"``, ``"faiss:IVF..."``, ``"hnswlib"``). Such a run has
            NO privacy guarantee: its selection rounds are recorded as
            :class:`~fastmwem.mechanisms.Uncertified` in the ledger. For experiments only.
        total: a *public* record count, if the data owner publishes one (at most 2**53), or a
            count released before the run (see ``total_std``); ``None`` spends
            ``count_fraction`` of the budget on a noisy count.
        total_std: the standard deviation of the noise of a released ``total`` (public), so
            that the run refines it with its measurements of whole marginals, which each sum
            to the record count (:class:`~fastmwem.release.mwem.rounds.TotalEstimate`; a noisy
            count released inside the run is refined alike); ``None``: ``total`` is exact.
        count_fraction: share of epsilon spent on the noisy record count when ``total`` is None.
        noise_test: ``None`` (the default) or a significance level in (0, 1) (pure DP, fixed
            or adaptive rounds): if the first round's measurement lies within its Laplace noise
            of the starting distribution's answers at that level
            (:func:`~fastmwem.release.mwem.rounds.within_noise`), no update is made in any
            round and the output is the start (of an adaptive run: after its 1-way
            measurements). Post-processing: it reads only the
            noisy measurement and the synthetic distribution, so it costs no privacy.
        model: the synthetic distribution: ``"dense"`` (a vector over every cell),
            ``"junction-tree"`` (a decomposable model of clique tables,
            :class:`~fastmwem.models.factored.FactoredState`), ``"product"`` (disjoint factors,
            MWEM paper s.4), or ``"auto"``: dense when the domain is within the dense limit and
            the run's memory, else the junction tree.
        max_clique_cells: the largest clique (cells) of a factored model. Groups whose
            measurement would need a larger clique are left out of the selection; which ones
            follows from the domain and the groups already selected (public).
        max_model_cells: the most cells a factored model's clique tables may hold together:
            groups whose measurement would grow it past this are left out of the selection
            (public, like the clique cap; AIM bounds its model's size so). ``None``: no bound
            but the cliques'.
        candidates: what a round may select: ``"workload"`` (its groups), ``"closure"`` (also
            the marginals on subsets of each marginal group's attributes, which are cheaper to
            measure; :mod:`fastmwem.release.selection.candidates`), ``"supersets"`` (only the marginals
            on each marginal group's attributes and two more, where they have at most 4x the
            cells; dense model, fixed rounds), or ``"auto"``: the closure for a factored model
            or adaptive rounds, else the workload (:func:`~fastmwem.release.mwem_auto` may
            choose supersets under pure DP).
        select_fraction: the share of each round's epsilon spent on the selection (the rest
            measures); ``None``: 1/2 for a dense model (the paper's even split) and
            ``SELECT_FRACTION_FACTORED`` for a factored one, whose many small candidates a
            selection tells apart with little epsilon while each measurement needs all it can
            get (on adult at epsilon 1: mean 2-way L1 0.085 against 0.107 with an even split).
        final_passes: reuse passes over all measurements after the last round (stopping early
            as ``reuse_tolerance`` says; at most ``MAX_FINAL_PASSES``), so that the last
            measurements are fitted as well as the first; ``None``: none for a dense model,
            ``FINAL_PASSES_FACTORED`` for a factored one, whose large marginals
            multiplicative weights fits slowly.
        estimator: how the synthetic state is refitted after each measurement: ``"passes"``
            (the multiplicative-weights update and ``reuse_passes`` reuse passes, then
            ``final_passes``), or ``"fit"``: the update, then the inverse-variance weighted
            least-squares fit to every measurement so far, each weighed by its own noise
            (:func:`~fastmwem.models.fit.fit`, the estimator of AIM, arXiv:2201.12677), warm
            started and capped at ``fit_iterations`` steps a round, and after the last round
            a fit of up to ``final_fit_iterations`` steps (``reuse_passes``,
            ``reuse_tolerance`` and ``final_passes`` are then unused). Either reads only the
            released measurements and the synthetic state: post-processing, no privacy cost
            and no change to the plan. The first-measurement noise test works as with passes:
            if it stops updates, nothing is fitted. ``"final-fit"``: the passes during the rounds
            (as ``"passes"``), and the fit of up to ``final_fit_iterations`` steps after the
            last round in place of ``final_passes``: the weighted estimate of every
            measurement at the cost of one fit.
        fit_iterations: most mirror-descent steps of each round's fit (``estimator="fit"``;
            1 to ``MAX_FIT_ITERATIONS``).
        fit_tolerance: a fit stops once a step lowers its loss by less than this share of
            it, or moves the distribution by less than this in L1 (finite, >= 0).
        final_fit_iterations: most mirror-descent steps of the fit after the last round
            (``estimator="fit"`` or ``"final-fit"``; 1 to ``MAX_FIT_ITERATIONS``), which
            stops earlier once ``fit_tolerance`` holds.

    Each step's share of epsilon must leave a finite noise scale: a tiny epsilon spread over many
    rounds is refused here, with the share named, rather than failing after the charge.
    """

    epsilon: float | None = None
    rounds: int | None = 20
    measure: str = "auto"
    reuse_passes: int = 20
    reuse_tolerance: float = 1e-4
    init: str = "uniform"
    init_fraction: float = 0.1
    init_uniform_mix: float = 0.1
    output: str = "last"
    exclude_measured: bool | None = None
    cell_penalty: float | None = None
    selection: object = "exponential"
    index: object = None
    k: int | None = None
    allow_uncertified: bool = False
    total: int | None = None
    count_fraction: float = 0.01
    noise_test: float | None = None
    model: str = "auto"
    max_clique_cells: int = DEFAULT_MAX_CLIQUE_CELLS
    max_model_cells: int | None = None
    candidates: str = "auto"
    final_passes: int | None = None
    select_fraction: float | None = None
    privacy: str = "pure"
    delta: float | None = None
    rho: float | None = None
    initial_rounds: int | None = None
    total_std: float | None = None
    estimator: str = "passes"
    fit_iterations: int = 100
    fit_tolerance: float = 1e-6
    final_fit_iterations: int = FINAL_FIT_ITERATIONS
    if TYPE_CHECKING:  # set by __post_init__ from selection, index, top_k and allow_uncertified
        round_selection: RoundSelection = field(init=False)

    def __post_init__(self) -> None:
        if isinstance(self.privacy, PrivacyDefinition):  # the object's name is the field
            object.__setattr__(self, "privacy", self.privacy.name)
        _choice(self.privacy, "privacy", PRIVACY_DEFINITIONS)
        self.definition.check_budget(self.epsilon, self.delta, self.rho)
        if self.rounds is not None:
            check_int(self.rounds, "rounds", minimum=0)
            if self.rounds == 0 and self.init != "one-way":
                raise ValueError("rounds=0 releases the 1-way marginals only: it needs "
                                 f"init='one-way', got init={self.init!r}")
        if self.initial_rounds is not None:
            check_int(self.initial_rounds, "initial_rounds", minimum=1)
            if self.rounds is not None:
                raise ValueError("initial_rounds is for adaptive runs (rounds=None)")
        check_int(self.reuse_passes, "reuse_passes", minimum=0, maximum=MAX_REUSE_PASSES)
        _check_tolerance(self.reuse_tolerance)
        _choice(self.estimator, "estimator", ESTIMATORS)
        check_int(self.fit_iterations, "fit_iterations", minimum=1, maximum=MAX_FIT_ITERATIONS)
        _check_tolerance(self.fit_tolerance, "fit_tolerance")
        check_int(self.final_fit_iterations, "final_fit_iterations", minimum=1,
                  maximum=MAX_FIT_ITERATIONS)
        _choice(self.measure, "measure", ("auto", "group", "query"))
        _choice(self.init, "init", INITS)
        if self.init == "one-way" and self.measure == "query":
            raise ValueError("init='one-way' measures whole 1-way marginals: it needs "
                             "measure='group' (or 'auto')")
        _choice(self.output, "output", ("last", "average"))
        _choice(self.model, "model", MODELS)
        check_int(self.max_clique_cells, "max_clique_cells", minimum=1)
        if self.max_model_cells is not None:
            check_int(self.max_model_cells, "max_model_cells", minimum=1)
        _choice(self.candidates, "candidates", CANDIDATE_SETS)
        if self.final_passes is not None:
            check_int(self.final_passes, "final_passes", minimum=0, maximum=MAX_FINAL_PASSES)
        if self.select_fraction is not None:
            check_probability(self.select_fraction, "select_fraction", open_right=True)
        if not isinstance(self.allow_uncertified, bool):
            raise TypeError("allow_uncertified must be a bool, got "
                            f"{type(self.allow_uncertified).__name__}")
        # The resolved selection object is public configuration, derived once. The opt-in is
        # passed only when given, so that the scan selections refuse it by name.
        object.__setattr__(self, "round_selection", resolve_selection(
            self.selection, index=self.index, k=self.k,
            allow_uncertified=self.allow_uncertified or None))
        check_probability(self.init_fraction, "init_fraction")
        check_probability(self.init_uniform_mix, "init_uniform_mix")
        check_probability(self.count_fraction, "count_fraction")
        if self.noise_test is not None:
            check_probability(self.noise_test, "noise_test")
            if self.privacy != "pure" or self.rounds == 0:
                raise ValueError("noise_test tests the first round's Laplace measurement: it "
                                 "needs privacy='pure' and rounds (a number >= 1, or adaptive)")
        if self.exclude_measured is not None and not isinstance(self.exclude_measured, bool):
            raise TypeError("exclude_measured must be a bool or None")
        if self.cell_penalty is not None:
            penalty = float(self.cell_penalty)
            if not np.isfinite(penalty) or penalty < 0:
                raise ValueError(f"cell_penalty must be a finite number >= 0, got {self.cell_penalty}")
        if self.total is not None:
            check_int(self.total, "total", minimum=1, maximum=int(MAX_RECORDS))
        if self.total_std is not None:
            check_positive(self.total_std, "total_std")
            if self.total is None:
                raise ValueError("total_std is the noise of a given total: give total too")
        self._check_shares()

    def _check_shares(self) -> None:
        """Refuse a split of the budget that leaves some step a noise scale that is not finite."""
        count = self.count_fraction if self.total is None else 0.0
        init = self.init_fraction if self.init != "uniform" else 0.0
        if self.rounds == 0:  # the 1-way marginals get all the count leaves
            init = 1.0 - count
        elif count + init >= 1:
            raise ValueError(
                f"count_fraction ({count}) and init_fraction ({init}) leave no budget for the "
                "rounds: their sum must be < 1"
            )
        pure = isinstance(self.definition, PureDefinition)
        budget = self.definition.currency
        given = f"epsilon={self.epsilon}" if pure else f"rho={float(self.budget()):.4g}"
        rounds = self.rounds if self.rounds is not None else self.initial_rounds
        # The split may depend on the model, decided later: check every model's.
        for model in ("dense", "junction-tree"):
            split = self.budget_split(model, rounds=1 if rounds is None else rounds)
            select = self._select_fraction(model)
            shares = []
            if rounds:  # an adaptive run's T0 may follow from the domain: later; 0: none
                shares += [("select", f"each round's selection ({budget} * {select:g} / "
                                      f"{rounds} rounds)"),
                           ("measure", f"each round's measurement ({budget} * {1 - select:g}"
                                       f" / {rounds} rounds)")]
            if count:
                shares.append(("count", f"the record count ({budget} * count_fraction)"))
            if init:
                part = "init_fraction" if self.rounds != 0 else "(1 - count_fraction)"
                shares.append(("init", f"the {self._start_name()} ({budget} * {part})"))
            for key, what in shares:
                if split[key] <= 0:
                    raise ValueError(f"{given} leaves {what} no budget at all")
                if key == "select" or pure:
                    check_noise_scale(1.0, split[key], f"{given} leaves {what} "
                                      f"only {split[key]:.3g}")
                else:
                    self.definition.measurement(split[key], 1.0)  # refuses a sigma too large

    def _select_fraction_exact(self, model: str) -> Fraction:
        if self.select_fraction is not None:
            return exact(self.select_fraction, "select_fraction")
        if self.rounds is None:  # adaptive: a zCDP selection is cheap (epsilon**2 / 8)
            return SELECT_FRACTION_ADAPTIVE[self.privacy]
        if model == "dense":
            return Fraction(1, 2)
        return SELECT_FRACTION_FACTORED_EXACT

    def _select_fraction(self, model: str) -> float:
        if self.select_fraction is not None:
            return float(self.select_fraction)
        return float(self._select_fraction_exact(model))

    # -- the privacy plan --------------------------------------------------------------------
    @property
    def adaptive(self) -> bool:
        """Whether rounds and their budgets are chosen as the run goes (``rounds=None``)."""
        return self.rounds is None

    @property
    def excludes_measured(self) -> bool:
        """``exclude_measured``, or its default: true for fixed rounds, false for adaptive."""
        return (not self.adaptive) if self.exclude_measured is None else self.exclude_measured

    @property
    def definition(self) -> PrivacyDefinition:
        """The privacy definition (``privacy``; a zCDP one reports ``delta``)."""
        return definition_of(self.privacy, self.delta)

    def budget(self) -> Fraction:
        """The whole budget, exact: epsilon (pure DP) or rho (zCDP)."""
        return self.definition.budget(self.epsilon, self.delta, self.rho)

    def round_count(self, attributes: int) -> int:
        """The rounds of a fixed run, or an adaptive run's ``T0`` on ``attributes`` attributes."""
        if self.rounds is not None:
            return int(self.rounds)
        if self.initial_rounds is not None:
            return int(self.initial_rounds)
        return INITIAL_ROUNDS_PER_ATTRIBUTE[self.privacy] * max(1, int(attributes))

    def select_rho_per_epsilon2(self) -> Fraction:
        """The selection event's zCDP cost per ``epsilon**2`` (1/8 for bounded range)."""
        rho = self.round_selection.event(1.0).zcdp_rho()
        if rho is None:
            raise ValueError(f"selection={self.round_selection.name!r} has no zCDP cost; "
                             "privacy='zcdp' needs one (the exponential mechanism has)")
        return Fraction(rho)

    def budget_split(self, model: str = "dense", *, rounds: int | None = None
                     ) -> dict[str, float]:
        """Each step's share: the noisy count, the initial histogram, and one round's.

        Pure DP: epsilons. zCDP: rhos, except ``"select"``, the selection's epsilon. ``model``
        (see :func:`choose_model`) sets the default ``select_fraction``; ``rounds`` is the round
        count (default ``self.rounds``; an adaptive run passes its ``T0``; with none, the
        round's shares are 0 and the start has all the count leaves). Each share is a
        float rounded *down* from its exact value, and the privacy plan charges exactly those
        floats, so the plan never adds up to more than the budget.
        """
        total = self.budget()
        count = total * exact(self.count_fraction, "count_fraction") if self.total is None else 0
        init = (total * exact(self.init_fraction, "init_fraction")
                if self.init != "uniform" else 0)
        if self.rounds == 0:  # the 1-way marginals alone: all that the count leaves
            init = total - count
        t = self.rounds if rounds is None else rounds
        if t is None:
            raise ValueError("an adaptive run's split needs its rounds T0")
        select = self._select_fraction_exact(model)
        per_round = (total - count - init) / t if t else Fraction(0)
        if not t:
            shares = (0.0, 0.0)
        elif isinstance(self.definition, PureDefinition):
            shares = (float_below(per_round * select), float_below(per_round * (1 - select)))
        else:
            shares = split_round("zcdp", per_round, select, self.select_rho_per_epsilon2())
        return {
            "count": float_below(Fraction(count)),
            "init": float_below(Fraction(init)),
            "select": shares[0],
            "measure": shares[1],
        }

    def one_way_share(self, attributes: int) -> float:
        """``init="one-way"``: each 1-way marginal's share (an epsilon, or a rho under zCDP),
        the start's float share over ``attributes``, rounded down (so they add up to at most
        it)."""
        init = self.budget_split("dense", rounds=1)["init"]
        return float_below(Fraction(init) / max(1, int(attributes)))

    def _start_name(self) -> str:
        return "1-way marginals" if self.init == "one-way" else "initial histogram"

    def rounds_budget(self) -> Fraction:
        """What the rounds may spend, exact: the budget less the count's and start's floats."""
        split = self.budget_split("dense", rounds=1)
        return self.budget() - Fraction(split["count"]) - Fraction(split["init"])



def _check_tolerance(value: object, name: str = "reuse_tolerance") -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not math.isfinite(float(value)) or float(value) < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")


def _choice(value: object, name: str, options: tuple[str, ...]) -> None:
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")
