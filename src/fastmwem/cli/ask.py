"""``fastmwem ask``: ask a query service (``fastmwem serve``) as an analyst or the data owner."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
import urllib.request

from fastmwem.cli import CLIError
from fastmwem.service.client import TOKEN_RULE, Client, RedirectRefused, ServiceError, is_token

__all__ = ["register", "parse_pairs"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ask",
        help="ask a fastmwem query service",
        description="Ask one query, or read the budget or the log, and print the JSON answer "
                    "(numbers rounded to 6 significant digits for display; the HTTP API and "
                    "fastmwem.service.client return them exactly). An answer carries its "
                    "noise scale and a 95%% interval. The token comes from --token-file or "
                    "$FASTMWEM_TOKEN.",
    )
    parser.add_argument("url", help="the service, e.g. http://127.0.0.1:8000")
    parser.add_argument("--token-file", help="file holding the token")
    parser.add_argument("--request-id", help="an id that makes a retry return the same answer")
    parser.add_argument("--labels", action="store_true",
                        help="every value of --cell/--range is a label, integers too (without "
                             "it, an integer is a code and anything else a label)")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="wait up to SECONDS for the service to come up (and --token-file "
                             "to appear), e.g. right after starting fastmwem serve")
    parser.add_argument("--token-out", metavar="FILE",
                        help="with --add-analyst: write the new token to FILE (mode 0600; FILE "
                             "must not exist) instead of printing it")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--cell", help="a marginal cell: attr=value,attr=value (a value is a "
                                       "code or, with a schema, a label)")
    action.add_argument("--range", help="a range: attr=low:high,attr=low:high (inclusive)")
    action.add_argument("--query", help='a query as JSON, e.g. {"vector": [...]}')
    action.add_argument("--budget", action="store_true", help="this analyst's budget")
    action.add_argument("--log", action="store_true", help="this analyst's answered queries")
    action.add_argument("--domain", action="store_true", help="the public domain")
    action.add_argument("--schema", action="store_true",
                        help="the attributes' labels (a service started with --schema)")
    action.add_argument("--add-analyst", metavar="NAME=EPSILON",
                        help="(admin) create an analyst with a budget; prints its token")
    action.add_argument("--set-budget", metavar="NAME=EPSILON", help="(admin) set a budget")
    action.add_argument("--owner-budget", action="store_true",
                        help="(admin) the whole budget and its history")
    parser.set_defaults(handler=run)


def parse_pairs(text: str, flag: str, *, ranges: bool, labels: bool = False) -> dict[str, object]:
    """``a=1,b=0`` (or ``a=0:3`` with ``ranges``) as a dict of values or [low, high] pairs.

    A value is a code (an integer) or a label (anything else, or everything with ``labels``).
    """
    out: dict[str, object] = {}
    for part in text.split(","):
        name, eq, value = part.partition("=")
        try:
            if not eq or not name.strip():
                raise ValueError
            if ranges:
                low, colon, high = value.partition(":")
                if not colon:
                    raise ValueError
                out[name.strip()] = [_value(low, labels), _value(high, labels)]
            else:
                out[name.strip()] = _value(value, labels)
        except ValueError:
            form = "attr=low:high" if ranges else "attr=value"
            raise CLIError(f"{flag}: expected {form}[,...], got {part!r}") from None
    return out


def _value(text: str, labels: bool) -> int | str:
    """A code, or a label (the text as written); an empty value is neither."""
    text = text.strip()
    if not text:
        raise ValueError
    if not labels:
        try:
            return int(text)
        except ValueError:
            pass
    return text


# A token is short; a file past this many bytes is not one (a data file given by mistake).
_MAX_TOKEN_FILE = 4096


def _token(args: argparse.Namespace) -> str:
    """The token, checked against the rule; no message ever shows what the file or variable holds
    (a secret, or the content of a data file named by mistake)."""
    if args.token_file:
        try:
            with open(args.token_file, "rb") as fh:
                raw = fh.read(_MAX_TOKEN_FILE + 1)
        except OSError as exc:
            raise CLIError(f"--token-file: cannot read {args.token_file!r}: {exc.strerror}") from None
        token = raw.strip().decode("ascii", "replace")
        if len(raw) > _MAX_TOKEN_FILE or not is_token(token):
            raise CLIError(f"--token-file: {args.token_file!r} must hold {TOKEN_RULE}")
        return token
    token = os.environ.get("FASTMWEM_TOKEN", "").strip()
    if not token:
        raise CLIError("give --token-file or set FASTMWEM_TOKEN")
    if not is_token(token):
        raise CLIError(f"$FASTMWEM_TOKEN must hold {TOKEN_RULE}")
    return token


def _split_budget(text: str, flag: str) -> tuple[str, float]:
    name, eq, value = text.rpartition("=")
    try:
        if not eq or not name:
            raise ValueError
        return name, float(value)
    except ValueError:
        raise CLIError(f"{flag}: expected NAME=EPSILON, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    if args.token_out is not None and not args.add_analyst:
        raise CLIError("--token-out goes with --add-analyst")
    if not 0 <= args.wait <= 3600:
        raise CLIError(f"--wait must be within 0..3600 seconds, got {args.wait:g}")
    out_fd = _reserve(args.token_out) if args.token_out is not None else None
    try:
        if args.wait:
            _wait(args)
        client = Client(args.url, _token(args))
        try:
            result = _call(client, args)
        except RedirectRefused as exc:
            raise CLIError(str(exc)) from None
        except ServiceError as exc:
            raise CLIError(f"the service refused: {exc}") from None
        except OSError as exc:
            raise CLIError(f"cannot reach {args.url}: {getattr(exc, 'reason', exc)}") from None
        if out_fd is not None and isinstance(result, dict):
            fd, out_fd = out_fd, None
            result = _write_token(fd, args.token_out, result)
    finally:
        if out_fd is not None:  # nothing was written: leave no empty token file behind
            os.close(out_fd)
            os.unlink(args.token_out)
    json.dump(rounded(result), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


def rounded(value: object) -> object:
    """``value`` for display: floats to 6 significant digits (whole ones as integers)."""
    if isinstance(value, float) and math.isfinite(value):
        short = float(f"{value:.6g}")
        return int(short) if short.is_integer() and abs(short) < 1e15 else short
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def _reserve(path: str) -> int:
    """Create ``path`` for the new token now (mode 0600, never over an existing file, which
    an input is), so that the analyst is not created when its token could not be kept."""
    if not path:
        raise CLIError("--token-out: the path is empty")
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CLIError(f"--token-out: {path!r} exists; a token file is never written over") \
            from None
    except OSError as exc:
        raise CLIError(f"--token-out: cannot create {path!r}: {exc.strerror}") from None


def _write_token(fd: int, path: str, created: dict[str, object]) -> dict[str, object]:
    """Write the analyst's token to the reserved file; the answer without it.

    The analyst exists now: if the file cannot be written, the token is printed rather than
    lost (it is shown only once).
    """
    token = created.get("token")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            if not isinstance(token, str):
                raise OSError("the service's answer holds no token")
            fh.write(token + "\n")
    except (OSError, UnicodeError) as exc:
        with contextlib.suppress(OSError):
            os.unlink(path)
        json.dump(created, sys.stdout, indent=1)
        sys.stdout.write("\n")
        raise CLIError(f"--token-out: cannot write {path!r} ({exc}); the answer, with the new "
                       "token, is printed above instead") from None
    shown = {k: v for k, v in created.items() if k != "token"}
    return {**shown, "token_file": path}


def _wait(args: argparse.Namespace) -> None:
    """Wait until the service answers /healthz (no token is sent) and --token-file exists."""
    deadline = time.monotonic() + args.wait
    while True:
        missing = args.token_file and not os.path.exists(args.token_file)
        if not missing:
            try:
                with urllib.request.urlopen(args.url.rstrip("/") + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (OSError, ValueError):
                pass
        if time.monotonic() >= deadline:
            what = f"--token-file {args.token_file!r} to appear" if missing else \
                f"the service at {args.url} to come up"
            raise CLIError(f"--wait: waited {args.wait:g} s for {what}")
        time.sleep(0.2)


def _call(client: Client, args: argparse.Namespace) -> object:
    if args.cell:
        return client.ask({"cell": parse_pairs(args.cell, "--cell", ranges=False,
                                               labels=args.labels)}, request_id=args.request_id)
    if args.range:
        return client.ask({"range": parse_pairs(args.range, "--range", ranges=True,
                                                labels=args.labels)}, request_id=args.request_id)
    if args.query:
        try:
            query = json.loads(args.query)
        except ValueError as exc:
            raise CLIError(f"--query is not JSON: {exc}") from None
        return client.ask(query, request_id=args.request_id)
    if args.add_analyst:
        return client.add_analyst(*_split_budget(args.add_analyst, "--add-analyst"))
    if args.set_budget:
        return client.set_budget(*_split_budget(args.set_budget, "--set-budget"))
    if args.owner_budget:
        return client.owner_budget()
    if args.schema:
        return client.schema()
    return client.budget() if args.budget else client.log() if args.log else client.domain()
