"""The old path of :mod:`fastmwem.data.io.files`, kept only while ``release/pmw.py`` imports it."""

from fastmwem.data.io.files import load_json

__all__ = ["load_json"]
