"""Private mechanisms: selection (exponential mechanism, permute-and-flip) and noise."""

from fastmwem.mechanisms.base import Selector
from fastmwem.mechanisms.exponential import ExponentialMechanism, PermuteAndFlip
from fastmwem.mechanisms.laplace import Geometric, Laplace

__all__ = ["ExponentialMechanism", "PermuteAndFlip", "Laplace", "Geometric", "Selector"]
