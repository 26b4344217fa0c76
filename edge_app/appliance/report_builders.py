"""The typed reports of edge_app.reporting.protocol, built from what the appliance's parts know.

Pure functions: the appliance gathers the figures, these decide what each report field means
(one place for "frames dropped", "state before the first frame", "input size once loaded").
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Tuple

from edge_app.capture.state import StreamState
from edge_app.config.schema import ModelConfig
from edge_app.config.schema_cameras import CameraConfig
from edge_app.detect.base import Detector
from edge_app.pipeline.stall_watch import PipelineHealth
from edge_app.pipeline.results import CameraFigures, PipelineFigures
from edge_app.config.redact import mask_secrets
from edge_app.record.types import CameraRecordingStatus
from edge_app.reporting.protocol import (ArtifactReport, CameraReport, EngineBuildReport, LatencyReport, ModelReport,
                                         ModelStatusReport, PipelineReport)

if TYPE_CHECKING:
    from edge_app.appliance.model_set import ModelUnit


def camera_report(camera: CameraConfig, capture: Mapping[str, Any], figures: CameraFigures,
                  recording: Optional[CameraRecordingStatus] = None) -> CameraReport:
    """``capture`` is ``CameraWorker.stats()``, empty for a camera without a worker."""
    before_start = StreamState.STOPPED.value if not camera.enabled else StreamState.CONNECTING.value
    return CameraReport(
        id=camera.id,
        source=mask_secrets(camera.source),
        enabled=camera.enabled,
        state=capture.get("state", before_start),
        fps=capture.get("fps", 0.0),
        analyzed_fps=figures.analyzed_fps,
        frames_captured=capture.get("frames_captured", 0),
        frames_analyzed=figures.frames_analyzed,
        # Dropped at capture (the slot held a newer frame) or stale in the pipeline: never analysed.
        frames_dropped=capture.get("frames_dropped", 0) + figures.frames_stale,
        reconnects=capture.get("reconnects", 0),
        last_error=capture.get("last_error"),
        motion=capture.get("motion"),
        recording=recording,
        detect=camera.detect,  # of the configuration in force: a profile may have switched it
    )


def model_report(model: ModelConfig, detector: Optional[Detector]) -> ModelReport:
    if detector is None:
        return ModelReport(path=model.path, input_size=model.input_size, precision=model.precision,
                           max_batch=model.max_batch)
    return ModelReport(path=model.path, input_size=list(detector.input_hw),
                       precision=detector.describe().get("precision", model.precision), max_batch=detector.max_batch)


def running_artifact(loaded_from: Optional[ModelConfig],
                     detector: Optional[Detector]) -> Tuple[Optional[ArtifactReport], Optional[str]]:
    """(artifact, fallback) of a model whose ``detector`` was loaded from the section ``loaded_from``.

    A fleet model's detector runs its staged files, or, when the fetch failed at start, the local
    ``path`` (``edge_app.fleet_agent.artifacts.models``): the file the detector loaded tells which.
    The section's artifact is the version that was loaded, not the one a rollout now asks for.
    """
    artifact = loaded_from.artifact if loaded_from is not None else None
    loaded_path = detector.model_path if detector is not None else None
    if artifact is None or loaded_path is None:
        return None, None
    if loaded_path != loaded_from.path:
        return ArtifactReport(name=artifact.name, version=artifact.version), None
    return None, (f"fleet model {artifact.name} version {artifact.version} is not running: it could not be fetched "
                  f"at start, so the local path {mask_secrets(loaded_path)} runs instead")


def model_status_report(name: str, model: ModelConfig, unit: Optional["ModelUnit"], cameras: List[str],
                        fps: float, latency: LatencyReport,
                        engine_build: Optional[EngineBuildReport] = None) -> ModelStatusReport:
    """One model of ``models``: "running" with a detector that can run batches, "loading" while its
    first load is under way, else "failed" with the reason (the other models run on)."""
    detector = unit.detector if unit is not None else None
    change = unit.swaps.change.report if unit is not None and unit.swaps.change is not None else None
    failure = unit.swaps.failure if unit is not None else None
    if detector is not None:
        state = "failed" if detector.failure else "running"
    elif unit is None or unit.loading or unit.swaps.pending() is not None or failure is None:
        state = "loading"
    else:
        state = "failed"
    base = model_report(model, detector)
    artifact, fallback = running_artifact(unit.swaps.detector_model if unit is not None else None, detector)
    return ModelStatusReport(
        name=name, state=state, backend=detector.backend_name if detector is not None else None,
        path=mask_secrets(model.path), input_size=base.input_size, precision=base.precision,
        max_batch=base.max_batch, cameras=cameras,
        batches_per_s=unit.pipeline.batches_per_s() if unit is not None else 0.0,
        fps=fps, latency_ms=latency, error=failure if state == "failed" else None, change=change,
        artifact=artifact, fallback=fallback, engine_build=engine_build,
    )


def pipeline_report(figures: PipelineFigures, errors: int, health: PipelineHealth) -> PipelineReport:
    return PipelineReport(fps=figures.fps, latency_ms=figures.latency_ms, stage_ms=figures.stage_ms, errors=errors,
                          stalled=health.stalled, stall_reason=health.reason, last_batch_age_s=health.last_batch_age_s)
