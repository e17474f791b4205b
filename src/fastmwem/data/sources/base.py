"""What a release needs from the private data: the ``MarginalSource`` protocol.

MWEM reads the private data only through counts: the record count and the marginal counts over
sets of attributes. Anything that gives those is a source: an in-memory
:class:`~fastmwem.data.Dataset`, or a table that a query engine (DuckDB, Spark) counts where the
data lives, so that the records never enter Python's memory.

A source that exists has been validated: every cell is a valid code (or encodes to one under
the schema), with the same errors as the in-memory path, raised when it was opened, before any
privacy budget was spent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from fastmwem.data.dataset import _check_dense
from fastmwem.data.domain import Domain

__all__ = ["MarginalSource", "check_attribute_sets", "fill_marginal"]


@runtime_checkable
class MarginalSource(Protocol):
    """The private data as counts over a public :class:`~fastmwem.data.Domain`.

    ``marginal(attrs)`` is the array of counts shaped by the attributes' sizes (in the order
    given); ``marginals(sets)`` gives many at once (one pass over the data where the engine can);
    ``histogram()`` is the flat count of every cell of the domain (C order), for domains within
    the dense limit; ``len(source)`` is the number of records. Counts are float64 holding whole
    numbers, identical for every implementation on the same data.
    """

    @property
    def domain(self) -> Domain: ...

    def __len__(self) -> int: ...

    def marginal(self, attrs: str | Iterable[str]) -> np.ndarray: ...

    def marginals(self, attribute_sets: Iterable[str | Iterable[str]]) -> list[np.ndarray]: ...

    def histogram(self) -> np.ndarray: ...


def check_attribute_sets(
    domain: Domain, attribute_sets: Iterable[str | Iterable[str]]
) -> list[tuple[str, ...]]:
    """The attribute sets as tuples of names, each checked against ``domain`` and the dense limit.

    Raises:
        TypeError: not a list of attribute sets, or a name that is not a string.
        ValueError: an unknown or repeated attribute, or a marginal above ``MAX_DENSE_CELLS``.
    """
    if isinstance(attribute_sets, (str, bytes)):
        raise TypeError("attribute_sets must be a list of attribute sets, not one string")
    try:
        raw = list(attribute_sets)
    except TypeError:
        raise TypeError(f"attribute_sets must be a list of attribute sets, got "
                        f"{type(attribute_sets).__name__}") from None
    out = []
    for attrs in raw:
        names = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        for a in names:
            if not isinstance(a, str):
                raise TypeError(f"attribute sets must hold attribute names (str), got {a!r}")
        axes = domain.axes(names)  # unknown or repeated names are ValueErrors
        _check_dense(math.prod(domain.shape[i] for i in axes), f"the marginal on {list(names)}")
        out.append(names)
    return out


def fill_marginal(shape: tuple[int, ...], codes: Sequence[np.ndarray],
                  counts: np.ndarray) -> np.ndarray:
    """The dense marginal with ``counts[i]`` at cell ``(codes[0][i], codes[1][i], ...)``.

    Each cell appears at most once (the rows of one GROUP BY).
    """
    out = np.zeros(shape, dtype=np.float64)
    if len(shape) == 0:
        return np.array(float(np.sum(counts)))
    out[tuple(np.asarray(c, dtype=np.int64) for c in codes)] = counts
    return out
