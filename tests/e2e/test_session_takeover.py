"""A real ``edge-app run`` on a real Mosquitto that does not bind client ids to logins (anonymous, as
many home brokers are): a client connecting with the appliance's client id again and again is noticed in
``/api/v1/status``, ``/metrics`` and ``edge-app selftest``."""
from __future__ import annotations

import io

import pytest

from edge_app.commands.selftest import PASS, WARN, Report, check_session_takeover
from edge_app.config.file import load_config
from tests.support.takeover import TAKEN_OVER_S, Thief
from testkit.waiting import wait_for

pytestmark = pytest.mark.slow

TOKEN = "takeover-token-0123456789abcdef"


def _selftest_line(app):
    report = Report(stream=io.StringIO())
    check_session_takeover(report, load_config(app.config_path))
    return report.results


def test_a_client_taking_the_appliances_session_over_is_reported(appliance_factory, model_path, mosquitto_factory):
    broker = mosquitto_factory()
    app = appliance_factory([{"id": "cam1", "source": "test://bars?width=160&height=120&fps=2", "detect": False}],
                            model_path, broker, api={"token": TOKEN}, mqtt={"keepalive": 5})
    wait_for(lambda: app.get("/api/v1/status").json()["mqtt"]["connected"], 60, "the appliance to connect")
    assert app.get("/api/v1/status").json()["mqtt"]["takeover_warning"] is None
    assert "edge_app_mqtt_session_taken_over 0.0" in app.get("/metrics").text
    assert [(status, name) for status, name, _ in _selftest_line(app)] == [(PASS, "MQTT session")]

    thief = Thief(broker, "edge-app-e2e")  # the appliance's client id: edge-app-<device_id>
    try:
        mqtt = wait_for(lambda: (lambda m: m if m["takeover_warning"] else None)(app.get("/api/v1/status").json()["mqtt"]),
                        TAKEN_OVER_S, "the takeover warning in the status")
        assert "'edge-app-e2e'" in mqtt["takeover_warning"] and mqtt["closed_by_broker"] >= 3
        assert "edge_app_mqtt_session_taken_over 1.0" in app.get("/metrics").text
        [(status, name, detail)] = _selftest_line(app)
        assert (status, name) == (WARN, "MQTT session") and "use_username_as_clientid" in detail
    finally:
        thief.stop()
