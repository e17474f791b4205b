"""fastmwem: differentially private data release with the exponential mechanism and MW."""

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from fastmwem.quality import QualityReport, quality_report
    from fastmwem.synthesizer import Synthesizer

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
    "Synthesizer",
    "LPResult",
    "ScalarNeighbors",
    "ConstraintNeighbors",
    "make_rng",
    "mwem",
    "mwem_with_defaults",
    "private_linprog",
    "QualityReport",
    "quality_report",
]

# Loaded on first use (``fastmwem.quality_report``, ``fastmwem.Synthesizer``: the schema drafting
# and matplotlib), so that ``import fastmwem`` stays light.
_LAZY = {"QualityReport": "fastmwem.quality", "quality_report": "fastmwem.quality",
         "Synthesizer": "fastmwem.synthesizer"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fastmwem' has no attribute {name!r}")
