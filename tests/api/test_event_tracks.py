"""``GET /api/v1/events/<id>/track``: an event's boxes over time, for the page's clip overlay."""
from __future__ import annotations

import pytest

from edge_app.events.tracks import EventTrack, TrackPoint
from tests.api.test_events_routes import NOW, event

POINTS = (TrackPoint(0.0, (0.1, 0.2, 0.3, 0.6)), TrackPoint(0.2, (0.12, 0.2, 0.32, 0.6)))


@pytest.fixture
def tracked(api):
    """An ended event with a track, and one without."""
    with_track = api.service.add_event(event(1, start=NOW - 60, end_time=NOW - 50))
    without = api.service.add_event(event(2, start=NOW - 40, end_time=NOW - 30))
    api.service.event_store.save_track(EventTrack(with_track.id, with_track.start_time, POINTS))
    assert api.service.event_store.flush()
    return with_track, without


def test_an_events_track(api, tracked):
    response = api.get(f"/api/v1/events/{tracked[0].id}/track")
    assert response.status_code == 200, response.text
    assert response.json() == {"event_id": tracked[0].id, "start_time": tracked[0].start_time,
                               "points": [[0.0, 0.1, 0.2, 0.3, 0.6], [0.2, 0.12, 0.2, 0.32, 0.6]],
                               "clip_starts": []}  # no recording on this appliance


def test_an_event_without_a_track_has_no_points(api, tracked):
    # open, or ended before tracks were kept: the page draws nothing and says nothing is wrong
    response = api.get(f"/api/v1/events/{tracked[1].id}/track")
    assert response.status_code == 200
    assert response.json() == {"event_id": tracked[1].id, "start_time": tracked[1].start_time, "points": [], "clip_starts": []}


@pytest.mark.parametrize("path, status, fragment", [
    ("/api/v1/events/1800000000.000-front-99/track", 404, "unknown event"),
    ("/api/v1/events/bad%20id/track", 400, "event id"),
    ("/api/v1/events/..%2F..%2Fevents.db/track", 400, "event id"),
])
def test_no_track_is_a_clear_error(api, tracked, path, status, fragment):
    response = api.get(path.format(without=tracked[1].id))
    assert response.status_code == status and fragment in response.json()["error"]


def test_the_track_route_needs_the_token(secured_api):
    assert secured_api.get("/api/v1/events/1800000000.000-front-1/track", headers={"Authorization": ""}).status_code == 401
