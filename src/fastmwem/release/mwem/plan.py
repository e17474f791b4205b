"""The plan of an MWEM run, from public input alone: its model, the workload it measures, its
set-up, its privacy events and its resources.

:func:`plan_mwem` makes every check a run needs before its charge (options, workload, noise
scales, memory), so that :func:`~fastmwem.release.mwem` is plan, charge, run, and
:func:`~fastmwem.release.mwem_with_defaults` can plan its candidate configurations and check
the accountant's room for them without running anything.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from fastmwem._validation import check_int, check_memory, check_noise_scale
from fastmwem.accounting import PrivacyEvent
from fastmwem.release._privacy import (
    PureDefinition,
    ZCDPDefinition,
    check_zcdp_workload,
    integer_valued,
)
from fastmwem.release.mwem.resources import MWEMResources, mwem_resources
from fastmwem.release.mwem.setup import (
    MWEMSetup,
    candidate_kind,
    candidate_workload,
    check_dataset,
    choose_model,
    only_supersets,
    prepare,
    within_cap,
)
from fastmwem.release.selection import RoundSelection
from fastmwem.release.selection.candidates import _marginal_groups
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.concatenate import Concatenate
from fastmwem.workloads.marginals import Marginals

if TYPE_CHECKING:
    from fastmwem.release.mwem.config import MWEMConfig

__all__ = ["MWEMPlan", "Candidates", "plan_mwem", "check_run_inputs", "mwem_privacy_plan",
           "plan_setup", "with_one_way", "one_way_groups"]


@dataclass(frozen=True)
class MWEMPlan:
    """A checked MWEM run before its charge; public input only.

    Attributes:
        config: the run's :class:`~fastmwem.release.MWEMConfig`.
        workload: the workload asked for.
        model: ``"dense"``, ``"junction-tree"`` or ``"product"``.
        measured: the workload the rounds select from (the asked one, or its candidates).
        setup: the selection and measurement set-up
            (:class:`~fastmwem.release.mwem.setup.MWEMSetup`); its ``selection`` is bound to
            ``measured`` (for ``selection="lazy"``, the index the run searches is built here,
            once).
        events: the ``(event, label)`` pairs the run charges, exactly.
        resources: the memory and time the run needs.
        memory_limit: the bytes the run may use (``None``: the machine's).
    """

    config: MWEMConfig
    workload: LinearWorkload
    model: str
    measured: LinearWorkload
    setup: MWEMSetup
    events: tuple[tuple[PrivacyEvent, str], ...]
    resources: MWEMResources
    memory_limit: int | None = None


@dataclass(frozen=True)
class Candidates:
    """What the rounds of a planned run select from, built once from public input.

    Plans of other configurations of one workload (the automatic defaults plan several) take
    them over when they select from the same candidates with an equal selection, so that what
    the selection builds (the lazy selection's index) is built once: see ``shared`` in
    :func:`plan_mwem`.

    Attributes:
        workload: the workload asked for.
        kind: the candidate set (``MWEMConfig.candidates`` resolved: ``"workload"``,
            ``"closure"`` or ``"supersets"``).
        model: the run's model.
        adaptive: whether the run's rounds are adaptive (``rounds=None``).
        measured: the workload whose groups (or queries) the rounds select from.
        selection: the round selection, bound to ``measured``.
        one_way: whether ``measured`` holds every 1-way marginal (``init="one-way"``,
            :func:`with_one_way`).
        own_groups: the groups of ``measured`` before :func:`with_one_way` appended any.
    """

    workload: LinearWorkload
    kind: str
    model: str
    adaptive: bool
    measured: LinearWorkload
    selection: RoundSelection
    one_way: bool = False
    own_groups: int = 0

    def serves(self, config: MWEMConfig, workload: LinearWorkload, model: str) -> bool:
        """Whether a run of ``config`` on ``workload`` with ``model`` selects from these."""
        return (self.workload is workload and self.model == model
                and self.adaptive == config.adaptive
                and self.one_way == (config.init == "one-way")
                and self.kind == candidate_kind(config, workload, model)
                and bool(self.selection == config.round_selection))


def plan_mwem(config: MWEMConfig, workload: LinearWorkload,
              memory_limit: int | None = None, *,
              shared: list[Candidates] | None = None) -> MWEMPlan:
    """Plan a run of ``config`` on ``workload``: every check it needs before the charge.

    Args:
        config: the run's configuration.
        workload: the workload asked for.
        memory_limit: the bytes the run may use (``None``: the machine's).
        shared: the candidates planned before by other configurations of ``workload`` (see
            :class:`Candidates`): the plan takes over the ones it selects from, or else adds
            its own. ``None``: nothing is shared, and everything is built for this plan.

    Raises:
        ValueError: the run cannot be carried out as configured (named), or would need more
            memory than allowed (``ResourceLimitError``).
    """
    if memory_limit is not None:
        check_int(memory_limit, "memory_limit", minimum=1)
    model, measured, setup = plan_setup(config, workload, memory_limit, shared=shared)
    _check_run(config, setup, measured)
    if config.adaptive and config.noise_test is not None and model != "dense":
        raise ValueError("noise_test with adaptive rounds tests a dense model: give "
                         "model='dense', or fixed rounds")
    resources = mwem_resources(config, measured, model=model)
    check_memory(resources.memory_bytes, f"MWEM ({model}) on {resources.cells} cells",
                 memory_limit)
    events = tuple(mwem_privacy_plan(config, workload, model=model, selection=setup.selection))
    return MWEMPlan(config, workload, model, measured, setup, events, resources, memory_limit)


def check_run_inputs(plan: MWEMPlan, dataset: object, schema: object = None) -> None:
    """Refuse a dataset the plan's model cannot read, or a schema of another domain."""
    check_dataset(dataset, plan.model)
    if schema is not None and getattr(schema, "domain", None) != plan.workload.domain:
        raise ValueError("schema must describe the dataset's domain")


def mwem_privacy_plan(config: MWEMConfig, workload: LinearWorkload, *,
                      model: str | None = None, selection: RoundSelection | None = None
                      ) -> list[tuple[PrivacyEvent, str]]:
    """The ordered list of ``(event, label)`` an MWEM run charges; it depends only on public input.

    ``model`` is the run's model (default: :func:`choose_model` on this machine's memory); it
    sets the default split of each round between selection and measurement, and names the noisy
    start (a histogram when dense, the 1-way marginals when factored). ``selection`` is the
    planned run's selection, bound to its candidates (default ``config.round_selection``; an
    unbound lazy selection with ``allow_uncertified`` records its rounds as uncertified).

    Selection rounds are :class:`~fastmwem.accounting.BoundedRange` (exponential mechanism) or
    :class:`~fastmwem.accounting.PureDP` (permute-and-flip). Pure DP: counts and measurements
    are Laplace (``PureDP``) and the plan's epsilons add up to at most ``config.epsilon``. zCDP:
    they are discrete Gaussian (:class:`~fastmwem.accounting.ZCDP`) and the plan's rhos add up to
    at most the budget. An adaptive run (``rounds=None``) charges its rounds as one ceiling, the
    budget left after the count and the start; each round is then charged within it
    (:mod:`fastmwem.release.mwem.annealing`).
    """
    if model is None:
        model = choose_model(config, workload)
    split = config.budget_split(model, rounds=config.round_count(len(workload.domain)))
    if selection is None:
        selection = config.round_selection
    definition = config.definition
    noise, event = definition.noise, definition.event

    plan: list[tuple[PrivacyEvent, str]] = []
    # Events hold the exact binary value of each float share, so the plan fits the budget.
    if split["count"] > 0:
        plan.append((event(split["count"]), f"record count ({noise})"))
    if split["init"] > 0 and config.init == "one-way":
        each = event(config.one_way_share(len(workload.domain)))
        plan += [(each, f"initial 1-way marginal {name} ({noise})")
                 for name in workload.domain.attributes]
    elif split["init"] > 0:
        start = "histogram" if model == "dense" else "1-way marginals"
        plan.append((event(split["init"]), f"initial {start} ({noise})"))
    if config.adaptive:
        plan.append((event(config.rounds_budget()),
                     f"adaptive rounds ({noise}; each round charged within this ceiling)"))
        return plan
    for t in range(1, config.round_count(len(workload.domain)) + 1):
        plan.append((selection.event(Fraction(split["select"])),
                     f"round {t}: select ({selection.name})"))
        plan.append((event(split["measure"]), f"round {t}: measure ({noise})"))
    return plan


def plan_setup(config: MWEMConfig, workload: LinearWorkload, memory_limit: int | None = None,
               *, shared: list[Candidates] | None = None
               ) -> tuple[str, LinearWorkload, MWEMSetup]:
    """The public plan of a run: its model, the workload it measures, and the candidates.

    Reads only public input (the configuration, the workload, the domain and the memory).
    ``shared`` is as in :func:`plan_mwem`.
    """
    model = choose_model(config, workload, memory_limit)
    kind = candidate_kind(config, workload, model)
    # A run without rounds binds no selection (a lazy one builds no index): it shares nothing.
    rounds = config.rounds != 0
    found = next((c for c in shared or () if rounds and c.serves(config, workload, model)), None)
    one_way = config.init == "one-way"
    if found is None:
        measured = candidate_workload(config, workload, model)
        own = int(measured.n_groups)
        if one_way:
            measured = with_one_way(measured)
        setup = prepare(config, measured, model)
        if shared is not None and rounds:
            shared.append(Candidates(workload, kind, model, config.adaptive, measured,
                                     setup.selection, one_way, own))
    else:
        measured, own = found.measured, found.own_groups
        setup = prepare(config, measured, model, found.selection)
    if measured is not workload and kind == "supersets":
        setup = only_supersets(setup, measured, workload)
    if one_way and setup.group_mode and rounds:
        setup = _without_start(setup, measured, own, config.excludes_measured)
    if model != "dense":
        setup = within_cap(setup, measured, config.max_clique_cells)
    return model, measured, setup


def with_one_way(measured: LinearWorkload) -> LinearWorkload:
    """``measured`` with every 1-way marginal among its groups (``init="one-way"``).

    A workload of whole marginals keeps those it has and gets the others appended, in
    attribute order; any other workload gets all of them appended.
    """
    domain = measured.domain
    groups = _marginal_groups(measured)
    have = set() if groups is None else {axes for axes in groups if len(axes) == 1}
    missing = [[name] for a, name in enumerate(domain.attributes) if (a,) not in have]
    if not missing:
        return measured
    return Concatenate([measured, Marginals(domain, missing)])


def one_way_groups(measured: LinearWorkload) -> list[int]:
    """The group of each attribute's 1-way marginal in a workload :func:`with_one_way` made,
    in attribute order."""
    d = len(measured.domain)
    groups = _marginal_groups(measured)
    if groups is None:  # every 1-way marginal was appended, in attribute order
        n = int(measured.n_groups)
        return list(range(n - d, n))
    first: dict[tuple[int, ...], int] = {}
    for g, axes in enumerate(groups):
        first.setdefault(axes, g)
    return [first[(a,)] for a in range(d)]


def _without_start(setup: MWEMSetup, measured: LinearWorkload, own: int,
                   excluded: bool) -> MWEMSetup:
    """The 1-way groups measured at the start leave the rounds' candidates: those appended for
    the start (ids from ``own`` on) always, the candidates' own ones when measured groups are
    excluded (public)."""
    ids = np.array(one_way_groups(measured), dtype=np.int64)
    drop = np.zeros(setup.candidates.size, dtype=bool)
    drop[ids[(ids >= own) | excluded]] = True
    candidates = setup.candidates & ~drop
    if not candidates.any():
        raise ValueError("init='one-way' measures every candidate at the start (all are 1-way "
                         "marginals), which leaves the rounds nothing: use another init, or "
                         "exclude_measured=False")
    return dataclasses.replace(setup, candidates=candidates)


def _check_run(config: MWEMConfig, setup: MWEMSetup, workload: LinearWorkload) -> None:
    """Refuse, before the charge, a run its options and workload cannot carry out."""
    if isinstance(config.definition, ZCDPDefinition):
        check_zcdp_workload(workload)
        config.select_rho_per_epsilon2()
    if config.init == "one-way":
        _check_one_way(config, setup, workload)
    if config.adaptive:
        if not setup.group_mode:
            raise ValueError("adaptive rounds (rounds=None) measure whole groups: use "
                             "measure='group' (or 'auto'), or give a number of rounds")
        if not getattr(setup.selection, "adaptive", False):
            raise ValueError(f"selection={setup.selection.name!r} cannot change its epsilon "
                             "from round to round: adaptive rounds (rounds=None) need "
                             "'exponential' or 'permute-and-flip'")
        return
    if config.excludes_measured and config.round_count(len(workload.domain)) > setup.n_candidates:
        raise ValueError(
            f"rounds ({config.rounds}) exceeds the {setup.n_candidates} candidate "
            f"{'groups' if setup.group_mode else 'queries'} (of sensitivity > 0) while "
            "exclude_measured=True"
        )


def _check_one_way(config: MWEMConfig, setup: MWEMSetup, workload: LinearWorkload) -> None:
    """Refuse a 1-way start the run cannot measure: single queries, or a noise scale that is
    not finite at each marginal's share."""
    if not setup.group_mode:
        raise ValueError("init='one-way' measures whole 1-way marginals as groups: this "
                         "workload's groups are single queries, so use another init")
    each = config.one_way_share(len(workload.domain))
    sensitivity = float(np.asarray(workload.group_sensitivity)[one_way_groups(workload)].max())
    what = f"each 1-way marginal of the start (init_fraction / {len(workload.domain)})"
    if each <= 0:
        raise ValueError(f"{what} gets no budget at all")
    if isinstance(config.definition, PureDefinition):
        check_noise_scale(sensitivity, each, what)
    config.definition.measurement(each, sensitivity, integer=integer_valued(workload))
