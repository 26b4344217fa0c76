"""From tracked objects to events: ``new``, rate-limited ``update`` and ``end`` (docs/mqtt.md, "The event object").

One :class:`EventBook` per camera keeps a record of every live track, as rows of arrays sorted
by track id: a frame's objects are observed in one call with array operations, not one call and
one record per object; only events (and tracks that changed zones) have Python objects. A track of an event label
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
from typing import AbstractSet, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from edge_app.events.model import END, NEW, UPDATE, Event, EventMessage

DEFAULT_UPDATE_INTERVAL_S = 1.0

#: the per-track columns of the book, each an array with one row per live track
_COLUMNS = ("ids", "seq", "labels", "eventful", "frames", "first_s", "last_s", "score", "top_score", "box",
            "dirty", "is_event", "published_at_s")


@dataclass
class _Extra:
    """What a track has beyond its row: its zones, and once it is an event, the event."""

    current_zones: List[str] = field(default_factory=list)
    entered_zones: List[str] = field(default_factory=list)
    # The event as it was created; the current one is built from it and the row only when
    # asked for, so a frame costs no new objects per event.
    base: Optional[Event] = None
    has_snapshot: bool = False
    published: Optional[Event] = None      # the event as subscribers last saw it


class EventBook:
    """Tracks and events of one camera. Per frame: :meth:`observe_frame` with the tracked
    objects, :meth:`zone_change` each zone change, :meth:`end_tracks` with the tracks the
    tracker removed, :meth:`promote`, then :meth:`flush`; :meth:`end_all` at shutdown.

    Rows are sorted by track id; ``seq`` keeps the order in which tracks were first observed,
    the order promotions, updates and ends come in."""

    def __init__(self, camera_id: str, labels: AbstractSet[str] = frozenset(), min_frames: int = 3,
                 update_interval_s: float = DEFAULT_UPDATE_INTERVAL_S, frames_before_track: int = 0,
                 model: str = "default") -> None:
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
        self._rows = _empty_rows()
        self._next_seq = 0
        self._extra: Dict[int, _Extra] = {}
        self._new: List[int] = []              # promoted this frame, ``new`` not yet sent
        self._in_view: Optional[Dict[str, int]] = {}
        self._waiting = 0  # tracks of event labels not events yet: promote has nothing to do without

    # ------------------------------------------------------------------ queries
    def makes_events(self, label: str) -> bool:
        return not self.labels or label in self.labels

    def event_of(self, track_id: int) -> Optional[Event]:
        """The event of a track as it stands now; None when the track is no event."""
        row = self._row(track_id)
        return None if row < 0 or not self._rows["is_event"][row] else self._current(row)

    def event_id_of(self, track_id: int) -> Optional[str]:
        extra = self._extra.get(int(track_id))
        return None if extra is None or extra.base is None else extra.base.id

    def events_in_frame(self, track_ids: np.ndarray) -> Tuple[np.ndarray, List[str]]:
        """Which of a frame's ``(N,)`` track ids are events: their indices, and the events' ids."""
        rows = self._find(np.asarray(track_ids, dtype=np.int64).reshape(-1))
        index = np.flatnonzero(rows >= 0)
        index = index[self._rows["is_event"][rows[index]]]
        return index, [self._extra[t].base.id for t in self._rows["ids"][rows[index]].tolist()]

    def open_events(self) -> List[Event]:
        return [self._current(row) for row in self._in_order(self._rows["is_event"])]

    def labels_in_view(self) -> Dict[str, int]:
        """Live tracks per label: an object counts until its track ends (labels in the order
        their first live track was seen). Counted again only after tracks came or went."""
        if self._in_view is None:
            counts: Dict[str, int] = {}
            for label in self._rows["labels"][np.argsort(self._rows["seq"])].tolist():
                counts[label] = counts.get(label, 0) + 1
            self._in_view = counts
        return dict(self._in_view)

    # ----------------------------------------------------------------- per frame
    def observe_frame(self, track_ids: np.ndarray, labels: Sequence[str], scores: np.ndarray, boxes: np.ndarray,
                      frame_time_s: float) -> None:
        """The objects of the frame taken at ``frame_time_s``: ``(N,)`` track ids (below 0:
        untracked, skipped), their labels, scores and ``(N, 4)`` boxes; one id at most once."""
        ids = np.asarray(track_ids, dtype=np.int64).reshape(-1)
        tracked = np.flatnonzero(ids >= 0)
        if len(tracked) == 0:
            return
        if len(tracked) < len(ids):
            ids = ids[tracked]
        rows = self._find(ids)
        if (rows < 0).any():
            rows = self._add(ids, np.asarray(labels, dtype=object).reshape(-1)[tracked], rows < 0, frame_time_s)
        r = self._rows
        score = np.asarray(scores, dtype=np.float64).reshape(-1)[tracked]
        r["frames"][rows] += 1
        r["last_s"][rows] = frame_time_s
        r["score"][rows] = score
        r["box"][rows] = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)[tracked]
        better = score > r["top_score"][rows]
        if better.any():
            better_rows = rows[better]
            r["top_score"][better_rows] = score[better]
            r["dirty"][better_rows] |= r["is_event"][better_rows]

    def observe(self, track_id: int, label: str, score: float, box: Sequence[float], frame_time_s: float) -> None:
        """One tracked object in the frame taken at ``frame_time_s`` (:meth:`observe_frame` of one)."""
        self.observe_frame(np.array([track_id]), [label], np.array([score]), np.array([box], dtype=np.float64),
                           frame_time_s)

    def zone_change(self, track_id: int, zone: str, entered: bool) -> None:
        row = self._row(track_id)
        if row < 0:
            return
        extra = self._extra.setdefault(int(track_id), _Extra())
        if entered and zone not in extra.current_zones:
            extra.current_zones.append(zone)
            if zone not in extra.entered_zones:
                extra.entered_zones.append(zone)
        elif not entered and zone in extra.current_zones:
            extra.current_zones.remove(zone)
        else:
            return
        self._rows["dirty"][row] |= self._rows["is_event"][row]

    def promote(self) -> List[Event]:
        """Tracks that have now been seen in ``min_frames`` frames become events (``new`` goes out with :meth:`flush`)."""
        r = self._rows
        promoted: List[Event] = []
        if not self._waiting:
            return promoted
        for row in self._in_order(~r["is_event"] & r["eventful"] & (r["frames"] >= self.min_frames)):
            track_id = int(r["ids"][row])
            first_s = float(r["first_s"][row])
            extra = self._extra.setdefault(track_id, _Extra())
            extra.base = Event(
                id=f"{first_s:.6f}-{self.camera_id}-{track_id}", camera_id=self.camera_id, label=r["labels"][row],
                track_id=track_id, score=float(r["score"][row]), top_score=float(r["top_score"][row]),
                box=tuple(r["box"][row].tolist()), frame_time=float(r["last_s"][row]), start_time=first_s, model=self.model,
            )
            r["is_event"][row] = True
            self._waiting -= 1
            self._new.append(track_id)
            promoted.append(self._current(row))
        return promoted

    def snapshot_taken(self, track_id: int) -> None:
        """The event of ``track_id`` has a (better) snapshot now."""
        row = self._row(track_id)
        if row < 0 or not self._rows["is_event"][row]:
            return
        self._extra[int(track_id)].has_snapshot = True
        self._rows["dirty"][row] = True

    def flush(self, now_s: float) -> List[EventMessage]:
        """``new`` for events promoted since the last flush, ``update`` for changed ones that may send again."""
        messages = []
        new_ids, self._new = self._new, []
        for track_id in new_ids:
            row = self._row(track_id)
            if row >= 0 and self._rows["is_event"][row]:
                messages.append(EventMessage(NEW, self._mark_published(row, now_s)))
        r = self._rows
        # NaN (never published) is never due
        due = r["dirty"] & (now_s - r["published_at_s"] >= self.update_interval_s) if r["dirty"].any() else None
        if due is not None and due.any():
            for row in self._in_order(due):
                before = self._extra[int(r["ids"][row])].published
                messages.append(EventMessage(UPDATE, self._mark_published(row, now_s), before))
        return messages

    def end_tracks(self, track_ids: Iterable[int]) -> List[EventMessage]:
        """The tracker dropped ``track_ids``: forget them; their events end when they were last
        seen, in the order of ``track_ids``."""
        gone = [int(t) for t in track_ids]
        if not gone:
            return []
        rows = self._find(np.asarray(gone, dtype=np.int64))
        messages = []
        for track_id, row in zip(gone, rows.tolist()):
            if track_id in self._new:
                self._new.remove(track_id)
            if row >= 0 and self._rows["is_event"][row]:
                messages.append(self._end_message(row, float(self._rows["last_s"][row])))
            self._extra.pop(track_id, None)
        found = rows[rows >= 0]
        if len(found):
            keep = np.ones(len(self._rows["ids"]), bool)
            keep[found] = False
            self._rows = {name: column[keep] for name, column in self._rows.items()}
            self._in_view = None
            self._waiting = int(np.count_nonzero(self._rows["eventful"] & ~self._rows["is_event"]))
        return messages

    def end(self, track_id: int) -> Optional[EventMessage]:
        """The tracker dropped ``track_id`` (:meth:`end_tracks` of one)."""
        messages = self.end_tracks([track_id])
        return messages[0] if messages else None

    def end_all(self, now_s: float) -> List[EventMessage]:
        """Shutdown: every open event ends now; every track is forgotten."""
        messages = [self._end_message(row, now_s) for row in self._in_order(self._rows["is_event"])]
        self._rows, self._extra, self._new, self._in_view, self._waiting = _empty_rows(), {}, [], {}, 0
        return messages

    # ---------------------------------------------------------------- internals
    def _find(self, ids: np.ndarray) -> np.ndarray:
        known = self._rows["ids"]
        if len(known) == 0:
            return np.full(ids.shape, -1, np.int64)
        rows = np.minimum(np.searchsorted(known, ids), len(known) - 1)
        return np.where(known[rows] == ids, rows, -1)

    def _row(self, track_id: int) -> int:
        return int(self._find(np.array([int(track_id)], np.int64))[0])

    def _add(self, ids: np.ndarray, labels: np.ndarray, new: np.ndarray, frame_time_s: float) -> np.ndarray:
        """Rows for the tracks of ``ids`` first seen now (``new``), in the order of the frame; rows of all ``ids``."""
        n = int(new.sum())
        label_list = labels[new].tolist()
        added = {
            "ids": ids[new], "seq": np.arange(self._next_seq, self._next_seq + n, dtype=np.int64),
            "labels": labels[new], "eventful": np.array([self.makes_events(label) for label in label_list], bool),
            "frames": np.full(n, self.frames_before_track, np.int64), "first_s": np.full(n, float(frame_time_s)),
            "last_s": np.full(n, float(frame_time_s)), "score": np.zeros(n), "top_score": np.zeros(n),
            "box": np.zeros((n, 4)), "dirty": np.zeros(n, bool), "is_event": np.zeros(n, bool),
            "published_at_s": np.full(n, np.nan),
        }
        self._next_seq += n
        self._waiting += int(np.count_nonzero(added["eventful"]))
        order = np.argsort(np.concatenate([self._rows["ids"], added["ids"]]), kind="stable")
        self._rows = {name: np.concatenate([self._rows[name], added[name]])[order] for name in _COLUMNS}
        self._in_view = None
        return self._find(ids)

    def _in_order(self, mask: np.ndarray) -> List[int]:
        """The rows of ``mask``, in the order their tracks were first seen."""
        rows = np.flatnonzero(mask)
        if len(rows) > 1:
            rows = rows[np.argsort(self._rows["seq"][rows])]
        return rows.tolist()

    def _current(self, row: int, end_time_s: Optional[float] = None) -> Event:
        r = self._rows
        extra = self._extra[int(r["ids"][row])]
        return dataclasses.replace(
            extra.base, score=float(r["score"][row]), top_score=float(r["top_score"][row]),
            box=tuple(r["box"][row].tolist()), frame_time=float(r["last_s"][row]),
            current_zones=tuple(extra.current_zones), entered_zones=tuple(extra.entered_zones),
            has_snapshot=extra.has_snapshot, end_time=end_time_s,
        )

    def _mark_published(self, row: int, now_s: float) -> Event:
        extra = self._extra[int(self._rows["ids"][row])]
        extra.published = self._current(row)
        self._rows["published_at_s"][row], self._rows["dirty"][row] = now_s, False
        return extra.published

    def _end_message(self, row: int, end_time_s: float) -> EventMessage:
        extra = self._extra[int(self._rows["ids"][row])]
        ended = self._current(row, max(end_time_s, extra.base.start_time))
        # An event that ends before its ``new`` went out still says ``end`` against what exists.
        return EventMessage(END, ended, extra.published or self._current(row))


def _empty_rows() -> Dict[str, np.ndarray]:
    rows = {name: np.zeros(0) for name in _COLUMNS}
    rows.update(ids=np.zeros(0, np.int64), seq=np.zeros(0, np.int64), labels=np.zeros(0, object),
                eventful=np.zeros(0, bool), frames=np.zeros(0, np.int64), box=np.zeros((0, 4)),
                dirty=np.zeros(0, bool), is_event=np.zeros(0, bool))
    return rows
