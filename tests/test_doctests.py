"""Runs the docstring examples of every fastmwem module."""

import doctest
import importlib
import pkgutil

import pytest

import fastmwem

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(fastmwem.__path__, prefix="fastmwem.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest failures in {name}"
