"""Maximum inner-product search: the top-k oracles behind the lazy exponential mechanism."""

from fastmwem.indices.base import TopKOracle

__all__ = ["TopKOracle"]
