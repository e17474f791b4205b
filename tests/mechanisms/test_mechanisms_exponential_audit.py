"""Empirical-epsilon audit of the selection mechanisms.

For each neighbour pair (D, D') the mechanism is run many times on both score vectors; the
Clopper-Pearson lower bound on the privacy loss over all singleton outputs and both directions
must not exceed the claimed epsilon. The level is 99% overall: alpha = 0.01 is split (Bonferroni)
over outputs x 2 directions x pairs. The positive control is the factor-2 bug (the monotonic
constant used on non-monotonic neighbours, really 2 epsilon): its lower bound must exceed epsilon.

The exact privacy loss of each pair (from ``probabilities``) is also checked, without sampling.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.mechanisms import ExponentialMechanism, PermuteAndFlip
from fastmwem.testing import clopper_pearson_epsilon_lower_bound
from tests.mechanisms._sampling import select_counts

EPS = 1.0
SENS = 1.0
N_CAND = 5
OVERALL_ALPHA = 0.01
RUNS_DEFAULT = 20_000  # 6 datasets + 2 for the control, ~4 s of CPU per mechanism
RUNS_SLOW = 300_000  # every pair, ~1 min per mechanism

_e0 = np.eye(N_CAND)[0]
_z = np.zeros(N_CAND)
_b = np.array([0.0, 1.0, 0.5, 0.0, 1.5])
_huge = 1e6 * SENS

# s.4.2: one score up, one down, all others up / one down (worst case for the non-monotonic
# EM), ties vs one moved, and huge (1e6 x sensitivity) offsets.
PAIRS = {
    "one_up": (_b, _b + SENS * _e0),
    "one_down": (_b, _b - SENS * _e0),
    "others_up_one_down_ties": (_z, _z + SENS * (1 - 2 * _e0)),
    "others_up_one_down": (_b, _b + SENS * (1 - 2 * _e0)),
    "ties_vs_one_moved": (_z, _z + SENS * _e0),
    "huge_offset": (_z + _huge, _z + _huge + SENS * (1 - 2 * _e0)),
    "huge_offset_negative": (_b - _huge, _b - _huge - SENS * _e0),
}
CONTROL_PAIR = "others_up_one_down_ties"
# The default tier audits the tight pair, a single move and the overflow pair; the slow tier
# audits all of them.
DEFAULT_PAIRS = {k: PAIRS[k] for k in (CONTROL_PAIR, "one_up", "huge_offset")}

MECHANISMS = {"em": ExponentialMechanism, "pf": PermuteAndFlip}


def _bonferroni_alpha(n_pairs: int) -> float:
    return OVERALL_ALPHA / (2 * N_CAND * n_pairs)


def exact_loss(mech, d1, d2) -> float:
    """The true privacy loss of ``mech`` on the pair: max over outputs of |ln p1/p2|."""
    p1, p2 = mech.probabilities(d1), mech.probabilities(d2)
    return float(np.max(np.abs(np.log(p1) - np.log(p2))))


def audit(mech, pairs: dict, runs: int, seed: int, n_pairs: int | None = None) -> dict[str, float]:
    """Clopper-Pearson epsilon lower bound per pair (Bonferroni over ``n_pairs`` pairs)."""
    alpha = _bonferroni_alpha(n_pairs or len(pairs))
    cache: dict[bytes, np.ndarray] = {}
    out = {}
    for k, (name, (d1, d2)) in enumerate(pairs.items()):
        counts = []
        for j, d in enumerate((d1, d2)):
            key = d.tobytes()
            if key not in cache:
                cache[key] = select_counts(mech, d, runs, seed + 100 * k + j)
            counts.append(cache[key])
        out[name] = clopper_pearson_epsilon_lower_bound(counts[0], counts[1], runs, runs, alpha)
    return out


@pytest.mark.parametrize("kind", list(MECHANISMS))
def test_exact_losses_respect_epsilon_and_bug_exceeds_it(kind):
    cls = MECHANISMS[kind]
    good = cls(epsilon=EPS, sensitivity=SENS)
    buggy = cls(epsilon=EPS, sensitivity=SENS, monotonic=True)
    for name, (d1, d2) in PAIRS.items():
        assert exact_loss(good, d1, d2) <= EPS * (1 + 1e-12), name
    assert exact_loss(buggy, *PAIRS[CONTROL_PAIR]) > 1.7 * EPS
    # The worst pair is nearly tight for the correct mechanism (P&F reaches epsilon exactly).
    assert exact_loss(good, *PAIRS[CONTROL_PAIR]) > 0.8 * EPS


def _check(kind: str, pairs: dict, runs: int, seed: int) -> None:
    cls = MECHANISMS[kind]
    bounds = audit(cls(epsilon=EPS, sensitivity=SENS), pairs, runs, seed)
    worst = max(bounds, key=bounds.get)
    assert bounds[worst] <= EPS, f"{kind}: eps_LB = {bounds[worst]:.3f} > {EPS} on {worst}"
    # Not vacuous: on the tight pair the bound comes reasonably close to the truth.
    assert bounds[CONTROL_PAIR] > 0.5 * EPS
    control = audit(cls(epsilon=EPS, sensitivity=SENS, monotonic=True),
                    {CONTROL_PAIR: PAIRS[CONTROL_PAIR]}, runs, seed + 7, n_pairs=len(pairs))
    assert control[CONTROL_PAIR] > EPS, (
        f"{kind}: the 2-epsilon control was not caught (eps_LB = {control[CONTROL_PAIR]:.3f})")


@pytest.mark.parametrize("kind", list(MECHANISMS))
def test_empirical_epsilon_audit(kind):
    _check(kind, DEFAULT_PAIRS, RUNS_DEFAULT, seed=123)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(MECHANISMS))
def test_empirical_epsilon_audit_large(kind):
    _check(kind, PAIRS, RUNS_SLOW, seed=456)


def report(runs: int = RUNS_SLOW, seed: int = 456) -> None:  # pragma: no cover
    """Print the audit numbers over all pairs (``python -m tests.mechanisms.test_mechanisms_exponential_audit [runs]``)."""
    for kind, cls in MECHANISMS.items():
        good = cls(epsilon=EPS, sensitivity=SENS)
        buggy = cls(epsilon=EPS, sensitivity=SENS, monotonic=True)
        bounds = audit(good, PAIRS, runs, seed)
        control = audit(buggy, {CONTROL_PAIR: PAIRS[CONTROL_PAIR]}, runs, seed + 7,
                        n_pairs=len(PAIRS))
        for name, (d1, d2) in PAIRS.items():
            print(f"{kind} {name:26s} true={exact_loss(good, d1, d2):.3f} eps_LB={bounds[name]:.3f}")
        print(f"{kind} CONTROL {CONTROL_PAIR} true={exact_loss(buggy, *PAIRS[CONTROL_PAIR]):.3f} "
              f"eps_LB={control[CONTROL_PAIR]:.3f}")


if __name__ == "__main__":  # pragma: no cover
    import sys

    report(int(sys.argv[1]) if len(sys.argv) > 1 else RUNS_SLOW)
