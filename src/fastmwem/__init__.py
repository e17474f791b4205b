"""fastmwem: differentially private data release with the exponential mechanism and MW."""

from fastmwem.accounting import (
    ZCDP,
    Accountant,
    ApproxDP,
    BoundedRange,
    BudgetExceededError,
    PureDP,
)
from fastmwem.data import Dataset, Domain, PrivacyLeakWarning, Schema
from fastmwem.lp import ConstraintNeighbors, LPResult, ScalarNeighbors, private_linprog
from fastmwem.random import make_rng
from fastmwem.release import MWEMResult, mwem, mwem_with_defaults
from fastmwem.release.pmw import Answer, PMWSession, SessionExhaustedError

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # Loaded on first use: the Synthesizer pulls in the schema drafting and the workloads.
    if name == "Synthesizer":
        from fastmwem.synthesizer import Synthesizer

        return Synthesizer
    raise AttributeError(f"module 'fastmwem' has no attribute {name!r}")


__all__ = [
    "Accountant",
    "ApproxDP",
    "BoundedRange",
    "BudgetExceededError",
    "Dataset",
    "Domain",
    "PrivacyLeakWarning",
    "Schema",
    "PureDP",
    "ZCDP",
    "MWEMResult",
    "PMWSession",
    "Answer",
    "SessionExhaustedError",
    "Synthesizer",
    "LPResult",
    "ScalarNeighbors",
    "ConstraintNeighbors",
    "make_rng",
    "mwem",
    "mwem_with_defaults",
    "private_linprog",
]
