"""The :class:`Accountant`: composes privacy events against a budget, refusing overspend."""

from __future__ import annotations

from fractions import Fraction

from fastmwem.accounting.conversions import approx_dp_to_zcdp_budget
from fastmwem.accounting.events import _EVENT_TYPES, ZCDP, ApproxDP, PrivacyEvent, PureDP
from fastmwem.accounting.exact_numbers import exact, show
from fastmwem.accounting.ledger import (
    LedgerEntry,
    LedgerStore,
    MemoryLedgerStore,
    ledger_records,
)


class BudgetExceededError(RuntimeError):
    """A charge would take an :class:`Accountant` past its budget; nothing was spent."""


#: The Accountant's budget and ledger attributes, which no assignment may change.
_READ_ONLY = frozenset({"epsilon", "delta", "rho", "composition", "store", "_mode", "_budget",
                        "_store"})


class Accountant:
    """Composes privacy events against a budget and refuses any charge that would overspend.

    Give exactly one budget:

    * ``Accountant(epsilon=e)``: pure DP, basic composition (sum of epsilons).
    * ``Accountant(epsilon=e, delta=d)``: approximate DP, basic composition (sums of both).
    * ``Accountant(rho=r)``: zCDP, rhos add up.
    * ``Accountant(epsilon=e, delta=d, composition="zcdp")``: charges are composed in zCDP and
      the total must convert to at most ``(e, d)``-DP.

    The budget is read-only: assigning ``epsilon`` (``delta``, ``rho``, ``composition`` or the
    store) raises ``AttributeError``; make a new accountant for a new budget. Charges live in a
    :class:`LedgerStore` (``store=``; a fresh :class:`MemoryLedgerStore` by default), and every
    charge, from :meth:`compose` or :meth:`compose_all`, goes through the store's one commit
    point. A refused charge raises :class:`BudgetExceededError` and leaves the ledger unchanged.
    Charging is thread-safe (and process-safe with a database store). There is no global
    default accountant.

    >>> acc = Accountant(epsilon=1)
    >>> _ = acc.compose(PureDP(0.5), label="first half")
    >>> acc.compose(PureDP(0.75))
    Traceback (most recent call last):
    ...
    fastmwem.accounting.accountant.BudgetExceededError: charge PureDP(epsilon=0.75) would exceed the budget: spent PureDP(epsilon=0.5) of PureDP(epsilon=1)
    >>> acc.spent()
    PureDP(epsilon=0.5)
    """

    # Set once, by __init__ through object.__setattr__ (assignment is refused afterwards).
    _mode: str
    _budget: tuple[Fraction, ...]
    _store: LedgerStore
    _given_epsilon: object
    _given_delta: object
    _given_rho: object
    _given_composition: str

    def __init__(self, epsilon: object = None, delta: object = 0, rho: object = None,
                 composition: str = "basic", *, store: LedgerStore | None = None) -> None:
        budget: tuple[Fraction, ...]
        if composition not in ("basic", "zcdp"):
            raise ValueError(f"composition must be 'basic' or 'zcdp', got {composition!r}")
        if rho is not None:
            if epsilon is not None:
                raise ValueError("give either rho or epsilon as the budget, not both")
            mode, budget = "zcdp", (exact(rho, "rho"),)
        elif epsilon is None:
            raise ValueError("Accountant needs a budget: epsilon (and delta) or rho")
        else:
            eps = exact(epsilon, "epsilon")
            d = exact(delta, "delta", allow_zero=True)
            if d >= 1:
                raise ValueError(f"delta must be < 1, got {float(d)}")
            if composition == "zcdp":
                if d == 0:
                    raise ValueError("composition='zcdp' needs delta > 0")
                mode, budget = "zcdp", (approx_dp_to_zcdp_budget(eps, d),)
            elif d == 0:
                mode, budget = "pure", (eps,)
            else:
                mode, budget = "approx", (eps, d)
        if store is None:
            store = MemoryLedgerStore()
        elif not isinstance(store, LedgerStore):
            raise TypeError(f"store must be a LedgerStore, got {type(store).__name__}")
        given = {"epsilon": epsilon, "delta": delta, "rho": rho, "composition": composition}
        for key, value in {**given, "_mode": mode, "_budget": budget, "_store": store}.items():
            object.__setattr__(self, key if key.startswith("_") else "_given_" + key, value)
        self._check_stored_ledger()

    def __setattr__(self, name: str, value: object) -> None:
        if name in _READ_ONLY or name.startswith("_given_"):
            raise AttributeError(
                f"Accountant is read-only: cannot set {name!r} (a budget cannot change once "
                "charges are made against it; make a new Accountant)"
            )
        object.__setattr__(self, name, value)  # a subclass's own bookkeeping

    def __delattr__(self, name: str) -> None:
        if name in _READ_ONLY or name.startswith("_given_"):
            raise AttributeError(f"Accountant is read-only: cannot delete {name!r}")
        object.__delattr__(self, name)

    def __repr__(self) -> str:
        return (f"Accountant(epsilon={self.epsilon!r}, delta={self.delta!r}, rho={self.rho!r}, "
                f"composition={self.composition!r})")

    @property
    def epsilon(self) -> object:
        """The epsilon budget as given (read-only)."""
        return self._given_epsilon

    @property
    def delta(self) -> object:
        """The delta budget as given (read-only)."""
        return self._given_delta

    @property
    def rho(self) -> object:
        """The zCDP budget as given (read-only)."""
        return self._given_rho

    @property
    def composition(self) -> str:
        return self._given_composition

    @property
    def store(self) -> LedgerStore:
        """The ledger store this accountant commits to."""
        return self._store

    def _check_stored_ledger(self) -> None:
        """A store handed over with entries must hold costs in this accountant's currency."""
        entries = self.store.entries()
        for entry in entries:
            if self._cost(entry.event) != tuple(entry.cost):
                raise ValueError(
                    f"the stored ledger entry {entry.label!r} costs {entry.cost} in another "
                    "currency than this accountant's; was the store made for another budget?"
                )
        if entries and not self._fits(self.store.spent(len(self._budget))):
            raise ValueError("the stored ledger already spends more than this budget")

    # -- conversions -------------------------------------------------------------------------
    def _cost(self, event: PrivacyEvent) -> tuple[Fraction, ...]:
        if not isinstance(event, _EVENT_TYPES):
            raise TypeError(f"event must be a privacy event, got {type(event).__name__}")
        if self._mode == "pure":
            eps = event.pure_epsilon()
            if eps is None:
                raise ValueError(f"{event!r} has no pure-DP cost; this accountant holds pure DP")
            return (eps,)
        if self._mode == "approx":
            pair = event.approx()
            if pair is None:
                raise ValueError(
                    f"{event!r} needs a delta to convert; use Accountant(..., composition='zcdp')"
                )
            return pair
        rho = event.zcdp_rho()
        if rho is None:
            raise ValueError(f"{event!r} has no zCDP cost; this accountant composes in zCDP")
        return (rho,)

    def _as_event(self, values: tuple[Fraction, ...]) -> PrivacyEvent:
        if self._mode == "pure":
            return PureDP(values[0])
        if self._mode == "approx":
            return ApproxDP(values[0], values[1])
        return ZCDP(values[0])

    def _overspend(self, cost: tuple[Fraction, ...], spent_now: tuple[Fraction, ...]) -> str:
        """The tail of a refusal message: what was spent of what budget."""
        spent, budget = self._as_event(spent_now), self._as_event(self._budget)
        text = f"would exceed the budget: spent {spent!r} of {budget!r}"
        values = (*cost, *spent_now, *self._budget)
        if any(Fraction(show(x)) != x for x in values):
            # The short displays are rounded; say exactly why the charge does not fit.
            left = ", ".join(str(b - s) for b, s in zip(self._budget, spent_now))
            need = ", ".join(str(c) for c in cost)
            text += f" (exactly: the charge needs {need}, the budget has {left} left)"
        return text
    def _fits(self, values: tuple[Fraction, ...]) -> bool:
        return all(v <= b for v, b in zip(values, self._budget))

    def _commit(self, events: list[tuple[PrivacyEvent, str]], what: str, *,
                charge: bool = True) -> None:
        """The one commit point: charge every event, or none (``BudgetExceededError``); with
        ``charge=False`` only refuse what would not fit now."""
        entries = [LedgerEntry(str(label), event, self._cost(event)) for event, label in events]
        if not entries:
            return
        total = tuple(sum(costs, Fraction(0)) for costs in zip(*(e.cost for e in entries)))

        def admit(spent: tuple[Fraction, ...]) -> None:
            if not self._fits(tuple(s + c for s, c in zip(spent, total))):
                shown = repr(entries[0].event) if len(entries) == 1 else repr(self._as_event(total))
                raise BudgetExceededError(f"{what} {shown} {self._overspend(total, spent)}")

        if charge:
            self.store.commit(entries, admit)
        else:
            admit(self._spent())

    # -- public API --------------------------------------------------------------------------
    def can_afford(self, event: PrivacyEvent) -> bool:
        """Whether ``event`` fits in the remaining budget now (nothing is charged)."""
        cost = self._cost(event)
        return self._fits(tuple(s + c for s, c in zip(self._spent(), cost)))

    def check_fits(self, events: list[tuple[PrivacyEvent, str]]) -> None:
        """Refuse, as :meth:`compose_all` would, a plan that does not fit the remaining budget
        now; nothing is charged."""
        self._commit(list(events), "a plan costing", charge=False)

    def compose(self, event: PrivacyEvent, *, label: str = "") -> Accountant:
        """Charge ``event``; return ``self``. Raises :class:`BudgetExceededError` on overspend."""
        self._commit([(event, label)], "charge")
        return self

    charge = compose

    def compose_all(self, events: list[tuple[PrivacyEvent, str]]) -> Accountant:
        """Charge several ``(event, label)`` pairs atomically: all of them, or none.

        Algorithms that know their whole privacy plan in advance (MWEM's rounds) charge it here
        before touching the data, so a refused plan spends nothing.
        """
        self._commit(list(events), "a plan costing")
        return self

    def _spent(self) -> tuple[Fraction, ...]:
        return self.store.spent(len(self._budget))

    def spent(self) -> PrivacyEvent:
        """What has been charged, in this accountant's currency."""
        return self._as_event(self._spent())

    def remaining(self) -> PrivacyEvent:
        """What is left of the budget."""
        return self._as_event(tuple(b - s for b, s in zip(self._budget, self._spent())))

    def budget(self) -> PrivacyEvent:
        """The whole budget, in this accountant's currency."""
        return self._as_event(self._budget)

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        """Every accepted charge, in order."""
        return self.store.entries()

    def ledger_records(self) -> list[dict[str, object]]:
        """The ledger as JSON-ready dictionaries (numbers as floats and exact strings)."""
        return ledger_records(self.ledger)

    def __getstate__(self) -> dict[str, object]:
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, object]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
