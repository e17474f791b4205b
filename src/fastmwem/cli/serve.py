"""``fastmwem serve``: an Online Private Multiplicative Weights query service over HTTP."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fastmwem.cli import CLIError, print_warning, warn_seeded
from fastmwem.cli._io import check_input_file, read_text_file
from fastmwem.data import Dataset, Domain
from fastmwem.release.pmw.plan import PMWConfig

if TYPE_CHECKING:
    from fastmwem.data.schema import Schema

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve private answers to linear queries (Online PMW) over HTTP",
        description=(
            "Serve an HTTP JSON API on DATA (a CSV of integer codes with --domain, or of raw "
            "values with --schema, whose labels queries and answers then use): analysts ask "
            "linear queries; answers come from a synthetic distribution while the sparse vector "
            "says it is accurate, and from a noisy measurement plus an update otherwise; each "
            "answer carries its noise scale and a 95%% interval. Pure "
            "epsilon-DP under add/remove-one-record neighbours for everything released. The "
            "state (ledger, measurements) lives in --state: a SQLite file (WAL mode) or a "
            "postgresql:// URL; restarting with the same arguments resumes the session."
        ),
    )
    parser.add_argument("data", help="input CSV: integer codes (--domain) or raw values (--schema)")
    parser.add_argument("--domain", help='domain JSON {"column": size} (DATA holds codes)')
    parser.add_argument("--schema", help="the data's public schema JSON (DATA holds raw values; "
                                         "queries may name labels, answers show them)")
    parser.add_argument("--epsilon", type=float, required=True, help="total privacy budget")
    parser.add_argument("--state", required=True,
                        help="state: a SQLite file path (made if missing; a file that exists "
                             "must be a fastmwem state) or a postgresql:// URL; one server a "
                             "state")
    parser.add_argument("--admin-token-file", required=True,
                        help="file holding the admin token; created (mode 0600) with a new "
                             "random token if missing")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="accuracy threshold as a fraction of the record count (default 0.05)")
    parser.add_argument("--max-updates", type=int, default=50,
                        help="multiplicative-weights updates allowed (default 50)")
    parser.add_argument("--total", type=int, default=None,
                        help="public record count (default: a noisy count, 1%% of epsilon)")
    parser.add_argument("--sv-fraction", type=float, default=0.5,
                        help="share of each update's epsilon for the sparse vector (default 0.5)")
    parser.add_argument("--reuse-passes", type=int, default=0,
                        help="MW passes over all measurements after each update (default 0)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--rate", type=float, default=20.0,
                        help="requests a second per token (default 20)")
    parser.add_argument("--burst", type=int, default=40, help="burst per token (default 40)")
    parser.add_argument("--max-body", type=int, default=4 * 2**20,
                        help="largest request body in bytes (default 4 MiB)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for tests only: the answers are NOT private with it")
    parser.set_defaults(handler=run)


def _admin_token(path: str) -> tuple[str, bool]:
    """The token in ``path``, or a new one (``True``: to be written there once the state opened).

    A new token's file is written only after the state was accepted, so that a refused state
    leaves no file behind; the directory is checked here, before anything else happens.
    """
    if os.path.exists(path):
        token = read_text_file(lambda p: Path(p).read_text(encoding="utf-8"), path,
                               "--admin-token-file").strip()
        if not token.startswith("admin."):
            raise CLIError(f"--admin-token-file {path!r} does not hold an admin token")
        return token, False
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise CLIError(f"--admin-token-file: the folder of {path!r} must exist and be writable")
    from fastmwem.service.tokens import new_token

    return new_token("admin")[0], True


def _write_admin_token(path: str, token: str) -> None:
    """Write a new admin token to ``path`` (mode 0600, never over an existing file)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CLIError(f"--admin-token-file {path!r} appeared while the server started; "
                       "start it again") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    print(f"fastmwem serve: wrote a new admin token to {path}", file=sys.stderr)


def _check_numbers(args: argparse.Namespace) -> None:
    if not 0 < args.port < 65536:
        raise CLIError(f"--port must be in 1..65535, got {args.port}")
    if not args.rate > 0 or args.burst < 1:
        raise CLIError("--rate must be > 0 and --burst >= 1")
    if args.max_body < 1024:
        raise CLIError(f"--max-body must be at least 1024 bytes, got {args.max_body}")
    if args.seed is not None and args.seed < 0:
        raise CLIError("--seed must be a non-negative integer")


def _service_modules() -> None:
    """Refuse, naming the extra, when a package of the service is missing."""
    for name in ("fastapi", "fastapi_offline", "uvicorn"):
        try:
            importlib.import_module(name)
        except ImportError:
            raise CLIError(f'fastmwem serve needs the {name.replace("_", "-")} package: '
                           'pip install "fastmwem[service]"') from None


def _read_data(args: argparse.Namespace) -> tuple[Dataset, Schema | None]:
    """DATA, as codes (--domain) or encoded by its public schema (--schema)."""
    if (args.domain is None) == (args.schema is None):
        raise CLIError("give --domain DOMAIN.json (DATA holds codes) or --schema SCHEMA.json "
                       "(DATA holds raw values), not both")
    check_input_file(args.data, "DATA")
    if args.schema is not None:
        from fastmwem.data.schema import Schema

        check_input_file(args.schema, "--schema")
        schema = read_text_file(Schema.from_json, args.schema, "--schema")
        return read_text_file(schema.encode_csv, args.data, "DATA"), schema
    check_input_file(args.domain, "--domain")
    domain = read_text_file(Domain.from_json, args.domain, "--domain")
    return read_text_file(lambda path: Dataset.from_csv(path, domain), args.data, "DATA"), None


def run(args: argparse.Namespace) -> int:
    _service_modules()
    _check_numbers(args)
    config = PMWConfig(epsilon=args.epsilon, alpha=args.alpha, max_updates=args.max_updates,
                       total=args.total, sv_fraction=args.sv_fraction,
                       reuse_passes=args.reuse_passes)
    dataset, schema = _read_data(args)
    with open(args.data, "rb") as fh:
        data_hash = hashlib.sha256(fh.read()).hexdigest()
    from fastmwem.service.app import create_app
    from fastmwem.service.core import QueryService
    from fastmwem.service.store import open_store

    store = open_store(args.state)  # checks the path before anything is written
    admin_token, new_token = _admin_token(args.admin_token_file)
    if args.seed is not None:
        warn_seeded("serve")
    try:
        service = QueryService(store, dataset, config, admin_token=admin_token,
                               data_hash=data_hash, rng=args.seed, schema=schema)
    except RuntimeError as exc:  # another server holds the state
        raise CLIError(str(exc)) from None
    except Exception as exc:
        if type(exc).__module__.startswith(("psycopg", "sqlite3")):
            raise CLIError(f"--state: {exc}".splitlines()[0]) from None
        raise
    if new_token:
        _write_admin_token(args.admin_token_file, admin_token)
    from fastmwem.release.pmw.accuracy import fit_advice

    advice = fit_advice(config, service.session.total)  # the count the session already uses
    if advice is not None:
        print_warning("serve", advice, "AccuracyWarning")
    app = create_app(service, rate=args.rate, burst=args.burst, max_body=args.max_body)
    import uvicorn

    print(f"fastmwem serve: http://{args.host}:{args.port} (budget page /budget, API /docs)",
          file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0
