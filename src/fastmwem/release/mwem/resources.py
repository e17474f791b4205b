"""Memory and time an MWEM run needs, estimated from public parameters before it starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fastmwem.release.mwem.config import FINAL_FIT_ITERATIONS, FINAL_PASSES_FACTORED
from fastmwem.workloads.base import LinearWorkload

if TYPE_CHECKING:
    from fastmwem.release.mwem.config import MWEMConfig

__all__ = ["MWEMResources", "mwem_resources"]

# Histogram-sized float64 arrays alive at the peak of a run: the synthetic distribution, the
# true histogram, the working set of a full workload answer (about three for marginals), the
# snapshot that measures how far a reuse pass moved, and the output.
_HISTOGRAM_COPIES = 7
# Extra copies: the running average (output="average"); the noisy start histogram and its
# clipped, mixed copy (init="noisy-histogram").
_AVERAGE_COPIES = 1
_NOISY_INIT_COPIES = 2
# estimator="fit": the saved point, the gradient, the step's factors and a difference.
_FIT_COPIES = 4
# Arrays of one entry per query (true answers, current answers and errors) and per group
# (offsets, sensitivities, penalties, candidates, scores, the selection's noise and log-weights),
# at 8 bytes an entry. Measured: about 65 bytes a query for 10**7 single-query groups.
_PER_QUERY_ARRAYS = 4
_PER_GROUP_ARRAYS = 6
# Per round: its two privacy events and ledger entries, its trace record and its measurement
# (plus 8 bytes per measured query).
_BYTES_PER_ROUND = 2048
# Marginals keep an index of the marginal cell of each histogram cell for small domains: at
# most 2**25 entries of 8 bytes.
_INDEX_CACHE_BYTES = 2**28
# Seconds per histogram cell touched by one multiplicative-weights update (an answer of the
# group, the multiply, the normalisation), and per cell and per query for a round's full
# answer and selection. Measured on the development machine (marginals on 2**16 to 2**26
# cells, random counting queries); machines differ by 2-3x either way.
_SECONDS_PER_CELL_UPDATE = 1e-8
_SECONDS_PER_CELL_ROUND = 3e-8
_SECONDS_PER_QUERY_ROUND = 2e-7


@dataclass(frozen=True)
class MWEMResources:
    """An estimate of what an MWEM run needs; it depends only on public parameters.

    Attributes:
        cells: histogram cells (domain size).
        queries: queries in the workload.
        groups: groups (measurement units) in the workload.
        memory_bytes: peak memory of the run, not counting the dataset itself.
        max_updates: multiplicative-weights updates if no reuse pass stops early
            (``rounds + reuse_passes * rounds * (rounds + 1) / 2``).
        seconds: a rough running time for ``max_updates`` (early stopping can only shorten it),
            the final passes or fit included.
        final_seconds: the part of ``seconds`` after the last round (the final passes or fit).
    """

    cells: int
    queries: int
    groups: int
    memory_bytes: int
    max_updates: int
    seconds: float
    final_seconds: float = 0.0

    def describe(self) -> str:
        return (
            f"{self.cells} cells, {self.queries} queries in {self.groups} groups: about "
            f"{self.memory_bytes / 2**30:.2f} GiB of memory and at most {self.max_updates} "
            f"updates (roughly {self.seconds:.0f} s)"
        )


def mwem_resources(config: MWEMConfig, workload: LinearWorkload, *,
                   model: str = "dense") -> MWEMResources:
    """Estimate the peak memory and the running time of ``mwem`` with ``config`` on ``workload``.

    The estimate uses only public parameters: the domain size, the workload's size, the number
    of rounds and of reuse passes, and for a factored ``model`` the clique cap. ``mwem`` refuses
    a run whose memory estimate exceeds the machine's memory (see
    :func:`fastmwem._validation.memory_limit`).
    """
    if model != "dense":
        return _factored_resources(config, workload)
    cells = int(workload.domain.size)
    queries = int(workload.n_queries)
    groups = int(workload.n_groups)
    copies = _HISTOGRAM_COPIES
    if config.output == "average":
        copies += _AVERAGE_COPIES
    if config.init == "noisy-histogram":
        copies += _NOISY_INIT_COPIES
    if _fits(config):
        copies += _FIT_COPIES
    rounds = _rounds(config, workload)
    largest_group = int(np.diff(workload.group_offsets).max())
    memory = (8 * (copies * cells + _PER_QUERY_ARRAYS * queries + _PER_GROUP_ARRAYS * groups)
              + rounds * (_BYTES_PER_ROUND + 8 * largest_group))
    if getattr(workload, "groups_partition_cells", False):
        memory += min(_INDEX_CACHE_BYTES, 8 * cells * groups)
    final = _final_updates(config, rounds, 0)
    updates = rounds + _passes(config) * rounds * (rounds + 1) // 2 + final
    seconds = (updates * cells * _SECONDS_PER_CELL_UPDATE
               + rounds * (cells * _SECONDS_PER_CELL_ROUND + queries * _SECONDS_PER_QUERY_ROUND))
    return MWEMResources(cells, queries, groups, int(memory), updates, float(seconds),
                         float(final * cells * _SECONDS_PER_CELL_UPDATE))


# A factored run: per query, its true answer, this round's synthetic answer and error, and the
# cached synthetic marginals; the model holds at most one clique of the cap per attribute, with a
# checkpoint copy for the reuse test and temporaries of inference. Seconds: a rough cost per
# update (message passing on small cliques) and per query per round (answers and selection).
# Measured (adult from the benchmark suite, 14 attributes, 364 3-way marginals, 2.1e7
# queries, epsilon 1, 25 rounds, 2 loaded cores): 2798 final passes over 25 measurements took
# 20 s wall, 13 s CPU (2.9e-4 s, 1.9e-4 s an update); the rounds with their reuse passes about
# 7 s and reading the marginals 2.5 s. The estimate (all 5000 final passes) is then 40 s against
# 32 s measured; the constants before (1e-4 and 1e-7) said 67 s, of which 14 s for the updates.
_FACTORED_PER_QUERY_ARRAYS = 5
_FACTORED_MODEL_COPIES = 3
_SECONDS_PER_FACTORED_UPDATE = 2.5e-4
_SECONDS_PER_FACTORED_QUERY = 1e-8


def _rounds(config: MWEMConfig, workload: LinearWorkload) -> int:
    """The most measurements a run can make: its rounds, or an adaptive run's ``T0`` plus the
    1-way marginals it measures first (every adaptive round costs at least the first one's
    share); plus the 1-way marginals of ``init="one-way"``."""
    rounds = getattr(config, "rounds", None)
    start = len(workload.domain) if getattr(config, "init", None) == "one-way" else 0
    if rounds is not None:
        return int(rounds) + start
    return int(config.round_count(len(workload.domain))) + len(workload.domain)


def _fits(config: MWEMConfig) -> bool:
    """Whether the run fits at all (every round, or after the last one)."""
    return getattr(config, "estimator", "passes") in ("fit", "final-fit")


def _fits_rounds(config: MWEMConfig) -> bool:
    return getattr(config, "estimator", "passes") == "fit"


def _passes(config: MWEMConfig) -> int:
    """Passes over the measurements a round may make: reuse passes, or steps of the fit (each
    touches every measurement, as a pass does)."""
    return int(config.fit_iterations if _fits_rounds(config) else config.reuse_passes)


def _factored_resources(config: MWEMConfig, workload: LinearWorkload) -> MWEMResources:
    cap = int(config.max_clique_cells)
    queries = int(workload.n_queries)
    groups = int(workload.n_groups)
    attributes = len(workload.domain)
    rounds = _rounds(config, workload)
    model = min(attributes, max(1, rounds)) * cap + sum(workload.domain.shape)
    copies = _FACTORED_MODEL_COPIES + (2 if _fits(config) else 0)  # saved, gradient
    memory = (8 * (_FACTORED_PER_QUERY_ARRAYS * queries + _PER_GROUP_ARRAYS * groups
                   + copies * model)
              + rounds * (_BYTES_PER_ROUND + 8 * int(np.diff(workload.group_offsets).max())))
    final = _final_updates(config, rounds, FINAL_PASSES_FACTORED)
    updates = rounds + _passes(config) * rounds * (rounds + 1) // 2 + final
    seconds = (updates * _SECONDS_PER_FACTORED_UPDATE
               + rounds * queries * _SECONDS_PER_FACTORED_QUERY)
    return MWEMResources(int(workload.domain.size), queries, groups, int(memory), updates,
                         float(seconds), float(final * _SECONDS_PER_FACTORED_UPDATE))


def _final_updates(config: MWEMConfig, rounds: int, default_passes: int) -> int:
    """Updates after the last round: the final fit's steps or the final passes (at most; each
    touches every measurement)."""
    if _fits(config):
        return int(getattr(config, "final_fit_iterations", FINAL_FIT_ITERATIONS)) * rounds
    final = getattr(config, "final_passes", None)
    return (default_passes if final is None else int(final)) * rounds
