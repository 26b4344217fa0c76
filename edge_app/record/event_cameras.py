"""Which camera recorded an event's clip: an event's end and its deletion go to that camera's recorder.

An open event stays known however many newer ones come (its end must reach its recorder, or its
clip goes on in ``max_s`` parts for ever); ended ones are remembered for a while for their
deletion (an older event's clip is deleted straight from the folder).
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import List

log = logging.getLogger(__name__)

#: recently ended events and their cameras: a deletion goes to the recorder that wrote the clip
MAX_EVENTS_KNOWN = 1000
#: open events (started, not ended) are kept until they end; this bound is only against a leak
MAX_OPEN_EVENTS = 100_000


def _remember(known: "OrderedDict[str, str]", event_id: str, camera_id: str, most: int) -> List[str]:
    """Add ``event_id`` to ``known`` (oldest first), forgetting the oldest beyond ``most``; returns those."""
    known[event_id] = camera_id
    forgotten = []
    while len(known) > most:
        forgotten.append(known.popitem(last=False)[0])
    return forgotten


class EventCameras:
    """The camera of each open and recently ended event whose clip is recorded; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: "OrderedDict[str, str]" = OrderedDict()
        self._ended: "OrderedDict[str, str]" = OrderedDict()

    def started(self, event_id: str, camera_id: str) -> None:
        with self._lock:
            forgotten = _remember(self._open, event_id, camera_id, MAX_OPEN_EVENTS)
        for event_id in forgotten:
            log.warning("more than %d open events: event %s is forgotten by recording", MAX_OPEN_EVENTS, event_id)

    def ended(self, event_id: str) -> str:
        """The camera of an event that ends ("" when unknown); from now on it is remembered for
        its deletion only."""
        with self._lock:
            camera_id = self._open.pop(event_id, "")
            if camera_id:
                _remember(self._ended, event_id, camera_id, MAX_EVENTS_KNOWN)
            return camera_id or self._ended.get(event_id, "")

    def deleted(self, event_id: str) -> str:
        """The camera of a deleted event, open or ended ("" when unknown), which is forgotten."""
        with self._lock:
            return self._open.pop(event_id, "") or self._ended.pop(event_id, "")
