"""The boxes of an event's object over time, kept with the event so that a page can draw them over
its clip (docs/rest-api.md, ``GET /api/v1/events/<id>/track``); never burned into the video.

Compact and bounded: a box is kept at most every ``step_s`` (0.2 s at first), as fractions of
the frame rounded to 1/10000; when an event has ``MAX_TRACK_POINTS`` of them, every other one is
dropped and ``step_s`` doubles, so a long event keeps an evenly thinned path of at most that many
boxes (at most about 7 kB of JSON). The track is written once, when its event ends.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

MAX_TRACK_POINTS = 200
FIRST_STEP_S = 0.2
BOX_DIGITS = 4
TIME_DIGITS = 2
#: the events database's table (migration 5 in edge_app/events/database.py)
CREATE_TABLE = "CREATE TABLE tracks (event_id TEXT PRIMARY KEY, start_time REAL NOT NULL, points TEXT NOT NULL)"


@dataclass(frozen=True)
class TrackPoint:
    """Where the object was ``t_s`` seconds after its event started: x1, y1, x2, y2 as fractions of the frame."""

    t_s: float
    box: Tuple[float, float, float, float]

    def to_list(self) -> List[float]:
        return [self.t_s, *self.box]


@dataclass(frozen=True)
class EventTrack:
    """The kept boxes of one event, oldest first."""

    event_id: str
    start_time: float  # the event's, Unix seconds: a point is at start_time + t_s
    points: Tuple[TrackPoint, ...]

    def to_dict(self) -> Dict[str, Any]:
        return {"event_id": self.event_id, "start_time": self.start_time,
                "points": [point.to_list() for point in self.points]}


@dataclass
class TrackRecorder:
    """The path of one live track, thinned as it grows (see the module's docstring)."""

    step_s: float = FIRST_STEP_S
    points: List[TrackPoint] = field(default_factory=list)

    def add(self, t_s: float, box_px: Sequence[float], width_px: int, height_px: int) -> None:
        # (a millisecond's slack: frame times are floats, a box every 0.2 s must not skip one)
        if width_px <= 1 or height_px <= 1 or (self.points and t_s - self.points[-1].t_s < self.step_s - 1e-3):
            return
        x1, y1, x2, y2 = (float(v) for v in box_px)
        box = tuple(round(min(1.0, max(0.0, v / size)), BOX_DIGITS)
                    for v, size in ((x1, width_px), (y1, height_px), (x2, width_px), (y2, height_px)))
        self.points.append(TrackPoint(round(max(0.0, t_s), TIME_DIGITS), box))  # type: ignore[arg-type]
        if len(self.points) >= MAX_TRACK_POINTS:
            self.points = self.points[::2]
            self.step_s *= 2

    def track(self, event_id: str, start_time: float) -> EventTrack:
        return EventTrack(event_id, float(start_time), tuple(self.points))


def put_track(conn: sqlite3.Connection, track: EventTrack) -> None:
    conn.execute("INSERT OR REPLACE INTO tracks (event_id, start_time, points) VALUES (?, ?, ?)",
                 (track.event_id, track.start_time,
                  json.dumps([p.to_list() for p in track.points], separators=(",", ":"))))


def read_track(conn: sqlite3.Connection, event_id: str) -> Optional[EventTrack]:
    row = conn.execute("SELECT start_time, points FROM tracks WHERE event_id = ?", (event_id,)).fetchone()
    if row is None:
        return None
    points = tuple(TrackPoint(float(p[0]), (float(p[1]), float(p[2]), float(p[3]), float(p[4]))) for p in json.loads(row[1]))
    return EventTrack(event_id, float(row[0]), points)
