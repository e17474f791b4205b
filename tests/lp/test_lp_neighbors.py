"""The neighbouring relations as objects: ``neighbors=ScalarNeighbors(...)`` and
``neighbors=ConstraintNeighbors(...)`` give exactly what the strings with loose keywords give,
their fields are checked when they are built (before any charge), and an object never goes with
the loose keywords."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import fastmwem
from fastmwem.accounting import Accountant
from fastmwem.lp import ConstraintNeighbors, ScalarNeighbors, private_linprog
from tests.lp._problems import packing_lp, simplex_lp

_rng = np.random.default_rng(0)
A, B, _ = simplex_lp(_rng, 60, 5)
C = _rng.random(5)
PC, PA, PB, _PX = packing_lp(np.random.default_rng(1), 60, 5)
P_WIDTH = 1.01 * float(np.abs(PA / -PC - PB[:, None]).max())  # at the largest target z = 1

SCALAR = dict(epsilon=5.0, delta=1e-6, width=2.0, rounds=40, probes=2)
DENSE = dict(epsilon=20.0, delta=1e-6, width=P_WIDTH, objective_range=(-1.0, 0.0), rounds=40,
             probes=2)
SCALAR_KW = dict(sensitivity=1e-3)
DENSE_KW = dict(density=5, entry_bound=1.0, max_constraints=60)


def _scalar(acc: Accountant | None = None, seed: object = 3, **kw):
    rng = np.random.default_rng(seed) if isinstance(seed, int) else seed
    return private_linprog(C, A, B, rng=rng, accountant=acc, **SCALAR, **kw)


def _dense(acc: Accountant | None = None, seed: object = 3, **kw):
    rng = np.random.default_rng(seed) if isinstance(seed, int) else seed
    return private_linprog(PC, PA, PB, rng=rng, accountant=acc, **DENSE, **kw)


def _assert_refused(call, match: str, exc: type[Exception] = ValueError) -> None:
    acc = Accountant(epsilon=100.0, delta=1e-3)
    generator = np.random.default_rng(1)
    state = generator.bit_generator.state
    with pytest.raises(exc, match=match):
        call(acc, generator)
    assert acc.ledger == (), "budget was spent"
    assert generator.bit_generator.state == state, "randomness was drawn"


# -- the object form gives what the string form gives ----------------------------------------

@pytest.mark.parametrize("solve, relation, loose, obj", [
    (_scalar, "scalar", SCALAR_KW, ScalarNeighbors(1e-3)),
    (_dense, "constraint", DENSE_KW, ConstraintNeighbors(5, 1.0, 60)),
])
def test_object_form_equals_string_form(solve, relation, loose, obj):
    acc_s, acc_o = Accountant(epsilon=50.0, delta=1e-4), Accountant(epsilon=50.0, delta=1e-4)
    by_string = solve(acc_s, neighbors=relation, **loose)
    by_object = solve(acc_o, neighbors=obj)
    np.testing.assert_array_equal(by_string.x, by_object.x)
    assert by_string.ledger == by_object.ledger and acc_s.ledger == acc_o.ledger
    assert by_string.trace == by_object.trace and by_string.probes == by_object.probes
    assert by_string.report() == by_object.report()
    assert by_object.setup["neighbors"] == obj.name == relation


def test_the_default_relation_is_scalar():
    np.testing.assert_array_equal(_scalar(**SCALAR_KW).x,
                                  _scalar(neighbors=ScalarNeighbors(1e-3)).x)


def test_the_report_keeps_its_format():
    scalar = _scalar(neighbors=ScalarNeighbors(1e-3)).setup
    assert list(scalar)[:7] == ["neighbors", "selection", "index", "rounds", "width",
                                "sensitivity", "learning_rate"]
    assert scalar["neighbors"] == "scalar" and scalar["sensitivity"] == 1e-3
    assert type(scalar["sensitivity"]) is float
    assert scalar["learning_rate"] == math.sqrt(math.log(5) / 40)
    dense = _dense(neighbors=ConstraintNeighbors(np.int64(5), 1, np.int64(60))).setup
    assert list(dense)[:9] == ["neighbors", "selection", "index", "rounds", "width", "density",
                               "entry_bound", "max_constraints", "learning_rate"]
    assert (dense["neighbors"], dense["density"], dense["entry_bound"],
            dense["max_constraints"]) == ("constraint", 5.0, 1.0, 60)
    assert [type(dense[k]) for k in ("density", "entry_bound", "max_constraints")] == [
        float, float, int]


# -- the objects -------------------------------------------------------------------------------

def test_objects_are_frozen_public_and_normalised():
    s, c = ScalarNeighbors(np.float32(0.5)), ConstraintNeighbors(4, 1, 40)
    assert (s.name, c.name) == ("scalar", "constraint")
    assert type(s.sensitivity) is float and (c.density, c.entry_bound) == (4.0, 1.0)
    assert c == ConstraintNeighbors(4.0, 1.0, np.int64(40))
    assert "inf-norm" in s.describe() and "0.5" in s.describe()
    assert "added or removed" in c.describe() and "40" in c.describe()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.sensitivity = 1.0  # type: ignore[misc]
    assert fastmwem.ScalarNeighbors is ScalarNeighbors
    assert fastmwem.ConstraintNeighbors is ConstraintNeighbors
    assert {"ScalarNeighbors", "ConstraintNeighbors"} <= set(fastmwem.__all__)


BAD_FIELDS = {
    "sensitivity missing": ("scalar", dict(sensitivity=None), "sensitivity is required"),
    "sensitivity zero": ("scalar", dict(sensitivity=0.0), "sensitivity must be > 0"),
    "sensitivity nan": ("scalar", dict(sensitivity=float("nan")), "sensitivity"),
    "sensitivity inf": ("scalar", dict(sensitivity=float("inf")), "sensitivity must be finite"),
    "sensitivity a string": ("scalar", dict(sensitivity="0.1"), "sensitivity", TypeError),
    "density missing": ("constraint", dict(density=None), "density is required"),
    "density below 1": ("constraint", dict(density=0.5), r"density must lie in \[1, m\]"),
    "density negative": ("constraint", dict(density=-2), "density must be > 0"),
    "entry bound missing": ("constraint", dict(entry_bound=None), "entry_bound is required"),
    "entry bound zero": ("constraint", dict(entry_bound=0.0), "entry_bound must be > 0"),
    "max constraints missing": ("constraint", dict(max_constraints=None),
                                "max_constraints is required"),
    "max constraints zero": ("constraint", dict(max_constraints=0), "max_constraints must be"),
    "max constraints a float": ("constraint", dict(max_constraints=40.0), "max_constraints",
                                TypeError),
}


def _bad(name: str) -> tuple[str, dict, str, type[Exception]]:
    relation, changes, match, *exc = BAD_FIELDS[name]
    fields = dict(SCALAR_KW if relation == "scalar" else DENSE_KW, **changes)
    return relation, fields, match, exc[0] if exc else ValueError


@pytest.mark.parametrize("name", list(BAD_FIELDS))
def test_bad_fields_are_refused_when_built(name):
    relation, fields, match, exc = _bad(name)
    cls = ScalarNeighbors if relation == "scalar" else ConstraintNeighbors
    with pytest.raises(exc, match=match):
        cls(**fields)


@pytest.mark.parametrize("name", list(BAD_FIELDS))
def test_bad_fields_in_the_string_form_are_refused_before_the_charge(name):
    relation, fields, match, exc = _bad(name)
    solve = _scalar if relation == "scalar" else _dense
    _assert_refused(lambda acc, g: solve(acc, g, neighbors=relation, **fields), match, exc)


DATA_CHECKS = {
    "density above the rows": (ConstraintNeighbors(61, 1.0, 80), r"density must lie in \[1, m\]"),
    "max constraints below the rows": (ConstraintNeighbors(5, 1.0, 59), "max_constraints = 59"),
    "entries above the bound": (ConstraintNeighbors(5, 0.5, 60), "entry_bound"),
}


@pytest.mark.parametrize("name", list(DATA_CHECKS))
def test_object_fields_checked_against_the_data_before_the_charge(name):
    relation, match = DATA_CHECKS[name]
    _assert_refused(lambda acc, g: _dense(acc, g, neighbors=relation), match)


def test_the_scalar_width_is_still_checked_with_an_object():
    _assert_refused(lambda acc, g: private_linprog(
        C, A, B, rng=g, accountant=acc, neighbors=ScalarNeighbors(1e-3),
        **dict(SCALAR, width=0.5)), "width")


# -- an object goes without the loose keywords ----------------------------------------------

MIXED = {
    "scalar object and sensitivity": (_scalar, ScalarNeighbors(1e-3), dict(sensitivity=1e-3),
                                      "sensitivity= is given twice.*ScalarNeighbors"),
    "scalar object and density": (_scalar, ScalarNeighbors(1e-3), dict(density=5),
                                  "density does not apply to neighbors='scalar'"),
    "constraint object and density": (_dense, ConstraintNeighbors(5, 1.0, 60), dict(density=5),
                                      "density= is given twice.*ConstraintNeighbors"),
    "constraint object and max_constraints": (
        _dense, ConstraintNeighbors(5, 1.0, 60), dict(max_constraints=60),
        "max_constraints= is given twice"),
    "constraint object and sensitivity": (_dense, ConstraintNeighbors(5, 1.0, 60),
                                          dict(sensitivity=1e-3),
                                          "sensitivity does not apply to neighbors='constraint'"),
}


@pytest.mark.parametrize("name", list(MIXED))
def test_an_object_with_loose_keywords_is_refused(name):
    solve, relation, loose, match = MIXED[name]
    _assert_refused(lambda acc, g: solve(acc, g, neighbors=relation, **loose), match)


def test_the_deprecated_alias_takes_an_object_too():
    with pytest.warns(DeprecationWarning, match="privacy= is deprecated"):
        old = _scalar(privacy=ScalarNeighbors(1e-3))
    np.testing.assert_array_equal(old.x, _scalar(neighbors=ScalarNeighbors(1e-3)).x)
    with pytest.raises(ValueError, match="give neighbors= only"), \
            pytest.warns(DeprecationWarning):
        _scalar(privacy="constraint", neighbors=ScalarNeighbors(1e-3))


# -- the string form is unchanged ------------------------------------------------------------

STRING_MESSAGES = {
    "no sensitivity": (_scalar, dict(neighbors="scalar"),
                       "sensitivity is required for neighbors='scalar': the public bound on "
                       r"\|b - b'\|_inf between neighbouring datasets"),
    "density for scalar": (_scalar, dict(sensitivity=1e-3, density=5),
                           "density does not apply to neighbors='scalar'"),
    "entry bound for scalar": (_scalar, dict(sensitivity=1e-3, entry_bound=1.0),
                               "entry_bound does not apply to neighbors='scalar'"),
    "sensitivity for constraint": (_dense, dict(DENSE_KW, neighbors="constraint",
                                                sensitivity=1e-3),
                                   "sensitivity does not apply to neighbors='constraint'"),
    "no max constraints": (_dense, dict(neighbors="constraint", density=5, entry_bound=1.0),
                           r"max_constraints is required for neighbors='constraint' \(a public "
                           r"parameter\)"),
    "unknown relation": (_scalar, dict(neighbors="rows", sensitivity=1e-3),
                         "neighbors must be one of 'scalar', 'constraint'; got 'rows'"),
    "lower bounds under constraint": (
        lambda acc, g, **kw: private_linprog(PC, PA, PB, A_lb=PA, b_lb=PB, rng=g, accountant=acc,
                                             **DENSE, **kw),
        dict(DENSE_KW, neighbors="constraint"), "A_lb and b_lb do not apply"),
}


@pytest.mark.parametrize("name", list(STRING_MESSAGES))
def test_string_form_messages_unchanged(name):
    solve, kw, match = STRING_MESSAGES[name]
    _assert_refused(lambda acc, g: solve(acc, g, **kw), "^" + match)


def test_a_value_neither_string_nor_object_names_both_forms():
    _assert_refused(lambda acc, g: _scalar(acc, g, neighbors=ScalarNeighbors, **SCALAR_KW),
                    "^neighbors must be one of 'scalar', 'constraint', or a ScalarNeighbors or "
                    "ConstraintNeighbors object")


def test_string_form_runs_as_before():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        first = _scalar(neighbors="scalar", **SCALAR_KW)
    again = _scalar(neighbors="scalar", **SCALAR_KW)
    np.testing.assert_array_equal(first.x, again.x)
    assert first.ledger == again.ledger
    assert first.setup["sensitivity"] == 1e-3 and "privacy" not in first.setup
