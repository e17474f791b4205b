"""Bad-input suite for the privacy core.

Every case must raise exactly one ValueError or TypeError whose message names the offending
argument, before any randomness or budget is used: the accountant passed in is unchanged and the
generator passed in has not advanced.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastmwem.accounting import Accountant, PureDP
from fastmwem.mechanisms import ExponentialMechanism, Geometric, Laplace, PermuteAndFlip

NAN, INF = math.nan, math.inf

BAD_EPSILON = [
    (0, ValueError), (-1, ValueError), (NAN, ValueError), (INF, ValueError), (-INF, ValueError),
    ("1", TypeError), (None, TypeError), (1j, TypeError), (True, TypeError),
]
BAD_SENSITIVITY = [(0, ValueError), (-1, ValueError), (NAN, ValueError), (INF, ValueError),
                   ("a", TypeError)]
CONSTRUCTORS = {
    "em": ExponentialMechanism, "pf": PermuteAndFlip, "laplace": Laplace, "geometric": Geometric,
}


def _raises(exc, name, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert type(info.value) is exc, f"expected {exc.__name__}, got {type(info.value).__name__}"
    assert name in str(info.value), f"message does not name {name!r}: {info.value}"


@pytest.mark.parametrize("kind", list(CONSTRUCTORS))
@pytest.mark.parametrize(("eps", "exc"), BAD_EPSILON, ids=[repr(e) for e, _ in BAD_EPSILON])
def test_bad_epsilon(kind, eps, exc):
    _raises(exc, "epsilon", CONSTRUCTORS[kind], epsilon=eps)


@pytest.mark.parametrize("kind", list(CONSTRUCTORS))
@pytest.mark.parametrize(("sens", "exc"), BAD_SENSITIVITY, ids=[repr(s) for s, _ in BAD_SENSITIVITY])
def test_bad_sensitivity(kind, sens, exc):
    if kind == "geometric" and isinstance(sens, float):
        exc = TypeError  # the geometric mechanism needs an integer sensitivity
    _raises(exc, "sensitivity", CONSTRUCTORS[kind], epsilon=1.0, sensitivity=sens)


def test_geometric_sensitivity_must_be_an_integer():
    _raises(TypeError, "sensitivity", Geometric, epsilon=1.0, sensitivity=1.5)
    _raises(TypeError, "sensitivity", Geometric, epsilon=1.0, sensitivity=True)


@pytest.mark.parametrize("kind", ["em", "pf"])
@pytest.mark.parametrize("mono", [1, 0, "True", None, 1.0])
def test_monotonic_must_be_bool(kind, mono):
    _raises(TypeError, "monotonic", CONSTRUCTORS[kind], epsilon=1.0, monotonic=mono)


BAD_SCORES = [
    ([], ValueError), ([NAN], ValueError), ([INF], ValueError), ([-INF], ValueError),
    ([1.0, NAN, 2.0], ValueError), ([[1.0, 2.0], [3.0]], ValueError),
    (["a", "b"], TypeError), ("abc", TypeError), ([[1.0, 2.0], [3.0, 4.0]], ValueError),
    (None, TypeError), (3.0, ValueError), ([1j, 2.0], TypeError), ([object()], TypeError),
    (np.array([], dtype=np.float64), ValueError), ([2**80, 1], TypeError),
]


def _fresh():
    acc = Accountant(epsilon=10)
    acc.compose(PureDP(1), label="earlier")
    return acc


def _assert_untouched(acc, rng, state):
    assert acc.spent() == PureDP(1)
    assert len(acc.ledger) == 1
    assert rng.bit_generator.state == state


@pytest.mark.parametrize("kind", ["em", "pf"])
@pytest.mark.parametrize(("scores", "exc"), BAD_SCORES,
                         ids=[f"scores{i}" for i in range(len(BAD_SCORES))])
def test_bad_scores(kind, scores, exc):
    mech = CONSTRUCTORS[kind](epsilon=1.0)
    acc, rng = _fresh(), np.random.default_rng(0)
    state = rng.bit_generator.state
    _raises(exc, "scores", mech.select, scores, rng=rng, accountant=acc)
    _assert_untouched(acc, rng, state)
    if kind == "pf" or exc is ValueError or scores is None:
        return
    _raises(exc, "scores", mech.probabilities, scores)


BAD_LAPLACE_VALUES = [
    (NAN, ValueError), (INF, ValueError), (-INF, ValueError), ([1.0, NAN], ValueError),
    ([[0.0, INF]], ValueError), ("1", TypeError), (["a"], TypeError), (None, TypeError),
    ([1j], TypeError), ([True, False], TypeError),
]


@pytest.mark.parametrize(("value", "exc"), BAD_LAPLACE_VALUES,
                         ids=[f"value{i}" for i in range(len(BAD_LAPLACE_VALUES))])
def test_bad_laplace_values(value, exc):
    acc, rng = _fresh(), np.random.default_rng(0)
    state = rng.bit_generator.state
    _raises(exc, "value", Laplace(epsilon=1.0).release, value, rng=rng, accountant=acc)
    _assert_untouched(acc, rng, state)


@pytest.mark.parametrize("value", [1.5, [1.0, 2.0], NAN, "1", None, [True]])
def test_bad_geometric_values(value):
    acc, rng = _fresh(), np.random.default_rng(0)
    state = rng.bit_generator.state
    _raises(TypeError, "value", Geometric(epsilon=1.0).release, value, rng=rng, accountant=acc)
    _assert_untouched(acc, rng, state)


BAD_RNG = [(1.5, TypeError), (np.random.RandomState(0), TypeError), ("seed", TypeError),
           (-1, ValueError), ([1, 2], TypeError), (True, TypeError)]


def _calls():
    return {
        "em": lambda **kw: ExponentialMechanism(epsilon=1.0).select([0.0, 1.0], **kw),
        "pf": lambda **kw: PermuteAndFlip(epsilon=1.0).select([0.0, 1.0], **kw),
        "laplace": lambda **kw: Laplace(epsilon=1.0).release(0.0, **kw),
        "geometric": lambda **kw: Geometric(epsilon=1.0).release(0, **kw),
    }


@pytest.mark.parametrize("kind", list(CONSTRUCTORS))
@pytest.mark.parametrize(("rng", "exc"), BAD_RNG, ids=[type(r).__name__ + str(i)
                                                       for i, (r, _) in enumerate(BAD_RNG)])
def test_bad_rng(kind, rng, exc):
    acc = _fresh()
    _raises(exc, "rng", _calls()[kind], rng=rng, accountant=acc)
    assert acc.spent() == PureDP(1) and len(acc.ledger) == 1


@pytest.mark.parametrize("kind", list(CONSTRUCTORS))
@pytest.mark.parametrize("bad", ["acc", 1.0, {"epsilon": 1}])
def test_bad_accountant(kind, bad):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    _raises(TypeError, "accountant", _calls()[kind], rng=rng, accountant=bad)
    assert rng.bit_generator.state == state


BAD_BUDGETS = [
    ({"epsilon": -1}, ValueError, "epsilon"),
    ({"epsilon": 0}, ValueError, "epsilon"),
    ({"epsilon": NAN}, ValueError, "epsilon"),
    ({"epsilon": INF}, ValueError, "epsilon"),
    ({"epsilon": "x"}, ValueError, "epsilon"),
    ({"epsilon": True}, TypeError, "epsilon"),
    ({"epsilon": 1j}, TypeError, "epsilon"),
    ({"epsilon": 1, "delta": 1}, ValueError, "delta"),
    ({"epsilon": 1, "delta": 1.5}, ValueError, "delta"),
    ({"epsilon": 1, "delta": -1e-6}, ValueError, "delta"),
    ({"epsilon": 1, "delta": NAN}, ValueError, "delta"),
    ({"epsilon": 1, "delta": None}, TypeError, "delta"),
    ({"rho": -1}, ValueError, "rho"),
    ({"rho": NAN}, ValueError, "rho"),
    ({"rho": 0}, ValueError, "rho"),
    ({"rho": 1, "epsilon": 1}, ValueError, "rho"),
    ({}, ValueError, "budget"),
    ({"delta": 1e-6}, ValueError, "epsilon"),
    ({"epsilon": 1, "composition": "renyi"}, ValueError, "composition"),
    ({"epsilon": 1, "composition": "zcdp"}, ValueError, "delta"),
]


@pytest.mark.parametrize(("kwargs", "exc", "name"), BAD_BUDGETS,
                         ids=[f"budget{i}" for i in range(len(BAD_BUDGETS))])
def test_bad_accountant_budgets(kwargs, exc, name):
    _raises(exc, name, Accountant, **kwargs)



@pytest.mark.parametrize("call", [
    lambda acc, rng: ExponentialMechanism(epsilon=1.0).select([2**80, 1], rng=rng, accountant=acc),
    lambda acc, rng: PermuteAndFlip(epsilon=1.0).select([2**80, 1], rng=rng, accountant=acc),
    lambda acc, rng: Laplace(epsilon=1.0).release([1, 2**70], rng=rng, accountant=acc),
], ids=["em", "pf", "laplace"])
def test_python_integers_beyond_int64_are_named(call):
    # numpy holds them as objects; "got dtype object" did not say what was wrong.
    acc, rng = _fresh(), np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(TypeError, match="beyond the 64-bit integer range"):
        call(acc, rng)
    _assert_untouched(acc, rng, state)


@pytest.mark.parametrize("value", [2**70, [1, -(2**64)], np.array([2**63], dtype=object)])
def test_geometric_refuses_python_integers_beyond_its_bound(value):
    acc, rng = _fresh(), np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="must lie within"):
        Geometric(epsilon=1.0).release(value, rng=rng, accountant=acc)
    _assert_untouched(acc, rng, state)
