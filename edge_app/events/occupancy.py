"""Occupancy events: a zone holding more objects of its labels than its ``max_objects``.

An event of its own (``type: "occupancy"``), at most one open per zone: ``new`` in the first frame
with more objects inside than the limit, ``update`` each time the count inside reaches a new
peak, ``end`` in the first frame with the limit or fewer inside, or when the analysis ends.
Objects are counted as the zone counts them (its ``labels``; an object counts until its track
ends), so a detection missed for a frame neither ends nor restarts the event.

The event names its zone in ``current_zones`` and ``entered_zones``, so it is listed, grouped
into review items and made an alert by zone like the others; ``occupancy`` holds the objects per
label at the message, the peak and the limit. Of the objects inside it shows: ``label`` the most
numerous label when it began (the first by name on a tie), ``box`` the box around them all,
``score`` the lowest confidence among them (each was found at least that confidently), and no
one track (``track_id`` -1).

Pure: no clock, no I/O; times are capture times in Unix seconds.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from edge_app.events.lifecycle import Sighting
from edge_app.events.model import END, NEW, OCCUPANCY, UPDATE, Event, EventMessage, Occupancy
from edge_app.events.query import zone_event_id
from edge_app.events.zone_snapshots import mark_snapshot_taken

#: ``track_id`` of an occupancy event: it is about the zone, not one object
NO_TRACK = -1


def occupancy_event_id(camera_id: str, zone: str, start_s: float) -> str:
    """Unique across restarts like object event ids (one open per zone, zone names unique on the
    device); long names fold into a hash to stay a valid id."""
    return zone_event_id(f"{start_s:.6f}-{camera_id}-occupancy-{zone}", start_s, "occupancy")


class OccupancyWatch:
    """The occupancy events of one camera; ``limits``: ``{zone: max_objects}`` of the zones that set one."""

    def __init__(self, camera_id: str, limits: Mapping[str, int], model: str = "default") -> None:
        self.camera_id = camera_id
        self.model = model
        self.limits = {zone: int(limit) for zone, limit in limits.items()}
        self._open: Dict[str, Event] = {}  # zone -> its open occupancy event, as last sent

    def open_events(self) -> List[Event]:
        return list(self._open.values())

    def check(self, now_s: float, occupants: Mapping[str, Mapping[str, int]],
              inside: Callable[[str], Sequence[Sighting]]) -> List[EventMessage]:
        """The messages of the frame taken at ``now_s``: ``occupants`` ``{zone: {label: objects
        inside}}`` as the zones count them; ``inside(zone)`` the sightings of the objects in it
        (asked only when an event starts or peaks)."""
        messages = []
        for zone, limit in self.limits.items():
            objects = {label: int(n) for label, n in sorted(occupants.get(zone, {}).items()) if n > 0}
            count = sum(objects.values())
            before = self._open.get(zone)
            if before is None:
                if count > limit:
                    after = self._open[zone] = self._started(zone, limit, objects, inside(zone), now_s)
                    messages.append(EventMessage(NEW, after))
            elif count <= limit:
                messages.append(self._ended(zone, objects, now_s))
            elif count > _peak(before):
                after = self._open[zone] = _peaked(before, Occupancy(objects, count, limit), inside(zone), now_s)
                messages.append(EventMessage(UPDATE, after, before))
        return messages

    def end_all(self, now_s: float) -> List[EventMessage]:
        """The analysis ends (shutdown, detection switched off, camera removed): every open event
        ends at ``now_s``, with nothing inside any more."""
        return [self._ended(zone, {}, now_s) for zone in list(self._open)]

    def snapshot_taken(self, event_id: str) -> Optional[Event]:
        """The open event ``event_id`` has a snapshot now: the event as it stands, None when it is not open."""
        return mark_snapshot_taken(self._open, event_id)

    # ---------------------------------------------------------------- internals
    def _started(self, zone: str, limit: int, objects: Dict[str, int], seen: Sequence[Sighting], now_s: float) -> Event:
        label = min(objects, key=lambda name: (-objects[name], name))
        count = sum(objects.values())
        box, score, frame_s = _summary(seen, now_s)
        return Event(id=occupancy_event_id(self.camera_id, zone, now_s), camera_id=self.camera_id, label=label,
                     track_id=NO_TRACK, score=score, top_score=score, box=box, frame_time=frame_s, start_time=now_s,
                     current_zones=(zone,), entered_zones=(zone,), model=self.model, type=OCCUPANCY,
                     occupancy=Occupancy(objects, count, limit))

    def _ended(self, zone: str, objects: Dict[str, int], now_s: float) -> EventMessage:
        before = self._open.pop(zone)
        occupancy = dataclasses.replace(before.occupancy, objects=objects) if before.occupancy is not None else None
        after = dataclasses.replace(before, end_time=max(now_s, before.start_time), current_zones=(), occupancy=occupancy)
        return EventMessage(END, after, before)


def _peak(event: Event) -> int:
    return 0 if event.occupancy is None else event.occupancy.peak_objects


def _peaked(before: Event, occupancy: Occupancy, seen: Sequence[Sighting], now_s: float) -> Event:
    """``before`` at the new peak of ``occupancy``."""
    box, score, frame_s = _summary(seen, now_s)
    return dataclasses.replace(before, box=box, score=score, top_score=max(before.top_score, score),
                               frame_time=frame_s, occupancy=occupancy)


def _summary(seen: Sequence[Sighting], now_s: float) -> Tuple[Tuple[float, float, float, float], float, float]:
    """(box around all of ``seen``, their lowest score, their latest sighting); ``now_s`` without any."""
    if not seen:
        return (0.0, 0.0, 0.0, 0.0), 0.0, now_s
    box = (min(s.box[0] for s in seen), min(s.box[1] for s in seen), max(s.box[2] for s in seen),
           max(s.box[3] for s in seen))
    return box, min(s.score for s in seen), max(s.last_seen_s for s in seen)
