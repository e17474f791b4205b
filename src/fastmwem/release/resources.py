"""Deprecated location; import from fastmwem.release.mwem (:mod:`fastmwem.release.mwem.resources`).

Kept for one release so that old imports keep working; it re-exports the same objects and warns
nothing at import.
"""

from fastmwem.release.mwem.resources import (
    MWEMResources,
    mwem_resources,
)

__all__ = ["MWEMResources", "mwem_resources"]
