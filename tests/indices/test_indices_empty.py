"""An index before its first ``add``: scoring no keys answers with no scores, as for any index."""

from __future__ import annotations

import numpy as np
import pytest

from fastmwem.indices import make_index


@pytest.mark.parametrize("spec", ["flat", "bitpacked", "faiss:Flat", "hnswlib"])
def test_scoring_no_keys_of_an_empty_index(spec):
    # The flat index and the faiss and hnswlib adapters used to fail on their missing key store.
    index = make_index(spec, dimension=3)
    scores = index.score(np.empty(0, dtype=np.int64), [1.0, 2.0, -1.0])
    assert scores.shape == (0,) and scores.dtype == np.float64
    with pytest.raises(ValueError):
        index.score([0], [1.0, 2.0, -1.0])
