"""Which events have a clip, and how long it is: what the event messages and the event record say.

Every event message on its way out carries ``has_clip`` and the clip's length so far; the
camera recorders' clip reports go into the event record (path, size, span) and, once a clip is
complete (``post_s`` after its event ended), out as one more ``update`` with the final length.
A clip longer than ``record.events.max_s`` comes in parts; the ledger counts them as one clip.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from typing import Callable, Dict, List, Optional, Protocol, Set

from edge_app.events.model import END, UPDATE, Event, EventMessage
from edge_app.record.types import ClipInfo

log = logging.getLogger(__name__)

#: ended events whose clip is still being written (post_s), remembered to send the final update
MAX_AWAITING_CLIPS = 1000


class EventClipSink(Protocol):
    """Where the event record keeps its clip (``edge_app.events.store.EventStore``)."""

    def save_event(self, event: Event) -> bool: ...

    def save_clip(self, event_id: str, path: str, size_bytes: int, duration_s: float,
                  start_time: Optional[float] = None, end_time: Optional[float] = None) -> bool: ...

    def forget_clip(self, event_id: str) -> bool: ...

    def on_deleted(self, callback: Callable[[List[str]], None]) -> None: ...


class ClipLedger:
    """The clips of the events being recorded; thread-safe (the publish thread, the recorder
    threads, retention and the event store's writer all call it)."""

    def __init__(self, publish_event: Callable[[EventMessage], None], store: Optional[EventClipSink] = None) -> None:
        self._publish_event = publish_event
        self._store = store
        self._lock = threading.Lock()
        # event id -> its clip's parts as last reported (a clip longer than max_s continues in a new part)
        self._clips: Dict[str, Dict[int, ClipInfo]] = {}
        self._with_clip: Set[str] = set()  # open events whose clip is being written
        self._awaiting: "OrderedDict[str, Event]" = OrderedDict()  # ended, clip not complete yet

    def started(self, event_id: str) -> None:
        """The event's clip is being written from now on."""
        with self._lock:
            self._with_clip.add(event_id)

    def recording(self, event_id: str) -> bool:
        """Whether the open event's clip is being written."""
        with self._lock:
            return event_id in self._with_clip

    def decorated(self, message: EventMessage) -> EventMessage:
        """``message`` with the clip's figures; an ended event waits for its clip to complete."""
        after = self._decorated(message.after)
        before = None if message.before is None else self._decorated(message.before)
        if message.type == END:
            with self._lock:
                if after.id in self._with_clip:
                    self._with_clip.discard(after.id)
                    self._awaiting[after.id] = after
                    while len(self._awaiting) > MAX_AWAITING_CLIPS:
                        self._awaiting.popitem(last=False)
        return dataclasses.replace(message, after=after, before=before)

    def forget(self, event_ids: List[str]) -> None:
        """These events were deleted: nothing more is said about their clips."""
        with self._lock:
            for event_id in event_ids:
                self._clips.pop(event_id, None)
                self._awaiting.pop(event_id, None)
                self._with_clip.discard(event_id)

    def clips_removed(self, event_ids: List[str]) -> None:
        """Retention removed the last part of these events' clips: they have none now."""
        with self._lock:
            for event_id in event_ids:
                self._clips.pop(event_id, None)
        if self._store is not None:
            for event_id in event_ids:
                self._store.forget_clip(event_id)

    def clip_reported(self, clip: ClipInfo) -> None:
        """A camera recorder's thread: a clip was written to (``complete`` once post_s is over)."""
        with self._lock:
            parts = self._clips.setdefault(clip.event_id, {})
            parts[int(clip.part or 0)] = clip
            clip = _whole(parts) or clip
            finished = self._awaiting.pop(clip.event_id, None) if clip.complete else None
            if clip.complete and clip.event_id not in self._with_clip:
                self._clips.pop(clip.event_id, None)  # nothing more comes for it
        if self._store is not None:
            self._store.save_clip(clip.event_id, clip.path, clip.bytes, clip.duration_s, clip.start, clip.end)
        if finished is None:
            return
        after = dataclasses.replace(finished, has_clip=True, clip_duration_s=clip.duration_s)
        try:
            self._publish_event(EventMessage(UPDATE, after, finished))
        except Exception:
            log.exception("recording: publishing the clip of event %s failed", clip.event_id)
        if self._store is not None:
            self._store.save_event(after)

    def _decorated(self, event: Event) -> Event:
        with self._lock:
            clip = _whole(self._clips.get(event.id))
            recording = event.id in self._with_clip or event.id in self._awaiting
        if clip is None and not recording:
            return event
        return dataclasses.replace(event, has_clip=True, clip_duration_s=clip.duration_s if clip else 0.0)


def _whole(parts: Optional[Dict[int, ClipInfo]]) -> Optional[ClipInfo]:
    """An event's clip as one: the first part's path, every part's bytes, from the first frame to
    the last; complete when its last part is."""
    if not parts:
        return None
    ordered = [parts[key] for key in sorted(parts)]
    return dataclasses.replace(ordered[0], start=min(p.start for p in ordered), end=max(p.end for p in ordered),
                               bytes=sum(p.bytes for p in ordered), complete=ordered[-1].complete)
