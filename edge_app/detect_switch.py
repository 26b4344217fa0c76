"""The ``R/cameras/<id>/detect/set`` switch: analysis of one camera on or off.

A command is applied like any configuration change (``cameras[].detect``, saved to the file),
so the switch, the config API and the file never disagree; ``detect/state`` follows, retained.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from edge_app.config.schema import AppConfig
from edge_app.mqtt.publisher import MqttPublisher

log = logging.getLogger(__name__)


class DetectSwitch:
    def __init__(self, config: Callable[[], AppConfig], apply: Callable[[AppConfig], Any],
                 publisher: Callable[[], MqttPublisher], lock: threading.RLock) -> None:
        self._config, self._apply, self._publisher, self._lock = config, apply, publisher, lock

    def on_command(self, camera_id: str, enabled: bool) -> None:
        # Called on paho's network thread, which must not wait for a configuration change.
        threading.Thread(target=self.set, args=(camera_id, enabled), name=f"detect:{camera_id}", daemon=True).start()

    def set(self, camera_id: str, enabled: bool) -> None:
        """Turn analysis of one camera on or off; saved like any configuration change."""
        with self._lock:
            config = self._config()
            if config.camera(camera_id) is None:
                return
            cameras = [c.model_copy(update={"detect": enabled}) if c.id == camera_id else c for c in config.cameras]
            if cameras == list(config.cameras):
                self._publisher().publish_detect_state(camera_id, enabled)
                return
            try:
                self._apply(config.model_copy(update={"cameras": cameras}))
            except Exception:
                log.exception("switching detection of camera %s %s failed", camera_id, "on" if enabled else "off")
                return
        log.info("camera %s: detection switched %s over MQTT", camera_id, "on" if enabled else "off")

    def publish_states(self, config: AppConfig) -> None:
        publisher = self._publisher()
        for camera in config.cameras:
            publisher.publish_detect_state(camera.id, camera.detect)
