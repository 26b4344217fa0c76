"""From tracked objects to events: ``new``, rate-limited ``update`` and ``end`` (docs/mqtt.md, "The event object").

One :class:`EventBook` per camera keeps a record of every live track, and takes a frame's
tracked objects in one call (:meth:`EventBook.observe_frame`): one pass over plain Python
values made from the frame's arrays at once. A table of arrays was tried and measured slower
(python -m bench.cpu analysis-path, bench/README.md): a frame's handful of objects costs less
in a plain loop than the dozens of small array operations and the row bookkeeping a table needs
as tracks come and go. A track of an event label
becomes an event once it has been seen in ``min_frames`` frames; from then on its latest score,
box and frame time follow every frame silently, and an ``update`` message goes out when
something a subscriber acts on changed (a zone entered or left, a new top score, a better
snapshot), at most once per ``update_interval_s`` per event. Changes that arrive during that
interval are not lost: they go out with the next allowed update. A track that ended (the
tracker dropped it) ends its event, with the time it was last seen as ``end_time``.

Pure: no clock, no I/O; times are the frames' capture times in Unix seconds.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import AbstractSet, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage
from edge_app.events.tracks import EventTrack, TrackRecorder

DEFAULT_UPDATE_INTERVAL_S = 1.0


@dataclass(frozen=True)
class Sighting:
    """A live track as last seen, event or not (what a loitering event shows of its object)."""

    track_id: int
    label: str
    score: float
    top_score: float
    box: Tuple[float, float, float, float]
    last_seen_s: float


@dataclass
class _TrackRecord:
    label: str
    first_seen_s: float
    last_seen_s: float
    frames: int = 0
    top_score: float = 0.0
    score: float = 0.0
    box: Tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    current_zones: List[str] = field(default_factory=list)
    entered_zones: List[str] = field(default_factory=list)
    # The event as it was created; the current one is built from it and the fields above only
    # when asked for, so a frame costs no new objects per event.
    base: Optional[Event] = None
    has_snapshot: bool = False
    published: Optional[Event] = None      # the event as subscribers last saw it
    published_at_s: float = 0.0
    dirty: bool = False                    # something worth an update changed since
    path: TrackRecorder = field(default_factory=TrackRecorder)  # its boxes over time, thinned
    speed_kmh: Optional[float] = None      # the fastest measured on a line pair
    speed_alert: bool = False


class EventBook:
    """Tracks and events of one camera. Per frame: :meth:`observe_frame` with the tracked
    objects, :meth:`zone_change` each zone change, :meth:`end_tracks` with the tracks the
    tracker removed, :meth:`promote`, then :meth:`flush`; :meth:`end_all` at shutdown."""

    def __init__(self, camera_id: str, labels: AbstractSet[str] = frozenset(), min_frames: int = 3,
                 update_interval_s: float = DEFAULT_UPDATE_INTERVAL_S, frames_before_track: int = 0,
                 model: str = "default", dwell_of: Callable[[int], Mapping[str, float]] = lambda track_id: {}) -> None:
        if min_frames < 1:
            raise ValueError("min_frames must be >= 1")
        if update_interval_s < 0:
            raise ValueError("update_interval_s must be >= 0")
        self.camera_id = camera_id
        self.model = model  # the camera's model: its events say which model found them
        self.labels = frozenset(labels)
        self.min_frames = int(min_frames)
        self.update_interval_s = float(update_interval_s)
        # A tracker gives an id only after a few sightings; those frames had the object too.
        self.frames_before_track = max(0, int(frames_before_track))
        # Seconds a track has spent in each zone (``DwellClock.dwell_s``): read whenever an event
        # is built, so every message carries the dwell of that moment without a per-frame update.
        self._dwell_of = dwell_of
        self._tracks: Dict[int, _TrackRecord] = {}
        self._new: List[int] = []              # promoted this frame, ``new`` not yet sent
        self._waiting = 0                      # tracks of event labels not promoted yet
        self._in_view: Optional[Dict[str, int]] = {}  # labels_in_view, None after tracks came or went
        self._ended_tracks: List[EventTrack] = []  # of events ended since take_tracks()

    # ------------------------------------------------------------------ queries
    def makes_events(self, label: str) -> bool:
        return not self.labels or label in self.labels

    def event_of(self, track_id: int) -> Optional[Event]:
        """The event of a track as it stands now; None when the track is no event."""
        record = self._tracks.get(track_id)
        return None if record is None or record.base is None else self._current(record)

    def event_id_of(self, track_id: int) -> Optional[str]:
        record = self._tracks.get(track_id)
        return None if record is None or record.base is None else record.base.id

    def open_events(self) -> List[Event]:
        return [self._current(r) for r in self._tracks.values() if r.base is not None]

    def sighting(self, track_id: int) -> Optional[Sighting]:
        record = self._tracks.get(track_id)
        if record is None:
            return None
        return Sighting(track_id, record.label, record.score, record.top_score, record.box, record.last_seen_s)

    def labels_in_view(self) -> Dict[str, int]:
        """Live tracks per label: an object counts until its track ends. Counted again only
        after tracks came or went."""
        if self._in_view is None:
            counts: Dict[str, int] = {}
            for record in self._tracks.values():
                counts[record.label] = counts.get(record.label, 0) + 1
            self._in_view = counts
        return dict(self._in_view)

    def events_in_frame(self, track_ids: np.ndarray) -> Tuple[np.ndarray, List[str]]:
        """Which of a frame's ``(N,)`` track ids are events: their indices, and the events' ids."""
        index, event_ids = [], []
        tracks = self._tracks
        for i, track_id in enumerate(np.asarray(track_ids).reshape(-1).tolist()):
            record = tracks.get(track_id)
            if record is not None and record.base is not None:
                index.append(i)
                event_ids.append(record.base.id)
        return np.asarray(index, dtype=np.intp), event_ids

    # ----------------------------------------------------------------- per frame
    def observe_frame(self, track_ids: np.ndarray, labels: Sequence[str], scores: np.ndarray, boxes: np.ndarray,
                      frame_time_s: float, frame_size: Tuple[int, int] = (0, 0)) -> None:
        """The objects of the frame taken at ``frame_time_s``: ``(N,)`` track ids (below 0:
        untracked, skipped), their labels, scores and ``(N, 4)`` boxes; ``frame_size`` (width,
        height) in pixels keeps their boxes on the events' tracks (none without it)."""
        tracks = self._tracks
        width_px, height_px = frame_size
        label_list = labels.tolist() if isinstance(labels, np.ndarray) else list(labels)
        for track_id, label, score, box in zip(np.asarray(track_ids).reshape(-1).tolist(), label_list,
                                               np.asarray(scores).reshape(-1).tolist(),
                                               np.asarray(boxes).reshape(-1, 4).tolist()):
            if track_id < 0:
                continue
            record = tracks.get(track_id)
            if record is None:
                record = tracks[track_id] = _TrackRecord(label, frame_time_s, frame_time_s, self.frames_before_track)
                self._waiting += self.makes_events(label)
                self._in_view = None
            record.frames += 1
            record.last_seen_s = frame_time_s
            record.score = score
            record.box = tuple(box)  # type: ignore[assignment]
            record.path.add(frame_time_s - record.first_seen_s, record.box, width_px, height_px)
            if score > record.top_score:
                record.top_score = score
                record.dirty = record.dirty or record.base is not None

    def observe(self, track_id: int, label: str, score: float, box: Sequence[float], frame_time_s: float,
                frame_size: Tuple[int, int] = (0, 0)) -> None:
        """One tracked object in the frame taken at ``frame_time_s`` (:meth:`observe_frame` of one)."""
        self.observe_frame(np.array([int(track_id)]), [label], np.array([float(score)]),
                           np.array([[float(v) for v in box]]), frame_time_s, frame_size)

    def zone_change(self, track_id: int, zone: str, entered: bool) -> None:
        record = self._tracks.get(track_id)
        if record is None:
            return
        if entered and zone not in record.current_zones:
            record.current_zones.append(zone)
            if zone not in record.entered_zones:
                record.entered_zones.append(zone)
        elif not entered and zone in record.current_zones:
            record.current_zones.remove(zone)
        else:
            return
        record.dirty = record.dirty or record.base is not None

    def speed_measured(self, track_id: int, speed_kmh: float, over_limit: bool) -> None:
        """A line pair measured the speed of ``track_id``'s object; the event keeps the fastest."""
        record = self._tracks.get(track_id)
        if record is None:
            return
        if record.speed_kmh is None or speed_kmh > record.speed_kmh:
            record.speed_kmh = float(speed_kmh)
            record.dirty = record.dirty or record.base is not None
        if over_limit and not record.speed_alert:
            record.speed_alert = True
            record.dirty = record.dirty or record.base is not None

    def promote(self) -> List[Event]:
        """Tracks that have now been seen in ``min_frames`` frames become events (``new`` goes out with :meth:`flush`)."""
        promoted: List[Event] = []
        if not self._waiting:
            return promoted
        for track_id, record in self._tracks.items():
            if record.base is None and record.frames >= self.min_frames and self.makes_events(record.label):
                record.base = Event(
                    id=f"{record.first_seen_s:.6f}-{self.camera_id}-{track_id}", camera_id=self.camera_id,
                    label=record.label, track_id=track_id, score=record.score, top_score=record.top_score,
                    box=record.box, frame_time=record.last_seen_s, start_time=record.first_seen_s, model=self.model,
                )
                self._new.append(track_id)
                self._waiting -= 1
                promoted.append(self._current(record))
        return promoted

    def snapshot_taken(self, track_id: int) -> None:
        """The event of ``track_id`` has a (better) snapshot now."""
        record = self._tracks.get(track_id)
        if record is None or record.base is None:
            return
        record.has_snapshot = record.dirty = True

    def flush(self, now_s: float) -> List[EventMessage]:
        """``new`` for events promoted since the last flush, ``update`` for changed ones that may send again."""
        messages = []
        new_ids, self._new = self._new, []
        for track_id in new_ids:
            record = self._tracks.get(track_id)
            if record is not None and record.base is not None:
                messages.append(EventMessage(NEW, self._mark_published(record, now_s)))
        for record in self._tracks.values():
            if record.dirty and record.published is not None and now_s - record.published_at_s >= self.update_interval_s:
                before = record.published
                messages.append(EventMessage(UPDATE, self._mark_published(record, now_s), before))
        return messages

    def end_tracks(self, track_ids: Iterable[int]) -> List[EventMessage]:
        """The tracker dropped ``track_ids``: forget them; their events end when they were last
        seen, in the order of ``track_ids``."""
        messages = []
        for track_id in track_ids:
            ended = self.end(int(track_id))
            if ended is not None:
                messages.append(ended)
        return messages

    def end(self, track_id: int) -> Optional[EventMessage]:
        """The tracker dropped ``track_id``: forget it; its event (if any) ends when it was last seen."""
        record = self._tracks.pop(track_id, None)
        if track_id in self._new:
            self._new.remove(track_id)
        if record is None:
            return None
        self._in_view = None
        if record.base is None:
            self._waiting -= self.makes_events(record.label)
            return None
        return self._end_message(record, record.last_seen_s)

    def end_all(self, now_s: float) -> List[EventMessage]:
        """Shutdown: every open event ends now; every track is forgotten."""
        messages = [self._end_message(r, now_s) for r in self._tracks.values() if r.base is not None]
        self._tracks.clear()
        self._new, self._waiting, self._in_view = [], 0, {}
        return messages

    def take_tracks(self) -> List[EventTrack]:
        """The tracks of the events ended since the last call (each event's once)."""
        tracks, self._ended_tracks = self._ended_tracks, []
        return tracks

    # ---------------------------------------------------------------- internals
    def _current(self, record: _TrackRecord, end_time_s: Optional[float] = None) -> Event:
        return dataclasses.replace(
            record.base, score=record.score, top_score=record.top_score, box=record.box,
            frame_time=record.last_seen_s, current_zones=tuple(record.current_zones),
            entered_zones=tuple(record.entered_zones), has_snapshot=record.has_snapshot, end_time=end_time_s,
            dwell_s=dict(self._dwell_of(record.base.track_id)),
            speed_kmh=record.speed_kmh, speed_alert=record.speed_alert,
        )

    def _mark_published(self, record: _TrackRecord, now_s: float) -> Event:
        record.published, record.published_at_s, record.dirty = self._current(record), now_s, False
        return record.published

    def _end_message(self, record: _TrackRecord, end_time_s: float) -> EventMessage:
        if record.path.points:
            self._ended_tracks.append(record.path.track(record.base.id, record.base.start_time))
        ended = self._current(record, max(end_time_s, record.base.start_time))
        # An event that ends before its ``new`` went out still says ``end`` against what exists.
        return EventMessage(END, ended, record.published or self._current(record))
