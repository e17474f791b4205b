"""Multiplicative-weights state: a synthetic distribution over a dense domain histogram."""

from __future__ import annotations

import numpy as np

from fastmwem.data.domain import Domain
from fastmwem.workloads.base import MAX_DENSE_CELLS, LinearWorkload

__all__ = ["MWState"]


class MWState:
    """A probability vector over the cells of ``domain`` and a record count ``total``.

    ``histogram`` is ``total * distribution``. Updates are the multiplicative-weights rule of
    mwem.txt Figure 1 written for the normalised distribution ``p``:
    ``p(x) <- p(x) exp(q(x) (m / total - q(p)) / 2)``, then renormalised. All of it is
    post-processing of private measurements; the state never sees the data.
    """

    def __init__(self, domain: Domain, distribution: np.ndarray, total: float) -> None:
        if domain.size > MAX_DENSE_CELLS:
            raise ValueError(
                f"the domain has {domain.size} cells, more than the dense-histogram limit of "
                f"{MAX_DENSE_CELLS}"
            )
        p = np.asarray(distribution, dtype=np.float64).reshape(-1)
        if p.size != domain.size:
            raise ValueError(f"distribution must have {domain.size} cells, got {p.size}")
        if not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
            raise ValueError("distribution must be finite, non-negative and not all zero")
        if not np.isfinite(total) or total <= 0:
            raise ValueError(f"total must be a finite number > 0, got {total}")
        self.domain = domain
        self.distribution = p / p.sum()
        self.total = float(total)

    @classmethod
    def uniform(cls, domain: Domain, total: float) -> MWState:
        return cls(domain, np.full(domain.size, 1.0 / domain.size), total)

    @classmethod
    def from_noisy_histogram(cls, domain: Domain, noisy: np.ndarray, total: float,
                             uniform_mix: float) -> MWState:
        """Start from a noisy histogram clipped at zero, mixed with the uniform distribution.

        The mix keeps every cell positive: a multiplicative update can never revive a zero.
        """
        clipped = np.clip(np.asarray(noisy, dtype=np.float64), 0.0, None)
        uniform = np.full(domain.size, 1.0 / domain.size)
        mass = clipped.sum()
        start = uniform if mass <= 0 else (1 - uniform_mix) * clipped / mass + uniform_mix * uniform
        return cls(domain, start, total)

    @property
    def histogram(self) -> np.ndarray:
        return self.distribution * self.total

    def update_group(self, workload: LinearWorkload, group: int, measured: np.ndarray) -> None:
        """Multiplicative-weights step for a measured group (one noisy answer per query)."""
        current = workload.answer_group(self.distribution, group)
        log_factors = (np.asarray(measured) / self.total - current) / 2.0
        if getattr(workload, "groups_partition_cells", False):
            # Each cell lies in exactly one query of the group with q(x) = 1, so the new total
            # mass is known from the group's answers: fold the normalisation into the factors
            # and save a pass over the histogram.
            shift = log_factors.max()
            mass = float((current * np.exp(log_factors - shift)).sum())
            workload.multiply_group(self.distribution, group, log_factors - shift - np.log(mass))
        else:
            workload.multiply_group(self.distribution, group, log_factors)
            self._normalise()

    def update_query(self, workload: LinearWorkload, query: int, measured: float) -> None:
        """Multiplicative-weights step for one measured query."""
        offsets = workload.group_offsets
        group = int(np.searchsorted(offsets, query, side="right") - 1)
        answers = workload.answer_group(self.distribution, group)
        position = query - int(offsets[group])
        log_factors = np.zeros(answers.size)
        log_factors[position] = (measured / self.total - answers[position]) / 2.0
        workload.multiply_group(self.distribution, group, log_factors)
        self._normalise()

    def _normalise(self) -> None:
        self.distribution /= self.distribution.sum()
