"""Camera capture: sources, reconnects, stall watchdog and frame hand-over.

The pipeline uses ``CameraWorker`` (one per enabled camera) and ``Frame``; the API may use
``StreamState``.
"""
from edge_app.capture.backoff import reconnect_delay_s
from edge_app.capture.buffer import BufferPolicy, FrameSlot, policy_for
from edge_app.capture.camera import CameraWorker
from edge_app.capture.frame import Frame
from edge_app.capture.sources import (
    SourceError, SourceKind, SourceSpec, SourceUnavailable, open_source,
)
from edge_app.capture.state import ALLOWED_TRANSITIONS, IllegalTransition, StreamState
from edge_app.config.source_spec import parse_source

__all__ = [
    "ALLOWED_TRANSITIONS", "BufferPolicy", "CameraWorker", "Frame", "FrameSlot", "IllegalTransition",
    "SourceError", "SourceKind", "SourceSpec", "SourceUnavailable", "StreamState",
    "open_source", "parse_source", "policy_for", "reconnect_delay_s",
]
