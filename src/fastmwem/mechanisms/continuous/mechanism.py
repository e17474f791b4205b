"""The exponential mechanism on a compact continuous output space, with its samplers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastmwem.accounting import Accountant
from fastmwem.mechanisms.continuous.density import ExponentialDensity
from fastmwem.mechanisms.continuous.draws import ContinuousDraw, ContinuousDraws
from fastmwem.mechanisms.continuous.metropolis import metropolis
from fastmwem.mechanisms.continuous.perfect import atom_perfect, random_atom_perfect

if TYPE_CHECKING:
    from fastmwem.random import RNGLike

__all__ = ["ContinuousExponentialMechanism", "METHODS"]

#: The samplers by name: ``sample(method=...)``.
_SAMPLERS: dict[str, Callable[..., object]] = {
    "atom": atom_perfect,
    "random-atom": random_atom_perfect,
    "metropolis": metropolis,
}
METHODS = tuple(_SAMPLERS)


@dataclass(frozen=True)
class ContinuousExponentialMechanism(ExponentialDensity):
    """The exponential mechanism with density ``exp(-epsilon * loss(y) / (2 * sensitivity))``.

    The density is with respect to Lebesgue measure on the compact ``space``. It is sampled
    exactly by :func:`~fastmwem.mechanisms.continuous.atom_perfect` (``method="atom"``), as a
    mixture with a discrete exponential mechanism by
    :func:`~fastmwem.mechanisms.continuous.random_atom_perfect` (``"random-atom"``), or
    approximately by :func:`~fastmwem.mechanisms.continuous.metropolis` (``"metropolis"``).

    Privacy: the exact mechanism is ``epsilon``-DP and ``epsilon``-bounded range, so
    ``privacy`` is ``BoundedRange(epsilon)``; ``random-atom`` is ``PureDP(epsilon)``;
    ``metropolis`` with ``m`` steps is ``ApproxDP(epsilon, delta_m)``. Only the released value is
    covered: the runtime of ``atom`` depends on the data (see
    :mod:`~fastmwem.mechanisms.continuous.perfect`).

    Sensitivity assumption: for neighbouring datasets (one record changed) and every ``y`` in
    the space, ``|loss_X(y) - loss_X'(y)| <= sensitivity``; the loss is >= 0.
    Source: Seeman, Reimherr and Slavkovic, "Exact Privacy Guarantees for Markov Chain
    Implementations of the Exponential Mechanism with Artificial Atoms", arXiv:2204.01132,
    Def. 2; the samplers use a corrected version of the paper's kernel.

    Args:
        loss: vectorised loss: an array of shape (n, d) -> n finite losses >= 0. It holds the
            data; the mechanism calls it only after the privacy budget is charged, apart from a
            check of this contract on public points just before the charge (a loss that breaks
            it is refused then; see :meth:`~ExponentialDensity.check_loss`).
        sensitivity: the bound above (> 0).
        epsilon: privacy parameter (> 0).
        space: the output space (:class:`Box`, :class:`Ball`).
        loss_bound: optional data-independent bound ``sup_X sup_y loss_X(y)``; Metropolis uses it
            for its minorisation constant when no sharper ``beta`` is given.

    >>> import numpy as np
    >>> from fastmwem.mechanisms.continuous import Box
    >>> mech = ContinuousExponentialMechanism(
    ...     loss=lambda y: np.abs(y[:, 0] - 0.3), sensitivity=0.1, epsilon=1.0, space=Box(0, 1))
    >>> mech.privacy
    BoundedRange(epsilon=1)
    >>> mech.sample(rng=0).value.shape
    (1,)
    """

    def _sampler(self, method: str) -> Callable[..., object]:
        if not isinstance(method, str) or method not in _SAMPLERS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        return _SAMPLERS[method]

    def sample(self, *, rng: RNGLike = None, method: str = "atom",
               accountant: Accountant | None = None, **options: object) -> ContinuousDraw:
        """One draw by ``method``; ``options`` go to the sampler (see its docstring)."""
        sampler = self._sampler(method)
        return sampler(self, rng=rng, accountant=accountant, **options)  # type: ignore[return-value]

    def sample_many(self, n: int, *, rng: RNGLike = None, method: str = "atom",
                    accountant: Accountant | None = None, **options: object) -> ContinuousDraws:
        """``n`` independent draws, vectorised across draws; the accountant is charged ``n`` times.

        A batch whose working memory would pass ``MAX_BATCH_BYTES`` (1 GiB) is refused with a
        ``ValueError`` before the charge: draw it in several calls.
        """
        sampler = self._sampler(method)
        return sampler(self, size=n, rng=rng, accountant=accountant,  # type: ignore[return-value]
                       **options)
