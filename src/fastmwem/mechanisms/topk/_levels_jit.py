"""The compiled level pass of the joint top-k samplers (numba), for tables with many steps.

Imported on first use only, so that ``import fastmwem`` does not load numba; without numba,
importing this module raises ``ImportError``. It computes what the numpy pass of
:func:`fastmwem.mechanisms.topk._levels.iter_level_log_masses` does, about ten times faster per
step, at the price of numba's start-up (about half a second of CPU and 100 MB the first time in
a process), so it is used only for large tables.
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem._jit import njit_cached

__all__ = ["level_pass"]


@njit_cached
def level_pass(u: np.ndarray, a: np.ndarray, b: np.ndarray,  # pragma: no cover - compiled
               vals: np.ndarray, starts: np.ndarray, depth: int, ptr: np.ndarray,
               t: np.ndarray, acc: np.ndarray, state: np.ndarray, out_levels: np.ndarray,
               out_log: np.ndarray) -> int:
    """The next levels ``1 <= e <= depth`` holding a sequence, with ``ln #{S : e(S) = e}``.

    ``u[h]`` are the distinct top-k counts (decreasing), held by the sorted positions
    ``a[h] .. b[h]-1``; ``vals`` are the distinct counts in reach (increasing), with
    ``n - starts[g]`` counts ``>= vals[g]`` (``n = starts[-1]``). All positions of group ``h``
    share the prefix size ``t[h]``, which grows only at the levels ``u[h] - v`` of the count
    values ``v`` below ``u[h]``; ``ptr[h]`` indexes the next one. ``acc`` holds ``ln N`` of the
    last level done and its Neumaier compensation, ``state[0]`` that level and ``state[1]`` is
    set to 1 when no level is left. Fills at most ``out_levels.size`` levels, returns how many.
    """
    cap = out_levels.size
    n_all = starts[starts.size - 1]
    n = 0
    while n < cap and state[1] == 0:
        nxt = -1
        for h in range(u.size):
            if ptr[h] >= 0:
                e = u[h] - vals[ptr[h]]
                if nxt < 0 or e < nxt:
                    nxt = e
        if nxt < 0 or nxt > depth:
            state[1] = 1
            break
        dsum = 0.0
        for h in range(u.size):
            if ptr[h] >= 0 and u[h] - vals[ptr[h]] == nxt:
                prev = t[h]
                cur = n_all - starts[ptr[h]]
                ptr[h] -= 1
                t[h] = cur
                grow = float(cur - prev)
                for i in range(a[h], b[h]):
                    dsum += math.log1p(grow / (prev - i))  # prev - i >= 1 at levels >= 1
        s = acc[0]
        total = s + dsum
        if abs(s) >= abs(dsum):
            acc[1] += (s - total) + dsum
        else:
            acc[1] += (dsum - total) + s
        acc[0] = total
        out_levels[n] = nxt
        out_log[n] = (acc[0] + acc[1]) + math.log(-math.expm1(-dsum))
        n += 1
        state[0] = nxt
    return n
