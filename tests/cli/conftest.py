"""Shared fixtures of the CLI tests."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fastmwem.cli import main
from fastmwem.mechanisms.topk import METHODS


@pytest.fixture
def coded_csv(tmp_path):
    """A small CSV of codes and its domain JSON."""
    rng = np.random.default_rng(0)
    n = 3000
    latent = rng.random(n) < 0.4
    frame = pd.DataFrame({
        "a": (rng.random(n) < np.where(latent, 0.9, 0.2)).astype(int),
        "b": rng.integers(0, 3, n),
        "c": (rng.random(n) < np.where(latent, 0.8, 0.1)).astype(int),
        "d": rng.integers(0, 2, n),
    })
    csv = tmp_path / "data.csv"
    frame.to_csv(csv, index=False)
    domain = tmp_path / "domain.json"
    domain.write_text(json.dumps({"a": 2, "b": 3, "c": 2, "d": 2}))
    return csv, domain


@pytest.fixture
def counts_csv(tmp_path):
    path = tmp_path / "counts.csv"
    pd.DataFrame({"film": ["a", "b", "c", "d", "e"],
                  "votes": [50_000, 90_000, 10, 70_000, 5]}).to_csv(path, index=False)
    return path


@pytest.fixture
def no_release(monkeypatch):
    """Fail the test if a subcommand reaches a mechanism (the budget would be charged)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the run reached the mechanism")

    monkeypatch.setattr("fastmwem.cli.synth.mwem_with_defaults", refuse)
    for cls in METHODS.values():
        monkeypatch.setattr(cls, "select", refuse)


@pytest.fixture
def cli(capsys):
    """Run ``fastmwem`` in-process: ``cli(*argv)`` gives (exit status, stdout, stderr)."""
    def run(*argv):
        code = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
