"""MQTT topic names of SPEC.md, derived from ``topic_prefix`` and ``device_id``.

Everything that builds or matches a topic goes through :class:`Topics` so that the layout
(``<prefix>/<device_id>/cameras/<camera_id>/...``) is written down exactly once.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_CAMERA_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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

    def camera_detections(self, camera_id: str) -> str:
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/detections"

    def camera_state(self, camera_id: str) -> str:
        """Retained camera state."""
        return f"{self.root}/cameras/{_check_camera_id(camera_id)}/state"

    @property
    def all_detections(self) -> str:
        """Subscription filter for the detections of every camera of this device."""
        return f"{self.root}/cameras/+/detections"

    @property
    def all_camera_states(self) -> str:
        return f"{self.root}/cameras/+/state"

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
