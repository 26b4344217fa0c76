"""Event.to_dict: the event object of docs/mqtt.md, the same dict, keys in the same order, as
dataclasses.asdict with the contract's roundings gives (the reference below)."""
import dataclasses

import pytest

from edge_app.events.model import Event, Occupancy

BASE = Event(id="1800000000.0-cam-3", camera_id="cam", label="person", track_id=3, score=0.8712,
             top_score=0.9123, box=(10.04, 20.06, 110.55, 220.449), frame_time=1_800_000_001.5,
             start_time=1_800_000_000.0)


def reference(event: Event) -> dict:
    data = dataclasses.asdict(event)
    data["box"] = [round(float(v), 1) for v in event.box]
    data["current_zones"], data["entered_zones"] = list(event.current_zones), list(event.entered_zones)
    data["clip_duration_s"] = round(float(event.clip_duration_s), 2)
    data["dwell_s"] = {zone: round(float(s), 2) for zone, s in event.dwell_s.items()}
    data["speed_kmh"] = None if event.speed_kmh is None else round(float(event.speed_kmh), 1)
    data["occupancy"] = None if event.occupancy is None else event.occupancy.to_dict()
    return data


EVENTS = {
    "new": BASE,
    "in zones, with a clip": dataclasses.replace(BASE, current_zones=("door",), entered_zones=("yard", "door"),
                                                  has_snapshot=True, has_clip=True, clip_duration_s=12.345,
                                                  dwell_s={"yard": 3.456, "door": 1.0}),
    "ended, with a speed": dataclasses.replace(BASE, end_time=1_800_000_009.25, speed_kmh=31.26, speed_alert=True,
                                                model="night"),
    "occupancy": dataclasses.replace(BASE, type="occupancy", occupancy=Occupancy({"person": 3, "dog": 1}, 5, 2)),
}


@pytest.mark.parametrize("event", EVENTS.values(), ids=EVENTS.keys())
def test_the_dict_is_asdicts_with_the_roundings_in_the_same_order(event):
    data = event.to_dict()
    assert data == reference(event) and list(data) == list(reference(event))
    assert Event.from_dict(data).id == event.id


def test_the_dict_shares_nothing_that_changing_it_would_change_in_the_event():
    event = EVENTS["in zones, with a clip"]
    data = event.to_dict()
    data["current_zones"].append("x")
    data["dwell_s"]["yard"] = 0.0
    data["box"][0] = -1.0
    assert event.to_dict() == reference(event)
