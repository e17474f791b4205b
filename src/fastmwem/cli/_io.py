"""Input and output files of a CLI run.

Every path is checked before anything is read or any budget is spent: outputs must be creatable
regular files that are neither an input nor another output of the run. Outputs are then written
to temporary files beside their targets and renamed into place together at the end, so a failed
or interrupted run leaves every output as it was. Files ending in ``.parquet`` (``.pq``,
``.parq``) are written as Parquet, anything else as CSV.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, TypeVar

from fastmwem._files import replacement_mode
from fastmwem.cli import CLIError
from fastmwem.data import write_csv
from fastmwem.data.io.parquet import is_parquet_path, require_pyarrow, write_parquet

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_files", "check_input_file", "check_paths", "read_text_file", "staged_outputs",
           "StagedOutputs", "free_disk_bytes"]

T = TypeVar("T")

_TMP_PREFIX = ".fastmwem-"
_TMP_SUFFIX = ".tmp"


def check_input_file(path: str, flag: str) -> None:
    """Refuse an input that is missing, a directory, or not a regular file (a FIFO would hang)."""
    if not path:
        raise CLIError(f"{flag}: the path is empty")
    if os.path.isdir(path):
        raise CLIError(f"{flag}: {path!r} is a directory, not a file")
    if not os.path.exists(path):
        raise CLIError(f"{flag}: file {path!r} does not exist")
    if not os.path.isfile(path):
        raise CLIError(f"{flag}: {path!r} is not a regular file")


def read_text_file(read: Callable[[str], T], path: str, flag: str) -> T:
    """``read(path)``, with a text file that is not UTF-8 reported by flag and file name."""
    try:
        return read(path)
    except UnicodeDecodeError:
        # The codec's message shows the offending byte, which may be private data.
        raise CLIError(f"{flag}: {path!r} is not UTF-8 text") from None


def check_files(inputs: Mapping[str, str | None], outputs: Mapping[str, str | None], *,
                unchecked: Collection[str] = ()) -> None:
    """Check every file of a run at once: each input (in order), then the outputs.

    Args:
        inputs: input paths by flag (``None`` for an input not given).
        outputs: output paths by flag (``None`` for an output not requested).
        unchecked: flags of inputs that need not be regular files (a directory or a URI that
            Spark reads); they are still never written over.
    """
    for flag, path in inputs.items():
        if path is not None and flag not in unchecked:
            check_input_file(path, flag)
    check_paths(outputs, inputs)


def check_paths(outputs: Mapping[str, str | None], inputs: Mapping[str, str | None]) -> None:
    """Check every output (and that no output is an input or another output) before the run.

    Args:
        outputs: output paths by flag (``None`` for an output not requested).
        inputs: input paths by flag (``None`` for an input not given).
    """
    given_outputs = {flag: path for flag, path in outputs.items() if path is not None}
    for flag, path in given_outputs.items():
        _check_output(path, flag)
    given_inputs = {flag: path for flag, path in inputs.items() if path}
    seen: list[tuple[str, str]] = []
    for flag, path in given_outputs.items():
        for other_flag, other in given_inputs.items():
            if _same_file(path, other):
                raise CLIError(f"{flag}: {path!r} is the input {other_flag} {other!r}; "
                               "refusing to write over an input")
        for other_flag, other in seen:
            if _same_file(path, other):
                raise CLIError(f"{flag} and {other_flag} name the same file {path!r}")
        seen.append((flag, path))


def _check_output(path: str, flag: str) -> None:
    if not path:
        raise CLIError(f"{flag}: the path is empty")
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise CLIError(f"{flag}: {path!r} names a directory, not a file")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise CLIError(f"{flag}: cannot use {path!r}: {exc.strerror}") from None
    if mode is not None:
        if stat.S_ISLNK(mode):
            raise CLIError(f"{flag}: {path!r} is a symbolic link; refusing to write through it "
                           "(give the target path itself)")
        if stat.S_ISDIR(mode):
            raise CLIError(f"{flag}: {path!r} is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise CLIError(f"{flag}: {path!r} exists and is not a regular file (a device, FIFO "
                           "or socket); refusing to replace it")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise CLIError(f"{flag}: directory {directory!r} does not exist")
    # os.access can say yes as root where creation still fails (/proc, read-only mounts), so
    # create and remove a real temporary file where the output will be staged.
    try:
        fd, probe = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=directory)
    except OSError as exc:
        raise CLIError(f"{flag}: cannot create files in directory {directory!r} "
                       f"({exc.strerror})") from None
    try:
        os.close(fd)
    finally:
        os.unlink(probe)


def free_disk_bytes(path: str) -> int:
    """Bytes free (to this user) on the file system where the output ``path`` will be written."""
    return int(shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free)


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)  # hard links, bind mounts
    except OSError:  # one of them does not exist (yet)
        return False


class StagedOutputs:
    """The outputs of one run, each written to a temporary file until :meth:`commit`."""

    def __init__(self) -> None:
        self._staged: list[tuple[str, str]] = []  # (temporary, target)

    def write_csv(self, frame: pd.DataFrame, path: str, flag: str) -> None:
        self._stage(path, flag, lambda fh: write_csv(frame, fh))

    def write_csv_blocks(self, frames: Iterable[pd.DataFrame], path: str, flag: str) -> None:
        """One CSV from consecutive blocks of rows (the header comes from the first block)."""
        def write(fh: IO[str]) -> None:
            for i, frame in enumerate(frames):
                write_csv(frame, fh, header=i == 0)

        self._stage(path, flag, write)

    def write_records(self, records: pd.DataFrame | Iterable[pd.DataFrame], path: str,
                      flag: str) -> None:
        """Records (a DataFrame, or blocks of rows) as Parquet or CSV, by ``path``'s extension."""
        import pandas as pd
        if is_parquet_path(path):
            require_pyarrow()
            self.write_parquet(records, path, flag)
        elif isinstance(records, pd.DataFrame):
            self.write_csv(records, path, flag)
        else:
            self.write_csv_blocks(records, path, flag)

    def write_parquet(self, frames: pd.DataFrame | Iterable[pd.DataFrame], path: str,
                      flag: str) -> None:
        """One Parquet file from a DataFrame or from consecutive blocks of rows."""
        self._stage(path, flag, lambda fh: write_parquet(frames, fh), binary=True)

    def write_text(self, text: str, path: str, flag: str) -> None:
        """A UTF-8 text file (an HTML page)."""
        def write(fh: IO[str]) -> None:
            fh.write(text)

        self._stage(path, flag, write)

    def write_json(self, payload: object, path: str, flag: str) -> None:
        def dump(fh: IO[str]) -> None:
            json.dump(payload, fh, indent=2, sort_keys=False)
            fh.write("\n")

        self._stage(path, flag, dump)

    # IO[Any]: a text writer or, with ``binary``, a bytes one (the handle opened to match)
    def _stage(self, path: str, flag: str, write: Callable[[IO[Any]], None],
               binary: bool = False) -> None:
        directory = os.path.dirname(os.path.abspath(path))
        try:
            fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=directory)
        except OSError as exc:
            raise CLIError(f"{flag}: cannot write {path!r}: {exc.strerror or exc}") from None
        # Registered before writing, so that discard() removes it whatever interrupts the write.
        self._staged.append((tmp, path))
        try:
            os.fchmod(fd, replacement_mode(path))
            handle = (os.fdopen(fd, "wb") if binary
                      else os.fdopen(fd, "w", encoding="utf-8", newline=""))
            with handle as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise CLIError(f"{flag}: cannot write {path!r}: {exc.strerror or exc}") from None

    def commit(self) -> None:
        """Rename every temporary file over its target, with SIGINT/SIGTERM held off meanwhile."""
        with _signals_blocked():
            try:
                while self._staged:
                    tmp, path = self._staged[0]
                    os.replace(tmp, path)
                    self._staged.pop(0)
            except OSError as exc:
                self.discard()
                raise CLIError(f"cannot write {path!r}: {exc.strerror or exc}") from None

    def discard(self) -> None:
        """Remove every temporary file not yet renamed; the targets are left as they were."""
        while self._staged:
            tmp, _ = self._staged.pop()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


@contextlib.contextmanager
def staged_outputs() -> Iterator[StagedOutputs]:
    """Stage outputs in the block; commit them all if it ends normally, else discard them all."""
    outputs = StagedOutputs()
    try:
        yield outputs
    except BaseException:
        outputs.discard()
        raise
    outputs.commit()


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    mask = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not on POSIX
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
