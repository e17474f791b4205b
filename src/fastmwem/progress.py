"""Progress on stderr that never freezes: bars whose clock ticks while a phase works.

A bar of ``tqdm`` redraws only when it is updated, so a phase without updates (a final fit,
matching records to the model, scoring) looks hung however long it runs. :class:`LiveBar`
redraws every :data:`TICK_SECONDS` from a daemon thread, so its elapsed time keeps moving, and
each phase says what it is doing and roughly how long it should take (an estimate from public
sizes only).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LiveBar", "TICK_SECONDS", "phase", "about", "progress_blocks"]

#: Seconds between redraws of a bar that has not been updated.
TICK_SECONDS = 1.0


def about(seconds: float) -> str:
    """A rough duration for a bar's label: ``~3 s``, ``~2 min``."""
    if seconds < 90:
        return f"~{max(1, round(seconds))} s"
    return f"~{round(seconds / 60)} min"


class LiveBar:
    """A ``tqdm`` bar on stderr, redrawn every :data:`TICK_SECONDS` until closed.

    It offers what a run asks of a progress bar (``update``, ``set_postfix``, ``close``) and
    ``set_description``; closing twice is harmless.
    """

    def __init__(self, desc: str, *, total: float | None = None, unit: str = "it") -> None:
        from tqdm import tqdm

        self._bar: Any = tqdm(total=total, desc=desc, unit=unit, leave=False, file=sys.stderr)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            self._bar.refresh()

    def update(self, n: int = 1) -> object:
        return self._bar.update(n)

    def set_postfix(self, *, refresh: bool = True, **values: object) -> None:
        self._bar.set_postfix(refresh=refresh, **values)

    def set_description(self, desc: str) -> None:
        self._bar.set_description(desc)

    def close(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join()
            self._bar.close()


@contextmanager
def phase(desc: str, *, enabled: bool, seconds: float | None = None) -> Iterator[None]:
    """Show ``desc`` (and ``seconds``, a rough estimate) with a ticking clock while the block
    runs, when ``enabled``; nothing at all otherwise."""
    if not enabled:
        yield
        return
    bar = LiveBar(desc if seconds is None else f"{desc} ({about(seconds)})", unit="s")
    try:
        yield
    finally:
        bar.close()


def progress_blocks(blocks: Iterator[pd.DataFrame], rows: int, *,
                    seconds: float | None = None) -> Iterator[pd.DataFrame]:
    """Pass ``blocks`` on, with a bar of the records written that says ``sampling records``
    while a block is drawn (and matched) and ``writing`` while it is written."""
    sampling = "sampling records" if seconds is None else f"sampling records ({about(seconds)})"
    bar = LiveBar(sampling, total=rows, unit="row")
    done = 0
    try:
        for block in blocks:
            bar.set_description("writing")
            yield block
            bar.update(len(block))
            done += len(block)
            if done < rows:  # the next block is drawn before it is written
                bar.set_description(sampling)
    finally:
        bar.close()
