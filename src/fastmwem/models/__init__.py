"""Synthetic distributions: dense, junction tree; post-processing only, no privacy."""

from fastmwem.models.factored import FactoredState
from fastmwem.models.state import MWState, SyntheticState, sample_records

__all__ = ["MWState", "SyntheticState", "FactoredState", "sample_records"]
