"""Workloads: families of linear queries over a domain, kept in their structure."""

from fastmwem.workloads.base import LinearWorkload, Workload, check_histogram
from fastmwem.workloads.branch_bound import BranchAndBoundOracle
from fastmwem.workloads.concatenate import Concatenate
from fastmwem.workloads.counting import RandomCountingQueries
from fastmwem.workloads.cuboids import cuboids
from fastmwem.workloads.intervals import AllIntervals
from fastmwem.workloads.marginals import Marginals
from fastmwem.workloads.matrix import MatrixWorkload
from fastmwem.workloads.parities import Parities, walsh_hadamard
from fastmwem.workloads.ranges import RangeQueries

__all__ = [
    "Workload",
    "LinearWorkload",
    "Marginals",
    "MatrixWorkload",
    "RangeQueries",
    "AllIntervals",
    "Parities",
    "RandomCountingQueries",
    "Concatenate",
    "cuboids",
    "BranchAndBoundOracle",
    "check_histogram",
    "walsh_hadamard",
]
