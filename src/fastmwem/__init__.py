"""fastmwem: differentially private data release with the exponential mechanism and MW."""

from fastmwem.accounting import (
    ZCDP,
    Accountant,
    ApproxDP,
    BoundedRange,
    BudgetExceededError,
    PureDP,
)
from fastmwem.data import Domain
from fastmwem.random import make_rng

__version__ = "0.1.0"

__all__ = [
    "Accountant",
    "ApproxDP",
    "BoundedRange",
    "BudgetExceededError",
    "Domain",
    "PureDP",
    "ZCDP",
    "make_rng",
]
