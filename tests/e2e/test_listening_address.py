"""A LAN client against a running ``edge-app run`` listening on a non-loopback address of this
machine: moving ``api.host`` to loopback never drops the token while the LAN listener is up,
and after the restart (on loopback) the token may go."""
import pytest
import requests

from testkit.waiting import wait_until
from testkit.net import local_lan_address, port_accepts

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(local_lan_address() is None, reason="this machine has no non-loopback IPv4 address")]

TOKEN = "lan-t0ken-of-the-owner-e2e-42"


def anonymous(app, method, path, **kwargs):
    return requests.request(method, app.base_url + path, timeout=30, **kwargs)


def test_the_token_stays_while_the_api_listens_on_the_lan(appliance_factory, model_path):
    lan_host = local_lan_address()
    app = appliance_factory([{"id": "cam1", "source": "test://bars?width=320&height=240&fps=5"}], model_path,
                            start=False, api={"host": lan_host, "token": TOKEN})
    port = app.config["api"]["port"]
    app.base_url = f"http://{lan_host}:{port}"
    app.start()
    assert not port_accepts("127.0.0.1", port)

    attack = app.request("PATCH", "/api/v1/config", json={"api": {"host": "127.0.0.1", "token": None}})
    assert attack.status_code == 400, attack.text
    assert attack.json()["details"][0]["loc"] == "api.token"
    assert anonymous(app, "GET", "/api/v1/config").status_code == 401
    assert anonymous(app, "PATCH", "/api/v1/cameras/cam1", json={"fps_limit": 2}).status_code == 401

    # The owner moves the API to loopback; until the restart the LAN listener keeps needing the token.
    moved = app.request("PATCH", "/api/v1/config", json={"api": {"host": "127.0.0.1"}})
    assert moved.status_code == 200, moved.text
    assert moved.json()["restart_required"] == ["api.host"]
    dropped = app.request("PATCH", "/api/v1/config", json={"api": {"token": None}})
    assert dropped.status_code == 400, dropped.text
    assert dropped.json()["details"][0]["loc"] == "api.token"
    assert anonymous(app, "GET", "/api/v1/config").status_code == 401
    assert anonymous(app, "PATCH", "/api/v1/cameras/cam1", json={"fps_limit": 2}).status_code == 401
    assert app.get("/api/v1/config").json()["cameras"][0]["fps_limit"] == 0

    app.terminate()
    app.base_url = f"http://127.0.0.1:{port}"
    app.start()
    assert not port_accepts(lan_host, port)
    dropped = app.request("PATCH", "/api/v1/config", json={"api": {"token": None}})
    assert dropped.status_code == 200, dropped.text
    app.token = None
    wait_until(lambda: anonymous(app, "GET", "/api/v1/config").status_code == 200, 5, "the API to answer without a token")
