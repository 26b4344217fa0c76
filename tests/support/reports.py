"""Typed status reports with plausible figures, for tests of what is built from them."""
from __future__ import annotations

from dataclasses import replace
from typing import List, Optional

from edge_app.reporting.protocol import CameraReport, LatencyReport, ModelReport, MqttReport, PipelineReport, StatusReport


def camera_report(camera_id: str = "cam", state: str = "streaming", **changes) -> CameraReport:
    report = CameraReport(id=camera_id, source="test://bars", enabled=True, state=state, fps=12.5, analyzed_fps=12.0,
                          frames_captured=200, frames_analyzed=100, frames_dropped=100, reconnects=0, last_error=None)
    return replace(report, **changes)


def pipeline_report(fps: float = 24.5, stalled: bool = False, stall_reason: Optional[str] = None, **changes) -> PipelineReport:
    report = PipelineReport(fps=fps, latency_ms=LatencyReport(31.0, 80.0), stage_ms={"inference": 20.0}, errors=0,
                            stalled=stalled, stall_reason=stall_reason, last_batch_age_s=0.1)
    return replace(report, **changes)


def status_report(cameras: Optional[List[CameraReport]] = None, pipeline: Optional[PipelineReport] = None,
                  **changes) -> StatusReport:
    report = StatusReport(
        device_id="dev", version="0.0.0", uptime_s=12.0, backend="onnxruntime",
        model=ModelReport(path="model.onnx", input_size=[640, 640], precision="fp16", max_batch=1),
        mqtt=MqttReport(connected=True, published=42, queued=3, dropped=1),
        cameras=[camera_report()] if cameras is None else cameras,
        pipeline=pipeline_report() if pipeline is None else pipeline,
    )
    return replace(report, **changes)
