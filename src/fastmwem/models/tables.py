"""Operations on factor tables: arrays over sorted attribute axes (one array axis per attribute).

A *table over* ``axes`` (a sorted tuple of domain axes) has one array axis per attribute, in the
order of ``axes``, sized by the domain; flattened in C order it is a histogram of the marginal
domain on those attributes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["marginalise", "expand", "divide", "product_sum", "outer"]

# numpy's einsum names operands' axes with letters: at most 52 distinct labels in one call.
_EINSUM_LABELS = 52


def marginalise(table: np.ndarray, axes: tuple[int, ...], keep: tuple[int, ...]) -> np.ndarray:
    """``table`` (over ``axes``) summed over every axis not in ``keep`` (sorted subset)."""
    other = tuple(i for i, a in enumerate(axes) if a not in keep)
    return table.sum(axis=other) if other else table


def expand(values: np.ndarray, keep: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """``values`` (over ``keep``, a sorted subset of ``axes``) shaped to broadcast over ``axes``."""
    position = set(keep)
    shape = [values.shape[keep.index(a)] if a in position else 1 for a in axes]
    return values.reshape(shape)


def divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` with 0 wherever the denominator is 0 (zero mass stays zero)."""
    out = np.zeros(np.broadcast_shapes(numerator.shape, denominator.shape))
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def outer(factors: list[tuple[tuple[int, ...], np.ndarray]]) -> tuple[tuple[int, ...], np.ndarray]:
    """The product of tables over disjoint axes, as one table over their sorted union."""
    axes: tuple[int, ...] = ()
    table = np.ones(())
    for f_axes, f_table in factors:
        table = np.multiply.outer(table, f_table)
        axes = axes + f_axes
    order = np.argsort(axes, kind="stable")
    return tuple(axes[i] for i in order), np.ascontiguousarray(table.transpose(order))


def product_sum(factors: list[tuple[tuple[int, ...], np.ndarray]],
                keep: tuple[int, ...]) -> np.ndarray:
    """``sum over the axes not in keep of prod(factors)``, as a table over ``keep`` (sorted).

    Every axis of ``keep`` must appear in some factor.
    """
    labels = sorted({a for f_axes, _ in factors for a in f_axes})
    if len(labels) <= _EINSUM_LABELS:
        index = {a: i for i, a in enumerate(labels)}
        operands: list[Any] = []  # einsum's sublist form: tables and their axis labels
        for f_axes, f_table in factors:
            operands += [f_table, [index[a] for a in f_axes]]
        return np.einsum(*operands, [index[a] for a in keep], optimize="greedy")
    # Many attributes: multiply pairwise, summing out an axis once no later factor uses it.
    axes, table = factors[0]
    for i, (f_axes, f_table) in enumerate(factors[1:], start=1):
        union = tuple(sorted(set(axes) | set(f_axes)))
        table = expand(table, axes, union) * expand(f_table, f_axes, union)
        later = {a for g_axes, _ in factors[i + 1:] for a in g_axes}
        needed = tuple(a for a in union if a in keep or a in later)
        axes, table = needed, marginalise(table, union, needed)
    return marginalise(table, axes, keep)
