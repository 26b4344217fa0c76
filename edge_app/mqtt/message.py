"""One outgoing MQTT message as the publisher queues it."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

# What a message is decides how it is treated across reconnects: states and the birth are
# superseded by what is published on connect, everything else is re-sent. EVENT (an event or a
# line crossing) has a lane of its own in the outbox; EVENTS is every other QoS 1 message of the
# extensions (counts, snapshots, health, reports).
DETECTIONS, STATE, STATS, STATUS, EVENTS, EVENT = "detections", "state", "stats", "status", "events", "event"


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    kind: str
    #: when it was made (monotonic): how long the oldest queued message waited is the publisher's lag
    created_s: float = field(default_factory=time.monotonic, compare=False)
