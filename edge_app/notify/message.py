"""What a notification says, and the HTTP requests that carry it (docs/notifications.md, "Payload").

A webhook gets the notification as JSON, signed: ``X-Edge-App-Signature: sha256=<hex>`` is
HMAC-SHA256 of the exact body bytes under the target's secret. ntfy gets its publish request:
the text in the body (or the snapshot as an attachment, the text in ``Message``), with ``Title``,
``Tags``, ``Priority``, ``Click`` and ``Authorization`` headers.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import asdict, dataclass
from typing import Optional, Tuple
from urllib.parse import quote

from edge_app.config.schema_notify import NotifyTargetConfig
from edge_app.events.model import LOITERING, OBJECT, Occupancy

SIGNATURE_HEADER = "X-Edge-App-Signature"
USER_AGENT = "edge-app-notify"


@dataclass(frozen=True)
class Notification:
    """An alert began: what every target is told."""

    device_id: str
    camera_id: str
    label: str
    zones: Tuple[str, ...]  # entered by the event so far
    event_id: str
    review_id: str  # the review item the alert belongs to
    start_time: float  # Unix seconds, the event's first frame
    score: float  # the event's best confidence so far
    snapshot_url: Optional[str] = None  # None when notifications.base_url is not set
    clip_url: Optional[str] = None
    event_type: str = OBJECT  # edge_app.events.model's: an object, loitering, occupancy
    occupancy: Optional[Occupancy] = None  # an occupancy event's counts and its zone's limit

    def _words(self, camera: str) -> str:
        """What happened where, with ``camera`` as the camera's words; the title and the text share it."""
        where = f" in {', '.join(self.zones)}" if self.zones else ""
        if self.occupancy is not None:
            counted = ", ".join(f"{n} {label}" for label, n in self.occupancy.objects.items())
            return f"{counted or self.occupancy.count}{where} on {camera}"
        doing = " loitering" if self.event_type == LOITERING else ""
        return f"{self.label}{doing} on {camera}{where}"

    @property
    def title(self) -> str:
        limit = f" (limit {self.occupancy.max_objects})" if self.occupancy is not None else ""
        return self._words(self.camera_id) + limit

    @property
    def text(self) -> str:
        """The longer line: ntfy's message body."""
        limit = f"limit {self.occupancy.max_objects}; " if self.occupancy is not None else ""
        return f"{self._words('camera ' + self.camera_id)} ({limit}score {self.score:.2f})"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["zones"] = list(self.zones)
        data["type"] = "alert"
        data["title"] = self.title
        data["occupancy"] = None if self.occupancy is None else self.occupancy.to_dict()
        return data


@dataclass(frozen=True)
class HttpRequest:
    method: str
    url: str
    headers: Tuple[Tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> Optional[str]:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)


def links(base_url: Optional[str], event_id: str) -> Tuple[Optional[str], Optional[str]]:
    """(snapshot URL, clip URL) of an event on the appliance's API; (None, None) without a base URL."""
    if not base_url:
        return None, None
    path = f"{base_url}/api/v1/events/{quote(event_id, safe='')}"
    return f"{path}/snapshot.jpg", f"{path}/clip.mp4"


def signature(secret: str, body: bytes) -> str:
    """The value of ``X-Edge-App-Signature`` for ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def webhook_request(target: NotifyTargetConfig, notification: Notification, sent_at: float,
                    snapshot_jpeg: Optional[bytes] = None) -> HttpRequest:
    data = notification.to_dict()
    # Signed with the rest: a receiver that refuses old times refuses a replayed body.
    data["sent_at"] = round(sent_at, 3)
    if target.attach_snapshot and snapshot_jpeg:
        data["snapshot_jpeg_base64"] = base64.b64encode(snapshot_jpeg).decode("ascii")
    body = json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8")
    headers = (("Content-Type", "application/json"), ("User-Agent", USER_AGENT),
               (SIGNATURE_HEADER, signature(target.secret or "", body)))
    return HttpRequest("POST", target.url, headers, body)


def header_text(value: str) -> str:
    """``value`` as an HTTP header value: ASCII as it is, anything else as RFC 2047 UTF-8 (ntfy decodes it)."""
    if value.isascii() and value.isprintable():
        return value
    return "=?UTF-8?B?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def ntfy_request(target: NotifyTargetConfig, notification: Notification,
                 snapshot_jpeg: Optional[bytes] = None) -> HttpRequest:
    text = notification.text
    headers = [("Title", header_text(notification.title)),
               ("Tags", header_text(",".join(["rotating_light", notification.label, notification.camera_id]))),
               ("Priority", "high"), ("User-Agent", USER_AGENT)]
    if notification.clip_url:
        headers.append(("Click", notification.clip_url))
    if target.token:
        headers.append(("Authorization", f"Bearer {target.token}"))
    if target.attach_snapshot and snapshot_jpeg:
        # ntfy's "attach a local file": the body is the file, the text goes in a header.
        headers += [("Filename", "snapshot.jpg"), ("Message", header_text(text))]
        return HttpRequest("PUT", target.url, tuple(headers), snapshot_jpeg)
    headers.append(("Content-Type", "text/plain; charset=utf-8"))
    return HttpRequest("POST", target.url, tuple(headers), text.encode("utf-8"))


def request_for(target: NotifyTargetConfig, notification: Notification, sent_at: float,
                snapshot_jpeg: Optional[bytes] = None) -> HttpRequest:
    if target.type == "webhook":
        return webhook_request(target, notification, sent_at, snapshot_jpeg)
    return ntfy_request(target, notification, snapshot_jpeg)
