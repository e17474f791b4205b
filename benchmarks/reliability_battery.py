"""Reliability battery: bad inputs must get a clear error before any budget is spent.

Runs every case below in a forked child process (a fresh temporary directory each, an address
space limit of ``MEMORY_CAP`` bytes and a timeout), and sorts each bad input into one of:

- ``clear``: an error (exit status 2 on the command line; ValueError/TypeError, or an OSError
  naming the file, in the library) before any budget is charged, whose message names the problem;
- ``unclear``: an error whose message does not say what is wrong (a raw errno, numpy internals,
  a KeyError, none of the case's expected words);
- ``nonsense``: accepted although it should be refused, or silently wrong (a seed or private
  value in an output or message, a file written or replaced by a failed run);
- ``crash``: a traceback or an unexpected exception type, a failure after the budget was charged,
  or a hang beyond the case's timeout.

Valid edge cases must succeed and pass their own checks (``ok``), else they are ``failed``.
The budget is watched by recording every successful charge of the accountants a case (or the
command line) creates, and every call into a mechanism's charge step, in the child process.

The cases of the hardening pass (exact noise, the LP solvers, where randomness comes from, the
query service and its state, the client, saved index files and engines) are declared the same
way in ``_battery_hardening.py`` beside this file.

Usage: ``python benchmarks/reliability_battery.py [--only SUBSTRING] [--quiet]``. Writes
``benchmarks/results/reliability_battery.json`` (every case, its category and its message).
Nothing here allocates more than a few hundred MB; the cap turns a runaway allocation into a
MemoryError. The real ``/dev/null`` is never used: device nodes are made in temporary directories.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import select  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import stat  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import fastmwem  # noqa: E402
import fastmwem.accounting as accounting  # noqa: E402
import fastmwem.cli.synth  # noqa: E402
import fastmwem.cli.topk  # noqa: E402
from fastmwem.accounting import ZCDP, Accountant, ApproxDP, BudgetExceededError, PureDP  # noqa: E402
from fastmwem.cli import main as cli_main  # noqa: E402
from fastmwem.data import (  # noqa: E402
    Categorical,
    Dataset,
    Domain,
    Integer,
    Numeric,
    Schema,
    read_csv_columns,
    write_csv,
)
from fastmwem.mechanisms import (  # noqa: E402
    ExponentialMechanism,
    Geometric,
    Laplace,
    LazyExponentialMechanism,
    PermuteAndFlip,
)
from fastmwem.mechanisms.topk import (  # noqa: E402
    CDPPeel,
    GammaTopK,
    JointTopK,
    LaplaceTopK,
    PNFJointTopK,
    PNFPeel,
    PrunedJointTopK,
)
from fastmwem.release import mwem, mwem_auto, mwem_resources  # noqa: E402
from fastmwem.release import pmw_offline as pmw  # noqa: E402
from fastmwem.release.mwem import MWEMConfig  # noqa: E402
from fastmwem.workloads import (  # noqa: E402
    AllIntervals,
    Concatenate,
    Marginals,
    MatrixWorkload,
    Parities,
    RandomCountingQueries,
    RangeQueries,
)
from fastmwem.workloads.spec import parse_workload  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "reliability_battery.json"

#: Address-space cap of a case's process (the interpreter with its libraries takes ~0.7 GB).
MEMORY_CAP = 5 * 2**30
#: What the library is told it may plan to use (``$FASTMWEM_MEMORY_LIMIT``).
MEMORY_LIMIT = "4G"
MEMORY_LIMIT_ENV = "FASTMWEM_MEMORY_LIMIT"
#: Default timeout of a case (seconds); cases that could hang state their own.
TIMEOUT = 30.0

# A seed with enough digits that finding it in an output cannot be chance.
SEED = 48213977

# -- the framework ---------------------------------------------------------------------------

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


def run_case(case: Case, logs: Path) -> dict[str, object]:
    """Run one case in a forked child with a timeout and a memory cap."""
    root = Path(tempfile.mkdtemp(prefix="battery-"))
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_fd)
        status = 0
        try:
            log = os.open(logs / f"{case.name}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
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
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = started + case.timeout
    timed_out = False
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_fd], [], [], left)
        if ready:
            data = os.read(read_fd, 1 << 16)
            if not data:
                break
            chunks.append(data)
    if timed_out:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(read_fd)
    seconds = round(time.perf_counter() - started, 3)
    _remove(root)
    if timed_out:
        category = "failed" if case.valid else "crash"
        return {"category": category, "message": f"hang: no result after {case.timeout:.0f} s",
                "seconds": seconds}
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        how = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exit status {os.WEXITSTATUS(status)}")
        category = "failed" if case.valid else "crash"
        return {"category": category, "message": f"the case process died ({how})",
                "seconds": seconds}


def _remove(root: Path) -> None:
    # FIFOs and device nodes are removed like files; nothing outside root is touched.
    shutil.rmtree(root, ignore_errors=True)


# -- case registration -----------------------------------------------------------------------

CASES: list[Case] = []


def add(name: str, area: str, valid: bool, run: Callable[[Ctx], object],
        expect: tuple[str, ...] | str = (), timeout: float = TIMEOUT,
        env: dict[str, str] | None = None, after_charge: bool = False) -> None:
    if any(c.name == name for c in CASES):
        raise ValueError(f"duplicate case name {name!r}")
    expect = (expect,) if isinstance(expect, str) else tuple(expect)
    CASES.append(Case(name, area, valid, run, expect, timeout, env or {}, after_charge))


def bad(name: str, area: str, run: Callable[[Ctx], object], expect: tuple[str, ...] | str = (),
        **kwargs: object) -> None:
    add(name, area, False, run, expect, **kwargs)  # type: ignore[arg-type]


def good(name: str, area: str, run: Callable[[Ctx], object], **kwargs: object) -> None:
    add(name, area, True, run, **kwargs)  # type: ignore[arg-type]


# -- data helpers ----------------------------------------------------------------------------

SIZES = {"a": 2, "b": 3, "c": 2, "d": 2}


def codes_table(ctx: Ctx, sizes: dict[str, int] | None = None, rows: int = 300,
                name: str = "in.csv", seed: int = 0) -> tuple[str, str]:
    """A CSV of integer codes and its domain JSON; returns (csv, domain)."""
    sizes = SIZES if sizes is None else sizes
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({a: rng.integers(0, n, rows) for a, n in sizes.items()})
    csv = ctx.path(name)
    frame.to_csv(csv, index=False)
    domain = ctx.write("domain.json", json.dumps(sizes))
    return csv, domain


def synth_args(ctx: Ctx, *extra: object, out: str = "out.csv") -> list[object]:
    csv, domain = codes_table(ctx)
    return [ "synth", csv, "--domain", domain, "--epsilon", "1", "--out", ctx.path(out),
             "--no-progress", *extra]


RAW_SCHEMA = {"columns": [
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "bins": 4},
    {"name": "kids", "type": "integer", "lower": 0, "upper": 3},
]}


def raw_table(ctx: Ctx, schema: dict | None = None, body: str | None = None) -> tuple[str, str]:
    """A raw CSV and its schema JSON; returns (csv, schema)."""
    schema_path = ctx.write("schema.json", json.dumps(RAW_SCHEMA if schema is None else schema))
    if body is None:
        rng = np.random.default_rng(1)
        lines = ["sex,age,kids"] + [
            f"{'FM'[i % 2]},{rng.uniform(0, 100):.1f},{rng.integers(0, 4)}" for i in range(200)]
        body = "\n".join(lines) + "\n"
    return ctx.write("raw.csv", body), schema_path


def schema_synth(ctx: Ctx, schema: dict | None = None, body: str | None = None,
                 *extra: object) -> CLIRun:
    csv, schema_path = raw_table(ctx, schema, body)
    return ctx.cli("synth", csv, "--schema", schema_path, "--epsilon", "1", "--out",
                   ctx.path("out.csv"), "--no-progress", *extra)


def counts_csv(ctx: Ctx, body: str | None = None, name: str = "votes.csv") -> str:
    if body is None:
        body = "item,votes\nA,500\nB,300\nC,200\nD,100\nE,5\n"
    return ctx.write(name, body)


def topk(ctx: Ctx, *extra: object, body: str | None = None) -> CLIRun:
    return ctx.cli("topk", counts_csv(ctx, body), "--k", "2", "--epsilon", "1",
                   "--count-column", "votes", *extra)


def fifo(ctx: Ctx, name: str) -> str:
    p = ctx.path(name)
    os.mkfifo(p)
    return p


def device(ctx: Ctx, name: str) -> str:
    """A character device node like /dev/null (major 1, minor 3), made inside the case dir."""
    p = ctx.path(name)
    os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return p


def small_data(sizes: dict[str, int] | None = None, rows: int = 300,
               seed: int = 0) -> tuple[Dataset, Domain]:
    sizes = SIZES if sizes is None else sizes
    domain = Domain(list(sizes), list(sizes.values()))
    rng = np.random.default_rng(seed)
    records = np.column_stack([rng.integers(0, n, rows) for n in sizes.values()])
    return Dataset(records, domain), domain


def nltcs_subset(columns: int = 8) -> Dataset:
    from fastmwem.datasets import load_nltcs

    data = load_nltcs()
    return data.project(list(data.domain.attributes[:columns]))


def quiet(fn: Callable[[], object]) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# Cases are registered by the functions below, one per area.


def register_cli_synth() -> None:
    area = "cli synth"

    def synth(ctx: Ctx, *extra: object, out: str = "out.csv") -> CLIRun:
        return ctx.cli(*synth_args(ctx, *extra, out=out))

    def with_args(*extra: object) -> Callable[[Ctx], CLIRun]:
        return lambda ctx: synth(ctx, *extra)

    def replace_epsilon(value: str) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            args = synth_args(ctx)
            args[args.index("--epsilon") + 1] = value
            return ctx.cli(*args)
        return run

    for label, value in [("zero", "0"), ("negative", "-1"), ("nan", "nan"), ("inf", "inf"),
                         ("subnormal", "1e-310"), ("text", "abc"), ("empty", ""),
                         ("tiny_noise_overflow", "1e-306")]:
        bad(f"synth_epsilon_{label}", area, replace_epsilon(value), "epsilon")

    # outputs
    def out_is(target: Callable[[Ctx], str], flag: str = "--out") -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            args = synth_args(ctx)
            path = target(ctx)
            if flag == "--out":
                args[args.index("--out") + 1] = path
            else:
                args += [flag, path]
            return ctx.cli(*args)
        return run

    bad("synth_out_empty", area, out_is(lambda c: ""), ("--out", "empty"))
    bad("synth_out_proc", area, out_is(lambda c: "/proc/x.csv"), ("--out", "/proc"))
    bad("synth_report_proc", area, out_is(lambda c: "/proc/r.json", "--report"),
        ("--report", "/proc"))
    bad("synth_out_is_input", area, out_is(lambda c: c.path("in.csv")), ("input",))
    bad("synth_report_is_input", area, out_is(lambda c: c.path("in.csv"), "--report"), "input")
    bad("synth_out_is_domain", area, out_is(lambda c: c.path("domain.json")), "input")
    bad("synth_report_is_out", area, out_is(lambda c: c.path("out.csv"), "--report"),
        "same file")
    bad("synth_out_fifo", area, out_is(lambda c: fifo(c, "pipe.csv")), ("FIFO", "regular"))
    bad("synth_out_device", area, out_is(lambda c: device(c, "null")), ("device", "regular"))
    bad("synth_report_device", area, out_is(lambda c: device(c, "nullr"), "--report"),
        ("device", "regular"))

    def symlink_to(c: Ctx, target: str, name: str = "link.csv") -> str:
        os.symlink(target, c.path(name))
        return c.path(name)

    bad("synth_out_symlink", area, out_is(lambda c: symlink_to(c, c.write("t.csv", "x\n"))),
        "symbolic link")
    bad("synth_out_symlink_to_input", area, out_is(lambda c: symlink_to(c, c.path("in.csv"))),
        ("symbolic link", "input"))
    bad("synth_out_dangling_symlink", area,
        out_is(lambda c: symlink_to(c, c.path("nowhere.csv"))), "symbolic link")

    def hardlink(c: Ctx) -> str:
        os.link(c.path("in.csv"), c.path("hard.csv"))
        return c.path("hard.csv")

    bad("synth_out_hardlink_to_input", area, out_is(hardlink), "input")
    bad("synth_out_directory", area, out_is(lambda c: str(c.dir)), "directory")
    bad("synth_out_trailing_slash", area, out_is(lambda c: c.path("new") + "/"), "directory")
    bad("synth_out_missing_dir", area, out_is(lambda c: c.path("nodir/out.csv")),
        ("directory", "does not exist"))
    bad("synth_out_dotdot_input", area,
        out_is(lambda c: os.path.join(c.path("sub"), "..", "in.csv")
               if os.makedirs(c.path("sub"), exist_ok=True) is None else ""), "input")
    bad("synth_out_under_file", area, out_is(lambda c: c.path("in.csv") + "/x.csv"),
        ("directory", "not a directory", "in.csv"))

    # inputs
    def input_is(target: Callable[[Ctx], str]) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            args = synth_args(ctx)
            args[1] = target(ctx)
            return ctx.cli(*args)
        return run

    bad("synth_input_missing", area, input_is(lambda c: c.path("nope.csv")), "does not exist")
    bad("synth_input_directory", area, input_is(lambda c: str(c.dir)), "directory")
    bad("synth_input_fifo", area, input_is(lambda c: fifo(c, "in.fifo")), "regular", timeout=15)
    bad("synth_input_device", area, input_is(lambda c: device(c, "indev")), "regular")
    bad("synth_input_empty_path", area, input_is(lambda c: ""), ("INPUT", "empty"))
    bad("synth_input_not_utf8", area,
        input_is(lambda c: c.write("latin.csv", "a,b,c,d\n0,1,0,1\n\xe9,0,0,0\n".encode("latin-1"))),
        "UTF-8")
    bad("synth_input_binary", area,
        input_is(lambda c: c.write("bin.csv", bytes(range(256)) * 4)), ("UTF-8", "malformed"))

    def csv_body(body: str, sizes: dict[str, int] | None = None) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            ctx.write("domain.json", json.dumps(SIZES if sizes is None else sizes))
            return ctx.cli("synth", ctx.write("body.csv", body), "--domain", ctx.path("domain.json"),
                           "--epsilon", "1", "--out", ctx.path("out.csv"), "--no-progress")
        return run

    bad("synth_csv_extra_field", area, csv_body("a,b,c,d\n0,1,0,1\n1,2,1,0,1\n"), "fields")
    bad("synth_csv_trailing_comma", area, csv_body("a,b,c,d\n0,1,0,1,\n"),
        ("more than the header", "fields"))
    bad("synth_csv_out_of_range", area, csv_body("a,b,c,d\n0,1,0,1\n1,7,1,0\n"), "outside")
    bad("synth_csv_negative", area, csv_body("a,b,c,d\n0,1,0,1\n1,-1,1,0\n"), "outside")
    bad("synth_csv_fraction", area, csv_body("a,b,c,d\n0,1,0,1\n1,1.5,1,0\n"), "non-integer")
    bad("synth_csv_text_cell", area, csv_body("a,b,c,d\n0,1,0,1\n1,x,1,0\n"), "non-numeric")
    bad("synth_csv_empty_cell", area, csv_body("a,b,c,d\n0,1,0,1\n1,,1,0\n"), "missing")
    bad("synth_csv_short_row", area, csv_body("a,b,c,d\n0,1,0,1\n1,1\n"), "missing")
    bad("synth_csv_header_only", area, csv_body("a,b,c,d\n"), ("no data rows", "at least one"))
    bad("synth_csv_empty_file", area, csv_body(""), ("empty", "header"))
    bad("synth_csv_duplicate_columns", area, csv_body("a,b,c,d,a\n0,1,0,1,1\n"), "repeated")
    bad("synth_csv_missing_column", area, csv_body("a,b,c\n0,1,0\n"), "missing")
    bad("synth_csv_extra_column", area, csv_body("a,b,c,d,e\n0,1,0,1,1\n"), "unexpected")
    bad("synth_csv_unterminated_quote", area, csv_body('a,b,c,d\n0,1,0,"1\n1,1,1,1\n'),
        ("malformed", "non-numeric", "EOF", "quote"))
    bad("synth_csv_whitespace_header", area, csv_body("a, b,c,d\n0,1,0,1\n"),
        ("missing", "unexpected"))
    bad("synth_csv_huge_code", area, csv_body("a,b,c,d\n0,1,0,99999999999999999999999\n"),
        "outside")
    bad("synth_csv_nan_code", area, csv_body("a,b,c,d\n0,1,0,nan\n"), "missing")
    bad("synth_csv_inf_code", area, csv_body("a,b,c,d\n0,1,0,inf\n"), ("outside", "finite"))
    bad("synth_csv_bool_code", area, csv_body("a,b,c,d\n0,1,0,True\n"), ("non-numeric", "bool"))

    # domain files
    def domain_text(text: str | bytes) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            csv, _ = codes_table(ctx)
            domain = ctx.write("bad_domain.json", text)
            return ctx.cli("synth", csv, "--domain", domain, "--epsilon", "1", "--out",
                           ctx.path("out.csv"), "--no-progress")
        return run

    bad("synth_domain_duplicate_key", area, domain_text('{"a": 2, "b": 3, "c": 2, "d": 2, "a": 5}'),
        "repeats the key")
    bad("synth_domain_invalid_json", area, domain_text('{"a": 2,'), "JSON")
    bad("synth_domain_list", area, domain_text("[2, 3, 2, 2]"), "object")
    bad("synth_domain_zero_size", area, domain_text('{"a": 0, "b": 3, "c": 2, "d": 2}'), ">= 1")
    bad("synth_domain_negative", area, domain_text('{"a": -2, "b": 3, "c": 2, "d": 2}'), ">= 1")
    bad("synth_domain_float_size", area, domain_text('{"a": 2.5, "b": 3, "c": 2, "d": 2}'),
        "integer")
    bad("synth_domain_string_size", area, domain_text('{"a": "2", "b": 3, "c": 2, "d": 2}'),
        "integer")
    bad("synth_domain_bool_size", area, domain_text('{"a": true, "b": 3, "c": 2, "d": 2}'),
        "integer")
    bad("synth_domain_nan", area, domain_text('{"a": NaN, "b": 3, "c": 2, "d": 2}'),
        ("NaN", "number"))
    bad("synth_domain_empty_object", area, domain_text("{}"), ("empty",))
    bad("synth_domain_empty_name", area, domain_text('{"": 2, "b": 3, "c": 2, "d": 2}'),
        ("non-empty", "name"))
    bad("synth_domain_not_utf8", area, domain_text('{"\xe9": 2}'.encode("latin-1")), "UTF-8")
    bad("synth_domain_empty_file", area, domain_text(""), "JSON")
    bad("synth_domain_directory", area,
        lambda c: c.cli("synth", codes_table(c)[0], "--domain", str(c.dir), "--epsilon", "1",
                        "--out", c.path("out.csv")), "directory")

    # numbers and options
    bad("synth_rows_zero", area, with_args("--rows", "0"), "--rows")
    bad("synth_rows_negative", area, with_args("--rows", "-5"), "--rows")
    bad("synth_rows_float_text", area, with_args("--rows", "1e12"), "--rows")
    bad("synth_rows_1e12", area, with_args("--rows", "1000000000000"), ("disk", "--rows"))
    bad("synth_rounds_zero", area, with_args("--rounds", "0"), "--rounds")
    bad("synth_rounds_too_many", area, with_args("--rounds", "1000"), ("rounds", "candidate"))
    bad("synth_reuse_passes_huge", area, with_args("--reuse-passes", "1000000"),
        "reuse_passes", timeout=30)
    bad("synth_reuse_passes_negative", area, with_args("--reuse-passes", "-1"), "reuse_passes")
    bad("synth_seed_negative", area, with_args("--seed", "-1"), "--seed")
    bad("synth_seed_text", area, with_args("--seed", "abc"), "--seed")
    bad("synth_init_bogus", area, with_args("--init", "zeros"), "--init")
    bad("synth_output_bogus", area, with_args("--output", "best"), "--output")
    bad("synth_selection_bogus", area, with_args("--selection", "greedy"), "--selection")
    bad("synth_index_without_lazy", area, with_args("--index", "flat"), ("index", "lazy"))
    bad("synth_index_approximate", area, with_args("--selection", "lazy", "--index", "hnswlib"),
        ("approximate", "guarantee", "index"))
    bad("synth_index_bogus", area, with_args("--selection", "lazy", "--index", "kdtree"), "index")
    bad("synth_unknown_flag", area, with_args("--epsilom", "1"), ("unrecognized", "epsilom"))
    for spec, expect in [("counting:100000000", ("counting", "queries", "memory", "bytes")),
                         ("counting:0", ">= 1"), ("marginals:0", ">= 1"),
                         ("marginals:99", "marginal order"), ("marginals:3-1", "marginal order"),
                         ("marginals:abc", "not an integer"), ("marginals", "marginals:3"),
                         ("foo:3", "unknown workload"), ("ranges:0", ">= 1"),
                         ("ranges:5:zz", "unknown attribute"), ("intervals:zz", "unknown attribute"),
                         ("intervals:a,b", "one attribute"), ("parities:2", "binary"),
                         ("parities:9", "order"), ("", "workload")]:
        bad(f"synth_workload_{spec.replace(':', '_').replace(',', '_') or 'empty'}", area,
            with_args("--workload", spec), expect, timeout=45)

    # sources
    bad("synth_demo_with_input", area,
        lambda c: c.cli("synth", codes_table(c)[0], "--demo", "--epsilon", "1", "--out",
                        c.path("out.csv")), "--demo")
    bad("synth_demo_with_domain", area,
        lambda c: c.cli("synth", "--demo", "--domain", codes_table(c)[1], "--epsilon", "1",
                        "--out", c.path("out.csv")), "--demo")
    bad("synth_no_domain", area,
        lambda c: c.cli("synth", codes_table(c)[0], "--epsilon", "1", "--out", c.path("o.csv")),
        ("--domain", "--schema"))
    bad("synth_no_input", area,
        lambda c: c.cli("synth", "--epsilon", "1", "--out", c.path("o.csv")), ("INPUT", "--demo"))
    bad("synth_domain_and_schema", area,
        lambda c: c.cli("synth", codes_table(c)[0], "--domain", c.path("domain.json"),
                        "--schema", c.path("domain.json"), "--epsilon", "1", "--out",
                        c.path("o.csv")), ("not allowed", "--schema"))
    bad("synth_missing_out", area,
        lambda c: c.cli("synth", "--demo", "--epsilon", "1"), "--out")

    # resource bounds: 2^26 cells (only the refusal; the memory limit keeps it from running)
    def wide(ctx: Ctx, columns: int, workload: str = "counting:25") -> CLIRun:
        sizes = {f"x{i}": 2 for i in range(columns)}
        csv, domain = codes_table(ctx, sizes, rows=50)
        return ctx.cli("synth", csv, "--domain", domain, "--epsilon", "1", "--out",
                       ctx.path("out.csv"), "--workload", workload, "--no-progress")

    # Counting queries have no marginal structure, so only a dense model could run them; a
    # marginal workload on the same tables runs a factored model (the valid cases below).
    bad("synth_2_26_cells_limited_memory", area, lambda c: wide(c, 26), ("memory", "GB"),
        env={"FASTMWEM_MEMORY_LIMIT": "2G"})
    bad("synth_2_27_cells", area, lambda c: wide(c, 27), ("cells", "limit"))
    bad("synth_2_40_cells", area, lambda c: wide(c, 40), ("cells", "limit"))
    good("synth_2_40_cells_marginals_factored", "valid cli",
         lambda c: wide(c, 40, "marginals:1").err[-120:])

    # schema files
    def schema_case(schema: dict | str | bytes, body: str | None = None) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            ctx.markers.append("QzSecretLabel")
            if schema is None or isinstance(schema, dict):
                return schema_synth(ctx, schema, body)
            csv, _ = raw_table(ctx, None, body)
            path = ctx.write("schema2.json", schema)
            return ctx.cli("synth", csv, "--schema", path, "--epsilon", "1", "--out",
                           ctx.path("out.csv"), "--no-progress")
        return run

    def col(**kw: object) -> dict:
        return {"columns": [{"name": "sex", "type": "categorical", "categories": ["F", "M"]},
                            {"name": "age", "type": "numeric", "lower": 0, "upper": 100,
                             "bins": 4},
                            {"name": "kids", **kw}]}

    bad("schema_bins_2e8", area, schema_case(col(type="numeric", lower=0, upper=3, bins=200000000)),
        ("bins", "limit"))
    bad("schema_bins_float", area, schema_case(col(type="numeric", lower=0, upper=3, bins=2.5)),
        "bins")
    bad("schema_numeric_1e308", area,
        schema_case(col(type="numeric", lower=-1e308, upper=1e308, bins=4)), "overflow")
    bad("schema_empty_category", area, schema_case(col(type="categorical", categories=["", "1"])),
        "empty string")
    bad("schema_duplicate_categories", area,
        schema_case(col(type="categorical", categories=["1", "1"])), "unique")
    bad("schema_category_text_clash", area,
        schema_case(col(type="categorical", categories=[1, "1"])), "unique")
    bad("schema_unknown_type", area, schema_case(col(type="ordinal", lower=0, upper=3)),
        "type")
    bad("schema_unknown_key", area, schema_case(col(type="integer", lower=0, upper=3, step=1)),
        "unknown keys")
    bad("schema_missing_key", area, schema_case(col(type="integer", lower=0)), "missing keys")
    bad("schema_lower_above_upper", area, schema_case(col(type="integer", lower=3, upper=0)),
        ("lower", "upper"))
    bad("schema_edges_not_increasing", area,
        schema_case(col(type="numeric", edges=[0, 2, 1, 3])), "increasing")
    bad("schema_duplicate_json_key", area,
        schema_case('{"columns": [], "columns": []}'), "repeats the key")
    bad("schema_not_utf8", area, schema_case('{"columns": ["\xe9"]}'.encode("latin-1")), "UTF-8")
    bad("schema_empty_columns", area, schema_case({"columns": []}), ("at least one", "column"))
    bad("schema_duplicate_names", area,
        schema_case({"columns": [{"name": "sex", "type": "categorical", "categories": ["F", "M"]},
                                 {"name": "sex", "type": "integer", "lower": 0, "upper": 3}]}),
        "unique")
    bad("schema_value_out_of_bounds", area,
        schema_case(None, "sex,age,kids\nF,10,1\nM,150,2\n"), "outside")
    bad("schema_undeclared_category", area,
        schema_case(None, "sex,age,kids\nF,10,1\nQzSecretLabel,15,2\n"), "not declared")
    bad("schema_integer_fraction", area, schema_case(None, "sex,age,kids\nF,10,1.5\n"),
        "non-integer")
    bad("schema_numeric_text", area, schema_case(None, "sex,age,kids\nF,ten,1\n"), "non-numeric")
    bad("schema_missing_cell", area, schema_case(None, "sex,age,kids\n,10,1\n"), "missing")
    bad("schema_header_only", area, schema_case(None, "sex,age,kids\n"), "no data rows")
    bad("schema_padded_category", area, schema_case(None, "sex,age,kids\n F,10,1\n"),
        "not declared")
    bad("schema_extra_field", area, schema_case(None, "sex,age,kids\nF,10,1,9\n"),
        "fields")
    bad("schema_inf_age", area, schema_case(None, "sex,age,kids\nF,inf,1\n"), "outside")


register_cli_synth()


def register_cli_topk() -> None:
    area = "cli topk"

    def args(*extra: object) -> Callable[[Ctx], CLIRun]:
        return lambda ctx: topk(ctx, *extra)

    def body(text: str, *extra: object) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            ctx.markers.append("QzSecret")
            return topk(ctx, *extra, body=text)
        return run

    def replace(flag: str, value: str) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            argv = ["topk", counts_csv(ctx), "--k", "2", "--epsilon", "1", "--count-column",
                    "votes"]
            argv[argv.index(flag) + 1] = value
            return ctx.cli(*argv)
        return run

    for label, value in [("zero", "0"), ("negative", "-3"), ("text", "two"), ("float", "1.5")]:
        bad(f"topk_k_{label}", area, replace("--k", value), ("k", "--k"))
    bad("topk_k_above_items", area, replace("--k", "6"), ("exceeds", "number of items"))
    for label, value in [("zero", "0"), ("nan", "nan"), ("inf", "inf"), ("subnormal", "1e-310"),
                         ("negative", "-1")]:
        bad(f"topk_epsilon_{label}", area, replace("--epsilon", value), "epsilon")
    bad("topk_method_bogus", area, args("--method", "best"), "--method")
    bad("topk_delta_with_joint", area, args("--delta", "1e-6"), "--delta")
    for label, value in [("zero", "0"), ("one", "1"), ("nan", "nan")]:
        bad(f"topk_cdp_delta_{label}", area, args("--method", "cdp-peel", "--delta", value),
            "delta")
    bad("topk_neighbors_bogus", area, args("--neighbors", "swap"), "--neighbors")
    bad("topk_seed_negative", area, args("--seed", "-4"), "--seed")
    bad("topk_count_column_missing", area,
        lambda c: c.cli("topk", counts_csv(c), "--k", "2", "--epsilon", "1", "--count-column",
                        "nope"), ("nope", "--count-column"))
    bad("topk_item_column_missing", area, args("--item-column", "film"), ("film",))
    bad("topk_item_equals_count", area, args("--item-column", "votes"), "different columns")
    bad("topk_both_sources", area, args("--user-column", "user"), ("not allowed", "--user-column"))
    bad("topk_no_source", area,
        lambda c: c.cli("topk", counts_csv(c), "--k", "2", "--epsilon", "1"),
        ("--count-column", "--user-column"))
    bad("topk_header_only", area, body("item,votes\n"), ("no data rows", "header"))
    bad("topk_empty_file", area, body(""), ("empty", "header"))
    bad("topk_duplicate_item_column", area, body("item,votes,item\nA,5,B\nC,3,D\nE,1,F\n"),
        ("repeated", "item"))
    bad("topk_whitespace_item", area, body("item,votes\nA,5\n A,3\nB,1\n"), "whitespace")
    bad("topk_trailing_space_item", area, body("item,votes\nA,5\nA ,3\nB,1\n"), "whitespace")
    bad("topk_empty_item", area, body("item,votes\nA,5\n,3\nB,1\n"), "empty")
    bad("topk_negative_count", area, body("item,votes\nA,5\nB,-3\nC,1\n"), "non-negative")
    bad("topk_fraction_count", area, body("item,votes\nA,5\nB,3.5\nC,1\n"), "integers")
    bad("topk_text_count", area, body("item,votes\nA,5\nB,QzSecret\nC,1\n"), "integers")
    bad("topk_huge_count", area, body("item,votes\nA,5\nB,100000000000000000000\nC,1\n"),
        "2**53")
    bad("topk_inf_count", area, body("item,votes\nA,5\nB,inf\nC,1\n"), "integers")
    bad("topk_nan_count", area, body("item,votes\nA,5\nB,nan\nC,1\n"), "integers")
    bad("topk_empty_count", area, body("item,votes\nA,5\nB,\nC,1\n"), "empty")
    bad("topk_bool_count", area, body("item,votes\nA,5\nB,True\nC,1\n"), "integers")
    bad("topk_duplicate_item_rows", area, body("item,votes\nA,5\nA,3\nC,1\n"), "more than one")
    bad("topk_extra_field", area, body("item,votes\nA,5\nB,3,1\nC,1\n"), "fields")
    bad("topk_unterminated_quote", area, body('item,votes\nA,5\n"B,3\nC,1\n'),
        ("malformed", "integers", "quote", "EOF"))
    bad("topk_not_utf8", area,
        lambda c: c.cli("topk", c.write("l.csv", "item,votes\n\xe9,5\nB,3\n".encode("latin-1")),
                        "--k", "1", "--epsilon", "1", "--count-column", "votes"), "UTF-8")
    bad("topk_input_directory", area,
        lambda c: c.cli("topk", str(c.dir), "--k", "1", "--epsilon", "1", "--count-column",
                        "votes"), "directory")
    bad("topk_input_missing", area,
        lambda c: c.cli("topk", c.path("none.csv"), "--k", "1", "--epsilon", "1",
                        "--count-column", "votes"), "does not exist")
    bad("topk_input_fifo", area,
        lambda c: c.cli("topk", fifo(c, "f.csv"), "--k", "1", "--epsilon", "1",
                        "--count-column", "votes"), "regular", timeout=15)
    bad("topk_user_empty_user", area,
        lambda c: c.cli("topk", c.write("r.csv", "user,item\nu1,A\n,B\nu2,A\n"), "--k", "1",
                        "--epsilon", "1", "--user-column", "user"), "empty")

    def items(text: str | bytes, *extra: object) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            path = ctx.write("items.txt", text)
            return topk(ctx, "--items", path, *extra)
        return run

    bad("topk_items_duplicate", area, items("A\nB\nC\nD\nE\nA\n"), "twice")
    bad("topk_items_whitespace", area, items("A\nB \nC\nD\nE\n"), "whitespace")
    bad("topk_items_empty", area, items(""), "no items")
    bad("topk_items_not_utf8", area, items("A\nB\n\xe9\n".encode("latin-1")), "UTF-8")
    bad("topk_items_missing_item", area, items("A\nB\nC\n"), ("not in", "--items"))
    bad("topk_items_directory", area, lambda c: topk(c, "--items", str(c.dir)), "directory")
    bad("topk_items_missing_file", area, lambda c: topk(c, "--items", c.path("no.txt")),
        "does not exist")
    bad("topk_out_is_input", area, lambda c: topk(c, "--out", c.path("votes.csv")), "input")
    bad("topk_out_is_items", area,
        lambda c: topk(c, "--items", c.write("items.txt", "A\nB\nC\nD\nE\n"), "--out",
                       c.path("items.txt")), "input")
    bad("topk_out_fifo", area, lambda c: topk(c, "--out", fifo(c, "o.fifo")), ("FIFO", "regular"))
    bad("topk_out_device", area, lambda c: topk(c, "--out", device(c, "nul")),
        ("device", "regular"))
    bad("topk_out_symlink", area,
        lambda c: topk(c, "--out", (os.symlink(c.write("t.csv", ""), c.path("ln")), c.path("ln"))[1]),
        "symbolic link")
    bad("topk_out_empty", area, lambda c: topk(c, "--out", ""), "empty")
    bad("topk_out_proc", area, lambda c: topk(c, "--out", "/proc/top.csv"), "/proc")
    bad("topk_out_directory", area, lambda c: topk(c, "--out", str(c.dir)), "directory")

    def many_items(ctx: Ctx, d: int, k: int, method: str = "joint") -> CLIRun:
        rng = np.random.default_rng(3)
        counts = rng.zipf(1.3, d).clip(max=10**9)
        frame = pd.DataFrame({"item": [f"i{j}" for j in range(d)], "votes": counts})
        frame.to_csv(ctx.path("many.csv"), index=False)
        return ctx.cli("topk", ctx.path("many.csv"), "--k", k, "--epsilon", "1",
                       "--count-column", "votes", "--method", method, "--out",
                       ctx.path("top.csv"))

    bad("topk_k_50000_joint", area, lambda c: many_items(c, 166000, 50000),
        ("levels", "limit", "smaller k"), timeout=60)
    bad("topk_k_50000_pnf_joint", area, lambda c: many_items(c, 166000, 50000, "pnf-joint"),
        ("levels", "limit", "smaller k"), timeout=60)


register_cli_topk()


def register_api_data() -> None:
    area = "api data"
    d = Domain(["a", "b"], [2, 3])
    for name, fn, expect in [
        ("domain_empty", lambda: Domain([], []), "empty"),
        ("domain_string_attributes", lambda: Domain("ab", [2, 2]), "single string"),
        ("domain_repeated", lambda: Domain(["a", "a"], [2, 2]), "unique"),
        ("domain_zero_size", lambda: Domain(["a"], [0]), ">= 1"),
        ("domain_float_size", lambda: Domain(["a"], [2.5]), "integer"),
        ("domain_bool_size", lambda: Domain(["a"], [True]), "integer"),
        ("domain_length_mismatch", lambda: Domain(["a"], [2, 3]), "same length"),
        ("domain_empty_name", lambda: Domain([""], [2]), "non-empty"),
        ("domain_int_name", lambda: Domain([1], [2]), "strings"),
        ("domain_numpy_negative", lambda: Domain(["a"], [np.int64(-1)]), ">= 1"),
        ("domain_from_dict_list", lambda: Domain.from_dict([("a", 2)]), "mapping"),
        ("domain_project_unknown", lambda: d.project(["zz"]), "unknown attribute"),
        ("domain_axes_repeated", lambda: d.axes(["a", "a"]), "unique"),
        ("dataset_out_of_range", lambda: Dataset([[0, 5]], d), "outside"),
        ("dataset_negative", lambda: Dataset([[0, -1]], d), "outside"),
        ("dataset_floats", lambda: Dataset([[0.0, 1.0]], d), "integer"),
        ("dataset_empty", lambda: Dataset(np.zeros((0, 2), dtype=int), d), "empty"),
        ("dataset_ragged", lambda: Dataset([[0, 1], [1]], d), ("rectangular", "2-D")),
        ("dataset_strings", lambda: Dataset([["0", "1"]], d), "integer"),
        ("dataset_1d", lambda: Dataset([0, 1], d), "2-D"),
        ("dataset_wrong_columns", lambda: Dataset([[0, 1, 0]], d), "columns"),
        ("dataset_not_domain", lambda: Dataset([[0, 1]], {"a": 2, "b": 3}), "Domain"),
        ("dataset_bool", lambda: Dataset(np.array([[True, False]]), d), ("integer", "bool")),
        ("dataset_uint64_huge", lambda: Dataset(np.array([[0, 2**64 - 1]], dtype=np.uint64), d),
         "outside"),
        ("dataset_frame_missing_col", lambda: Dataset(pd.DataFrame({"a": [0]}), d), "missing"),
        ("dataset_frame_float_col", lambda: Dataset(pd.DataFrame({"a": [0], "b": [1.0]}), d),
         "integer"),
        ("dataset_frame_nullable_na",
         lambda: Dataset(pd.DataFrame({"a": pd.array([0, None], dtype="Int64"),
                                       "b": [1, 2]}), d), "missing"),
        ("dataset_frame_bool_col",
         lambda: Dataset(pd.DataFrame({"a": [True], "b": [1]}), d), ("integer", "bool")),
        ("dataset_histogram_too_big",
         lambda: Dataset(np.zeros((1, 30), dtype=int),
                         Domain([f"x{i}" for i in range(30)], [2] * 30)).histogram(), "limit"),
        ("dataset_marginal_unknown", lambda: Dataset([[0, 1]], d).marginal(["zz"]),
         "unknown attribute"),
        ("dataset_marginal_int", lambda: Dataset([[0, 1]], d).marginal([0]), "names"),
        ("categorical_empty", lambda: Categorical("c", []), "empty"),
        ("categorical_repeated", lambda: Categorical("c", ["a", "a"]), "unique"),
        ("categorical_empty_label", lambda: Categorical("c", ["", "x"]), "empty string"),
        ("categorical_text_clash", lambda: Categorical("c", ["1", 1]), "unique"),
        ("categorical_string", lambda: Categorical("c", "abc"), "not a string"),
        ("categorical_none_label", lambda: Categorical("c", [None]), ("string or a number",)),
        ("categorical_nan_label", lambda: Categorical("c", [float("nan")]), "finite"),
        ("categorical_other_clash", lambda: Categorical("c", ["1"], other=1), "clashes"),
        ("numeric_1e308", lambda: Numeric("x", -1e308, 1e308, bins=4), "overflow"),
        ("numeric_bins_2e8", lambda: Numeric("x", 0, 1, bins=2 * 10**8), "limit"),
        ("numeric_bins_zero", lambda: Numeric("x", 0, 1, bins=0), ">= 1"),
        ("numeric_bins_float", lambda: Numeric("x", 0, 1, bins=2.5), "integer"),
        ("numeric_bins_bool", lambda: Numeric("x", 0, 1, bins=True), "integer"),
        ("numeric_reversed", lambda: Numeric("x", 1, 0, bins=2), "lower < upper"),
        ("numeric_no_bins", lambda: Numeric("x", 0, 1), "bins"),
        ("numeric_nan_upper", lambda: Numeric("x", 0, float("nan"), bins=2), "finite"),
        ("numeric_inf_upper", lambda: Numeric("x", 0, float("inf"), bins=2), "finite"),
        ("numeric_flat_edges", lambda: Numeric("x", edges=[0, 0, 1]), "increasing"),
        ("numeric_one_edge", lambda: Numeric("x", edges=[0]), "at least 2"),
        ("numeric_clip_text", lambda: Numeric("x", 0, 1, bins=2, clip="yes"), "clip"),
        ("numeric_subnormal_width", lambda: Numeric("x", 0, 5e-324, bins=4),
         ("width", "bins", "edges")),
        ("integer_reversed", lambda: Integer("x", 5, 0), ("lower", "upper")),
        ("integer_too_wide", lambda: Integer("x", 0, 2**40), "limit"),
        ("integer_float_bounds", lambda: Integer("x", 0.5, 3), "integer"),
        ("schema_api_empty", lambda: Schema([]), "at least one"),
        ("schema_api_duplicate_names", lambda: Schema([Integer("x", 0, 1), Integer("x", 0, 2)]),
         "unique"),
        ("schema_bad_column", lambda: Schema(["x"]), "Categorical"),
        ("schema_from_dict_unknown", lambda: Schema.from_dict({"cols": []}), "unknown keys"),
        ("schema_encode_missing_col",
         lambda: Schema([Integer("x", 0, 3)]).encode(pd.DataFrame({"y": [1]})), "missing"),
        ("schema_encode_out_of_bounds",
         lambda: Schema([Integer("x", 0, 3)]).encode(pd.DataFrame({"x": [7]})), "outside"),
        ("schema_encode_bool_numeric",
         lambda: Schema([Numeric("x", 0, 3, bins=3)]).encode(pd.DataFrame({"x": [True]})),
         "boolean"),
        ("schema_infer_no_optin", lambda: Schema.infer(pd.DataFrame({"x": [1]})), "leaks"),
        ("schema_decode_wrong_domain",
         lambda: Schema([Integer("x", 0, 3)]).decode(Dataset([[0, 1]], d)), "domain"),
        ("schema_decode_out_of_range",
         lambda: Schema([Integer("x", 0, 3)]).decode(np.array([[9]])), "outside"),
        ("schema_decode_numeric_mode",
         lambda: Schema([Integer("x", 0, 3)]).decode(np.array([[1]]), numeric="mean"), "numeric"),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect)

    # files read by the library
    def file_case(reader: Callable[[str], object], text: str | bytes,
                  name: str = "f.csv") -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            ctx.markers.append("QzSecret")
            return reader(ctx.write(name, text))
        return run

    dom = Domain(["a", "b"], [2, 3])
    from_csv = lambda p: Dataset.from_csv(p, dom)  # noqa: E731
    schema = Schema([Categorical("s", ["F", "M"]), Integer("k", 0, 3)])
    for name, reader, text, expect in [
        ("from_csv_extra_field", from_csv, "a,b\n0,1\n1,2,0\n", "fields"),
        ("from_csv_header_only", from_csv, "a,b\n", "no data rows"),
        ("from_csv_empty", from_csv, "", "empty"),
        ("from_csv_duplicate_columns", from_csv, "a,b,a\n0,1,1\n", "repeated"),
        ("from_csv_not_utf8", from_csv, "a,b\n0,\xe9\n".encode("latin-1"), "UTF-8"),
        ("from_csv_text", from_csv, "a,b\n0,QzSecret\n", "non-numeric"),
        ("from_csv_fraction", from_csv, "a,b\n0,1.5\n", "non-integer"),
        ("from_csv_blank_lines_only", from_csv, "a,b\n\n\n", "no data rows"),
        ("from_csv_crlf_extra", from_csv, "a,b\r\n0,1\r\n1,2,3\r\n", "fields"),
        ("from_csv_nul_bytes", from_csv, b"a,b\n0,\x001\n", ("non-numeric", "NUL", "malformed")),
        ("encode_csv_extra_field", schema.encode_csv, "s,k\nF,1,2\n", "more than the header"),
        ("encode_csv_header_only", schema.encode_csv, "s,k\n", "no data rows"),
        ("encode_csv_undeclared", schema.encode_csv, "s,k\nQzSecret,1\n", "not declared"),
        ("encode_csv_padded", schema.encode_csv, "s,k\nF ,1\n", "not declared"),
        ("encode_csv_not_utf8", schema.encode_csv, "s,k\n\xe9,1\n".encode("latin-1"), "UTF-8"),
        ("encode_csv_duplicate_columns", schema.encode_csv, "s,k,s\nF,1,M\n", "repeated"),
        ("read_columns_missing", lambda p: read_csv_columns(p, ["zz"]), "a,b\n0,1\n", "missing"),
        ("domain_json_duplicate", Domain.from_json, '{"a": 2, "a": 3}', "repeats the key"),
        ("domain_json_invalid", Domain.from_json, "{", "JSON"),
        ("domain_json_nan", Domain.from_json, '{"a": NaN}', ("NaN", "number")),
        ("domain_json_not_utf8", Domain.from_json, '{"\xe9": 2}'.encode("latin-1"), "UTF-8"),
        ("domain_json_nested", Domain.from_json, '{"a": {"size": 2}}', "integer"),
        ("schema_json_duplicate", Schema.from_json, '{"columns": [], "columns": []}',
         "repeats the key"),
        ("schema_json_list", Schema.from_json, "[]", "object"),
        ("schema_json_bad_column", Schema.from_json, '{"columns": [5]}', "object"),
    ]:
        bad(name, area, file_case(reader, text), expect)

    bad("from_csv_directory", area, lambda c: Dataset.from_csv(str(c.dir), dom), "directory")
    bad("from_csv_missing", area, lambda c: Dataset.from_csv(c.path("no.csv"), dom),
        "does not exist")
    bad("from_csv_fifo", area, lambda c: Dataset.from_csv(fifo(c, "p.csv"), dom),
        ("regular", "FIFO"), timeout=15)
    bad("domain_json_directory", area, lambda c: Domain.from_json(str(c.dir)), "directory")
    bad("write_csv_int_columns", area,
        lambda c: write_csv(pd.DataFrame({0: ["a"]}), c.path("w.csv")), "strings")


register_api_data()


def register_api_workloads() -> None:
    area = "api workloads"
    d = Domain(["a", "b", "c"], [2, 3, 2])
    other = Domain(["a", "b", "c"], [2, 3, 3])
    for name, fn, expect in [
        ("marginals_order_zero", lambda: Marginals.all_kway(d, 0), ">= 1"),
        ("marginals_order_high", lambda: Marginals.all_kway(d, 9), "<= 3"),
        ("marginals_unknown_attr", lambda: Marginals(d, [["zz"]]), "unknown attribute"),
        ("marginals_no_sets", lambda: Marginals(d, []), "at least one"),
        ("marginals_repeated", lambda: Marginals(d, [["a"], ["a"]]), "repeat"),
        ("marginals_empty_set", lambda: Marginals(d, [[]]), "empty"),
        ("marginals_not_domain", lambda: Marginals({"a": 2}, [["a"]]), "Domain"),
        ("matrix_nan", lambda: MatrixWorkload(d, np.full((1, 12), np.nan)), "finite"),
        ("matrix_1e308", lambda: MatrixWorkload(d, np.full((1, 12), 1e308)), "within"),
        ("matrix_wrong_width", lambda: MatrixWorkload(d, np.ones((1, 5))), "columns"),
        ("matrix_no_rows", lambda: MatrixWorkload(d, np.ones((0, 12))), "at least one row"),
        ("matrix_3d", lambda: MatrixWorkload(d, np.ones((1, 1, 12))), "2-D"),
        ("matrix_strings", lambda: MatrixWorkload(d, [["a"] * 12]), "real numbers"),
        ("matrix_groups_decreasing", lambda: MatrixWorkload(d, np.ones((3, 12)), groups=[0, 2, 1, 3]),
         "increasing"),
        ("matrix_groups_wrong_end", lambda: MatrixWorkload(d, np.ones((3, 12)), groups=[0, 2]),
         "n_queries"),
        ("matrix_groups_float", lambda: MatrixWorkload(d, np.ones((3, 12)), groups=[0, 1.5, 3]),
         "integer"),
        ("ranges_unknown_attr", lambda: RangeQueries.random(d, ["zz"], 5, rng=0),
         "unknown attribute"),
        ("ranges_zero_queries", lambda: RangeQueries.random(d, ["a"], 0, rng=0), ">= 1"),
        ("ranges_no_attributes", lambda: RangeQueries.random(d, [], 5, rng=0), "at least one"),
        ("counting_zero", lambda: RandomCountingQueries(d, 0, rng=0), ">= 1"),
        ("counting_density_zero", lambda: RandomCountingQueries(d, 5, rng=0, density=0),
         "density"),
        ("counting_too_many",
         lambda: RandomCountingQueries(Domain(["x"], [2**20]), 10**5, rng=0),
         ("MAX_PACKED_BYTES", "memory", "bytes")),
        ("parities_non_binary", lambda: Parities.all_kway(d, 2), "binary"),
        ("intervals_unknown", lambda: AllIntervals(d, "zz"), "unknown attribute"),
        ("intervals_int_attr", lambda: AllIntervals(d, 0), "attribute name"),
        ("concatenate_domains",
         lambda: Concatenate([Marginals.all_kway(d, 1), Marginals.all_kway(other, 1)]),
         "domain"),
        ("concatenate_empty", lambda: Concatenate([]), "at least one"),
        ("concatenate_non_workload", lambda: Concatenate([1, 2]), "not a workload"),
        ("parse_workload_empty", lambda: parse_workload("", d), "workload"),
        ("parse_workload_none", lambda: parse_workload(None, d), "workload"),
        ("answer_wrong_histogram", lambda: Marginals.all_kway(d, 1).answer(np.ones(5)), "cells"),
        ("answer_nan_histogram",
         lambda: Marginals.all_kway(d, 1).answer(np.full(12, np.nan)), "finite"),
        ("answer_group_out_of_range",
         lambda: Marginals.all_kway(d, 1).answer_group(np.ones(12), 7), ("group", "range")),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect, timeout=45)


def register_api_release() -> None:
    area = "api release"
    data, dom = small_data()
    work = Marginals.all_kway(dom, 2)

    def run_mwem(ctx: Ctx, dataset: object = data, workload: object = work,
                 **kwargs: object) -> object:
        kwargs.setdefault("epsilon", 1.0)
        kwargs.setdefault("rounds", 3)
        kwargs.setdefault("accountant", ctx.acc(float(kwargs["epsilon"])
                                                if isinstance(kwargs["epsilon"], float)
                                                and math.isfinite(kwargs["epsilon"])
                                                and kwargs["epsilon"] > 1e-300 else 1.0))
        return quiet(lambda: mwem(dataset, workload, rng=np.random.default_rng(0), **kwargs))

    for name, kwargs, expect in [
        ("mwem_epsilon_zero", {"epsilon": 0.0}, "epsilon"),
        ("mwem_epsilon_negative", {"epsilon": -1.0}, "epsilon"),
        ("mwem_epsilon_nan", {"epsilon": float("nan")}, "epsilon"),
        ("mwem_epsilon_inf", {"epsilon": float("inf")}, "epsilon"),
        ("mwem_epsilon_subnormal", {"epsilon": 1e-310}, "epsilon"),
        ("mwem_epsilon_string", {"epsilon": "1"}, "epsilon"),
        ("mwem_epsilon_bool", {"epsilon": True}, "epsilon"),
        ("mwem_epsilon_noise_overflow", {"epsilon": 1e-305}, ("noise scale", "epsilon")),
        ("mwem_rounds_zero", {"rounds": 0}, "rounds"),
        ("mwem_rounds_float", {"rounds": 1.5}, "rounds"),
        ("mwem_rounds_bool", {"rounds": True}, "rounds"),
        ("mwem_rounds_above_candidates", {"rounds": 7}, ("rounds", "candidate")),
        ("mwem_reuse_million", {"reuse_passes": 10**6}, "reuse_passes"),
        ("mwem_init_bogus", {"init": "zeros"}, "init"),
        ("mwem_output_bogus", {"output": "best"}, "output"),
        ("mwem_measure_bogus", {"measure": "all"}, "measure"),
        ("mwem_selection_bogus", {"selection": "greedy"}, "selection"),
        ("mwem_selection_hnsw", {"selection": "lazy", "index": "hnswlib"},
         ("approximate", "guarantee", "index")),
        ("mwem_index_without_lazy", {"index": "flat"}, ("index", "lazy")),
        ("mwem_count_fraction_big", {"count_fraction": 1.5}, "count_fraction"),
        ("mwem_total_zero", {"total": 0}, "total"),
        ("mwem_total_huge", {"total": 2**60}, "total"),
        ("mwem_cell_penalty_negative", {"cell_penalty": -1.0}, "cell_penalty"),
        ("mwem_noise_test_two", {"noise_test": 2.0}, "noise_test"),
        ("mwem_unknown_option", {"reuse": 3}, "reuse"),
        ("mwem_memory_limit_zero", {"memory_limit": 0}, "memory_limit"),
        ("mwem_reuse_tolerance_nan", {"reuse_tolerance": float("nan")}, "reuse_tolerance"),
        ("mwem_top_k_zero", {"selection": "lazy", "top_k": 0}, ("k", "top_k")),
        ("mwem_init_fraction_one", {"init": "noisy-histogram", "init_fraction": 1.0},
         "init_fraction"),
        ("mwem_fractions_sum_one",
         {"init": "noisy-histogram", "init_fraction": 0.5, "count_fraction": 0.5},
         ("no budget", "sum")),
        ("mwem_exclude_measured_int", {"exclude_measured": 1}, "exclude_measured"),
    ]:
        bad(name, area, lambda ctx, kw=kwargs: run_mwem(ctx, **kw), expect)

    bad("mwem_domain_mismatch", area,
        lambda c: run_mwem(c, workload=Marginals.all_kway(Domain(["a", "b"], [2, 2]), 1)),
        "domains")
    bad("mwem_dataset_not_dataset", area, lambda c: run_mwem(c, dataset=np.zeros((3, 4))),
        "Dataset")
    bad("mwem_workload_list", area, lambda c: run_mwem(c, workload=[[1, 0]]), "workload")
    bad("mwem_accountant_wrong_type", area, lambda c: run_mwem(c, accountant="acc"), "Accountant")
    bad("mwem_accountant_too_small", area, lambda c: run_mwem(c, accountant=c.acc(0.5)),
        "exceed")
    bad("mwem_accountant_rho_small", area,
        lambda c: run_mwem(c, accountant=(lambda a: (TRACKED.add(id(a)), a)[1])(
            Accountant(rho=0.001))), "exceed")
    bad("mwem_schema_mismatch", area,
        lambda c: run_mwem(c, schema=Schema([Integer("x", 0, 3)])), "schema")
    bad("mwem_all_zero_matrix", area,
        lambda c: run_mwem(c, workload=MatrixWorkload(dom, np.zeros((4, dom.size))), rounds=1),
        ("all zero", "nothing to measure"))
    bad("mwem_all_zero_groups_rounds", area,
        lambda c: run_mwem(c, workload=MatrixWorkload(
            dom, np.vstack([np.ones((1, dom.size)), np.zeros((3, dom.size))])), rounds=2),
        ("rounds", "candidate"))
    bad("mwem_entries_1e201", area,
        lambda c: run_mwem(c, workload=MatrixWorkload(dom, np.full((2, dom.size), 1e201))),
        "within")

    def wide_mwem(ctx: Ctx, columns: int, **kwargs: object) -> object:
        wide = Domain([f"x{i}" for i in range(columns)], [2] * columns)
        dataset = Dataset(np.zeros((5, columns), dtype=np.int64), wide)
        return quiet(lambda: mwem(dataset, Marginals.all_kway(wide, 1), epsilon=1.0, rounds=5,
                                  rng=np.random.default_rng(0), accountant=ctx.acc(), **kwargs))

    # model="dense" asked for; by itself ("auto") mwem runs these factored (valid cases below)
    bad("mwem_2_26_cells_memory_limit", area,
        lambda c: wide_mwem(c, 26, memory_limit=2**31, model="dense"), ("memory", "GB"))
    bad("mwem_2_27_cells", area, lambda c: wide_mwem(c, 27, model="dense"), ("cells", "limit"))
    def wide_auto(ctx: Ctx) -> str:
        result = wide_mwem(ctx, 27)
        kind = "dense" if result.model is None else result.model.kind  # type: ignore[attr-defined]
        ctx.check(kind == "junction-tree", f"model {kind!r} on 2^27 cells")
        return kind

    good("mwem_2_27_cells_auto_factored", "valid api", wide_auto)

    def resources_2_26(ctx: Ctx) -> str:
        wide = Domain([f"x{i}" for i in range(26)], [2] * 26)
        res = mwem_resources(MWEMConfig(epsilon=1.0, rounds=25), Marginals.all_kway(wide, 3))
        text = res.describe()
        ctx.check(res.memory_bytes < 8 * 2**30, f"estimate above 8 GiB for 2^26 cells: {text}",
                  "unclear")
        ctx.check("GiB" in text and "s)" in text, f"estimate without figures: {text}", "unclear")
        return text

    good("mwem_resources_2_26_estimate", area, resources_2_26)

    # mwem_auto and pmw
    bad("mwem_auto_accountant_small", area,
        lambda c: quiet(lambda: mwem_auto(data, work, epsilon=1.0, accountant=c.acc(0.5),
                                          rng=np.random.default_rng(0))), "exceed")
    bad("mwem_auto_rounds_zero", area,
        lambda c: quiet(lambda: mwem_auto(data, work, epsilon=1.0, rounds=0,
                                          accountant=c.acc(), rng=np.random.default_rng(0))),
        "rounds")
    bad("mwem_auto_count_fraction_zero", area,
        lambda c: quiet(lambda: mwem_auto(data, work, epsilon=1.0, count_fraction=0.0,
                                          accountant=c.acc(), rng=np.random.default_rng(0))),
        "count_fraction")

    def run_pmw(ctx: Ctx, **kwargs: object) -> object:
        kwargs.setdefault("epsilon", 1.0)
        kwargs.setdefault("delta", 1e-6)
        kwargs.setdefault("rounds", 5)
        acc = ctx.acc(1.0, delta=1e-6, composition="zcdp")
        return quiet(lambda: pmw(data, work, accountant=acc, rng=np.random.default_rng(0),
                                 **kwargs))

    for name, kwargs, expect in [
        ("pmw_delta_zero", {"delta": 0.0}, "delta"),
        ("pmw_delta_one", {"delta": 1.0}, "delta"),
        ("pmw_epsilon_zero", {"epsilon": 0.0}, "epsilon"),
        ("pmw_rounds_zero", {"rounds": 0}, "rounds"),
        ("pmw_composition_bogus", {"composition": "basic"}, "composition"),
        ("pmw_selection_bogus", {"selection": "pnf"}, "selection"),
        ("pmw_learning_rate_nan", {"learning_rate": float("nan")}, "learning_rate"),
        ("pmw_k_without_lazy", {"k": 3}, "lazy"),
        ("pmw_budget_too_big", {"epsilon": 5.0}, "exceed"),
    ]:
        bad(name, area, lambda ctx, kw=kwargs: run_pmw(ctx, **kw), expect)
    bad("pmw_domain_mismatch", area,
        lambda c: quiet(lambda: pmw(data, Marginals.all_kway(Domain(["a"], [2]), 1), epsilon=1.0,
                                    delta=1e-6, accountant=c.acc(1.0, delta=1e-6,
                                                                 composition="zcdp"))),
        "domain")


register_api_workloads()
register_api_release()


def register_api_mechanisms() -> None:
    area = "api mechanisms"

    def select(mech_factory: Callable[[], object], scores: object) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            mech = mech_factory()
            return mech.select(scores, rng=np.random.default_rng(0), accountant=ctx.acc(10.0))
        return run

    em = lambda: ExponentialMechanism(epsilon=1.0)  # noqa: E731
    pf = lambda: PermuteAndFlip(epsilon=1.0)  # noqa: E731
    for label, factory in (("em", em), ("pnf", pf)):
        for name, scores, expect in [
            ("empty", [], "empty"), ("nan", [1.0, np.nan], "finite"),
            ("inf", [1.0, np.inf], "finite"), ("bool", [True, False], "boolean"),
            ("2d", [[1.0, 2.0]], "1-D"), ("string", "abc", "real numbers"),
            ("objects", [1, None], "real numbers"), ("complex", [1j, 2j], "real numbers"),
        ]:
            bad(f"{label}_scores_{name}", area, select(factory, scores), expect)
    for name, fn, expect in [
        ("em_epsilon_zero", lambda: ExponentialMechanism(epsilon=0.0), "epsilon"),
        ("em_epsilon_subnormal", lambda: ExponentialMechanism(epsilon=1e-310), "epsilon"),
        ("em_sensitivity_zero", lambda: ExponentialMechanism(epsilon=1.0, sensitivity=0),
         "sensitivity"),
        ("em_sensitivity_nan", lambda: ExponentialMechanism(epsilon=1.0, sensitivity=np.nan),
         "sensitivity"),
        ("em_monotonic_text", lambda: ExponentialMechanism(epsilon=1.0, monotonic="yes"),
         "monotonic"),
        ("laplace_epsilon_subnormal", lambda: Laplace(epsilon=1e-310), "epsilon"),
        ("laplace_sensitivity_zero", lambda: Laplace(epsilon=1.0, sensitivity=0), "sensitivity"),
        ("laplace_scale_overflow", lambda: Laplace(epsilon=1e-300, sensitivity=1e10),
         "noise scale"),
        ("laplace_release_nan", lambda: Laplace(epsilon=1.0).release(np.nan, rng=0), "finite"),
        ("laplace_release_inf", lambda: Laplace(epsilon=1.0).release([1.0, np.inf], rng=0),
         "finite"),
        ("laplace_release_string", lambda: Laplace(epsilon=1.0).release("3", rng=0), "number"),
        ("laplace_release_none", lambda: Laplace(epsilon=1.0).release([1, None], rng=0),
         "real numbers"),
        ("geometric_int64_max",
         lambda: Geometric(epsilon=1.0).release(np.iinfo(np.int64).max, rng=0), "within"),
        ("geometric_int64_min",
         lambda: Geometric(epsilon=1.0).release(np.iinfo(np.int64).min, rng=0), "within"),
        ("geometric_python_huge", lambda: Geometric(epsilon=1.0).release(2**70, rng=0),
         ("within", "integer")),
        ("geometric_uint64_max",
         lambda: Geometric(epsilon=1.0).release(np.uint64(2**64 - 1), rng=0), "within"),
        ("geometric_float", lambda: Geometric(epsilon=1.0).release(1.5, rng=0), "integers"),
        ("geometric_sensitivity_float", lambda: Geometric(epsilon=1.0, sensitivity=1.5),
         "sensitivity"),
        ("geometric_epsilon_tiny", lambda: Geometric(epsilon=1e-20), "2**-40"),
        ("geometric_bool", lambda: Geometric(epsilon=1.0).release(True, rng=0),
         ("integers", "bool")),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect)

    # charged mechanisms with an accountant: nothing may be spent on bad input
    bad("laplace_release_charged_nan", area,
        lambda c: Laplace(epsilon=1.0).release(np.nan, rng=0, accountant=c.acc()), "finite")
    bad("laplace_accountant_wrong", area,
        lambda c: Laplace(epsilon=1.0).release(1.0, rng=0, accountant="acc"), "Accountant")
    bad("laplace_rng_text", area,
        lambda c: Laplace(epsilon=1.0).release(1.0, rng="seed", accountant=c.acc()), "rng")
    bad("em_rng_float", area,
        lambda c: ExponentialMechanism(epsilon=1.0).select([1.0, 2.0], rng=1.5,
                                                           accountant=c.acc()), "rng")


def register_api_topk() -> None:
    area = "api topk"

    def sel(factory: Callable[[], object], counts: object) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            acc = ctx.acc(10.0, delta=1e-3)
            return factory().select(counts, rng=np.random.default_rng(0), accountant=acc)
        return run

    joint = lambda: JointTopK(k=2, epsilon=1.0)  # noqa: E731
    for name, counts, expect in [
        ("negative", [5, -1, 3], "non-negative"), ("fraction", [5, 1.5, 3], "whole"),
        ("nan", [5, np.nan, 3], "finite"), ("bool", [True, False, True], "integers"),
        ("2d", [[5, 1, 3]], "1-D"), ("empty", [], ("empty", "k must be")),
        ("strings", ["5", "1"], "integers"), ("huge_float", [5.0, 1e30, 3.0], "2**63"),
        ("k_above_d", [5], "number of items"), ("objects", [5, None, 3], "integers"),
    ]:
        bad(f"joint_counts_{name}", area, sel(joint, counts), expect)
    for name, fn, expect in [
        ("joint_k_zero", lambda: JointTopK(k=0, epsilon=1.0), "k"),
        ("joint_k_float", lambda: JointTopK(k=1.5, epsilon=1.0), "k"),
        ("joint_epsilon_nan", lambda: JointTopK(k=1, epsilon=np.nan), "epsilon"),
        ("joint_neighbors_bogus", lambda: JointTopK(k=1, epsilon=1.0, neighbors="swap"),
         "neighbors"),
        ("pnf_peel_subnormal", lambda: PNFPeel(k=1, epsilon=1e-310), "epsilon"),
        ("cdp_peel_delta_zero", lambda: CDPPeel(k=1, epsilon=1.0, delta=0.0), "delta"),
        ("cdp_peel_delta_nan", lambda: CDPPeel(k=1, epsilon=1.0, delta=np.nan), "delta"),
        ("laplace_topk_epsilon_inf", lambda: LaplaceTopK(k=1, epsilon=np.inf), "epsilon"),
        ("gamma_topk_k_text", lambda: GammaTopK(k="2", epsilon=1.0), "k"),
        ("pruned_beta_zero", lambda: PrunedJointTopK(k=1, epsilon=1.0, beta=0.0), "beta"),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect)
    big = np.random.default_rng(5).zipf(1.3, 166000).clip(max=10**9)
    bad("joint_k_50000", area, sel(lambda: JointTopK(k=50000, epsilon=1.0), big),
        ("levels", "limit"), timeout=60)
    bad("pnf_joint_k_50000", area, sel(lambda: PNFJointTopK(k=50000, epsilon=1.0), big),
        ("levels", "limit"), timeout=60)
    bad("pruned_joint_k_50000", area, sel(lambda: PrunedJointTopK(k=50000, epsilon=1.0), big),
        ("levels", "limit"), timeout=60)
    bad("joint_tiny_epsilon_table", area,
        sel(lambda: JointTopK(k=100, epsilon=1e-6), np.arange(1000)), ("levels", "limit"),
        timeout=60)


def register_api_continuous() -> None:
    area = "api continuous"
    from fastmwem.mechanisms.continuous import (
        Box,
        ContinuousExponentialMechanism,
        MeanL1Loss,
        metropolis,
    )

    data = np.random.default_rng(0).random((10, 1))

    def loss_mech(**kw: object) -> ContinuousExponentialMechanism:
        base = dict(loss=lambda y: np.abs(y[:, 0] - 0.3), sensitivity=0.1, epsilon=1.0,
                    space=Box(0, 1))
        base.update(kw)
        return ContinuousExponentialMechanism(**base)

    for name, fn, expect in [
        ("mean_l1_outside", lambda: MeanL1Loss(np.array([[1.5]])), "[0, 1]"),
        ("mean_l1_nan", lambda: MeanL1Loss(np.array([[np.nan]])), ("finite", "nan")),
        ("mean_l1_empty", lambda: MeanL1Loss(np.zeros((0, 1))), ("empty", "at least")),
        ("mean_l1_epsilon_zero", lambda: MeanL1Loss(data).mechanism(0.0), "epsilon"),
        ("box_reversed", lambda: Box(1, 0), "exceed"),
        ("box_infinite", lambda: Box(0, np.inf), ("finite",)),
        ("box_mismatch", lambda: Box([0, 0], [1]), "shape"),
        ("cem_sensitivity_zero", lambda: loss_mech(sensitivity=0.0), "sensitivity"),
        ("cem_epsilon_nan", lambda: loss_mech(epsilon=np.nan), "epsilon"),
        ("cem_loss_not_callable", lambda: loss_mech(loss=3), ("loss", "callable")),
        ("cem_space_wrong", lambda: loss_mech(space=(0, 1)), "space"),
        ("cem_method_bogus", lambda: loss_mech().sample(rng=0, method="gibbs"), "method"),
        ("cem_sample_many_zero", lambda: loss_mech().sample_many(0, rng=0), ("n", "size")),
        ("cem_sample_many_negative", lambda: loss_mech().sample_many(-1, rng=0), ("n", "size")),
        ("cem_sample_many_float", lambda: loss_mech().sample_many(2.5, rng=0), ("n", "size")),
        ("metropolis_steps_zero", lambda: metropolis(loss_mech(), steps=0, beta=0.5, rng=0),
         "steps"),
    ]:
        bad(name, area, lambda ctx, fn=fn: quiet(fn), expect)

    def bad_loss(value: float) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            mech = loss_mech(loss=lambda y: np.full(y.shape[0], value))
            return mech.sample(rng=0, accountant=ctx.acc())
        return run

    # A loss that misbehaves is only seen after the charge: the error must still be clear.
    for name, value in (("nan", np.nan), ("negative", -1.0), ("inf", np.inf)):
        add(f"cem_loss_{name}_after_charge", area, False, bad_loss(value), "loss",
            after_charge=True)


def register_api_lazy_indices() -> None:
    area = "api lazy+indices"
    from fastmwem.indices import FlatIndex, load_index, make_index

    keys = np.random.default_rng(0).integers(0, 2, (20, 6)).astype(float)

    def flat() -> FlatIndex:
        index = FlatIndex(6)
        index.add(keys)
        return index

    def lazy_select(vector: object, **kw: object) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            mech = LazyExponentialMechanism(flat(), epsilon=1.0)
            return mech.select(vector, rng=np.random.default_rng(0), accountant=ctx.acc(), **kw)
        return run

    for name, fn, expect in [
        ("lazy_epsilon_zero", lambda: LazyExponentialMechanism(flat(), epsilon=0.0), "epsilon"),
        ("lazy_oracle_string", lambda: LazyExponentialMechanism("flat", epsilon=1.0), "oracle"),
        ("lazy_k_zero", lambda: LazyExponentialMechanism(flat(), epsilon=1.0, k=0), "k"),
        ("lazy_abs_and_complement",
         lambda: LazyExponentialMechanism(flat(), epsilon=1.0, absolute=True, complement=True),
         "choose one"),
        ("lazy_approximate_bogus",
         lambda: LazyExponentialMechanism(flat(), epsilon=1.0, approximate="speed"),
         "approximate"),
        ("lazy_hnsw_uncertified",
         lambda: LazyExponentialMechanism(make_index("hnswlib", keys), epsilon=1.0),
         ("approximate", "allow_uncertified")),
        ("index_spec_bogus", lambda: make_index("kdtree", keys), "spec"),
        ("index_no_keys", lambda: make_index("flat"), ("keys", "dimension")),
        ("index_nan_keys", lambda: make_index("flat", [[np.nan, 1.0]]), "finite"),
        ("index_bitpacked_twos", lambda: make_index("bitpacked", [[2, 0]]), ("0/1", "binary")),
        ("index_dimension_mismatch", lambda: make_index("flat", keys, dimension=3), "dimension"),
        ("index_search_k_zero", lambda: flat().search(np.ones((1, 6)), 0), "k"),
        ("index_search_wrong_dim", lambda: flat().search(np.ones((1, 5)), 2), ("dimension",
                                                                              "columns")),
        ("index_search_nan", lambda: flat().search(np.full((1, 6), np.nan), 2), "finite"),
    ]:
        bad(name, area, lambda ctx, fn=fn: quiet(fn), expect)
    bad("lazy_vector_wrong_length", area, lazy_select(np.ones(5)), ("length", "dimension",
                                                                      "shape"))
    bad("lazy_vector_nan", area, lazy_select(np.full(6, np.nan)), "finite")
    bad("lazy_exclude_all", area, lazy_select(np.ones(6), exclude=np.arange(20)),
        ("exclude", "candidate"))
    bad("lazy_exclude_out_of_range", area, lazy_select(np.ones(6), exclude=[25]), "exclude")
    bad("index_load_missing", area, lambda c: load_index(c.path("none.npz")), "does not exist")
    bad("index_load_directory", area, lambda c: load_index(str(c.dir)), ("directory",
                                                                          "not a saved"))
    bad("index_load_garbage", area, lambda c: load_index(c.write("g.npz", b"garbage")),
        "not a saved fastmwem index")

    def save_private(ctx: Ctx) -> object:
        index = make_index("flat", keys, private=True)
        return index.save(ctx.path("p.npz"))

    bad("index_save_private", area, save_private, "private")

    def save_over_fifo(ctx: Ctx) -> object:
        return flat().save(fifo(ctx, "idx.npz"))

    bad("index_save_fifo", area, save_over_fifo, ("regular", "FIFO", "exists"), timeout=15)


def register_api_accountant() -> None:
    area = "api accountant"
    for name, fn, expect in [
        ("accountant_no_budget", lambda: Accountant(), "budget"),
        ("accountant_negative", lambda: Accountant(epsilon=-1), "epsilon"),
        ("accountant_nan", lambda: Accountant(epsilon=float("nan")), "epsilon"),
        ("accountant_inf", lambda: Accountant(epsilon=float("inf")), "epsilon"),
        ("accountant_delta_one", lambda: Accountant(epsilon=1, delta=1), "delta"),
        ("accountant_delta_negative", lambda: Accountant(epsilon=1, delta=-0.1), "delta"),
        ("accountant_rho_and_epsilon", lambda: Accountant(epsilon=1, rho=1), "either"),
        ("accountant_composition_bogus", lambda: Accountant(epsilon=1, composition="rdp"),
         "composition"),
        ("accountant_zcdp_no_delta", lambda: Accountant(epsilon=1, composition="zcdp"), "delta"),
        ("accountant_string_epsilon", lambda: Accountant(epsilon="one"), "epsilon"),
        ("accountant_string_fraction_zero", lambda: Accountant(epsilon="1/0"), "epsilon"),
        ("accountant_compose_non_event", lambda: Accountant(epsilon=1).compose(0.5), "event"),
        ("accountant_overspend", lambda: Accountant(epsilon=1).compose(PureDP(2)), "exceed"),
        ("accountant_approx_on_pure", lambda: Accountant(epsilon=1).compose(ApproxDP(0.1, 1e-6)),
         "pure"),
        ("accountant_zcdp_on_pure", lambda: Accountant(epsilon=1).compose(ZCDP(0.1)), "pure"),
        ("puredp_negative", lambda: PureDP(-1), "epsilon"),
        ("puredp_nan", lambda: PureDP(float("nan")), "epsilon"),
        ("approxdp_delta_two", lambda: ApproxDP(1, 2), "delta"),
        ("zcdp_nan", lambda: ZCDP(float("nan")), "rho"),
        ("compose_all_partial", lambda: Accountant(epsilon=1).compose_all(
            [(PureDP(0.5), "a"), (PureDP(0.75), "b")]), "exceed"),
        ("per_round_rounds_zero", lambda: accounting.per_round_epsilon(1.0, 0), "rounds"),
    ]:
        bad(name, area, lambda ctx, fn=fn: fn(), expect)


register_api_mechanisms()
register_api_topk()
register_api_continuous()
register_api_lazy_indices()
register_api_accountant()


# -- valid edge cases ------------------------------------------------------------------------

WEIRD_LABELS = ["car\rriage", "line\nbreak", 'quo"te', "com,ma", "plain", "=SUM(A1)", "@home",
                "-x", "+1+1", "tab\tbed", "crlf\r\nboth"]


def register_valid_cli() -> None:
    area = "valid cli"

    def defaults(columns: int) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            sizes = {f"c{i}": 2 + i % 2 for i in range(columns)}
            csv, domain = codes_table(ctx, sizes, rows=500)
            ctx.cli("synth", csv, "--domain", domain, "--epsilon", "1", "--out",
                    ctx.path("out.csv"), "--report", ctx.path("r.json"), "--no-progress")
            out = pd.read_csv(ctx.path("out.csv"))
            ctx.check(list(out.columns) == list(sizes) and len(out) > 0, f"output {out.shape}")
            report = json.loads(Path(ctx.path("r.json")).read_text())
            command = report["command"]
            ctx.check(command["workload_chosen"] == "default"
                      and command["rounds_chosen"] == "default", f"report: {command}")
            return f"{len(out)} rows, {command['workload']}, {command['rounds']} rounds"
        return run

    for columns in (1, 2, 3, 6):
        good(f"synth_defaults_{columns}_columns", area, defaults(columns))

    def demo(epsilon: str, seed: int) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            result = ctx.cli("synth", "--demo", "--epsilon", epsilon, "--out", ctx.path("o.csv"),
                             "--seed", seed, "--report", ctx.path("r.json"), "--no-progress")
            report = json.loads(Path(ctx.path("r.json")).read_text())
            ctx.check("seed" not in json.dumps(report).lower().replace("seeded", ""),
                      "the report mentions a seed")
            ctx.check(report["private"] is False and "seeded" in report["not_private_because"],
                      f"a seeded report says private={report['private']}")
            ctx.check("NOT private" in result.err, "no seed warning on stderr")
            return result.err.strip().splitlines()[-1]
        return run

    good("synth_demo_epsilon_0.01_seed_29", area, demo("0.01", 29), timeout=60)
    good("synth_demo_epsilon_0.001_seed_1", area, demo("0.001", 1), timeout=60)
    good("synth_demo_epsilon_1_seed_long", area, demo("1", SEED), timeout=60)

    def weird_schema(ctx: Ctx) -> str:
        schema = {"columns": [{"name": "label", "type": "categorical",
                               "categories": WEIRD_LABELS},
                              {"name": "n", "type": "integer", "lower": 0, "upper": 2}]}
        rng = np.random.default_rng(2)
        frame = pd.DataFrame({"label": rng.choice(WEIRD_LABELS, 400), "n": rng.integers(0, 3, 400)})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_csv(frame, ctx.path("raw.csv"))
        path = ctx.write("schema.json", json.dumps(schema))
        back = Schema.from_dict(schema).encode_csv(ctx.path("raw.csv"))
        ctx.check(len(back) == 400, "the input did not re-read")
        result = ctx.cli("synth", ctx.path("raw.csv"), "--schema", path, "--epsilon", "1",
                         "--out", ctx.path("out.csv"), "--rows", "300", "--no-progress")
        again = Schema.from_dict(schema).encode_csv(ctx.path("out.csv"))
        ctx.check(len(again) == 300, f"output re-reads as {len(again)} rows, not 300")
        ctx.check("formula" in result.err.lower(), "no formula warning", "nonsense")
        return "output re-reads exactly (300 rows); formula warning shown"

    good("synth_schema_weird_labels_roundtrip", area, weird_schema)

    def bom_crlf(ctx: Ctx) -> str:
        csv = ctx.write("bom.csv", "\ufeffa,b,c,d\r\n" + "".join(
            f"{i % 2},{i % 3},{i % 2},{(i // 2) % 2}\r\n" for i in range(200)))
        ctx.write("domain.json", json.dumps(SIZES))
        ctx.cli("synth", csv, "--domain", ctx.path("domain.json"), "--epsilon", "1", "--out",
                ctx.path("o.csv"), "--rows", "10", "--no-progress")
        return "ok"

    good("synth_bom_crlf_input", area, bom_crlf)

    def synth_ok(*extra: object, check: Callable[[Ctx, CLIRun], None] | None = None
                 ) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            result = ctx.cli(*synth_args(ctx, *extra))
            if check is not None:
                check(ctx, result)
            return result.err.strip().splitlines()[-1]
        return run

    def rows_five(ctx: Ctx, result: CLIRun) -> None:
        ctx.check(len(pd.read_csv(ctx.path("out.csv"))) == 5, "not 5 rows")

    def evaluated(ctx: Ctx, result: CLIRun) -> None:
        report = json.loads(Path(ctx.path("r.json")).read_text())
        ctx.check(report["private"] is False and "evaluated" in report["not_private_because"],
                  "an evaluated report claims privacy")

    good("synth_rows_5", area, synth_ok("--rows", "5", check=rows_five))
    good("synth_counting_1000", area, synth_ok("--workload", "counting:1000", "--rounds", "5"))
    good("synth_lazy_selection", area, synth_ok("--selection", "lazy", "--workload",
                                                "counting:500", "--rounds", "5"))
    good("synth_noisy_init_average", area, synth_ok("--init", "noisy-histogram", "--output",
                                                    "average"))
    good("synth_evaluate", area,
         lambda c: synth_ok("--evaluate", "--report", c.path("r.json"), check=evaluated)(c))
    good("synth_epsilon_1e6", area,
         lambda c: c.cli(*[("1000000" if a == "1" else a) for a in synth_args(c)]).err[-200:])

    def overwrite(ctx: Ctx) -> str:
        ctx.write("out.csv", "old\n")
        ctx.cli(*synth_args(ctx))
        ctx.check(Path(ctx.path("out.csv")).read_text() != "old\n", "not replaced")
        return "replaced"

    good("synth_out_overwrites_regular_file", area, overwrite)

    def sigterm(ctx: Ctx) -> str:
        argv = [sys.executable, "-m", "fastmwem.cli", "synth", "--demo", "--epsilon", "1",
                "--out", ctx.path("big.csv"), "--rows", "20000000", "--no-progress",
                "--rounds", "1"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        deadline = time.time() + 80
        try:
            while time.time() < deadline:
                tmp = [p for p in ctx.dir.iterdir() if p.name.startswith(".fastmwem-")]
                if tmp and any(p.stat().st_size > 1 << 20 for p in tmp if p.exists()):
                    break
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        left = [p.name for p in ctx.dir.iterdir()]
        ctx.check(proc.returncode == 143, f"exit {proc.returncode}: {err.decode()[-300:]}", "crash")
        ctx.check(not left, f"left behind after SIGTERM: {left}", "crash")
        return "exit 143, nothing left"

    good("synth_sigterm_cleans_up", area, sigterm, timeout=120)

    # topk
    def topk_ok(*extra: object, body: str | None = None, k: int = 2,
                check: Callable[[Ctx, CLIRun], None] | None = None) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            result = ctx.cli("topk", counts_csv(ctx, body), "--k", k, "--epsilon", "1",
                             "--count-column", "votes", *extra)
            if check is not None:
                check(ctx, result)
            return result.out.replace("\n", " | ")[:200]
        return run

    good("topk_count_column", area, topk_ok())
    for method in ("pnf-joint", "pruned-joint", "pnf-peel", "cdp-peel", "laplace", "gamma"):
        good(f"topk_method_{method}", area, topk_ok("--method", method))
    good("topk_k_equals_items", area, topk_ok(k=5))
    good("topk_seeded_no_leak", area, topk_ok("--seed", SEED))
    good("topk_items_absent_from_data", area,
         lambda c: topk_ok("--items", c.write("items.txt", "A\nB\nC\nD\nE\nF\nG\n"))(c))

    def users(ctx: Ctx) -> str:
        rows = "".join(f"u{u},{'ABCDE'[(u * j) % 5]}\n" for u in range(50) for j in range(3))
        result = ctx.cli("topk", ctx.write("r.csv", "user,item\n" + rows), "--k", "2",
                         "--epsilon", "1", "--user-column", "user")
        return result.out.replace("\n", " | ")

    good("topk_user_column", area, users)

    def weird_topk(ctx: Ctx) -> str:
        frame = pd.DataFrame({"item": WEIRD_LABELS,
                              "votes": np.arange(len(WEIRD_LABELS)) * 1000})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_csv(frame, ctx.path("w.csv"))
        result = ctx.cli("topk", ctx.path("w.csv"), "--k", len(WEIRD_LABELS), "--epsilon", "1",
                         "--count-column", "votes", "--out", ctx.path("top.csv"))
        back = read_csv_columns(ctx.path("top.csv"), ["rank", "item"])
        ctx.check(sorted(back["item"]) == sorted(WEIRD_LABELS),
                  f"top-k output re-reads as {list(back['item'])}")
        ctx.check("formula" in result.err.lower(), "no formula warning")
        return "round-trips"

    good("topk_weird_labels_roundtrip", area, weird_topk)

    def topk_large(ctx: Ctx) -> str:
        rng = np.random.default_rng(3)
        frame = pd.DataFrame({"item": [f"i{j}" for j in range(166000)],
                              "votes": rng.zipf(1.3, 166000).clip(max=10**9)})
        frame.to_csv(ctx.path("many.csv"), index=False)
        started = time.perf_counter()
        ctx.cli("topk", ctx.path("many.csv"), "--k", "1000", "--epsilon", "1",
                "--count-column", "votes", "--out", ctx.path("top.csv"))
        return f"k=1000 of 166,000 in {time.perf_counter() - started:.1f} s"

    good("topk_joint_k_1000_of_166000", area, topk_large, timeout=60)


def register_valid_api() -> None:
    area = "valid api"

    def small_epsilon(epsilon: float, seeds: int = 30) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            data = nltcs_subset(8)
            work = Marginals.all_kway(data.domain, 3)
            for seed in range(seeds):
                result = mwem(data, work, epsilon=epsilon, rounds=25,
                              rng=np.random.default_rng(seed), accountant=ctx.acc(epsilon))
                ctx.check(np.all(np.isfinite(result.histogram)) and result.total >= 1,
                          f"seed {seed}: non-finite result", "crash")
            return f"{seeds} seeds"
        return run

    for epsilon in (0.01, 0.001, 1e-6):
        good(f"mwem_epsilon_{epsilon:g}_many_seeds", area, small_epsilon(epsilon), timeout=90)

    data, dom = small_data()

    def run_mwem(ctx: Ctx, workload: object, **kw: object) -> object:
        kw.setdefault("epsilon", 1.0)
        kw.setdefault("rounds", 3)
        return mwem(data, workload, rng=np.random.default_rng(0),
                    accountant=ctx.acc(float(kw["epsilon"])), **kw)

    def finite(result: object) -> str:
        hist = result.histogram  # type: ignore[attr-defined]
        if not np.all(np.isfinite(hist)):
            raise Finding("nonsense", "non-finite histogram")
        return f"total {result.total:.1f}"  # type: ignore[attr-defined]

    good("mwem_epsilon_1e6", area,
         lambda c: finite(run_mwem(c, Marginals.all_kway(dom, 2), epsilon=1e6)))
    good("mwem_zero_groups_skipped", area,
         lambda c: finite(run_mwem(c, MatrixWorkload(dom, np.vstack([
             np.zeros((2, dom.size)), np.eye(dom.size)[:4]]), groups=[0, 2, 4, 6]), rounds=2)))
    good("mwem_entries_1e200", area,
         lambda c: finite(run_mwem(c, MatrixWorkload(dom, np.full((3, dom.size), 1e200)),
                                   rounds=2)))
    good("mwem_rounds_equal_candidates", area,
         lambda c: finite(run_mwem(c, Marginals.all_kway(dom, 2), rounds=6)))
    good("mwem_parities_binary", area,
         lambda c: finite(mwem(*(lambda dd: (dd[0], Parities.all_kway(dd[1], 2)))(
             small_data({"a": 2, "b": 2, "c": 2})), epsilon=1.0, rounds=3,
             rng=np.random.default_rng(0), accountant=c.acc())))

    def auto_one_column(ctx: Ctx) -> str:
        one, dd = small_data({"a": 5}, rows=200)
        result, choices = mwem_auto(one, Marginals.all_kway(dd, 1), epsilon=1.0,
                                    rng=np.random.default_rng(0), accountant=ctx.acc())
        return f"{choices.rounds} rounds"

    good("mwem_auto_one_column", area, auto_one_column)

    def seeded(ctx: Ctx) -> str:
        acc = ctx.acc()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=3, rng=SEED,
                          accountant=acc)
        ctx.check(any(issubclass(w.category, fastmwem.PrivacyLeakWarning) for w in caught),
                  "no PrivacyLeakWarning for an integer seed")
        report = json.dumps(result.report())
        ctx.check(str(SEED) not in report, "the seed is in the report")
        ctx.check(result.report()["private"] is False, "a seeded report says private")
        ctx.check(repr(acc.spent()) == "PureDP(epsilon=1)", f"ledger shows {acc.spent()!r}")
        return "warned, report not private"

    good("mwem_seeded_warns", area, seeded)

    def ledger_display(ctx: Ctx) -> str:
        acc = ctx.acc(1.0)
        quiet(lambda: mwem_auto(data, Marginals.all_kway(dom, 2), epsilon=1.0,
                                rng=np.random.default_rng(0), accountant=acc))
        shown = repr(acc.spent())
        ctx.check("999999" not in shown and "000000" not in shown, f"ledger shows {shown}")
        return shown

    good("accountant_display_after_mwem_auto", area, ledger_display)
    good("pmw_small", area,
         lambda c: finite(quiet(lambda: pmw(data, Marginals.all_kway(dom, 2), epsilon=1.0,
                                             delta=1e-6, rounds=5, rng=np.random.default_rng(0),
                                             accountant=c.acc(1.0, delta=1e-6,
                                                              composition="zcdp")))))
    good("geometric_2_62", area,
         lambda c: str(Geometric(epsilon=1.0).release(2**62, rng=np.random.default_rng(0))))
    # The exact sampler draws scales up to 2**56: a smaller epsilon is refused before the charge.
    bad("laplace_epsilon_1e-300", "api mechanisms",
        lambda c: Laplace(epsilon=1e-300).release(0.0, rng=np.random.default_rng(0),
                                                  accountant=c.acc()), "2**56")
    good("em_huge_scores", area,
         lambda c: ExponentialMechanism(epsilon=1e6).select([1e300, -1e300, 0.0],
                                                            rng=np.random.default_rng(0)))
    good("joint_counts_2_62", area,
         lambda c: JointTopK(k=2, epsilon=1.0).select(
             np.array([2**62, 2**61, 5], dtype=np.int64), rng=np.random.default_rng(0)).tolist())
    good("numeric_1e307_bounds", area,
         lambda c: str(Numeric("x", -1e307, 1e307, bins=4).edges))

    def schema_roundtrip(ctx: Ctx) -> str:
        schema = Schema([Categorical("label", WEIRD_LABELS), Numeric("x", 0, 1, bins=3)])
        codes = np.column_stack([np.arange(33) % len(WEIRD_LABELS), np.arange(33) % 3])
        frame = schema.decode(codes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_csv(frame, ctx.path("rt.csv"))
        back = schema.encode_csv(ctx.path("rt.csv")).records
        ctx.check(np.array_equal(back, codes), "decode -> write_csv -> encode_csv changed codes")
        return "exact"

    good("schema_roundtrip_weird_labels", area, schema_roundtrip)

    def from_csv_bom(ctx: Ctx) -> str:
        path = ctx.write("b.csv", "\ufeffb,a\r\n2,1\r\n0,0\r\n")
        ds = Dataset.from_csv(path, Domain(["a", "b"], [2, 3]))
        ctx.check(ds.records.tolist() == [[1, 2], [0, 0]], f"read {ds.records.tolist()}")
        return "ok"

    good("dataset_from_csv_bom_crlf", area, from_csv_bom)

    def unicode_domain(ctx: Ctx) -> str:
        d = Domain(["âge", "名前"], [3, 2])
        d.to_json(ctx.path("d.json"))
        ctx.check(Domain.from_json(ctx.path("d.json")) == d, "unicode domain did not round-trip")
        return "ok"

    good("domain_unicode_roundtrip", area, unicode_domain)

    def mean_l1(ctx: Ctx) -> str:
        from fastmwem.mechanisms.continuous import MeanL1Loss

        loss = MeanL1Loss(np.random.default_rng(0).random((10, 1)))
        draw = quiet(lambda: loss.mechanism(1e6).sample(rng=np.random.default_rng(0)))
        return f"value {draw.value}"

    good("mean_l1_epsilon_1e6_sample", area, mean_l1, timeout=60)

    def lazy_exclude(ctx: Ctx) -> str:
        from fastmwem.indices import FlatIndex

        index = FlatIndex(4)
        index.add(np.eye(4))
        mech = LazyExponentialMechanism(index, epsilon=1.0)
        choice = mech.select(np.array([5.0, 1.0, 0.0, 0.0]), rng=np.random.default_rng(0),
                             exclude=[0], accountant=ctx.acc())
        ctx.check(choice != 0, "an excluded candidate was chosen")
        return str(choice)

    good("lazy_exclude", area, lazy_exclude)

    def infer(ctx: Ctx) -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Schema.infer(pd.DataFrame({"x": [1, 2, 3], "s": ["a", "b", "a"]}),
                         allow_private_inference=True)
        ctx.check(any(issubclass(w.category, fastmwem.PrivacyLeakWarning) for w in caught),
                  "no warning")
        return "warned"

    good("schema_infer_optin_warns", area, infer)

    def topk_api_seeded(ctx: Ctx) -> str:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            JointTopK(k=2, epsilon=1.0).select([5, 3, 1], rng=SEED)
        ctx.check(any(issubclass(w.category, fastmwem.PrivacyLeakWarning) for w in caught),
                  "no PrivacyLeakWarning")
        return "warned"

    good("topk_api_seeded_warns", area, topk_api_seeded)


def register_more() -> None:
    """Further cases, beyond the first list."""
    area_cli, area_api = "cli synth", "api more"
    bad("cli_no_command", "cli synth", lambda c: c.cli(), ("required", "COMMAND"))

    def disk_full(rows: str | None) -> Callable[[Ctx], CLIRun]:
        def run(ctx: Ctx) -> CLIRun:
            fastmwem.cli.synth.free_disk_bytes = lambda path: 10  # type: ignore[attr-defined]
            extra = [] if rows is None else ["--rows", rows]
            return ctx.cli(*synth_args(ctx, *extra))
        return run

    bad("synth_disk_full_given_rows", area_cli, disk_full("100"), "disk")
    # The default row count is the noisy count, known only once its share of epsilon is spent.
    bad("synth_disk_full_default_rows", area_cli, disk_full(None), "disk")
    bad("synth_workload_ranges_repeated_attr", area_cli,
        lambda c: c.cli(*synth_args(c, "--workload", "ranges:5:a,a")), ("unique", "repeated"))
    bad("synth_domain_astronomical", area_cli,
        lambda c: c.cli("synth", codes_table(c)[0], "--domain",
                        c.write("dom.json", '{"a": 2, "b": 3, "c": 2, "d": 1000000000000000000000000'
                                            '000000}'),
                        "--epsilon", "1", "--out", c.path("o.csv")), ("cells", "limit"))
    bad("synth_out_dash_name", area_cli,
        lambda c: c.cli(*synth_args(c)[:-2], "--out", "-x.csv"), ("--out", "expected"))
    bad("topk_out_hardlink_to_input", "cli topk",
        lambda c: topk(c, "--out", (os.link(counts_csv(c), c.path("h.csv")), c.path("h.csv"))[1]),
        "input")

    from fastmwem.indices import FlatIndex

    def saved(target: Callable[[Ctx], str]) -> Callable[[Ctx], object]:
        def run(ctx: Ctx) -> object:
            index = FlatIndex(2)
            index.add(np.eye(2))
            path = target(ctx)
            kind = stat.S_IFMT(os.lstat(path).st_mode)
            index.save(path, overwrite=True)
            ctx.check(stat.S_IFMT(os.lstat(path).st_mode) == kind,
                      f"save(overwrite=True) replaced a {stat.filemode(kind)[0]} node by a file")
            return "wrote through"
        return run

    bad("index_save_fifo_overwrite", area_api, saved(lambda c: fifo(c, "i.npz")),
        ("regular", "FIFO"), timeout=15)
    bad("index_save_device_overwrite", area_api, saved(lambda c: device(c, "i.npz")),
        ("regular", "device"))
    bad("index_save_symlink_overwrite", area_api,
        saved(lambda c: (os.symlink(c.write("t.npz", b""), c.path("l.npz")), c.path("l.npz"))[1]),
        "symbolic link")
    bad("schema_integer_beyond_2_53", area_api, lambda c: Integer("x", 2**70, 2**70 + 3),
        ("2**53", "exact"))
    bad("schema_integer_beyond_2_53_encode", area_api,
        lambda c: (lambda s: s.encode(pd.DataFrame({"x": [2**60 + 1]})).records.tolist())(
            Schema([Integer("x", 2**60, 2**60 + 3)])), ("2**53", "exact"))
    bad("geometric_python_list_huge", area_api,
        lambda c: Geometric(epsilon=1.0).release([1, 2**70], rng=0), "within")

    data, dom = small_data()
    result = quiet(lambda: mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=2,
                                rng=np.random.default_rng(0)))
    bad("result_sample_1e12", area_api, lambda c: result.sample(10**12, rng=0), "memory")
    bad("result_sample_negative", area_api, lambda c: result.sample(-1, rng=0), "n")
    bad("result_sample_chunks_zero", area_api,
        lambda c: result.sample_chunks(5, chunk_rows=0, rng=0), "chunk_rows")
    bad("result_answer_other_domain", area_api,
        lambda c: result.answer(Marginals.all_kway(Domain(["z"], [2]), 1)), "domain")

    # valid edge cases
    good("synth_one_row", "valid cli",
         lambda c: c.cli("synth", c.write("one.csv", "a,b,c,d\n0,1,0,1\n"), "--domain",
                         c.write("domain.json", json.dumps(SIZES)), "--epsilon", "1", "--out",
                         c.path("o.csv"), "--no-progress").err[-120:])
    good("synth_epsilon_1e308", "valid cli",
         lambda c: c.cli(*[("1e308" if a == "1" else a) for a in synth_args(c)]).err[-120:])
    good("topk_epsilon_1e308", "valid cli",
         lambda c: topk(c, *["--method", "joint"])
         if False else c.cli("topk", counts_csv(c), "--k", "3", "--epsilon", "1e308",
                             "--count-column", "votes").out.replace("\n", " | "))

    def text_items(ctx: Ctx) -> str:
        result = ctx.cli("topk", ctx.write("t.csv", "\ufeffitem,votes\n1,50\n01,40\n1.0,30\n"),
                         "--k", "3", "--epsilon", "1000", "--count-column", "votes")
        items = sorted(result.out.splitlines()[1:])
        ctx.check([i.split(",", 1)[1] for i in items] == ["01", "1", "1.0"] or
                  sorted(i.split(",", 1)[1] for i in items) == ["01", "1", "1.0"],
                  f"items changed: {items}")
        return " | ".join(items)

    good("topk_text_items_kept_exactly_bom", "valid cli", text_items)
    good("mwem_zcdp_accountant", "valid api",
         lambda c: repr(quiet(lambda: mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0,
                                           rounds=3, rng=np.random.default_rng(0),
                                           accountant=Accountant(rho=0.1))).privacy))
    good("mwem_measure_query", "valid api",
         lambda c: quiet(lambda: mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=3,
                                      measure="query", rng=np.random.default_rng(0),
                                      accountant=c.acc())).total)
    # Python integers beyond int64 are refused by design (never converted silently).
    bad("em_scores_python_big_ints", area_api,
        lambda c: ExponentialMechanism(epsilon=1.0).select([2**70, 0, 5], accountant=c.acc(),
                                                           rng=np.random.default_rng(0)),
        "64-bit")
    bad("laplace_release_python_big_int", area_api,
        lambda c: Laplace(epsilon=1.0).release(2**70, accountant=c.acc(),
                                               rng=np.random.default_rng(0)), "64-bit")
    bad("index_load_fifo", area_api,
        lambda c: __import__("fastmwem.indices", fromlist=["load_index"]).load_index(
            fifo(c, "f.npz")), "regular", timeout=15)
    bad("mwem_lazy_index_bogus", area_api,
        lambda c: quiet(lambda: mwem(data, Marginals.all_kway(dom, 2), epsilon=1.0, rounds=2,
                                     selection="lazy", index="kdtree", accountant=c.acc())),
        "index")

    # Values beyond 2**52 steps of the grid (sensitivity 1) are refused before the charge; a
    # representable scale near the float maximum is the valid case
    # laplace_float_max_values_stay_finite.
    bad("laplace_near_float_max_refused", area_api,
        lambda c: Laplace(epsilon=1.0).release(np.full(4000, 1.7e308), accountant=c.acc(),
                                               rng=np.random.default_rng(0)), "2**52")

    def pmw_rate(rate: float) -> Callable[[Ctx], str]:
        def run(ctx: Ctx) -> str:
            work = MatrixWorkload(dom, np.vstack([np.ones((1, dom.size)), np.eye(dom.size)]))
            acc = ctx.acc(1.0, delta=1e-6, composition="zcdp")
            try:
                res = quiet(lambda: pmw(data, work, epsilon=1.0, delta=1e-6, rounds=20,
                                        learning_rate=rate, rng=np.random.default_rng(0),
                                        accountant=acc))
            except ValueError as exc:
                if CHARGES:
                    raise
                return f"refused before the charge: {exc}"
            ctx.check(np.all(np.isfinite(res.histogram)), "non-finite histogram", "crash")
            return f"finite, total {res.total:.1f}"
        return run

    good("pmw_learning_rate_1e6", "valid api", pmw_rate(1e6))
    good("pmw_learning_rate_1e300", "valid api", pmw_rate(1e300))

    def nltcs_full(ctx: Ctx) -> str:
        from fastmwem.datasets import load_nltcs

        full = load_nltcs()
        work = Marginals.all_kway(full.domain, 3)
        for seed in range(6):
            res = mwem(full, work, epsilon=0.01, rounds=25, rng=np.random.default_rng(seed),
                       accountant=ctx.acc(0.01))
            ctx.check(np.all(np.isfinite(res.histogram)), f"seed {seed}: non-finite", "crash")
        return "6 seeds"

    good("mwem_nltcs_full_epsilon_0.01_seeds", "valid api", nltcs_full, timeout=120)

    def huge_epsilon(run: Callable[[Accountant], object]) -> Callable[[Ctx], str]:
        def case(ctx: Ctx) -> str:
            res = quiet(lambda: run(ctx.acc(1e300)))
            res = res[0] if isinstance(res, tuple) else res
            ctx.check(np.all(np.isfinite(res.histogram)), "non-finite histogram")
            return f"total {res.total:.1f}"
        return case

    work = Marginals.all_kway(dom, 2)
    good("mwem_epsilon_1e300", "valid api", huge_epsilon(
        lambda acc: mwem(data, work, epsilon=1e300, rounds=3, rng=np.random.default_rng(0),
                         accountant=acc)))
    good("mwem_auto_epsilon_1e300", "valid api", huge_epsilon(
        lambda acc: mwem_auto(data, work, epsilon=1e300, rng=np.random.default_rng(0),
                              accountant=acc)))
    good("mwem_auto_epsilon_1e-6", "valid api", lambda c: str(quiet(lambda: mwem_auto(
        data, work, epsilon=1e-6, rng=np.random.default_rng(0), accountant=c.acc(1e-6)))[1]))
    bad("topk_cdp_peel_epsilon_1e308", "cli topk",
        lambda c: c.cli("topk", counts_csv(c), "--k", "3", "--epsilon", "1e308",
                        "--count-column", "votes", "--method", "cdp-peel"), "epsilon")
    for method in ("laplace", "gamma", "pnf-peel"):
        good(f"topk_{method}_epsilon_1e308", "valid cli",
             lambda c, m=method: c.cli("topk", counts_csv(c), "--k", "3", "--epsilon", "1e308",
                                       "--count-column", "votes", "--method", m).out.replace(
                                           "\n", " | "))


register_valid_cli()
register_valid_api()
register_more()

# The hardening pass's cases live beside this file (it would grow past 2,500 lines).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _battery_hardening import register as register_hardening  # noqa: E402

register_hardening(sys.modules[__name__])


# -- main ------------------------------------------------------------------------------------

BAD_CATEGORIES = ("clear", "unclear", "nonsense", "crash")


def summarise(results: list[dict[str, object]]) -> dict[str, object]:
    bad_results = [r for r in results if r["kind"] == "bad"]
    valid = [r for r in results if r["kind"] == "valid"]
    counts = {c: sum(r["category"] == c for r in bad_results) for c in BAD_CATEGORIES}
    by_area: dict[str, dict[str, int]] = {}
    for r in bad_results:
        by_area.setdefault(str(r["area"]), dict.fromkeys(BAD_CATEGORIES, 0))[str(r["category"])] += 1
    return {
        "bad_inputs": len(bad_results),
        "bad_cli": sum(str(r["area"]).startswith("cli") for r in bad_results),
        "bad_api": sum(str(r["area"]).startswith("api") for r in bad_results),
        "counts": counts,
        "by_area": by_area,
        "valid_cases": len(valid),
        "valid_ok": sum(r["category"] == "ok" for r in valid),
        "valid_failed": sum(r["category"] != "ok" for r in valid),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only cases whose name contains this text")
    parser.add_argument("--out", default=str(RESULTS), help="the JSON results file")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.only is None or args.only in c.name]
    logs = Path(tempfile.mkdtemp(prefix="battery-logs-"))
    started = time.perf_counter()
    results = []
    for case in cases:
        result = run_case(case, logs)
        results.append({"name": case.name, "area": case.area,
                        "kind": "valid" if case.valid else "bad", **result})
        if not args.quiet or result["category"] not in ("clear", "ok"):
            print(f"{result['category']:>8}  {case.name:<40} {str(result['message'])[:150]}",
                  flush=True)
    shutil.rmtree(logs, ignore_errors=True)
    summary = summarise(results)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    summary["fastmwem_version"] = fastmwem.__version__
    print(json.dumps(summary, indent=1))
    if args.only is None:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"summary": summary, "cases": results}, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
