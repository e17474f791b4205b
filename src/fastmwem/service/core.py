"""The service without HTTP: one PMW session over a store, its principals and its commits.

Order of events for a query (the privacy rules: charge before the data is touched, release only
what is committed):

1. the token, the rate limit and the query are checked, its scale included (a refusal spends
   nothing);
2. under the session lock, a request id seen before returns the stored answer (no new release)
   if it was asked with the same query, and is refused (HTTP 409) if with another;
3. if the query opens an epoch, its charge is committed (global and analyst budgets, one
   transaction) before the noisy threshold is drawn;
4. the answer, its measurement and the sparse-vector state are committed in one transaction;
5. only then is the answer returned. A crash between 3 and 4 leaves the epoch paid and unused;
   on restart the paid epoch is used without a second charge.

At start-up the state is leased (one server a state), checked (a file or database that is not a
fastmwem state, is damaged, or whose ledger or budget totals were edited is refused, never
reinitialised) and only then loaded.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from fastmwem.accounting import Accountant, Admit, BudgetExceededError, LedgerEntry, exact
from fastmwem.data.domain import Domain
from fastmwem.release.pmw.accuracy import Accuracy, answer_accuracy
from fastmwem.release.pmw.plan import PMWConfig, PMWRecord, paid_from_labels
from fastmwem.release.pmw.session import PMWSession, check_query
from fastmwem.service import tokens
from fastmwem.service.labels import Labels
from fastmwem.service.store import (
    GLOBAL,
    StateError,
    Store,
    StoredAnswer,
    analyst_scope,
)

if TYPE_CHECKING:
    from fastmwem.data.schema import Schema
    from fastmwem.data.sources.base import MarginalSource
    from fastmwem.random import RNGLike

__all__ = ["QueryService", "Principal", "AuthError", "RateLimiter", "RateLimitError",
           "RequestConflictError", "AnalystLedger", "FORMAT"]

#: The state format: ``-2`` has the hash-chained ledger (``-1`` states are refused).
FORMAT = "fastmwem-service-2"


class AuthError(Exception):
    """A missing, malformed or wrong token (HTTP 401), or a right token on the wrong side (403)."""

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class RateLimitError(Exception):
    """Too many requests from one principal (HTTP 429)."""


class RequestConflictError(Exception):
    """A request id used before by the same analyst for another query (HTTP 409)."""


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: the data owner (``admin``) or an analyst."""

    kind: str  # "admin" or "analyst"
    analyst_id: int | None = None

    @property
    def key(self) -> str:
        return "admin" if self.kind == "admin" else f"a{self.analyst_id}"


class RateLimiter:
    """A token bucket per principal: ``rate`` requests a second, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = float(rate)
        self.burst = int(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> None:
        now = time.monotonic()
        with self._lock:
            level, last = self._buckets.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - last) * self.rate)
            if level < 1:
                raise RateLimitError(f"rate limit: at most {self.rate:g} requests a second "
                                     f"(bursts of {self.burst}); retry later")
            self._buckets[key] = (level - 1, now)


class QueryService:
    """A PMW session served to several analysts, with its state in ``store``.

    With ``schema`` (the data's public schema, over the dataset's domain), queries may name
    labels and answers show them (:mod:`fastmwem.service.labels`); the schema is part of the
    state, like the domain.
    """

    def __init__(self, store: Store, dataset: MarginalSource, config: PMWConfig, *,
                 admin_token: str, data_hash: str, rng: RNGLike = None,
                 schema: Schema | None = None) -> None:
        self.store = store
        self.config = config
        self.domain: Domain = dataset.domain
        self.labels = None if schema is None else Labels(schema)
        if self.labels is not None and self.labels.domain != self.domain:
            raise ValueError(f"the schema's domain {self.labels.domain} is not the data's "
                             f"domain {self.domain}")
        self._accuracy = lru_cache(maxsize=4096)(self._accuracy_of)
        self._dataset = dataset
        self._rng = rng
        self._lock = threading.Lock()
        self._accountants: dict[int | None, Accountant] = {}
        meta = {"format": FORMAT, "domain": json.dumps(self.domain.to_dict()),
                "pmw": json.dumps(config.to_dict(), sort_keys=True), "data_sha256": data_hash,
                "admin_hash": self._admin_hash(admin_token)}
        if schema is not None:
            meta["schema"] = json.dumps(schema.to_dict(), sort_keys=True)
        epsilon = exact(config.epsilon, "epsilon")
        store.lease()  # before anything is read or written
        try:
            if store.inspect() == "new":
                store.initialise(meta, epsilon)
            else:
                self._check_format(store.meta().get("format"))
                self._check_meta(store.meta(), meta)
            store.verify(epsilon)
            self._admin_stored = store.meta()["admin_hash"]
            self._load()
        except BaseException:
            store.close()  # give up the lease: nothing is served
            raise

    # -- start-up ----------------------------------------------------------------------------------
    @staticmethod
    def _admin_hash(admin_token: str) -> str:
        parts = tokens.split_token(admin_token)
        if parts is None or parts[0] != "admin":
            raise ValueError("the admin token must look like 'admin.<secret>'")
        return tokens.token_hash(parts[1])

    @staticmethod
    def _check_format(found: str | None) -> None:
        if found == FORMAT:
            return
        if found is not None and found.startswith("fastmwem-service-"):
            raise StateError(f"the state has the format {found!r} of another fastmwem version "
                             f"(this one reads {FORMAT!r}, with a hash-chained ledger); start a "
                             "new state")
        raise StateError("the state is not a fastmwem service state (its meta rows name no "
                         "service format)")

    @staticmethod
    def _check_meta(stored: dict[str, str], wanted: dict[str, str]) -> None:
        names = {"format": "state format", "domain": "domain", "pmw": "session parameters "
                 "(epsilon, alpha, max updates, ...): budgets are read-only",
                 "data_sha256": "data file", "admin_hash": "admin token",
                 "schema": "schema (--schema)"}
        for key, what in names.items():
            if stored.get(key) != wanted.get(key):
                raise ValueError(f"the state was made with another {what}; serve it with the same "
                                 "settings, or start a new state")

    def _load(self) -> None:
        """(Re)build the session from the store: the store is the truth."""
        total, threshold = self.store.session_row()
        count_paid, runs, measures = paid_from_labels(
            [entry.label for entry, _, _ in self.store.ledger()])
        measurements = self.store.measurements()
        if measures not in (len(measurements), len(measurements) + 1):
            raise StateError("the ledger's measurement charges do not match the measurements "
                             "stored: the state was edited")
        record = PMWRecord(self.config, total=total, count_paid=count_paid, epochs_paid=runs,
                           noisy_threshold=threshold, measurements=measurements,
                           measurement_paid=measures > len(measurements))
        self._accountants.clear()
        self.session = PMWSession.resume(self._dataset, record, rng=self._rng,
                                         accountant=self._accountant(None))
        if total is None:
            self.store.set_total(self.session.total)

    def _accountant(self, analyst_id: int | None) -> Accountant:
        acc = self._accountants.get(analyst_id)
        if acc is None:
            acc = Accountant(epsilon=self.config.epsilon,
                             store=AnalystLedger(self.store, analyst_id))
            self._accountants[analyst_id] = acc
        return acc

    # -- principals --------------------------------------------------------------------------------
    def authenticate(self, header: str | None) -> Principal:
        if not header:
            raise AuthError("missing token: send 'Authorization: Bearer <token>'")
        scheme, _, token = header.partition(" ")
        parts = tokens.split_token(token.strip()) if scheme.lower() == "bearer" else None
        if parts is None:
            raise AuthError("malformed token: send 'Authorization: Bearer <token>'")
        principal, secret = parts
        if principal == "admin":
            if tokens.matches(secret, self._admin_stored):
                return Principal("admin")
        elif principal[:1] == "a" and principal[1:].isdigit() and len(principal) < 20:
            analyst_id = int(principal[1:])
            if tokens.matches(secret, self.store.analyst_hash(analyst_id)):
                return Principal("analyst", analyst_id)
        else:
            tokens.matches(secret, None)  # the same work as for a known principal
        raise AuthError("invalid token")

    def add_analyst(self, name: object, budget: object) -> dict[str, object]:
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ValueError("name must be a non-empty string of at most 100 characters")
        eps = _budget(budget)
        token: dict[str, str] = {}

        def make_hash(analyst_id: int) -> str:
            token["value"], digest = tokens.new_token(f"a{analyst_id}")
            return digest

        analyst_id = self.store.add_analyst(name, eps, make_hash)
        return {"id": analyst_id, "name": name, "budget": float(eps), "token": token["value"]}

    def set_budget(self, name: str, budget: object) -> dict[str, object]:
        eps = _budget(budget)
        with self._lock:  # not between a query's check of its analyst's budget and its charges
            self.store.set_analyst_budget(name, eps)
        return next(a for a in self.store.analysts() if a["name"] == name)

    # -- answering ---------------------------------------------------------------------------------
    def answer(self, principal: Principal, query: object, request_id: object) -> dict[str, object]:
        if principal.kind != "analyst" or principal.analyst_id is None:
            raise AuthError("only analysts ask queries; the admin token cannot", status=403)
        if request_id is None:
            request_id = uuid.uuid4().hex
        if not isinstance(request_id, str) or not 0 < len(request_id) <= 100:
            raise ValueError("request_id must be a string of 1 to 100 characters")
        if not isinstance(query, dict):
            raise ValueError("query must be a JSON object such as {\"cell\": {\"attr\": 0}}")
        coded = query if self.labels is None else self.labels.to_codes(query)
        check_query(self.domain, coded)  # a bad query is refused before anything else
        try:
            key = _canonical(query)  # it is stored as JSON after the charge: check it before
        except (TypeError, ValueError):
            raise ValueError("query must be plain JSON (objects, lists, numbers)") from None
        analyst = principal.analyst_id
        with self._lock:
            stored = self.store.find_answer(analyst, request_id)
            if stored is not None:
                if _canonical(stored.query) != key:
                    raise RequestConflictError(
                        "this request_id was used before for another query; a retry must send "
                        "the same query, a new query a new request_id")
                return {**self._present(stored), "replayed": True}
            self._check_affordable(analyst)
            try:
                ans = self.session.answer(coded, accountant=self._accountant(analyst))
                stored = StoredAnswer(analyst, request_id, query, ans.value, ans.source,
                                      ans.charged, ans.updates, time.time())
                self.store.save_answer(stored, coded if ans.source == "measured" else None,
                                       self.session.noisy_threshold)
            except (BudgetExceededError, ValueError, TypeError):
                raise  # refused before the session changed
            except BaseException:
                # The in-memory session may be ahead of what was committed: the store decides.
                self._load()
                raise
        return {**self._present(stored), "replayed": False}

    def _present(self, stored: StoredAnswer) -> dict[str, object]:
        """An answer as the API shows it: the query in labels (and codes) with a schema, the
        noise scale and the 95% interval (see :mod:`fastmwem.release.pmw.accuracy`)."""
        out = stored.to_json()
        coded = stored.query if self.labels is None else self.labels.to_codes(stored.query)
        if self.labels is not None:
            out["query"], out["query_codes"] = self.labels.to_labels(coded), coded
        accuracy = self._accuracy(_canonical(coded), stored.source)
        out.update(noise_scale=accuracy.noise_scale, interval=accuracy.interval(stored.value),
                   interval_level=accuracy.level)
        return out

    def _accuracy_of(self, coded: str, source: str) -> Accuracy:
        query: Any = json.loads(coded)
        return answer_accuracy(self.config, self.session.total, self.domain, query, source)

    def _check_affordable(self, analyst_id: int) -> None:
        """Refuse a query whose analyst could not pay every charge it may cause (the run it opens,
        the measurement it triggers): once the data is tested, a refusal would tell the result."""
        if self.session.updates_left <= 0:
            return  # the session refuses it as exhausted
        cost = sum((Fraction(event.epsilon) for event, _ in self.session.charges_due()),
                   Fraction(0))
        budget, spent = self.store.budget(analyst_scope(analyst_id)) or (Fraction(0), Fraction(0))
        if spent + cost > budget:
            raise BudgetExceededError(
                f"this analyst's budget would be exceeded: a query now may cost epsilon "
                f"{float(cost):.6g} (a sparse-vector run it opens and a measurement it triggers), "
                f"with {float(spent):.6g} of {float(budget):.6g} spent")

    # -- reading -----------------------------------------------------------------------------------
    def analyst_budget(self, analyst_id: int) -> dict[str, object]:
        budget, spent = self.store.budget(analyst_scope(analyst_id)) or (Fraction(0), Fraction(0))
        return {"budget": float(budget), "spent": float(spent), "remaining": float(budget - spent),
                "session": self._session_figures()}

    def _global_budget(self) -> tuple[Fraction, Fraction]:
        row = self.store.budget(GLOBAL)
        if row is None:  # never for a state that passed verify()
            raise StateError("the state has no global budget row")
        return row

    def _session_figures(self) -> dict[str, object]:
        budget, spent = self._global_budget()
        return {"epsilon": float(budget), "spent": float(spent),
                "remaining": float(budget - spent), "updates": self.session.updates,
                "max_updates": self.config.max_updates, "alpha": self.config.alpha}

    def owner_budget(self) -> dict[str, object]:
        """The session's figures, the history of charges, the analysts and the ledger's head
        (its length and last hash: a copy kept elsewhere reveals a later rewrite)."""
        budget = self._global_budget()[0]
        names = {a["id"]: a["name"] for a in self.store.analysts()}
        spent = Fraction(0)
        history = []
        for entry, analyst_id, created in self.store.ledger():
            spent += entry.cost[0]
            history.append({"time": created, "label": entry.label,
                            "analyst": names.get(analyst_id), "cost": float(entry.cost[0]),
                            "spent": float(spent), "remaining": float(budget - spent)})
        length, head = self.store.ledger_head()
        return {**self._session_figures(), "history": history,
                "analysts": self.store.analysts(), "ledger": {"entries": length, "head": head}}

    def log(self, analyst_id: int | None) -> list[dict[str, object]]:
        if analyst_id is not None:
            return [self._present(a) for a in self.store.answers(analyst_id)]
        names = {a["id"]: a["name"] for a in self.store.analysts()}
        return [{**self._present(a), "analyst": names.get(a.analyst_id)}
                for a in self.store.answers()]

    def schema(self) -> dict[str, object]:
        """The public labels of the attributes (with a schema)."""
        if self.labels is None:
            raise LookupError("this service has no schema: queries name codes (see /v1/domain)")
        return self.labels.describe()


def _canonical(query: object) -> str:
    """One text for equal JSON queries (key order aside), to tell a retry from a new query."""
    return json.dumps(query, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _budget(value: object) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError("budget must be a number (epsilon)")
    return exact(value, "budget", allow_zero=True)


class AnalystLedger:
    """The global ledger as a :class:`~fastmwem.accounting.LedgerStore`, charging one analyst's
    budget too (``analyst_id`` None: the data owner's own charges, such as the record count)."""

    def __init__(self, store: Store, analyst_id: int | None) -> None:
        self._store = store
        self._analyst_id = analyst_id

    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(entry for entry, _, _ in self._store.ledger())

    def spent(self, width: int) -> tuple[Fraction, ...]:
        row = self._store.budget(GLOBAL)
        return (Fraction(0) if row is None else row[1],) * width

    def commit(self, entries: Sequence[LedgerEntry], admit: Admit) -> None:
        self._store.charge(self._analyst_id, entries, admit)
