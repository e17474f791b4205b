"""Differentially private top-k selection: the joint exponential mechanism and its baselines.

Joint (Gillenwater et al. 2022) and its permute-and-flip version sample ordered sequences of k
distinct items exactly; peeling, Laplace and Gamma baselines follow the paper's experiments.
"""

from fastmwem.mechanisms.topk.joint import (
    JointTopK,
    PNFJointTopK,
    PrunedJointTopK,
    joint,
    pnf_joint,
    pruned_joint,
)

__all__ = [
    "JointTopK",
    "PNFJointTopK",
    "PrunedJointTopK",
    "joint",
    "pnf_joint",
    "pruned_joint",
]
