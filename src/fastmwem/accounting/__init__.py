"""Privacy events, their composition, and an accountant that refuses overspend.

Privacy numbers are kept as exact fractions. A float argument such as ``0.01`` is read as the
shortest decimal that prints as that float (``Fraction("0.01")``), so one hundred charges of
``0.01`` fill a budget of ``1`` exactly. Quantities that are irrational (square roots and
logarithms in advanced composition and zCDP conversion) are computed in floating point and then
rounded *outwards* (up for a cost, down for an allowance), so accounting errs on the safe side.

Events:

* :class:`PureDP` -- ``epsilon``-differential privacy.
* :class:`BoundedRange` -- ``epsilon``-bounded range (the exponential mechanism): it implies
  ``epsilon``-DP and ``epsilon**2 / 8``-zCDP (Cesar and Rogers 2021).
* :class:`ApproxDP` -- ``(epsilon, delta)``-differential privacy.
* :class:`ZCDP` -- ``rho``-zero-concentrated DP; pure ``epsilon``-DP implies ``epsilon**2 / 2``.

>>> acc = Accountant(epsilon=1)
>>> for _ in range(100):
...     _ = acc.compose(PureDP(0.01))
>>> acc.spent()
PureDP(epsilon=1)
>>> acc.remaining()
PureDP(epsilon=0)
"""

from __future__ import annotations

# MAX_ZCDP_EPSILON and Admit are importable from here though not in ``__all__``; the "X as X"
# form marks them as re-exported for mypy.
from fastmwem.accounting.accountant import Accountant, BudgetExceededError
from fastmwem.accounting.conversions import (
    CONVERSIONS,
    advanced_composition,
    approx_dp_to_zcdp_budget,
    per_round_epsilon,
    zcdp_to_approx_dp,
)
from fastmwem.accounting.conversions import MAX_ZCDP_EPSILON as MAX_ZCDP_EPSILON
from fastmwem.accounting.events import ZCDP, ApproxDP, BoundedRange, PrivacyEvent, PureDP
from fastmwem.accounting.exact_numbers import exact, float_below, show
from fastmwem.accounting.ledger import Admit as Admit
from fastmwem.accounting.ledger import (
    LedgerEntry,
    LedgerStore,
    MemoryLedgerStore,
    entry_from_record,
    entry_to_record,
    ledger_records,
)

__all__ = [
    "float_below",
    "PureDP",
    "BoundedRange",
    "ApproxDP",
    "ZCDP",
    "PrivacyEvent",
    "Accountant",
    "BudgetExceededError",
    "LedgerEntry",
    "LedgerStore",
    "MemoryLedgerStore",
    "entry_to_record",
    "entry_from_record",
    "ledger_records",
    "exact",
    "show",
    "advanced_composition",
    "zcdp_to_approx_dp",
    "approx_dp_to_zcdp_budget",
    "CONVERSIONS",
    "per_round_epsilon",
]
