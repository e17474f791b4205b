"""Deprecated location; import from fastmwem.release.mwem (:mod:`fastmwem.release.mwem.auto`).

Kept for one release so that old imports keep working; it re-exports the same objects and warns
nothing at import.
"""

from fastmwem.release.mwem.auto import (
    ADAPTIVE_MIN_RHO_N2,
    AUTO_REUSE_PASSES,
    DEFAULT_ORDER,
    MAX_DEFAULT_ROUNDS,
    MAX_SUPERSET_ROUNDS,
    NOISE_SHARE,
    NOISE_TEST_ALPHA,
    SUPERSET_MIN_ROUNDS,
    SUPERSET_ROUNDS_POWER,
    SUPERSET_ROUNDS_SCALE,
    SUPERSET_SELECT_FRACTION,
    ZCDP_SUPERSET_ROUNDS_POWER,
    ZCDP_SUPERSET_ROUNDS_SCALE,
    MWEMChoices,
    check_options,
    default_rounds,
    default_workload_spec,
    mwem_auto,
    mwem_with_defaults,
    superset_rounds,
    use_adaptive,
    zcdp_superset_rounds,
)

__all__ = ["mwem_with_defaults", "mwem_auto", "check_options", "MWEMChoices",
           "default_workload_spec", "default_rounds", "superset_rounds",
           "zcdp_superset_rounds", "use_adaptive", "ADAPTIVE_MIN_RHO_N2", "DEFAULT_ORDER",
           "MAX_DEFAULT_ROUNDS", "NOISE_SHARE", "NOISE_TEST_ALPHA", "SUPERSET_ROUNDS_SCALE",
           "SUPERSET_ROUNDS_POWER", "SUPERSET_MIN_ROUNDS", "SUPERSET_SELECT_FRACTION",
           "ZCDP_SUPERSET_ROUNDS_SCALE", "ZCDP_SUPERSET_ROUNDS_POWER", "MAX_SUPERSET_ROUNDS",
           "AUTO_REUSE_PASSES"]
