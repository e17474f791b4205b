"""Domains, datasets of integer codes, and schemas that encode raw tables."""

from fastmwem.data.dataset import Dataset
from fastmwem.data.domain import Domain

__all__ = ["Dataset", "Domain"]
