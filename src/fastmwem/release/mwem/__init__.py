"""MWEM, the multiplicative weights exponential mechanism: its configuration, plan and run.

* :mod:`~fastmwem.release.mwem.config`: :class:`MWEMConfig`, every option of a run.
* :mod:`~fastmwem.release.mwem.plan`: :func:`plan_mwem`, every check a run needs before its
  charge, from public input alone (:class:`MWEMPlan`).
* :mod:`~fastmwem.release.mwem.run`: :func:`mwem` (plan, charge, run) and :func:`run_plan`.
* :mod:`~fastmwem.release.mwem.auto`: :func:`mwem_with_defaults`, the defaults that adapt to the
  table (the command line's).
* :mod:`~fastmwem.release.mwem.setup`, :mod:`~fastmwem.release.mwem.rounds`,
  :mod:`~fastmwem.release.mwem.adaptive`, :mod:`~fastmwem.release.mwem.annealing`,
  :mod:`~fastmwem.release.mwem.resources`: the set-up, the rounds (fixed and adaptive), budget
  annealing and the memory and time a run needs.
* :mod:`~fastmwem.release.mwem.regime`: :func:`predicted_errors`, the error a measurement is
  predicted to add, and the small-data rule of the defaults.
* :mod:`~fastmwem.release.mwem.data_view`: the private data as a run reads it.
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
from fastmwem.release.mwem.config import (
    FINAL_PASSES_FACTORED,
    MAX_FINAL_PASSES,
    MAX_REUSE_PASSES,
    MODELS,
    PROGRESS_SECONDS,
    SELECT_FRACTION_ADAPTIVE,
    SELECT_FRACTION_FACTORED,
    SELECT_FRACTION_FACTORED_EXACT,
    MWEMConfig,
)
from fastmwem.release.mwem.data_view import PrivateView, answers_from_marginals, fetch_marginals
from fastmwem.release.mwem.plan import (
    MWEMPlan,
    check_run_inputs,
    mwem_privacy_plan,
    plan_mwem,
    plan_setup,
)
from fastmwem.release.mwem.regime import (
    ONE_WAY_ONLY_ERROR,
    MarginalError,
    PredictedErrors,
    predicted_errors,
)
from fastmwem.release.mwem.resources import MWEMResources, mwem_resources
from fastmwem.release.mwem.run import mwem, run_plan
from fastmwem.release.mwem.setup import MWEMSetup, choose_model

__all__ = [
    # the run
    "mwem", "run_plan", "MWEMConfig", "MWEMPlan", "plan_mwem", "plan_setup", "check_run_inputs",
    "mwem_privacy_plan", "choose_model", "MWEMSetup", "MWEMResources", "mwem_resources",
    "MAX_REUSE_PASSES", "MAX_FINAL_PASSES", "FINAL_PASSES_FACTORED", "SELECT_FRACTION_FACTORED",
    "SELECT_FRACTION_FACTORED_EXACT", "SELECT_FRACTION_ADAPTIVE", "MODELS", "PROGRESS_SECONDS",
    # the automatic defaults
    "mwem_with_defaults", "mwem_auto", "check_options", "MWEMChoices", "default_workload_spec",
    "default_rounds", "superset_rounds", "zcdp_superset_rounds", "use_adaptive",
    "ADAPTIVE_MIN_RHO_N2", "DEFAULT_ORDER", "MAX_DEFAULT_ROUNDS", "NOISE_SHARE",
    "NOISE_TEST_ALPHA", "SUPERSET_ROUNDS_SCALE", "SUPERSET_ROUNDS_POWER", "SUPERSET_MIN_ROUNDS",
    "SUPERSET_SELECT_FRACTION", "ZCDP_SUPERSET_ROUNDS_SCALE", "ZCDP_SUPERSET_ROUNDS_POWER",
    "MAX_SUPERSET_ROUNDS", "AUTO_REUSE_PASSES",
    # small data
    "predicted_errors", "PredictedErrors", "MarginalError", "ONE_WAY_ONLY_ERROR",
    # the private data as a run reads it
    "PrivateView", "answers_from_marginals", "fetch_marginals",
]
