"""Hypothesis profiles: deterministic by default, randomised on request.

* ``default`` and ``ci``: every property test replays the same examples on every run
  (``derandomize``), no example database is read or written, and there are no wall-clock limits
  (no deadline, no "too slow" health check), so a run cannot pass or fail by chance or by the
  machine's load.
* ``explore``: fresh random examples on every run, ten times as many, so that new failures can
  turn up; a failure prints the ``@reproduce_failure`` blob to replay it.

Choose with the ``HYPOTHESIS_PROFILE`` environment variable, e.g.
``HYPOTHESIS_PROFILE=explore pytest tests/test_accounting.py``.

Hypothesis also draws on the literals of the project's source modules that are loaded when a
test runs, so a derandomised test would see other examples when one file runs alone than in the
whole suite. Every ``fastmwem`` module is therefore imported here, before any test: the examples
then depend only on the code, not on which tests were selected.
"""

from __future__ import annotations

import importlib
import os
import pkgutil

from hypothesis import HealthCheck, settings

import fastmwem


def _import_every_module() -> None:
    for info in pkgutil.walk_packages(fastmwem.__path__, prefix="fastmwem."):
        if not info.name.endswith("__main__"):  # those run the command line
            importlib.import_module(info.name)


_import_every_module()

_STEADY = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow],
    "print_blob": False,
}

settings.register_profile("default", **_STEADY)
settings.register_profile("ci", **_STEADY)
settings.register_profile(
    "explore",
    max_examples=1000,
    derandomize=False,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
if _PROFILE not in ("default", "ci", "explore"):
    raise ValueError(
        f"HYPOTHESIS_PROFILE must be 'default', 'ci' or 'explore', got {_PROFILE!r}"
    )
settings.load_profile(_PROFILE)
