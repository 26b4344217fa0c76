"""Choosing and encoding the best snapshot of each event, at a bounded cost per frame.

A snapshot is the whole frame with the event's object boxed (what Frigate users know), as JPEG.
Encoding a 1080p JPEG costs milliseconds, so the analysis never encodes on every frame:

* only when the event has no snapshot yet, or its score beats the snapshot's by ``min_gain``;
* per event, at most once every ``min_interval_s`` after its first snapshot;
* per frame, at most ``max_per_frame`` encodes; events without a snapshot go first, then the
  largest gain. A candidate left out simply waits for a later frame.

A zone's events (loitering, occupancy) get one snapshot when they begin, outside that budget: the
frame with the boxes of the objects concerned. They begin once per visit or per crowding, so
they are rare beside the frames analysed.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

from edge_app.detect.annotate import draw_detections, encode_jpeg
from edge_app.detect.detections import Detections
from edge_app.events.model import Event, Snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SnapshotSettings:
    enabled: bool = True
    jpeg_quality: int = 85
    min_gain: float = 0.02          # a better snapshot needs at least this much more confidence
    min_interval_s: float = 1.0     # between two snapshots of one event
    max_per_frame: int = 1          # encodes per analysed frame, whatever the number of events


@dataclass
class _Best:
    score: float
    frame_time_s: float


class SnapshotKeeper:
    """Best snapshot per open event of one camera."""

    def __init__(self, settings: SnapshotSettings = SnapshotSettings()) -> None:
        self.settings = settings
        self._best: Dict[str, _Best] = {}

    def candidates(self, objects: Sequence[Tuple[int, str, float]], now_s: float) -> List[int]:
        """Of ``(detection index, event id, score)`` of the events in this frame, the detection
        indices worth encoding now, best first."""
        if not self.settings.enabled:
            return []
        ranked = []
        for index, event_id, score in objects:
            best = self._best.get(event_id)
            if best is None:
                ranked.append((0, -score, index))
            elif score >= best.score + self.settings.min_gain and now_s - best.frame_time_s >= self.settings.min_interval_s:
                ranked.append((1, best.score - score, index))
        ranked.sort()
        return [index for _, _, index in ranked[: self.settings.max_per_frame]]

    def take(self, image: np.ndarray, detections: Detections, index: int, event: Event) -> Snapshot:
        """Encode the frame with detection ``index`` (the event's object) boxed, and remember its score."""
        annotated = draw_detections(image, detections[[index]])
        jpeg = encode_jpeg(annotated, self.settings.jpeg_quality)
        self._best[event.id] = _Best(event.score, event.frame_time)
        return Snapshot(event.id, event.camera_id, event.label, event.score, event.frame_time, jpeg)

    def take_boxes(self, image: np.ndarray, detections: Detections, indices: Sequence[int], event: Event) -> Snapshot:
        """Encode the frame with detections ``indices`` (the objects of a zone's event) boxed; not
        remembered, as nothing replaces a zone event's snapshot."""
        annotated = draw_detections(image, detections[list(indices)])
        jpeg = encode_jpeg(annotated, self.settings.jpeg_quality)
        return Snapshot(event.id, event.camera_id, event.label, event.score, event.frame_time, jpeg)

    def forget(self, event_id: str) -> None:
        self._best.pop(event_id, None)

