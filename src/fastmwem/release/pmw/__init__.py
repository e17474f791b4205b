"""Private multiplicative weights: the online session and the offline (Fast-MWEM) release."""

from fastmwem.release.pmw.offline import (
    MAX_LEARNING_RATE,
    OfflinePMWConfig,
    pmw_offline,
    pmw_offline_privacy_plan,
)
from fastmwem.release.pmw.plan import (
    COUNT_LABEL,
    EPOCH_LABEL,
    GRID,
    MAX_RECORDS,
    PMWConfig,
    PMWRecord,
)
from fastmwem.release.pmw.queries import QUERY_FORMS, query_spec, query_vector
from fastmwem.release.pmw.session import (
    MIN_QUERY_PEAK,
    Answer,
    PMWSession,
    SessionExhaustedError,
    UnstableUpdateError,
    check_query,
    mw_steps,
)

__all__ = ["PMWSession", "PMWConfig", "PMWRecord", "Answer", "SessionExhaustedError",
           "UnstableUpdateError", "GRID", "EPOCH_LABEL", "COUNT_LABEL", "MIN_QUERY_PEAK",
           "MAX_RECORDS", "check_query", "mw_steps", "OfflinePMWConfig", "pmw_offline",
           "pmw_offline_privacy_plan", "MAX_LEARNING_RATE", "query_vector", "query_spec",
           "QUERY_FORMS"]
