"""Exact samplers for the joint top-k laws; each returns the caller's item indices.

Every sampler draws from its law exactly (up to the usual idealisation of floating-point
uniforms): the error levels ``0 .. L`` are counted explicitly, and the levels beyond ``L`` are
reached by rejection from uniform sequences against an exact upper bound on their weight, so the
cap ``L`` trades speed only. The counted levels arrive in chunks and are reduced as they come
(a running Gumbel-max or noisy max, and a running log-sum-exp), so no array over all levels is
kept.
"""

from __future__ import annotations

import math

import numpy as np

from fastmwem.mechanisms.topk._levels import (
    SortedCounts,
    iter_level_log_masses,
    level_row,
    log_num_sequences,
    sequence_in_cell,
    uniform_sequence,
)

__all__ = ["sample_joint", "sample_pnf_joint", "sample_pruned_joint"]


def _gumbel_argmax(logw: np.ndarray, rng: np.random.Generator) -> int:
    return int(np.argmax(logw + rng.gumbel(size=logw.size)))


def _cell_sequence(sc: SortedCounts, e: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform sequence (item indices) among those with error exactly ``e``."""
    t_prev, t_cur, row = level_row(sc, e)
    p = _gumbel_argmax(row, rng)
    return sc.items(sequence_in_cell(t_prev, t_cur, p, rng))


def _uniform_items(sc: SortedCounts, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """A uniform sequence of distinct items and its error (a uniform sequence of sorted
    positions mapped by any fixed bijection is a uniform sequence of items)."""
    items = uniform_sequence(sc.d, sc.k, rng)
    return items, sc.error_of_items(items)


def _gumbel_max_level(sc: SortedCounts, lam: float,
                      rng: np.random.Generator) -> tuple[int, float, float]:
    """Gumbel-max over the counted levels, chunk by chunk, with log-weights
    ``ln #level - lam e``: the winning level, its noisy log-weight, and ``ln`` of the total
    weight of the counted levels."""
    best, best_level = -math.inf, -1
    top, total = -math.inf, 0.0  # running log-sum-exp: total * exp(top)
    for levels, log_m in iter_level_log_masses(sc):
        logw = log_m - lam * levels.astype(np.float64)
        noisy = logw + rng.gumbel(size=logw.size)
        i = int(np.argmax(noisy))
        if noisy[i] > best:
            best, best_level = float(noisy[i]), int(levels[i])
        m = float(np.max(logw))
        if m > top:
            total *= math.exp(top - m)
            top = m
        total += float(np.sum(np.exp(logw - top)))
    return best_level, best, top + math.log(total)


def sample_joint(sc: SortedCounts, lam: float, last: int, rng: np.random.Generator) -> np.ndarray:
    """Draw S with P(S) proportional to exp(-lam * e(S)); levels ``0 .. last`` counted exactly.

    ``sc`` must reach ``last`` (``sc.depth >= last``). Each attempt either draws from the
    counted levels (total weight ``H``) or, with probability ``B / (H + B)`` where
    ``B = d!/(d-k)! * exp(-lam (last + 1))`` bounds the weight of all deeper levels, draws a
    uniform sequence and keeps it if its error exceeds ``last``, with probability
    ``exp(-lam (e - last - 1))``; otherwise it starts again. Every sequence then comes out of an
    attempt with probability ``exp(-lam e(S)) / (H + B)``, which is the law exactly. The level
    of the counted branch is drawn once, up front: it is independent of the attempts' coins and
    used at most once.
    """
    level, _, log_head = _gumbel_max_level(sc, lam, rng)
    if last >= sc.span:
        p_tail = 0.0
    else:
        log_tail = log_num_sequences(sc.d, sc.k) - lam * (last + 1)
        p_tail = math.exp(log_tail - np.logaddexp(log_head, log_tail))
    while True:
        if p_tail > 0.0 and rng.random() < p_tail:
            seq, err = _uniform_items(sc, rng)
            if err > last and rng.random() < math.exp(-lam * (err - last - 1)):
                return seq
            continue
        return _cell_sequence(sc, level, rng)


def _max_expo(log_m: np.ndarray, lam: float, rng: np.random.Generator) -> np.ndarray:
    """The maximum of ``m`` i.i.d. Expo(lam) draws for each ``ln m`` in ``log_m`` (finite only).

    Inverting the CDF ``(1 - exp(-lam z))^m`` gives ``z = -ln(-expm1(-a)) / lam`` with
    ``a = w / m`` and ``w ~ Expo(1)``. ``a`` is formed as ``exp(ln w - ln m)``, so it never
    underflows for huge ``m`` in a way that matters: for tiny ``a``,
    ``-ln(-expm1(-a)) = -ln a + a/2 + O(a^2)``.
    """
    w = rng.standard_exponential(size=log_m.size)
    with np.errstate(divide="ignore"):  # w == 0 has probability ~2**-53: infinite noise
        log_a = np.log(w) - log_m
    a = np.exp(log_a)
    small = log_a < -18.0
    out = np.empty_like(log_m)
    out[small] = -log_a[small] + 0.5 * a[small]
    big = ~small
    out[big] = -np.log(-np.expm1(-a[big]))
    return out / lam


def _binomial_huge(log_n: float, n_exact: int | None, log_q: float,
                   rng: np.random.Generator) -> int:
    """K ~ Binomial(n, q) for a possibly astronomically large ``n`` given by its log.

    Inversion of the CDF, starting from ``P(K = 0) = (1 - q)^n``; ``n_exact`` is used when ``n``
    is small enough to matter in ``n - j``.
    """
    q = math.exp(log_q)
    log1m_q = math.log1p(-q)
    # ln(-ln(1 - q)); for tiny q, -ln(1 - q) = q (1 + q/2 + ...).
    log_rate = log_q if q < 1e-12 else math.log(-log1m_q)
    log_mean = log_n + log_rate
    if log_mean > math.log(1e6):
        raise RuntimeError("tail beyond the level cap is too heavy to sample; raise the cap")
    p_any = -math.expm1(-math.exp(log_mean))
    u = rng.random()
    if u >= p_any:
        return 0
    log_p = -math.exp(log_mean)  # ln P(K = 0)
    cum = 0.0
    j = 0
    while True:
        if n_exact is not None and j >= n_exact:
            return n_exact
        log_nj = math.log(n_exact - j) if n_exact is not None else log_n
        log_p += log_nj - math.log(j + 1) + log_q - log1m_q
        j += 1
        pj = math.exp(log_p)
        cum += pj
        if u < cum or (pj == 0.0 and j > math.exp(log_mean)):
            return j


def sample_pnf_joint(sc: SortedCounts, lam: float, last: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Report-noisy-max with Expo(lam) noise on u*(S) = -e(S) over all sequences (PNF-Joint).

    Levels ``0 .. last`` get the maximum of their ``#level`` noises in one draw. For the deeper
    sequences, given the best counted value ``v >= 0``, a sequence ``S`` beats it with probability
    ``exp(-lam (v + e(S))) <= qbar = exp(-lam (v + last + 1))``: every one of the ``d!/(d-k)!``
    sequences is marked independently with probability ``qbar`` (a binomial count and uniform
    distinct sequences), marks on counted sequences are dropped, and a marked deeper sequence is
    kept with probability ``exp(-lam (e(S) - last - 1))``. A kept one has noisy value ``v`` plus a
    fresh Expo(lam) (memorylessness), and the largest value wins.
    """
    best, best_level = -math.inf, -1
    for levels, log_m in iter_level_log_masses(sc):
        noisy = _max_expo(log_m, lam, rng) - levels
        i = int(np.argmax(noisy))
        if noisy[i] > best:
            best, best_level = float(noisy[i]), int(levels[i])
    if last < sc.span:
        log_n = log_num_sequences(sc.d, sc.k)
        n_exact = math.perm(sc.d, sc.k) if log_n < 600 else None
        marks = _binomial_huge(log_n, n_exact, -lam * (best + last + 1), rng)
        seen: set[tuple[int, ...]] = set()
        winner = None
        top_value = best
        while len(seen) < marks:
            seq, err = _uniform_items(sc, rng)
            key = tuple(seq.tolist())
            if key in seen:
                continue
            seen.add(key)
            if err > last and rng.random() < math.exp(-lam * (err - last - 1)):
                value = best + rng.standard_exponential() / lam
                if value > top_value:
                    top_value, winner = value, seq
        if winner is not None:
            return winner
    return _cell_sequence(sc, best_level, rng)


def sample_pruned_joint(sc: SortedCounts, lam: float, tau: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Draw S with P(S) proportional to exp(-lam * min(e(S), tau)) (Wu and Zhang's utility).

    ``sc`` must reach ``min(tau - 1, span)``. Levels below ``tau`` are counted; the clipped
    level holds the ``d!/(d-k)! - N(tau - 1)`` sequences with error ``>= tau``, counted exactly
    with Python integers, and is sampled by rejection from uniform sequences.
    """
    level, best, _ = _gumbel_max_level(sc, lam, rng)
    if tau <= sc.span:
        t = sc.at_least(sc.top - (tau - 1))
        below = math.prod(int(x) for x in (t - np.arange(sc.k)))
        clipped = math.perm(sc.d, sc.k) - below
        # the clipped level joins the Gumbel-max of the counted ones
        if clipped > 0 and math.log(clipped) - lam * tau + rng.gumbel() > best:
            while True:
                seq, err = _uniform_items(sc, rng)
                if err >= tau:
                    return seq
    return _cell_sequence(sc, level, rng)
