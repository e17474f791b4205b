"""File modes for outputs written through a temporary file and renamed over the target."""

from __future__ import annotations

import os
import stat

__all__ = ["replacement_mode"]


def replacement_mode(path: str) -> int:
    """The permission bits a file written to ``path`` in place would have.

    ``tempfile.mkstemp`` creates its file readable by the owner only (0600), and the rename
    carries that mode over the target: an output would be unreadable to the group that could
    read the file it replaced, or any file the user creates. So a replaced file keeps its own
    bits, and a new one gets ``0666`` less the process umask, as ``open`` gives.
    """
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
        os.umask(mask)
        return 0o666 & ~mask
