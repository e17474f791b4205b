"""Release algorithms: MWEM (classic and fast), private multiplicative weights (offline, and the
online session), and the multiplicative-weights state they share."""

from fastmwem.models import FactoredState, MWState, SyntheticState
from fastmwem.release.definitions import (
    PrivacyDefinition,
    PureDefinition,
    ZCDPDefinition,
    definition_of,
)
from fastmwem.release.mwem import (
    MWEMChoices,
    MWEMConfig,
    MWEMResources,
    PredictedErrors,
    mwem,
    mwem_auto,
    mwem_privacy_plan,
    mwem_resources,
    mwem_with_defaults,
    predicted_errors,
)
from fastmwem.release.pmw import (
    Answer,
    OfflinePMWConfig,
    PMWConfig,
    PMWRecord,
    PMWSession,
    SessionExhaustedError,
    pmw_offline,
    pmw_offline_privacy_plan,
)
from fastmwem.release.result import MWEMResult, RoundRecord
from fastmwem.release.selection import (
    LazySelection,
    RoundSelection,
    ScanSelection,
    register_selection,
)

__all__ = ["mwem", "MWEMConfig", "MWEMResult", "RoundRecord", "MWState", "FactoredState",
           "SyntheticState", "mwem_privacy_plan", "mwem_resources", "MWEMResources", "mwem_with_defaults",
           "MWEMChoices", "mwem_auto", "predicted_errors", "PredictedErrors",
           "pmw_offline", "OfflinePMWConfig", "pmw_offline_privacy_plan", "RoundSelection",
           "ScanSelection", "LazySelection", "register_selection", "PMWSession", "PMWConfig",
           "PMWRecord", "Answer", "SessionExhaustedError", "PrivacyDefinition", "PureDefinition",
           "ZCDPDefinition", "definition_of"]
