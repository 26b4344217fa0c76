"""Config rollouts through the REST API to simulated appliances on a real broker, both engines."""
from __future__ import annotations

import json

import pytest

from edge_app.fleet_service.rollouts import compose_patches
from testkit.waiting import wait_for


def _tally(**counts: int) -> dict:
    return {**dict.fromkeys(("pending", "applied", "rejected", "timed_out", "cancelled"), 0), **counts}


def _rollout(fleet, rollout_id: str) -> dict:
    response = fleet.get(f"/api/v1/rollouts/{rollout_id}")
    assert response.status_code == 200, response.text
    return response.json()


def _settled(fleet, rollout_id: str):
    body = _rollout(fleet, rollout_id)
    return body if body["devices"]["pending"] == 0 else None


def _online(fleet, n: int) -> None:
    wait_for(lambda: len(fleet.get("/api/v1/devices?state=online").json()["devices"]) == n, 10, f"{n} devices online")


def test_a_rollout_to_all_is_applied_except_where_rejected_with_the_error_shown(fleet_factory, sim_devices):
    fleet = fleet_factory()
    good = [sim_devices(fleet.prefix, f"edge-{i}") for i in range(3)]
    picky = sim_devices(fleet.prefix, "edge-picky", reject_keys=["model"])
    _online(fleet, 4)

    response = fleet.patch("/api/v1/fleet/config", {"devices": "all", "patch": {"model": {"conf_threshold": 0.4}}})
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["versions"] == {"edge-0": 1, "edge-1": 1, "edge-2": 1, "edge-picky": 1}

    result = wait_for(lambda: _settled(fleet, body["rollout_id"]), 10, "every device reported")
    assert result["devices"] == _tally(applied=3, rejected=1)
    by_device = {r["device_id"]: r for r in result["results"]}
    assert by_device["edge-picky"]["status"] == "rejected"
    assert by_device["edge-picky"]["errors"] == [{"loc": "model", "msg": "invalid value"}]
    assert all(d.config == {"model": {"conf_threshold": 0.4}} for d in good)
    assert picky.config == {}

    devices = {d["device_id"]: d for d in fleet.get("/api/v1/devices").json()["devices"]}
    assert devices["edge-0"]["config"] == {"desired_version": 1, "reported_version": 1, "status": "applied"}
    assert devices["edge-picky"]["config"] == {"desired_version": 1, "reported_version": 1, "status": "rejected"}
    assert fleet.device("edge-picky")["config"]["errors"] == [{"loc": "model", "msg": "invalid value"}]
    listed = fleet.get("/api/v1/rollouts").json()["rollouts"]
    assert [r["rollout_id"] for r in listed] == [body["rollout_id"]]
    assert listed[0]["devices"] == _tally(applied=3, rejected=1)


def test_a_device_away_during_two_rollouts_applies_both_when_it_returns(fleet_factory, sim_devices, mosquitto_broker,
                                                                        mqtt_collector):
    fleet = fleet_factory()
    stay = sim_devices(fleet.prefix, "edge-stay")
    away = sim_devices(fleet.prefix, "edge-away")
    _online(fleet, 2)
    away.stop()
    wait_for(lambda: fleet.device("edge-away")["state"] == "offline", 5, "edge-away offline")

    first = fleet.patch("/api/v1/fleet/config", {"devices": ["edge-stay", "edge-away"],
                                                  "patch": {"mqtt": {"publish_empty": True}}}).json()
    second = fleet.patch("/api/v1/devices/edge-away/config", {"logging": {"level": "DEBUG"}})
    assert second.status_code == 202
    assert second.json()["version"] == 2
    wait_for(lambda: _rollout(fleet, first["rollout_id"])["devices"]["applied"] == 1, 5, "edge-stay applied")
    assert _rollout(fleet, first["rollout_id"])["devices"] == _tally(pending=1, applied=1)
    assert stay.config == {"mqtt": {"publish_empty": True}}
    # Both rollouts are on the broker before the device returns.
    watcher = mqtt_collector(mosquitto_broker, f"{fleet.prefix}/edge-away/config/desired")
    watcher.wait_for_message(match=lambda m: m.json()["version"] == 2, timeout_s=5)

    back = sim_devices(fleet.prefix, "edge-away")  # the same device id starts again
    wait_for(lambda: _settled(fleet, second.json()["rollout_id"]), 10, "the returning device reported")
    assert back.config == {"mqtt": {"publish_empty": True}, "logging": {"level": "DEBUG"}}
    assert [r["version"] for r in back.reports] == [2]  # only the newest retained version, carrying both
    assert _rollout(fleet, first["rollout_id"])["devices"] == _tally(applied=2)
    assert fleet.device("edge-away")["config"]["status"] == "applied"


def test_a_spoofed_report_of_2_53_moves_nothing_and_the_next_rollout_is_applied(fleet_factory, sim_devices,
                                                                                  mosquitto_broker, mqtt_collector):
    fleet = fleet_factory()
    device = sim_devices(fleet.prefix, "edge-a")
    _online(fleet, 1)
    # Anyone on the broker (or the device itself under the documented ACL) can claim a version.
    device.publish("config/reported", {"version": 2 ** 53, "status": "applied", "errors": [], "ts": 1.0}, retain=True)
    wait_for(lambda: fleet.get("/api/v1/status").json()["mqtt"]["unissued_reports"] == 1, 10, "the report ignored")
    assert fleet.device("edge-a")["config"]["reported_version"] == 0
    assert fleet.device("edge-a")["config"]["unissued_version"] == 2 ** 53
    watcher = mqtt_collector(mosquitto_broker, f"{fleet.prefix}/edge-a/config/desired")
    response = fleet.patch("/api/v1/devices/edge-a/config", {"model": {"conf_threshold": 0.4}})
    assert response.json()["version"] == 1
    assert json.loads(watcher.wait_for_message(timeout_s=5).payload)["version"] == 1
    result = wait_for(lambda: _settled(fleet, response.json()["rollout_id"]), 10, "the device reported")
    assert result["devices"] == _tally(applied=1)
    assert device.config == {"model": {"conf_threshold": 0.4}}


def test_versions_no_device_answers_time_out_with_the_reason_and_a_reset_moves_on(fleet_factory, sim_devices):
    fleet = fleet_factory(rollouts={"timeout_s": 1})
    away = sim_devices(fleet.prefix, "edge-away")
    ahead = sim_devices(fleet.prefix, "edge-ahead")
    _online(fleet, 2)
    away.stop()
    # What an appliance reported to an earlier fleet database: above anything this fleet issued.
    ahead.applied_version = 7
    ahead.publish("config/reported", {"version": 7, "status": "applied", "errors": [], "ts": 1.0}, retain=True)
    wait_for(lambda: fleet.device("edge-ahead")["config"].get("unissued_version") == 7, 10, "version 7 seen")
    assert fleet.device("edge-away")["state"] == "offline"

    first = fleet.patch("/api/v1/fleet/config", {"devices": "all", "patch": {"model": {"conf_threshold": 0.4}}}).json()
    assert first["versions"] == {"edge-ahead": 1, "edge-away": 1}  # the ahead device ignores its 1
    result = wait_for(lambda: (lambda r: r if r["devices"]["timed_out"] == 2 else None)(
        _rollout(fleet, first["rollout_id"])), 10, "both timed out")
    reasons = {r["device_id"]: r["errors"][0]["msg"] for r in result["results"]}
    assert "no report of version 1 within 1 s: the device is offline" == reasons["edge-away"]
    assert "reported version 7, which this fleet never issued" in reasons["edge-ahead"]
    assert "/api/v1/devices/edge-ahead/config/reset" in reasons["edge-ahead"]

    reset = fleet.post("/api/v1/devices/edge-ahead/config/reset", {"version": 7})
    assert reset.status_code == 200, reset.text
    assert reset.json() == {"device_id": "edge-ahead", "version": 7, "cancelled": 1}
    second = fleet.patch("/api/v1/devices/edge-ahead/config", {"logging": {"level": "DEBUG"}}).json()
    assert second["version"] == 8
    wait_for(lambda: _settled(fleet, second["rollout_id"]), 10, "version 8 applied")
    assert ahead.config == {"logging": {"level": "DEBUG"}}
    assert _rollout(fleet, first["rollout_id"])["devices"] == _tally(timed_out=1, cancelled=1)

    back = sim_devices(fleet.prefix, "edge-away")  # a late answer still settles its version
    wait_for(lambda: _rollout(fleet, first["rollout_id"])["devices"]["applied"] == 1, 10, "the late report")
    assert back.config == {"model": {"conf_threshold": 0.4}}


@pytest.mark.parametrize("body, status, word", [
    ({"version": 2 ** 53}, 400, "2^53"), ({"version": -1}, 400, "version"), ({"version": "7"}, 400, "version"),
    ({"version": True}, 400, "version"), ({}, 400, "version"), ({"version": 1, "x": 2}, 400, "version"),
])
def test_bad_resets_answer_400_and_change_nothing(fleet_factory, sim_devices, body, status, word):
    fleet = fleet_factory()
    sim_devices(fleet.prefix, "edge-a")
    _online(fleet, 1)
    response = fleet.post("/api/v1/devices/edge-a/config/reset", body)
    assert response.status_code == status, response.text
    assert word in response.json()["error"]
    assert fleet.device("edge-a")["config"]["desired_version"] == 0
    assert fleet.post("/api/v1/devices/edge-nobody/config/reset", {"version": 1}).status_code == 404


@pytest.mark.parametrize("path, body, status, word", [
    ("/api/v1/devices/edge-nobody/config", {"a": 1}, 404, "unknown device"),
    ("/api/v1/devices/edge-a/config", {}, 400, "empty"),
    ("/api/v1/devices/edge-a/config", [1], 400, "JSON object"),
    ("/api/v1/fleet/config", {"devices": ["edge-a", "edge-nobody"], "patch": {"a": 1}}, 400, "edge-nobody"),
    ("/api/v1/fleet/config", {"devices": "some", "patch": {"a": 1}}, 400, "devices"),
    ("/api/v1/fleet/config", {"devices": ["a/b"], "patch": {"a": 1}}, 400, "device id"),
    ("/api/v1/fleet/config", {"devices": "all"}, 400, "patch"),
    ("/api/v1/fleet/config", {"devices": "all", "patch": {"a": 1}, "extra": 1}, 400, "body"),
])
def test_bad_rollouts_answer_errors_and_change_nothing(fleet_factory, sim_devices, path, body, status, word):
    fleet = fleet_factory()
    sim_devices(fleet.prefix, "edge-a")
    _online(fleet, 1)
    response = fleet.patch(path, body)
    assert response.status_code == status, response.text
    assert word in response.json()["error"]
    assert fleet.get("/api/v1/rollouts").json()["rollouts"] == []
    assert fleet.device("edge-a")["config"]["desired_version"] == 0


@pytest.mark.parametrize("first, second, combined", [
    ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    ({"a": {"x": 1}}, {"a": {"y": 2}}, {"a": {"x": 1, "y": 2}}),
    ({"a": {"x": 1}}, {"a": {"x": None}}, {"a": {"x": None}}),
    ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),
    ({"a": 1}, {"a": {"z": 1}}, {"a": {"z": 1}}),
])
def test_composed_patches_do_what_both_do_in_order(first, second, combined):
    assert compose_patches(first, second) == combined


def test_desired_configurations_are_signed_for_devices_with_a_key_and_the_key_never_shows(
        fleet_factory, sim_devices, mqtt_collector, mosquitto_broker):
    from edge_app.fleet_protocol.desired_signature import signature_valid

    key = "edge-keyed-desired-key-0123456789ab"
    fleet = fleet_factory(desired_keys={"edge-keyed": key})
    sim_devices(fleet.prefix, "edge-keyed")
    sim_devices(fleet.prefix, "edge-plain")
    _online(fleet, 2)
    desired = mqtt_collector(mosquitto_broker, f"{fleet.prefix}/+/config/desired")
    response = fleet.patch("/api/v1/fleet/config", {"devices": "all", "patch": {"model": {"conf_threshold": 0.4}}})
    assert response.status_code == 202, response.text
    keyed = desired.wait_for_message(f"{fleet.prefix}/edge-keyed/config/desired", timeout_s=10).json()
    plain = desired.wait_for_message(f"{fleet.prefix}/edge-plain/config/desired", timeout_s=10).json()
    assert signature_valid(key, "edge-keyed", keyed["epoch"], keyed["issued_at_ms"], keyed["version"], keyed["patch"],
                           keyed["sig"])
    assert "sig" not in plain
    config = fleet.service.config
    assert key not in repr(config) and key not in json.dumps(config.model_dump(mode="json"))


def _retained_desired(mosquitto_broker, mqtt_collector, topic: str):
    """The desired message the broker holds for a device now (what an appliance coming back gets), or None."""
    collector = mqtt_collector(mosquitto_broker, topic)
    try:
        found = collector.wait_until(lambda: [m for m in collector.messages(topic) if m.retain and m.payload], 1.5,
                                     "a retained message")
    except AssertionError:
        return None
    finally:
        collector.stop()
    return found[-1].json()


def test_a_pending_rollout_cleared_or_replaced_on_the_broker_is_published_again(
        fleet_factory, sim_devices, mosquitto_broker, mqtt_collector):
    import paho.mqtt.publish as publish

    key = "edge-away-desired-key-0123456789abc"
    fleet = fleet_factory(desired_keys={"edge-away": key})
    sim_devices(fleet.prefix, "edge-away").stop()  # offline: its rollout stays pending
    wait_for(lambda: fleet.device("edge-away").get("state") == "offline", 10, "offline")
    response = fleet.patch("/api/v1/devices/edge-away/config", {"model": {"conf_threshold": 0.4}})
    assert response.status_code == 202, response.text
    topic = f"{fleet.prefix}/edge-away/config/desired"
    first = wait_for(lambda: _retained_desired(mosquitto_broker, mqtt_collector, topic), 10, "the rollout retained")
    for attack in (b"", json.dumps({"version": 1, "patch": {}}).encode()):  # cleared, then replaced
        publish.single(topic, attack, qos=1, retain=True, hostname=mosquitto_broker.host, port=mosquitto_broker.port)
        again = wait_for(lambda: (lambda m: m if m and m.get("patch") else None)(
            _retained_desired(mosquitto_broker, mqtt_collector, topic)), 15, "the rollout published again")
        assert (again["version"], again["patch"], again["epoch"]) == (1, first["patch"], first["epoch"])
        assert again["issued_at_ms"] >= first["issued_at_ms"]
        from edge_app.fleet_protocol.desired_signature import signature_valid
        assert signature_valid(key, "edge-away", again["epoch"], again["issued_at_ms"], 1, again["patch"], again["sig"])
    # A flood of clearing messages costs at most about one publication a second.
    watch = mqtt_collector(mosquitto_broker, topic)
    publish.multiple([{"topic": topic, "payload": b"", "qos": 1, "retain": True}] * 300,
                     hostname=mosquitto_broker.host, port=mosquitto_broker.port)
    wait_for(lambda: _retained_desired(mosquitto_broker, mqtt_collector, topic), 15, "the rollout retained again")
    republished = len([m for m in watch.messages(topic) if m.payload])
    print(f"300 clearing messages: the rollout published again {republished} time(s)")
    assert republished <= 10


def test_a_reset_starts_a_new_epoch_for_the_device(fleet_factory, sim_devices, mosquitto_broker, mqtt_collector):
    fleet = fleet_factory()
    sim_devices(fleet.prefix, "edge-a")
    _online(fleet, 1)
    desired = mqtt_collector(mosquitto_broker, f"{fleet.prefix}/+/config/desired")
    topic = f"{fleet.prefix}/edge-a/config/desired"
    assert fleet.patch("/api/v1/devices/edge-a/config", {"model": {"conf_threshold": 0.4}}).status_code == 202
    first = desired.wait_for_message(topic, timeout_s=10).json()
    assert first["version"] == 1 and len(first["epoch"]) == 32
    assert fleet.post("/api/v1/devices/edge-a/config/reset", {"version": 0}).status_code == 200
    desired.clear()
    assert fleet.patch("/api/v1/devices/edge-a/config", {"model": {"conf_threshold": 0.5}}).status_code == 202
    second = wait_for(lambda: [m.json() for m in desired.messages(topic) if m.payload], 10, "the next rollout")[-1]
    assert second["version"] == 1 and second["epoch"] != first["epoch"]
