"""The fleet lists an appliance's events and streams their clips from the appliance's own API.

The appliance is the real REST API over real HTTP (token set) in front of the in-memory double,
with a real fragmented MP4 clip made by ffmpeg; the fleet is the real service on the test broker
and a SQLite database. Nothing of the clip is stored by the fleet: it is streamed through.
"""
from __future__ import annotations

import json

import pytest
import requests

from edge_app.config.file import ConfigError
from edge_app.fleet_service.config import parse_fleet_config
from tests.api.served_double import served_double
from tests.api.test_events_routes import NOW, event
from tests.support.fleet import start_fleet
from testkit.net import free_port
from tests.support.recordings import RecordedFiles

APPLIANCE_TOKEN = "appliance-token-0123456789abcdef"
FLEET_TOKEN = "fleet-token-0123456789abcdef"
DEVICE = "shop-1"


@pytest.fixture
def appliance_api(tmp_path, model_path):
    """A token-protected appliance API with two events; the first has a 4 s clip."""
    files = RecordedFiles(tmp_path / "recordings")
    with served_double(tmp_path, model_path, {"device_id": DEVICE, "api": {"token": APPLIANCE_TOKEN}}) as (server, service):
        service.recording_reader = files.store
        with_clip, without = event(1, "front", "person", NOW - 300), event(2, "back", "bus", NOW - 200)
        service.add_event(with_clip)
        service.add_event(without)
        files.add_clip(with_clip.id, "front", with_clip.start_time, 4)
        files.link_clip(service.event_store, with_clip.id)
        server.clip_id, server.other_id = with_clip.id, without.id
        server.clip_bytes = files.clip_bytes(with_clip.id)
        files.add_clip(with_clip.id, "front", with_clip.start_time + 4, 2, part=1)
        server.second_part = files.clip_bytes(with_clip.id, part=1)
        yield server
    files.close()


@pytest.fixture
def fleet(mosquitto_broker, tmp_path, appliance_api):
    running = start_fleet(mosquitto_broker, f"sqlite:///{tmp_path / 'fleet.db'}", api={"token": FLEET_TOKEN},
                          appliances={DEVICE: {"url": appliance_api.url, "token": APPLIANCE_TOKEN},
                                      "wrong-token": {"url": appliance_api.url, "token": "not-the-token"},
                                      "away": {"url": f"http://127.0.0.1:{free_port()}", "timeout_s": 2}})
    yield running
    running.stop()


def get(fleet, path, **headers):
    return requests.get(fleet.url + path, headers={"Authorization": f"Bearer {FLEET_TOKEN}", **headers}, timeout=10)


def clip_path(device, event_id):
    return f"/api/v1/devices/{device}/events/{event_id}/clip.mp4"


def test_the_fleet_lists_an_appliances_events_with_their_clip_urls(fleet, appliance_api):
    response = get(fleet, f"/api/v1/devices/{DEVICE}/events")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["device_id"] == DEVICE
    by_id = {e["id"]: e for e in body["events"]}
    assert set(by_id) == {appliance_api.clip_id, appliance_api.other_id}
    assert by_id[appliance_api.other_id]["clip_url"] is None
    assert by_id[appliance_api.clip_id]["clip_url"] == clip_path(DEVICE, appliance_api.clip_id)
    filtered = get(fleet, f"/api/v1/devices/{DEVICE}/events?camera=back&limit=5").json()["events"]
    assert [e["id"] for e in filtered] == [appliance_api.other_id]
    assert get(fleet, f"/api/v1/devices/{DEVICE}/events?limit=0").status_code == 400


@pytest.mark.parametrize("query", ["limit=" + "9" * 5000, "limit=\u00b2", "limit=+5"])
def test_a_hostile_page_limit_of_the_fleet_is_a_400(fleet, query):
    response = get(fleet, f"/api/v1/devices?{query}")
    assert response.status_code == 400 and "limit must be an integer" in response.json()["error"]


@pytest.mark.parametrize("part", ["9" * 5000, "\u00b2", "-1"])
def test_a_hostile_clip_part_of_the_fleet_is_a_400(fleet, appliance_api, part):
    response = get(fleet, clip_path(DEVICE, appliance_api.clip_id) + f"?part={part}")
    assert response.status_code == 400 and "part must be an integer" in response.json()["error"]


def test_the_fleet_streams_the_clip_with_ranges(fleet, appliance_api):
    data = appliance_api.clip_bytes
    size = len(data)
    whole = get(fleet, clip_path(DEVICE, appliance_api.clip_id))
    assert whole.status_code == 200 and whole.content == data
    assert whole.headers["Content-Type"] == "video/mp4" and whole.headers["Accept-Ranges"] == "bytes"
    for header, first, last in (("bytes=0-99", 0, 99), (f"bytes={size // 2}-{size // 2 + 499}", size // 2, size // 2 + 499),
                                (f"bytes={size - 10}-{size - 1}", size - 10, size - 1), ("bytes=-300", size - 300, size - 1)):
        part = get(fleet, clip_path(DEVICE, appliance_api.clip_id), Range=header)
        assert part.status_code == 206, (header, part.text)
        assert part.headers["Content-Range"] == f"bytes {first}-{last}/{size}"
        assert part.content == data[first:last + 1]
    refused = get(fleet, clip_path(DEVICE, appliance_api.clip_id), Range=f"bytes={size}-")
    assert refused.status_code == 416 and refused.headers["Content-Range"] == f"bytes */{size}"
    second = get(fleet, clip_path(DEVICE, appliance_api.clip_id) + "?part=1")
    assert second.status_code == 200 and second.content == appliance_api.second_part
    no_part = get(fleet, clip_path(DEVICE, appliance_api.clip_id) + "?part=7")
    assert no_part.status_code == 404 and "has no part 7" in no_part.json()["error"]
    assert get(fleet, clip_path(DEVICE, appliance_api.clip_id) + "?part=x").status_code == 400


def test_what_the_fleet_cannot_fetch_says_why(fleet, appliance_api):
    no_clip = get(fleet, clip_path(DEVICE, appliance_api.other_id))
    assert no_clip.status_code == 404 and "has no clip" in no_clip.json()["error"]
    unknown = get(fleet, clip_path("unknown-device", appliance_api.clip_id))
    assert unknown.status_code == 404 and "appliances in FLEET.yaml" in unknown.json()["error"]
    wrong = get(fleet, clip_path("wrong-token", appliance_api.clip_id))
    assert wrong.status_code == 502 and "refused the fleet's token" in wrong.json()["error"]
    away = get(fleet, f"/api/v1/devices/away/events")
    assert away.status_code == 502 and "cannot reach" in away.json()["error"]
    assert get(fleet, clip_path(DEVICE, "..%2F..%2Fetc")).status_code in (400, 404)
    assert get(fleet, clip_path("bad id!", appliance_api.clip_id)).status_code in (400, 404)
    bare = requests.get(fleet.url + clip_path(DEVICE, appliance_api.clip_id), timeout=10)
    assert bare.status_code == 401


@pytest.mark.parametrize("url, problem", [
    ("ftp://10.0.0.1", "http://host:port"),
    ("http://user:pw@10.0.0.1:8080", "must not carry credentials"),
    ("http://10.0.0.1:8080/api/v1", "must not have a path"),
    ("http://10.0.0.1:99999", "bad port"),
])
def test_an_appliance_url_is_a_plain_http_address(url, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_fleet_config({"appliances": {DEVICE: {"url": url}}})
    with pytest.raises(ConfigError, match="not a device id"):
        parse_fleet_config({"appliances": {"bad id": {"url": "http://10.0.0.1:8080"}}})


class _Hostile:
    """A real HTTP server standing in for a compromised appliance: it redirects the fleet elsewhere,
    echoes the request's headers back, and sets headers a player has no use for."""

    def __init__(self):
        import http.server
        import threading

        self.seen = []  # (path, headers) of every request it got, and of the redirect's target
        hostile = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 (the server's name)
                hostile.seen.append((self.path, dict(self.headers)))
                if "part=1" in self.path:  # a redirect to the "away" address: never followed
                    self.send_response(302)
                    self.send_header("Location", hostile.url + "/elsewhere?stolen=1")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps(dict(self.headers)).encode()  # echoes Authorization in the body too
                self.send_response(200)
                self.send_header("Content-Type", "video/mp4")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Echo-Authorization", self.headers.get("Authorization", ""))
                self.send_header("Set-Cookie", "session=x")
                self.send_header("Location", "http://example.invalid/")
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="test:hostile-appliance", daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_hostile_appliance_gets_no_redirect_followed_and_no_header_passed_back(mosquitto_broker, tmp_path):
    hostile = _Hostile()
    running = start_fleet(mosquitto_broker, f"sqlite:///{tmp_path / 'fleet.db'}", api={"token": FLEET_TOKEN},
                          appliances={DEVICE: {"url": hostile.url, "token": APPLIANCE_TOKEN}})
    try:
        event_id = "1700000000.000-front-1"
        answer = get(running, clip_path(DEVICE, event_id), Cookie="fleet=secret", **{"X-Forwarded-For": "1.2.3.4"})
        assert answer.status_code == 200
        # The appliance's token goes to the appliance only (it may echo it in its body, which is its
        # own business), never into the fleet's answer headers; nor do cookies or redirects.
        for name, value in answer.headers.items():
            assert APPLIANCE_TOKEN not in value, name
        assert "Set-Cookie" not in answer.headers and "Location" not in answer.headers
        assert "X-Echo-Authorization" not in answer.headers
        (path, sent), = hostile.seen
        assert path == f"/api/v1/events/{event_id}/clip.mp4"
        assert sent["Authorization"] == f"Bearer {APPLIANCE_TOKEN}"
        assert "Cookie" not in sent and "X-Forwarded-For" not in sent and FLEET_TOKEN not in json.dumps(sent)

        redirected = get(running, clip_path(DEVICE, event_id) + "?part=1")
        assert redirected.status_code == 502 and "answered 302" in redirected.json()["error"]
        assert APPLIANCE_TOKEN not in redirected.text and "Location" not in redirected.headers
        assert [p for p, _h in hostile.seen if "elsewhere" in p] == [], "the redirect was followed"
    finally:
        running.stop()
        hostile.close()
