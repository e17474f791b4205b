"""The default generator is a keyed ChaCha20 stream."""

import numpy as np
import pytest

import fastmwem.random
from fastmwem.random import make_rng, secure_rng
from fastmwem.testing import chi_square_pvalue


def test_default_generator_is_chacha20_and_fresh_each_time():
    a, b = make_rng(), make_rng()
    assert type(a.bit_generator).__name__ == "ChaCha"
    assert not np.array_equal(a.integers(0, 2**62, 8), b.integers(0, 2**62, 8))


def test_seeded_generator_is_reproducible_pcg64():
    assert type(make_rng(3).bit_generator).__name__ == "PCG64"


def _fixed_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # The ChaCha stream under a fixed key: the same construction as in real use, but the test
    # sees the same draws on every run instead of failing at random one run in 1 / alpha.
    monkeypatch.setattr(fastmwem.random.os, "urandom", lambda n: bytes(range(7, 7 + n)))


def test_fixed_key_makes_the_secure_stream_repeat(monkeypatch):
    _fixed_key(monkeypatch)
    assert np.array_equal(secure_rng().integers(0, 2**62, 8), secure_rng().integers(0, 2**62, 8))


def test_secure_stream_is_uniform(monkeypatch):
    # 100 categories x 100k draws, alpha = 1e-4 (as OpenDP's CSPRNG test).
    _fixed_key(monkeypatch)
    draws = secure_rng().integers(0, 100, size=100_000)
    assert chi_square_pvalue(np.bincount(draws, minlength=100), np.full(100, 0.01)) > 1e-4


def test_uniformity_check_has_power(monkeypatch):
    _fixed_key(monkeypatch)
    draws = secure_rng().integers(0, 99, size=100_000)  # category 99 never drawn
    assert chi_square_pvalue(np.bincount(draws, minlength=100), np.full(100, 0.01)) < 1e-4
