"""Private mechanisms: selection (exponential mechanism, permute-and-flip, lazy EM) and noise."""

from fastmwem.mechanisms.base import Selector
from fastmwem.mechanisms.exponential import ExponentialMechanism, PermuteAndFlip
from fastmwem.mechanisms.laplace import Geometric, Laplace
from fastmwem.mechanisms.lazy import LazyExponentialMechanism, LazyStats, Uncertified

__all__ = [
    "ExponentialMechanism",
    "PermuteAndFlip",
    "LazyExponentialMechanism",
    "LazyStats",
    "Uncertified",
    "Laplace",
    "Geometric",
    "Selector",
]
