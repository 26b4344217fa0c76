"""One camera's motion gating on its capture thread: detector and gate, and what status shows.

``MotionWatch.admit(image, now_s)`` is asked once per captured frame and says whether the frame
goes on to the pipeline; frames it holds back are never letterboxed, copied to the model's input
or batched. ``has_objects`` says whether the camera has tracked objects now (the appliance's
analysis); ``on_change(motion)`` hears every ON/OFF change (MQTT ``R/cameras/<id>/motion``).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Optional

from edge_app.config.schema_cameras import CameraConfig, MotionConfig
from edge_app.capture.gpu_image import FrameImage
from edge_app.motion.detector import MotionDetector, MotionSettings
from edge_app.motion.gate import MotionGate
from edge_app.reporting.protocol import MotionReport

log = logging.getLogger(__name__)


def gating_enabled(camera: CameraConfig, motion: MotionConfig) -> bool:
    return motion.enabled and camera.motion.enabled


class MotionWatch:
    def __init__(self, camera: CameraConfig, motion: MotionConfig, has_objects: Callable[[], bool] = lambda: False,
                 on_change: Callable[[bool], None] = lambda motion: None) -> None:
        self.camera_id = camera.id
        self._detector = MotionDetector(MotionSettings(motion.threshold, motion.min_area), camera.motion.masks)
        self._gate = MotionGate(motion.keepalive_s)
        self._has_objects = has_objects
        self._on_change = on_change
        self._lock = threading.Lock()
        self._checked = 0
        self._skipped = 0
        self._reason: Optional[str] = None
        self._cost_ms = 0.0
        self._listener_failed = False

    def admit(self, image: FrameImage, now_s: float) -> bool:
        """Whether this frame goes to the model; call once per frame, from one thread."""
        start_s = time.perf_counter()
        result = self._detector.detect(self._detector.picture(image), now_s)
        cost_ms = (time.perf_counter() - start_s) * 1000.0
        try:
            has_objects = bool(self._has_objects())
        except Exception:  # when in doubt, look
            log.exception("camera %s: asking for tracked objects failed", self.camera_id)
            has_objects = True
        decision = self._gate.decide(now_s, result.motion, has_objects)
        with self._lock:
            self._checked += 1
            self._skipped += 0 if decision.analyse else 1
            self._reason = decision.reason
            self._cost_ms = cost_ms if self._checked == 1 else 0.95 * self._cost_ms + 0.05 * cost_ms
        if decision.motion_changed:
            self._notify(decision.motion)
        return decision.analyse

    def _notify(self, motion: bool) -> None:
        try:
            self._on_change(motion)
        except Exception:  # a broken listener must not stop capture
            if not self._listener_failed:
                self._listener_failed = True
                log.exception("camera %s: motion listener failed", self.camera_id)

    def report(self) -> MotionReport:
        with self._lock:
            masked = self._detector.masked_fraction
            return MotionReport(self._gate.motion, self._checked, self._skipped, self._reason,
                                None if masked is None else round(masked, 4),
                                masked is not None and masked >= 1.0, round(self._cost_ms, 3))
