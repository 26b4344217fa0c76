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


def test_a_stalled_pipeline_makes_readyz_503_and_shows_in_status_and_metrics(api):
    from edge_app.pipeline.stall_watch import PipelineActivity

    body = api.get("/api/v1/status").json()["pipeline"]
    assert body["stalled"] is False and body["stall_reason"] is None and body["last_batch_age_s"] == pytest.approx(0.1)
    assert "edge_app_pipeline_stalled 0.0" in api.get("/metrics").text

    # Frames were taken 30 s ago and no batch completed since (a hung inference, say).
    api.service.pipeline_activity = PipelineActivity(running=True, gather_alive=True, last_batch_s=960.0,
                                                     work_since_s=970.0, last_error=None)
    api.service.pipeline_errors = 3
    response = api.get("/readyz")
    assert response.status_code == 503
    reasons = response.json()["reasons"]
    assert reasons == ["the pipeline is stalled: no batch completed for 30 s while there was work"]
    body = api.get("/api/v1/status").json()["pipeline"]
    assert body["stalled"] is True and body["stall_reason"].startswith("no batch completed for 30 s")
    assert body["last_batch_age_s"] == 40.0 and body["errors"] == 3
    metrics = api.get("/metrics").text
    assert "edge_app_pipeline_stalled 1.0" in metrics
    assert "edge_app_pipeline_last_batch_age_seconds 40.0" in metrics and "edge_app_pipeline_errors_total 3.0" in metrics


def test_a_dead_pipeline_thread_is_not_ready(api):
    from edge_app.pipeline.stall_watch import PipelineActivity

    api.service.pipeline_activity = PipelineActivity(running=True, gather_alive=False, last_batch_s=None, work_since_s=None)
    response = api.get("/readyz")
    assert response.status_code == 503
    assert response.json()["reasons"] == ["the pipeline is stalled: the pipeline thread has stopped"]
