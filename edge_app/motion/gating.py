"""The appliance's motion gating: one ``MotionWatch`` on each camera that detects with gating on.

``configure`` is called whenever the configuration or the set of camera workers changes; a
camera whose motion settings, detect switch and worker stayed keeps its watch (and its
background), any other gets a new one or none. A camera's MQTT ``R/cameras/<id>/motion`` starts
``OFF`` with its watch and goes back to ``OFF`` when gating is switched off. Files read with
``realtime: false`` are never gated: they hand every frame to the model (docs/configuration.md).
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Mapping, Optional, Protocol, Tuple

from edge_app.config.schema import AppConfig
from edge_app.motion.watch import MotionWatch, gating_enabled

log = logging.getLogger(__name__)


class GatedWorker(Protocol):
    """What gating needs of a camera worker (``edge_app.capture.camera.CameraWorker``)."""

    def use_motion(self, admission: Optional[Any]) -> None: ...


class MotionGating:
    def __init__(self, has_objects: Callable[[str], bool], on_change: Callable[[str, bool], None]) -> None:
        self._has_objects = has_objects
        self._on_change = on_change
        self._lock = threading.Lock()
        # camera id -> (worker, settings key) the watch was made for
        self._installed: Dict[str, Tuple[GatedWorker, Any]] = {}

    def configure(self, config: AppConfig, workers: Mapping[str, GatedWorker]) -> None:
        with self._lock:
            for camera_id in list(self._installed):
                if camera_id not in workers or config.camera(camera_id) is None:
                    worker, _ = self._installed.pop(camera_id)
                    worker.use_motion(None)
                    self._notify(camera_id, False)
            for camera_id, worker in workers.items():
                camera = config.camera(camera_id)
                if camera is None:
                    continue
                # A file read with realtime: false hands every frame to the model by contract.
                gated = (camera.enabled and camera.detect and gating_enabled(camera, config.motion)
                         and not getattr(worker, "waits_for_consumer", False))
                key = (camera.motion, config.motion) if gated else None
                installed = self._installed.get(camera_id)
                if installed is not None and installed[0] is worker and installed[1] == key:
                    continue
                if key is None:
                    if installed is not None:
                        self._installed.pop(camera_id)
                        worker.use_motion(None)
                        self._notify(camera_id, False)
                    continue
                watch = MotionWatch(camera, config.motion, has_objects=lambda cid=camera_id: self._has_objects(cid),
                                    on_change=lambda motion, cid=camera_id: self._notify(cid, motion))
                worker.use_motion(watch)
                self._installed[camera_id] = (worker, key)
                self._notify(camera_id, False)
                log.info("camera %s: motion gating on (threshold %d, min_area %g, keepalive %g s, %d mask(s))",
                         camera_id, config.motion.threshold, config.motion.min_area, config.motion.keepalive_s,
                         len(camera.motion.masks))

    def _notify(self, camera_id: str, motion: bool) -> None:
        try:
            self._on_change(camera_id, motion)
        except Exception:
            log.exception("camera %s: publishing its motion state failed", camera_id)
