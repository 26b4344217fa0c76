"""Fuzzing every operation of the OpenAPI document against a real server with schemathesis.

Each operation gets a fresh API over real HTTP (token set, two cameras, one with a zone and a
line, events in a real event store, one with a snapshot, a config file in a tmp folder) and is
sent the document's examples, its boundary cases, and generated schema-valid and schema-invalid
requests. No answer may be a server error, every answer must be one the document lists for the
operation, with the documented content type, headers and body schema, and a request that breaks
the schema must be refused. Generation is derandomized and bounded, so a run is the same every
time and stays short on a small machine.
"""
from __future__ import annotations

import collections
import copy
import time
from typing import Any, Dict

import hypothesis
import pytest
import requests
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, negative_data_rejection,
                                               response_headers_conformance, response_schema_conformance,
                                               status_code_conformance)

from edge_app.api.openapi_spec import build_openapi
from edge_app.config.file import merge_patch, parse_config
from tests.api.conftest import BASE_CONFIG, TOKEN, bus_detections
from tests.api.test_events_routes import NOW, event
from testkit.paths import shared_dir
from tests.support.recordings import RecordedFiles

EXAMPLES_PER_OPERATION = 20
BEARER = {"Authorization": f"Bearer {TOKEN}"}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, negative_data_rejection]
# A live view never ends, so its body is only sampled: the checks that need the whole body are left out.
STREAM_CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance]
STREAM_PATH = "/api/v1/cameras/{camera_id}/stream.mjpg"

MODEL_PATH = shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx"
FUZZED_CONFIG: Dict[str, Any] = {
    "model": {"path": str(MODEL_PATH)},
    "api": {"token": TOKEN},
    "cameras": [
        {"id": "front", "source": "rtsp://admin:cam-s3cret@10.0.0.5:554/stream1",
         "zones": [{"name": "driveway", "polygon": [[0.1, 0.5], [0.6, 0.5], [0.6, 1.0], [0.1, 1.0]]}],
         "lines": [{"name": "gate", "points": [[0.5, 0.0], [0.5, 1.0]]}]},
        {"id": "back", "source": "test://bars"},
    ],
    # profiles to switch between, so that POST /api/v1/profile can succeed
    "profiles": {"definitions": [{"name": "home"}, {"name": "away", "detect": {"back": False}}]},
}
EVENTS = [
    event(1, "front", "person", NOW - 300, entered_zones=("driveway",), current_zones=("driveway",)),
    event(2, "back", "bus", NOW - 200, end_time=NOW - 150),
]


# Recordings: a clip of the first event and two segments of "front" from SEGMENTS_START on.
SEGMENTS_START = 1_800_000_000
SEGMENT_S = 2
RANGE_EXAMPLE = {"camera": "front", "from": str(SEGMENTS_START), "to": str(SEGMENTS_START + 3)}


def _examples(document: Dict[str, Any]) -> Dict[str, Any]:
    """The served document plus examples naming what the fixture holds, so that requests also
    reach existing cameras and events and a valid configuration, not only 404s and 400s."""
    document = copy.deepcopy(document)
    paths = document["paths"]
    whole_config = parse_config(merge_patch(copy.deepcopy(BASE_CONFIG), FUZZED_CONFIG)).model_dump(mode="json")
    whole_config["device_id"] = "edge-fuzzed"
    bodies = {
        ("/api/v1/config", "put"): whole_config,
        ("/api/v1/config", "patch"): {"device_id": "edge-patched", "mqtt": {"qos": 0}},
        ("/api/v1/cameras", "post"): {"id": "side", "source": "test://noise", "fps_limit": 2},
        ("/api/v1/cameras/{camera_id}", "patch"): {"fps_limit": 5, "lines": [{"name": "door", "points": [[0, 0.5], [1, 0.5]]}]},
        ("/api/v1/profile", "post"): {"profile": "away"},
    }
    for (path, method), body in bodies.items():
        for media in paths[path][method]["requestBody"]["content"].values():
            media["example"] = body
    ids = {"camera_id": "front", "event_id": EVENTS[0].id}
    for path, operations in paths.items():
        for operation in operations.values():
            operation["parameters"] = [
                dict(param, example=ids[param["name"]]) if param["in"] == "path"
                else dict(param, example=RANGE_EXAMPLE[param["name"]])
                if path.startswith("/api/v1/recordings") and param["name"] in RANGE_EXAMPLE else param
                for param in operation.get("parameters", [])
            ]
    return document


DOCUMENT = build_openapi()
schema = schemathesis.openapi.from_dict(_examples(DOCUMENT))
# Extra query parameters are ignored by design (as by most servers), and the token is sent with
# every request rather than generated: neither makes a request one the server must refuse.
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                                max_examples=EXAMPLES_PER_OPERATION, deterministic=True, database="none",
                                allow_extra_parameters=False, with_security_parameters=False)
# A body above api.max_body_bytes is refused with 413 before it is read: for a request that breaks
# the schema (a generated config can be megabytes of polygon points) that is a refusal too.
_rejections = schema.config.checks.negative_data_rejection
_rejections.expected_statuses = [*_rejections.expected_statuses, "413"]
# A live view the fuzz hangs up on keeps its slot until the server's next write (a keepalive at
# most 2 s later); enough slots that the documented 503 for "too many views" means a leak.
LIVE_VIEW_SLOTS = 100


@pytest.fixture
def fuzzed_api(make_api, bus_jpg, bus_image, model_path, tmp_path):
    assert model_path == MODEL_PATH
    running = make_api(FUZZED_CONFIG, max_live_streams=LIVE_VIEW_SLOTS, max_live_streams_per_camera=LIVE_VIEW_SLOTS)
    # Both cameras have a frame, so a 503 "no frame yet" cannot hide among the answers.
    running.service.publish("back", bus_image, bus_detections())
    running.service.add_event(EVENTS[0], bus_jpg.read_bytes())
    running.service.add_event(EVENTS[1])
    recordings = RecordedFiles(tmp_path / "recordings")
    recordings.add_clip(EVENTS[0].id, "front", EVENTS[0].start_time, 2)
    for n in range(2):
        recordings.add_segment("front", SEGMENTS_START + n * SEGMENT_S, SEGMENT_S)
    running.service.recording_reader = recordings.store
    served = running.get("/api/openapi.json")
    assert served.status_code == 200 and served.json() == DOCUMENT, "the server serves another document than the one fuzzed"
    return running


@pytest.fixture
def answers(request):
    """Status codes per operation; a fuzz that never got past 401, 404 or 400 tested little."""
    seen: collections.Counter = collections.Counter()
    yield seen
    assert any(200 <= status < 300 for status in seen), f"{request.node.name}: no request succeeded: {dict(seen)}"


def call_stream(case, base_url: str) -> schemathesis.Response:
    """A live view never ends: keep its head and first chunk, then hang up."""
    kwargs = case.as_transport_kwargs(base_url=base_url, headers=BEARER)
    kwargs.update(stream=True, timeout=10)
    started = time.monotonic()
    with requests.request(**kwargs) as response:
        if response.status_code == 200:
            body = next(response.iter_content(chunk_size=None), b"")
        else:
            body = response.content
        return schemathesis.Response(response.status_code, {k.lower(): [v] for k, v in response.headers.items()},
                                     body, response.request, time.monotonic() - started, verify=True)


@schema.parametrize()
@hypothesis.settings(derandomize=True, database=None, deadline=None, max_examples=EXAMPLES_PER_OPERATION,
                     suppress_health_check=list(hypothesis.HealthCheck))
def test_no_server_errors_and_answers_as_documented(case, fuzzed_api, answers):
    if case.operation.path == STREAM_PATH:
        response = call_stream(case, fuzzed_api.url)
        checks = STREAM_CHECKS
    else:
        response = case.call(base_url=fuzzed_api.url, headers=BEARER, timeout=10)
        checks = CHECKS
    answers[response.status_code] += 1
    case.validate_response(response, checks=checks, headers=BEARER)


# Sources that read something else than a camera: every FFmpeg protocol prefix (file: judged by its
# target, outside the folders in use here), and synthetic sources that draw gigapixels per second.
FILE_ATTACKS = [
    *(f"{prefix}/etc/hostname" for prefix in ("file:", "FILE:", "concat:", "subfile,,start,0,end,64,,:", "crypto:",
                                              "async:", "cache:", "md5:", "pipe:", "fd:", "unix:", "tee:")),
    "concat:/etc/hostname|/etc/passwd", "data:video/mp4;base64,AAAAIGZ0eXA=", "pipe:0", "file:../../etc/hostname",
]
SYNTHETIC_ATTACKS = ["test://noise?width=8192&height=8192&fps=1000", "test://bars?width=8192&height=8192&fps=100"]


def _refused_everywhere(api, cameras, source, enabled):
    camera = {"id": "hostile", "source": source, "enabled": enabled}
    for method, path, body in (("PATCH", "/api/v1/config", {"cameras": [*cameras, camera]}),
                               ("POST", "/api/v1/cameras", camera),
                               ("PATCH", "/api/v1/cameras/back", {"source": source, "enabled": enabled})):
        response = api.request(method, path, json=body, headers=BEARER)
        assert response.status_code == 400, (method, path, source, response.text)


@pytest.mark.parametrize("enabled", [True, False])
def test_hostile_sources_are_refused_on_every_route_that_takes_one(fuzzed_api, enabled):
    before = fuzzed_api.config_path.read_bytes() if fuzzed_api.config_path.exists() else None
    cameras = fuzzed_api.get("/api/v1/config", headers=BEARER).json()["cameras"]
    # A disabled synthetic camera costs nothing until it is enabled, which is refused then.
    for source in FILE_ATTACKS + (SYNTHETIC_ATTACKS if enabled else []):
        _refused_everywhere(fuzzed_api, cameras, source, enabled)
    after = fuzzed_api.config_path.read_bytes() if fuzzed_api.config_path.exists() else None
    assert after == before and fuzzed_api.service.applied.apply_calls == 0
    if not enabled:
        for source in SYNTHETIC_ATTACKS:
            added = fuzzed_api.request("POST", "/api/v1/cameras", json={"id": "idle", "source": source, "enabled": False},
                                       headers=BEARER)
            assert added.status_code == 201, added.text
            enabling = fuzzed_api.request("PATCH", "/api/v1/cameras/idle", json={"enabled": True}, headers=BEARER)
            assert enabling.status_code == 400 and "test:// cameras" in enabling.text, enabling.text
            assert fuzzed_api.request("DELETE", "/api/v1/cameras/idle", headers=BEARER).status_code in (200, 204)
