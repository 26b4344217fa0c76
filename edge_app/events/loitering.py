"""Loitering events: an object that stays in a zone longer than the zone's ``loitering_s``.

An event of its own (``type: "loitering"``), beside the object's event: ``new`` once the visit's
dwell passes the limit, ``end`` when the object leaves the zone or its track ends, with the
visit's whole dwell; one per visit (an object that leaves and comes back loiters anew). It is
raised for every label the zone counts (``labels``, which a loitering zone must name), whether
or not that label makes object events (``events.labels``).

Pure: no clock, no I/O; times are capture times in Unix seconds.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from edge_app.events.lifecycle import Sighting
from edge_app.events.model import END, LOITERING, NEW, Event, EventMessage
from edge_app.events.query import zone_event_id
from edge_app.events.zone_snapshots import mark_snapshot_taken
from edge_app.track.dwell import DwellClock, ZoneVisit


def loitering_event_id(camera_id: str, track_id: int, zone: str, entered_s: float) -> str:
    """Unique across restarts like object event ids; long names fold into a hash to stay a valid id."""
    return zone_event_id(f"{entered_s:.6f}-{camera_id}-{track_id}-loitering-{zone}", entered_s, f"{track_id}-loitering")


class LoiteringWatch:
    """The loitering events of one camera; ``limits_s``: ``{zone: loitering_s}`` of the zones that set one."""

    def __init__(self, camera_id: str, limits_s: Mapping[str, float], model: str = "default") -> None:
        self.camera_id = camera_id
        self.model = model
        self.limits_s = dict(limits_s)
        self._open: Dict[Tuple[str, int], Event] = {}  # (zone, track) -> its loitering event

    def loitering(self) -> Dict[str, int]:
        """Objects loitering now per zone (every zone with a limit, 0 included)."""
        counts = {zone: 0 for zone in self.limits_s}
        for zone, _ in self._open:
            counts[zone] += 1
        return counts

    def check(self, clock: DwellClock, sighting: Callable[[int], Optional[Sighting]]) -> List[EventMessage]:
        """``new`` for each open visit of ``clock`` that has now stayed past its zone's limit."""
        messages = []
        for visit in clock.open_longer_than(self.limits_s, self._open):
            seen = sighting(visit.track_id)
            if seen is None:
                continue
            event = Event(
                id=loitering_event_id(self.camera_id, visit.track_id, visit.zone, visit.entered_s),
                camera_id=self.camera_id, label=visit.label, track_id=visit.track_id, score=seen.score,
                top_score=seen.top_score, box=seen.box, frame_time=seen.last_seen_s, start_time=visit.entered_s,
                current_zones=(visit.zone,), entered_zones=(visit.zone,), model=self.model, type=LOITERING,
                dwell_s={visit.zone: visit.dwell_s},
            )
            self._open[(visit.zone, visit.track_id)] = event
            messages.append(EventMessage(NEW, event))
        return messages

    def snapshot_taken(self, event_id: str) -> Optional[Event]:
        """The open event ``event_id`` has a snapshot now: the event as it stands, None when it is not open."""
        return mark_snapshot_taken(self._open, event_id)

    def close(self, visit: ZoneVisit, sighting: Callable[[int], Optional[Sighting]]) -> Optional[EventMessage]:
        """The visit closed: its loitering event (if any) ends with the visit's dwell."""
        before = self._open.pop((visit.zone, visit.track_id), None)
        if before is None:
            return None
        seen = sighting(visit.track_id)
        end_s = visit.left_s if visit.left_s is not None else visit.entered_s + visit.dwell_s
        after = dataclasses.replace(before, end_time=max(end_s, before.start_time), current_zones=(),
                                    dwell_s={visit.zone: visit.dwell_s})
        if seen is not None:
            after = dataclasses.replace(after, score=seen.score, top_score=seen.top_score, box=seen.box,
                                        frame_time=seen.last_seen_s)
        return EventMessage(END, after, before)
