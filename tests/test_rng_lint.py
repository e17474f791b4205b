"""No global random state anywhere in the library.

An AST scan of every module under src/fastmwem: no stdlib ``random`` import, and no use of
numpy's legacy global-state API (``np.random.seed``, ``np.random.rand``, ``RandomState``, ...).
The explicit Generator API (``default_rng``, ``Generator``, bit generators, ``SeedSequence``)
is allowed. The scanner is itself tested on snippets that must be flagged.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fastmwem

ALLOWED_NP_RANDOM = {
    "default_rng", "Generator", "SeedSequence", "BitGenerator", "PCG64", "PCG64DXSM", "Philox",
    "SFC64",
}
SRC = Path(fastmwem.__file__).resolve().parent


def violations(source: str) -> list[str]:
    """Lines that use the stdlib ``random`` module or numpy's legacy global random state."""
    tree = ast.parse(source)
    numpy_names: set[str] = set()
    np_random_names: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if alias.name == "random" or alias.name.startswith("random."):
                    found.append(f"line {node.lineno}: import {alias.name}")
                elif alias.name == "numpy":
                    numpy_names.add(bound)
                elif alias.name == "numpy.random":
                    if alias.asname:
                        np_random_names.add(alias.asname)
                    else:
                        numpy_names.add("numpy")
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == "random" or (node.module or "").startswith("random."):
                found.append(f"line {node.lineno}: from {node.module} import ...")
            elif node.module == "numpy":
                for alias in node.names:
                    if alias.name == "random":
                        np_random_names.add(alias.asname or "random")
            elif node.module == "numpy.random":
                for alias in node.names:
                    if alias.name not in ALLOWED_NP_RANDOM:
                        found.append(f"line {node.lineno}: from numpy.random import {alias.name}")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        via_numpy = (isinstance(base, ast.Attribute) and base.attr == "random"
                     and isinstance(base.value, ast.Name) and base.value.id in numpy_names)
        via_alias = isinstance(base, ast.Name) and base.id in np_random_names
        if (via_numpy or via_alias) and node.attr not in ALLOWED_NP_RANDOM:
            found.append(f"line {node.lineno}: numpy.random.{node.attr}")
    return found


MODULES = sorted(SRC.rglob("*.py"))


def test_there_are_modules_to_scan():
    names = {p.name for p in MODULES}
    assert {"random.py", "accountant.py", "exponential.py", "laplace.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(SRC)) for p in MODULES])
def test_module_uses_no_global_random_state(path):
    bad = violations(path.read_text(encoding="utf-8"))
    assert not bad, f"{path.relative_to(SRC)}: " + "; ".join(bad)


@pytest.mark.parametrize("snippet", [
    "import random",
    "import random as r",
    "from random import choice",
    "import numpy as np\nnp.random.seed(0)",
    "import numpy as np\nx = np.random.rand(3)",
    "import numpy as np\nnp.random.randint(5)",
    "import numpy as np\nnp.random.choice([1, 2])",
    "import numpy as np\nnp.random.shuffle(x)",
    "import numpy as np\nr = np.random.RandomState(1)",
    "import numpy\nnumpy.random.normal()",
    "import numpy.random\nnumpy.random.random()",
    "import numpy.random as npr\nnpr.laplace()",
    "from numpy import random as nr\nnr.permutation(4)",
    "from numpy.random import rand",
    "from numpy.random import RandomState",
])
def test_scanner_flags_global_state(snippet):
    assert violations(snippet)


@pytest.mark.parametrize("snippet", [
    "import numpy as np\ng = np.random.default_rng(0)",
    "import numpy as np\ndef f(g: np.random.Generator): ...",
    "from numpy.random import default_rng, Generator, SeedSequence",
    "from fastmwem import random\nrandom.make_rng(0)",
    "from . import random",
    "import numpy as np\ng = np.random.default_rng(); g.random(3); g.choice(4)",
])
def test_scanner_allows_explicit_generators(snippet):
    assert violations(snippet) == []
