"""The budget of :func:`~fastmwem.data.schema.draft.draft_schema`: its split and its charges.

The budget is divided equally among the columns that learn something. A number column
spends its share over the levels of :func:`~fastmwem.data.schema.draft.private_cuts`, one
``BoundedRange`` charge per level (under zCDP ``levels * eps**2 / 8`` of its rho); a text
column its share of epsilon, and an equal share of delta, in one ``ApproxDP`` charge. Every
share is a float whose exact value, however a ledger reads it, lies within the split.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from fastmwem.accounting import ApproxDP, BoundedRange, PrivacyEvent, exact, float_below
from fastmwem.data.schema._values import Label

__all__ = ["ColumnDraft", "float_within", "draft_events", "draft_budget"]


@dataclass(frozen=True)
class ColumnDraft:
    """What the draft does for one column, decided from public metadata only.

    Attributes:
        name: the column.
        kind: ``"bool"``, ``"categorical"``, ``"integer"``, ``"numeric"`` or ``"datetime"``.
        missing: whether its spec gets a missing code.
        categories: declared categories (public), or None.
        grid: the public candidate cut points of a number column (sorted), or None.
    """

    name: str
    kind: str
    missing: bool
    categories: tuple[Label, ...] | None = None
    grid: np.ndarray | None = None

    @property
    def learns(self) -> str | None:
        """``"cuts"``, ``"categories"``, or None for a column that costs nothing."""
        if self.grid is not None:
            return "cuts"
        if self.kind == "categorical" and self.categories is None:
            return "categories"
        return None


def cut_levels(bins: int) -> int:
    """The levels of :func:`~fastmwem.data.schema.draft.private_cuts` for ``bins`` bins."""
    return max(1, math.ceil(math.log2(bins)))


def float_within(value: Fraction) -> float:
    """A float whose binary value and shortest decimal both lie at or below ``value``."""
    out = float_below(value)
    while out > 0 and exact(out, "share") > value:
        out = math.nextafter(out, 0.0)
    return out


def draft_events(plans: Sequence[ColumnDraft], bins: int, epsilon: Fraction | None,
            delta: Fraction | None, rho: Fraction | None
            ) -> tuple[list[tuple[PrivacyEvent, str]], dict[str, tuple[float, float]]]:
    """The charges of the draft, and each learning column's (epsilon, delta) per mechanism."""
    learning = [p for p in plans if p.learns]
    texts = [p for p in learning if p.learns == "categories"]
    events: list[tuple[PrivacyEvent, str]] = []
    params: dict[str, tuple[float, float]] = {}
    if not learning:
        return events, params
    levels = cut_levels(bins)
    for p in learning:
        if p.learns == "categories":
            if epsilon is None or delta is None:  # refused by draft_schema already
                raise ValueError("text columns need an (epsilon, delta) budget")
            eps = float_within(epsilon / len(learning))
            d = float_within(delta / len(texts))
            events.append((ApproxDP(Fraction(eps), Fraction(d)),
                           f"draft {p.name!r}: categories (stability histogram)"))
            params[p.name] = (eps, d)
            continue
        if rho is not None:  # levels * eps**2 / 8 <= rho / columns
            share = rho / len(learning) / levels
            eps = float_within(Fraction(math.sqrt(8 * float(share))))
            while eps > 0 and Fraction(eps) ** 2 / 8 > share:
                eps = math.nextafter(eps, 0.0)
        elif epsilon is not None:
            eps = float_within(epsilon / len(learning) / levels)
        else:
            raise ValueError("the draft needs a budget")
        if eps <= 0:
            raise ValueError("the draft's budget is too small to split among its columns")
        params[p.name] = (eps, 0.0)
        events += [(BoundedRange(Fraction(eps)),
                    f"draft {p.name!r}: quantile cuts, level {i + 1} of {levels} "
                    "(exponential mechanism)") for i in range(levels)]
    return events, params


def draft_budget(epsilon: object, delta: object, rho: object
            ) -> tuple[Fraction | None, Fraction | None, Fraction | None]:
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ValueError("give draft_schema either rho, or epsilon (and delta), not both")
        return None, None, exact(rho, "rho")
    if epsilon is None:
        raise ValueError("draft_schema needs a budget: epsilon (and delta), or rho")
    from fastmwem._validation import check_epsilon

    check_epsilon(epsilon)
    if delta is None:
        return exact(epsilon, "epsilon"), None, None
    d = exact(delta, "delta")
    if not 0 < d < 1:
        raise ValueError(f"delta must lie in (0, 1), got {float(d)}")
    return exact(epsilon, "epsilon"), d, None
