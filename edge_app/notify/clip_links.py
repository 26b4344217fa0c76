"""Short-lived signed links to an event's clip, for the notifications (docs/notifications.md, "The clip link").

A phone that gets an ntfy push, or an automation that gets a webhook, has no API token, and a
token in a link would end up in the push service, chat logs and browser history. So the link names
one event's clip and one expiry, signed with HMAC-SHA256 under a key of this device:
``sig = HMAC(key, "GET\\n<path>\\nexpires=<unix s>")``. The route that serves it
(``GET /api/v1/links/events/<id>/clip.mp4``) needs no token, only a valid signature that has not
expired, and serves nothing but that clip.

The key is not the API token's (as the ``<video>`` URLs of :mod:`edge_app.http_server.signed_urls`
are): a link lives for hours and goes through third-party services, and must not be a way to
learn anything about the token. It is 32 random bytes made at first start in a file of the state
directory, readable only by the service (mode 0600), never in the configuration, so no
configuration export or backup of the file carries it. Deleting the file revokes every link
handed out; the next start makes a new key.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import math
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from urllib.parse import quote, urlencode

from edge_app.process.atomic_file import write_atomic

log = logging.getLogger(__name__)

KEY_BYTES = 32
KEY_FILE_NAME = "notify-link.key"
EXPIRES = "expires"
SIG = "sig"
SIG_HEX_CHARS = 64  # SHA-256
#: a clock step of the appliance (NTP after boot) may move "now" by this much between sign and check
CLOCK_SLACK_S = 60
#: the prefix of the links' route: outside it nothing is served by a link's signature
LINK_PREFIX = "/api/v1/links"


class LinkKeyError(Exception):
    """The key file exists but is not a key (a clear message naming the file)."""


def load_or_create_key(path: Path) -> bytes:
    """The device's link key from ``path``; made (32 random bytes, mode 0600) when the file is missing."""
    path = Path(path)
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = secrets.token_bytes(KEY_BYTES)
        write_atomic(path, key, make_folder=True)  # a temp file of mode 0600 renamed into place
        os.chmod(path, 0o600)
        log.info("made a new key for the notifications' clip links in %s", path)
        return key
    if len(key) != KEY_BYTES:
        raise LinkKeyError(f"{path} holds {len(key)} bytes, not a {KEY_BYTES}-byte link key; delete it and "
                           "restart to make a new one (links already sent stop working)")
    return key


def clip_path(event_id: str) -> str:
    """The route's path of an event's clip (the event id percent-encoded, as a URL carries it)."""
    return f"{LINK_PREFIX}/events/{quote(event_id, safe='')}/clip.mp4"


@dataclass(frozen=True)
class ClipLink:
    url: str  # absolute: the base URL, the path and the signed query
    expires: int  # Unix seconds


class ClipLinks:
    """Signs and checks the clip links of one device key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"a link key has {KEY_BYTES} bytes")
        self._key = key

    def _signature(self, path: str, expires: int) -> str:
        message = f"GET\n{path}\n{urlencode({EXPIRES: str(expires)})}".encode("utf-8")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def link(self, base_url: str, event_id: str, ttl_s: float, now_s: Optional[float] = None) -> ClipLink:
        """A link to ``event_id``'s clip under ``base_url`` that works until ``ttl_s`` from now."""
        expires = int(math.ceil((time.time() if now_s is None else now_s) + ttl_s))
        path = clip_path(event_id)
        query = urlencode([(EXPIRES, str(expires)), (SIG, self._signature(path, expires))])
        return ClipLink(f"{base_url.rstrip('/')}{path}?{query}", expires)

    def refusal(self, event_id: str, expires_text: str, sig: str, max_ttl_s: float,
                now_s: Optional[float] = None) -> Optional[str]:
        """None when the link to ``event_id``'s clip is valid now; why it is refused otherwise."""
        if len(sig) != SIG_HEX_CHARS or not expires_text.isascii() or not expires_text.isdigit() \
                or len(expires_text) > 12:
            return "the clip link is malformed (it needs expires and sig as the notification gave them)"
        expected = self._signature(clip_path(event_id), int(expires_text))
        # compare_digest: the time taken says nothing about how many characters matched.
        if not hmac.compare_digest(sig.encode("ascii", "replace"), expected.encode("ascii")):
            return "the clip link's signature is not valid (altered, for another clip, or from another device key)"
        now = time.time() if now_s is None else now_s
        if int(expires_text) < now:
            return "the clip link has expired; the event's clip is in the app's Review section"
        # Only what the appliance hands out is honoured: a link valid for longer than the
        # configured lifetime was not made by it, and must not become a lasting key to the file.
        if int(expires_text) > now + max_ttl_s + CLOCK_SLACK_S:
            return f"the clip link expires too far ahead (more than {max_ttl_s:g} s)"
        return None
