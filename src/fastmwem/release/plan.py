"""Deprecated location; import from fastmwem.release.mwem (:mod:`fastmwem.release.mwem.plan`).

Kept for one release so that old imports keep working; it re-exports the same objects and warns
nothing at import.
"""

from fastmwem.release.mwem.plan import (
    MWEMPlan,
    check_run_inputs,
    mwem_privacy_plan,
    plan_mwem,
    plan_setup,
)

__all__ = ["MWEMPlan", "plan_mwem", "check_run_inputs", "mwem_privacy_plan", "plan_setup"]
