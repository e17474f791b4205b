"""An integer seed or a caller's generator given to a top-k release warns; rng_provenance."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from randomgen import ChaCha

from fastmwem.data import PrivacyLeakWarning
from fastmwem.mechanisms import topk
from fastmwem.mechanisms.seeding import (
    CallerRNGWarning,
    SeededRunWarning,
    check_rng,
    is_seed,
    rng_provenance,
    warn_if_seeded,
)
from fastmwem.random import make_rng, secure_rng

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
@pytest.mark.parametrize("rng", [None, "secure"])
def test_os_entropy_does_not_warn(name, cls, rng):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        _mechanism(cls).select(COUNTS, rng=secure_rng() if rng == "secure" else None)


def _chacha_with_a_known_key():
    return np.random.Generator(ChaCha(key=np.arange(4, dtype=np.uint64), counter=0, rounds=20))


@pytest.mark.parametrize("name, cls", CLASSES)
@pytest.mark.parametrize("make", [lambda: np.random.default_rng(5), _chacha_with_a_known_key],
                         ids=["pcg64", "chacha"])
def test_every_topk_method_warns_on_a_callers_generator(name, cls, make):
    with pytest.warns(CallerRNGWarning, match="Generator the caller made") as record:
        _mechanism(cls).select(COUNTS, rng=make())
    assert len(record) == 1 and issubclass(record[0].category, PrivacyLeakWarning)
    assert record[0].filename == __file__


def test_is_seed():
    assert is_seed(0) and is_seed(np.int32(5))
    assert not is_seed(None)
    assert not is_seed(np.random.default_rng(0))
    assert not is_seed(True)  # make_rng refuses bools with a TypeError instead


def test_warn_if_seeded_returns_whether_it_was_seeded():
    with pytest.warns(SeededRunWarning, match="thing was run with an integer seed"):
        assert warn_if_seeded(1, "thing") is True
    with pytest.warns(CallerRNGWarning, match="thing drew its noise"):
        assert warn_if_seeded(np.random.default_rng(1), "thing") is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_if_seeded(secure_rng(), "thing") is False


def _forged_secure_generator():
    # the class secure_rng() uses, over a key the caller knows: still the caller's generator
    return type(secure_rng())(ChaCha(key=np.arange(4, dtype=np.uint64), counter=0, rounds=20))


@pytest.mark.parametrize(("make", "expected"), [
    (lambda: None, ()),
    (secure_rng, ()),
    (lambda: make_rng(None), ()),
    (lambda: 7, ("seeded",)),
    (lambda: np.uint8(7), ("seeded",)),
    (lambda: make_rng(7), ("seeded",)),
    (lambda: np.random.default_rng(7), ("caller_rng",)),
    (lambda: np.random.Generator(np.random.PCG64(7)), ("caller_rng",)),
    (_chacha_with_a_known_key, ("caller_rng",)),
    (_forged_secure_generator, ("caller_rng",)),
    (lambda: copy.deepcopy(secure_rng()), ("caller_rng",)),  # a copy's state is known to two
    (lambda: secure_rng().spawn(1)[0], ("caller_rng",)),
], ids=["none", "secure", "make_rng-none", "int", "numpy-int", "make_rng-int", "default_rng",
        "pcg64", "chacha-known-key", "forged-class", "copy", "spawned"])
def test_rng_provenance(make, expected):
    assert rng_provenance(make()) == expected


def test_check_rng_warns_once_for_a_generator_handed_on():
    generator, other = np.random.default_rng(1), np.random.default_rng(2)
    with pytest.warns(CallerRNGWarning) as record:
        for rng in (generator, generator, other, generator):
            assert check_rng(rng, "thing") == ("caller_rng",)
    assert len(record) == 3  # not twice in a row for one generator
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_rng(None, "thing") == check_rng(secure_rng(), "thing") == ()
        # what a release hands on after warning about the seed it was given
        assert check_rng(make_rng(3), "thing") == ("seeded",)
