"""An integer seed given to a top-k release warns that its noise can be removed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fastmwem.data import PrivacyLeakWarning
from fastmwem.mechanisms import topk
from fastmwem.mechanisms.seeding import SeededRunWarning, is_seed, warn_if_seeded

COUNTS = [3, 90, 7, 60, 1]
CLASSES = sorted(topk.METHODS.items())
FUNCTIONS = [topk.joint, topk.pnf_joint, topk.pruned_joint, topk.pnf_peel, topk.cdp_peel,
             topk.laplace_topk, topk.gamma_topk]


def _mechanism(cls):
    return cls(2, 1.0, 1e-6) if cls is topk.CDPPeel else cls(k=2, epsilon=1.0)


@pytest.mark.parametrize("name, cls", CLASSES)
def test_every_topk_method_warns_on_an_integer_seed(name, cls):
    with pytest.warns(PrivacyLeakWarning, match="integer seed") as record:
        _mechanism(cls).select(COUNTS, rng=7)
    assert len(record) == 1
    assert issubclass(record[0].category, SeededRunWarning)
    assert record[0].filename == __file__  # points at the caller, not into the library
    assert "7" not in str(record[0].message)  # the seed itself is never echoed


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
def test_every_topk_function_warns_on_an_integer_seed(function):
    with pytest.warns(SeededRunWarning):
        function(COUNTS, 2, epsilon=1.0, rng=np.int64(3))


@pytest.mark.parametrize("name, cls", CLASSES)
@pytest.mark.parametrize("rng", [None, "generator"])
def test_a_generator_or_os_entropy_does_not_warn(name, cls, rng):
    generator = np.random.default_rng(0) if rng == "generator" else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        _mechanism(cls).select(COUNTS, rng=generator)


def test_is_seed():
    assert is_seed(0) and is_seed(np.int32(5))
    assert not is_seed(None)
    assert not is_seed(np.random.default_rng(0))
    assert not is_seed(True)  # make_rng refuses bools with a TypeError instead


def test_warn_if_seeded_returns_whether_it_warned():
    with pytest.warns(SeededRunWarning, match="thing was run with an integer seed"):
        assert warn_if_seeded(1, "thing") is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_if_seeded(np.random.default_rng(1), "thing") is False
