"""``import fastmwem`` and the command line's start load no heavy dependency.

numba, pandas, scipy, the SQL and Spark engines, the ANN libraries, the web framework and tqdm
are imported by the functions that use them, on first use: loading them eagerly made
``import fastmwem`` and ``fastmwem --help`` take a second or more. Each check runs in a fresh
interpreter, since the test process itself has imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numba", "pandas", "scipy", "duckdb", "pyspark", "faiss", "hnswlib", "fastapi", "tqdm",
         "matplotlib")

SUBPACKAGES = ("accounting", "cli", "data", "data.io", "data.sources", "indices",
               "indices.bitpacked", "lp",
               "mechanisms", "models", "quality",
               "release", "service", "testing", "workloads")


def _heavy_modules_after(code: str) -> list[str]:
    """The heavy top-level modules in ``sys.modules`` after running ``code`` in a new process."""
    probe = (f"import json, sys\n{code}\n"
             f"print(json.dumps(sorted({{m.partition('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))")
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", [
    "import fastmwem",
    "from fastmwem import *",
    "import fastmwem.cli",
])
def test_importing_the_package_loads_no_heavy_dependency(code):
    assert _heavy_modules_after(code) == []


def test_the_help_of_the_command_line_loads_no_heavy_dependency():
    code = ("import contextlib, io\nfrom fastmwem.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['--help'])")
    assert _heavy_modules_after(code) == []


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_the_public_names_of_each_subpackage_load_no_heavy_dependency(name):
    assert _heavy_modules_after(f"from fastmwem.{name} import *") == []


def test_the_client_loads_nothing_of_the_service():
    # ``fastmwem ask`` uses the client, and must run without the service extra installed.
    probe = ("import sys\nimport fastmwem.service.client\n"
             "top = {m.partition('.')[0] for m in sys.modules}\n"
             "inside = {m for m in sys.modules if m.startswith('fastmwem.service.')}\n"
             "print(sorted((top & {'fastapi', 'psycopg', 'starlette', 'uvicorn'})\n"
             "             | (inside - {'fastmwem.service.client'})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
