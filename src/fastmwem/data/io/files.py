"""Open input files with errors that name the file: missing, a directory, not UTF-8, bad JSON."""

from __future__ import annotations

import codecs
import importlib
import json
import os
from types import ModuleType

__all__ = ["check_input_file", "load_json", "not_utf8_error", "read_lines", "read_text",
           "require_module"]

_CHUNK = 1 << 20


def check_input_file(path: str | os.PathLike[str], what: str) -> str:
    """Return ``path`` as a string after checking that it names an existing regular file.

    Raises:
        FileNotFoundError: nothing exists at ``path``.
        IsADirectoryError: ``path`` is a directory.
        ValueError: ``path`` is a FIFO, device or socket (opening a FIFO would wait for ever).
    """
    name = os.fspath(path)
    if os.path.isdir(name):
        raise IsADirectoryError(f"{what} {name!r} is a directory, not a file")
    if not os.path.exists(name):
        raise FileNotFoundError(f"{what} {name!r} does not exist")
    if not os.path.isfile(name):
        raise ValueError(f"{what} {name!r} is not a regular file (a FIFO, device or socket)")
    return name


def utf8_error_position(path: str) -> tuple[int, int] | None:
    """The 0-based byte offset and 1-based line of the first byte that is not UTF-8, if any.

    The file is decoded in chunks, so a decoder error raised elsewhere (pandas reads in chunks
    too, and reports chunk-relative positions) can be located exactly without loading the file.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, lines = 0, 1
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_CHUNK)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                # exc.start counts from the bytes the decoder still buffered from earlier chunks
                pending = len(exc.object) - len(chunk)
                bad = offset - pending + exc.start
                lines_before = chunk[: max(exc.start - pending, 0)].count(b"\n")
                return bad, lines + lines_before
            if not chunk:
                return None
            offset += len(chunk)
            lines += chunk.count(b"\n")


def not_utf8_error(path: str, what: str) -> ValueError:
    """A ``ValueError`` naming the file and the first byte that is not UTF-8 (never its value)."""
    where = utf8_error_position(path)
    at = "" if where is None else f" (first bad byte at offset {where[0]}, line {where[1]})"
    return ValueError(f"{what} {path!r} is not UTF-8 text{at}; save it as UTF-8")


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """The whole file as text (UTF-8, an optional BOM skipped, newlines as ``\\n``)."""
    name = check_input_file(path, what)
    with open(name, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise not_utf8_error(name, what) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_lines(path: str | os.PathLike[str], what: str) -> list[tuple[int, str]]:
    """The non-empty lines of a UTF-8 text file with their 1-based line numbers, kept exactly.

    A line with leading or trailing whitespace is an error rather than silently stripped:
    ``"A"``, ``" A"`` and ``"A "`` are different strings, and merging them would be a silent
    wrong answer. Empty lines are skipped.

    Raises:
        FileNotFoundError, IsADirectoryError: see :func:`check_input_file`.
        ValueError: not UTF-8, or a line with surrounding whitespace (the message names the file
            and the line number).
    """
    name = os.fspath(path)
    out = []
    for number, line in enumerate(read_text(name, what).split("\n"), start=1):
        if not line:
            continue
        if line != line.strip():
            raise ValueError(
                f"{what} {name!r}: line {number} has leading or trailing whitespace; lines are "
                "compared exactly, so remove it"
            )
        out.append((number, line))
    return out


def _refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


class _RepeatedKey(Exception):
    """Raised inside ``json.loads`` when an object repeats a key (JSON would keep the last)."""


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def load_json(path: str | os.PathLike[str], what: str) -> object:
    """Parse a JSON file, refusing repeated keys in any object and NaN/Infinity constants.

    Raises:
        FileNotFoundError, IsADirectoryError: see :func:`check_input_file`.
        ValueError: not UTF-8, not valid JSON, or a key repeated within one object (the message
            names the file and the key; declarations are public, so naming keys is safe).
    """
    text = read_text(path, what)
    name = os.fspath(path)
    try:
        return json.loads(text, object_pairs_hook=_refuse_repeated_keys,
                          parse_constant=_refuse_constant)
    except _RepeatedKey as exc:
        raise ValueError(f"{what} {name!r} repeats the key {exc.args[0]!r} in one object; "
                         "JSON would silently keep only the last") from None
    except ValueError as exc:  # json.JSONDecodeError, or a NaN/Infinity constant
        raise ValueError(f"{what} {name!r} is not valid JSON: {exc}") from None


def require_module(module: str, extra: str, what: str) -> ModuleType:
    """Import an optional dependency, or raise an ``ImportError`` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f'{what} needs the {module.split(".")[0]} package: pip install "fastmwem[{extra}]"'
        ) from None
