"""Release algorithms: MWEM and its multiplicative-weights state."""

from fastmwem.release.factored import FactoredState
from fastmwem.release.mwem import MWEMConfig, mwem, mwem_privacy_plan
from fastmwem.release.resources import MWEMResources, mwem_resources
from fastmwem.release.result import MWEMResult, RoundRecord
from fastmwem.release.state import MWState, SyntheticState

__all__ = ["mwem", "MWEMConfig", "MWEMResult", "RoundRecord", "MWState", "FactoredState",
           "SyntheticState", "mwem_privacy_plan", "mwem_resources", "MWEMResources"]
