"""MQTT topic names (docs/mqtt.md, generated from this class), derived from ``topic_prefix`` and ``device_id``.

Everything that builds or matches a topic goes through :class:`Topics` so that the layout
(``<prefix>/<device_id>/cameras/<camera_id>/...``) is written down exactly once.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_CAMERA_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# Labels come from a model's labels file ("traffic light"): spaces are fine in a topic level,
# the level separator, wildcards and control characters are not.
_LEVEL = re.compile(r"^[^/#+\x00-\x1f\x7f]{1,128}$")


def _check_level(value: str, what: str) -> str:
    if not isinstance(value, str) or not _LEVEL.match(value):
        raise ValueError(f"{what} {value!r} is not usable as an MQTT topic level")
    return value


def _check_camera_id(camera_id: str) -> str:
    # A '+', '#' or '/' in a camera id would silently change which subscribers match.
    if not _CAMERA_ID.match(camera_id):
        raise ValueError(f"camera id {camera_id!r} is not usable in an MQTT topic")
    return camera_id


@dataclass(frozen=True)
class Topics:
    """The topics of one device: ``root`` is ``R = <prefix>/<device_id>``."""

    prefix: str
    device_id: str

    @property
    def root(self) -> str:
        return f"{self.prefix}/{self.device_id}"

    @property
    def status(self) -> str:
        """Retained ``online``/``offline`` (birth, last will and clean shutdown)."""
        return f"{self.root}/status"

    @property
    def stats(self) -> str:
        return f"{self.root}/stats"

    @property
    def health(self) -> str:
        """Retained device health: temperatures, throttling, power, GPU, memory, disk and problems."""
        return f"{self.root}/health"

    def camera_detections(self, camera_id: str) -> str:
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/detections"

    def camera_state(self, camera_id: str) -> str:
        """Retained camera state."""
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/state"

    @property
    def events(self) -> str:
        """``R/events``: event ``new``/``update``/``end`` messages."""
        return f"{self.root}/events"

    @property
    def reviews(self) -> str:
        """``R/reviews``: review item ``new``/``update``/``end`` messages."""
        return f"{self.root}/reviews"

    def camera_review_alerts(self, camera_id: str) -> str:
        """Retained count of a camera's alerts not yet marked reviewed."""
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/review/alerts"

    def camera_objects(self, camera_id: str, label: str) -> str:
        """Retained count of the objects of ``label`` in view of a camera."""
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/objects/{_check_level(label, 'label')}"

    def zone_objects(self, zone: str, label: str) -> str:
        """Retained count of the objects of ``label`` in a zone (zone names are unique per device)."""
        return f"{self.root}/zones/{_check_level(zone, 'zone name')}/{_check_level(label, 'label')}"

    def zone(self, zone: str) -> str:
        """Retained figures of a zone: occupancy, mean dwell, loitering, the occupancy alert."""
        return f"{self.root}/zones/{_check_level(zone, 'zone name')}"

    def camera_line(self, camera_id: str, line: str) -> str:
        """Retained ``{"in", "out", "ts"}`` totals of a tripwire."""
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/lines/{_check_level(line, 'line name')}"

    def camera_line_crossing(self, camera_id: str, line: str) -> str:
        return f"{self.camera_line(camera_id, line)}/crossing"

    def camera_detect_state(self, camera_id: str) -> str:
        """Retained ``ON``/``OFF``: whether a camera is analysed."""
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/detect/state"

    def camera_motion(self, camera_id: str) -> str:
        """Retained ``ON``/``OFF``: whether something moves in a camera with motion gating on."""
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/motion"

    def camera_detect_set(self, camera_id: str) -> str:
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/detect/set"

    @property
    def all_detect_set(self) -> str:
        """The appliance's subscription: ``ON``/``OFF`` commands for any camera."""
        return f"{self.root}/cameras/+/detect/set"

    def camera_label_snapshot(self, camera_id: str, label: str) -> str:
        """Retained raw JPEG: the best snapshot of the latest event of ``label``."""
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/{_check_level(label, 'label')}/snapshot"

    @property
    def config_desired(self) -> str:
        """Retained ``{"version", "patch"}`` from the fleet; the appliance subscribes to it."""
        return f"{self.root}/config/desired"

    @property
    def config_reported(self) -> str:
        """Retained outcome of the latest desired version the appliance acted on."""
        return f"{self.root}/config/reported"

    @property
    def profile(self) -> str:
        """Retained: the active profile, why, and the next scheduled boundary (docs/profiles.md)."""
        return f"{self.root}/profile"

    @property
    def profile_set(self) -> str:
        """The appliance's subscription: the name of a profile to switch to (held until the next boundary)."""
        return f"{self.root}/profile/set"

    @property
    def profile_error(self) -> str:
        """Why an ``R/profile/set`` command was refused."""
        return f"{self.root}/profile/error"

    @property
    def all_detections(self) -> str:
        """Subscription filter for the detections of every camera of this device."""
        return f"{self.root}/cameras/+/detections"

    @property
    def everything(self) -> str:
        """Subscription filter for every topic of this device."""
        return f"{self.root}/#"

    def camera_of(self, topic: str) -> Optional[str]:
        """The camera id in a camera topic of this device, else None."""
        head = f"{self.root}/cameras/"
        if not topic.startswith(head):
            return None
        rest = topic[len(head):].split("/")
        return rest[0] if len(rest) == 2 and rest[0] else None

    def is_camera_state(self, topic: str) -> bool:
        return self.camera_of(topic) is not None and topic.endswith("/state")

    def _camera_topic_with(self, topic: str, tail: str) -> Optional[str]:
        head = f"{self.root}/cameras/"
        if not (topic.startswith(head) and topic.endswith(tail)):
            return None
        camera_id = topic[len(head):len(topic) - len(tail)]
        return camera_id if _CAMERA_ID.match(camera_id) else None

    def detect_set_camera(self, topic: str) -> Optional[str]:
        """The camera id of a ``detect/set`` topic of this device; None for anything else."""
        return self._camera_topic_with(topic, "/detect/set")

    def is_detect_state(self, topic: str) -> bool:
        return self._camera_topic_with(topic, "/detect/state") is not None
