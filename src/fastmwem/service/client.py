"""A small client for the query service (``fastmwem serve``), on the standard library only.

>>> client = Client("http://127.0.0.1:8000", "a1.secret")
>>> client.url
'http://127.0.0.1:8000'

Analysts: :meth:`Client.ask`, :meth:`Client.budget`, :meth:`Client.log`, :meth:`Client.domain`,
:meth:`Client.schema`.
The data owner (admin token): :meth:`Client.add_analyst`, :meth:`Client.set_budget`,
:meth:`Client.analysts`, :meth:`Client.owner_budget`, :meth:`Client.owner_log`. A refused request
raises :class:`ServiceError` with the server's message and HTTP status; a service that cannot be
reached, or that breaks off a response, raises ``ConnectionError`` (an ``OSError``): retry it
with the same ``request_id``.

The token goes only to the origin (scheme, host and port) of ``url``: a redirect elsewhere is
refused (:class:`RedirectRefused`), never followed with the token. No message repeats the token.
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import IO, Any

__all__ = ["Client", "ServiceError", "RedirectRefused", "TOKEN_RULE", "is_token"]

TOKEN_RULE = "one line of URL-safe characters (letters, digits, '-', '_', '.', '~')"
_TOKEN = re.compile(r"[A-Za-z0-9._~-]{1,512}")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_token(text: str) -> bool:
    """Whether ``text`` follows :data:`TOKEN_RULE` (what may go into an HTTP header as is)."""
    return isinstance(text, str) and _TOKEN.fullmatch(text) is not None


class ServiceError(Exception):
    """The service refused a request: ``status`` is the HTTP status, the message the reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class RedirectRefused(ServiceError):
    """The service redirected to another origin; the client did not follow (with its token)."""


def _origin(url: str) -> tuple[str, str, int | None] | None:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a malformed port: the same origin as nothing
        return None
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def _show(origin: tuple[str, str, int | None] | None) -> str:
    if origin is None:
        return "an invalid address"
    scheme, host, port = origin
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" + ("" if port is None else f":{port}")


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect within the request's origin only: urllib would resend every header,
    the bearer token among them, to whatever host the Location names."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: http.client.HTTPMessage,
                         newurl: str) -> urllib.request.Request | None:
        target = _origin(newurl)
        if target is None or target != _origin(req.full_url):
            fp.close()
            raise RedirectRefused(code, f"the service redirected to another origin "
                                        f"({_show(target)}); the token is sent only to the "
                                        "address given, so the redirect was not followed")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Client:
    """Talks JSON to a query service at ``url`` with a bearer ``token``."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        if not isinstance(token, str) or not token.strip():
            raise ValueError("token must be a non-empty string")
        if not is_token(token.strip()):  # never echoed: it is a secret, or a misread file
            raise ValueError(f"token must be {TOKEN_RULE}")
        self.url = url.rstrip("/")
        self._token = token.strip()
        self.timeout = float(timeout)
        self._opener = urllib.request.build_opener(_SameOriginRedirects)

    def _call(self, method: str, path: str, body: object = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self._token}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raw = exc.read().decode("utf-8", "replace")
            try:
                message = json.loads(raw).get("error", raw)
            except (ValueError, AttributeError):
                message = raw or exc.reason
            raise ServiceError(exc.code, str(message)) from None
        except http.client.HTTPException as exc:  # e.g. the server died mid-response
            # An OSError, like a refused connection: callers retry both with the same request id.
            raise ConnectionError(f"the service at {self.url} broke off its response ({exc!r}); "
                                  "retry with the same request_id") from exc

    # -- analysts ------------------------------------------------------------------------------
    def ask(self, query: dict[str, Any], *, request_id: str | None = None) -> dict[str, Any]:
        """Ask one query; a retry with the same ``request_id`` returns the same answer."""
        rid = request_id if request_id is not None else uuid.uuid4().hex
        return self._call("POST", "/v1/query", {"query": query, "request_id": rid})

    def budget(self) -> dict[str, Any]:
        return self._call("GET", "/v1/budget")

    def log(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/log")

    def domain(self) -> dict[str, int]:
        return self._call("GET", "/v1/domain")

    def schema(self) -> dict[str, Any]:
        """The attributes' labels, for a service started with a schema (else HTTP 404)."""
        return self._call("GET", "/v1/schema")

    # -- the data owner --------------------------------------------------------------------------
    def add_analyst(self, name: str, budget: float) -> dict[str, Any]:
        """Create an analyst; the answer holds its token (shown this once)."""
        return self._call("POST", "/v1/admin/analysts", {"name": name, "budget": budget})

    def set_budget(self, name: str, budget: float) -> dict[str, Any]:
        return self._call("PUT", "/v1/admin/analysts/" + urllib.parse.quote(name, safe=""),
                          {"budget": budget})

    def analysts(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/admin/analysts")

    def owner_budget(self) -> dict[str, Any]:
        return self._call("GET", "/v1/admin/budget")

    def owner_log(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/admin/log")
