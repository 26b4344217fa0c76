"""Review items read from a real SQLite event database: the SQL grouping agrees with the pure one,
filters and pages, marks that survive reopening the database, and the upgrade of an older database."""
from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import List, Optional

import pytest

from edge_app.events.database import LATEST_VERSION, EventDatabase, read_connection
from edge_app.events.model import Event
from edge_app.review.database import item_ids, review_page, unreviewed_alerts
from edge_app.review.grouping import group_events
from edge_app.review.model import ALERT, DETECTION, AlertRule, severity_of
from edge_app.review.query import PAGE_SIZE, ReviewQuery
from tests.events.old_schema import database_at

GAP_S = 5.0
RULES = {"gate": AlertRule(frozenset({"person"}), frozenset({"drive"})), "yard": AlertRule(frozenset({"car"}))}


def rule_of(camera_id: str) -> AlertRule:
    return RULES.get(camera_id, AlertRule())


def event(event_id: str, camera: str, label: str, start: float, end: Optional[float], zones=()) -> Event:
    return Event(id=event_id, camera_id=camera, label=label, track_id=1, score=0.5, top_score=0.6,
                 box=(0.0, 0.0, 1.0, 1.0), frame_time=start if end is None else end, start_time=start, end_time=end,
                 entered_zones=tuple(zones))


def store(directory: Path, events: List[Event]) -> None:
    database = EventDatabase(directory)
    database.begin()
    for one in events:
        database.upsert(one)
    database.commit()
    database.close()


def mark(directory: Path, ids: List[str], reviewed: bool = True) -> int:
    database = EventDatabase(directory)
    database.begin()
    changed = database.mark_reviewed(ids, reviewed, 1.0)
    database.commit()
    database.close()
    return changed


def page(directory: Path, **filters) -> dict:
    conn = read_connection(directory)
    try:
        return review_page(conn, ReviewQuery(**filters), GAP_S, rule_of).to_dict()
    finally:
        conn.close()


#: gate: [a1 a2] (a2 overlaps a1) then [a3] 20 s later; yard: [b1 b2] (b2 within the gap) and [b3 open]
SCENE = [
    event("a1", "gate", "person", 100.0, 110.0, ["drive"]),
    event("a2", "gate", "car", 105.0, 112.0),
    event("a3", "gate", "car", 140.0, 141.0),
    event("b1", "yard", "car", 100.0, 101.0, ["lawn"]),
    event("b2", "yard", "dog", 104.0, 108.0),
    event("b3", "yard", "person", 200.0, None),
]


@pytest.fixture
def scene(tmp_path) -> Path:
    store(tmp_path, SCENE)
    return tmp_path


@pytest.mark.parametrize("filters, expected", [
    ({}, ["b3", "a3", "b1", "a1"]),  # newest first, then id descending
    ({"camera": "gate"}, ["a3", "a1"]),
    ({"label": "car"}, ["a3", "b1", "a1"]),
    ({"label": "dog"}, ["b1"]),
    ({"zone": "drive"}, ["a1"]),
    ({"zone": "lawn", "camera": "gate"}, []),
    ({"severity": "alert"}, ["b1", "a1"]),
    ({"severity": "detection"}, ["b3", "a3"]),
    ({"after": 120.0}, ["b3", "a3"]),
    ({"before": 120.0}, ["b1", "a1"]),
    ({"label": "x' OR 1=1 --"}, []),
])
def test_filters(scene, filters, expected):
    assert [item["id"] for item in page(scene, **filters)["items"]] == expected


def test_an_item_has_its_events_labels_zones_and_severity(scene):
    first = {item["id"]: item for item in page(scene)["items"]}
    assert first["a1"]["labels"] == ["person", "car"] and first["a1"]["zones"] == ["drive"]
    assert first["a1"]["severity"] == "alert" and first["a1"]["end_time"] == 112.0
    assert [e["id"] for e in first["a1"]["events"]] == ["a1", "a2"] and first["a1"]["event_count"] == 2
    assert first["b3"]["end_time"] is None and first["b3"]["duration_s"] is None


def test_marks_are_kept_when_the_database_is_opened_again(scene):
    assert mark(scene, ["a1", "b3", "a1"]) == 2
    assert [item["id"] for item in page(scene, reviewed=True)["items"]] == ["b3", "a1"]
    assert [item["id"] for item in page(scene, reviewed=False)["items"]] == ["a3", "b1"]
    store(scene, [event("a4", "gate", "car", 112.5, 113.0)])  # joins a1's item: the mark stays with it
    reviewed = {item["id"]: item for item in page(scene, reviewed=True)["items"]}
    assert reviewed["a1"]["event_count"] == 3
    assert mark(scene, ["a1"], reviewed=False) == 1
    assert [item["id"] for item in page(scene, reviewed=True)["items"]] == ["b3"]


def test_unreviewed_alerts_per_camera(scene):
    conn = read_connection(scene)
    assert unreviewed_alerts(conn, ["gate", "yard", "porch"], GAP_S, rule_of) == {"gate": 1, "yard": 1, "porch": 0}
    conn.close()
    mark(scene, ["a1"])
    conn = read_connection(scene)
    assert unreviewed_alerts(conn, ["gate", "yard"], GAP_S, rule_of) == {"gate": 0, "yard": 1}
    assert item_ids(conn, ReviewQuery(before=150.0, camera="gate"), GAP_S, rule_of) == ["a1", "a3"]
    conn.close()


def test_pages_of_fifty_with_the_total_on_each(tmp_path):
    store(tmp_path, [event(f"e{i:04d}", "gate", "car", i * 100.0, i * 100.0 + 1) for i in range(120)])
    pages = [page(tmp_path, page=n) for n in (1, 2, 3, 4)]
    assert [len(p["items"]) for p in pages] == [PAGE_SIZE, PAGE_SIZE, 20, 0]
    assert {p["total"] for p in pages} == {120} and pages[0]["pages"] == 3
    assert pages[0]["items"][0]["id"] == "e0119" and pages[2]["items"][-1]["id"] == "e0000"


@pytest.mark.parametrize("seed", range(8))
def test_the_sql_grouping_is_the_pure_grouping(tmp_path, seed):
    chance = random.Random(seed)
    events = []
    for camera in ("gate", "yard"):
        start = 0.0
        for n in range(150):
            start += chance.choice([0.0, 0.5, 3.0, 5.0, 6.0, 30.0])
            end = None if chance.random() < 0.03 else start + chance.choice([0.0, 1.0, 4.0, 60.0])
            zones = chance.sample(["drive", "lawn"], chance.randint(0, 2))
            events.append(event(f"{camera}-{n:03d}-{chance.randint(0, 9)}", camera,
                                chance.choice(["person", "car", "dog"]), start, end, zones))
    store(tmp_path, events)
    expected = []
    for camera in ("gate", "yard"):
        expected += group_events([e for e in events if e.camera_id == camera], GAP_S, rule_of(camera))
    expected.sort(key=lambda item: (item.start_time, item.id), reverse=True)
    got, number = [], 1
    while True:
        answer = page(tmp_path, page=number)
        got += answer["items"]
        if number >= answer["pages"]:
            break
        number += 1
    assert [(i["id"], i["severity"], i["event_count"], i["end_time"]) for i in got] == \
        [(i.id, i.severity, len(i.event_ids), i.end_time) for i in expected]


#: the schema before review marks (migration 4 of edge_app/events/database.py)
BEFORE_REVIEW_VERSION = 3


def test_a_database_from_before_review_marks_is_upgraded_without_loss(tmp_path):
    conn = database_at(tmp_path, BEFORE_REVIEW_VERSION)
    conn.execute("INSERT INTO events (id, camera_id, label, track_id, score, top_score, box, frame_time, start_time, "
                 "end_time, current_zones, entered_zones) VALUES ('old', 'gate', 'person', 1, 0.5, 0.6, '[1,2,3,4]', "
                 "2, 1, 2, '[]', '[\"drive\"]')")
    conn.execute("INSERT INTO event_zones (event_id, zone) VALUES ('old', 'drive')")
    conn.commit()
    conn.close()
    assert mark(tmp_path, ["old"]) == 1
    answer = page(tmp_path)
    assert [(i["id"], i["reviewed"], i["severity"]) for i in answer["items"]] == [("old", True, "alert")]
    reader = read_connection(tmp_path)
    assert reader.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == LATEST_VERSION
    reader.close()


def test_retention_takes_the_marks_of_the_items_it_deletes(scene):
    mark(scene, ["a1", "a3", "b3"])
    database = EventDatabase(scene)
    try:
        assert database.retain(cutoff=120.0, max_bytes=10**9) == 4  # a1 a2 b1 b2 ended before 120
    finally:
        database.close()
    assert [(i["id"], i["reviewed"]) for i in page(scene)["items"]] == [("b3", True), ("a3", True)]
    conn = read_connection(scene)
    assert sorted(row[0] for row in conn.execute("SELECT item_id FROM reviewed")) == ["a3", "b3"]
    conn.close()


@pytest.mark.parametrize("speed_alert, severity", [(True, ALERT), (False, DETECTION)])
def test_a_speed_alert_makes_its_item_an_alert_in_the_database_as_it_does_live(tmp_path, speed_alert, severity):
    """A car over its line pair's max_kmh on "gate", whose rule asks for people in "drive": an alert
    by the pure rule (what starts a notification), so in the review list and its counts too."""
    fast = replace(event("s1", "gate", "car", 100.0, 104.0), speed_kmh=72.0, speed_alert=speed_alert)
    assert severity_of([fast], rule_of("gate")) == severity
    store(tmp_path, [fast])
    assert [(i["id"], i["severity"]) for i in page(tmp_path)["items"]] == [("s1", severity)]
    assert [i["id"] for i in page(tmp_path, severity=ALERT)["items"]] == (["s1"] if speed_alert else [])
    conn = read_connection(tmp_path)
    try:
        assert unreviewed_alerts(conn, ["gate"], GAP_S, rule_of) == {"gate": 1 if speed_alert else 0}
    finally:
        conn.close()
