"""Writes the disk did not take (full, unwritable), kept in memory and served to readers meanwhile.

The writer thread is the only one that changes them; readers (HTTP threads) take copies under
the lock. Everything is bounded: a full disk for a week must not become a full memory instead.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import List, Optional, Set, Tuple

from edge_app.events.model import ClipRecord, Event
from edge_app.events.query import EventQuery, LineCountsByCamera

MAX_EVENTS = 2000
MAX_SNAPSHOT_BYTES = 32 * 1024 * 1024
MAX_DELETED = 10000


@dataclass
class PendingBatch:
    """A copy of everything pending, to be written in one transaction."""

    events: List[Event] = field(default_factory=list)
    snapshots: List[Tuple[str, bytes, float]] = field(default_factory=list)
    line_counts: LineCountsByCamera = field(default_factory=dict)
    deleted: List[str] = field(default_factory=list)
    clips: List[Tuple[str, Optional[ClipRecord], float]] = field(default_factory=list)  # None: forget the clip

    def __bool__(self) -> bool:
        return bool(self.events or self.snapshots or self.line_counts or self.deleted or self.clips)


class PendingWrites:
    def __init__(self, max_events: int = MAX_EVENTS, max_snapshot_bytes: int = MAX_SNAPSHOT_BYTES):
        self._max_events = max_events
        self._max_snapshot_bytes = max_snapshot_bytes
        self._lock = threading.Lock()
        self._events: "OrderedDict[str, Event]" = OrderedDict()
        self._snapshots: "OrderedDict[str, Tuple[bytes, float]]" = OrderedDict()
        self._snapshot_bytes = 0
        self._line_counts: LineCountsByCamera = {}
        self._deleted: "OrderedDict[str, None]" = OrderedDict()
        # event id -> its clip (None: the clip was removed), with when it was reported
        self._clips: "OrderedDict[str, Tuple[Optional[ClipRecord], float]]" = OrderedDict()
        self.evicted = 0  # events forgotten because memory was full too

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def empty(self) -> bool:
        with self._lock:
            return not (self._events or self._snapshots or self._line_counts or self._deleted or self._clips)

    # -- the writer thread ------------------------------------------------------------------------
    def put_event(self, event: Event) -> None:
        with self._lock:
            self._deleted.pop(event.id, None)
            self._events[event.id] = event
            self._events.move_to_end(event.id)
            while len(self._events) > self._max_events:
                self._events.popitem(last=False)
                self.evicted += 1

    def put_snapshot(self, event_id: str, jpeg: bytes, saved_at: float) -> None:
        with self._lock:
            old = self._snapshots.pop(event_id, None)
            if old is not None:
                self._snapshot_bytes -= len(old[0])
            self._snapshots[event_id] = (jpeg, saved_at)
            self._snapshot_bytes += len(jpeg)
            while self._snapshot_bytes > self._max_snapshot_bytes and self._snapshots:
                _, (dropped, _) = self._snapshots.popitem(last=False)
                self._snapshot_bytes -= len(dropped)

    def put_clip(self, event_id: str, clip: Optional[ClipRecord], saved_at: float) -> None:
        with self._lock:
            self._clips[event_id] = (clip, saved_at)
            self._clips.move_to_end(event_id)
            while len(self._clips) > self._max_events:
                self._clips.popitem(last=False)

    def put_line_counts(self, counts: LineCountsByCamera) -> None:
        with self._lock:
            for camera, lines in counts.items():
                self._line_counts.setdefault(camera, {}).update({line: dict(c) for line, c in lines.items()})

    def delete(self, event_id: str) -> bool:
        """Forget ``event_id`` here and remember to delete it on disk; True if it was pending."""
        with self._lock:
            found = self._events.pop(event_id, None) is not None
            self._clips.pop(event_id, None)
            snapshot = self._snapshots.pop(event_id, None)
            if snapshot is not None:
                self._snapshot_bytes -= len(snapshot[0])
            self._deleted[event_id] = None
            while len(self._deleted) > MAX_DELETED:
                self._deleted.popitem(last=False)
            return found

    def end_open(self, end_time: float) -> None:
        with self._lock:
            for event_id, event in list(self._events.items()):
                if event.end_time is None:
                    self._events[event_id] = _ended(event, end_time)

    def drop_older_than(self, cutoff: float) -> None:
        with self._lock:
            for event_id, event in list(self._events.items()):
                if event.end_time is not None and event.end_time < cutoff:
                    del self._events[event_id]
                    self._clips.pop(event_id, None)
                    snapshot = self._snapshots.pop(event_id, None)
                    if snapshot is not None:
                        self._snapshot_bytes -= len(snapshot[0])

    def batch(self) -> PendingBatch:
        with self._lock:
            return PendingBatch(list(self._events.values()),
                                [(eid, jpeg, ts) for eid, (jpeg, ts) in self._snapshots.items()],
                                {cam: {line: dict(c) for line, c in lines.items()} for cam, lines in self._line_counts.items()},
                                list(self._deleted), [(eid, clip, ts) for eid, (clip, ts) in self._clips.items()])

    def clear(self) -> None:
        """Everything is on disk now (the writer thread wrote ``batch()`` and nothing came since)."""
        with self._lock:
            self._events.clear()
            self._snapshots.clear()
            self._snapshot_bytes = 0
            self._line_counts.clear()
            self._deleted.clear()
            self._clips.clear()

    # -- readers ------------------------------------------------------------------------------
    def deleted_ids(self) -> Set[str]:
        with self._lock:
            return set(self._deleted)

    def touched_ids(self) -> Set[str]:
        """The events whose listing memory changes: held, deleted or with a clip held."""
        with self._lock:
            return set(self._events) | set(self._deleted) | set(self._clips)

    def matching(self, query: EventQuery) -> List[Event]:
        with self._lock:
            return [self._with_snapshot_flag(e) for e in self._events.values() if query.matches(e)]

    def get(self, event_id: str) -> Optional[Event]:
        with self._lock:
            event = self._events.get(event_id)
            return None if event is None else self._with_snapshot_flag(event)

    def snapshot(self, event_id: str) -> Optional[bytes]:
        with self._lock:
            held = self._snapshots.get(event_id)
            return None if held is None else held[0]

    def has_snapshot(self, event_id: str) -> bool:
        with self._lock:
            return event_id in self._snapshots

    def clip(self, event_id: str) -> Tuple[bool, Optional[ClipRecord]]:
        """(whether a clip report is held, the clip or None when it was removed)."""
        with self._lock:
            held = self._clips.get(event_id)
            return (False, None) if held is None else (True, held[0])

    def with_clip(self, event: Event) -> Event:
        """``event`` with the clip held for it, when one is."""
        held, clip = self.clip(event.id)
        if not held:
            return event
        return replace(event, has_clip=clip is not None, clip_duration_s=0.0 if clip is None else clip.duration_s)

    def is_deleted(self, event_id: str) -> bool:
        with self._lock:
            return event_id in self._deleted

    def line_counts(self) -> LineCountsByCamera:
        with self._lock:
            return {cam: {line: dict(c) for line, c in lines.items()} for cam, lines in self._line_counts.items()}

    def _with_snapshot_flag(self, event: Event) -> Event:
        return replace(event, has_snapshot=event.id in self._snapshots)


def _ended(event: Event, end_time: float) -> Event:
    return replace(event, end_time=max(end_time, event.start_time))
