"""The tight zCDP-to-(epsilon, delta) conversion (arXiv:2004.00010, Cor. 13)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from fastmwem.accounting import Accountant, approx_dp_to_zcdp_budget, zcdp_to_approx_dp


@given(st.floats(1e-3, 20), st.floats(1e-12, 0.5))
def test_tight_budget_converts_back_within_epsilon_and_beats_bun_steinke(epsilon, delta):
    rho = approx_dp_to_zcdp_budget(epsilon, delta, conversion="tight")
    assert zcdp_to_approx_dp(rho, delta, conversion="tight") <= epsilon
    assert rho >= approx_dp_to_zcdp_budget(epsilon, delta)


def test_tight_delta_is_the_published_bound():
    # At its rho, some Renyi order gives delta <= 1e-9 by the corollary's formula.
    eps, delta = 1.0, 1e-9
    rho = float(approx_dp_to_zcdp_budget(eps, delta, conversion="tight"))

    def log_delta(u: float) -> float:
        a = 1 + math.exp(u)
        return (a - 1) * (a * rho - eps) + a * math.log1p(-1 / a) - math.log(a - 1)

    best = minimize_scalar(log_delta, bounds=(-10, 10), method="bounded",
                           options={"xatol": 1e-12}).fun
    assert best <= math.log(delta)
    assert best > math.log(delta) - 1e-6  # and no looser than needed
    assert 1.26 < rho / float(approx_dp_to_zcdp_budget(eps, delta)) < 1.28


def test_unknown_conversion_is_refused():
    with pytest.raises(ValueError, match="conversion"):
        approx_dp_to_zcdp_budget(1, 1e-9, conversion="loose")
    with pytest.raises(ValueError, match="conversion"):
        zcdp_to_approx_dp(0.1, 1e-9, conversion="loose")


def test_accountant_holds_a_tight_budget():
    rho = approx_dp_to_zcdp_budget(0.5, 1e-6, conversion="tight")
    assert Accountant(rho=rho).budget().rho == rho
