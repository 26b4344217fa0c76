"""The query models are what checks the query parameters: a bad value of each parameter of each
route is a 400 whose sentence names it, and it is the sentence the route's own query model gives."""
from __future__ import annotations

from typing import Dict

import pytest
from pydantic import ValidationError

from edge_app.api.openapi_spec import appliance_routes
from edge_app.api.request_models import EventFilters, ExportQuery, ReviewListQuery, ReviewMark, SnapshotQuery
from edge_app.api.routing import Route
from edge_app.http_server.query_params import parse_query, problem_sentence
from edge_app.http_server.errors import ApiError

EXPORT = {"camera": "front", "from": "1733356800", "to": "1733357000"}

#: method, rule, path, the valid parameters a bad one joins, the parameter, a bad value, how its sentence starts
BAD_VALUES = [
    ("GET", "/api/v1/events", "/api/v1/events", {}, "camera", "../etc", "camera must match"),
    ("GET", "/api/v1/events", "/api/v1/events", {}, "label", "a/b", "label: "),
    ("GET", "/api/v1/events", "/api/v1/events", {}, "zone", "a b", "zone must match"),
    ("GET", "/api/v1/events", "/api/v1/events", {}, "after", "yesterday", "after must be Unix seconds"),
    ("GET", "/api/v1/events", "/api/v1/events", {}, "before", "1e400", "before must be Unix seconds"),
    ("GET", "/api/v1/events", "/api/v1/events", {}, "limit", "+5", "limit must be an integer from 1 to"),
    ("GET", "/api/v1/review", "/api/v1/review", {}, "camera", "x'--", "camera must match"),
    ("GET", "/api/v1/review", "/api/v1/review", {}, "label", "a/b", "label: "),
    ("GET", "/api/v1/review", "/api/v1/review", {}, "zone", ";drop", "zone must match"),
    ("GET", "/api/v1/review", "/api/v1/review", {}, "severity", "urgent", "severity must be alert or detection"),
    ("GET", "/api/v1/review", "/api/v1/review", {}, "day", "2027-02-30", "day must be a date"),
    ("GET", "/api/v1/review", "/api/v1/review", {}, "reviewed", "yes", "reviewed must be 0 or 1"),
    ("GET", "/api/v1/review", "/api/v1/review", {}, "page", "0", "page must be an integer from 1 to"),
    ("GET", "/api/v1/recordings", "/api/v1/recordings", {}, "camera", "a/b", "camera must match"),
    ("GET", "/api/v1/recordings", "/api/v1/recordings", {}, "from", "noon", "from must be Unix seconds"),
    ("GET", "/api/v1/recordings", "/api/v1/recordings", {}, "to", "2026-12-04T25:00:00Z", "to must be Unix seconds"),
    ("GET", "/api/v1/recordings/export.mp4", "/api/v1/recordings/export.mp4", EXPORT, "camera", "..",
     "camera must match"),
    ("GET", "/api/v1/recordings/export.mp4", "/api/v1/recordings/export.mp4", EXPORT, "from", "-1",
     "from must be Unix seconds"),
    ("GET", "/api/v1/recordings/export.mp4", "/api/v1/recordings/export.mp4", EXPORT, "to", "1e99",
     "to must be Unix seconds"),
    ("GET", "/api/v1/recordings/export.mp4", "/api/v1/recordings/export.mp4", EXPORT, "download", "2",
     "download must be 0 or 1"),
    ("POST", "/api/v1/recordings/export-url", "/api/v1/recordings/export-url", EXPORT, "camera", "a b",
     "camera must match"),
    ("POST", "/api/v1/recordings/export-url", "/api/v1/recordings/export-url", EXPORT, "from", "x",
     "from must be Unix seconds"),
    ("POST", "/api/v1/recordings/export-url", "/api/v1/recordings/export-url", EXPORT, "to", "x",
     "to must be Unix seconds"),
    ("GET", "/api/v1/events/<event_id>/clip.mp4", "/api/v1/events/e1/clip.mp4", {}, "part", "-1",
     "part must be an integer from 0 to"),
    ("GET", "/api/v1/events/<event_id>/clip.mp4", "/api/v1/events/e1/clip.mp4", {}, "download", "yes",
     "download must be 0 or 1"),
    ("POST", "/api/v1/events/<event_id>/clip-url", "/api/v1/events/e1/clip-url", {}, "part", "1_0",
     "part must be an integer from 0 to"),
    ("GET", "/api/v1/cameras/<camera_id>/snapshot.jpg", "/api/v1/cameras/front/snapshot.jpg", {}, "annotate", "true",
     "annotate must be 0 or 1"),
    ("GET", "/api/v1/cameras/<camera_id>/snapshot.jpg", "/api/v1/cameras/front/snapshot.jpg", {}, "quality", "101",
     "quality must be an integer from 1 to 100"),
    ("GET", "/api/v1/cameras/<camera_id>/stream.mjpg", "/api/v1/cameras/front/stream.mjpg", {}, "annotate", "2",
     "annotate must be 0 or 1"),
    ("GET", "/api/v1/cameras/<camera_id>/stream.mjpg", "/api/v1/cameras/front/stream.mjpg", {}, "quality", "0",
     "quality must be an integer from 1 to 100"),
    ("GET", "/api/v1/cameras/<camera_id>/stream.mjpg", "/api/v1/cameras/front/stream.mjpg", {}, "fps", "nan",
     "fps must be a number from 0.1 to 30"),
]


def route_of(method: str, rule: str) -> Route:
    return next(route for route in appliance_routes() if (route.method, route.rule) == (method, rule))


@pytest.mark.parametrize("method, rule, path, valid, name, bad, sentence", BAD_VALUES)
def test_a_bad_value_of_each_query_parameter_is_the_400_its_query_model_gives(api, method, rule, path, valid, name,
                                                                             bad, sentence):
    params: Dict[str, str] = dict(valid, **{name: bad})
    query = route_of(method, rule).query
    assert query is not None and name in {field.alias or key for key, field in query.model_fields.items()}
    with pytest.raises(ApiError) as refused:
        parse_query(query, params)
    assert refused.value.status == 400 and refused.value.message.startswith(sentence)
    response = api.request(method, path, params=params)
    assert response.status_code == 400, response.text
    assert response.json() == {"error": refused.value.message}


@pytest.mark.parametrize("method, rule", sorted({(row[0], row[1]) for row in BAD_VALUES}))
def test_the_valid_values_pass_their_query_model(method, rule):
    """Each table row's failure is its bad value's, not a missing required parameter's."""
    valid = next(row[3] for row in BAD_VALUES if (row[0], row[1]) == (method, rule))
    parse_query(route_of(method, rule).query, valid)


def test_parameters_left_out_empty_or_unknown_take_their_defaults_and_values_come_typed():
    assert parse_query(EventFilters, {"limit": "", "token": "t", "_": "1733356800"}) == EventFilters()
    typed = parse_query(EventFilters, {"camera": "front", "after": "2024-12-05T00:00:00Z", "before": "1733356800.5",
                                       "limit": "7"})
    assert (typed.camera, typed.after, typed.before, typed.limit) == ("front", 1733356800.0, 1733356800.5, 7)
    assert parse_query(SnapshotQuery, {"annotate": "0", "quality": "55"}).model_dump() == {
        "annotate": False, "quality": 55, "token": None}
    review = parse_query(ReviewListQuery, {"reviewed": "1", "page": "3", "day": "2027-01-15", "severity": "alert"})
    assert (review.reviewed, review.page, str(review.day), review.severity) == (True, 3, "2027-01-15", "alert")


@pytest.mark.parametrize("given, sentence", [
    ({"from": "1", "to": "2"}, "camera is required"),
    ({"camera": "", "from": "1", "to": "2"}, "camera is required"),
    ({"camera": "front", "to": "2"}, "from and to are required"),
    ({"camera": "front", "from": "1"}, "from and to are required"),
])
def test_an_export_says_what_it_requires(given, sentence):
    with pytest.raises(ApiError, match=sentence):
        parse_query(ExportQuery, given)


def test_unknown_parameters_are_ignored_as_they_always_were(api):
    response = api.get("/api/v1/events", params={"limit": "1", "token": "anything", "_": "1733356800"})
    assert response.status_code == 200 and response.json() == {"events": [], "total": 0}


@pytest.mark.parametrize("body, sentence", [
    ([], "the body must be a JSON object"),
    ({"before": 1, "sql": "1=1"}, "unknown keys ['sql']"),
    ({"before": 1, "reviewed": "yes"}, "reviewed must be true or false"),
    ({"ids": ["f1"], "day": "2027-01-15"}, "filters go with before"),
    ({"ids": []}, "ids must be a list of 1 to"),
    ({"before": "noon"}, "before must be Unix seconds"),
    ({"before": 1, "camera": 5}, "camera must be a string, got int"),
    ({"before": 1, "day": "2027-02-30"}, "day must be a date"),
])
def test_the_review_mark_body_is_checked_by_its_model(body, sentence):
    with pytest.raises(ValidationError) as refused:
        ReviewMark.model_validate(body)
    assert problem_sentence(refused.value).startswith(sentence)


def test_a_review_mark_filter_sent_as_null_is_no_filter():
    mark = ReviewMark.model_validate({"before": "2024-12-05T00:00:00Z", "camera": None, "day": None})
    assert (mark.before, mark.camera, mark.day, mark.reviewed, mark.ids) == (1733356800.0, None, None, True, None)
