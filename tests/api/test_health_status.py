"""/healthz, /readyz and /api/v1/status over real HTTP."""
import pytest

from edge_app.version import __version__


def test_healthz_answers_ok(api):
    response = api.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize(
    "model_loaded, streaming, status, reasons",
    [
        (True, True, 200, None),
        (False, True, 503, ["the model is not loaded"]),
        (True, False, 503, ["no camera is streaming"]),
        (False, False, 503, ["the model is not loaded", "no camera is streaming"]),
    ],
)
def test_readyz_reports_readiness_with_reasons(api, model_loaded, streaming, status, reasons):
    api.service.model_loaded = model_loaded
    api.service.streaming = {"front": streaming, "back": False}
    response = api.get("/readyz")
    assert response.status_code == status
    body = response.json()
    if reasons is None:
        assert body == {"ready": True}
    else:
        assert body["ready"] is False and body["reasons"] == reasons
        assert isinstance(body["error"], str)


def test_readyz_is_503_when_the_check_itself_fails(api):
    def broken():
        raise RuntimeError("detector state unavailable")

    api.service.readiness = broken
    response = api.get("/readyz")
    assert response.status_code == 503
    assert response.json()["ready"] is False


def test_status_has_the_spec_fields(api):
    response = api.get("/api/v1/status")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json()
    assert body["device_id"] == "edge-test" and body["version"] == __version__
    for key in ("uptime_s", "backend", "model", "mqtt", "cameras", "pipeline"):
        assert key in body
    assert set(body["model"]) >= {"path", "input_size", "precision"}
    assert set(body["mqtt"]) >= {"connected", "published", "queued", "dropped"}
    assert set(body["pipeline"]) >= {"fps", "latency_ms"} and set(body["pipeline"]["latency_ms"]) >= {"p50", "p99"}
    cameras = {c["id"]: c for c in body["cameras"]}
    assert set(cameras) == {"front", "back"}
    for camera in cameras.values():
        assert set(camera) >= {"id", "state", "fps", "frames_captured", "frames_analyzed", "reconnects", "last_error"}
    assert cameras["front"]["state"] == "streaming"
