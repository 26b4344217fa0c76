"""The ``detect/set`` commands the appliance accepts over MQTT, checked before anything acts on them.

Anyone who can publish on the broker can send these, so a message counts only when its topic
names a known camera of this device and its payload is ``ON`` or ``OFF``, and it is not retained:
a command is an act of now, and a retained one would be applied again at every reconnect, over
whatever the owner decided since. Everything else is counted and logged at most once every
``log_every_s``, so a flood cannot fill the log.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Optional

from edge_app.mqtt import payloads
from edge_app.mqtt.topics import Topics

log = logging.getLogger(__name__)

#: ``handler(camera_id, enabled)`` for a ``detect/set`` command
DetectSetHandler = Callable[[str, bool], None]


class DetectSetCommands:
    """Turns ``R/cameras/<id>/detect/set`` messages into ``handler(camera_id, enabled)`` calls."""

    def __init__(self, topics: Topics, handler: DetectSetHandler,
                 camera_known: Optional[Callable[[str], bool]] = None, log_every_s: float = 60.0) -> None:
        self.topics = topics
        self._handler = handler
        self._camera_known = camera_known or (lambda _camera_id: True)
        self._log_every_s = log_every_s
        self._lock = threading.Lock()
        self._logged_mono_s: Optional[float] = None
        self.ignored = 0

    @property
    def subscription(self) -> str:
        return self.topics.all_detect_set

    def handle(self, topic: str, payload: bytes, retained: bool = False) -> bool:
        """Act on one message; False when it was ignored."""
        if retained:
            return self._ignore(topic, "a retained command is not acted on (publish commands without retain)")
        camera_id = self.topics.detect_set_camera(topic)
        enabled = payloads.parse_detect_command(payload)
        if camera_id is None or not self._camera_known(camera_id):
            return self._ignore(topic, "not a known camera")
        if enabled is None:
            return self._ignore(topic, "payload is not ON or OFF")
        try:
            self._handler(camera_id, enabled)
        except Exception:  # a failing handler must not take paho's network thread down
            log.exception("handling %s %s failed", topic, "ON" if enabled else "OFF")
            return False
        return True

    def _ignore(self, topic: str, why: str) -> bool:
        now_mono_s = time.monotonic()
        with self._lock:
            self.ignored += 1
            due = self._logged_mono_s is None or now_mono_s - self._logged_mono_s >= self._log_every_s
            if due:
                self._logged_mono_s = now_mono_s
            ignored = self.ignored
        if due:
            log.warning("ignored MQTT command on %r: %s (%d ignored so far)", topic[:200], why, ignored)
        return False
