"""What the fleet hears from appliances: topics under ``<prefix>/<device_id>/`` sorted by kind.

The subscriptions, the parsing of a topic into a :class:`Heard` and of its payload into a
checked JSON object are written down here once. Every topic and payload is hostile input: a
device id or camera id outside ``[A-Za-z0-9_-]{1,64}``, an oversized payload, or a value the
database cannot hold (an integer beyond 2^53, an endless string or list, deep nesting) is
refused (and counted) before it goes anywhere near a batch.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from edge_app.finite_json import loads_finite

#: Larger payloads are dropped whatever their kind (FLEET.yaml ingest.message_bytes sets each kind's own).
MAX_PAYLOAD_BYTES = 1024 * 1024
#: Integers beyond this are refused: JSON readers lose them, and databases hold 64 bits at most.
MAX_INT = 2 ** 53
MAX_STRING_CHARS = 4096
MAX_LIST_ITEMS = 1024
MAX_DEPTH = 16
#: An event time further ahead of the fleet's clock than this is refused: it would pin the event on
#: top of every list sorted by time. A day covers any appliance clock that is merely wrong.
MAX_FUTURE_S = 86400.0
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_LEVEL = re.compile(r"^[^/#+\x00-\x1f\x7f]{1,128}$")

STATUS, CAMERA_STATE, STATS, EVENT, COUNT, REPORTED, DESIRED = (
    "status", "camera_state", "stats", "event", "count", "reported", "desired")
HEALTH = "health"


def subscriptions(prefix: str) -> List[str]:
    """Topic filters of everything the fleet keeps (never the detections: one per frame).

    ``config/desired`` only to notice a retained desired message cleared or replaced
    (``edge_app.fleet_service.desired_watch``): the fleet's versions are what its own database
    says it issued, never what a message on the broker claims.
    """
    p = f"{prefix}/+"
    return [f"{p}/status", f"{p}/stats", f"{p}/events", f"{p}/cameras/+/state", f"{p}/cameras/+/objects/+",
            f"{p}/zones/+/+", f"{p}/cameras/+/lines/+", f"{p}/config/reported", f"{p}/health",
            f"{p}/config/desired"]


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
    topic: str = ""
    #: the payload parsed and checked on arrival (:func:`decode`), so the writer does not parse it again
    body: Optional[Dict[str, Any]] = None


def too_large(kind: str, size: int, limits: Dict[str, int]) -> bool:
    """Whether a payload of ``size`` bytes is over its kind's limit (FLEET.yaml ``ingest.message_bytes``)."""
    return size > min(limits.get(kind, MAX_PAYLOAD_BYTES), MAX_PAYLOAD_BYTES)


def _check(value: Any, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return
    if isinstance(value, int):
        if not -MAX_INT <= value <= MAX_INT:
            raise ValueError("an integer beyond 2^53")
    elif isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise ValueError(f"a string longer than {MAX_STRING_CHARS} characters")
    elif isinstance(value, list):
        if len(value) > MAX_LIST_ITEMS:
            raise ValueError(f"a list of more than {MAX_LIST_ITEMS} items")
        for item in value:
            _check(item, depth + 1)
    elif isinstance(value, dict):
        if len(value) > MAX_LIST_ITEMS:
            raise ValueError(f"an object of more than {MAX_LIST_ITEMS} keys")
        for key, item in value.items():
            _check(key, depth + 1)
            _check(item, depth + 1)


def decode(heard: Heard) -> Dict[str, Any]:
    """The payload as a JSON object every value of which fits the database; ValueError naming what does not.

    The size was checked when the message arrived (:func:`too_large`), so ``json.loads`` only
    ever sees a bounded payload; NaN, Infinity and numbers beyond a float's range (1e400) are refused.
    """
    if len(heard.payload) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"a payload over {MAX_PAYLOAD_BYTES} bytes")
    try:
        body = loads_finite(heard.payload.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(body, dict):
        raise ValueError("the payload is not a JSON object")
    _check(body, 0)
    return body


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
