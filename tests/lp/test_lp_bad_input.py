"""Bad input to the LP solvers: a ValueError (TypeError for a wrong type) naming the problem,
raised before any randomness is drawn or any budget is spent."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.accounting import Accountant
from fastmwem.lp import dense_feasibility, private_linprog, scalar_feasibility
from tests.lp._problems import packing_lp, simplex_lp

_rng = np.random.default_rng(0)
A, B, _ = simplex_lp(_rng, 40, 5)
C = _rng.random(5)
PC, PA, PB, PX = packing_lp(_rng, 40, 5)
P_LO = 2 * float(PC @ PX) - 1.0
P_WIDTH = 1.01 * float(np.abs(-P_LO * PA / -PC - PB[:, None]).max())

SCALAR = dict(epsilon=1.0, delta=1e-6, sensitivity=0.01, width=2.0, rounds=20)
DENSE = dict(neighbors="constraint", epsilon=1.0, delta=1e-6, density=4, entry_bound=1.0,
             max_constraints=40, width=P_WIDTH, objective_range=(P_LO, 0.0), rounds=20)


def _with(base: dict, **changes) -> dict:
    out = dict(base)
    for key, value in changes.items():
        if value is _DROP:
            out.pop(key)
        else:
            out[key] = value
    return out


_DROP = object()


def _nan_at(arr: np.ndarray, pos, value=np.nan) -> np.ndarray:
    out = np.array(arr, dtype=np.float64)
    out[pos] = value
    return out


def _assert_refused(call, match: str, exc=ValueError) -> None:
    acc = Accountant(epsilon=100.0, delta=1e-3)
    generator = np.random.default_rng(1)
    state = generator.bit_generator.state
    with pytest.raises(exc, match=match):
        call(acc, generator)
    assert acc.ledger == (), "budget was spent"
    assert generator.bit_generator.state == state, "randomness was drawn"


SCALAR_CASES = {
    "A not 2-D": (dict(A_ub=A[0]), "A_ub"),
    "b wrong length": (dict(b_ub=B[:-1]), "b_ub"),
    "c wrong length": (dict(c=C[:-1]), "A_ub"),
    "A_lb without b_lb": (dict(A_lb=A), "b_lb"),
    "A_lb wrong columns": (dict(A_lb=A[:, :3], b_lb=B), "A_lb"),
    "no constraints": (dict(A_ub=None, b_ub=None), "constraints"),
    "nan in A": (dict(A_ub=_nan_at(A, (3, 2))), "A_ub must be finite"),
    "inf in A": (dict(A_ub=_nan_at(A, (0, 0), np.inf)), "A_ub"),
    "nan in b": (dict(b_ub=_nan_at(B, 7)), "b_ub must be finite"),
    "-inf in b": (dict(b_ub=_nan_at(B, 1, -np.inf)), "b_ub"),
    "nan in c": (dict(c=_nan_at(C, 4)), "c must be finite"),
    "string A": (dict(A_ub="matrix"), "A_ub", TypeError),
    "width below the data": (dict(width=0.5), "width"),
    "no width": (dict(width=None), "width"),
    "no sensitivity": (dict(sensitivity=None), "sensitivity"),
    "zero sensitivity": (dict(sensitivity=0.0), "sensitivity"),
    "epsilon zero": (dict(epsilon=0.0), "epsilon"),
    "epsilon negative": (dict(epsilon=-1.0), "epsilon"),
    "epsilon inf": (dict(epsilon=np.inf), "epsilon"),
    "epsilon nan": (dict(epsilon=np.nan), "epsilon"),
    "delta negative": (dict(delta=-0.1), "delta"),
    "delta one": (dict(delta=1.0), "delta"),
    "delta zero with advanced": (dict(delta=0.0), "delta"),
    "rounds zero": (dict(rounds=0), "rounds"),
    "rounds below ln d": (dict(rounds=1), "rounds"),
    "selection unknown": (dict(selection="fast"), "selection"),
    "index without lazy": (dict(index="flat"), "index"),
    "bitpacked index": (dict(selection="lazy", index="bitpacked"), "bitpacked"),
    "neighbors unknown": (dict(neighbors="both"), "neighbors"),
    "density for scalar": (dict(density=3), "density"),
    "empty objective range": (dict(objective_range=(1.0, 0.5)), "objective_range"),
    "objective range not a pair": (dict(objective_range=(1.0,)), "objective_range", TypeError),
    "probes negative": (dict(probes=-1), "probes"),
    "beta zero": (dict(beta=0.0), "beta"),
    "test_fraction one": (dict(test_fraction=1.0), "test_fraction"),
    "composition unknown": (dict(composition="rdp"), "composition"),
    "tolerance nan": (dict(tolerance=np.nan), "tolerance"),
    "track not a bool": (dict(track="yes"), "track", TypeError),
    "epsilon too small for the rounds": (dict(epsilon=1e-306, composition="basic", delta=0.0),
                                         "too small"),
}


@pytest.mark.parametrize("name", list(SCALAR_CASES))
def test_scalar_bad_input(name):
    changes, match, *exc = SCALAR_CASES[name]
    args = dict(c=C, A_ub=A, b_ub=B)
    for key in ("c", "A_ub", "b_ub"):
        if key in changes:
            args[key] = changes.pop(key)

    def call(acc, generator):
        private_linprog(args["c"], args["A_ub"], args["b_ub"], accountant=acc, rng=generator,
                        **_with(SCALAR, **changes))
    _assert_refused(call, match, *(exc or [ValueError]))


@pytest.mark.parametrize("spec", ["hnswlib", "faiss:HNSW8", "faiss:IVF4,Flat"])
def test_approximate_indices_are_refused_in_the_private_path(spec):
    pytest.importorskip(spec.split(":")[0])

    def call(acc, generator):
        private_linprog(C, A, B, selection="lazy", index=spec, accountant=acc, rng=generator,
                        **SCALAR)
    _assert_refused(call, "approximate")


def test_accountant_of_the_wrong_kind_is_refused():
    def pure(acc, generator):
        private_linprog(C, A, B, accountant=Accountant(epsilon=5.0), rng=generator, **SCALAR)
    _assert_refused(pure, "pure DP")

    def not_an_accountant(acc, generator):
        private_linprog(C, A, B, accountant="budget", rng=generator, **SCALAR)
    _assert_refused(not_an_accountant, "accountant", TypeError)


DENSE_CASES = {
    "density below 1": (dict(density=0.5), "density"),
    "density above m": (dict(density=41), "density"),
    "no density": (dict(density=None), "density"),
    "no entry bound": (dict(entry_bound=None), "entry_bound"),
    "no max constraints": (dict(max_constraints=None), "max_constraints"),
    "max constraints below m": (dict(max_constraints=39), "max_constraints"),
    "entries above the bound": (dict(entry_bound=0.5), "entry_bound"),
    "width below the data": (dict(width=P_WIDTH / 2), "width"),
    "no objective range": (dict(objective_range=None), "objective_range"),
    "objective range above 0": (dict(objective_range=(-1.0, 0.5)), "objective_range"),
    "rounds below ln(M/s)": (dict(rounds=1, max_constraints=4000), "rounds"),
    "probes zero": (dict(probes=0), "probes"),
    "warm index": (dict(selection="lazy", index="warm"), "warm"),
    "sensitivity for constraint": (dict(sensitivity=0.1), "sensitivity"),
    "A_lb for constraint": (dict(A_lb=PA, b_lb=PB), "A_lb"),
    "epsilon nan": (dict(epsilon=np.nan), "epsilon"),
    "test epsilon below the geometric floor": (dict(epsilon=1e-12), "too small"),
}


@pytest.mark.parametrize("name", list(DENSE_CASES))
def test_constraint_bad_input(name):
    changes, match = DENSE_CASES[name]

    def call(acc, generator):
        private_linprog(PC, PA, PB, accountant=acc, rng=generator, **_with(DENSE, **changes))
    _assert_refused(call, match)


@pytest.mark.parametrize("data,match", [
    ((np.abs(PC), PA, PB), "c must be < 0"),
    ((PC, -PA, PB), "A_ub entries"),
    ((PC, PA, -PB), "b_ub must be >= 0"),
])
def test_constraint_refuses_a_non_packing_lp(data, match):
    c, a, b = data

    def call(acc, generator):
        private_linprog(c, a, b, accountant=acc, rng=generator, **DENSE)
    _assert_refused(call, match)


def test_feasibility_solvers_refuse_bad_input():
    def scalar(acc, generator):
        scalar_feasibility(A, B, accountant=acc, rng=generator, **_with(SCALAR, width=0.1))
    _assert_refused(scalar, "width")
    kw = {k: v for k, v in DENSE.items() if k not in ("neighbors", "objective_range")}

    def target_not_negative(acc, generator):
        dense_feasibility(PC, PA, PB, target=0.0, accountant=acc, rng=generator, **kw)
    _assert_refused(target_not_negative, "target")

    def density(acc, generator):
        dense_feasibility(PC, PA, PB, target=-0.5, accountant=acc, rng=generator,
                          **_with(kw, density=100))
    _assert_refused(density, "density")
