"""The addresses the server answering a request listens on, as the request sees them.

:class:`edge_app.http_server.server.ApiServer` puts them in every request's WSGI environ, so the app
(built before its server) learns where it is really reachable: the token rule
(:mod:`edge_app.config.exposure`) is decided by them, not by the configured ``api.host`` alone.
"""
from __future__ import annotations

from typing import Tuple

from flask import has_request_context, request

LISTENING_ENVIRON_KEY = "edge_app.http_server.listening"


def request_listening_hosts() -> Tuple[str, ...]:
    """The bound addresses of the server of the current request; empty outside a served request."""
    if not has_request_context():
        return ()
    return tuple(request.environ.get(LISTENING_ENVIRON_KEY, ()))
