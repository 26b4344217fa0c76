"""Bearer-token protection of ``/api/v1/*``, and of ``/metrics`` as ``api.metrics_auth`` says.

The token is read from the running configuration on every request, so a token changed through
``PATCH /api/v1/config`` applies to the very next request without a restart. A client that
sends wrong tokens too often is refused with 429 for a while, whatever it sends, so the token
cannot be guessed at network speed; the log says so once a minute per client, not per guess.

Whether a token is needed at all follows where the server really listens (see
:mod:`edge_app.config.exposure`): a running configuration without a usable token on a listener
off loopback is a mistake the change path refuses to make, and should one still be running,
clients from other machines get 503 rather than an unprotected API. Clients on the machine
itself keep working, so the owner can set a token.
"""
from __future__ import annotations

import hmac
import logging
from typing import Callable, Collection, List, Optional

from flask import Flask, Response, request

from edge_app.http_server.errors import error_response
from edge_app.http_server.signed_urls import check as check_signed_url, is_signed_request
from edge_app.http_server.listening import request_listening_hosts
from edge_app.http_server.throttle import FailureThrottle
from edge_app.process.log_limit import LogLimiter
from edge_app.config.exposure import MAKE_TOKEN, describe_hosts, exposed_hosts, metrics_need_token, usable_token
from edge_app.config.schema import AppConfig
from edge_app.config.schema_rules import is_loopback_host

logger = logging.getLogger(__name__)

PROTECTED_PREFIX = "/api/v1"
#: protected as ``api.metrics_auth`` says (:func:`edge_app.config.exposure.metrics_need_token`)
METRICS_PATH = "/metrics"
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="edge-app"'}


def bearer_token(authorization: Optional[str]) -> Optional[str]:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def _same_token(presented: str, expected: str) -> bool:
    # compare_digest takes the same time wherever the strings differ, so the token cannot be
    # guessed byte by byte from response times; bytes because it refuses non-ASCII str.
    return hmac.compare_digest(presented.encode("utf-8"), expected.encode("utf-8"))


def install_auth(
    app: Flask,
    config_getter: Callable[[], AppConfig],
    query_token_endpoints: Collection[str] = (),
    throttle: Optional[FailureThrottle] = None,
    signed_endpoints: Collection[str] = (),
    authenticated_elsewhere: Callable[[], bool] = lambda: False,
) -> None:
    """Require the configured token on ``/api/v1/*``.

    ``query_token_endpoints`` also accept ``?token=``: an ``<img src>`` showing a snapshot or
    an MJPEG stream in a browser cannot send an Authorization header. Everywhere else the query
    parameter is ignored, so tokens do not spread into URLs that need not carry them.
    ``signed_endpoints`` (what a ``<video>`` loads) also accept a signed URL
    (:mod:`edge_app.http_server.signed_urls`) instead of the token: a request that carries ``expires`` or
    ``sig`` is judged by its signature alone, and an expired or altered one is 403.
    ``throttle`` counts wrong tokens per client address (default: 10 a minute).
    A request for which ``authenticated_elsewhere()`` is true is left to its route, which must
    authenticate it itself (the fleet's device routes check a device token instead).
    """
    failures = throttle or FailureThrottle()
    log_limiter = LogLimiter(failures.policy.window_s)

    def log_wrong_token(client: str, path: str, now_throttled: bool) -> None:
        if now_throttled:
            logger.warning("%s sent %d wrong tokens within %g s; refusing it for a while",
                           client, failures.policy.max_failures, failures.policy.window_s)
            return
        allowed, suppressed = log_limiter.allow(client)
        if allowed:
            more = f" ({suppressed} more since the last such line)" if suppressed else ""
            logger.info("rejected a request to %r with a wrong token from %s%s", path, client, more)

    unprotected_log_limiter = LogLimiter(failures.policy.window_s)

    def log_unprotected(exposed: List[str]) -> None:
        if unprotected_log_limiter.allow("")[0]:
            logger.error("the API listens on %s without a usable api.token; refusing every other machine "
                         "until one is set", describe_hosts(exposed))

    @app.before_request
    def _require_token() -> Optional[Response]:
        path = request.path
        if path == METRICS_PATH:
            if not metrics_need_token(config_getter(), request_listening_hosts()):
                return None
        elif path != PROTECTED_PREFIX and not path.startswith(PROTECTED_PREFIX + "/"):
            return None
        if authenticated_elsewhere():
            return None
        expected = config_getter().api.token
        client = request.remote_addr or "?"
        if not usable_token(expected) and not is_loopback_host(client):
            exposed = exposed_hosts(request_listening_hosts())
            if exposed:
                log_unprotected(exposed)
                return error_response(503, f"the API listens on {describe_hosts(exposed)} without a usable api.token "
                                           f"and answers only this machine itself; {MAKE_TOKEN}, or restart it "
                                           f"on a loopback api.host")
        if not expected:
            return None
        if request.endpoint in signed_endpoints and is_signed_request(request.args):
            return _check_signature(expected)
        retry_after_s = failures.retry_after_s(client)
        if retry_after_s is not None:
            return error_response(429, f"too many wrong tokens from {client}; retry in {retry_after_s} s",
                                  {"Retry-After": str(retry_after_s)})
        presented = bearer_token(request.headers.get("Authorization"))
        if presented is None and request.endpoint in query_token_endpoints:
            presented = request.args.get("token") or None
        if presented is None:
            return error_response(401, "this API needs a token: send 'Authorization: Bearer <token>'", CHALLENGE)
        if not _same_token(presented, expected):
            log_wrong_token(client, path, failures.record_failure(client))
            return error_response(401, "the token is wrong", CHALLENGE)
        return None


def _check_signature(token: str) -> Optional[Response]:
    """None when the request's signed URL is valid now; 403 saying why otherwise."""
    if any(len(values) > 1 for values in request.args.listvalues()):
        return error_response(403, "a signed URL names each parameter once")
    valid, why = check_signed_url(token, request.path, request.args)
    return None if valid else error_response(403, why)
