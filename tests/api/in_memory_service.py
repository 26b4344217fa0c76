"""An in-memory ApplianceService for testing the HTTP layer; the real appliance is exercised in tests/e2e.

It keeps a configuration, persists applies with ``save_config`` like the appliance does, and
serves frames and detections that a test publishes with :meth:`InMemoryService.publish`.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from edge_app.api.service import AnalysedFrame, ApplyResult, UnknownCamera
from edge_app.config.schema import AppConfig
from edge_app.config.store import ConfigError, save_config
from edge_app.detections import Detections
from edge_app.redact import mask_secrets
from edge_app.pipeline.health import PipelineActivity, assess, readiness_reason, status_fields
from edge_app.version import __version__

RESTART_KEYS = (("api", "host"), ("api", "port"))


class InMemoryService:
    """An in-memory ApplianceService for testing the HTTP layer; the real appliance is exercised in tests/e2e."""

    def __init__(self, config: AppConfig, config_path: Path):
        self._config = config
        self._config_path = Path(config_path)
        self._cond = threading.Condition()
        self._frames: Dict[str, AnalysedFrame] = {}
        self._payloads: Dict[str, Dict[str, Any]] = {}
        self._next_frame_id: Dict[str, int] = {}
        self.model_loaded = True
        self.streaming: Dict[str, bool] = {cam.id: False for cam in config.cameras}
        self.apply_calls = 0
        self.refuse_apply: Optional[ConfigError] = None  # set to make apply_config fail
        self.fail_status: Optional[Exception] = None  # set to make status() raise
        # What the pipeline threads recorded, judged by the real stall check at ``now_s``.
        self.now_s = 1000.0
        self.pipeline_activity = PipelineActivity(running=True, gather_alive=True, last_batch_s=999.9, work_since_s=None)
        self.pipeline_errors = 0
        save_config(config, self._config_path)

    # -- test controls -----------------------------------------------------------------------
    def publish(self, camera_id: str, image: np.ndarray, detections: Detections) -> AnalysedFrame:
        """Make ``image`` the newest analysed frame of ``camera_id``."""
        with self._cond:
            frame_id = self._next_frame_id.get(camera_id, 1)
            self._next_frame_id[camera_id] = frame_id + 1
            height, width = image.shape[:2]
            frame = AnalysedFrame(camera_id, frame_id, time.time(), image, detections)
            self._frames[camera_id] = frame
            self._payloads[camera_id] = {
                "device_id": self._config.device_id,
                "camera_id": camera_id,
                "frame_id": frame_id,
                "ts": frame.ts,
                "width": width,
                "height": height,
                "latency_ms": 12.5,
                "detections": detections.to_dicts(),
            }
            self.streaming[camera_id] = True
            self._cond.notify_all()
            return frame

    # -- ApplianceService ----------------------------------------------------------------------
    def _known(self, camera_id: str) -> None:
        if self._config.camera(camera_id) is None:
            raise UnknownCamera(camera_id)

    def status(self) -> Dict[str, Any]:
        if self.fail_status is not None:
            raise self.fail_status
        model = self._config.model
        return {
            "device_id": self._config.device_id,
            "version": __version__,
            "uptime_s": 12.0,
            "backend": "onnxruntime",
            "model": {"path": model.path, "input_size": model.input_size, "precision": model.precision},
            "mqtt": {"connected": True, "published": 42, "queued": 3, "dropped": 1},
            "cameras": self.cameras(),
            "pipeline": {"fps": 24.5, "latency_ms": {"p50": 31.0, "p99": 80.0}, "errors": self.pipeline_errors,
                         **status_fields(assess(self.pipeline_activity, self.now_s))},
        }

    def readiness(self) -> Tuple[bool, List[str]]:
        reasons = []
        if not self.model_loaded:
            reasons.append("the model is not loaded")
        if not any(self.streaming.values()):
            reasons.append("no camera is streaming")
        stalled = readiness_reason(assess(self.pipeline_activity, self.now_s))
        if stalled:
            reasons.append(stalled)
        return (not reasons, reasons)

    def current_config(self) -> AppConfig:
        with self._cond:
            return self._config

    def apply_config(self, new_config: AppConfig) -> ApplyResult:
        self.apply_calls += 1
        if self.refuse_apply is not None:
            raise self.refuse_apply
        with self._cond:
            old = self._config
            restart = [
                f"{section}.{key}"
                for section, key in RESTART_KEYS
                if getattr(getattr(old, section), key) != getattr(getattr(new_config, section), key)
            ]
            save_config(new_config, self._config_path)
            self._config = new_config
            for cam in new_config.cameras:
                self.streaming.setdefault(cam.id, False)
            return ApplyResult(new_config, restart)

    def cameras(self) -> List[Dict[str, Any]]:
        out = []
        for cam in self._config.cameras:
            frame = self._frames.get(cam.id)
            n = frame.frame_id if frame else 0
            out.append({
                "id": cam.id,
                "source": mask_secrets(cam.source),
                "enabled": cam.enabled,
                "state": "streaming" if self.streaming.get(cam.id) else "connecting",
                "fps": 12.5 if n else 0.0,
                "frames_captured": 2 * n,
                "frames_analyzed": n,
                "frames_dropped": n,
                "reconnects": 0,
                "last_error": None,
            })
        return out

    def latest_frame(self, camera_id: str) -> Optional[AnalysedFrame]:
        self._known(camera_id)
        with self._cond:
            return self._frames.get(camera_id)

    def latest_detections(self, camera_id: str) -> Optional[Dict[str, Any]]:
        self._known(camera_id)
        with self._cond:
            return self._payloads.get(camera_id)

    def wait_frame(self, camera_id: str, after_frame_id: int, timeout_s: float) -> Optional[AnalysedFrame]:
        self._known(camera_id)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                frame = self._frames.get(camera_id)
                if frame is not None and frame.frame_id > after_frame_id:
                    return frame
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
