"""When the REST API needs a token: decided by every address it listens on, not only ``api.host``.

``api.host`` takes effect at a restart, so between a change and the restart the server keeps
listening where it did. A rule that only looked at the configured host let a change to
``{"api": {"host": "127.0.0.1", "token": null}}`` ("loopback needs no token") leave a LAN
listener serving everything without a token until the restart. So a token is needed while
*any* address the server actually listens on is off loopback (``0.0.0.0`` and ``::`` are), and
for the configuration's own ``api.host`` (where it will listen after the restart).

The configuration change path (:mod:`edge_app.config_change.changes`) refuses changes that break the
rule, whatever their origin; the auth middleware (:mod:`edge_app.http_server.auth`) enforces it again per
request, should a configuration without a usable token ever be running on an exposed listener.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

from edge_app.config.schema import AppConfig
from edge_app.config.schema_rules import MIN_TOKEN_CHARS, is_loopback_host
from edge_app.config.file import Problem

#: how to make a token, in every message that asks for one
MAKE_TOKEN = f"set a random token of at least {MIN_TOKEN_CHARS} characters (openssl rand -hex 24)"


def exposed_hosts(hosts: Iterable[str]) -> List[str]:
    """The addresses among ``hosts`` that other machines can reach: all but loopback ones."""
    return [host for host in hosts if not is_loopback_host(host)]


def usable_token(token: Optional[str]) -> bool:
    """Whether ``token`` may protect an API that other machines reach."""
    return bool(token) and len(token or "") >= MIN_TOKEN_CHARS


def describe_hosts(hosts: Sequence[str]) -> str:
    """``hosts`` for a message; the empty host (all interfaces) by name."""
    return ", ".join(host or "all interfaces" for host in hosts)


def metrics_need_token(config: AppConfig, listening_hosts: Sequence[str]) -> bool:
    """Whether ``GET /metrics`` asks for the token (``api.metrics_auth``).

    Its per-camera motion and analysed rates tell who moves where, so ``auto`` protects it as soon
    as other machines can reach the API: an address it listens on, or the configured ``api.host``,
    is off loopback. Without a token set it stays open, like every route.
    """
    mode = config.api.metrics_auth
    if mode != "auto":
        return mode == "token"
    return bool(exposed_hosts(listening_hosts)) or bool(exposed_hosts([config.api.host]))


def token_problems(new_config: AppConfig, listening_hosts: Sequence[str]) -> List[Problem]:
    """The ``api.token`` problem of running ``new_config`` on a server listening on ``listening_hosts``.

    ``listening_hosts`` are the addresses the API server is bound to now (empty when none is
    running); they count even when ``new_config`` disables the API, since that too waits for a
    restart.
    """
    token = new_config.api.token
    if usable_token(token):
        return []
    exposed = exposed_hosts(listening_hosts)
    configured = exposed_hosts([new_config.api.host]) if new_config.api.enabled else []
    what = "required" if not token else f"must have at least {MIN_TOKEN_CHARS} characters"
    if exposed:
        return [Problem("api.token", f"{what} while the API listens on {describe_hosts(exposed)}: a new api.host "
                                     f"takes effect only at a restart, so keep the token until the API has "
                                     f"restarted on a loopback address; {MAKE_TOKEN}")]
    if configured:
        return [Problem("api.token", f"{what} when api.host ({describe_hosts(configured)}) is not loopback; "
                                     f"{MAKE_TOKEN}")]
    return []


__all__ = ["MAKE_TOKEN", "describe_hosts", "exposed_hosts", "metrics_need_token", "token_problems", "usable_token"]
