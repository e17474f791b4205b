"""Brute-force exact laws of the top-k mechanisms over every ordered sequence (small d, k)."""

from __future__ import annotations

import itertools

import numpy as np

from fastmwem.mechanisms.exponential import PermuteAndFlip


def sequences(d: int, k: int) -> list[tuple[int, ...]]:
    return list(itertools.permutations(range(d), k))


def errors(counts: list[int], seqs: list[tuple[int, ...]]) -> np.ndarray:
    """err(S) = max_i (c_(i) - c_{s_i}) with Python integers (exact for any size)."""
    top = sorted((int(c) for c in counts), reverse=True)
    return np.array([max(top[i] - int(counts[s]) for i, s in enumerate(seq)) for seq in seqs],
                    dtype=np.float64)


def softmax(logw: np.ndarray) -> np.ndarray:
    w = np.exp(logw - logw.max())
    return w / w.sum()


def joint_law(counts: list[int], k: int, lam: float) -> tuple[list, np.ndarray]:
    seqs = sequences(len(counts), k)
    return seqs, softmax(-lam * errors(counts, seqs))


def pruned_law(counts: list[int], k: int, lam: float, tau: int) -> tuple[list, np.ndarray]:
    seqs = sequences(len(counts), k)
    return seqs, softmax(-lam * np.minimum(errors(counts, seqs), tau))


def pnf_joint_law(counts: list[int], k: int, epsilon: float, delta: int) -> tuple[list, np.ndarray]:
    seqs = sequences(len(counts), k)
    probs = PermuteAndFlip(epsilon=epsilon, sensitivity=delta).probabilities(-errors(counts, seqs))
    return seqs, probs


def peel_law(counts: list[int], k: int, step_law) -> tuple[list, np.ndarray]:
    """Law of k rounds of a selection step over the items not chosen yet."""
    seqs = sequences(len(counts), k)
    out = np.empty(len(seqs))
    for n, seq in enumerate(seqs):
        left = list(range(len(counts)))
        p = 1.0
        for s in seq:
            probs = step_law(np.array([counts[j] for j in left], dtype=np.float64))
            p *= probs[left.index(s)]
            left.remove(s)
        out[n] = p
    return seqs, out / out.sum()


def tally(draws: list[np.ndarray], seqs: list[tuple[int, ...]]) -> np.ndarray:
    index = {s: i for i, s in enumerate(seqs)}
    counts = np.zeros(len(seqs), dtype=np.int64)
    for draw in draws:
        counts[index[tuple(int(x) for x in draw)]] += 1
    return counts


def lam_of(epsilon: float, neighbors: str) -> float:
    return epsilon / (2.0 * (1 if neighbors == "add-remove" else 2))


__all__ = ["sequences", "errors", "joint_law", "pruned_law", "pnf_joint_law", "peel_law",
           "tally", "lam_of"]
