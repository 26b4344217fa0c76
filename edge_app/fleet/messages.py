"""What the fleet hears from appliances: topics under ``<prefix>/<device_id>/`` sorted by kind.

The subscriptions and the parsing of a topic into a :class:`Heard` are written down here once.
Every topic is hostile input: a device id or camera id outside ``[A-Za-z0-9_-]{1,64}`` or an
oversized payload is dropped (and counted) before it goes anywhere near the database.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional

#: Larger payloads are dropped: the biggest legitimate one (an event, stats of 64 cameras) is a few KiB.
MAX_PAYLOAD_BYTES = 256 * 1024
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_LEVEL = re.compile(r"^[^/#+\x00-\x1f\x7f]{1,128}$")

STATUS, CAMERA_STATE, STATS, EVENT, COUNT, REPORTED, DESIRED = (
    "status", "camera_state", "stats", "event", "count", "reported", "desired")
HEALTH = "health"


def subscriptions(prefix: str) -> List[str]:
    """Topic filters of everything the fleet keeps (never the detections: one per frame)."""
    p = f"{prefix}/+"
    return [f"{p}/status", f"{p}/stats", f"{p}/events", f"{p}/cameras/+/state", f"{p}/cameras/+/objects/+",
            f"{p}/zones/+/+", f"{p}/cameras/+/lines/+", f"{p}/config/reported", f"{p}/config/desired",
            f"{p}/health"]


def desired_topic(prefix: str, device_id: str) -> str:
    return f"{prefix}/{device_id}/config/desired"


@dataclass(frozen=True)
class Heard:
    """One message from one device: ``key`` is the camera id (state) or the count's topic tail."""

    kind: str
    device_id: str
    key: str
    payload: bytes
    retained: bool
    received_s: float


def classify(prefix: str, topic: str) -> Optional[tuple]:
    """``(kind, device_id, key)`` for a topic the fleet keeps, None for anything else."""
    if not topic.startswith(prefix + "/"):
        return None
    levels = topic[len(prefix) + 1:].split("/")
    if len(levels) < 2 or not _ID.match(levels[0]):
        return None
    device_id, rest = levels[0], levels[1:]
    if rest == ["status"]:
        return STATUS, device_id, ""
    if rest == ["stats"]:
        return STATS, device_id, ""
    if rest == ["events"]:
        return EVENT, device_id, ""
    if rest == ["health"]:
        return HEALTH, device_id, ""
    if rest == ["config", "reported"]:
        return REPORTED, device_id, ""
    if rest == ["config", "desired"]:
        return DESIRED, device_id, ""
    if len(rest) == 3 and rest[0] == "cameras" and rest[2] == "state" and _ID.match(rest[1]):
        return CAMERA_STATE, device_id, rest[1]
    counted = ((len(rest) == 4 and rest[0] == "cameras" and rest[2] in ("objects", "lines"))
               or (len(rest) == 3 and rest[0] == "zones"))
    if counted and all(_LEVEL.match(level) for level in rest):
        return COUNT, device_id, "/".join(rest)
    return None
