"""The HTTP API (FastAPI under uvicorn) and the data owner's budget page.

(No ``from __future__ import annotations`` here: FastAPI reads the dependency annotations of
the routes, which are local to :func:`create_app`, at definition time.)

Every error is JSON ``{"error": "<what is wrong>"}`` with a 4xx status, and spends nothing:
401 (no or wrong token), 403 (a token on the wrong side), 400 (malformed body or query, a query
over another domain, a query whose scale cannot be represented), 404 (no such analyst), 409 (a
budget or the updates are spent, or a request id reused for another query), 413 (body too
large), 429 (rate limit). The OpenAPI description is at ``/openapi.json``, browsable at
``/docs`` (Swagger UI) and ``/redoc``, both served from the ``fastapi-offline`` package: the
pages work without reaching a CDN.
"""


from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fastmwem.accounting import BudgetExceededError
from fastmwem.service.core import (
    AuthError,
    Principal,
    QueryService,
    RateLimiter,
    RateLimitError,
    RequestConflictError,
)
from fastmwem.service.page import PAGE_HTML, PAGE_JS

__all__ = ["create_app", "BodyLimit"]


class QueryRequest(BaseModel):
    query: dict[str, Any] = Field(description='e.g. {"cell": {"attr": 0}}, {"range": {"attr": '
                                              '[0, 3]}} or {"vector": [...]} (one weight a cell); '
                                              'with a schema, a string names a label: {"cell": '
                                              '{"sex": "F"}}')
    request_id: str | None = Field(default=None, description="an id to make retries safe: the "
                                   "same id with the same query returns the stored answer, with "
                                   "no new release; with another query it is refused (409)")


class AnalystRequest(BaseModel):
    name: str
    budget: float = Field(description="the analyst's epsilon")


class BudgetRequest(BaseModel):
    budget: float


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class BodyLimit:
    """ASGI middleware: refuse a request body over ``limit`` bytes with 413, whether declared
    (Content-Length) or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"request body too large: at most {self.limit} bytes"
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _error(413, message)(scope, receive, send)
            return
        seen = 0
        too_large = False
        replaced = False

        async def limited() -> Message:
            nonlocal seen, too_large
            event = await receive()
            seen += len(event.get("body", b""))
            if seen > self.limit:
                # End the body with a byte no JSON parser accepts, so that a valid prefix is
                # never acted upon; the app's error reply is replaced by the 413 below.
                too_large = True
                return {"type": "http.request", "body": b"\x00", "more_body": False}
            return event

        async def watched(event: Message) -> None:
            nonlocal replaced
            if not too_large:
                await send(event)
            elif not replaced:
                replaced = True
                await _error(413, message)(scope, _no_body, send)

        await self.app(scope, limited, watched)


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


def create_app(service: QueryService, *, rate: float = 20.0, burst: int = 40,
               max_body: int = 4 * 2**20) -> BodyLimit:
    """The app serving ``service`` (FastAPI behind :class:`BodyLimit`); ``rate``/``burst`` per
    token, bodies up to ``max_body``."""
    app = FastAPIOffline(
        title="fastmwem query service",
        description="Online Private Multiplicative Weights with a durable privacy ledger")
    limiter = RateLimiter(rate, burst)

    def principal(request: Request) -> Principal:
        who = service.authenticate(request.headers.get("authorization"))
        limiter.check(who.key)
        return who

    Who = Annotated[Principal, Depends(principal)]

    def admin(who: Who) -> Principal:
        if who.kind != "admin":
            raise AuthError("this needs the admin token", status=403)
        return who

    def analyst(who: Who) -> Principal:
        if who.kind != "analyst":
            raise AuthError("this needs an analyst token (the admin asks no queries)", status=403)
        return who

    Admin = Annotated[Principal, Depends(admin)]
    Analyst = Annotated[Principal, Depends(analyst)]
    _handlers(app)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/v1/query", summary="Ask one linear query: its value, source, charge, noise "
                                   "scale and 95% interval")
    def ask(body: QueryRequest, who: Analyst) -> dict[str, Any]:
        result = service.answer(who, body.query, body.request_id)
        return {**result, "budget": service.analyst_budget(_analyst_id(who))}

    @app.get("/v1/budget", summary="This analyst's budget and the session's")
    def budget(who: Analyst) -> dict[str, Any]:
        return service.analyst_budget(_analyst_id(who))

    @app.get("/v1/log", summary="This analyst's answered queries")
    def log(who: Analyst) -> list[dict[str, Any]]:
        return service.log(who.analyst_id)

    @app.get("/v1/domain", summary="The public domain: attributes and their sizes")
    def domain(who: Who) -> dict[str, int]:
        return service.domain.to_dict()

    @app.get("/v1/schema", summary="The attributes' labels (404 without a schema)")
    def schema(who: Who) -> dict[str, Any]:
        return service.schema()

    @app.post("/v1/admin/analysts", status_code=201, summary="Create an analyst and its token")
    def add_analyst(body: AnalystRequest, who: Admin) -> dict[str, Any]:
        return service.add_analyst(body.name, body.budget)

    @app.put("/v1/admin/analysts/{name}", summary="Set an analyst's budget")
    def set_budget(name: str, body: BudgetRequest,
                   who: Admin) -> dict[str, Any]:
        return service.set_budget(name, body.budget)

    @app.get("/v1/admin/analysts", summary="Analysts and their budgets")
    def analysts(who: Admin) -> list[dict[str, Any]]:
        return service.store.analysts()

    @app.get("/v1/admin/budget", summary="The data owner's budget and its history")
    def owner_budget(who: Admin) -> dict[str, Any]:
        return service.owner_budget()

    @app.get("/v1/admin/log", summary="Every answered query")
    def owner_log(who: Admin) -> list[dict[str, Any]]:
        return service.log(None)

    @app.get("/budget", include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(PAGE_HTML, headers=_PAGE_HEADERS)

    @app.get("/budget.js", include_in_schema=False)
    def page_script() -> Response:
        return Response(PAGE_JS, media_type="text/javascript", headers=_PAGE_HEADERS)

    return BodyLimit(app, max_body)


def _analyst_id(who: Principal) -> int:
    """The id of a principal the ``analyst`` dependency admitted (analysts always have one)."""
    if who.analyst_id is None:
        raise AuthError("this needs an analyst token", status=403)
    return who.analyst_id


_PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'",
                 "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(AuthError)
    def auth_error(request: Request, exc: AuthError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return _error(exc.status, str(exc), headers)

    @app.exception_handler(RateLimitError)
    def rate_error(request: Request, exc: RateLimitError) -> JSONResponse:
        return _error(429, str(exc), {"Retry-After": "1"})

    @app.exception_handler(BudgetExceededError)
    def budget_error(request: Request, exc: BudgetExceededError) -> JSONResponse:
        return _error(409, str(exc))

    @app.exception_handler(RequestConflictError)
    def conflict(request: Request, exc: RequestConflictError) -> JSONResponse:
        return _error(409, str(exc))

    @app.exception_handler(LookupError)
    def missing(request: Request, exc: LookupError) -> JSONResponse:
        return _error(404, str(exc.args[0]) if exc.args else "not found")

    @app.exception_handler(ValueError)
    def bad_value(request: Request, exc: ValueError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(TypeError)
    def bad_type(request: Request, exc: TypeError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(RequestValidationError)
    def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where}: {err.get('msg', 'invalid')}")
        return _error(400, "malformed request: " + "; ".join(problems)[:500])
