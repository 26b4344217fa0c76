"""What the REST API needs from the running appliance.

The API is written against this protocol only, so the blueprints never reach into threads,
cameras or the detector directly, and the appliance is passed to ``create_app`` explicitly
instead of being hung on the Flask app or kept in a module global.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Protocol, Tuple

import numpy as np

from edge_app.config.schema import AppConfig
from edge_app.detections import Detections


class UnknownCamera(KeyError):
    """Raised for a camera id that is not configured (the API answers 404)."""


@dataclass
class ApplyResult:
    config: AppConfig
    restart_required: List[str] = field(default_factory=list)  # e.g. ["api.port"]


@dataclass
class AnalysedFrame:
    """The newest analysed frame of one camera, with the detections found in it."""

    camera_id: str
    frame_id: int
    ts: float  # capture time, Unix seconds
    image: np.ndarray  # BGR, source size
    detections: Detections


class ApplianceService(Protocol):
    def status(self) -> Dict[str, Any]:
        """The body of GET /api/v1/status (SPEC.md fields)."""

    def readiness(self) -> Tuple[bool, List[str]]:
        """(ready, reasons): ready once the model is loaded and at least one camera streams."""

    def current_config(self) -> AppConfig:
        ...

    def apply_config(self, new_config: AppConfig) -> ApplyResult:
        """Apply live and persist atomically. ``new_config`` is already validated.

        Raises ``edge_app.config.ConfigError`` when the configuration is valid in form but cannot
        be applied (the model file does not exist, say); nothing has changed then.
        """

    def cameras(self) -> List[Dict[str, Any]]:
        """One dict per configured camera: id, source (credentials masked), state, fps, counters."""

    def latest_frame(self, camera_id: str) -> Optional[AnalysedFrame]:
        """None while the camera has no analysed frame yet; raises UnknownCamera."""

    def latest_detections(self, camera_id: str) -> Optional[Dict[str, Any]]:
        """The last detections payload as published on MQTT; None before the first; raises UnknownCamera."""

    def wait_frame(self, camera_id: str, after_frame_id: int, timeout_s: float) -> Optional[AnalysedFrame]:
        """Block until an analysed frame newer than ``after_frame_id`` exists (for MJPEG), or timeout."""
