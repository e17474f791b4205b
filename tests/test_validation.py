"""Shared argument checks (fastmwem._validation): epsilon, noise scales, the memory limit, scores."""

import sys

import numpy as np
import pytest

from fastmwem._validation import (
    MAX_NOISE_SCALE,
    MEMORY_LIMIT_ENV,
    ResourceLimitError,
    check_epsilon,
    check_memory,
    check_noise_scale,
    check_scores,
    memory_limit,
)
from fastmwem.accounting import Accountant
from fastmwem.mechanisms import ExponentialMechanism, PermuteAndFlip


@pytest.mark.parametrize("eps", [1e-310, 5e-324, sys.float_info.min / 2])
def test_subnormal_epsilon_is_refused(eps):
    with pytest.raises(ValueError, match="smallest normal float"):
        check_epsilon(eps)


@pytest.mark.parametrize("eps", [sys.float_info.min, 1e-300, 1.0, 1e300])
def test_normal_epsilon_is_accepted(eps):
    assert check_epsilon(eps) == eps


def test_check_epsilon_names_the_argument():
    with pytest.raises(ValueError, match="local_epsilon"):
        check_epsilon(1e-320, "local_epsilon")


@pytest.mark.parametrize("numerator, epsilon", [
    (1.0, 1e-307), (1e10, 1e-300), (1.0, 0.0), (1.0, 5e-324), (float("inf"), 1.0),
])
def test_noise_scale_must_be_finite_with_room_for_the_noise(numerator, epsilon):
    with pytest.raises(ValueError, match="Laplace: the noise scale"):
        check_noise_scale(numerator, epsilon, "Laplace")


def test_noise_scale_is_returned():
    assert check_noise_scale(2.0, 0.5, "x") == 4.0
    assert check_noise_scale(MAX_NOISE_SCALE, 1.0, "x") == MAX_NOISE_SCALE


def test_memory_limit_defaults_to_the_machine(monkeypatch):
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    assert memory_limit() > 2**20


@pytest.mark.parametrize("text, expected", [
    ("4096", 4096), ("4K", 4096), ("2G", 2 * 2**30), ("1.5 MB", 3 * 2**19), ("1e6", 10**6),
    ("3gib", 3 * 2**30),
])
def test_memory_limit_override(monkeypatch, text, expected):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, text)
    assert memory_limit() == expected


@pytest.mark.parametrize("text", ["lots", "-1", "0", "G", "1e400", "2X"])
def test_bad_memory_limit_override_is_named(monkeypatch, text):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, text)
    with pytest.raises(ValueError, match=MEMORY_LIMIT_ENV):
        memory_limit()


def test_check_memory_refuses_with_the_figures(monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1M")
    check_memory(2**20, "a small job")
    with pytest.raises(ResourceLimitError, match=r"a big job would need about 3\.0 MB of memory, "
                                                 r"more than \$FASTMWEM_MEMORY_LIMIT \(1\.0 MB\)"):
        check_memory(3 * 2**20, "a big job")
    with pytest.raises(ResourceLimitError, match=r"the memory limit \(100 bytes\)"):
        check_memory(200, "a job", limit=100)
    assert issubclass(ResourceLimitError, ValueError)  # the CLI reports it as one line


@pytest.mark.parametrize("scores", [[True, False], np.array([True, False, True]),
                                    np.zeros(3, dtype=bool)])
def test_boolean_scores_are_refused(scores):
    with pytest.raises(TypeError, match="scores must hold real numbers, not booleans"):
        check_scores(scores)


@pytest.mark.parametrize("cls", [ExponentialMechanism, PermuteAndFlip])
def test_selection_refuses_boolean_scores_before_the_charge(cls):
    accountant = Accountant(epsilon=1.0)
    with pytest.raises(TypeError, match="not booleans"):
        cls(epsilon=0.5).select(np.array([True, False]), rng=0, accountant=accountant)
    assert accountant.ledger == ()


def test_integer_and_float_scores_still_pass():
    np.testing.assert_array_equal(check_scores(np.array([1, 2], dtype=np.int8)), [1.0, 2.0])
    np.testing.assert_array_equal(check_scores([0.5, -1.0]), [0.5, -1.0])
