"""Short-lived signed URLs for what a ``<video>`` element loads (clips and recording exports).

A ``<video src>`` cannot send an Authorization header, and a token in a URL would end up in
browser history, logs and the Referer of whatever the page links to. So the API hands out a URL
that names one file and one expiry, signed with HMAC-SHA256 under a key derived from the API
token: ``HMAC(token, "edge-app clip url v1")``. The signature covers the path and every query
parameter but ``sig`` (sorted), so it cannot be moved to another event, another time range or a
later expiry. Because the key follows the running token, changing the token revokes every URL
handed out before.

Without a token (an API that answers only this machine) every route is open anyway; the URL
handed out is the plain one and never expires.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import time
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple
from urllib.parse import urlencode

KEY_LABEL = b"edge-app clip url v1"
DEFAULT_TTL_S = 60
MIN_TTL_S = 10
MAX_TTL_S = 3600
EXPIRES = "expires"
SIG = "sig"
SIG_HEX_CHARS = 64  # SHA-256
SIGNED_PARAMS = frozenset({EXPIRES, SIG})
#: a clock step of the appliance (NTP after boot) may move "now" by this much between sign and check
CLOCK_SLACK_S = 60


@dataclass(frozen=True)
class SignedUrl:
    url: str  # path and query, relative to the API's root
    expires: Optional[int]  # Unix seconds; None: no token is set, the URL is the plain route


def _key(token: str) -> bytes:
    return hmac.new(token.encode("utf-8"), KEY_LABEL, hashlib.sha256).digest()


def _message(path: str, params: Mapping[str, str]) -> bytes:
    # Sorted and URL-encoded: one canonical string per request, whatever order the client sends.
    query = urlencode(sorted((name, value) for name, value in params.items() if name != SIG))
    return f"GET\n{path}\n{query}".encode("utf-8")


def signature(token: str, path: str, params: Mapping[str, str]) -> str:
    return hmac.new(_key(token), _message(path, params), hashlib.sha256).hexdigest()


def sign(token: Optional[str], path: str, params: Mapping[str, str], ttl_s: float,
         now_s: Optional[float] = None) -> SignedUrl:
    """A URL for ``path`` with ``params`` that works without a token until ``ttl_s`` from now."""
    plain = path + ("?" + urlencode(sorted(params.items())) if params else "")
    if not token:
        return SignedUrl(plain, None)
    expires = int(math.ceil((time.time() if now_s is None else now_s) + ttl_s))
    signed = dict(params, **{EXPIRES: str(expires)})
    signed[SIG] = signature(token, path, signed)
    return SignedUrl(path + "?" + urlencode(sorted(signed.items())), expires)


def is_signed_request(args: Mapping[str, str]) -> bool:
    """The request carries a signature (or part of one): it is judged by it alone."""
    return any(name in args for name in SIGNED_PARAMS)


def check(token: str, path: str, args: Mapping[str, str], now_s: Optional[float] = None) -> Tuple[bool, str]:
    """(valid, why not) for a request to ``path`` carrying ``args`` (its query parameters)."""
    sig = args.get(SIG, "")
    expires_text = args.get(EXPIRES, "")
    if len(sig) != SIG_HEX_CHARS or not expires_text.isascii() or not expires_text.isdigit() or len(expires_text) > 12:
        return False, "the signed URL is malformed; ask for a new one (POST .../clip-url)"
    expected = signature(token, path, args)
    # compare_digest: the time taken says nothing about how many characters matched.
    if not hmac.compare_digest(sig.encode("ascii", "replace"), expected.encode("ascii")):
        return False, "the signed URL is not valid (altered, or signed under another token)"
    now = time.time() if now_s is None else now_s
    if int(expires_text) < now:
        return False, "the signed URL has expired; ask for a new one"
    # Only what the API hands out is honoured: a URL valid for longer than MAX_TTL_S was not made
    # by it, and must not live on as a lasting key to the file.
    if int(expires_text) > now + MAX_TTL_S + CLOCK_SLACK_S:
        return False, f"the signed URL expires too far ahead (more than {MAX_TTL_S} s); ask for a new one"
    return True, ""

