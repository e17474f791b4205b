"""Defaults that adapt to the table: the workload order and the number of MWEM rounds.

Every choice uses public information (the domain, the workload, epsilon) and the noisy record
count, which is itself a private output: :func:`mwem_with_defaults` measures the count first, charges
it, and chooses the rounds from it; MWEM then charges its own plan. That is adaptive basic
composition, and the total never exceeds ``epsilon``.

The rounds rule. A round measures a group of ``C`` queries (the cells of a marginal) with
Laplace noise of scale ``Delta * 2T / eps_r`` on each, where ``eps_r`` is the budget left for
the ``T`` rounds and ``Delta`` the group's sensitivity, so the expected L1 norm of the noise is
``C * Delta * 2T / eps_r``; the ``n`` records themselves move the group's answers by ``n * Delta``
in L1. The default ``T`` is the largest number of rounds (at most ``MAX_DEFAULT_ROUNDS`` and the
number of candidate groups, at least 1) for which the ratio ``2 T C / (eps_r n)`` is at most
``NOISE_SHARE``, with ``C`` the mean group size (for a factored model, which selects among
marginals of every size with a per-cell penalty, the smallest candidate's): with few records
per cell, fewer and more accurate measurements. Default runs also test the first measurement (``noise_test``, see
:mod:`fastmwem.release.mwem.rounds`): if it lies within its noise of the uniform start, the output
stays uniform.

Pure DP on a dense model. The linear rule above decides whether superset candidates get enough
rounds (``SUPERSET_MIN_ROUNDS``); if they do, the run measures them for
:func:`superset_rounds` fixed rounds, and otherwise it anneals (adaptive rounds, 1-way
marginals first), with the noise test at its end over every measurement. On a factored model
the rule keeps its fixed rounds, without the first-round test (on adult annealing doubled the
error, as under zCDP; on mroz the test left two seeds of three uniform), at most
``FACTORED_MAX_ROUNDS`` and at most as many as keep a typical pair's measurement within
``FACTORED_NOISE_SHARE`` of its signal (:func:`~fastmwem.release.mwem.regime.signal_rounds`).
These choices were
made with the accuracy suite's leave-one-table-out comparison (``benchmarks/accuracy_suite.py``);
docs/mwem.md gives the held-out ratios to AIM.

The model. Under zCDP a default run takes a junction tree for a marginal workload even where a
dense histogram fits (``DEFAULT_MODEL``): on ten column subsets of the suite's large tables the
dense defaults (annealing, the reuse passes) had a mean log error ratio of 0.83 to the best of
three configurations and the junction tree 0.04 (``benchmarks/model_choice.py``; held out, on
NLTCS and msq, 0.13 against 0.04). Under pure DP the dense histogram stays: the subsets would
have chosen the junction tree (0.15 against 0.31), but on NLTCS and msq it lost (0.26 against
0.06), so the change has no held-out support there.

Small data. When even the most accurate candidate marginal of order >= 2, measured alone with
the whole budget left after the count, is predicted to get noise of at least the records' own
L1 mass (:mod:`fastmwem.release.mwem.regime`), no round can help: the default rounds release the
noisy 1-way marginals only (``init="one-way"``, ``rounds=0``), with a
:class:`~fastmwem.warnings.SmallDataWarning`.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Sized
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from fastmwem._deprecation import _outside_stacklevel, warn_renamed
from fastmwem._validation import check_int, check_probability
from fastmwem.accounting import Accountant, exact, float_below
from fastmwem.mechanisms.seeding import check_rng
from fastmwem.models.state import MAX_RECORDS
from fastmwem.random import RNGLike, make_rng
from fastmwem.release._privacy import (
    PrivacyDefinition,
    PureDefinition,
    definition_of,
    integer_valued,
)
from fastmwem.release.mwem.annealing import noise_std
from fastmwem.release.mwem.config import SELECT_FRACTION_FACTORED, MWEMConfig
from fastmwem.release.mwem.plan import Candidates, check_run_inputs, plan_mwem, plan_setup
from fastmwem.release.mwem.regime import (
    REGIME_ONE_WAY,
    REGIME_ROUNDS,
    SmallDataWarning,
    _predict,
    candidate_marginals,
    regime_settings,
    signal_rounds,
)
from fastmwem.release.mwem.run import run_plan
from fastmwem.release.mwem.setup import check_release_inputs
from fastmwem.release.result import MWEMChoices, MWEMResult
from fastmwem.release.selection.candidates import superset_workload
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.spec import DEFAULT_ORDER, default_workload_spec

if TYPE_CHECKING:
    from fastmwem.data.sources.base import MarginalSource

__all__ = ["mwem_with_defaults", "mwem_auto", "check_options", "MWEMChoices", "default_workload_spec", "default_rounds",
           "superset_rounds", "zcdp_superset_rounds", "use_adaptive",
           "ADAPTIVE_MIN_RHO_N2",
           "DEFAULT_ORDER", "MAX_DEFAULT_ROUNDS", "NOISE_SHARE", "NOISE_TEST_ALPHA",
           "SUPERSET_ROUNDS_SCALE", "SUPERSET_ROUNDS_POWER", "SUPERSET_MIN_ROUNDS",
           "SUPERSET_SELECT_FRACTION", "ZCDP_SUPERSET_ROUNDS_SCALE", "FACTORED_NOISE_SHARE",
           "FACTORED_ROUNDS_FLOOR", "DEFAULT_MODEL", "default_model",
           "ZCDP_SUPERSET_ROUNDS_POWER", "MAX_SUPERSET_ROUNDS", "AUTO_REUSE_PASSES", "FACTORED_MAX_ROUNDS",
           "AUTO_REUSE_TOLERANCE",
           "DEFAULT_ESTIMATOR"]

#: Most rounds the default rule chooses.
MAX_DEFAULT_ROUNDS = 25
#: Largest expected L1 norm of one measurement's noise, as a share of the records' own L1
#: contribution to the measured group (see the module docstring). Chosen on 16 settings of 12
#: small tables (uniform and correlated, 200 to 5,000 records) and NLTCS, 3 seeds each
#: (docs/mwem.md).
NOISE_SHARE = 0.3
#: The rounds rule of superset candidates (:func:`superset_rounds`), fitted on NLTCS (3-way
#: marginals, 3 seeds, pure DP; the best fixed rounds at epsilon 0.1, 0.3, 1 and 3).
SUPERSET_ROUNDS_SCALE = 2.8
SUPERSET_ROUNDS_POWER = 0.3
#: Share of a superset run's rounds' epsilon spent on selection (unless given). NLTCS, 8 seeds,
#: mean 3-way L1 at epsilon 0.1 / 0.3 / 1 / 3: 0.091 / 0.037 / 0.0147 / 0.0074 against
#: 0.097 / 0.041 / 0.017 / 0.0083 with the dense default 0.5 (0.2: 0.107 / 0.037; 0.4: 0.091 /
#: 0.039 at epsilon 0.1 / 0.3).
SUPERSET_SELECT_FRACTION = 0.3
#: The rules use superset candidates only if the linear rule (:func:`default_rounds`) allows
#: at least this many rounds of them: with fewer, the workload's own marginals did better
#: (10 correlated binary columns x 300 records, epsilon 0.5 to 2).
SUPERSET_MIN_ROUNDS = 4
#: The zCDP rounds rule of superset candidates (:func:`zcdp_superset_rounds`), fitted on NLTCS
#: (3-way marginals, seeds 0-2, (epsilon, 1e-9) converted: the best fixed rounds at epsilon
#: 0.1, 0.3, 1 and 3 were about 12, 16-25, 25-50 and 50).
ZCDP_SUPERSET_ROUNDS_SCALE = 2.1
ZCDP_SUPERSET_ROUNDS_POWER = 0.22
#: Most rounds the superset rules choose (``MAX_DEFAULT_ROUNDS`` bounds workload candidates):
#: under zCDP Gaussian noise grows as the square root of the rounds, and under pure DP at
#: epsilon 3 on NLTCS the pure rule's 27 rounds beat 25 (8 seeds: 0.0070 against 0.0074;
#: 35 rounds: 0.0064, 45: 0.0071).
MAX_SUPERSET_ROUNDS = 50
#: The zCDP default anneals (adaptive rounds) when ``rho n^2`` reaches this, and runs
#: ``MAX_DEFAULT_ROUNDS`` fixed rounds below it. NLTCS (n = 21,574), 3-way marginals, 3 seeds,
#: mean L1 fixed / adaptive: epsilon 0.1 (rho n^2 = 8e4) 0.065 / 0.087; 0.3 (7e5) 0.029 /
#: 0.030; 1 (7e6) 0.018 / 0.015; 3 (6e7) 0.017 / 0.007.
ADAPTIVE_MIN_RHO_N2 = 2e6
#: Reuse passes per round of a :func:`mwem_with_defaults` run under pure DP, or under zCDP on a factored
#: model (``MWEMConfig`` keeps 20, and so do zCDP runs on a dense model). Mean L1, 20 / 50
#: passes: NLTCS all 3-way, pure (superset candidates, 8 seeds) at epsilon 0.1 / 0.3 / 1 / 3:
#: 0.0869 / 0.0350 / 0.0143 / 0.0070 against 0.0785 / 0.0318 / 0.0137 / 0.0057; adult at
#: epsilon 1 (junction tree), all 2-way, pure (8 seeds): 0.0819 against 0.0791, zCDP (3
#: seeds): 0.0747 against 0.0725; adult-hd zCDP 0.0566 against 0.0529. On tables of 300 to
#: 5,000 records cut from NLTCS (pure) the change was within noise but for two settings (8 x
#: 2,000 at 0.5: 0.116 -> 0.083; 12 x 5,000 at 0.5: 0.056 -> 0.062). Under zCDP on NLTCS's
#: dense model 50 passes did worse (8 seeds at epsilon 0.1: 0.060 -> 0.065).
AUTO_REUSE_PASSES = 50
#: Tolerance of a default run's reuse passes by definition (``reuse_tolerance`` unless given:
#: a round's passes stop once one moves the model by less than this in L1). The accuracy
#: suite's choice: under pure DP 1e-3 (in-sample mean log ratio to the best policy 0.076
#: against 0.077 with ``MWEMConfig``'s 1e-4, the same errors on most tables in 10-50% less
#: CPU); under zCDP 1e-4 stays (1e-3: 0.056 against 0.046; NLTCS at epsilon 3 1.08x).
AUTO_REUSE_TOLERANCE: dict[str, float] = {"pure": 1e-3, "zcdp": 1e-4}
#: Significance level of the first-round noise test of default runs.
NOISE_TEST_ALPHA = 0.01
#: Most fixed rounds a default run on a factored model (junction tree) chooses, by definition
#: (and at most the candidates). A dense model's fixed rounds keep ``MAX_DEFAULT_ROUNDS``.
#: Under zCDP the accuracy suite's leave-one-table-out choice: up to 50 beat 25 (mean log
#: ratio to the best policy 0.049 against 0.080, on the tables every policy ran on) once the
#: junction-tree fit got fast enough for 50 rounds to stay within its time limit.
FACTORED_MAX_ROUNDS: dict[str, int] = {"pure": 25, "zcdp": 50}
#: The signal bound of a factored default run's fixed rounds, by definition
#: (:func:`~fastmwem.release.mwem.regime.signal_rounds`): at most as many rounds as keep a
#: typical pair's predicted error within this share; ``None``: no bound (the ceiling).
#: With ``FACTORED_ROUNDS_FLOOR``, the accuracy suite's leave-one-table-out choice under both
#: definitions (in-sample mean log ratio to the best policy: pure 0.072 against 0.078 without
#: the floor and 0.117 without the bound; zCDP 0.033 against 0.036 with a share of 0.6 and
#: 0.066 without the bound): on small tables of large pairs (titanic, mroz, bundesliga) each
#: of many rounds measured mostly noise. Without the floor, zCDP's bound left one round at
#: epsilon 0.3 on those tables and lost (0.19 and 0.097).
FACTORED_NOISE_SHARE: dict[str, float | None] = {"pure": 0.5, "zcdp": 0.3}
#: The model of a default run whose ``model`` is not given (or ``"auto"``), by definition:
#: ``"auto"`` keeps a dense histogram wherever one fits; ``"junction-tree"`` takes a junction
#: tree whenever the workload has marginal structure and the options allow one (else
#: ``"auto"``). ``model="dense"`` still asks for a dense histogram. Chosen by
#: ``benchmarks/model_choice.py`` on ten column subsets of the suite's large tables (38,400 to
#: 1.8 million cells; the suite's NLTCS and msq held out); see docs/mwem.md.
DEFAULT_MODEL: dict[str, str] = {"pure": "auto", "zcdp": "junction-tree"}
#: Whether the signal bound keeps at least one round per attribute (at most the ceiling), so
#: that the rounds can measure every 1-way marginal, as AIM does first; by definition.
FACTORED_ROUNDS_FLOOR: dict[str, bool] = {"pure": True, "zcdp": True}
#: The estimator of a default run when ``estimator`` is not given (``MWEMConfig.estimator``),
#: by definition and model: ``"passes"`` (reuse passes, and on a factored model up to
#: ``FINAL_PASSES_FACTORED`` final passes) or ``"final-fit"`` (the passes during the rounds,
#: then the weighted fit to every measurement).
DEFAULT_ESTIMATOR: dict[str, str] = {"pure dense": "final-fit", "pure factored": "final-fit",
                                     "zcdp dense": "passes", "zcdp factored": "final-fit"}


def use_adaptive(rho: float, records: float) -> bool:
    """The zCDP default: adaptive rounds when ``rho * n^2 >= ADAPTIVE_MIN_RHO_N2``, else
    ``MAX_DEFAULT_ROUNDS`` fixed rounds (public: the budget and the released count).

    ``1 / sqrt(rho)`` is the scale of a measurement's noise and ``n`` the records' own, so
    ``rho n^2`` is the squared signal-to-noise ratio of spending everything on one count.

    >>> use_adaptive(0.0148, 21574.0), use_adaptive(0.00146, 21574.0)
    (True, False)
    """
    return float(rho) * float(records) ** 2 >= ADAPTIVE_MIN_RHO_N2


def default_rounds(*, ceiling: int, cells: float, epsilon_rounds: float, records: float) -> int:
    """The rounds rule: ``min(ceiling, max(1, floor(NOISE_SHARE * eps_r * n / (2 C))))``.

    Args:
        ceiling: most rounds allowed (``MAX_DEFAULT_ROUNDS`` and the number of candidates).
        cells: mean number of queries in one measurement (``C``).
        epsilon_rounds: the budget of all rounds together (``eps_r``).
        records: the (noisy or public) record count (``n``).

    >>> default_rounds(ceiling=25, cells=8, epsilon_rounds=0.99, records=21574)
    25
    >>> default_rounds(ceiling=25, cells=8, epsilon_rounds=0.99, records=500)
    9
    """
    bound = NOISE_SHARE * float(epsilon_rounds) * float(records) / (2.0 * float(cells))
    if not bound < ceiling:  # also an epsilon so large that the product overflows to inf
        return int(ceiling)
    return int(max(1, math.floor(bound)))


def superset_rounds(*, ceiling: int, cells: float, epsilon_rounds: float,
                    records: float) -> int:
    """The rounds rule of superset candidates: ``SUPERSET_ROUNDS_SCALE * (eps_r n / C) ** 0.3``.

    Rounded, at least 1 and at most what :func:`default_rounds` allows (so at most
    ``ceiling``). Measuring supersets, a run needs fewer rounds to cover
    the workload, and multiplicative weights fits few measurements less well: the best fixed
    rounds on NLTCS (``C = 32``) were about 10, 13-15, 20 and 25-35 at epsilon 0.1, 0.3, 1
    and 3, a power of ``eps_r n / C`` near 0.3 rather than the linear rule of
    :func:`default_rounds`.

    >>> superset_rounds(ceiling=25, cells=32, epsilon_rounds=0.099, records=21574)
    10
    >>> superset_rounds(ceiling=25, cells=32, epsilon_rounds=0.99, records=21574)
    20
    """
    ratio = float(epsilon_rounds) * float(records) / float(cells)
    noise_bound = default_rounds(ceiling=ceiling, cells=cells, epsilon_rounds=epsilon_rounds,
                                 records=records)
    if not ratio < 1e12:  # also an epsilon so large that the product overflows to inf
        return noise_bound
    best = SUPERSET_ROUNDS_SCALE * max(ratio, 0.0) ** SUPERSET_ROUNDS_POWER
    return int(min(noise_bound, max(1, round(best))))


def zcdp_superset_rounds(*, ceiling: int, cells: float, rho_rounds: float,
                         records: float) -> int:
    """The zCDP rounds rule of superset candidates:
    ``ZCDP_SUPERSET_ROUNDS_SCALE * (rho_r n^2 / C) ** 0.22``, rounded, in ``[1, ceiling]``.

    ``rho_r n^2 / C`` is the squared signal-to-noise ratio of one cell of a measurement
    that had the rounds' whole budget. Under zCDP a round's noise grows as the square root of
    the rounds (under pure DP, linearly), so the best fixed rounds on NLTCS (``C = 32``) grew
    faster with the budget than :func:`superset_rounds`: about 12, 16-25, 25-50 and 50 at
    epsilon 0.1, 0.3, 1 and 3 (delta 1e-9).

    >>> zcdp_superset_rounds(ceiling=50, cells=32, rho_rounds=0.0148, records=21574)
    31
    >>> zcdp_superset_rounds(ceiling=50, cells=32, rho_rounds=0.000175, records=21574)
    12
    """
    ratio = float(rho_rounds) * float(records) * float(records) / float(cells)
    if not ratio < 1e15:  # also a budget so large that the product overflows to inf
        return int(ceiling)
    best = ZCDP_SUPERSET_ROUNDS_SCALE * max(ratio, 0.0) ** ZCDP_SUPERSET_ROUNDS_POWER
    return int(min(ceiling, max(1, round(best))))


def mwem_with_defaults(
    dataset: object,
    workload: LinearWorkload,
    *,
    epsilon: float | None = None,
    rounds: int | str | None = None,
    rng: RNGLike = None,
    accountant: Accountant | None = None,
    count_fraction: float = 0.01,
    before_rounds: Callable[[float], None] | None = None,
    privacy: str = "pure",
    delta: float | None = None,
    rho: float | None = None,
    **options: Any,
) -> MWEMResult:
    """MWEM with its record count measured first, so that the default rounds can adapt to it.

    Privacy: the count (sensitivity 1) at ``count_fraction`` of the budget, then
    :func:`~fastmwem.release.mwem` with the rest and the noisy count as its ``total``
    (post-processing of a released value): ``epsilon``-DP (pure, Laplace), or with
    ``privacy="zcdp"`` the discrete Gaussian and zCDP composition of ``rho`` (given, or the
    largest that gives ``(epsilon, delta)``-DP). The rounds depend only on public input and the
    released count.

    Model. Unless ``model`` is given (other than ``"auto"``), ``DEFAULT_MODEL`` for the
    definition: under zCDP a junction tree for a workload with marginal structure even where a
    dense histogram would fit (:func:`default_model`; a dense one where the options need it),
    under pure DP a dense histogram where it fits.

    Rounds. ``None`` (the default) chooses them: under zCDP adaptively (budget annealing,
    :mod:`fastmwem.release.mwem.annealing`) when the model is dense and :func:`use_adaptive` says
    so from the budget and the released count, else ``MAX_DEFAULT_ROUNDS`` fixed rounds on a
    dense model and ``FACTORED_MAX_ROUNDS["zcdp"]`` on a factored one, lowered by the signal
    bound (``FACTORED_NOISE_SHARE``, ``FACTORED_ROUNDS_FLOOR``; on adult's junction
    tree, annealing scored 0.276 mean 3-way L1 at epsilon 1 against 0.174 for fixed rounds),
    both at most the candidates; under pure DP with the first-round noise test
    (``noise_test=NOISE_TEST_ALPHA`` unless given) and, on a dense model, adaptively unless
    superset rounds are chosen (module docstring), else by the rounds rule of this module (a
    factored model, without the test unless given and within the signal bound
    ``FACTORED_NOISE_SHARE``, or options adaptive rounds do not admit: a lazy selection,
    single queries). A pure-DP dense run whose
    ``candidates`` are left to the default measures superset candidates instead
    (:func:`~fastmwem.release.selection.candidates.superset_workload`, with :func:`superset_rounds` and
    ``SUPERSET_SELECT_FRACTION``) when the linear rule allows at least ``SUPERSET_MIN_ROUNDS``
    rounds of them (decided from the released count); a zCDP dense run likewise, with
    :func:`zcdp_superset_rounds` (fixed rounds, no annealing) when that rule gives at least
    ``SUPERSET_MIN_ROUNDS``. ``"adaptive"`` asks for annealing under either definition; an
    integer fixes them (refused above the candidates).

    Small data: with ``rounds=None``, when the released count and the budget predict that
    every candidate of order >= 2 would be mostly noise even with the whole budget
    (:mod:`fastmwem.release.mwem.regime`), the run measures the 1-way marginals only, with all
    the count leaves, and outputs their product (``choices.regime == "one-way only"``), with
    a :class:`~fastmwem.warnings.SmallDataWarning`. The choices record the predictions.

    Reuse passes: ``AUTO_REUSE_PASSES`` per round, but the ``MWEMConfig`` default (20) for a
    zCDP run on a dense model, unless ``reuse_passes`` is given (``None`` chooses); they stop
    at ``AUTO_REUSE_TOLERANCE`` for the definition unless ``reuse_tolerance`` is given.
    Estimator: ``DEFAULT_ESTIMATOR`` for the definition and the model (the weighted final fit
    but under zCDP on a dense model), unless ``estimator`` is given.

    Everything MWEM checks before its charge is checked here before the count is charged, with
    the most rounds the rule can choose (so fewer rounds cannot fail either), and so is the
    accountant's room for the count and the whole MWEM plan.

    Args:
        dataset: a :class:`fastmwem.data.Dataset`.
        workload: linear queries over the dataset's domain.
        epsilon: total privacy budget (pure), or with ``delta`` the ``(epsilon, delta)``-DP
            guarantee of a zCDP run.
        rounds: ``None``, ``"adaptive"``, ``"fixed"`` (the rules above without annealing)
            or a number of rounds (see above).
        rng: ``None``, a Generator, or an integer seed for tests; a seed or a Generator the
            caller made (not by ``secure_rng()``) warns, and the result says it is not private.
        accountant: accountant to charge (a fresh one holding the budget if None).
        count_fraction: share of the budget spent on the record count (unless ``total=`` is
            given in ``options``: then the count is public and nothing is spent on it).
        before_rounds: called with the record count after it is released and before MWEM's
            charge (the CLI checks there that the records fit on disk).
        privacy: ``"pure"`` or ``"zcdp"``.
        delta, rho: the zCDP budget (see :class:`~fastmwem.release.MWEMConfig`).
        **options: the other keyword arguments of :func:`~fastmwem.release.mwem`.

    Returns:
        The MWEM result: its ``guarantee`` covers the count too, and its ``choices``
        (:class:`MWEMChoices`) say what was chosen.
    """
    definition = definition_of(privacy, delta)
    budget = definition.budget(epsilon, delta, rho)
    privacy = definition.name
    pure = isinstance(definition, PureDefinition)
    accountant = definition.default_accountant(budget) if accountant is None else accountant
    definition.check_accountant(accountant)
    if isinstance(rounds, str) and rounds not in ("adaptive", "fixed"):
        raise ValueError(f"rounds must be a number, 'adaptive', 'fixed' or None, got {rounds!r}")
    asked = rounds
    fixed_rule = rounds == "fixed"  # the rules below, but never annealing
    test_by_default = False
    rounds = None if fixed_rule else rounds
    adaptive = rounds == "adaptive"
    undecided = rounds is None and not pure  # decided from the released count
    by_rule = rounds is None and pure
    if rounds is not None and not adaptive:
        check_int(rounds, "rounds", minimum=1)
    elif by_rule and options.get("noise_test") is None:
        options["noise_test"] = NOISE_TEST_ALPHA
        test_by_default = True
    passes_given = options.get("reuse_passes") is not None
    if not passes_given:
        options.pop("reuse_passes", None)  # chosen below, once the model is known
    run_options = {k: options.pop(k) for k in _RUN_OPTIONS if k in options}
    limit = run_options.get("memory_limit")
    public_total = options.pop("total", None)
    count_share, rest = _split(budget, count_fraction, public_total is not None)
    counter = definition.measurement(count_share, 1.0) if count_share else None  # checks it
    generator = make_rng(rng)
    budget_options = {"epsilon": rest} if pure else {"privacy": privacy, "rho": rest}
    config = {**options, **budget_options,
              "total": 1 if public_total is None else public_total}
    fixed: int | None = None if adaptive or isinstance(rounds, str) else rounds
    candidates = str(options.get("candidates", "auto"))

    schema = run_options.get("schema")
    count_event = [(definition.event(count_share), "record count")] if count_share else []
    # The candidates every plan below selects from, built once for all of them (the lazy
    # selection's index among them) and handed on to the run's own plan.
    shared: list[Candidates] = []

    def check(t: int | None, settings: dict[str, Any] = config) -> None:
        # Every check mwem() makes before its charge, and the accountant's room for the count
        # and this plan, exactly; nothing is run or charged.
        planned = plan_mwem(MWEMConfig(**settings, rounds=t), workload, limit, shared=shared)
        check_run_inputs(planned, dataset, schema)
        accountant.check_fits([*count_event, *planned.events])

    check_release_inputs(dataset, workload)
    if config.get("model", "auto") == "auto":
        config["model"] = default_model(privacy, config, workload, adaptive, limit, shared)
    model, _, setup = plan_setup(MWEMConfig(**config, rounds=None if adaptive else 1), workload,
                                 limit, shared=shared)
    if not passes_given and (pure or model != "dense"):
        config["reuse_passes"] = AUTO_REUSE_PASSES
    if options.get("reuse_tolerance") is None:
        config["reuse_tolerance"] = AUTO_REUSE_TOLERANCE[privacy]
    if options.get("estimator") is None:
        config["estimator"] = DEFAULT_ESTIMATOR[
            f"{'pure' if pure else 'zcdp'} {'dense' if model == 'dense' else 'factored'}"]
    ceiling, candidates_found = None, None
    if adaptive or undecided:
        check(None)
        model = plan_setup(MWEMConfig(**config, rounds=None), workload, limit, shared=shared)[0]
    if not adaptive:
        model, measured, setup = plan_setup(MWEMConfig(**config, rounds=1), workload, limit,
                                            shared=shared)
        check(1 if rounds is None else fixed)
        if rounds is None and setup.group_mode and config.get("measure") != "query":
            candidates_found = candidate_marginals(measured, setup.candidates)
        top = (MAX_DEFAULT_ROUNDS if model == "dense"
               else FACTORED_MAX_ROUNDS["pure" if pure else "zcdp"])
        ceiling = min(top, setup.n_candidates) if fixed is None else fixed
        if ceiling > 1:
            check(ceiling)
    # Pure DP: the rule anneals unless it chooses superset rounds (checked now, before the
    # count's charge, like every plan below). Adaptive rounds need whole groups and a selection
    # that retunes its epsilon; with other options (single queries, a lazy selection) the rule
    # keeps fixed rounds. Their noise test needs a dense model.
    annealed = (dict(config) if by_rule and not fixed_rule and model == "dense"
                and setup.group_mode and getattr(setup.selection, "adaptive", False) else None)
    if annealed is not None:
        check(None, annealed)
    if by_rule and model != "dense" and test_by_default:
        # A factored model's fixed rounds: the first-round test, whose small measurement on a
        # table of few records reads as noise, would leave a structured table uniform there
        # (and no start can be restored from a junction tree after an end-of-run test).
        config.pop("noise_test", None)
    # Superset candidates, if the rule may choose them: checked now, before the count's charge.
    superset = (_superset_option(config, workload, model, limit, check, shared)
                if by_rule or undecided else None)
    # The one-way-only regime, if the rule may choose it: checked now, before the count's charge.
    small = regime_settings(config) if any(len(c[1]) >= 2 for c in candidates_found or ()) else None
    if small is not None:
        check(0, small)
    # +1: check_rng warns from one frame below this one (the caller may be the alias).
    provenance = check_rng(rng, "mwem", stacklevel=_outside_stacklevel() + 1)

    if counter is None:
        total = public_total
    else:
        accountant.compose(definition.event(count_share),
                           label=f"record count ({definition.noise})")
        noisy = counter.release(_records(dataset), rng=generator)
        total = int(round(min(max(float(noisy), 1.0), MAX_RECORDS)))  # clipping: post-processing
    if undecided:  # measured on dense models only: on adult (junction tree) annealing lost
        adaptive = not fixed_rule and model == "dense" and use_adaptive(rest, float(total))
        fixed = (None if adaptive or ceiling is None else
                 _signal_bound(ceiling, model, definition, rest, total, candidates_found, config,
                               workload))
        if superset is not None:
            settings, top, per_group = superset
            chosen = zcdp_superset_rounds(ceiling=top, cells=per_group, rho_rounds=rest,
                                          records=float(total))
            if chosen >= SUPERSET_MIN_ROUNDS:
                config, ceiling, candidates = settings, top, "supersets"
                adaptive, fixed = False, chosen
    if by_rule and ceiling is not None:  # (by the rule, the ceiling was set above)
        sizes = np.diff(setup.offsets)[setup.candidates] if setup.group_mode else np.ones(1)
        # A factored run selects among marginals of every size with a per-cell penalty, so its
        # rounds can always measure the smallest; a dense run measures the workload's own groups.
        cells = float(sizes.mean() if model == "dense" else sizes.min())
        bounded = _signal_bound(ceiling, model, definition, rest, total, candidates_found,
                                config, workload)
        fixed = default_rounds(ceiling=bounded, cells=cells, epsilon_rounds=rest,
                               records=float(total))
        if superset is not None:
            settings, top, per_group = superset
            room: dict[str, Any] = dict(ceiling=top, cells=per_group, epsilon_rounds=rest,
                        records=float(total))
            if default_rounds(**room) >= SUPERSET_MIN_ROUNDS:
                config, ceiling, candidates = settings, top, "supersets"
                fixed = superset_rounds(**room)
        if annealed is not None and candidates != "supersets":
            config, fixed, adaptive = annealed, None, True
    predicted, regime = None, REGIME_ROUNDS
    if candidates_found:
        predicted = _predict(workload.domain, candidates_found, definition, rest, float(total),
                             integer_valued(workload))
        if small is not None and not predicted.rounds_can_help:
            config, fixed, adaptive, regime = small, 0, False, REGIME_ONE_WAY
            candidates = str(options.get("candidates", "auto"))
            warnings.warn(predicted.message(), SmallDataWarning,
                          stacklevel=_outside_stacklevel())
    if counter is not None:  # every run refines the count with its whole marginals
        config = {**config, "total_std": noise_std(counter)}
    if before_rounds is not None:
        before_rounds(float(total))
    # mwem() with the candidates planned above: checked before the count's charge, so that
    # nothing fails now that could have been checked then.
    planned = plan_mwem(MWEMConfig(**{**config, "total": total}, rounds=fixed), workload, limit,
                        shared=shared)
    check_run_inputs(planned, dataset, schema)
    result = run_plan(planned, dataset, accountant, generator, schema=schema,
                      progress=run_options.get("progress"))
    spent = Fraction(count_share) + _charged(result, definition)
    result = dataclasses.replace(result, guarantee=definition.guarantee(spent))
    result = dataclasses.replace(result, rng_provenance=provenance)  # of rng, not of generator
    ran = sum(1 for r in result.trace if r.round > 0)
    choices = MWEMChoices(rounds=ran, rounds_default=asked is None, rounds_ceiling=ceiling,
                          noise_test=config.get("noise_test"), count_epsilon=count_share,
                          adaptive=adaptive, record_count=float(total),
                          candidates=candidates,
                          reuse_passes=int(config.get("reuse_passes", MWEMConfig.reuse_passes)),
                          regime=regime,
                          predicted_errors=None if predicted is None else predicted.summary(),
                          estimator=str(config.get("estimator", MWEMConfig.estimator)))
    return dataclasses.replace(result, choices=choices)


def check_options(*, rounds: int | str | None = None, **options: Any) -> None:
    """Refuse bad keyword arguments of :func:`mwem_with_defaults` before any data is read.

    Checks the budget (``epsilon``, ``privacy``, ``delta``, ``rho``) and MWEM's options as
    :class:`~fastmwem.release.MWEMConfig` would; nothing is drawn or charged. What depends on
    the data or the workload is checked by :func:`mwem_with_defaults` itself, before its first
    charge.

    >>> check_options(epsilon=1.0, rounds="adaptive", selection="lazy")
    >>> check_options(epsilon=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be > 0, got -1.0
    """
    MWEMConfig(rounds=rounds if isinstance(rounds, int) else 1, **options)


def mwem_auto(dataset: object, workload: LinearWorkload, **kwargs: Any
              ) -> tuple[MWEMResult, MWEMChoices]:
    """Deprecated: :func:`mwem_with_defaults`, returning ``(result, result.choices)``."""
    warn_renamed("mwem_auto", "mwem_with_defaults", where="fastmwem.release")
    result = mwem_with_defaults(dataset, workload, **kwargs)
    return result, cast(MWEMChoices, result.choices)


def _superset_option(config: dict[str, Any], workload: LinearWorkload, model: str,
                     limit: int | None, check: Callable[..., None],
                     shared: list[Candidates]) -> tuple[dict[str, Any], int, float] | None:
    """A dense run's superset settings, its rounds ceiling and cells per candidate.

    ``None`` unless the candidates are left to the default and the workload has supersets
    (:func:`~fastmwem.release.selection.candidates.superset_workload`). The settings pass every check of
    the run before anything is charged, so that choosing them after the count cannot fail.
    """
    if (model != "dense" or config.get("candidates", "auto") != "auto"
            or superset_workload(workload) is None):
        return None
    settings = {**config, "candidates": "supersets"}
    if settings.get("select_fraction") is None:
        settings["select_fraction"] = SUPERSET_SELECT_FRACTION
    setup = plan_setup(MWEMConfig(**settings, rounds=1), workload, limit,
                       shared=shared)[2]
    top = min(MAX_SUPERSET_ROUNDS, setup.n_candidates)
    for t in sorted({1, top}):
        check(t, settings)
    return settings, top, float(np.diff(setup.offsets)[setup.candidates].mean())


def _signal_bound(ceiling: int, model: str, definition: PrivacyDefinition,
                  budget: float, total: float,
                  found: list[tuple[str, tuple[str, ...], int, float]] | None,
                  config: dict[str, Any], workload: LinearWorkload) -> int:
    """``ceiling``, lowered on a factored model by ``FACTORED_NOISE_SHARE`` when it is set
    (:func:`~fastmwem.release.mwem.regime.signal_rounds`; public inputs only), to no fewer
    than the attributes with ``FACTORED_ROUNDS_FLOOR``."""
    share = FACTORED_NOISE_SHARE.get(definition.name)
    if share is None or model == "dense" or not found:
        return ceiling
    fraction = config.get("select_fraction")
    bound = signal_rounds(found, definition, budget, float(total), ceiling=ceiling, share=share,
                          select_fraction=SELECT_FRACTION_FACTORED if fraction is None
                          else float(fraction), integer=integer_valued(workload))
    if FACTORED_ROUNDS_FLOOR.get(definition.name, False):
        bound = max(bound, min(ceiling, len(workload.domain)))
    return bound


def _charged(result: MWEMResult, definition: PrivacyDefinition) -> Fraction:
    """What MWEM's own plan charged (its guarantee's rho or epsilon), exact."""
    record = result.guarantee or {}
    key = definition.currency
    return exact(record.get(key, 0), key, allow_zero=True)


# Keyword arguments of mwem() that are not MWEMConfig fields.
_RUN_OPTIONS = ("schema", "progress", "memory_limit")


def default_model(privacy: str, config: dict[str, Any], workload: LinearWorkload,
                  adaptive: bool, limit: int | None, shared: list[Candidates]) -> str:
    """The model of a default run that was not given one: ``DEFAULT_MODEL[privacy]``, or
    ``"auto"`` (a dense histogram when it fits) where a junction tree cannot run these options
    or this workload (decided from public input only, before any charge)."""
    chosen = DEFAULT_MODEL[privacy]
    if chosen == "auto":
        return chosen
    try:
        plan_setup(MWEMConfig(**{**config, "model": chosen}, rounds=None if adaptive else 1),
                   workload, limit, shared=shared)
    except ValueError:  # no marginal structure, or an option only a dense model runs
        return "auto"
    return chosen


def _split(total: Fraction, count_fraction: float, public: bool) -> tuple[float, float]:
    """The count's and the rounds' shares of the budget, floats that add up to at most it.

    The count is charged at the exact value of its float; ``mwem`` reads its float budget as
    the shortest decimal that prints it (as the accountant does), which may exceed the float
    by less than one unit in the last place, so the rounds' share steps down until it fits.
    """
    count = 0.0
    if not public:
        check_probability(count_fraction, "count_fraction")
        count = float_below(total * exact(count_fraction, "count_fraction"))
    left = total - Fraction(count)
    rest = float_below(left)
    while rest > 0 and exact(rest, "budget") > left:
        rest = math.nextafter(rest, 0.0)
    return count, rest


def _records(dataset: object) -> int:
    if isinstance(dataset, Sized):
        return len(dataset)
    return int(cast("MarginalSource", dataset).histogram().sum())  # as check_release_inputs saw
