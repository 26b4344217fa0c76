"""Home Assistant MQTT discovery: the payload HA would read, and what a real Mosquitto delivers.

Field names are checked against the options Home Assistant's MQTT documentation lists for each
platform (binary_sensor, sensor, image, switch) and for device-based discovery (``dev``, ``o``,
``cmps``, ``p``). The broker tests subscribe like Home Assistant does: to the discovery prefix,
after the appliance published, and they announce ``online`` on ``homeassistant/status``.
"""
from __future__ import annotations

import json
import time

import paho.mqtt.publish as mqtt_publish
import pytest

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import ConfigError, ConfigFile, parse_config
from edge_app.config_change.changes import ChangeRules
from edge_app.mqtt import ha_discovery
from edge_app.mqtt.topics import Topics
from tests.mqtt.conftest import VERSION
from tests.mqtt.helpers import wait_until

ROOT = "edge_app/dev1"
DISCOVERY = "homeassistant/device/dev1/config"
LABELS = ["person", "car"]

# From Home Assistant's MQTT integration documentation (full names; abbreviations are not used here).
AVAILABILITY = {"availability_topic", "availability_template", "payload_available", "payload_not_available"}
COMMON = ({"p", "unique_id", "name", "icon", "object_id", "enabled_by_default", "entity_category",
           "json_attributes_topic", "json_attributes_template"} | AVAILABILITY)
DOCUMENTED = {
    "binary_sensor": COMMON | {"state_topic", "value_template", "device_class", "payload_on", "payload_off"},
    "sensor": COMMON | {"state_topic", "value_template", "device_class", "state_class", "unit_of_measurement"},
    "image": COMMON | {"image_topic", "content_type", "image_encoding"},
    "switch": COMMON | {"command_topic", "state_topic", "payload_on", "payload_off", "state_on", "state_off"},
}
DEVICE_KEYS = {"ids", "name", "mf", "mdl", "sw", "hw", "sn", "cu", "sa"}
ORIGIN_KEYS = {"name", "sw", "url"}


def _raw(cameras=None, **extra):
    return {
        "device_id": "dev1",
        "cameras": cameras if cameras is not None else [
            {"id": "front", "source": "test://box",
             "zones": [{"name": "drive", "polygon": [[0, 0], [1, 0], [1, 1]], "labels": ["car"]},
                       {"name": "porch", "polygon": [[0, 0], [0.5, 0], [0.5, 0.5]]}],
             "lines": [{"name": "gate", "points": [[0.5, 0], [0.5, 1]]}]},
            {"id": "back", "source": "test://box"},
        ],
        "model": {"path": "m.onnx"},
        "homeassistant": {"enabled": True},
        **extra,
    }


def _build(raw=None, labels=LABELS):
    config = parse_config(raw or _raw())
    return ha_discovery.build_discovery(config, Topics("edge_app", "dev1"), VERSION, labels)


def _by_topic(message):
    out = {}
    for body in message["cmps"].values():
        for key in ("state_topic", "image_topic"):
            if key in body:
                out.setdefault((body["p"], body[key]), []).append(body)
    return out


# -- the payload ------------------------------------------------------------------------------------
def test_every_component_has_a_platform_a_unique_id_and_only_documented_options():
    message = _build()
    assert set(message) == {"dev", "o", "cmps"}
    assert set(message["dev"]) <= DEVICE_KEYS and message["dev"]["ids"] and message["dev"]["sw"] == VERSION
    assert set(message["o"]) <= ORIGIN_KEYS and message["o"]["name"] == "edge-app"
    ids = [body["unique_id"] for body in message["cmps"].values()]
    assert len(ids) == len(set(ids))
    for key, body in message["cmps"].items():
        assert all(ch.isalnum() or ch in "_-" for ch in key), key
        assert body["p"] in DOCUMENTED, body
        assert set(body) <= DOCUMENTED[body["p"]], set(body) - DOCUMENTED[body["p"]]
        assert body["unique_id"].startswith("dev1_")
        assert body["availability_topic"] == f"{ROOT}/status"
        assert body["availability_template"] == "{{ value_json.state }}"
        assert (body["payload_available"], body["payload_not_available"]) == ("online", "offline")


def test_entities_point_at_the_spec_topics():
    message = _build()
    topics = _by_topic(message)
    for cam in ("front", "back"):
        for label in LABELS:
            objects = f"{ROOT}/cameras/{cam}/objects/{label}"
            [occupancy] = topics[("binary_sensor", objects)]
            assert occupancy["device_class"] == "occupancy"
            assert "value_json.count > 0" in occupancy["value_template"]
            [count] = topics[("sensor", objects)]
            assert count["value_template"] == "{{ value_json.count }}"
            [image] = topics[("image", f"{ROOT}/cameras/{cam}/{label}/snapshot")]
            assert image["content_type"] == "image/jpeg"
    # zones: their own labels, or every event label when the zone names none
    assert ("sensor", f"{ROOT}/zones/drive/car") in topics and ("sensor", f"{ROOT}/zones/drive/person") not in topics
    assert {("sensor", f"{ROOT}/zones/porch/{label}") for label in LABELS} <= set(topics)
    line = topics[("sensor", f"{ROOT}/cameras/front/lines/gate")]
    assert sorted(body["value_template"] for body in line) == ["{{ value_json['in'] }}", "{{ value_json['out'] }}"]
    switches = [body for body in message["cmps"].values() if body["p"] == "switch"]
    assert {(s["command_topic"], s["state_topic"], s["payload_on"], s["payload_off"]) for s in switches} == {
        (f"{ROOT}/cameras/{cam}/detect/set", f"{ROOT}/cameras/{cam}/detect/state", "ON", "OFF") for cam in ("front", "back")}
    motion = [body for body in message["cmps"].values() if body.get("device_class") == "motion"]
    assert {(m["p"], m["state_topic"], m["payload_on"], m["payload_off"]) for m in motion} == {
        ("binary_sensor", f"{ROOT}/cameras/{cam}/motion", "ON", "OFF") for cam in ("front", "back")}
    alerts = {cam: topics[("sensor", f"{ROOT}/cameras/{cam}/review/alerts")] for cam in ("front", "back")}
    assert all(len(found) == 1 and found[0]["value_template"] == "{{ value_json.count }}" for found in alerts.values())
    per_camera = 3 * len(LABELS) + 3  # + detection switch, motion, unreviewed alerts
    health = len(ha_discovery.health_entities(Topics("edge_app", "dev1")))
    per_zone = 3  # occupied, objects, mean dwell (R/zones/<zone>); none of its zones sets loitering or a limit
    assert len(message["cmps"]) == 2 * per_camera + 1 + len(LABELS) + 2 + 2 * per_zone + health


@pytest.mark.parametrize("rules, kinds", [
    ({}, {("binary_sensor", "occupancy"), ("sensor", "objects"), ("sensor", "mean dwell")}),
    ({"loitering_s": 30}, {("binary_sensor", "occupancy"), ("sensor", "objects"), ("sensor", "mean dwell"),
                           ("binary_sensor", "loitering")}),
    ({"max_objects": 2}, {("binary_sensor", "occupancy"), ("sensor", "objects"), ("sensor", "mean dwell"),
                          ("binary_sensor", "over capacity")}),
])
def test_zone_occupancy_and_loitering_entities_read_the_zone_topic(rules, kinds):
    raw = _raw(cameras=[{"id": "front", "source": "test://box", "zones": [
        {"name": "drive", "polygon": [[0, 0], [1, 0], [1, 1]], "labels": ["person"], **rules}]}])
    on_zone = [body for body in _build(raw)["cmps"].values() if body.get("state_topic") == f"{ROOT}/zones/drive"]
    assert {(body["p"], body["name"].removeprefix("drive ")) for body in on_zone} == kinds
    templates = {body["name"]: body["value_template"] for body in on_zone}
    assert templates["drive objects"] == "{{ value_json.occupancy }}"
    assert templates["drive mean dwell"] == "{{ value_json.mean_dwell_s }}"
    if "loitering_s" in rules:
        assert templates["drive loitering"] == "{{ 'ON' if value_json.loitering > 0 else 'OFF' }}"
    if "max_objects" in rules:
        assert templates["drive over capacity"] == "{{ 'ON' if value_json.over_capacity else 'OFF' }}"


def test_device_health_entities_read_r_health():
    message = _build()
    on_health = _by_topic(message)
    sensors = {body["name"]: body for body in on_health[("sensor", f"{ROOT}/health")]}
    assert set(sensors) == {"Temperature", "GPU load", "Disk used", "Power mode"}
    assert sensors["Temperature"]["device_class"] == "temperature" and sensors["Temperature"]["unit_of_measurement"] == "°C"
    assert sensors["Disk used"]["value_template"] == "{{ value_json.summary.disk_used_percent }}"
    [problem] = on_health[("binary_sensor", f"{ROOT}/health")]
    assert problem["device_class"] == "problem" and problem["json_attributes_topic"] == f"{ROOT}/health"
    assert all(body["entity_category"] == "diagnostic" for body in [*sensors.values(), problem])


def test_no_motion_sensor_where_motion_gating_is_off():
    raw = _raw()
    raw["cameras"][1]["motion"] = {"enabled": False}
    assert [b["state_topic"] for b in _build(raw)["cmps"].values() if b.get("device_class") == "motion"] == [
        f"{ROOT}/cameras/front/motion"]
    assert not any(b.get("device_class") == "motion" for b in _build(dict(raw, motion={"enabled": False}))["cmps"].values())


def test_ids_do_not_depend_on_the_order_of_cameras_zones_or_labels():
    raw = _raw()
    reordered = _raw(cameras=[raw["cameras"][1], {**raw["cameras"][0], "zones": raw["cameras"][0]["zones"][::-1]}])
    assert _build(reordered, labels=LABELS[::-1])["cmps"] == _build(raw)["cmps"]


def test_a_removed_camera_zone_or_line_vanishes_and_is_named_for_removal():
    before = _build()
    raw = _raw()
    raw["cameras"] = [{**raw["cameras"][0], "zones": raw["cameras"][0]["zones"][:1], "lines": []}]
    after = _build(raw)
    gone = set(before["cmps"]) - set(after["cmps"])
    assert not any("back" in json.dumps(body) for body in after["cmps"].values())
    assert not any("porch" in json.dumps(body) or "gate" in json.dumps(body) for body in after["cmps"].values())
    # the camera's own (alerts too), its zone's per label and its own three, the line's
    assert len(gone) == (3 * len(LABELS) + 3) + len(LABELS) + 3 + 2
    removal = ha_discovery.removal_message(after, ha_discovery.platforms(before))
    assert {key: body for key, body in removal["cmps"].items() if key in gone} == {
        key: {"p": before["cmps"][key]["p"]} for key in gone}
    assert ha_discovery.removal_message(after, ha_discovery.platforms(after)) is None
    assert set(ha_discovery.live_platforms(removal)) == set(after["cmps"])


def test_keys_of_different_parts_never_collide():
    assert ha_discovery.component_key("count", "cam_a", "b") != ha_discovery.component_key("count", "cam", "a_b")
    key = ha_discovery.component_key("count", "front", "traffic light")
    assert key.startswith("count_front_traffic_light_") and key == ha_discovery.component_key("count", "front", "traffic light")


def test_event_labels_come_from_events_then_model_classes_then_the_model():
    model_labels = ["person", "bicycle", "car"]
    assert ha_discovery.event_labels(parse_config(_raw()), model_labels) == model_labels
    assert ha_discovery.event_labels(parse_config(_raw(events={"labels": ["car"]})), model_labels) == ["car"]
    classes = _raw()
    classes["model"]["classes"] = ["person"]
    assert ha_discovery.event_labels(parse_config(classes), model_labels) == ["person"]


def test_event_labels_of_several_models_are_those_of_all_of_them():
    # What the appliance passes: every label of every running model, once each.
    all_labels = ["person", "car", "plate"]
    two = _raw()
    two["models"] = [{"name": "plates", "path": "p.onnx", "classes": ["plate"]}]
    assert ha_discovery.event_labels(parse_config(two), all_labels) == all_labels, "one model keeps every class"
    two["model"]["classes"] = ["person"]
    assert ha_discovery.event_labels(parse_config(two), all_labels) == ["person", "plate"]


@pytest.mark.parametrize("prefix", ["home/#", "ha/+/x", "/ha", "ha/", "a//b", "ha\n", ""])
def test_a_discovery_prefix_that_is_not_a_topic_path_is_refused(prefix):
    with pytest.raises(ConfigError, match="discovery_prefix"):
        parse_config(_raw(homeassistant={"enabled": True, "discovery_prefix": prefix}))


def test_discovery_is_off_by_default_and_unknown_keys_are_refused():
    raw = _raw()
    del raw["homeassistant"]
    assert parse_config(raw).homeassistant.enabled is False
    assert parse_config(_raw(homeassistant={"discovery_prefix": "ha/lab"})).homeassistant.discovery_prefix == "ha/lab"
    with pytest.raises(ConfigError):
        parse_config(_raw(homeassistant={"enabled": True, "prefix": "x"}))


# -- against a real Mosquitto -----------------------------------------------------------------------
def send(broker, topic: str, payload: bytes, retain: bool = False) -> None:
    mqtt_publish.single(topic, payload, qos=1, retain=retain, hostname=broker.host, port=broker.port)


def _discoveries(collector):
    return [m for m in collector.messages(DISCOVERY)]


def _started(publisher_factory, broker, raw=None):
    pub = publisher_factory(broker)
    pub.start()
    wait_until(lambda: pub.connected, 5, "connected")
    pub.set_ha_discovery(parse_config(raw or _raw()), LABELS)
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "discovery acknowledged")
    return pub


def test_a_late_subscriber_gets_the_retained_discovery_and_it_is_sent_again_on_ha_birth(
        mosquitto_broker, publisher_factory, mqtt_collector):
    pub = _started(publisher_factory, mosquitto_broker)
    ha = mqtt_collector(mosquitto_broker, "homeassistant/#")
    first = ha.wait_for_message(DISCOVERY)
    assert first.retain and first.qos == 1
    assert first.json() == _build()
    assert pub.set_ha_discovery(parse_config(_raw()), LABELS) is False  # unchanged: not sent again

    send(mosquitto_broker, "homeassistant/status", b"offline")
    send(mosquitto_broker, "homeassistant/status", b"online")
    ha.wait_for(lambda msgs: len([m for m in msgs if m.topic == DISCOVERY]) >= 2, 5)
    again = _discoveries(ha)[1]
    assert not again.retain  # a live publication, not the broker's stored copy
    assert again.json() == first.json()
    assert len(_discoveries(ha)) == 2  # "offline" did not trigger anything


def test_a_removed_camera_is_withdrawn_then_left_out(mosquitto_broker, publisher_factory, mqtt_collector):
    pub = _started(publisher_factory, mosquitto_broker)
    ha = mqtt_collector(mosquitto_broker, DISCOVERY)
    ha.wait_for_message(DISCOVERY)
    smaller = _raw()
    smaller["cameras"] = smaller["cameras"][:1]
    assert pub.set_ha_discovery(parse_config(smaller), LABELS)
    removal, final = ha.wait_for_count(3, DISCOVERY)[1:]
    expected = _build(smaller)
    gone = set(_build()["cmps"]) - set(expected["cmps"])
    assert gone and all(removal.json()["cmps"][key] == {"p": _build()["cmps"][key]["p"]} for key in gone)
    assert final.json() == expected
    late = mqtt_collector(mosquitto_broker, DISCOVERY)
    assert late.wait_for_message(DISCOVERY).json() == expected


def test_components_removed_while_the_appliance_was_down_are_withdrawn(
        mosquitto_broker, publisher_factory, mqtt_collector):
    first = _started(publisher_factory, mosquitto_broker)
    first.stop(timeout_s=2)
    ha = mqtt_collector(mosquitto_broker, DISCOVERY)
    ha.wait_for_message(DISCOVERY)
    smaller = _raw()
    smaller["cameras"] = smaller["cameras"][:1]
    _started(publisher_factory, mosquitto_broker, smaller)
    before = _build()
    gone = set(before["cmps"]) - set(_build(smaller)["cmps"])
    assert gone

    def withdrawn(msgs):
        return any(all(m.json()["cmps"].get(key) == {"p": before["cmps"][key]["p"]} for key in gone) for m in msgs[1:])

    ha.wait_for(withdrawn, 5)
    late = mqtt_collector(mosquitto_broker, DISCOVERY)
    assert late.wait_for_message(DISCOVERY).json() == _build(smaller)


def test_turning_discovery_off_clears_the_retained_message(mosquitto_broker, publisher_factory, mqtt_collector):
    pub = _started(publisher_factory, mosquitto_broker)
    off = _raw(homeassistant={"enabled": False})
    assert pub.set_ha_discovery(parse_config(off), LABELS)
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "cleared")
    late = mqtt_collector(mosquitto_broker, ["homeassistant/#", f"{ROOT}/status"])
    late.wait_for_message(f"{ROOT}/status")
    assert late.messages(DISCOVERY) == []
    send(mosquitto_broker, "homeassistant/status", b"online")
    assert pub.set_ha_discovery(parse_config(off), LABELS) is False


def test_switch_round_trip_through_a_real_appliance(mosquitto_broker, mqtt_collector, model_path, tmp_path):
    raw = {
        "device_id": "dev1",
        "cameras": [{"id": "front", "source": "test://box?fps=5&width=320&height=240"}],
        "model": {"path": str(model_path), "engine_dir": str(tmp_path / "engines"), "backend": "onnxruntime"},
        "mqtt": {"host": mosquitto_broker.host, "port": mosquitto_broker.port},
        "api": {"enabled": False},
        "events": {"labels": ["person"]},
        "homeassistant": {"enabled": True},
    }
    appliance = Appliance(parse_config(raw), change_rules=ChangeRules(config_file=ConfigFile(tmp_path / "config.yaml")))
    appliance.start()
    try:
        ha = mqtt_collector(mosquitto_broker, ["homeassistant/#", f"{ROOT}/cameras/+/detect/state"])
        discovery = ha.wait_for_message(DISCOVERY, timeout_s=10).json()
        [switch] = [body for body in discovery["cmps"].values() if body["p"] == "switch"]
        assert ha.wait_for_message(switch["state_topic"]).payload == b"ON"
        ha.clear()
        send(mosquitto_broker, switch["command_topic"], switch["payload_off"].encode())
        state = ha.wait_for_message(switch["state_topic"], timeout_s=10)
        assert state.payload == b"OFF"
        wait_until(lambda: appliance.current_config().camera("front").detect is False, 5, "detection off")
        assert "detect: false" in (tmp_path / "config.yaml").read_text()
        assert ha.messages(DISCOVERY) == []  # the switch changes no entity: discovery is not re-sent
    finally:
        appliance.stop()


def test_a_renamed_device_leaves_no_old_device_behind(mosquitto_broker, publisher_factory, mqtt_collector):
    old = _started(publisher_factory, mosquitto_broker)
    old.withdraw_ha_discovery_unless("dev2")
    old.stop(timeout_s=2)
    late = mqtt_collector(mosquitto_broker, ["homeassistant/#", f"{ROOT}/status"])
    late.wait_for_message(f"{ROOT}/status")
    assert late.messages(DISCOVERY) == []


def test_a_new_publisher_of_the_same_device_keeps_the_discovery(mosquitto_broker, publisher_factory, mqtt_collector):
    old = _started(publisher_factory, mosquitto_broker)
    old.withdraw_ha_discovery_unless("dev1")
    old.stop(timeout_s=2)
    late = mqtt_collector(mosquitto_broker, DISCOVERY)
    assert late.wait_for_message(DISCOVERY).json() == _build()


def test_a_flood_of_online_messages_does_not_make_a_flood_of_discovery(mosquitto_broker, publisher_factory, mqtt_collector):
    pub = _started(publisher_factory, mosquitto_broker)
    ha = mqtt_collector(mosquitto_broker, DISCOVERY)
    ha.wait_for_message(DISCOVERY)
    for _ in range(50):
        send(mosquitto_broker, "homeassistant/status", b"online")
    ha.wait_for_count(2, DISCOVERY)
    time.sleep(1.0)  # every "online" has reached the publisher by now (each send waited for its PUBACK)
    wait_until(lambda: pub.stats()["queued"] == 0, 5, "sent")
    time.sleep(0.3)
    assert len(ha.messages(DISCOVERY)) == 2
