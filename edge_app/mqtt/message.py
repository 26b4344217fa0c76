"""One outgoing MQTT message as the publisher queues it."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

# What a message is decides how it is treated across reconnects: states and the birth are
# superseded by what is published on connect, everything else is re-sent.
DETECTIONS, STATE, STATS, STATUS, EVENTS = "detections", "state", "stats", "status", "events"


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    kind: str
    #: when it was made (monotonic): how long the oldest queued message waited is the publisher's lag
    created_s: float = field(default_factory=time.monotonic, compare=False)
