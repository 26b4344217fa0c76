"""The token follows the addresses the API really listens on, not the configured ``api.host``.

``api.host`` takes effect at a restart: until then the server keeps listening where it did. The
attack: with the API on a LAN address and a token, ``{"api": {"host": "127.0.0.1", "token": null}}``
("loopback needs no token") used to be accepted, and the LAN listener then served everything
without a token until the restart. Real HTTP against a real listener on a non-loopback address
of this machine (127.0.0.0/8 is loopback, so a second loopback address would prove nothing).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest
import requests

from edge_app.api import create_app
from edge_app.http_server.server import ApiServer
from edge_app.http_server.listening import request_listening_hosts
from edge_app.appliance.event_deletion import StoredEventDeletion
from edge_app.config.file import load_config, parse_config
from edge_app.config_change.changes import ConfigRefused, Origin
from tests.api.in_memory_service import InMemoryService, change_path, saving_change_path
from testkit.net import local_lan_address

TOKEN = "lan-t0ken-of-the-owner-123456"
ATTACK = {"api": {"host": "127.0.0.1", "token": None}}
LAN_HOST = local_lan_address()

pytestmark = pytest.mark.skipif(LAN_HOST is None, reason="this machine has no non-loopback IPv4 address")


@dataclass
class Listener:
    service: InMemoryService
    server: ApiServer
    config_path: Path

    def url(self, host: str) -> str:
        return f"http://{host}:{self.server.port}"

    def request(self, method: str, path: str, *, host: Optional[str] = None, token: Optional[str] = None,
                **kwargs: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return requests.request(method, self.url(host or LAN_HOST) + path, headers=headers, timeout=10, **kwargs)


@pytest.fixture
def listen(tmp_path, model_path) -> Callable[..., Listener]:
    """``listen(api_section, bind_host)``: the API of a service with that config, served on bind_host."""
    started: List[Listener] = []

    def start(api: Dict[str, Any], bind_host: str) -> Listener:
        config = parse_config({"device_id": "edge-lan", "cameras": [{"id": "cam1", "source": "test://bars"}],
                               "model": {"path": str(model_path)}, "mqtt": {"enabled": False},
                               "api": {"port": 0, **api}})
        config_path = tmp_path / f"config-{len(started)}.yaml"
        service = InMemoryService(config, config_path)
        changes = saving_change_path(service, listening_hosts=request_listening_hosts)
        server = ApiServer(create_app(service, changes, StoredEventDeletion(service.event_store)), bind_host, 0)
        server.start()
        started.append(Listener(service, server, config_path))
        return started[-1]

    yield start
    for listener in started:
        listener.server.stop(timeout_s=5)
        listener.service.close()


def assert_locked(api: Listener) -> None:
    """From the LAN, without a token, nothing is read or changed."""
    assert api.request("GET", "/api/v1/config").status_code == 401
    assert api.request("PATCH", "/api/v1/cameras/cam1", json={"fps_limit": 5}).status_code == 401
    assert api.request("GET", "/api/v1/config", token=TOKEN).status_code == 200


def test_the_token_cannot_be_dropped_by_moving_api_host_to_loopback(listen):
    api = listen({"host": LAN_HOST, "token": TOKEN}, LAN_HOST)
    before = api.config_path.read_bytes()

    response = api.request("PATCH", "/api/v1/config", token=TOKEN, json=ATTACK)

    assert response.status_code == 400, response.text
    assert response.json()["details"][0]["loc"] == "api.token"
    assert LAN_HOST in response.json()["error"]
    assert api.config_path.read_bytes() == before
    assert_locked(api)


def test_a_move_to_loopback_keeps_the_token_until_the_restart(listen):
    api = listen({"host": LAN_HOST, "token": TOKEN}, LAN_HOST)
    moved = api.request("PATCH", "/api/v1/config", token=TOKEN, json={"api": {"host": "127.0.0.1"}})
    assert moved.status_code == 200, moved.text
    assert "api.host" in moved.json()["restart_required"]

    # The configuration says loopback now, but the listener is still on the LAN.
    response = api.request("PATCH", "/api/v1/config", token=TOKEN, json={"api": {"token": None}})
    assert response.status_code == 400, response.text
    assert response.json()["details"][0]["loc"] == "api.token"
    short = api.request("PATCH", "/api/v1/config", token=TOKEN, json={"api": {"token": "short"}})
    assert short.status_code == 400, short.text
    assert load_config(api.config_path).api.token == TOKEN
    assert_locked(api)


def test_after_the_restart_on_loopback_the_token_may_go(listen):
    config = {"host": "127.0.0.1", "token": TOKEN}
    api = listen(config, "127.0.0.1")
    response = api.request("PATCH", "/api/v1/config", host="127.0.0.1", token=TOKEN, json={"api": {"token": None}})
    assert response.status_code == 200, response.text
    assert api.request("GET", "/api/v1/config", host="127.0.0.1").status_code == 200


def test_the_broker_cannot_drop_the_token_either(listen):
    api = listen({"host": LAN_HOST, "token": TOKEN}, LAN_HOST)
    changes = saving_change_path(api.service, listening_hosts=api.server.listening_hosts)
    before = api.config_path.read_bytes()

    with pytest.raises(ConfigRefused) as refused:
        changes.patch(ATTACK, Origin.BROKER)
    changes.patch({"api": {"host": "127.0.0.1"}}, Origin.API)  # the owner moves it; restart pending
    with pytest.raises(ConfigRefused) as refused_later:
        changes.patch({"api": {"token": None}}, Origin.BROKER)

    assert "api.token" in [problem.loc for problem in refused.value.problems]
    assert "api.token" in [problem.loc for problem in refused_later.value.problems]
    assert load_config(api.config_path).api.token == TOKEN
    assert before != api.config_path.read_bytes()  # only the owner's host change was saved
    assert_locked(api)


@pytest.mark.parametrize("token", [None, "short"])
def test_a_listener_off_loopback_without_a_usable_token_refuses_lan_clients(listen, token):
    """Defence in depth: however the configuration lost its token, the LAN is not served without one."""
    api = listen({"host": "127.0.0.1", "token": token}, "0.0.0.0")

    for method, path, body in (("GET", "/api/v1/config", None), ("PATCH", "/api/v1/cameras/cam1", {"fps_limit": 5})):
        response = api.request(method, path, token=token, json=body)
        assert response.status_code == 503, response.text
        assert "api.token" in response.json()["error"]
    assert load_config(api.config_path).cameras[0].fps_limit != 5
    # The owner, on the machine itself, can still reach the API to set a token.
    local = api.request("GET", "/api/v1/config", host="127.0.0.1", token=token)
    assert local.status_code == 200, local.text
    if token:
        assert api.request("GET", "/api/v1/config", host="127.0.0.1").status_code == 401
    fixed = api.request("PATCH", "/api/v1/config", host="127.0.0.1", token=token, json={"api": {"token": TOKEN}})
    assert fixed.status_code == 200, fixed.text
    assert_locked(api)


def test_the_server_reports_the_addresses_it_listens_on(listen):
    api = listen({"host": LAN_HOST, "token": TOKEN}, LAN_HOST)
    assert api.server.listening_hosts() == (LAN_HOST,)
    wildcard = listen({"host": "0.0.0.0", "token": TOKEN}, "0.0.0.0")
    assert wildcard.server.listening_hosts() == ("0.0.0.0",)
    unstarted = ApiServer(create_app(api.service, change_path(api.service), StoredEventDeletion(None)), "127.0.0.1", 0)
    assert unstarted.listening_hosts() == ()
