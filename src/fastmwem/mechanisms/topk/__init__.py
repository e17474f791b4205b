"""Differentially private top-k selection: the joint exponential mechanism and its baselines.

Joint (Gillenwater et al. 2022) and its permute-and-flip version sample ordered sequences of k
distinct items exactly; peeling, Laplace and Gamma baselines follow the paper's experiments.
"""

from fastmwem.mechanisms.topk._common import TopKMechanism
from fastmwem.mechanisms.topk.joint import (
    JointTopK,
    PNFJointTopK,
    PrunedJointTopK,
    joint,
    pnf_joint,
    pruned_joint,
)
from fastmwem.mechanisms.topk.metrics import TopKErrors, topk_errors
from fastmwem.mechanisms.topk.peeling import (
    CDPPeel,
    GammaTopK,
    LaplaceTopK,
    PNFPeel,
    cdp_peel,
    cdp_peel_epsilon,
    cdp_peel_local_epsilon,
    gamma_topk,
    laplace_topk,
    pnf_peel,
)

__all__ = [
    "TopKMechanism",
    "JointTopK",
    "PNFJointTopK",
    "PrunedJointTopK",
    "joint",
    "pnf_joint",
    "pruned_joint",
    "PNFPeel",
    "CDPPeel",
    "LaplaceTopK",
    "GammaTopK",
    "pnf_peel",
    "cdp_peel",
    "laplace_topk",
    "gamma_topk",
    "cdp_peel_epsilon",
    "cdp_peel_local_epsilon",
    "TopKErrors",
    "topk_errors",
    "METHODS",
]

#: The top-k methods by their command-line names.
METHODS = {
    "joint": JointTopK,
    "pnf-joint": PNFJointTopK,
    "pnf-peel": PNFPeel,
    "cdp-peel": CDPPeel,
    "laplace": LaplaceTopK,
    "gamma": GammaTopK,
    "pruned-joint": PrunedJointTopK,
}
