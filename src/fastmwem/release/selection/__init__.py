"""How a round of multiplicative weights chooses what to measure next.

A :class:`RoundSelection` is public configuration: it names the private mechanism a round uses
and the privacy event one round costs, so a release can charge its whole plan before the data is
read. Only after the charge does ``prepare`` look at the private histogram, returning a
:class:`Chooser` that picks one group (or query) per round.

Two families ship:

* :class:`ScanSelection` scores every candidate each round (its answers on the synthetic state,
  ``O(m |X|)`` on a dense histogram, by inference on a factored one) and samples the exponential
  mechanism or permute-and-flip over them: MWEM as published.
* :class:`LazySelection` is Fast-MWEM's round: the score of query ``q`` is
  ``|<q, h - a>|`` for the private histogram ``h`` and the synthetic one ``a``, so one exact
  top-k search over the query vectors and the lazy Gumbel sampler draw from exactly the same law
  as the exponential mechanism over all ``m`` queries, without computing all ``m`` answers. It
  needs both histograms as dense vectors (``requires_dense``).

New selections plug in through :func:`register_selection`; releases never switch on names.

A selection holds no cache. One that builds something public and costly for a workload (the lazy
selection's index) offers ``bind(workload)``: the same selection with it built. A plan binds its
selection once (:func:`~fastmwem.release.mwem.plan.plan_mwem`), and the run, like the plans of
other configurations of the same workload that share it, uses what the plan built.
"""

from fastmwem.release.selection.base import SCORE_CAP, Chooser, PrivateData, RoundSelection
from fastmwem.release.selection.lazy import LazySelection
from fastmwem.release.selection.registry import (
    register_selection,
    resolve_selection,
    selection_names,
)
from fastmwem.release.selection.scan import ScanSelection

__all__ = [
    "Chooser",
    "PrivateData",
    "LazySelection",
    "RoundSelection",
    "ScanSelection",
    "SCORE_CAP",
    "register_selection",
    "resolve_selection",
    "selection_names",
]
