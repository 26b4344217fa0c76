"""Refuse requests addressed to a DNS name the appliance was not told about (DNS rebinding).

A page on another site can make the visitor's browser resolve its own name to the appliance's
LAN address and then talk to the API as if it were that site; the browser's same-origin rule
does not help because the origin is the attacker's name. Such requests carry the attacker's name
in ``Host``. IP literals and localhost cannot be rebound, so they are always accepted; other
names only when listed in ``api.allowed_hosts`` (``*`` matches within a name: ``*.lan``).
"""
from __future__ import annotations

import fnmatch
import ipaddress
import logging
from typing import Callable, Iterable, Optional
from urllib.parse import urlsplit

from flask import Flask, Response, request

from edge_app.http_server.errors import error_response
from edge_app.config.schema import AppConfig

logger = logging.getLogger(__name__)


def host_name(host_header: str) -> str:
    """The name of a ``Host`` header: port removed, lower case, no trailing dot, no brackets."""
    value = host_header.strip().lower()
    if value.startswith("["):  # [v6]:port
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name.split("%", 1)[0])  # a v6 zone id (fe80::1%eth0) is no name
    except ValueError:
        return False
    return True


def host_allowed(host_header: Optional[str], allowed_hosts: Iterable[str]) -> bool:
    """Whether a request with ``host_header`` may be served."""
    if not host_header:
        # HTTP/1.0 without Host: not something a browser sends, so not a rebinding vector.
        return True
    name = host_name(host_header)
    if _is_ip_literal(name) or name == "localhost":
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed_hosts)


def base_url_refused(config: AppConfig) -> Optional[str]:
    """Why the links made from ``notifications.base_url`` would be answered 400 by the check
    below (its host is a name ``api.allowed_hosts`` does not list), or None."""
    base_url = config.notifications.base_url
    if not base_url:
        return None
    netloc = urlsplit(base_url).netloc
    if host_allowed(netloc, config.api.allowed_hosts):
        return None
    return (f"the API does not answer to the host name {host_name(netloc)!r} (api.allowed_hosts does not list it): "
            "every link in a notification would be refused; add it to api.allowed_hosts")


def install_host_check(app: Flask, config_getter: Callable[[], AppConfig]) -> None:
    """Answer 400 to requests for names outside ``api.allowed_hosts`` (read per request)."""

    @app.before_request
    def _check_host() -> Optional[Response]:
        header = request.environ.get("HTTP_HOST")
        if host_allowed(header, config_getter().api.allowed_hosts):
            return None
        name = host_name(header or "")[:253]
        logger.debug("refused a request for host %r from %s", name, request.remote_addr)
        return error_response(
            400, f"this appliance does not answer to the host name {name!r}; use its IP address, "
                 "or add the name to api.allowed_hosts",
        )
