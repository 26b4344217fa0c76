"""/api/v1/events and /api/v1/counts over real HTTP, in front of a real event store."""
from __future__ import annotations

from dataclasses import replace

import pytest

from edge_app.config.schema_rules import MAX_LABEL_CHARS
from edge_app.events.counts import LineTotals
from edge_app.events.model import Event
from edge_app.events.query import snapshot_file_name
from edge_app.events.zone_stats import ZoneStats
from edge_app.reporting.protocol import CountsReport
from tests.api.conftest import TOKEN

NOW = 1_800_000_000.0
SPEC_EVENT_KEYS = ["id", "camera_id", "label", "track_id", "score", "top_score", "box", "frame_time", "start_time",
                   "end_time", "current_zones", "entered_zones", "has_snapshot", "model", "has_clip", "clip_duration_s",
                   "type", "dwell_s", "speed_kmh", "speed_alert", "occupancy"]


def event(n: int, camera: str = "front", label: str = "person", start: float = NOW, **changes) -> Event:
    base = Event(id=f"{start:.3f}-{camera}-{n}", camera_id=camera, label=label, track_id=n, score=0.71,
                 top_score=0.87, box=(48.0, 399.0, 245.0, 903.0), frame_time=start + 2.0, start_time=start)
    return replace(base, **changes)


@pytest.fixture
def stored(api, bus_jpg):
    """Four events in the store; the first has a snapshot (the bus photo)."""
    events = [
        event(1, "front", "person", NOW - 300, entered_zones=("driveway",), current_zones=("driveway",)),
        event(2, "front", "bus", NOW - 200, end_time=NOW - 150),
        event(3, "back", "person", NOW - 100, entered_zones=("driveway", "porch")),
        event(4, "back", "traffic light", NOW - 50),
    ]
    api.service.add_event(events[0], bus_jpg.read_bytes())
    for ev in events[1:]:
        api.service.add_event(ev)
    return events


def ids(response):
    assert response.status_code == 200, response.text
    return [e["id"] for e in response.json()["events"]]


def test_no_events_yet(api):
    response = api.get("/api/v1/events")
    assert response.status_code == 200 and response.json() == {"events": [], "total": 0}
    assert response.headers["Cache-Control"] == "no-store"


def test_events_newest_first_in_the_spec_shape(api, stored):
    body = api.get("/api/v1/events").json()
    assert [e["id"] for e in body["events"]] == [e.id for e in reversed(stored)]
    first = body["events"][-1]
    assert list(first) == SPEC_EVENT_KEYS
    assert first == {**stored[0].to_dict(), "has_snapshot": True}
    assert body["events"][0]["has_snapshot"] is False and body["events"][0]["end_time"] is None


@pytest.mark.parametrize("query, expected", [
    ("camera=front", [2, 1]),
    ("label=person", [3, 1]),
    ("label=traffic%20light", [4]),
    ("zone=driveway", [3, 1]),
    ("zone=porch&camera=back", [3]),
    (f"after={NOW - 200}", [4, 3]),
    (f"before={NOW - 100}", [2, 1]),
    (f"after={NOW - 250}&before={NOW - 60}", [3, 2]),
    # ISO 8601 as the recording routes take it: NOW is 2027-01-15T08:00:00Z
    ("after=2027-01-15T07:56:40Z", [4, 3]), ("before=2027-01-15T07:58:20%2B00:00", [2, 1]),
    ("after=2027-01-15T07:55:50&before=2027-01-15T07:59:00Z", [3, 2]),  # no zone: UTC
    (f"after={NOW - 200 + 0.0018163}", [4, 3]),  # str(time.time()): 7 decimals
    ("limit=2", [4, 3]),
    ("camera=nowhere", []),
])
def test_filters(api, stored, query, expected):
    by_track = {e.track_id: e.id for e in stored}
    assert ids(api.get(f"/api/v1/events?{query}")) == [by_track[n] for n in expected]


@pytest.mark.parametrize("query, parameter", [
    ("limit=0", "limit"), ("limit=501", "limit"), ("limit=abc", "limit"), ("limit=1.5", "limit"), ("limit=-3", "limit"),
    ("limit=%EF%BC%91", "limit"),  # a full-width digit: int() would take it
    ("limit=" + "9" * 5000, "limit"),  # more digits than int() converts
    ("after=nan", "after"), ("after=inf", "after"), ("after=-1", "after"), ("before=1e400", "before"),
    ("before=yesterday", "before"), ("after=2027-13-40T00:00:00Z", "after"), ("after=1.8e9", "after"),
    ("camera=../etc", "camera"), ("zone=a%20b", "zone"),
    ("offset=-1", "offset"), ("offset=x", "offset"), ("offset=1.5", "offset"), ("offset=100001", "offset"),
    ("has_clip=yes", "has_clip"), ("has_clip=2", "has_clip"),
    ("label=%00", "label"), (f"after={NOW}&before={NOW - 1}", "after"),
])
def test_bad_query_parameters_are_400_with_a_sentence(api, query, parameter):
    response = api.get(f"/api/v1/events?{query}")
    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/json"
    assert parameter in response.json()["error"]


@pytest.mark.parametrize("query, expected, total", [
    ("limit=2", [4, 3], 4),
    ("limit=2&offset=2", [2, 1], 4),
    ("limit=2&offset=3", [1], 4),
    ("offset=4", [], 4),
    ("camera=back&limit=1&offset=1", [3], 2),
    ("has_clip=1", [3, 1], 2),
    ("has_clip=0&limit=1", [4], 2),
    ("has_clip=1&label=person&offset=1", [1], 2),
])
def test_pages_of_events_and_their_total(api, stored, query, expected, total):
    for ev in (stored[0], stored[2]):
        api.service.event_store.save_clip(ev.id, f"/clips/{ev.id}.mp4", 1000, 4.0)
    assert api.service.event_store.flush()
    by_track = {e.track_id: e.id for e in stored}
    response = api.get(f"/api/v1/events?{query}")
    assert ids(response) == [by_track[n] for n in expected]
    assert response.json()["total"] == total


def test_the_label_filter_takes_every_label_the_configuration_takes(api):
    """One rule for labels: a class name of up to 128 characters can be configured, so it can be asked for."""
    longest = "forklift carrying a pallet of " + "x" * 98
    assert len(longest) == MAX_LABEL_CHARS
    api.service.add_event(event(1, label=longest))
    assert ids(api.get("/api/v1/events", params={"label": longest})) == [event(1, label=longest).id]


@pytest.mark.parametrize("label, fragment", [
    ("x" * (MAX_LABEL_CHARS + 1), "at most 128 characters"),
    ("person/#", "may not contain"),
    ("per\u202eson", "U+202E"),
])
def test_the_label_filter_refuses_what_no_label_may_be(api, label, fragment):
    response = api.get("/api/v1/events", params={"label": label})
    assert response.status_code == 400, response.text
    assert "label" in response.json()["error"] and fragment in response.json()["error"], response.text


def test_one_event_and_unknown_ones(api, stored):
    response = api.get(f"/api/v1/events/{stored[1].id}")
    assert response.status_code == 200 and response.json() == stored[1].to_dict()
    missing = api.get("/api/v1/events/1800000000.000-front-99")
    assert missing.status_code == 404 and "unknown event" in missing.json()["error"]


@pytest.mark.parametrize("path", ["/api/v1/events/bad%20id", "/api/v1/events/.hidden", "/api/v1/events/%E2%98%83",
                                  "/api/v1/events/.hidden/snapshot.jpg", "/api/v1/events/" + "a" * 129])
def test_ids_that_are_not_event_ids_are_refused(api, path):
    for method in ("GET", "DELETE") if not path.endswith(".jpg") else ("GET",):
        response = api.request(method, path)
        assert response.status_code == 400, (method, path)
        assert "event id" in response.json()["error"]


@pytest.mark.parametrize("path", ["/api/v1/events/..%2F..%2F..%2Fetc%2Fpasswd/snapshot.jpg",
                                  "/api/v1/events/%2e%2e/snapshot.jpg", "/api/v1/events/..%5C..%5Cevents.db/snapshot.jpg"])
def test_no_path_traversal_through_the_snapshot_route(api, stored, path):
    response = api.get(path)
    assert response.status_code in (400, 404)
    assert response.headers["Content-Type"] == "application/json"


def test_snapshot_of_an_event(api, stored, bus_jpg):
    response = api.get(f"/api/v1/events/{stored[0].id}/snapshot.jpg")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "image/jpeg"
    assert response.content == bus_jpg.read_bytes()


def test_snapshot_404_when_the_event_has_none_or_is_unknown(api, stored):
    none = api.get(f"/api/v1/events/{stored[1].id}/snapshot.jpg")
    assert none.status_code == 404 and "has no snapshot" in none.json()["error"]
    unknown = api.get("/api/v1/events/1800000000.000-front-99/snapshot.jpg")
    assert unknown.status_code == 404 and "unknown event" in unknown.json()["error"]


def test_delete_removes_the_event_and_its_snapshot_file(api, stored):
    snapshots = api.service.event_store.directory / "snapshots"
    assert (snapshots / snapshot_file_name(stored[0].id)).exists()
    response = api.request("DELETE", f"/api/v1/events/{stored[0].id}")
    assert response.status_code == 204 and response.content == b""
    assert not (snapshots / snapshot_file_name(stored[0].id)).exists()
    assert api.get(f"/api/v1/events/{stored[0].id}").status_code == 404
    assert api.get(f"/api/v1/events/{stored[0].id}/snapshot.jpg").status_code == 404
    assert stored[0].id not in ids(api.get("/api/v1/events"))
    again = api.request("DELETE", f"/api/v1/events/{stored[0].id}")
    assert again.status_code == 404


def test_counts(api):
    assert api.get("/api/v1/counts").json() == {"cameras": {}, "zones": {}, "lines": {}, "zone_stats": {}}
    api.service.live_counts = CountsReport(cameras={"front": {"person": 2, "car": 0}}, zones={"driveway": {"person": 1}},
                                           zone_stats={"driveway": ZoneStats(1, 42.5, 3, 1, 0, True)})
    api.service.event_store.save_line_counts("front", {"gate": LineTotals(3, 1)})
    api.service.event_store.save_line_counts("back", {"door": LineTotals(0, 2)})
    assert api.service.event_store.flush()
    assert api.get("/api/v1/counts").json() == {
        "cameras": {"front": {"person": 2, "car": 0}},
        "zones": {"driveway": {"person": 1}},
        "lines": {"gate": {"in": 3, "out": 1}, "door": {"in": 0, "out": 2}},
        "zone_stats": {"driveway": {"occupancy": 1, "mean_dwell_s": 42.5, "visits_last_hour": 3, "loitering": 1,
                                    "max_objects": 0, "over_capacity": True}},
    }


def test_event_routes_need_the_token(secured_api, bus_jpg):
    ev = secured_api.service.add_event(event(1), bus_jpg.read_bytes())
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    for method, path in (("GET", "/api/v1/events"), ("GET", f"/api/v1/events/{ev.id}"), ("GET", "/api/v1/counts"),
                         ("GET", f"/api/v1/events/{ev.id}/snapshot.jpg"), ("DELETE", f"/api/v1/events/{ev.id}")):
        assert secured_api.request(method, path).status_code == 401, path
    # The snapshot is what an <img> shows: it alone takes the token from the URL.
    assert secured_api.get(f"/api/v1/events/{ev.id}/snapshot.jpg", params={"token": TOKEN}).status_code == 200
    assert secured_api.get("/api/v1/events", params={"token": TOKEN}).status_code == 401
    assert secured_api.get("/api/v1/events", headers=bearer).status_code == 200
    assert secured_api.request("DELETE", f"/api/v1/events/{ev.id}", headers=bearer).status_code == 204
