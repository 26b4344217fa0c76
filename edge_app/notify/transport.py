"""Sending one HTTP request with the standard library: no redirects, a timeout, errors as DeliveryError.

Redirects are not followed: urllib would carry the ``Authorization`` header (an ntfy token) and
the signed body to wherever a ``Location`` points, a destination the configuration never named.
"""
from __future__ import annotations

import urllib.error
import urllib.request

from edge_app.notify.message import HttpRequest

#: a receiver's answer is read up to this much, then dropped: only its status counts
MAX_RESPONSE_BYTES = 64 * 1024


class DeliveryError(Exception):
    """A request that did not get a 2xx answer; the text names no secret (URLs hold none)."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401 - urllib's signature
        return None  # urllib then raises HTTPError with the 3xx status


def send(request: HttpRequest, timeout_s: float) -> int:
    """Send ``request``; its status (2xx), or DeliveryError."""
    opener = urllib.request.build_opener(_NoRedirects())
    req = urllib.request.Request(request.url, data=request.body, method=request.method,
                                 headers=dict(request.headers))
    try:
        with opener.open(req, timeout=timeout_s) as response:
            response.read(MAX_RESPONSE_BYTES)
            return int(response.status)
    except urllib.error.HTTPError as err:
        raise DeliveryError(f"HTTP {err.code} {err.reason}") from None
    except urllib.error.URLError as err:
        raise DeliveryError(f"cannot connect: {err.reason}") from None
    except (OSError, ValueError) as err:  # timeouts, resets, a bad answer
        raise DeliveryError(f"{type(err).__name__}: {err}") from None
