"""Speeds in events: a line pair's reading on the crossing and the event, kept in the event
database (migrated in place from before speeds), and the review alert of a speed above the limit."""

import numpy as np
import pytest

from edge_app.detect.detections import Detections
from edge_app.events.camera_analysis import AnalysisSettings, CameraAnalysis
from edge_app.events.database import LATEST_VERSION, EventDatabase, query_events, read_connection
from edge_app.events.model import Event
from edge_app.events.query import EventQuery
from tests.events.old_schema import database_at
from edge_app.review.model import ALERT, DETECTION, AlertRule, severity_of
from edge_app.track import Line, SpeedPair

WIDTH, HEIGHT = 1000, 500
A, B = Line("a", (0.3, 0.0), (0.3, 1.0)), Line("b", (0.7, 0.0), (0.7, 1.0))


def car_at(x_px: float) -> Detections:
    return Detections(xyxy=np.array([[x_px - 100, 300, x_px + 100, 360]], np.float32), confidence=np.array([0.9], np.float32),
                      class_id=np.array([2], np.int32), labels=("person", "bicycle", "car"))


@pytest.mark.parametrize("fps, speed_px_s, distance_m, max_kmh, want_kmh, alert", [
    (10.0, 200.0, 20.0, None, 36.0, False),   # 400 px in 2 s: 20 m in 2 s
    (4.0, 200.0, 20.0, 30.0, 36.0, True),     # a slow camera: the same speed, above the limit
    (25.0, 100.0, 10.0, 30.0, 9.0, False),
])
def test_a_car_crossing_the_pair_gets_its_speed_on_the_crossing_and_the_event(fps, speed_px_s, distance_m, max_kmh,
                                                                               want_kmh, alert):
    analysis = CameraAnalysis("cam1", AnalysisSettings(event_labels=frozenset({"car"}), min_frames=2), lines=[A, B],
                              speed_pairs=[SpeedPair("a", "b", distance_m, max_kmh)])
    crossings, events = [], []
    for i in range(int(800 / speed_px_s * fps)):
        t_s = i / fps
        result = analysis.process(i + 1, 1_800_000_000.0 + t_s, None, car_at(120 + speed_px_s * t_s), (WIDTH, HEIGHT))
        crossings += result.crossings
        events += result.events
    final = analysis.end_all(1_800_000_100.0).events
    assert [c.line for c in crossings] == ["a", "b"] and crossings[0].speed is None
    speed = crossings[1].speed
    assert speed.speed_kmh == pytest.approx(want_kmh) and speed.from_line == "a" and speed.over_limit is alert
    ended = final[0].after
    assert ended.speed_kmh == pytest.approx(want_kmh) and ended.speed_alert is alert
    assert severity_of([ended], AlertRule(frozenset({"person"}))) == (ALERT if alert else DETECTION)


def _event(event_id: str, **changes) -> Event:
    return Event(id=event_id, camera_id="gate", label="car", track_id=1, score=0.8, top_score=0.9,
                 box=(1.0, 2.0, 3.0, 4.0), frame_time=10.0, start_time=9.0, **changes)


def test_a_database_from_before_speeds_is_migrated_and_keeps_them(tmp_path):
    conn = database_at(tmp_path, 4)
    conn.execute("INSERT INTO events (id, camera_id, label, track_id, score, top_score, box, frame_time, start_time, "
                 "end_time, current_zones, entered_zones) VALUES ('old', 'gate', 'car', 1, 0.5, 0.6, '[1,2,3,4]', 2, 1, "
                 "NULL, '[]', '[]')")
    conn.commit()
    conn.close()

    database = EventDatabase(tmp_path)
    database.begin()
    database.upsert(_event("fast", speed_kmh=61.25, speed_alert=True))
    database.upsert(_event("slow", speed_kmh=20.0))
    database.commit()
    database.close()

    reader = read_connection(tmp_path)
    events = {e.id: e for e in query_events(reader, EventQuery())}
    assert (events["old"].speed_kmh, events["old"].speed_alert) == (None, False)
    assert (events["fast"].speed_kmh, events["fast"].speed_alert) == (61.25, True)
    assert (events["slow"].speed_kmh, events["slow"].speed_alert) == (20.0, False)
    assert reader.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == LATEST_VERSION
    reader.close()


@pytest.mark.parametrize("data, speed_kmh, alert", [
    ({}, None, False),                                   # an event from before speeds
    ({"speed_kmh": None, "speed_alert": False}, None, False),
    ({"speed_kmh": 47.3, "speed_alert": True}, 47.3, True),
])
def test_event_dicts_round_trip_speeds(data, speed_kmh, alert):
    base = _event("e").to_dict()
    for key in ("speed_kmh", "speed_alert"):
        base.pop(key)
    event = Event.from_dict({**base, **data})
    assert (event.speed_kmh, event.speed_alert) == (speed_kmh, alert)
    assert Event.from_dict(event.to_dict()) == event


@pytest.mark.parametrize("fps, max_kmh, alert", [(10.0, None, False), (3.0, 20.0, True)])
def test_a_car_through_a_speed_zone_gets_its_speed_on_the_event(fps, max_kmh, alert):
    from edge_app.track import SpeedZone, Zone

    square = ((0.3, 0.0), (0.7, 0.0), (0.7, 1.0), (0.3, 1.0))   # 400 px wide: 20 m
    analysis = CameraAnalysis("cam1", AnalysisSettings(event_labels=frozenset({"car"}), min_frames=2),
                              zones=[Zone("road", square)], speed_zones=[SpeedZone("road", square, 20.0, max_kmh)])
    for i in range(int(800 / 200.0 * fps)):
        t_s = i / fps
        analysis.process(i + 1, 1_800_000_000.0 + t_s, None, car_at(120 + 200.0 * t_s), (WIDTH, HEIGHT))
    ended = analysis.end_all(1_800_000_100.0).events[0].after
    assert ended.speed_kmh == pytest.approx(36.0) and ended.speed_alert is alert
