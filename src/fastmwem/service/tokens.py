"""Bearer tokens: random, stored as hashes, compared in constant time.

A token is ``<principal>.<secret>``: ``principal`` is ``admin`` or ``a<id>`` (public, used to
find the stored hash) and ``secret`` 32 random bytes (URL-safe base64). Only SHA-256 of the
secret is stored; the secret has 256 bits of entropy, so a fast hash is enough.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["new_token", "token_hash", "split_token", "matches"]

_DUMMY = hashlib.sha256(b"no such principal").hexdigest()


def new_token(principal: str) -> tuple[str, str]:
    """A fresh token for ``principal`` and the hash to store."""
    secret = secrets.token_urlsafe(32)
    return f"{principal}.{secret}", token_hash(secret)


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def split_token(token: str) -> tuple[str, str] | None:
    """``(principal, secret)``, or None for a string that is not a token."""
    principal, dot, secret = token.partition(".")
    if not dot or not principal or not secret or len(token) > 200:
        return None
    return principal, secret


def matches(secret: str, stored: str | None) -> bool:
    """Whether ``secret`` hashes to ``stored``, in time independent of where they differ.

    An unknown principal (``stored`` None) is compared against a dummy hash, so it takes as long.
    """
    ok = hmac.compare_digest(token_hash(secret), stored if stored is not None else _DUMMY)
    return ok and stored is not None
