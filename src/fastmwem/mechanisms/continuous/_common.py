"""Helpers shared by the continuous samplers: batch size, budget charge, progress display."""

from __future__ import annotations

import sys
import time

from fastmwem._validation import check_int
from fastmwem.accounting import Accountant, PrivacyEvent

__all__ = ["check_size", "check_progress", "charge_draws", "Progress"]


def check_size(size: object) -> int | None:
    """``None`` (one draw) or the number of draws, an int >= 1."""
    return None if size is None else check_int(size, "size", minimum=1)


def check_progress(progress: object) -> bool | None:
    """``None`` (automatic), ``True`` or ``False``."""
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {type(progress).__name__}")
    return progress


def charge_draws(accountant: Accountant | None, event: PrivacyEvent, label: str,
                 count: int) -> None:
    """Charge ``count`` draws of ``event`` at once (all or nothing) before the loss is evaluated."""
    if accountant is None:
        return
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
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
        self._bar = None
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
