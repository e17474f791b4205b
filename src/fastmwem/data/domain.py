"""The public domain of a dataset: attribute names and the number of values of each."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from fastmwem._validation import check_int
from fastmwem.data.io.files import load_json

__all__ = ["Domain", "MAX_DENSE_CELLS", "dense_ok", "check_dense"]

#: Largest dense array over cells (a histogram, a marginal, a factor) the library allocates;
#: above it, a factored method is needed.
MAX_DENSE_CELLS = 2**26


def dense_ok(n_cells: int) -> bool:
    """Whether an array of ``n_cells`` cells is within the dense limit ``MAX_DENSE_CELLS``."""
    return n_cells <= MAX_DENSE_CELLS


def check_dense(n_cells: int, what: str, hint: str = "") -> None:
    """Raise ``ValueError`` naming ``what`` and the limit if ``n_cells`` is above the dense limit.

    Args:
        n_cells: the number of cells the array would have.
        what: what would be allocated, e.g. ``"the marginal on ['a', 'b']"``.
        hint: a way out, appended after a semicolon.
    """
    if not dense_ok(n_cells):
        limit = MAX_DENSE_CELLS
        raise ValueError(
            f"{what} has {n_cells} cells, more than the dense limit MAX_DENSE_CELLS = {limit} "
            f"(2**{limit.bit_length() - 1})" + (f"; {hint}" if hint else "")
        )


@dataclass(frozen=True)
class Domain:
    """Attribute names and sizes; attribute ``a`` takes integer codes ``0 .. size(a) - 1``.

    A domain is public information: it must come from declarations, never from the private
    data. Data, workloads, multiplicative-weights state and synthetic output all share one domain,
    and operations compare domains, not bare shapes.

    >>> d = Domain(["age", "sex"], [4, 2])
    >>> d.size, d.project(["sex"])
    (8, Domain(attributes=('sex',), shape=(2,)))
    >>> d.axes(["sex"])
    (1,)
    """

    attributes: tuple[str, ...]
    shape: tuple[int, ...]

    def __init__(self, attributes: Iterable[str], shape: Iterable[int]) -> None:
        if isinstance(attributes, str):
            raise TypeError("attributes must be a sequence of names, not a single string")
        attrs = tuple(attributes)
        sizes = tuple(shape)
        if len(attrs) != len(sizes):
            raise ValueError(
                f"attributes and shape must have the same length, got {len(attrs)} and {len(sizes)}"
            )
        if not attrs:
            raise ValueError("attributes must not be empty")
        for a in attrs:
            if not isinstance(a, str) or not a:
                raise TypeError(f"attribute names must be non-empty strings, got {a!r}")
        dup = sorted({a for a in attrs if attrs.count(a) > 1})
        if dup:
            raise ValueError(f"attributes must be unique, repeated: {dup}")
        checked = tuple(
            check_int(s, f"shape[{attrs[i]!r}]", minimum=1) for i, s in enumerate(sizes)
        )
        object.__setattr__(self, "attributes", attrs)
        object.__setattr__(self, "shape", checked)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, sizes: Mapping[str, int]) -> Domain:
        """Build from ``{"attribute": size}`` (insertion order is the attribute order)."""
        if not isinstance(sizes, Mapping):
            raise TypeError(f"sizes must be a mapping of attribute to size, got {type(sizes).__name__}")
        return cls(list(sizes.keys()), list(sizes.values()))

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> Domain:
        """Read a ``{"column": size}`` JSON file (a repeated column is an error)."""
        raw = load_json(path, "domain file")
        if not isinstance(raw, dict):
            raise ValueError(f"domain file {os.fspath(path)!r} must hold a JSON object")
        return cls.from_dict(raw)

    def to_dict(self) -> dict[str, int]:
        return dict(zip(self.attributes, self.shape))

    def to_json(self, path: str | os.PathLike[str]) -> None:
        """Write the ``{"column": size}`` JSON format."""
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=1)
            fh.write("\n")

    # -- queries -----------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Number of cells (an exact Python int, which may be astronomically large)."""
        return math.prod(self.shape)

    @property
    def dense(self) -> bool:
        """Whether a dense histogram over every cell is within ``MAX_DENSE_CELLS``."""
        return dense_ok(self.size)

    def __len__(self) -> int:
        return len(self.attributes)

    def __iter__(self) -> Iterator[str]:
        return iter(self.attributes)

    def __contains__(self, attribute: object) -> bool:
        return attribute in self.attributes

    def size_of(self, attribute: str) -> int:
        return self.shape[self.axis(attribute)]

    def axis(self, attribute: str) -> int:
        try:
            return self.attributes.index(attribute)
        except ValueError:
            raise ValueError(
                f"unknown attribute {attribute!r}; the domain has {list(self.attributes)}"
            ) from None

    def axes(self, attributes: Iterable[str]) -> tuple[int, ...]:
        attrs = self._names(attributes)
        return tuple(self.axis(a) for a in attrs)

    def project(self, attributes: Iterable[str]) -> Domain:
        """The sub-domain on ``attributes`` (in the order given)."""
        attrs = self._names(attributes)
        return Domain(attrs, [self.shape[self.axis(a)] for a in attrs])

    @staticmethod
    def _names(attributes: Iterable[str]) -> tuple[str, ...]:
        if isinstance(attributes, str):
            return (attributes,)
        attrs = tuple(attributes)
        if len(set(attrs)) != len(attrs):
            raise ValueError(f"attributes must be unique, got {list(attrs)}")
        return attrs
