"""Exponential mechanisms on continuous output spaces, sampled exactly or by Metropolis.

* :class:`ContinuousExponentialMechanism` -- density ``exp(-epsilon loss(y) / (2 sensitivity))``
  on a compact :class:`Box` or :class:`Ball`; ``.sample(method=...)`` / ``.sample_many``.
* :func:`atom_perfect` -- ConfAtomPerfect (corrected kernel): exact, ``epsilon``-DP.
* :func:`random_atom_perfect` -- RandomAtomPerfect: mixture with a discrete exponential
  mechanism, ``epsilon``-DP, runtime law free of the data.
* :func:`metropolis` -- plain Metropolis-Hastings, ``(epsilon, delta_m)``-DP.
* :mod:`~fastmwem.mechanisms.continuous.examples` -- the paper's examples as losses.

Source: Seeman, Reimherr and Slavkovic, "Exact Privacy Guarantees for Markov Chain
Implementations of the Exponential Mechanism with Artificial Atoms", arXiv:2204.01132, with two
corrections of ours: an atom kernel whose stationary law is the mixture the paper claims (its
literal kernel has another atom weight), and no runtime-privacy claim for the repeated-runs
sampler (the paper's Corollary 2 does not hold exactly).
"""

from fastmwem.mechanisms.continuous._common import MAX_BATCH_BYTES
from fastmwem.mechanisms.continuous.density import ExponentialDensity
from fastmwem.mechanisms.continuous.design import AtomDesign, atom_design
from fastmwem.mechanisms.continuous.draws import ContinuousDraw, ContinuousDraws
from fastmwem.mechanisms.continuous.examples import (
    WORKED_EXAMPLE_DATA,
    MeanL1Loss,
    RidgeGradientLoss,
    mean_l1_doeblin_laplace,
    mean_l1_doeblin_uniform,
    mean_l1_normalising_constant_bounds,
    ridge_example_data,
)
from fastmwem.mechanisms.continuous.mechanism import METHODS, ContinuousExponentialMechanism
from fastmwem.mechanisms.continuous.metropolis import (
    doeblin_constant,
    metropolis,
    metropolis_delta,
    metropolis_steps,
)
from fastmwem.mechanisms.continuous.perfect import atom_perfect, random_atom_perfect
from fastmwem.mechanisms.continuous.proposals import (
    LaplaceExit,
    LaplaceProposal,
    UniformExit,
    UniformProposal,
)
from fastmwem.mechanisms.continuous.space import Ball, Box, Space

__all__ = [
    "AtomDesign",
    "Ball",
    "Box",
    "ContinuousDraw",
    "ContinuousDraws",
    "ContinuousExponentialMechanism",
    "ExponentialDensity",
    "LaplaceExit",
    "LaplaceProposal",
    "MAX_BATCH_BYTES",
    "METHODS",
    "MeanL1Loss",
    "RidgeGradientLoss",
    "Space",
    "UniformExit",
    "UniformProposal",
    "WORKED_EXAMPLE_DATA",
    "atom_design",
    "atom_perfect",
    "doeblin_constant",
    "mean_l1_doeblin_laplace",
    "mean_l1_doeblin_uniform",
    "mean_l1_normalising_constant_bounds",
    "metropolis",
    "metropolis_delta",
    "metropolis_steps",
    "random_atom_perfect",
    "ridge_example_data",
]
