"""The snapshot of a zone's event (loitering, occupancy), taken in the frame in which it begins.

The frame with the objects concerned boxed: the loitering object, or every object inside the
crowded zone that the frame shows. An event whose objects the frame does not show (a track
coasting unseen, a tick without a frame) has none. Nothing replaces it later, so the object
events' budget and choice of the best picture (``edge_app.events.snapshots``) do not apply:
such events begin once per visit or per crowding, rarely beside the frames analysed.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Dict, List, MutableMapping, Optional, Protocol, Sequence, TypeVar

import numpy as np

from edge_app.capture.gpu_image import FrameImage, bgr_image
from edge_app.detect.detections import Detections
from edge_app.events.model import NEW, Event, EventMessage, Snapshot
from edge_app.events.snapshots import SnapshotKeeper
from edge_app.track.dwell import DwellClock

K = TypeVar("K")


def mark_snapshot_taken(open_events: MutableMapping[K, Event], event_id: str) -> Optional[Event]:
    """In a watch's open events, ``event_id`` has a snapshot now: the event as it stands, None when it is not open."""
    for key, event in open_events.items():
        if event.id == event_id:
            open_events[key] = dataclasses.replace(event, has_snapshot=True)
            return open_events[key]
    return None


class ZoneEventWatch(Protocol):
    def snapshot_taken(self, event_id: str) -> Optional[Event]: ...


class ZoneEventSnapshots:
    """One frame's snapshots of the zone events that begin in it, and the seconds they took."""

    def __init__(self, keeper: SnapshotKeeper, dwell: DwellClock, image: Optional[FrameImage], tracked: Detections,
                 track_ids: np.ndarray) -> None:
        self._keeper, self._dwell = keeper, dwell
        self._image, self._tracked, self._track_ids = image, tracked, track_ids
        self._bgr: Optional[np.ndarray] = None
        self._index: Optional[Dict[int, int]] = None  # track -> detection, made at the first snapshot
        self.taken: List[Snapshot] = []
        self.seconds = 0.0

    def mark(self, messages: List[EventMessage], watch: ZoneEventWatch) -> List[EventMessage]:
        """``messages`` of ``watch``, each ``new`` with its snapshot taken (``has_snapshot``) where the frame allows."""
        if self._image is None or not self._keeper.settings.enabled:
            return messages
        out = []
        for message in messages:
            if message.type == NEW:
                snapshot = self._take(message.after)
                marked = None if snapshot is None else watch.snapshot_taken(message.after.id)
                if marked is not None:
                    self.taken.append(snapshot)
                    message = EventMessage(NEW, marked)
            out.append(message)
        return out

    def _take(self, event: Event) -> Optional[Snapshot]:
        started_s = time.perf_counter()
        if self._index is None:
            self._index = {int(track_id): i for i, track_id in enumerate(self._track_ids.tolist()) if track_id >= 0}
        indices = [self._index[t] for t in self._tracks_of(event) if t in self._index]
        if not indices or self._image is None:
            return None
        if self._bgr is None:
            self._bgr = bgr_image(self._image)
        snapshot = self._keeper.take_boxes(self._bgr, self._tracked, indices, event)
        self.seconds += time.perf_counter() - started_s
        return snapshot

    def _tracks_of(self, event: Event) -> Sequence[int]:
        if event.occupancy is None:  # loitering: its one object
            return [event.track_id]
        return [visit.track_id for visit in self._dwell.open_visits() if visit.zone in event.current_zones]
