"""Protocols shared by the mechanism families."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from fastmwem.accounting import Accountant, PrivacyEvent

if TYPE_CHECKING:
    from fastmwem.random import RNGLike

__all__ = ["Selector", "charge"]


@runtime_checkable
class Selector(Protocol):
    """A private selection mechanism over a finite candidate set given by a score vector.

    ``select`` returns the index of one candidate; a higher score is better. Calibration
    (epsilon, sensitivity) lives in the object, and ``privacy`` is the event one call costs.
    """

    @property
    def privacy(self) -> PrivacyEvent: ...

    def select(self, scores: np.ndarray, *, rng: RNGLike = None,
               accountant: Accountant | None = None) -> int: ...


def charge(accountant: Accountant | None, event: PrivacyEvent, label: str) -> None:
    """Charge ``event`` to ``accountant`` (if any) before the data is looked at."""
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
        accountant.compose(event, label=label)
