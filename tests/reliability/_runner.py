"""The battery's machinery: cases, the context they run in, and the forked child that runs one.

A case runs in a forked child process of its own (its own process group, a fresh temporary
directory, an address space limit of ``MEMORY_CAP`` bytes and a timeout). In the child every
successful charge of the accountants the case (or the command line) creates, and every call into
a mechanism's charge step, is recorded in ``CHARGES``; a bad input that fails after a charge is a
crash. See the package's docstring for the categories.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import pkgutil
import re
import resource
import select
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import fastmwem
import fastmwem.cli.synth
from fastmwem.accounting import Accountant, BudgetExceededError
from fastmwem.cli import main as cli_main

#: Address-space cap of a case's process (the interpreter with its libraries takes ~0.7 GB).
MEMORY_CAP = 5 * 2**30
#: What the library is told it may plan to use (``$FASTMWEM_MEMORY_LIMIT``).
MEMORY_LIMIT = "4G"
MEMORY_LIMIT_ENV = "FASTMWEM_MEMORY_LIMIT"
#: Default timeout of a case (seconds); cases that could hang state their own.
TIMEOUT = 30.0
#: How much of a failing case's output (its log) is kept with its result.
LOG_TAIL = 2000

ACCEPTED_ERRORS = (ValueError, TypeError, BudgetExceededError, FileNotFoundError,
                   IsADirectoryError, NotADirectoryError, PermissionError)

UNCLEAR = re.compile(
    r"\[Errno|zero-size array|codec can't|ufunc|numpy\.core|numpy\._core|allow_pickle|"
    r"object of type|'NoneType' object|"
    r"not supported between|unhashable|invalid literal for int\(\)|could not convert|"
    r"index \d+ is out of bounds|Traceback|can't multiply|operands could not be broadcast|"
    r"^\s*$", re.IGNORECASE)


@dataclass
class Case:
    name: str
    area: str
    valid: bool
    run: Callable[[Ctx], object]
    expect: tuple[str, ...] = ()
    timeout: float = TIMEOUT
    env: dict[str, str] = field(default_factory=dict)
    #: The error can only be seen after the charge (a user's loss misbehaving on the data).
    after_charge: bool = False
    #: Takes more than about two seconds: the test suite runs it only with ``-m slow``.
    slow: bool = False
    #: Why the case is known not to pass (a documented limitation); empty if it should pass.
    known_failure: str = ""


class Finding(Exception):
    """A check inside a case failed: the case's category is given."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


class CLIFailed(Exception):
    """The command exited with a non-zero status."""

    def __init__(self, code: int, err: str, crashed: bool) -> None:
        lines = [ln for ln in err.splitlines() if ": error:" in ln]
        message = lines[-1] if lines else (err.strip().splitlines() or [""])[-1]
        super().__init__(message)
        self.code = code
        self.crashed = crashed
        self.err = err


@dataclass
class CLIRun:
    code: int
    out: str
    err: str
    changes: list[str]


# Charges seen in the child: labels of successful charges of the tracked accountants, and of
# every call into a mechanism's charge step.
CHARGES: list[str] = []
TRACKED: set[int] = set()


def _install_charge_hooks() -> None:
    """Record charges (in the child process only)."""
    original_compose = Accountant.compose
    original_compose_all = Accountant.compose_all

    def compose(self, event, *, label=""):  # noqa: ANN001, ANN202
        out = original_compose(self, event, label=label)
        if id(self) in TRACKED:
            CHARGES.append(f"accountant: {label}")
        return out

    def compose_all(self, events):  # noqa: ANN001, ANN202
        out = original_compose_all(self, events)
        if id(self) in TRACKED:
            CHARGES.append(f"accountant: {len(events)} events")
        return out

    Accountant.compose = compose  # type: ignore[method-assign]
    Accountant.compose_all = compose_all  # type: ignore[method-assign]

    def tracked_accountant(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        acc = Accountant(*args, **kwargs)
        TRACKED.add(id(acc))
        return acc

    fastmwem.cli.synth.Accountant = tracked_accountant  # type: ignore[attr-defined]
    for name, obj in list(sys.modules.items()):
        if not name.startswith("fastmwem.mechanisms"):
            continue
        for attr in ("charge", "charge_draws"):
            fn = getattr(obj, attr, None)
            if callable(fn) and getattr(fn, "__module__", "").startswith("fastmwem.mechanisms"):
                setattr(obj, attr, _recording(fn))


def _recording(fn: Callable) -> Callable:
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        out = fn(*args, **kwargs)  # a refused charge (wrong accountant, no room) spends nothing
        CHARGES.append(f"mechanism charge: {args[2] if len(args) > 2 else ''}")
        return out

    return wrapper


def _snapshot(root: Path) -> dict[str, tuple[int, int, int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns,
                                             st.st_ino)
    return out


def _diff(before: dict, after: dict) -> list[str]:
    changes = [f"new {k}" for k in after if k not in before]
    changes += [f"removed {k}" for k in before if k not in after]
    changes += [f"changed {k}" for k in after if k in before and after[k] != before[k]
                and stat.S_ISREG(after[k][0]) | (after[k][0] != before[k][0])]
    return sorted(changes)


class Ctx:
    """What a case works with: a fresh directory, tracked accountants, the command line."""

    def __init__(self, root: Path) -> None:
        self.dir = root
        self.markers: list[str] = []  # private values that must never appear in a message
        self.last: CLIRun | None = None

    def path(self, name: str) -> str:
        return str(self.dir / name)

    def write(self, name: str, content: str | bytes) -> str:
        p = self.dir / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            with open(p, "w", encoding="utf-8", newline="") as fh:
                fh.write(content)
        return str(p)

    def acc(self, epsilon: float = 1.0, **kwargs: object) -> Accountant:
        acc = Accountant(epsilon=epsilon, **kwargs)
        TRACKED.add(id(acc))
        return acc

    def check(self, condition: object, message: str, category: str = "nonsense") -> None:
        if not condition:
            raise Finding(category, message)

    def cli(self, *argv: object) -> CLIRun:
        args = [str(a) for a in argv]
        before = _snapshot(self.dir)
        out, err = io.StringIO(), io.StringIO()
        crashed = False
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli_main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - a traceback is what the user would see
                traceback.print_exc()
                code, crashed = 1, True
        run = CLIRun(int(code), out.getvalue(), err.getvalue(), _diff(before, _snapshot(self.dir)))
        self.last = run
        self._check_seed(args, run)
        leftovers = [c for c in run.changes if ".fastmwem-" in c and c.startswith("new")]
        self.check(not leftovers, f"temporary files left behind: {leftovers}", "crash")
        if code != 0:
            raise CLIFailed(int(code), run.err, crashed or "Traceback" in run.err)
        return run

    def _check_seed(self, args: list[str], run: CLIRun) -> None:
        if "--seed" not in args:
            return
        seed = args[args.index("--seed") + 1]
        if len(seed) < 5:
            return
        texts = {"stdout": run.out, "stderr": run.err}
        for change in run.changes:
            kind, _, rel = change.partition(" ")
            p = self.dir / rel
            if kind in ("new", "changed") and p.is_file() and not p.is_symlink():
                texts[rel] = p.read_text(encoding="utf-8", errors="replace")
        leaks = [where for where, text in texts.items() if seed in text]
        self.check(not leaks, f"the seed appears in {leaks}")


def _error_category(case: Case, exc: BaseException, ctx: Ctx) -> tuple[str, str]:
    """The category of a case that raised ``exc``."""
    if isinstance(exc, Finding):
        return exc.category, str(exc)
    if isinstance(exc, CLIFailed):
        message = str(exc)
        if exc.crashed or exc.code != 2:
            return "crash", f"exit {exc.code}: {exc.err.strip()[-600:]}"
    elif isinstance(exc, MemoryError):
        return "crash", f"MemoryError: {exc}"
    elif isinstance(exc, KeyError):
        return "unclear", f"KeyError: {exc}"
    elif not isinstance(exc, ACCEPTED_ERRORS):
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return "crash", f"{type(exc).__name__}: {exc} | {''.join(tb[-3:]).strip()[-400:]}"
    else:
        message = f"{type(exc).__name__}: {exc}"
    if CHARGES and not case.after_charge:
        return "crash", f"failed after the charge ({CHARGES[0]}): {message}"
    if isinstance(exc, CLIFailed) and ctx.last is not None and ctx.last.changes:
        return "nonsense", f"failed but changed files {ctx.last.changes}: {message}"
    leaked = [m for m in ctx.markers if m in message]
    if leaked:
        return "nonsense", f"the message shows the private value {leaked[0]!r}: {message}"
    if UNCLEAR.search(message.partition(": ")[2] if not isinstance(exc, CLIFailed) else message):
        return "unclear", message
    if case.expect and not any(w.lower() in message.lower() for w in case.expect):
        return "unclear", f"(expected one of {list(case.expect)}) {message}"
    return "clear", message


def _run_in_child(case: Case, root: Path) -> dict[str, object]:
    ctx = Ctx(root)
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            value = case.run(ctx)
        exc = None
    except BaseException as caught:  # noqa: BLE001 - everything is a finding here
        exc = caught
        value = None
    seconds = time.perf_counter() - started
    if exc is None:
        if case.valid:
            category, message = "ok", str(value or "succeeded")
        else:
            where = "exit 0" if ctx.last is not None else "no error"
            category, message = "nonsense", f"accepted ({where}): {value!s:.300}"
    else:
        category, message = _error_category(case, exc, ctx)
        if case.valid:
            message = f"{category}: {message}"
            category = "failed"
    return {"category": category, "message": message[:1500], "seconds": round(seconds, 3)}


def _child(case: Case, root: Path, log_path: Path, write_fd: int) -> None:
    """The forked child: cap, environment, hooks, run; never returns."""
    status = 0
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the case server's handler
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
        # The library plans with this much memory (the cap less the interpreter's own).
        os.environ[MEMORY_LIMIT_ENV] = MEMORY_LIMIT
        os.environ.update(case.env)
        os.chdir(root)
        _install_charge_hooks()
        result = _run_in_child(case, root)
        with os.fdopen(write_fd, "w") as fh:
            json.dump(result, fh)
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        status = 1
    os._exit(status)


def preload() -> None:
    """Import every fastmwem module before the cases fork.

    The library imports most modules when first used; imported once here, they are not imported
    again in every case's child (several times faster), and every mechanism's charge step is
    there to be watched.
    """
    for info in pkgutil.walk_packages(fastmwem.__path__, prefix="fastmwem."):
        if not info.name.endswith("__main__"):  # those run the command line
            importlib.import_module(info.name)


@dataclass
class _Running:
    """A case whose child process runs."""

    case: Case
    pid: int
    fd: int
    root: Path
    log: Path
    started: float
    chunks: list[bytes] = field(default_factory=list)

    @property
    def deadline(self) -> float:
        return self.started + self.case.timeout


def _start(case: Case, logs: Path) -> _Running:
    """Fork the child that runs ``case``; it leads a process group of its own."""
    root = Path(tempfile.mkdtemp(prefix="battery-"))
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.close(read_fd)
        _child(case, root, logs / f"{case.name}.log", write_fd)
    with contextlib.suppress(OSError):  # the child may have done it (or exited) already
        os.setpgid(pid, pid)
    os.close(write_fd)
    return _Running(case, pid, read_fd, root, logs / f"{case.name}.log", started)


def _finish(run: _Running, timed_out: bool) -> dict[str, object]:
    """Reap the child, kill what it left running, remove its files; its result."""
    # Not to be cut short by a signal halfway (a process or a directory would be left).
    masked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        os.close(run.fd)
        if timed_out:
            _kill_group(run.pid)
        _, status = os.waitpid(run.pid, 0)
        _kill_group(run.pid)  # whatever the case started and left running
        seconds = round(time.perf_counter() - run.started, 3)
        shutil.rmtree(run.root, ignore_errors=True)  # FIFOs and device nodes go like files
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, masked)
    result = _result(run.case, b"".join(run.chunks), timed_out, status, seconds)
    if result["category"] not in ("clear", "ok") and run.log.exists():
        result["log"] = run.log.read_bytes()[-LOG_TAIL:].decode("utf-8", "replace")
    run.log.unlink(missing_ok=True)
    return result


def _kill_group(pid: int) -> None:
    # Until the last member of the group is gone its id cannot be given to another process, so
    # this never reaches one.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _result(case: Case, data: bytes, timed_out: bool, status: int,
            seconds: float) -> dict[str, object]:
    failed = "failed" if case.valid else "crash"
    if timed_out:
        return {"category": failed, "message": f"hang: no result after {case.timeout:.0f} s",
                "seconds": seconds}
    try:
        return json.loads(data)
    except ValueError:
        how = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exit status {os.WEXITSTATUS(status)}")
        return {"category": failed, "message": f"the case process died ({how})",
                "seconds": seconds}


def run_cases(cases: list[Case], logs: Path,
              workers: int = 1) -> Iterator[tuple[Case, dict[str, object]]]:
    """Run each case in a forked child with a timeout and a memory cap, ``workers`` at a time.

    Yields each case with its result as it ends (in that order, not the given one). The cases
    share nothing (a directory, a process group and a log each), so running some at the same
    time changes only how long they take. Children still running when the caller stops (or is
    interrupted) are killed with all they started, and their directories removed.
    """
    waiting = list(reversed(cases))
    running: dict[int, _Running] = {}
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                run = _start(waiting.pop(), logs)
                running[run.fd] = run
            # Ended children first: a case that ended is never taken for one that hangs.
            left = min(r.deadline for r in running.values()) - time.perf_counter()
            ready, _, _ = select.select(list(running), [], [], max(0.0, left))
            for fd in ready:
                data = os.read(fd, 1 << 16)
                if data:
                    running[fd].chunks.append(data)
                else:
                    run = running.pop(fd)
                    yield run.case, _finish(run, timed_out=False)
            now = time.perf_counter()
            for run in [r for r in running.values() if r.deadline <= now and r.fd not in ready]:
                del running[run.fd]
                yield run.case, _finish(run, timed_out=True)
    finally:
        for run in running.values():
            _kill_group(run.pid)
            _finish(run, timed_out=True)


# -- case registration -----------------------------------------------------------------------

CASES: list[Case] = []


def add(name: str, area: str, valid: bool, run: Callable[[Ctx], object],
        expect: tuple[str, ...] | str = (), timeout: float = TIMEOUT,
        env: dict[str, str] | None = None, after_charge: bool = False, slow: bool = False,
        known_failure: str = "") -> None:
    if any(c.name == name for c in CASES):
        raise ValueError(f"duplicate case name {name!r}")
    expect = (expect,) if isinstance(expect, str) else tuple(expect)
    CASES.append(Case(name, area, valid, run, expect, timeout, env or {}, after_charge, slow,
                      known_failure))


def bad(name: str, area: str, run: Callable[[Ctx], object], expect: tuple[str, ...] | str = (),
        **kwargs: object) -> None:
    add(name, area, False, run, expect, **kwargs)  # type: ignore[arg-type]


def good(name: str, area: str, run: Callable[[Ctx], object], **kwargs: object) -> None:
    add(name, area, True, run, **kwargs)  # type: ignore[arg-type]
