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
    "LPResult",
    "ScalarNeighbors",
    "ConstraintNeighbors",
    "make_rng",
    "mwem",
    "mwem_with_defaults",
    "private_linprog",
]
