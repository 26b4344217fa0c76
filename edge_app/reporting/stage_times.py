"""Time each stage of the appliance spends on an analysed frame, per camera, summed since the start.

The frame path brackets each stage with a ``time.perf_counter`` pair and adds the difference
here; ``GET /metrics`` reads the sums at scrape time as ``edge_app_stage_seconds`` (a summary:
``_sum`` and ``_count`` per camera and stage), so a user sees where a frame's time goes on their
own device. Sum divided by count is the mean per analysed frame.

No lock: a camera's frames are handled by one thread at a time (the pipeline hands a camera's
results on in order), so each camera's sums have one writer. A scrape may read a sum one frame
ahead of its count; over thousands of frames that does not show.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

#: the stages, in the order a frame passes them (docs/metrics: what each one covers)
STAGES = (
    "capture",      # hand-off: from the camera's frame to the pipeline collecting it (a wait)
    "batching",     # from collected to taken into a batch (a wait for the scheduler)
    "preprocess",   # letterbox and the input tensor (the batch's time shared among its frames)
    "inference",    # the engine (the batch's time shared among its frames)
    "postprocess",  # decoding the engine's outputs into detections (shared alike)
    "tracking",     # the tracker's update and the track ids on the detections
    "zones_lines",  # zone membership and line crossings
    "events",       # event lifecycle and counts
    "snapshots",    # choosing and encoding event snapshots
    "mqtt",         # building and queueing the frame's MQTT messages (detections, events, counts)
    "status",       # the figures status and /metrics read (rates, latency, newest frame)
)


@dataclass(frozen=True)
class StageTotal:
    """One camera's time in one stage since the start: ``seconds`` over ``frames`` frames."""

    camera_id: str
    stage: str
    seconds: float
    frames: int


class _CameraSums:
    __slots__ = ("seconds", "frames")

    def __init__(self) -> None:
        self.seconds: Dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self.frames: Dict[str, int] = dict.fromkeys(STAGES, 0)


class StageTimes:
    """Summed seconds and frames per camera and stage."""

    def __init__(self) -> None:
        self._cameras: Dict[str, _CameraSums] = {}

    def add(self, camera_id: str, stage: str, seconds: float, frames: int = 1) -> None:
        """``seconds`` more in ``stage``; ``frames`` 0 adds time to a frame already counted
        (a stage done in two places, such as the detections and the events of one frame)."""
        sums = self._cameras.get(camera_id)
        if sums is None:
            sums = self._cameras.setdefault(camera_id, _CameraSums())
        sums.seconds[stage] += seconds  # an unknown stage raises: a typo must not make a new series
        sums.frames[stage] += frames

    def totals(self) -> List[StageTotal]:
        """Every camera's stages that saw a frame, cameras by id, stages in frame order."""
        out = []
        for camera_id, sums in sorted(list(self._cameras.items())):
            for stage in STAGES:
                frames = sums.frames[stage]
                if frames:
                    out.append(StageTotal(camera_id, stage, sums.seconds[stage], frames))
        return out

    def mean_ms(self) -> Dict[str, float]:
        """Mean ms per frame of each stage, every camera together (the benchmarks' breakdown)."""
        seconds: Dict[str, float] = {}
        frames: Dict[str, int] = {}
        for total in self.totals():
            seconds[total.stage] = seconds.get(total.stage, 0.0) + total.seconds
            frames[total.stage] = frames.get(total.stage, 0) + total.frames
        return {stage: round(seconds[stage] * 1000.0 / frames[stage], 4) for stage in STAGES if frames.get(stage)}
