"""/api/v1/review and /api/v1/review/reviewed over real HTTP, in front of a real event store."""
from __future__ import annotations

from datetime import datetime

import pytest

from edge_app.events.model import Event
from edge_app.review.query import MAX_PAGE, PAGE_SIZE
from tests.api.conftest import TOKEN

#: local noon of 2027-01-15, so the items below fall on that local date whatever the time zone
NOON = datetime(2027, 1, 15, 12, 0, 0).timestamp()


def event(event_id: str, camera: str, label: str, start: float, end, zones=()) -> Event:
    return Event(id=event_id, camera_id=camera, label=label, track_id=1, score=0.7, top_score=0.8,
                 box=(1.0, 2.0, 3.0, 4.0), frame_time=start + 1, start_time=start, end_time=end, entered_zones=zones)


#: front: [f1 f2] (overlapping), [f3] 100 s later; back: [b1]; alerts are people (review.alerts.labels)
EVENTS = [
    event("f1", "front", "car", NOON, NOON + 10),
    event("f2", "front", "person", NOON + 5, NOON + 12, ("driveway",)),
    event("f3", "front", "car", NOON + 112, NOON + 113),
    event("b1", "back", "person", NOON + 50, None),
]


@pytest.fixture
def review_api(make_api):
    api = make_api({"review": {"gap_s": 30, "alerts": {"labels": ["person"]}}})
    for one in EVENTS:
        api.service.add_event(one)
    return api


def ids(response):
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


@pytest.mark.parametrize("query, expected", [
    ("", ["f3", "b1", "f1"]),
    ("?camera=front", ["f3", "f1"]),
    ("?label=person", ["b1", "f1"]),
    ("?zone=driveway", ["f1"]),
    ("?severity=alert", ["b1", "f1"]),
    ("?severity=detection", ["f3"]),
    ("?reviewed=0", ["f3", "b1", "f1"]),
    ("?reviewed=1", []),
    ("?day=2027-01-15", ["f3", "b1", "f1"]),
    ("?day=2027-01-16", []),
    ("?camera=&label=&page=", ["f3", "b1", "f1"]),  # empty is no filter, as a form sends it
])
def test_filters(review_api, query, expected):
    assert ids(review_api.get("/api/v1/review" + query)) == expected


def test_an_item_in_full(review_api):
    body = review_api.get("/api/v1/review?camera=front&severity=alert").json()
    assert body["total"] == 1 and body["page"] == 1 and body["pages"] == 1 and body["page_size"] == PAGE_SIZE
    [item] = body["items"]
    assert item["labels"] == ["car", "person"] and item["zones"] == ["driveway"] and item["reviewed"] is False
    assert item["start_time"] == NOON and item["end_time"] == NOON + 12 and item["duration_s"] == 12
    assert [e["id"] for e in item["events"]] == ["f1", "f2"] and item["event_count"] == 2


def test_marking_by_id_and_all_up_to_a_time(review_api):
    mark = review_api.request("POST", "/api/v1/review/reviewed", json={"ids": ["f1", "nope"]})
    assert mark.status_code == 200 and mark.json() == {"changed": 2}  # an unknown id is kept: it may be an item later
    assert ids(review_api.get("/api/v1/review?reviewed=1")) == ["f1"]
    mark = review_api.request("POST", "/api/v1/review/reviewed", json={"before": NOON + 112, "camera": "back"})
    assert mark.json() == {"changed": 1}
    assert ids(review_api.get("/api/v1/review?reviewed=0")) == ["f3"]
    mark = review_api.request("POST", "/api/v1/review/reviewed", json={"before": NOON + 112})  # at its start: included
    assert mark.json() == {"changed": 1} and ids(review_api.get("/api/v1/review?reviewed=0")) == []
    unmark = review_api.request("POST", "/api/v1/review/reviewed", json={"ids": ["f3"], "reviewed": False})
    assert unmark.json() == {"changed": 1} and ids(review_api.get("/api/v1/review?reviewed=0")) == ["f3"]


@pytest.mark.parametrize("query, says", [
    (f"?page={MAX_PAGE + 1}", "page must be an integer"),
    ("?page=99999999999999999999999", "page must be an integer"),
    ("?page=-1", "page must be an integer"),
    ("?page=0", "page must be an integer"),
    ("?severity=urgent", "severity must be alert or detection"),
    ("?reviewed=yes", "reviewed must be 0 or 1"),
    ("?day=2027-02-30", "day must be a date"),
    ("?day=15.01.2027", "day must be a date"),
    ("?day=0001-01-01", "day must be a date"),
    ("?camera=front'%20OR%201=1--", "camera must match"),
    ("?zone=%3Bdrop%20table%20events", "zone must match"),
    ("?label=a/b", "label:"),
])
def test_bad_queries_get_a_clear_400(review_api, query, says):
    response = review_api.get("/api/v1/review" + query)
    assert response.status_code == 400 and says in response.json()["error"], response.text


@pytest.mark.parametrize("body, says", [
    ({}, 'either "ids"'),
    ({"ids": ["f1"], "before": 1}, 'either "ids"'),
    ({"ids": []}, "ids must be a list of 1 to"),
    ({"ids": "f1"}, "ids must be a list"),
    ({"ids": ["f1'; DROP TABLE reviewed; --"]}, "a review item id must match"),
    ({"ids": [7]}, "a review item id must match"),
    ({"ids": ["x"] * 1001}, "ids must be a list of 1 to 1000"),
    ({"ids": ["f1"], "camera": "front"}, "filters go with before"),
    ({"before": "yesterday"}, "before must be"),
    ({"before": True}, "before must be"),
    ({"before": -5}, "before must be"),
    ({"before": 1e300}, "before must be"),
    ({"before": 1, "severity": "urgent"}, "severity must be"),
    ({"before": 1, "camera": 5}, "camera must be a string"),
    ({"before": 1, "reviewed": "yes"}, "reviewed must be true or false"),
    ({"before": 1, "sql": "1=1"}, "unknown keys ['sql']"),
    ([], "must be a JSON object"),
])
def test_bad_marks_get_a_clear_400_and_change_nothing(review_api, body, says):
    response = review_api.request("POST", "/api/v1/review/reviewed", json=body)
    assert response.status_code == 400 and says in response.json()["error"], response.text
    assert ids(review_api.get("/api/v1/review?reviewed=1")) == []


def test_not_json_is_a_415(review_api):
    response = review_api.request("POST", "/api/v1/review/reviewed", data="ids=f1")
    assert response.status_code == 415


def test_the_routes_need_the_token(make_api):
    api = make_api({"api": {"token": TOKEN}})
    assert api.get("/api/v1/review").status_code == 401
    assert api.request("POST", "/api/v1/review/reviewed", json={"ids": ["f1"]}).status_code == 401
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert api.get("/api/v1/review", headers=headers).json()["total"] == 0
    assert api.request("POST", "/api/v1/review/reviewed", json={"ids": ["f1"]}, headers=headers).json() == {"changed": 1}


def test_status_reports_the_notification_targets(make_api):
    api = make_api()
    assert api.get("/api/v1/status").json()["notifications"] == {"targets": []}
