"""numba's on-disk cache is optional: fastmwem imports and compiles where it cannot write one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fastmwem

pytest.importorskip("numba")

_SCRIPT = """
import numpy as np
import fastmwem
from fastmwem.indices import BitPackedIndex
from fastmwem.models.matching import match_marginals

index = BitPackedIndex(16, backend="numba", threads=1)
index.add(np.eye(16)[:5])
scores, ids = index.search(np.arange(16.0), 2)
print(ids.tolist(), scores.tolist())
rng = np.random.default_rng(0)
codes = np.stack([rng.integers(0, 3, 40), rng.integers(0, 4, 40)], axis=1)
match_marginals(codes, (3, 4), [(0, 1)], lambda s: np.full(12, 1 / 12), rng)
print("matched", bool(np.all((codes >= 0) & (codes < [3, 4]))))
"""


def test_import_and_kernels_without_a_writable_cache_folder(tmp_path):
    # A read-only installation run with an unwritable HOME, as root too: every __pycache__ of a
    # copy of the package is a regular file (numba cannot make its in-tree cache folder there)
    # and HOME lies below a regular file (nor the user-wide one).
    package = tmp_path / "site" / "fastmwem"
    shutil.copytree(Path(fastmwem.__file__).parent, package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
        (folder / "__pycache__").write_bytes(b"")
    blocker = tmp_path / "not-a-folder"
    blocker.write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env.update(HOME=str(blocker / "home"), XDG_CACHE_HOME=str(blocker / "cache"),
               PYTHONPATH=str(tmp_path / "site"), PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:2] == ["[[4, 3]] [[4.0, 3.0]]", "matched True"]
    assert all(p.is_file() for p in package.rglob("__pycache__"))  # nothing was cached
