"""PMWSession's refusals name public bounds only, never the private record count."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.data import Domain
from fastmwem.release.pmw import MAX_RECORDS, PMWSession


class _HugeDataset:
    """A dataset claiming more records than a session handles (nothing else is read)."""

    domain = Domain(["a"], [2])

    def __len__(self) -> int:
        return MAX_RECORDS + 12345

    def histogram(self) -> np.ndarray:
        raise AssertionError("the data must not be read")


def test_too_many_records_is_refused_without_the_count():
    with pytest.raises(ValueError, match="at most 2\\*\\*40 records") as info:
        PMWSession(_HugeDataset(), epsilon=1.0, alpha=0.1, max_updates=2, rng=0)
    assert str(MAX_RECORDS + 12345) not in str(info.value)
