"""Warnings about privacy, raised when a user explicitly opts into a leaky operation."""

from __future__ import annotations

__all__ = ["PrivacyLeakWarning"]


class PrivacyLeakWarning(UserWarning):
    """An operation read public-looking metadata (categories, bounds) from the private data.

    Such metadata is not protected by differential privacy: the released domain itself reveals,
    e.g., which rare categories occur and the exact minimum and maximum. It is emitted only when
    the caller has explicitly opted in (``Schema.infer(..., allow_private_inference=True)``).
    """
