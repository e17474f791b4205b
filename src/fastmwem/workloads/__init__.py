"""Workloads: families of linear queries over a domain, kept in their structure."""

from fastmwem.workloads.base import LinearWorkload, Workload, check_histogram
from fastmwem.workloads.marginals import Marginals

__all__ = ["Workload", "LinearWorkload", "Marginals", "check_histogram"]
