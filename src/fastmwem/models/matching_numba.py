"""The compiled loop of :func:`~fastmwem.models.matching.match_marginals` (numba).

Imported on first use only, so that ``import fastmwem`` does not load numba; without numba,
importing this module raises ``ImportError``.
"""

from __future__ import annotations

import numpy as np

from fastmwem._jit import njit_cached

__all__ = ["match_loop"]


@njit_cached
def _cells_of(codes: np.ndarray, r: int, offsets: np.ndarray,  # pragma: no cover - compiled
              axes: np.ndarray, strides: np.ndarray, out: np.ndarray) -> None:
    for g in range(offsets.size):
        c = offsets[g]
        for j in range(axes.shape[1]):
            if axes[g, j] >= 0:
                c += codes[r, axes[g, j]] * strides[g, j]
        out[g] = c


@njit_cached
def match_loop(codes: np.ndarray, sizes: np.ndarray,  # pragma: no cover - compiled
               order: np.ndarray, passes: int, m: int,
               s_counts: np.ndarray, s_targets: np.ndarray, s_offsets: np.ndarray,
               s_axes: np.ndarray, s_strides: np.ndarray, s_ptr: np.ndarray,
               s_sets: np.ndarray, s_stride: np.ndarray,
               c_counts: np.ndarray, c_targets: np.ndarray, c_offsets: np.ndarray,
               c_axes: np.ndarray, c_strides: np.ndarray, c_ptr: np.ndarray,
               c_sets: np.ndarray, c_stride: np.ndarray) -> int:
    """Greedy single-value moves; ``s_*`` are the scored sets, ``c_*`` the screening ones."""
    n, d = codes.shape
    s_cell = np.empty(s_offsets.size, np.int64)
    c_cell = np.empty(c_offsets.size, np.int64)
    best_values = np.empty(m, np.int64)
    best_screens = np.empty(m)
    moved = 0
    for _ in range(passes):
        moved_now = 0
        for i in range(n):
            r = order[i]
            _cells_of(codes, r, s_offsets, s_axes, s_strides, s_cell)
            _cells_of(codes, r, c_offsets, c_axes, c_strides, c_cell)
            for a in range(d):
                x = codes[r, a]
                away = 0.0
                for q in range(s_ptr[a], s_ptr[a + 1]):
                    c = s_cell[s_sets[q]]
                    away += abs(s_counts[c] - 1.0 - s_targets[c]) - abs(s_counts[c] - s_targets[c])
                if away >= 0.0:  # taking the value away alone does not help: leave it
                    continue
                kept = 0
                for v in range(sizes[a]):
                    if v == x:
                        continue
                    screen = 0.0
                    for q in range(c_ptr[a], c_ptr[a + 1]):
                        c = c_cell[c_sets[q]] + (v - x) * c_stride[q]
                        screen += abs(c_counts[c] + 1.0 - c_targets[c]) - abs(c_counts[c] - c_targets[c])
                    if kept < m:
                        j = kept
                        kept += 1
                    elif screen < best_screens[m - 1]:
                        j = m - 1
                    else:
                        continue
                    while j > 0 and best_screens[j - 1] > screen:  # keep them sorted
                        best_screens[j] = best_screens[j - 1]
                        best_values[j] = best_values[j - 1]
                        j -= 1
                    best_screens[j] = screen
                    best_values[j] = v
                best, chosen = -1e-9, -1
                for j in range(kept):
                    v = best_values[j]
                    change = away
                    for q in range(s_ptr[a], s_ptr[a + 1]):
                        c = s_cell[s_sets[q]] + (v - x) * s_stride[q]
                        change += abs(s_counts[c] + 1.0 - s_targets[c]) - abs(s_counts[c] - s_targets[c])
                    if change < best:
                        best, chosen = change, v
                if chosen < 0:
                    continue
                for q in range(s_ptr[a], s_ptr[a + 1]):
                    g = s_sets[q]
                    s_counts[s_cell[g]] -= 1.0
                    s_cell[g] += (chosen - x) * s_stride[q]
                    s_counts[s_cell[g]] += 1.0
                for q in range(c_ptr[a], c_ptr[a + 1]):
                    g = c_sets[q]
                    c_counts[c_cell[g]] -= 1.0
                    c_cell[g] += (chosen - x) * c_stride[q]
                    c_counts[c_cell[g]] += 1.0
                codes[r, a] = chosen
                moved_now += 1
        moved += moved_now
        if moved_now == 0:
            break
    return moved
