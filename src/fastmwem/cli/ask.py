"""``fastmwem ask``: ask a query service (``fastmwem serve``) as an analyst or the data owner."""

from __future__ import annotations

import argparse
import json
import os
import sys

from fastmwem.cli import CLIError
from fastmwem.service.client import TOKEN_RULE, Client, RedirectRefused, ServiceError, is_token

__all__ = ["register", "parse_pairs"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ask",
        help="ask a fastmwem query service",
        description="Ask one query, or read the budget or the log, and print the JSON answer. "
                    "The token comes from --token-file or $FASTMWEM_TOKEN.",
    )
    parser.add_argument("url", help="the service, e.g. http://127.0.0.1:8000")
    parser.add_argument("--token-file", help="file holding the token")
    parser.add_argument("--request-id", help="an id that makes a retry return the same answer")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--cell", help="a marginal cell: attr=code,attr=code")
    action.add_argument("--range", help="a range: attr=low:high,attr=low:high (inclusive)")
    action.add_argument("--query", help='a query as JSON, e.g. {"vector": [...]}')
    action.add_argument("--budget", action="store_true", help="this analyst's budget")
    action.add_argument("--log", action="store_true", help="this analyst's answered queries")
    action.add_argument("--domain", action="store_true", help="the public domain")
    action.add_argument("--add-analyst", metavar="NAME=EPSILON",
                        help="(admin) create an analyst with a budget; prints its token")
    action.add_argument("--set-budget", metavar="NAME=EPSILON", help="(admin) set a budget")
    action.add_argument("--owner-budget", action="store_true",
                        help="(admin) the whole budget and its history")
    parser.set_defaults(handler=run)


def parse_pairs(text: str, flag: str, *, ranges: bool) -> dict[str, object]:
    """``a=1,b=0`` (or ``a=0:3`` with ``ranges``) as a dict of codes or [low, high] pairs."""
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
                out[name.strip()] = [int(low), int(high)]
            else:
                out[name.strip()] = int(value)
        except ValueError:
            form = "attr=low:high" if ranges else "attr=code"
            raise CLIError(f"{flag}: expected {form}[,...], got {part!r}") from None
    return out


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
    client = Client(args.url, _token(args))
    try:
        result = _call(client, args)
    except RedirectRefused as exc:
        raise CLIError(str(exc)) from None
    except ServiceError as exc:
        raise CLIError(f"the service refused: {exc}") from None
    except OSError as exc:
        raise CLIError(f"cannot reach {args.url}: {getattr(exc, 'reason', exc)}") from None
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


def _call(client: Client, args: argparse.Namespace) -> object:
    if args.cell:
        return client.ask({"cell": parse_pairs(args.cell, "--cell", ranges=False)},
                          request_id=args.request_id)
    if args.range:
        return client.ask({"range": parse_pairs(args.range, "--range", ranges=True)},
                          request_id=args.request_id)
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
    return client.budget() if args.budget else client.log() if args.log else client.domain()
