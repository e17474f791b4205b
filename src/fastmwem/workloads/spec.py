"""Workloads named by a short text, as the command line takes them."""

from __future__ import annotations

import itertools
import math

from fastmwem.data.domain import Domain
from fastmwem.random import RNGLike
from fastmwem.workloads._common import check_subset_count
from fastmwem.workloads.base import LinearWorkload
from fastmwem.workloads.counting import RandomCountingQueries
from fastmwem.workloads.intervals import AllIntervals
from fastmwem.workloads.marginals import Marginals
from fastmwem.workloads.parities import Parities
from fastmwem.workloads.ranges import RangeQueries

__all__ = ["parse_workload", "default_workload_spec", "DEFAULT_ORDER", "WORKLOAD_HELP"]

#: Order of the default workload's marginals (fewer on a table with fewer columns).
DEFAULT_ORDER = 3

WORKLOAD_HELP = (
    "workload: marginals:K (all K-way marginals, e.g. marginals:3); marginals:1-3 (all 1- to "
    "3-way); ranges:N[:A,B] (N random range queries over attributes A,B; default all); "
    "intervals:A (all intervals of the ordered attribute A); "
    "parities:K (all parities of at most K binary attributes); counting:N (N random counting "
    f"queries). Default marginals:{DEFAULT_ORDER}, or marginals:K on a table of K < "
    f"{DEFAULT_ORDER} columns"
)


def default_workload_spec(domain: Domain) -> str:
    """``marginals:K`` with ``K = min(DEFAULT_ORDER, number of attributes)``.

    >>> default_workload_spec(Domain(["a", "b"], [2, 3]))
    'marginals:2'
    """
    return f"marginals:{min(DEFAULT_ORDER, len(domain))}"


def _positive(text: str, spec: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"workload {spec!r}: {text!r} is not an integer") from None
    if value < 1:
        raise ValueError(f"workload {spec!r}: {value} must be >= 1")
    return value


def parse_workload(spec: str, domain: Domain, *, seed: RNGLike = None) -> LinearWorkload:
    """Build the workload named by ``spec`` over ``domain``.

    Random workloads (ranges, counting) are public: they are drawn from ``seed`` (an integer or
    a Generator; ``None``: the operating system) and never from the data.

    >>> d = Domain(["a", "b", "c"], [2, 2, 2])
    >>> parse_workload("marginals:2", d).n_groups
    3
    >>> parse_workload("marginals:1-2", d).n_groups
    6
    >>> parse_workload("ranges:5:a,b", d, seed=0).n_queries
    5
    >>> parse_workload("parities:2", d).n_queries
    7
    >>> parse_workload("intervals:b", d).n_queries
    3
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"workload must look like 'marginals:3', got {spec!r}")
    kind, _, argument = spec.partition(":")
    if kind == "marginals":
        low, _, high = argument.partition("-")
        k_low = _positive(low, spec)
        k_high = _positive(high, spec) if high else k_low
        if k_high > len(domain) or k_low > k_high:
            raise ValueError(
                f"workload {spec!r}: marginal order must lie in 1..{len(domain)} (the number of "
                "attributes)"
            )
        # One order is the range k..k: its subsets come in the same (lexicographic) order.
        count = sum(math.comb(len(domain), k) for k in range(k_low, k_high + 1))
        check_subset_count(count, f"{k_low}-way marginals" if k_low == k_high
                           else f"marginals of order {k_low} to {k_high}")
        return Marginals(domain, itertools.chain.from_iterable(
            itertools.combinations(domain.attributes, k) for k in range(k_low, k_high + 1)))
    if kind == "ranges":
        how_many, _, names = argument.partition(":")
        attributes = tuple(a for a in names.split(",") if a) if names else domain.attributes
        return RangeQueries.random(domain, attributes, _positive(how_many, spec), rng=seed)
    if kind == "intervals":
        if not argument or "," in argument:
            raise ValueError(f"workload {spec!r}: name one attribute, e.g. 'intervals:age'")
        return AllIntervals(domain, argument)
    if kind == "parities":
        k = _positive(argument, spec)
        if k > len(domain):
            raise ValueError(f"workload {spec!r}: order must lie in 1..{len(domain)}")
        return Parities.all_kway(domain, k)
    if kind == "counting":
        return RandomCountingQueries(domain, _positive(argument, spec), rng=seed)
    raise ValueError(
        f"unknown workload kind {kind!r} in {spec!r}; known: marginals, ranges, intervals, parities, counting"
    )
