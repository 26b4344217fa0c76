"""Every route of the fleet that takes a body, sent the bodies of the attacks on it: numbers JSON has
not (1e400, NaN, Infinity), and bodies over api.max_body_bytes. A real fleet over real HTTP."""
from __future__ import annotations

import json
import re
import socket

import pytest
import requests

from edge_app.fleet_service.artifact_routes import UPLOAD_ENDPOINTS
from testkit.waiting import wait_for

TOKEN = "fleet-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NON_FINITE = [b'{"devices": "all", "patch": {"model": {"conf_threshold": 1e400}}}', b'{"version": NaN}',
              b'{"devices": ["edge-a"], "x": -Infinity}', b'{"patch": {"a": 1E999}}']
VALUES = {"device_id": "edge-a", "name": "m", "version": "1", "rollout_id": "0" * 32, "sha256": "0" * 64,
          "event_id": "ev-1"}

pytestmark = pytest.mark.parametrize("fleet_db_url", ["sqlite"], indirect=True)


def _body_routes(fleet):
    """(method, path) of every route that reads a body, upload routes aside."""
    app = fleet.server._app
    found = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint in UPLOAD_ENDPOINTS:
            continue
        for method in sorted(rule.methods & {"POST", "PUT", "PATCH"}):
            found.append((method, re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", lambda m: VALUES[m.group(1)], rule.rule)))
    return found


def _strict(text: str):
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in an answer"))


def test_no_route_takes_a_non_finite_number(fleet_factory, sim_devices):
    fleet = fleet_factory(api={"token": TOKEN})
    sim_devices(fleet.prefix, "edge-a")
    wait_for(lambda: fleet.get("/api/v1/devices/edge-a", headers=AUTH).status_code == 200, 10, "edge-a stored")  # so a route would go on to act on it
    routes = _body_routes(fleet)
    assert ("PATCH", "/api/v1/fleet/config") in routes and len(routes) >= 4
    for method, path in routes:
        for raw in NON_FINITE:
            response = requests.request(method, fleet.url + path, data=raw, timeout=10,
                                        headers={**AUTH, "Content-Type": "application/json"})
            assert response.status_code == 400, (method, path, raw, response.status_code, response.text)
            assert "not valid JSON" in _strict(response.text)["error"]
    assert _strict(fleet.get("/api/v1/rollouts", headers=AUTH).text)["rollouts"] == []


def test_no_route_but_the_uploads_reads_a_body_over_the_limit(fleet_factory):
    fleet = fleet_factory(api={"token": TOKEN})
    host, port = fleet.url.split("//", 1)[1].rsplit(":", 1)
    for method, path in _body_routes(fleet) + [("GET", "/api/v1/status"), ("DELETE", "/api/v1/devices/edge-a")]:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            # A declared length of 1 GiB and no body at all: the answer must come without waiting for it.
            sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
                         f"Content-Type: application/json\r\nContent-Length: {1 << 30}\r\n\r\n".encode())
            answer = b""
            while True:
                piece = sock.recv(65536)
                if not piece:
                    break
                answer += piece
        assert answer.startswith(b"HTTP/1.1 413"), (method, path, answer)
        assert b"api.max_body_bytes" in answer
