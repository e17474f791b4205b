"""The query service: Online Private Multiplicative Weights over HTTP with a durable ledger.

Reached only from the command line (``fastmwem serve``); the library never imports it. Modules:
:mod:`~fastmwem.service.store` (SQLite and PostgreSQL state, the ledger store),
:mod:`~fastmwem.service.tokens`, :mod:`~fastmwem.service.core` (the session behind a lock, with
its commits), :mod:`~fastmwem.service.app` (the HTTP API and the budget page).
"""
