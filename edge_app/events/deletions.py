"""Events deleted by the store's writer: kept out when they come back, and announced to whoever
removes their clips (``EventStore.on_deleted``).

Writer thread only: the store's writer is the one caller of every method here.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Callable, List

log = logging.getLogger(__name__)

#: deleted ids remembered, so the next update of an open event deleted through the API is dropped
RECENTLY_DELETED = 1000


class Deletions:
    def __init__(self) -> None:
        self._recent: "OrderedDict[str, None]" = OrderedDict()
        self.listener: Callable[[List[str]], None] = lambda event_ids: None

    def deleted(self, event_id: str, found: bool) -> bool:
        """Remember ``event_id`` when it existed (a client must not be able to block events that
        have not started yet); returns ``found``."""
        if found:
            self._recent[event_id] = None
            while len(self._recent) > RECENTLY_DELETED:
                self._recent.popitem(last=False)
        return found

    def drops(self, kind: str, payload: Any) -> bool:
        """Whether a write for a deleted event is dropped: an open event's next update, its
        snapshot, its track, its clip (a clip finished after its event was deleted is removed too)."""
        event_id = payload.id if kind == "event" else getattr(payload, "event_id", None)
        if event_id is None or event_id not in self._recent:
            return False
        if kind == "clip" and payload.size_bytes >= 0:
            self.announce([event_id])
        return kind in ("event", "snapshot", "clip", "track")

    def announce(self, event_ids: List[str]) -> None:
        """Tell the listener these events are gone (their clips go too); never raises."""
        if not event_ids:
            return
        try:
            self.listener(event_ids)
        except Exception:  # the events are deleted; a clip left behind goes with the recordings' retention
            log.exception("removing the clips of deleted events failed")
