"""Data cubes (MWEM paper, arXiv:1012.4763, s.3.3): the marginals of every set of attributes, called cuboids."""

from __future__ import annotations

import itertools
import math

from fastmwem._validation import check_int
from fastmwem.data.domain import Domain
from fastmwem.workloads._common import check_domain, check_subset_count
from fastmwem.workloads.marginals import Marginals

__all__ = ["cuboids"]


def cuboids(domain: Domain, max_size: int | None = None, *, min_size: int = 1) -> Marginals:
    """All cuboids of ``domain`` with ``min_size`` to ``max_size`` attributes, as marginals.

    A cuboid of a data cube is the marginal on a set of attributes; each cuboid is one group
    whose cells are counting queries (L1 sensitivity 1 per cuboid, as in the MWEM paper (arXiv:1012.4763) s.3.3, where
    MWEM selects and measures whole cuboids). Cuboids come in order of size, then
    lexicographically. ``max_size=None`` means all attributes (``2^d - 1`` cuboids).

    >>> d = Domain(["a", "b", "c"], [2, 3, 2])
    >>> w = cuboids(d)
    >>> w.n_groups, w.describe_group(6)
    (7, 'marginal(a, b, c)')
    >>> cuboids(d, 2, min_size=2).n_groups
    3
    """
    check_domain(domain)
    top = len(domain) if max_size is None else check_int(max_size, "max_size", minimum=1,
                                                            maximum=len(domain))
    low = check_int(min_size, "min_size", minimum=1, maximum=top)
    check_subset_count(sum(math.comb(len(domain), r) for r in range(low, top + 1)), "cuboids")
    return Marginals(
        domain,
        (s for r in range(low, top + 1) for s in itertools.combinations(domain.attributes, r)),
    )
