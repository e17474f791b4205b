"""Release algorithms: MWEM, online PMW and their multiplicative-weights state."""

from fastmwem.release.mwem import MWEMConfig, mwem, mwem_privacy_plan
from fastmwem.release.pmw import Answer, PMWConfig, PMWRecord, PMWSession, SessionExhaustedError
from fastmwem.release.resources import MWEMResources, mwem_resources
from fastmwem.release.result import MWEMResult, RoundRecord
from fastmwem.release.state import MWState

__all__ = ["mwem", "MWEMConfig", "MWEMResult", "RoundRecord", "MWState", "mwem_privacy_plan",
           "mwem_resources", "MWEMResources", "PMWSession", "PMWConfig", "PMWRecord", "Answer",
           "SessionExhaustedError"]
