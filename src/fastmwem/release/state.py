"""Multiplicative-weights state: a synthetic distribution over a dense domain histogram."""

from __future__ import annotations

import math

import numpy as np

from fastmwem.data.domain import Domain
from fastmwem.workloads.base import MAX_DENSE_CELLS, LinearWorkload

__all__ = ["MWState", "MAX_RECORDS"]

#: Largest record count the state works with. A noisy count above it is clipped (free
#: post-processing): no dense histogram holds more records than a float64 counts exactly.
MAX_RECORDS = float(2**53)

# Largest |exponent| one multiply may apply. Each factor then lies in [e^-64, e^64], so the new
# total mass is positive and finite whatever the measurement; a larger step is split into equal
# sub-steps, renormalising in between, which multiplies out to the same update.
_MAX_STEP = 64.0


class MWState:
    """A probability vector over the cells of ``domain`` and a record count ``total``.

    ``histogram`` is ``total * distribution``. Updates are the multiplicative-weights rule of
    the MWEM paper's (arXiv:1012.4763) Figure 1, written for the normalised distribution ``p`` and for queries scaled to
    values in ``[-1, 1]`` (``q / s`` with ``s`` the workload's ``query_sensitivity``; ``s = 1``
    for counting queries, marginals and parities, where this is exactly the paper's rule):
    ``p(x) <- p(x) exp((q(x) / s) (m / total - q(p)) / (2 s))``, then renormalised.

    Numerics: a noisy measurement ``m`` is first clipped to the answers a distribution can give,
    ``[0, s]`` (non-negative queries) or ``[-s, s]`` times ``total``; then every update factor is
    bounded whatever the noise, and nothing overflows or divides by zero, even at epsilon 1e-6.
    The clip is post-processing of a private measurement. All of it is post-processing: the
    state never sees the data.
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
        """Start from a noisy histogram clipped to ``[0, total]``, mixed with the uniform law.

        The mix keeps every cell positive: a multiplicative update can never revive a zero.
        Clipping each cell to the counts a histogram of ``total`` records can hold keeps the sum
        finite whatever the noise. A writable float64 ``noisy`` is overwritten (it is usually a
        fresh noisy array the size of the domain, so this saves a copy).
        """
        start = np.asarray(noisy, dtype=np.float64).reshape(-1)
        if not start.flags.writeable:
            start = start.copy()
        np.clip(start, 0.0, float(total), out=start)
        mass = float(start.sum())
        if mass <= 0:
            start.fill(1.0 / domain.size)
        else:
            start *= (1 - uniform_mix) / mass
            start += uniform_mix / domain.size
        return cls(domain, start, total)

    @property
    def histogram(self) -> np.ndarray:
        return self.distribution * self.total

    # -- updates -------------------------------------------------------------------------------
    def _residuals(self, workload: LinearWorkload, measured: np.ndarray,
                   current: np.ndarray) -> tuple[np.ndarray, float]:
        """Unit residuals ``(clip(m / total) - q(p)) / s`` in ``[-2, 2]``, and ``s``."""
        s = float(workload.query_sensitivity)
        nonnegative = bool(getattr(workload, "nonnegative_queries", False))
        return self._unit_residuals(measured, current, s, nonnegative), s

    def _unit_residuals(self, measured: np.ndarray, current: np.ndarray, s: float,
                        nonnegative: bool) -> np.ndarray:
        low = 0.0 if nonnegative else -s
        target = np.clip(np.asarray(measured, dtype=np.float64) / self.total, low, s)
        return (target - current) / s

    def update_group(self, workload: LinearWorkload, group: int, measured: np.ndarray) -> None:
        """Multiplicative-weights step for a measured group (one noisy answer per query)."""
        current = workload.answer_group(self.distribution, group)
        residuals, s = self._residuals(workload, measured, current)
        log_factors = residuals / (2.0 * s)
        if getattr(workload, "groups_partition_cells", False):
            # Each cell lies in exactly one query of the group with q(x) = 1, so the new total
            # mass is known from the group's answers: fold the normalisation into the factors
            # and save a pass over the histogram. The residuals lie in [-2, 2], so every shifted
            # factor is at least e^-2 and so is the mass (the group's answers sum to 1).
            shifted = log_factors - log_factors.max()
            mass = float((current * np.exp(shifted)).sum())
            workload.multiply_group(self.distribution, group, shifted - math.log(mass))
            return
        # |sum_q log_factors[q] q(x)| <= sum_q |residuals[q]| / 2, as |q(x)| <= s.
        steps = max(1, math.ceil(float(np.abs(residuals).sum()) / (2.0 * _MAX_STEP)))
        for _ in range(steps):
            workload.multiply_group(self.distribution, group, log_factors / steps)
            self._normalise()

    def update_query(self, workload: LinearWorkload, query: int, measured: float, *,
                     offsets: np.ndarray | None = None) -> None:
        """Multiplicative-weights step for one measured query.

        ``offsets`` (the workload's ``group_offsets``) may be passed to save building them
        again: some workloads make a new array of ``n_queries`` entries on each call.
        """
        if offsets is None:
            offsets = workload.group_offsets
        group = int(np.searchsorted(offsets, query, side="right") - 1)
        answers = workload.answer_group(self.distribution, group)
        position = query - int(offsets[group])
        current = answers[position:position + 1]
        residual, s = self._residuals(workload, np.array([measured]), current)
        log_factors = np.zeros(answers.size)
        # |residual| <= 2 and |q(x)| <= s: the factors lie within e^(+-1), no split needed.
        log_factors[position] = float(residual[0]) / (2.0 * s)
        workload.multiply_group(self.distribution, group, log_factors)
        self._normalise()

    def _normalise(self) -> None:
        self.distribution /= self.distribution.sum()

    def update_vector(self, query: np.ndarray, measured: float) -> None:
        """Multiplicative-weights step for one measured query given as a vector over the cells.

        The same rule as :meth:`update_query` (Online Private Multiplicative Weights measures
        queries one at a time, outside any workload); ``s`` is ``max |query|``.
        """
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        if q.size != self.distribution.size:
            raise ValueError(f"query must have {self.distribution.size} cells, got {q.size}")
        s = float(np.abs(q).max())
        if not np.isfinite(s) or s == 0:
            raise ValueError("query must be finite and not all zero")
        current = np.array([float(np.einsum("i,i->", q, self.distribution))])  # no BLAS threads
        residual = float(self._unit_residuals(np.array([measured]), current, s,
                                              bool(q.min() >= 0))[0])
        # |residual| <= 2 and |q(x)| / s <= 1: every factor lies within e^(+-1).
        self.distribution *= np.exp(q * (residual / (2.0 * s)))
        self._normalise()
