"""The fleet's event list and the appliance's answer the same filters with the same events.

The same events go into an appliance's database (through ``EventDatabase``) and a fleet's (through
the ingest batch, as an ``R/events`` message); each query of the table must find the same ids in
both, and the same as ``EventQuery.matches`` on the events themselves.
"""
from __future__ import annotations

import json
from typing import List

import pytest

from edge_app.events.database import EventDatabase, query_events, read_connection
from edge_app.events.model import Event
from edge_app.events.query import EventQuery
from edge_app.fleet_service import messages as m
from edge_app.fleet_service.db import connect
from edge_app.fleet_service.ingest_batch import BatchResult, plan_batch, write_plan
from edge_app.fleet_service.migrations import migrate
from edge_app.fleet_service.queries import list_events

T0 = 1_700_000_000.0


def _event(event_id: str, camera: str, label: str, start_s: float, zones=()) -> Event:
    return Event(id=event_id, camera_id=camera, label=label, track_id=1, score=0.9, top_score=0.9,
                 box=(0.0, 0.0, 10.0, 10.0), frame_time=T0 + start_s, start_time=T0 + start_s,
                 current_zones=tuple(zones), entered_zones=tuple(zones))


EVENTS = [
    _event("e1", "front", "person", 1, ["driveway"]),
    _event("e2", "front", "car", 2, ["driveway", "dock_1"]),
    _event("e3", "gate", "person", 3, ["Driveway"]),
    _event("e4", "gate", "car", 4, []),
    _event("e5", "front", "person", 5, ["dockX1"]),
]


@pytest.mark.parametrize("query", [
    EventQuery(),
    EventQuery(camera="front"),
    EventQuery(label="person"),
    EventQuery(zone="driveway"),
    EventQuery(zone="Driveway"),  # zones are compared exactly: a LIKE on SQLite ignored the case
    EventQuery(zone="DRIVEWAY"),
    EventQuery(zone="dock_1"),  # "_" is no wildcard
    EventQuery(zone="dock"),  # no part of a name
    EventQuery(zone="front"),  # a camera's name is no zone
    EventQuery(camera="front", zone="driveway", label="car"),
    EventQuery(after=T0 + 2, before=T0 + 5),  # both bounds exclusive
    EventQuery(limit=2),
], ids=lambda q: ",".join(f"{k}={v}" for k, v in vars(q).items() if v is not None and k != "limit") or "all")
def test_the_appliance_and_the_fleet_find_the_same_events(tmp_path, fleet_db_url, query):
    expected = [e.id for e in sorted(EVENTS, key=lambda e: -e.start_time) if query.matches(e)][:query.bounded_limit]
    assert _appliance_ids(tmp_path, query) == expected
    assert _fleet_ids(fleet_db_url, query) == expected


def _appliance_ids(tmp_path, query: EventQuery) -> List[str]:
    database = EventDatabase(tmp_path / "events")
    try:
        database.begin()
        for event in EVENTS:
            database.upsert(event)
        database.commit()
    finally:
        database.close()
    conn = read_connection(tmp_path / "events")
    try:
        return [e.id for e in query_events(conn, query)]
    finally:
        conn.close()


def _fleet_ids(url: str, query: EventQuery) -> List[str]:
    conn = connect(url)
    try:
        migrate(conn)
        heard = [m.Heard(kind=m.EVENT, device_id="edge-a", key="", retained=False, received_s=T0 + 10,
                         payload=json.dumps({"type": "new", "before": None, "after": e.to_dict()}).encode())
                 for e in EVENTS]
        result = BatchResult()
        write_plan(conn, plan_batch(heard, result))
        assert result.rejected == 0, result.reasons
        return [body["id"] for body in list_events(conn, query)]
    finally:
        conn.close()
