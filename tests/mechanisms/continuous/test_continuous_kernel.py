"""The corrected kernel on a discretised space, and the paper's literal one.

These checks are exact linear algebra on a grid: the corrected modified kernel is reversible
with respect to pi_u = (g, kappa), its remainder kernel is a Markov kernel, and the split-chain
series sum_n beta (1 - beta)^n e_* R^n reproduces the stationary law, for both exit densities
and with the always-accept and the generic (beta < w) designs. The paper's literal kernel
(s.3.4) is not reversible for a Laplace proposal, and does not carry atom mass k.
"""

import numpy as np
import pytest

N = 60  # grid points; base measure nu = counting / N, so vol(Y) = 1


def _setup(mean=0.3, c=5.0):
    y = (np.arange(N) + 0.5) / N
    g = np.exp(-c * np.abs(y - mean))
    return y, g


def _corrected_kernel(g, h, q, w, kappa):
    """Transition matrix on N grid states plus the atom (index N). h: exit pmf (sums to 1 over
    the grid), q: symmetric proposal pmf matrix (rows may sum to < 1: mass off Y stays)."""
    n = g.size
    p = np.zeros((n + 1, n + 1))
    alpha_out = np.minimum(1.0, kappa * (1 - w) * h / (w * g))
    alpha_in = np.minimum(1.0, w * g / (kappa * (1 - w) * h))
    for i in range(n):
        p[i, n] = w * alpha_out[i]
        move = (1 - w) * q[i] * np.minimum(1.0, g / g[i])
        move[i] = 0.0
        p[i, :n] = move
        p[i, i] = 1.0 - p[i].sum()
    p[n, :n] = (1 - w) * h * alpha_in
    p[n, n] = 1.0 - p[n, :n].sum()
    return p


def _laplace_q(y, rate):
    d = np.abs(y[:, None] - y[None, :])
    return rate / 2 * np.exp(-rate * d) / N  # discretised density times cell width


@pytest.mark.parametrize("exit_kind", ["uniform", "laplace"])
@pytest.mark.parametrize("kappa_scale", [1.0, 0.2])  # 1.0: always-accept; 0.2: beta < w
def test_corrected_kernel_reversible_and_split_chain_identity(exit_kind, kappa_scale):
    y, g = _setup()
    w = 0.5
    if exit_kind == "uniform":
        h = np.full(N, 1.0 / N)
    else:
        h = np.exp(-5.0 * np.abs(y - 0.3))
        h /= h.sum()
    bound = np.max(g / h)
    kappa = kappa_scale * w * bound / (1 - w)
    beta = w * min(1.0, kappa * (1 - w) / (w * bound))
    p = _corrected_kernel(g, h, _laplace_q(y, 5.0), w, kappa)
    assert np.all(p >= -1e-15) and np.allclose(p.sum(axis=1), 1.0, atol=1e-12)
    pi_u = np.append(g, kappa)
    flow = pi_u[:, None] * p
    np.testing.assert_allclose(flow, flow.T, atol=1e-12)
    pi = pi_u / pi_u.sum()
    np.testing.assert_allclose(pi @ p, pi, atol=1e-12)
    # Minorisation and the remainder kernel.
    assert np.all(p[:, N] >= beta - 1e-15)
    r = p.copy()
    r[:, N] -= beta
    r /= 1 - beta
    assert np.all(r >= -1e-15) and np.allclose(r.sum(axis=1), 1.0, atol=1e-12)
    e = np.zeros(N + 1)
    e[N] = 1.0
    total = np.zeros(N + 1)
    weight = beta
    while weight > 1e-16:
        total += weight * e
        e = e @ r
        weight *= 1 - beta
    np.testing.assert_allclose(total, pi, atol=1e-10)


def test_paper_literal_kernel_is_wrong():
    """s.3.4 [FIX]: proposal (q + 1{a}) / 2 with target (1-k) f + k 1{a} on the state space
    Y u {a}: not reversible with a Laplace proposal, and with the uniform proposal its stationary
    atom mass is k_eff != k."""
    y, g = _setup(mean=0.5, c=10.0)
    k = 0.5
    f = g / (g.sum() / N)  # density w.r.t. nu
    target = np.append((1 - k) * f / N, k)  # masses
    target /= target.sum()

    def literal(q):
        n = N
        p = np.zeros((n + 1, n + 1))
        dens = np.append((1 - k) * f, (1 - k) * f[n // 2] + k)  # "f tilde" evaluated at a
        for i in range(n):
            move = 0.5 * q[i] * np.minimum(1.0, dens[:n] / dens[i])
            move[i] = 0.0
            p[i, :n] = move
            p[i, n] = 0.5 * min(1.0, dens[n] / dens[i])
            p[i, i] = 1.0 - p[i].sum()
        p[n, :n] = 0.5 * q[n // 2] * np.minimum(1.0, dens[:n] / dens[n])
        p[n, n] = 1.0 - p[n, :n].sum()
        return p

    p_lap = literal(_laplace_q(y, 10.0))
    vals, vecs = np.linalg.eig(p_lap.T)
    stat = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    stat /= stat.sum()
    assert not np.allclose(stat, target, atol=1e-3)
    p_uni = literal(np.full((N, N), 1.0 / N))
    vals, vecs = np.linalg.eig(p_uni.T)
    stat = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    stat /= stat.sum()
    k_eff_pred = k * ((1 - k) * f[N // 2] + k) / ((1 - k) ** 2 + k * (1 - k) * f[N // 2] + k**2)
    assert abs(stat[N] - k) > 0.2
    assert stat[N] == pytest.approx(k_eff_pred, abs=2e-2)
