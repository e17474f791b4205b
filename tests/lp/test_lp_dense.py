"""Constraint-private LPs by dense MWU, C1/C2 (docs/lp.md, Tests 6, 7 and 8)."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.lp import dense_alpha, dense_projection
from fastmwem.lp.constraint import DenseLP, DenseMWU, run_dense, vertex_selector
from fastmwem.lp.oracles import dense_oracle
from fastmwem.mechanisms import ExponentialMechanism
from fastmwem.testing import chi_square_pvalue
from tests.lp._problems import draw_counts, packing_lp

ALPHA = 1e-3


def _scores(lp: DenseLP, y: np.ndarray, z: float) -> np.ndarray:
    """The dual oracle's scores q(j) = -<y, V_{:,j}>, written out directly."""
    return np.array([-(y @ lp.values(j, z)) for j in range(lp.A.shape[1])])


def test_dense_mwu_with_the_exact_oracle_violates_fewer_than_s_rows():
    """docs/lp.md Test 6 (m = 3000, d = 40, s = 30, T = 4000): with the exact dual oracle
    (epsilon0 = infinity) fewer than s rows are violated by more than
    alpha = 2 width sqrt(ln(m / s) / T)."""
    rng = np.random.default_rng(0)
    m, d, s, rounds = 3000, 40, 30, 4000
    c, A, b, xstar = packing_lp(rng, m, d)
    lp = DenseLP(A, b, -c)
    z = float(-c @ xstar)  # a feasible target
    width = float(np.abs(z * A / -c - b[:, None]).max())
    eta = np.sqrt(np.log(m / s) / rounds)

    def exact(y, g):
        return int(np.argmax(_scores(lp, y, z)))
    x, _ = run_dense(lp, exact, target=z, density=s, eta=eta, rounds=rounds, width=width,
                     generator=rng)
    alpha = dense_alpha(width, m, s, rounds, 0.0, 1.0, d, 0.05)
    assert alpha == pytest.approx(2 * width * np.sqrt(np.log(m / s) / rounds))
    violations = A @ x - b
    assert np.count_nonzero(violations > alpha) < s
    assert -c @ x == pytest.approx(z)  # the average of vertices stays on c'x = z
    assert violations.max() < alpha  # in fact all rows


def _neighbours(rng, m, d, bound, adversarial):
    A = rng.random((m, d)) * bound
    b = rng.random(m)
    row = (np.where(rng.random(d) < 0.5, bound, 0.0) if adversarial
           else rng.random(d) * bound)
    extra_b = rng.choice([0.0, 5.0]) if adversarial else rng.random()
    return A, b, np.vstack([A, row]), np.append(b, extra_b)


def test_sensitivity_audit_on_neighbour_pairs():
    """docs/lp.md Test 7 (C1): for neighbours sharing a history, every score moves by at most
    rho_A / s, rho_A = z max A / min c'. The bound is nearly reached."""
    rng = np.random.default_rng(1)
    closest = 0.0
    for trial in range(300):
        m, d = int(rng.integers(5, 40)), int(rng.integers(2, 6))
        s = float(rng.uniform(1, m))
        bound, z = 1.0, float(rng.uniform(0.2, 3.0))
        c_pos = rng.uniform(0.5, 1.5, d)
        A, b, A2, b2 = _neighbours(rng, m, d, bound, adversarial=trial % 2 == 0)
        lp, lp2 = DenseLP(A, b, c_pos), DenseLP(A2, b2, c_pos)
        rho_a = z * bound / c_pos.min()
        eta = float(rng.uniform(0.05, 2.0))
        one, two = DenseMWU(m, s, eta), DenseMWU(m + 1, s, eta)
        for j in rng.integers(0, d, size=int(rng.integers(0, 30))):
            one.update(lp.values(j, z) - b)
            two.update(lp2.values(j, z) - b2)
        q1 = _scores(lp, one.distribution(), z)
        q2 = _scores(lp2, two.distribution(), z)
        gap = float(np.abs(q1 - q2).max())
        assert gap <= rho_a / s * (1 + 1e-9)
        closest = max(closest, gap / (rho_a / s))
    assert closest > 0.75  # not vacuous: pairs come close to the bound


def test_lazy_projection_keeps_neighbours_weights_equal_on_shared_rows():
    """docs/lp.md Test 8: the pre-projection log-weights of neighbours agree on the shared rows
    whatever the history. Re-projecting the projected distribution each round (the eager
    variant) does not: it is why the solver projects the cumulative gains."""
    rng = np.random.default_rng(2)
    m, d, s, z = 30, 4, 5.0, 1.0
    c_pos = np.ones(d)
    A, b, A2, b2 = _neighbours(rng, m, d, 1.0, adversarial=True)
    lp, lp2 = DenseLP(A, b, c_pos), DenseLP(A2, b2, c_pos)
    one, two = DenseMWU(m, s, 0.5), DenseMWU(m + 1, s, 0.5)
    eager1, eager2 = np.full(m, 1 / m), np.full(m + 1, 1 / (m + 1))
    for j in rng.integers(0, d, size=25):
        one.update(lp.values(j, z) - b)
        two.update(lp2.values(j, z) - b2)
        np.testing.assert_array_equal(one.log_weights(), two.log_weights()[:m])
        eager1 = dense_projection(np.log(eager1) + 0.5 * (lp.values(j, z) - b), s)
        eager2 = dense_projection(np.log(eager2) + 0.5 * (lp2.values(j, z) - b2), s)
    # eager weights, renormalised over the shared rows, have drifted apart
    assert np.abs(eager1 / eager1.sum() - eager2[:m] / eager2[:m].sum()).max() > 1e-3


@pytest.mark.parametrize("selection", ["exponential", "lazy"])
def test_vertex_choice_has_the_exponential_mechanism_law(selection):
    """C1 and C2 (lazy over the vertex keys -A_{:,j} / c'_j) both choose vertex j with the
    EM law on q(j) = -<y, V_{:,j}>; power check against a law 25% off in epsilon."""
    rng = np.random.default_rng(3)
    c, A, b, _ = packing_lp(rng, 200, 30)
    lp = DenseLP(A, b, -c)
    y = dense_projection(rng.normal(size=200), 20)
    z, eps0, sens = 1.0, 2.0, 0.05
    oracle = dense_oracle(A, -c, "flat") if selection == "lazy" else None
    select = vertex_selector(lp, target=z, epsilon0=eps0, score_sensitivity=sens,
                             selection=selection, oracle=oracle)
    counts = draw_counts(select, y, 30, 4000, seed=4)
    scores = _scores(lp, y, z)
    law = ExponentialMechanism(epsilon=eps0, sensitivity=sens).probabilities(scores)
    assert chi_square_pvalue(counts, law) > ALPHA
    wrong = ExponentialMechanism(epsilon=1.25 * eps0, sensitivity=sens).probabilities(scores)
    assert chi_square_pvalue(counts, wrong) < ALPHA


def test_dense_oracle_refuses_to_save(tmp_path):
    rng = np.random.default_rng(5)
    c, A, _, _ = packing_lp(rng, 20, 3)
    oracle = dense_oracle(A, -c, "flat")
    with pytest.raises(ValueError, match="private"):
        oracle.save(tmp_path / "vertices.npz")
    assert not any(tmp_path.iterdir())
