"""Reliability battery: bad inputs must get a clear error before any budget is spent.

Every case runs in a forked child process (a fresh temporary directory each, an address space
limit and a timeout; see ``_runner``), and each bad input is sorted into one of:

- ``clear``: an error (exit status 2 on the command line; ValueError/TypeError, or an OSError
  naming the file, in the library) before any budget is charged, whose message names the problem;
- ``unclear``: an error whose message does not say what is wrong (a raw errno, numpy internals,
  a KeyError, none of the case's expected words);
- ``nonsense``: accepted although it should be refused, or silently wrong (a seed or private
  value in an output or message, a file written or replaced by a failed run);
- ``crash``: a traceback or an unexpected exception type, a failure after the budget was charged,
  or a hang beyond the case's timeout.

Valid edge cases must succeed and pass their own checks (``ok``), else they are ``failed``.

``test_reliability.py`` runs every case as a test (a bad input passes if it is ``clear``, a valid
case if it is ``ok``); ``benchmarks/reliability_battery.py`` runs them all and writes every
category and message to ``benchmarks/results/reliability_battery.json``. Nothing here allocates
more than a few hundred MB; the cap turns a runaway allocation into a MemoryError. The real
``/dev/null`` is never used: device nodes are made in temporary directories.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._runner import Case

# The case modules, in the order their cases are listed (and written to the results file).
_CASE_MODULES = ("cases_cli_synth", "cases_cli_topk", "cases_api_data", "cases_api_release",
                 "cases_api_mechanisms", "cases_valid", "cases_more", "cases_noise_lp",
                 "cases_service", "cases_files_engines")


def all_cases() -> list[Case]:
    """Every case of the battery (registered on the first call)."""
    from ._runner import CASES

    if not CASES:
        for name in _CASE_MODULES:
            importlib.import_module(f"{__name__}.{name}").register()
    return CASES
