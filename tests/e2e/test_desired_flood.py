"""A flood on ``R/config/desired`` against a real ``edge-app run`` and a real Mosquitto: no event lost.

The attack: with ``fleet.remote_config: true`` and ``fleet.desired_key`` on an anonymous broker
(the documented safe setting), ``yes '{}' | head -n 150000 | mosquitto_pub -l -t
edge_app/<id>/config/desired`` while people walk across the camera. Each refused message used to
publish a retained QoS 1 refusal report: tens of thousands of reports filled the outbox and events
were dropped. Now every event the appliance stored reaches the broker, refusal reports come at
most one per interval, and their counts add up to what the status and the metrics say.
"""
from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from edge_app.fleet_agent.desired.refusal_reports import REPORT_EVERY_S
from testkit.waiting import wait_until
from testkit.broker import MqttCollector
from tests.support.mqtt_fuzz import line_flood

pytestmark = pytest.mark.slow

DEVICE = "flood1"
ROOT = f"edge_app/{DEVICE}"
KEY = "flood-desired-key-0123456789abcdef0123"
FLOOD_LINES = 150_000


def _flood(broker, lines: int) -> float:
    return line_flood(broker.host, broker.port, f"{ROOT}/config/desired", lines)


def _ended_ids(collector: MqttCollector) -> set:
    return {m["after"]["id"] for m in collector.payloads(f"{ROOT}/events") if m["type"] == "end"}


def _metric(app, name: str) -> float:
    for family in text_string_to_metric_families(app.get("/metrics").text):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    raise AssertionError(f"no metric {name}")


def test_a_refusal_flood_loses_no_event_and_is_answered_by_few_reports(appliance_factory, model_path, walking_clip,
                                                                      mosquitto_factory, tmp_path):
    broker = mosquitto_factory()  # anonymous clients welcome, as in the attack
    events = MqttCollector(broker.host, broker.port, [f"{ROOT}/events", f"{ROOT}/config/reported"]).start()
    try:
        camera = {"id": "walk", "source": str(walking_clip.path), "loop": True, "realtime": True, "fps_limit": 5}
        app = appliance_factory([camera], model_path, broker, device_id=DEVICE,
                                tracking={"enabled": True}, events={"enabled": True, "dir": str(tmp_path / "events")},
                                fleet={"remote_config": True, "desired_key": KEY})
        events.wait_for_message(f"{ROOT}/events", lambda m: m.json()["type"] == "new", timeout_s=90)

        file_before = app.config_path.read_bytes()
        flood_started_s = time.monotonic()
        flood_s = _flood(broker, FLOOD_LINES)
        # The flood is over; the walk goes on: wait until everything stored has ended and a whole
        # loop of the clip more has passed, so events that started during the flood ended too.
        time.sleep(walking_clip.loop_s + 3)

        def stored_all_ended():
            stored = app.get("/api/v1/events", params={"limit": 500}).json()["events"]
            return stored if stored and all(e["end_time"] is not None for e in stored) else None
        stored = wait_until(stored_all_ended, 60, "every stored event to have ended")
        stored_ids = {e["id"] for e in stored}
        events.wait_until(lambda: stored_ids <= _ended_ids(events), 30,
                          f"the end of each of the {len(stored_ids)} stored events on R/events")
        mqtt_status = app.get("/api/v1/status").json()["mqtt"]
        assert mqtt_status["dropped"] == 0, mqtt_status

        # Refusal reports: at most one per interval (plus the first at once), their counts adding
        # up to the status and the metric once the last one is out.
        def reports_add_up():
            refused = app.get("/api/v1/status").json()["remote_config"]["refused"]
            reports = [m for m in events.payloads(f"{ROOT}/config/reported") if m["version"] is None]
            return reports if refused > 1000 and sum(r["refused"] for r in reports) == refused else None
        reports = wait_until(reports_add_up, 60, "the refusal reports to add up to the status's count")
        refused_status = sum(r["refused"] for r in reports)
        assert all(r["status"] == "rejected" for r in reports)
        window_s = time.monotonic() - flood_started_s
        assert len(reports) <= window_s / REPORT_EVERY_S + 2, (len(reports), flood_s, window_s)
        assert _metric(app, "edge_app_remote_config_refused_total") == refused_status
        assert app.config_path.read_bytes() == file_before  # nothing of the flood was acted on
    finally:
        events.stop()
