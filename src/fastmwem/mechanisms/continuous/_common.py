"""Helpers shared by the continuous samplers: batch size, budget charge, progress display."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from fastmwem._validation import check_int
from fastmwem.accounting import Accountant, PrivacyEvent

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["MAX_BATCH_BYTES", "check_size", "check_memory", "check_progress", "charge_draws",
           "Progress"]

#: Working memory one sampler call may plan for. The samplers hold about ``4 d + 16`` float64
#: words per draw (points, proposals, densities, counters); a batch needing more is refused before
#: the charge, since running out of memory after it would waste the budget.
MAX_BATCH_BYTES = 2**30


def check_size(size: object, dim: int = 1) -> int | None:
    """``None`` (one draw) or the number of draws, an int >= 1 within :data:`MAX_BATCH_BYTES`."""
    if size is None:
        return None
    n = check_int(size, "size", minimum=1)
    check_memory(n * (4 * dim + 16), f"size={n} draws in dimension {dim}")
    return n


def check_memory(words: int, what: str) -> None:
    """Refuse (``ValueError``) a call whose arrays would hold more than ``MAX_BATCH_BYTES``."""
    if 8 * words > MAX_BATCH_BYTES:
        raise ValueError(f"{what} would need about {8 * words / 2**30:.3g} GiB of working memory, "
                         f"more than the {MAX_BATCH_BYTES / 2**30:g} GiB one call may use "
                         "(MAX_BATCH_BYTES); draw in several calls")


def check_progress(progress: object) -> bool | None:
    """``None`` (automatic), ``True`` or ``False``."""
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {type(progress).__name__}")
    return progress


def charge_draws(accountant: Accountant | None, event: PrivacyEvent, label: str,
                 count: int, check: Callable[[], None] | None = None) -> None:
    """Charge ``count`` draws of ``event`` at once (all or nothing) before the loss is evaluated.

    ``check`` (the loss's contract on public points, which calls the loss) runs once the charge
    is known to fit and before it is made: a refused charge never touches the data, and a loss
    that breaks its contract is refused before any budget is spent.
    """
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    refused = accountant is not None and not _fits(accountant, event, count)
    if refused and accountant is not None:
        # The accountant raises its own BudgetExceededError and spends nothing. (Were it to
        # accept after all, the draws would simply go on, charged, with the check after it.)
        _charge(accountant, event, label, count)
    if check is not None:
        check()
    if accountant is not None and not refused:
        _charge(accountant, event, label, count)


def _fits(accountant: Accountant, event: PrivacyEvent, count: int) -> bool:
    if count == 1:
        return accountant.can_afford(event)
    # The accountant's own cost and test, ``count`` times the event (additive in every currency
    # the accountant composes in); a ValueError (an event it cannot take) surfaces here.
    cost = accountant._cost(event)
    spent = accountant._spent()
    return accountant._fits(tuple(s + count * c for s, c in zip(spent, cost)))


def _charge(accountant: Accountant, event: PrivacyEvent, label: str, count: int) -> None:
    if count == 1:
        accountant.compose(event, label=label)
    else:
        accountant.compose_all([(event, label)] * count)


class Progress:
    """A progress bar on stderr for a sampler whose running time depends on the data.

    With ``show=None`` the bar appears only once the call has run for ``delay`` seconds, so short
    calls print nothing and a long one never looks like a hang; ``True`` shows it at once and
    ``False`` never. The figures shown (draws done, runs simulated) are the sampler's running
    time, which is not private for these samplers (the draw records hold them anyway).
    """

    def __init__(self, total: int, desc: str, *, show: bool | None = None,
                 delay: float = 2.0) -> None:
        self._total = total
        self._desc = desc
        self._show = show
        self._delay = delay
        self._start = time.monotonic()
        self._bar: tqdm | None = None
        self._done = 0
        self._shown_at = 0.0

    def update(self, done: int, runs: int) -> None:
        """``done`` more draws are finished; ``runs`` runs simulated so far in all."""
        self._done += done
        now = time.monotonic()
        if self._bar is None:
            if not (self._show or (self._show is None and now - self._start >= self._delay)):
                return
            from tqdm import tqdm

            self._bar = tqdm(total=self._total, desc=self._desc, unit="draw", file=sys.stderr,
                             leave=False, initial=self._done - done)
        self._bar.update(done)
        if now - self._shown_at >= 1.0 or self._done == self._total:
            self._shown_at = now
            self._bar.set_postfix(runs=runs)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
