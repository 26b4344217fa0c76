"""Home Assistant MQTT discovery of the device (docs/mqtt.md, "Home Assistant"), as plain data.

One device-based discovery message on ``<discovery_prefix>/device/<device_id>/config`` with
``dev``, ``o`` and ``cmps``. Every entity points at a topic the appliance already publishes
(counts, line totals, snapshots, ``detect/state``, ``motion``, unreviewed alerts, ``R/profile`` for the profile
select), so Home Assistant needs nothing but its MQTT integration.

Component keys and unique ids are derived from the device id, the camera/zone/line name, the
label and the kind of entity, never from list positions: reordering the configuration or
restarting keeps every entity (and its history) in Home Assistant. Home Assistant does not drop a
component that is merely missing from a new device message; :func:`removal_message` names the
ones that went away with only their platform, as its documentation asks, before the full message
is sent again without them.

Bounds, both ways. What is published: at most ``homeassistant.max_entities`` components and
``MAX_DISCOVERY_BYTES``; over either, the least useful kinds are left out first (snapshots, then
zone, line, occupancy and count sensors, motion; the detection switches last). What is read back from the
broker (anyone may publish there): at most ``MAX_INBOUND_BYTES`` nested ``MAX_INBOUND_DEPTH`` deep,
parsed by ``edge_app.mqtt.inbound``; only keys shaped like :func:`component_key` with one of
our platforms count as components of an earlier run, and at most ``max_entities`` of them.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from edge_app.config.schema import AppConfig
from edge_app.mqtt.inbound import InboundPayloadError, parse_json_payload
from edge_app.mqtt.topics import Topics

ORIGIN_NAME = "edge-app"
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
AVAILABILITY_TEMPLATE = "{{ value_json.state }}"
COUNT_TEMPLATE = "{{ value_json.count }}"
OCCUPIED_TEMPLATE = "{{ 'ON' if value_json.count > 0 else 'OFF' }}"

#: the full message; a removal message adds at most ``max_entities`` entries of about 150 bytes
MAX_DISCOVERY_BYTES = 512 * 1024
#: what is read back on the discovery topic: ours (with removals) fits, anything larger is not ours
MAX_INBOUND_BYTES = 2 * MAX_DISCOVERY_BYTES
MAX_INBOUND_DEPTH = 8  # ours nests 4 deep ({"cmps": {key: {"p": ...}}}, {"dev": {"ids": [...]}})
PLATFORMS = ("switch", "sensor", "binary_sensor", "image", "select")
#: kept first when over a bound: device health and detection switches, motion and unreviewed alerts, counts, occupancy, lines, zones,
#: snapshots
_PRIORITY = {"health": 0, "detect": 0, "profile": 0, "motion": 1, "alerts": 1, "count": 2, "occupancy": 3, "line": 4, "zone": 5, "snapshot": 6}
_OUR_KEY = re.compile(r"[A-Za-z0-9_-]{0,120}_[0-9a-f]{10}")


def discovery_topic(prefix: str, device_id: str) -> str:
    return f"{prefix}/device/{device_id}/config"


def birth_topic(prefix: str) -> str:
    """Where Home Assistant announces ``online`` when it (re)starts."""
    return f"{prefix}/status"


def event_labels(config: AppConfig, model_labels: Sequence[str]) -> List[str]:
    """The labels that get entities: ``events.labels``, else the models' ``classes`` (every model that
    keeps only some classes), else every label of every model."""
    models = config.model_configs().values()
    classes = [label for model in models for label in model.classes] if all(m.classes for m in models) else []
    labels = config.events.labels or classes or list(model_labels)
    return list(dict.fromkeys(str(label) for label in labels))


def component_key(*parts: str) -> str:
    """A readable key made only of ``[A-Za-z0-9_-]``, with a hash so distinct parts never collide.

    ("cam_a", "b") and ("cam", "a_b") slug alike; the hash of the exact parts keeps them apart.
    """
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:10]
    slug = "_".join(_SLUG_UNSAFE.sub("_", part).strip("_") for part in parts)
    return f"{slug[:120]}_{digest}"


@dataclass(frozen=True)
class DiscoveryBuild:
    message: Dict[str, Any]
    left_out: int  # entities the configuration asks for beyond the bounds


def build_discovery(config: AppConfig, topics: Topics, version: str, labels: Sequence[str],
                    support_url: Optional[str] = None) -> Dict[str, Any]:
    """The whole discovery message for ``config``; ``labels`` as from :func:`event_labels`."""
    return build_capped_discovery(config, topics, version, labels, support_url).message


def build_capped_discovery(config: AppConfig, topics: Topics, version: str, labels: Sequence[str],
                           support_url: Optional[str] = None) -> DiscoveryBuild:
    """:func:`build_discovery`, saying how many entities the bounds left out."""
    device_id = config.device_id
    availability = {
        "availability_topic": topics.status,
        "availability_template": AVAILABILITY_TEMPLATE,
        "payload_available": "online",
        "payload_not_available": "offline",
    }
    candidates: List[Tuple[int, str, Dict[str, Any]]] = []

    def add(platform: str, parts: Sequence[str], name: str, fields: Mapping[str, Any]) -> None:
        key = component_key(*parts)
        body = {"p": platform, "unique_id": f"{device_id}_{key}", "name": name, **availability, **fields}
        candidates.append((_PRIORITY[parts[0]], key, body))

    for cam in config.cameras:
        add("switch", ("detect", cam.id), f"{cam.id} detection", {
            "command_topic": topics.camera_detect_set(cam.id),
            "state_topic": topics.camera_detect_state(cam.id),
            "payload_on": "ON", "payload_off": "OFF", "icon": "mdi:motion-sensor",
        })
        if config.motion.enabled and cam.motion.enabled:  # not on detect: the switch must change no entity
            add("binary_sensor", ("motion", cam.id), f"{cam.id} motion", {
                "state_topic": topics.camera_motion(cam.id), "payload_on": "ON", "payload_off": "OFF",
                "device_class": "motion",
            })
        add("sensor", ("alerts", cam.id), f"{cam.id} unreviewed alerts", {
            "state_topic": topics.camera_review_alerts(cam.id), "value_template": COUNT_TEMPLATE,
            "state_class": "measurement", "unit_of_measurement": "alerts", "icon": "mdi:alert-circle-outline",
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
            for parts, platform, name, fields in zone_entities(topics, zone):
                add(platform, parts, name, fields)
        for line in cam.lines:
            for direction in ("in", "out"):
                add("sensor", ("line", cam.id, line.name, direction), f"{line.name} {direction}", {
                    "state_topic": topics.camera_line(cam.id, line.name),
                    "value_template": f"{{{{ value_json['{direction}'] }}}}",
                    "state_class": "total_increasing", "unit_of_measurement": "crossings", "icon": "mdi:transit-transfer",
                })
    if config.profiles.definitions:  # R/profile/set takes the option's text, R/profile says which is active
        add("select", ("profile",), "Profile", {
            "command_topic": topics.profile_set, "state_topic": topics.profile,
            "value_template": "{{ value_json.active }}", "options": config.profiles.names(), "icon": "mdi:calendar-clock",
        })
    for parts, name, fields in health_entities(topics):
        add("binary_sensor" if parts[1] == "problem" else "sensor", parts, name, fields)
    message: Dict[str, Any] = {
        "dev": {"ids": [f"edge-app-{device_id}"], "name": device_id, "mf": ORIGIN_NAME, "mdl": "edge video analytics",
                "sw": version},
        "o": {"name": ORIGIN_NAME, "sw": version, **({"url": support_url} if support_url else {})},
        "cmps": {},
    }
    kept = _within_bounds(candidates, config.homeassistant.max_entities, MAX_DISCOVERY_BYTES - _encoded_size(message))
    message["cmps"] = {key: body for _, key, body in candidates if key in kept}
    left_out = len({key for _, key, _ in candidates}) - len(message["cmps"])
    return DiscoveryBuild(message, left_out)


def zone_entities(topics: Topics, zone) -> List[Tuple[Tuple[str, ...], str, str, Dict[str, Any]]]:
    """A zone's own entities, all read from the retained ``R/zones/<zone>``: whether anything of its
    labels is inside and how many, their mean dwell, and (where the zone sets the limits) loitering
    and the occupancy alert. Keys have four parts, so no label's count sensor can take one."""
    state = {"state_topic": topics.zone(zone.name)}
    entities = [
        (("zone", zone.name, "stats", "occupied"), "binary_sensor", f"{zone.name} occupancy",
         dict(state, value_template="{{ 'ON' if value_json.occupancy > 0 else 'OFF' }}", device_class="occupancy")),
        (("zone", zone.name, "stats", "occupancy"), "sensor", f"{zone.name} objects",
         dict(state, value_template="{{ value_json.occupancy }}", state_class="measurement",
              unit_of_measurement="objects", icon="mdi:account-group")),
        (("zone", zone.name, "stats", "mean_dwell"), "sensor", f"{zone.name} mean dwell",
         dict(state, value_template="{{ value_json.mean_dwell_s }}", state_class="measurement",
              device_class="duration", unit_of_measurement="s")),
    ]
    if zone.loitering_s is not None:
        entities.append((("zone", zone.name, "stats", "loitering"), "binary_sensor", f"{zone.name} loitering",
                         dict(state, value_template="{{ 'ON' if value_json.loitering > 0 else 'OFF' }}",
                              icon="mdi:account-clock")))
    if zone.max_objects is not None:
        entities.append((("zone", zone.name, "stats", "over_capacity"), "binary_sensor", f"{zone.name} over capacity",
                         dict(state, value_template="{{ 'ON' if value_json.over_capacity else 'OFF' }}",
                              device_class="problem")))
    return entities


def _summary(key: str) -> str:
    # A figure the device cannot read is null in R/health; "None" makes Home Assistant show "unknown".
    return f"{{{{ value_json.summary.{key} }}}}"


def health_entities(topics: Topics) -> List[Tuple[Tuple[str, str], str, Dict[str, Any]]]:
    """The device health entities, all read from the retained ``R/health`` (docs/health.md)."""
    state = {"state_topic": topics.health, "entity_category": "diagnostic"}
    measured = dict(state, state_class="measurement")
    return [
        (("health", "temperature"), "Temperature", dict(measured, value_template=_summary("temperature_c"),
                                                        device_class="temperature", unit_of_measurement="°C")),
        (("health", "gpu_load"), "GPU load", dict(measured, value_template=_summary("gpu_load_percent"),
                                                  unit_of_measurement="%", icon="mdi:expansion-card")),
        (("health", "disk"), "Disk used", dict(measured, value_template=_summary("disk_used_percent"),
                                               unit_of_measurement="%", icon="mdi:harddisk")),
        (("health", "power_mode"), "Power mode", dict(state, value_template=_summary("power_mode"), icon="mdi:flash")),
        (("health", "problem"), "Problem", dict(
            state, device_class="problem", value_template="{{ 'ON' if value_json.problems else 'OFF' }}",
            json_attributes_topic=topics.health,
            json_attributes_template="{{ {'problems': value_json.problems | map(attribute='message') | list} | tojson }}")),
    ]


def _encoded_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _within_bounds(candidates: List[Tuple[int, str, Dict[str, Any]]], max_entities: int, max_bytes: int) -> set:
    """Keys of the components kept, most useful kinds first, in the configuration's order within a kind."""
    kept: set = set()
    used_bytes = 0
    for _, key, body in sorted(candidates, key=lambda item: item[0]):  # stable: configuration order within a kind
        size = _encoded_size({key: body}) + 1  # with its separator
        if len(kept) >= max_entities or used_bytes + size > max_bytes:
            break
        kept.add(key)
        used_bytes += size
    return kept


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


def earlier_components(message: Optional[Mapping[str, Any]], current: Mapping[str, Any],
                       max_entities: int) -> Dict[str, str]:
    """Components of a message read back that ``current`` no longer has: ``{key: platform}``.

    Only keys shaped like ours with one of our platforms, at most ``max_entities`` (in key
    order), so a forged message cannot make the answer larger than an honest one.
    """
    stale = {key: p for key, p in live_platforms(message).items()
             if key not in current["cmps"] and p in PLATFORMS and _OUR_KEY.fullmatch(key)}
    return {key: stale[key] for key in sorted(stale)[:max_entities]}


def parse(payload: bytes) -> Optional[Dict[str, Any]]:
    """A discovery message read back from the broker, or None when it is not one (or out of bounds)."""
    try:
        message = parse_json_payload(payload, MAX_INBOUND_BYTES, MAX_INBOUND_DEPTH)
    except InboundPayloadError:
        return None
    return message if isinstance(message, dict) else None


def is_birth(payload: bytes) -> bool:
    return len(payload) <= 64 and bytes(payload).strip() == b"online"

