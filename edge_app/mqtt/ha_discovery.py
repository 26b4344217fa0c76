"""Home Assistant MQTT discovery of the device (docs/mqtt.md, "Home Assistant"), as plain data.

One device-based discovery message on ``<discovery_prefix>/device/<device_id>/config`` with
``dev``, ``o`` and ``cmps``. Every entity points at a topic the appliance already publishes
(counts, line totals, snapshots, ``detect/state``), so Home Assistant needs nothing but its MQTT
integration.

Component keys and unique ids are derived from the device id, the camera/zone/line name, the
label and the kind of entity, never from list positions: reordering the configuration or
restarting keeps every entity (and its history) in Home Assistant. Home Assistant does not drop a
component that is merely missing from a new device message; :func:`removal_message` names the
ones that went away with only their platform, as its documentation asks, before the full message
is sent again without them.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from edge_app.config.schema import AppConfig
from edge_app.mqtt.topics import Topics

ORIGIN_NAME = "edge-app"
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
AVAILABILITY_TEMPLATE = "{{ value_json.state }}"
COUNT_TEMPLATE = "{{ value_json.count }}"
OCCUPIED_TEMPLATE = "{{ 'ON' if value_json.count > 0 else 'OFF' }}"


def discovery_topic(prefix: str, device_id: str) -> str:
    return f"{prefix}/device/{device_id}/config"


def birth_topic(prefix: str) -> str:
    """Where Home Assistant announces ``online`` when it (re)starts."""
    return f"{prefix}/status"


def event_labels(config: AppConfig, model_labels: Sequence[str]) -> List[str]:
    """The labels that get entities: ``events.labels``, else ``model.classes``, else every model label."""
    labels = config.events.labels or config.model.classes or list(model_labels)
    return list(dict.fromkeys(str(label) for label in labels))


def component_key(*parts: str) -> str:
    """A readable key made only of ``[A-Za-z0-9_-]``, with a hash so distinct parts never collide.

    ("cam_a", "b") and ("cam", "a_b") slug alike; the hash of the exact parts keeps them apart.
    """
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:10]
    slug = "_".join(_SLUG_UNSAFE.sub("_", part).strip("_") for part in parts)
    return f"{slug[:120]}_{digest}"


def build_discovery(config: AppConfig, topics: Topics, version: str, labels: Sequence[str],
                    support_url: Optional[str] = None) -> Dict[str, Any]:
    """The whole discovery message for ``config``; ``labels`` as from :func:`event_labels`."""
    device_id = config.device_id
    availability = {
        "availability_topic": topics.status,
        "availability_template": AVAILABILITY_TEMPLATE,
        "payload_available": "online",
        "payload_not_available": "offline",
    }
    components: Dict[str, Dict[str, Any]] = {}

    def add(platform: str, parts: Sequence[str], name: str, fields: Mapping[str, Any]) -> None:
        key = component_key(*parts)
        components[key] = {"p": platform, "unique_id": f"{device_id}_{key}", "name": name, **availability, **fields}

    for cam in config.cameras:
        add("switch", ("detect", cam.id), f"{cam.id} detection", {
            "command_topic": topics.camera_detect_set(cam.id),
            "state_topic": topics.camera_detect_state(cam.id),
            "payload_on": "ON", "payload_off": "OFF", "icon": "mdi:motion-sensor",
        })
        for label in labels:
            objects = topics.camera_objects(cam.id, label)
            add("binary_sensor", ("occupancy", cam.id, label), f"{cam.id} {label} occupancy", {
                "state_topic": objects, "value_template": OCCUPIED_TEMPLATE, "device_class": "occupancy",
            })
            add("sensor", ("count", cam.id, label), f"{cam.id} {label} count", {
                "state_topic": objects, "value_template": COUNT_TEMPLATE, "state_class": "measurement",
                "unit_of_measurement": "objects", "icon": "mdi:counter",
            })
            add("image", ("snapshot", cam.id, label), f"{cam.id} {label} snapshot", {
                "image_topic": topics.camera_label_snapshot(cam.id, label), "content_type": "image/jpeg",
            })
        for zone in cam.zones:
            for label in (zone.labels or labels):
                add("sensor", ("zone", zone.name, label), f"{zone.name} {label} count", {
                    "state_topic": topics.zone_objects(zone.name, label), "value_template": COUNT_TEMPLATE,
                    "state_class": "measurement", "unit_of_measurement": "objects", "icon": "mdi:vector-polygon",
                })
        for line in cam.lines:
            for direction in ("in", "out"):
                add("sensor", ("line", cam.id, line.name, direction), f"{line.name} {direction}", {
                    "state_topic": topics.camera_line(cam.id, line.name),
                    "value_template": f"{{{{ value_json['{direction}'] }}}}",
                    "state_class": "total_increasing", "unit_of_measurement": "crossings", "icon": "mdi:transit-transfer",
                })
    return {
        "dev": {"ids": [f"edge-app-{device_id}"], "name": device_id, "mf": ORIGIN_NAME, "mdl": "edge video analytics",
                "sw": version},
        "o": {"name": ORIGIN_NAME, "sw": version, **({"url": support_url} if support_url else {})},
        "cmps": components,
    }


def platforms(message: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    """``{component key: platform}`` of a discovery message (tolerates anything malformed)."""
    comps = message.get("cmps") if isinstance(message, Mapping) else None
    if not isinstance(comps, Mapping):
        return {}
    return {str(key): str(body["p"]) for key, body in comps.items()
            if isinstance(body, Mapping) and isinstance(body.get("p"), str)}


def live_platforms(message: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    """Like :func:`platforms`, without components that are already removal entries (only ``p``)."""
    comps = message.get("cmps") if isinstance(message, Mapping) else None
    if not isinstance(comps, Mapping):
        return {}
    return {key: p for key, p in platforms(message).items() if set(comps[key]) != {"p"}}


def removal_message(current: Mapping[str, Any], previous: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    """``current`` plus ``{"p": platform}`` for each component of ``previous`` it no longer has; None if none."""
    gone = {key: {"p": platform} for key, platform in previous.items() if key not in current["cmps"]}
    if not gone:
        return None
    return {**current, "cmps": {**current["cmps"], **gone}}


def parse(payload: bytes) -> Optional[Dict[str, Any]]:
    """A discovery message read back from the broker, or None when it is not one."""
    try:
        message = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return message if isinstance(message, dict) else None


def is_birth(payload: bytes) -> bool:
    return payload.strip() == b"online"

