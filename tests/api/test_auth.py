"""Bearer-token protection of /api/v1/* when api.token is set."""
import pytest

from tests.api.conftest import TOKEN

PROTECTED = [
    ("GET", "/api/v1/status", None),
    ("GET", "/api/v1/config", None),
    ("PATCH", "/api/v1/config", {}),
    ("GET", "/api/v1/cameras", None),
    ("GET", "/api/v1/cameras/front", None),
    ("GET", "/api/v1/cameras/front/snapshot.jpg", None),
    ("GET", "/api/v1/cameras/front/detections", None),
    ("GET", "/api/v1/nonexistent", None),
]
CREDENTIALS = [
    ({}, 401),
    ({"Authorization": "Bearer wrong-token"}, 401),
    ({"Authorization": f"Bearer {TOKEN}x"}, 401),
    ({"Authorization": f"Basic {TOKEN}"}, 401),
    ({"Authorization": "Bearer "}, 401),
    ({"Authorization": f"Bearer {TOKEN}"}, None),
    ({"Authorization": f"bearer {TOKEN}"}, None),
]


@pytest.mark.parametrize("method, path, body", PROTECTED)
@pytest.mark.parametrize("headers, status", CREDENTIALS)
def test_api_v1_needs_the_token(secured_api, method, path, body, headers, status):
    response = secured_api.request(method, path, headers=headers, json=body)
    if status == 401:
        assert response.status_code == 401
        assert response.json()["error"]
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    else:
        assert response.status_code != 401
        assert response.status_code == (404 if path.endswith("nonexistent") else 200)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/api/openapi.json", "/"])
def test_probes_metrics_docs_and_dashboard_need_no_token(secured_api, path):
    assert secured_api.get(path).status_code in (200, 503)


@pytest.mark.parametrize(
    "path, token, status",
    [
        ("/api/v1/cameras/front/snapshot.jpg", TOKEN, 200),
        ("/api/v1/cameras/front/snapshot.jpg", "wrong", 401),
        ("/api/v1/cameras/front/stream.mjpg", TOKEN, 200),
        ("/api/v1/cameras/front/stream.mjpg", "wrong", 401),
        # Only what an <img> loads takes the token from the URL.
        ("/api/v1/status", TOKEN, 401),
        ("/api/v1/config", TOKEN, 401),
        ("/api/v1/cameras/front/detections", TOKEN, 401),
    ],
)
def test_query_token_only_for_images(secured_api, path, token, status):
    with secured_api.get(path, params={"token": token}, stream=True) as response:
        assert response.status_code == status


def test_a_changed_token_applies_to_the_next_request(secured_api):
    old = {"Authorization": f"Bearer {TOKEN}"}
    new = {"Authorization": "Bearer rotated-token"}
    response = secured_api.request("PATCH", "/api/v1/config", json={"api": {"token": "rotated-token"}}, headers=old)
    assert response.status_code == 200 and response.json()["api"]["token"] == "***"
    assert secured_api.get("/api/v1/status", headers=old).status_code == 401
    assert secured_api.get("/api/v1/status", headers=new).status_code == 200
    # Removing the token opens the API again.
    assert secured_api.request("PATCH", "/api/v1/config", json={"api": {"token": None}}, headers=new).status_code == 200
    assert secured_api.get("/api/v1/status").status_code == 200


def test_without_a_token_configured_the_api_is_open(api):
    assert api.get("/api/v1/status").status_code == 200
    assert api.get("/api/v1/status", headers={"Authorization": "Bearer anything"}).status_code == 200


def test_metrics_need_the_token_while_the_api_listens_beyond_loopback(make_api):
    """Per-camera motion and analysed rates tell who moves where: not for anyone on the LAN."""
    running = make_api({"api": {"token": TOKEN}}, listen_host="0.0.0.0")
    assert running.get("/metrics").status_code == 401
    assert running.get("/metrics", headers={"Authorization": "Bearer wrong-token"}).status_code == 401
    scraped = running.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert scraped.status_code == 200 and "edge_app_camera_fps" in scraped.text
    # The probes stay open: a load balancer or systemd check has no token.
    assert running.get("/healthz").status_code == 200


def test_metrics_auth_open_and_token_override_auto(make_api):
    opened = make_api({"api": {"token": TOKEN, "metrics_auth": "open"}}, listen_host="0.0.0.0")
    assert opened.get("/metrics").status_code == 200
    always = make_api({"api": {"token": TOKEN, "metrics_auth": "token"}})
    assert always.get("/metrics").status_code == 401
    assert always.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert always.get("/metrics", params={"token": TOKEN}).status_code == 401  # headers only, like the JSON routes


def test_metrics_auth_applies_to_the_next_request(make_api):
    running = make_api({"api": {"token": TOKEN}})
    assert running.get("/metrics").status_code == 200  # loopback only: auto leaves it open
    auth = {"Authorization": f"Bearer {TOKEN}"}
    changed = running.request("PATCH", "/api/v1/config", json={"api": {"metrics_auth": "token"}}, headers=auth)
    assert changed.status_code == 200, changed.text
    assert running.get("/metrics").status_code == 401
