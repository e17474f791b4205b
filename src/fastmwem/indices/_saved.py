"""Reading a saved index (the ``.npz`` archive ``IndexBase.save`` writes), trusting nothing in it.

A saved index may come from anywhere, so every size is checked before anything is read: the
archive holds only the members an index of its kind has, each stored uncompressed (as
``np.savez`` writes them: a member cannot expand beyond its bytes in the file, so a small file
cannot unpack into gigabytes), and each member's ``.npy`` header must declare the dtype and
shape its role allows, with exactly as many data bytes as the member holds. Only then are the
arrays read. Every refusal is an :class:`IndexFileError`.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Collection

import numpy as np

__all__ = ["IndexFileError", "MAX_INDEX_BYTES", "SavedArchive", "check_text", "file_error"]

#: Default limit of ``load_index(max_bytes=...)``: the bytes of all arrays of a saved index.
MAX_INDEX_BYTES = 2**34
# More members than any index kind writes, and the longest text member (the JSON settings).
_MAX_MEMBERS = 16
_MAX_TEXT = 1 << 16


class IndexFileError(ValueError):
    """A file that is not a saved fastmwem index (or one that cannot be checked, or is damaged).

    The message reads ``"<path> is not a saved fastmwem index: <reason>"``; ``reason`` holds the
    reason alone.
    """

    def __init__(self, reason: str, path: str | None = None) -> None:
        self.reason = reason
        self.path = path
        where = "" if path is None else f"{path!r} is "
        super().__init__(f"{where}not a saved fastmwem index: {reason}")


def file_error(exc: BaseException, path: str) -> IndexFileError:
    """``exc`` (an :class:`IndexFileError` without a path) as the same refusal naming ``path``."""
    reason = exc.reason if isinstance(exc, IndexFileError) else str(exc)
    return IndexFileError(reason, path)


class _Header:
    """A member's ``.npy`` header: its dtype, shape and where its data starts."""

    def __init__(self, info: zipfile.ZipInfo, dtype: np.dtype, shape: tuple[int, ...],
                 fortran: bool, offset: int) -> None:
        self.info, self.dtype, self.shape, self.fortran, self.offset = (
            info, dtype, shape, fortran, offset)


class SavedArchive:
    """The members of a saved index, their headers checked; arrays are read on request.

    Args:
        path: the file.
        max_bytes: refuse archives whose members hold more bytes than this.
    """

    def __init__(self, path: str, max_bytes: int) -> None:
        self.path = path
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError):
            raise IndexFileError("not an .npz archive written by save()") from None
        try:
            self.headers = self._read_headers(max_bytes)
        except BaseException:
            self._zip.close()
            raise

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> SavedArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_headers(self, max_bytes: int) -> dict[str, _Header]:
        infos = self._zip.infolist()
        if len(infos) > _MAX_MEMBERS:
            raise IndexFileError(f"the archive has {len(infos)} members, more than an index has")
        total = sum(info.file_size for info in infos)
        if total > max_bytes:
            raise IndexFileError(f"its arrays would take {total} bytes, more than max_bytes="
                                 f"{max_bytes}")
        headers: dict[str, _Header] = {}
        for info in infos:
            name = info.filename
            key = name[:-len(".npy")]
            if not name.endswith(".npy") or not key.isidentifier() or key in headers:
                raise IndexFileError(f"unexpected archive member {name!r}")
            if info.flag_bits & 0x1:
                raise IndexFileError(f"member {name!r} is encrypted")
            if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                # save() stores members as they are: a compressed one may expand without bound
                raise IndexFileError(f"member {name!r} is compressed (save() stores its arrays "
                                     "uncompressed)")
            headers[key] = self._header(info)
        return headers

    def _header(self, info: zipfile.ZipInfo) -> _Header:
        name = info.filename
        try:
            with self._zip.open(info) as fp:
                version = np.lib.format.read_magic(fp)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
                else:
                    raise IndexFileError(f"member {name!r} has .npy format {version}")
                offset = fp.tell()
        except IndexFileError:
            raise
        except (ValueError, TypeError, SyntaxError, EOFError, OSError, zipfile.BadZipFile):
            raise IndexFileError(f"member {name!r} has no valid .npy header") from None
        if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None \
                or dtype.kind not in "biufU":
            raise IndexFileError(f"member {name!r} holds {dtype} data, not numbers or text")
        nbytes = math.prod(shape) * dtype.itemsize
        if offset + nbytes != info.file_size:
            raise IndexFileError(f"member {name!r}: its header declares {nbytes} bytes of data, "
                                 f"it holds {info.file_size - offset}")
        return _Header(info, dtype, tuple(shape), bool(fortran), offset)

    def expect(self, spec: Collection[str]) -> None:
        """Refuse unless the members are exactly the names in ``spec``."""
        missing = sorted(set(spec) - set(self.headers))
        extra = sorted(set(self.headers) - set(spec))
        if missing:
            raise IndexFileError(f"member {missing[0]!r} is missing")
        if extra:
            raise IndexFileError(f"unexpected member {extra[0]!r}")

    def check(self, key: str, kinds: str, shape: tuple[int | None, ...],
              itemsizes: tuple[int, ...] | None = None) -> _Header:
        """The header of ``key``: dtype kind in ``kinds``, ``shape`` (``None``: any length >= 1)."""
        header = self.headers.get(key)
        if header is None:
            raise IndexFileError(f"member {key!r} is missing")
        if header.dtype.kind not in kinds or (itemsizes and header.dtype.itemsize not in itemsizes):
            raise IndexFileError(f"member {key!r} has dtype {header.dtype}")
        ok = len(header.shape) == len(shape) and all(
            (want is None and got >= 1) or got == want for got, want in zip(header.shape, shape))
        if not ok:
            want_text = "(" + ", ".join("n" if s is None else str(s) for s in shape) + \
                ("," if len(shape) == 1 else "") + ")"
            raise IndexFileError(f"member {key!r} has shape {header.shape}, not {want_text}")
        return header

    def read(self, key: str) -> np.ndarray:
        """The array ``key`` (after :meth:`check`), read as its header declares, nothing more."""
        header = self.headers[key]
        nbytes = header.info.file_size - header.offset
        try:
            with self._zip.open(header.info) as fp:
                fp.read(header.offset)
                data = fp.read(nbytes)
        except (zipfile.BadZipFile, EOFError, OSError):  # a CRC mismatch: damaged
            raise IndexFileError(f"member {key!r} is damaged") from None
        if len(data) != nbytes:
            raise IndexFileError(f"member {key!r} is truncated")
        arr = np.frombuffer(data, dtype=header.dtype)
        return arr.reshape(header.shape, order="F" if header.fortran else "C")

    def text(self, key: str) -> str:
        """A text member (a str array of shape ``()``, at most 65,536 characters)."""
        header = self.check(key, "U", ())
        if header.dtype.itemsize > 4 * _MAX_TEXT:
            raise IndexFileError(f"member {key!r} is longer than {_MAX_TEXT} characters")
        return str(self.read(key)[()])

    def integer(self, key: str) -> int:
        """An integer member of shape ``()``."""
        self.check(key, "iu", ())
        return int(self.read(key)[()])


def check_text(value: object, name: str, limit: int = 256) -> str:
    """A short str from a saved index's settings, or an :class:`IndexFileError`."""
    if not isinstance(value, str) or len(value) > limit:
        raise IndexFileError(f"setting {name!r} must be a str of at most {limit} characters")
    return value


def check_regular_file(path: object) -> str:
    """``path`` as a str naming an existing regular file, or an :class:`IndexFileError`."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    name = os.fspath(path)
    if not isinstance(name, str):
        raise TypeError("path must be a str or os.PathLike of str, got bytes")
    if os.path.isdir(name):
        raise IndexFileError("it is a directory", name)
    if not os.path.exists(name):
        raise IndexFileError("it does not exist", name)
    if not os.path.isfile(name):
        # np.load or zipfile would wait on a FIFO for ever
        raise IndexFileError("it is not a regular file (a FIFO, device or socket)", name)
    if not os.access(name, os.R_OK):
        raise IndexFileError("it cannot be read: permission denied", name)
    return name
