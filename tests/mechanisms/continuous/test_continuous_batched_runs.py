"""ConfAtomPerfect's repeated runs, simulated in doubling batches (kernel.first_exits).

A draw that needs many runs (large epsilon with the uniform exit) must not loop once per run:
the runs are simulated in vectorised batches, the first run in order that ends in the space is
released, and the counters report what the one-at-a-time loop would have counted. The law is
checked at a setting where most draws need several batches.
"""

import math

import numpy as np
import pytest
from scipy import stats

from fastmwem.accounting import Accountant, PureDP
from fastmwem.mechanisms.continuous import (
    WORKED_EXAMPLE_DATA,
    ContinuousExponentialMechanism,
    MeanL1Loss,
    atom_perfect,
)

ALPHA = 1e-3  # per-test false-positive rate of the statistical checks
Z = 4.0  # half-width of the mean checks in standard errors (two-sided rate ~6e-5)


def _counted(loss: MeanL1Loss, epsilon: float):
    """The mechanism of ``loss`` with a loss that counts its (vectorised) calls."""
    calls = [0]

    def counting(points):
        calls[0] += 1
        return loss(points)

    mech = ContinuousExponentialMechanism(loss=counting, sensitivity=loss.sensitivity,
                                          epsilon=epsilon, space=loss.space)
    return mech, calls


def test_a_draw_needing_many_runs_takes_few_loss_calls():
    # n = 10, epsilon = 1e4: c = epsilon n / 2 = 5e4, C_X is about 2 / c and a draw needs about
    # 1 + 1 / C_X = 25,000 runs. One run at a time made one loss call per proposal.
    loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    mech, calls = _counted(loss, 1e4)
    draw = mech.sample(rng=3)
    assert draw.runs > 2_000  # the draw did need many runs ...
    assert calls[0] < 300  # ... and they were evaluated a batch at a time
    assert abs(draw.value[0] - 0.3) < 0.01  # mode at the mean; the law is checked below


def test_counters_are_those_of_the_one_at_a_time_loop():
    # Uniform exit, always-accept: beta = w = 1/2, so each run makes Geom0(1/2) proposals (mean
    # 1) and a draw makes Geom1(1 - k_X) runs with 1 - k_X = C_X / (1 + C_X).
    loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    eps = 50.0  # c = 250, C_X ~ 0.008: about 126 runs per draw, several batches
    c_x = loss.normalising_constant(eps)
    p = c_x / (1.0 + c_x)
    draws = atom_perfect(loss.mechanism(eps), size=4000, rng=17)
    runs = draws.runs.astype(float)
    mean, sd = 1.0 / p, math.sqrt((1.0 - p) / p**2)
    assert abs(runs.mean() - mean) < Z * sd / math.sqrt(runs.size)
    # Proposals: a sum of `runs` Geom0(1/2) counts, mean runs and variance 2 runs given runs.
    proposals = draws.proposals.astype(float)
    sd_prop = math.sqrt(2.0 * mean + sd**2)
    assert abs(proposals.mean() - mean) < Z * sd_prop / math.sqrt(runs.size)
    assert np.all(draws.runs >= 1)
    np.testing.assert_array_equal(draws.loss_evaluations <= draws.proposals, True)


def test_law_is_exact_when_draws_need_several_batches():
    loss = MeanL1Loss(WORKED_EXAMPLE_DATA)
    eps = 50.0
    values = atom_perfect(loss.mechanism(eps), size=4000, rng=19).values[:, 0]
    assert stats.kstest(values, lambda t: loss.marginal_cdf(t, eps)).pvalue > ALPHA
    # Power: the same draws against the law at 35 instead of 50 are rejected.
    assert stats.kstest(values, lambda t: loss.marginal_cdf(t, 35.0)).pvalue < ALPHA


def test_same_seed_same_draws():
    mech = MeanL1Loss(WORKED_EXAMPLE_DATA).mechanism(30.0)
    a = atom_perfect(mech, size=50, rng=5)
    b = atom_perfect(mech, size=50, rng=5)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.runs, b.runs)


def test_progress_bar_on_request_and_silence_by_default(capsys):
    mech = MeanL1Loss(WORKED_EXAMPLE_DATA).mechanism(30.0)
    atom_perfect(mech, size=20, rng=1)  # fast: the automatic bar stays hidden
    assert capsys.readouterr().err == ""
    atom_perfect(mech, size=20, rng=1, progress=False)
    assert capsys.readouterr().err == ""
    atom_perfect(mech, size=20, rng=1, progress=True)
    err = capsys.readouterr().err
    assert "atom_perfect" in err and "runs=" in err


@pytest.mark.parametrize("bad", ["yes", 1, 0.5])
def test_bad_progress_is_refused_before_the_charge(bad):
    mech = MeanL1Loss(WORKED_EXAMPLE_DATA).mechanism(1.0)
    acc = Accountant(epsilon=5)
    with pytest.raises(TypeError, match="progress"):
        atom_perfect(mech, rng=0, accountant=acc, progress=bad)
    assert acc.spent() == PureDP(0)
