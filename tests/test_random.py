"""The default generator is a keyed ChaCha20 stream (testing-and-audit.md check 15)."""

import numpy as np

from fastmwem.random import make_rng, secure_rng
from fastmwem.testing import chi_square_pvalue


def test_default_generator_is_chacha20_and_fresh_each_time():
    a, b = make_rng(), make_rng()
    assert type(a.bit_generator).__name__ == "ChaCha"
    assert not np.array_equal(a.integers(0, 2**62, 8), b.integers(0, 2**62, 8))


def test_seeded_generator_is_reproducible_pcg64():
    assert type(make_rng(3).bit_generator).__name__ == "PCG64"


def test_secure_stream_is_uniform():
    # 100 categories x 100k draws, alpha = 1e-4 (as OpenDP's CSPRNG test).
    draws = secure_rng().integers(0, 100, size=100_000)
    assert chi_square_pvalue(np.bincount(draws, minlength=100), np.full(100, 0.01)) > 1e-4


def test_uniformity_check_has_power():
    draws = secure_rng().integers(0, 99, size=100_000)  # category 99 never drawn
    assert chi_square_pvalue(np.bincount(draws, minlength=100), np.full(100, 0.01)) < 1e-4
