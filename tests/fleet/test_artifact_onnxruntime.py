"""A fleet model on a real ``edge-app run`` with ONNX Runtime: staged, run, rolled forward and back, and
fetched by itself when the appliance started while the fleet service was away.

No engine is involved (ONNX Runtime runs the ONNX as it is), so this is the path of every
appliance without TensorRT. The fleet service is the real one, on SQLite and PostgreSQL.
"""
from __future__ import annotations

import pytest

from testkit.appliance import ApplianceProcess
from tests.fleet.artifact_helpers import KEYS, TOKENS, artifact_fleet, model_state, roll_out, upload
from tests.support.cut_proxy import CutProxy
from testkit.net import free_port
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow


def _edge_b(tmp_path, model_path, broker, fleet, fleet_url: str, **fleet_settings):
    """The folder and configuration of appliance edge-b: fleet model gate version 1 on ONNX Runtime."""
    workdir = tmp_path / "edge-b"
    workdir.mkdir()
    config = {"device_id": "edge-b", "cameras": [{"id": "bars", "source": "test://bars?width=160&height=120&fps=2",
                                                  "detect": False}],
              "model": {"path": str(model_path), "backend": "onnxruntime", "max_batch": 1,
                        "engine_dir": str(workdir / "engines"), "artifact": {"name": "gate", "version": "1"}},
              "events": {"dir": str(workdir / "events")},
              "mqtt": {"host": broker.host, "port": broker.port, "topic_prefix": fleet.prefix},
              "api": {"host": "127.0.0.1", "port": free_port()},
              "fleet": {"remote_config": True, "desired_key": KEYS["edge-b"], "url": fleet_url,
                        "token": TOKENS["edge-b"], **fleet_settings}}
    return workdir, config


def test_an_onnxruntime_appliance_runs_fleet_versions_and_rolls_back(fleet_factory, mosquitto_broker, tmp_path,
                                                                     model_path):
    fleet = artifact_fleet(fleet_factory, tmp_path, max_upload_mb=64, artifacts={"max_mb": 512})
    onnx = model_path.read_bytes()
    assert upload(fleet, "gate", "1", onnx, b"\n".join([b"human"] + [b"c%d" % i for i in range(1, 80)])).status_code == 201
    assert upload(fleet, "gate", "2", onnx).status_code == 201
    workdir, config = _edge_b(tmp_path, model_path, mosquitto_broker, fleet, fleet.url)
    app = ApplianceProcess(config, workdir).start()

    def state():
        return model_state(fleet, "edge-b")

    try:
        wait_for(lambda: state() == {"version": "1", "state": "running", "progress": None, "reason": None}, 60,
                 f"gate 1 running ({app.log_tail()})")
        assert (workdir / "engines" / "fleet" / "gate" / "1" / "model.onnx").read_bytes() == onnx
        assert (workdir / "engines" / "fleet" / "gate" / "1" / "labels.txt").read_text().startswith("human\n")
        shown = app.get("/api/v1/config").json()["fleet"]
        assert shown["token"] == "***" and TOKENS["edge-b"] not in app.get("/api/v1/config").text
        for version in ("2", "1"):  # forward, then the rollback: a rollout of the previous version
            roll_out(fleet, version, "edge-b")
            wait_for(lambda: state().get("version") == version and state().get("state") == "running", 60,
                     f"gate {version} running ({app.log_tail()})")
            assert app.get("/api/v1/config").json()["model"]["artifact"]["version"] == version
        assert not list((workdir / "engines").rglob("*.part"))
    finally:
        app.close()


def test_an_appliance_started_while_the_fleet_is_away_fetches_its_version_once_it_answers(
        fleet_factory, mosquitto_broker, tmp_path, model_path):
    """Booted during an outage of the fleet service's HTTP (MQTT up, so models_state is seen), the
    appliance runs the model's ``path``; once the service answers, it fetches, verifies and swaps
    in the version by itself, without a restart or a rollout. ``fleet.fallback_retry_s`` shortens
    the wait between attempts from the default 30 s."""
    fleet = artifact_fleet(fleet_factory, tmp_path, max_upload_mb=64, artifacts={"max_mb": 512})
    onnx = model_path.read_bytes()
    assert upload(fleet, "gate", "1", onnx, b"\n".join([b"human"] + [b"c%d" % i for i in range(1, 80)])).status_code == 201
    proxy = CutProxy(("127.0.0.1", int(fleet.url.rsplit(":", 1)[1])))
    proxy.close()  # refuses connections, like a service that is down, until restore()
    workdir, config = _edge_b(tmp_path, model_path, mosquitto_broker, fleet, proxy.url,
                              fallback_retry_s=1, fallback_retry_max_s=2)
    app = ApplianceProcess(config, workdir)

    def state():
        return model_state(fleet, "edge-b")

    try:
        app.start()
        wait_for(lambda: "until it is fetched" in (state().get("reason") or ""), 60,
                 f"gate 1 reported as waiting for its fetch ({app.log_tail()})")
        assert state()["version"] == "1" and state()["state"] == "failed"
        wait_for(lambda: app.get("/api/v1/status").json()["backend"] == "onnxruntime", 60,
                 f"the model's path to run meanwhile ({app.log_tail()})")
        # Asked again and still away: the second wait is twice the first (fallback_retry_s: 1).
        wait_for(lambda: "until it is fetched, trying again in 2 s" in (state().get("reason") or ""), 60,
                 f"gate 1 asked for again ({app.log_tail()})")
        assert not (workdir / "engines" / "fleet" / "gate" / "1" / "model.onnx").exists()

        proxy.restore()
        wait_for(lambda: state() == {"version": "1", "state": "running", "progress": None, "reason": None}, 60,
                 f"gate 1 fetched and running once the fleet answers ({app.log_tail()})")
        assert (workdir / "engines" / "fleet" / "gate" / "1" / "model.onnx").read_bytes() == onnx
        assert (workdir / "engines" / "fleet" / "gate" / "1" / "labels.txt").read_text().startswith("human\n")
        wait_for(lambda: app.get("/api/v1/status").json()["model_change"]["state"] == "applied", 30,
                 f"the fetched version swapped in by a background model change ({app.log_tail()})")
        assert app.get("/api/v1/config").json()["model"]["artifact"]["version"] == "1"
        assert app.proc.poll() is None  # no restart
    finally:
        app.close()
        proxy.close()
