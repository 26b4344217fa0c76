"""Where analysed frames end up: MQTT, the newest frame per camera for the API, and figures."""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

from edge_app.capture.frame import Frame
from edge_app.detect.detections import Detections
from edge_app.pipeline.stats import LatencyWindow
from edge_app.privacy.images import masked
from edge_app.privacy.masks import MaskBook
from edge_app.capture.rate import RateMeter
from edge_app.reporting.protocol import AnalysedFrame, LatencyReport
from edge_app.reporting.stage_times import StageTimes


@dataclass(frozen=True)
class CameraFigures:
    """What the pipeline knows of one camera."""

    frames_analyzed: int
    frames_stale: int  # replaced by a newer frame before the detector took them
    analyzed_fps: float


@dataclass(frozen=True)
class PipelineFigures:
    fps: float
    latency_ms: LatencyReport
    stage_ms: Dict[str, float]


class ResultStore:
    """Receives each analysed frame from the pipeline (its lanes: a camera's frames from one thread
    at a time) and serves readers (API threads).

    ``sink`` gets every ``AnalysedFrame`` as it is done (the appliance publishes it on MQTT);
    encoding a JPEG never happens here, only when a snapshot or live view is asked for.
    """

    def __init__(self, sink: Callable[[AnalysedFrame], None], clock: Callable[[], float] = time.monotonic,
                 analyse: Optional[Callable[[AnalysedFrame], AnalysedFrame]] = None,
                 stage_times: Optional[StageTimes] = None, privacy: Optional[MaskBook] = None):
        self._sink = sink
        # Time per frame of each stage (GET /metrics): the pipeline's, MQTT and these figures.
        self.stage_times = stage_times if stage_times is not None else StageTimes()
        # Every analysed frame leaves behind its camera's privacy masks: snapshots, event
        # snapshots and the live view all read its pixels through them (docs/privacy.md).
        self.privacy = privacy if privacy is not None else MaskBook()
        # Tracking, zones and events (edge_app.appliance.analysis): adds track ids before anything is published.
        self._analyse = analyse
        self._clock = clock
        self._cond = threading.Condition()
        self._frames: Dict[str, AnalysedFrame] = {}
        self._analysed: Dict[str, int] = defaultdict(int)
        self._stale: Dict[str, int] = defaultdict(int)
        self._camera_rates: Dict[str, RateMeter] = defaultdict(RateMeter)
        self.rate = RateMeter()
        self.latency = LatencyWindow()
        # The same figures per model (frames per second and latency of the frames it analysed).
        self._model_rates: Dict[str, RateMeter] = defaultdict(RateMeter)
        self._model_latency: Dict[str, LatencyWindow] = defaultdict(LatencyWindow)
        self._stage_ms: Dict[str, float] = {}

    def count_stale(self, camera_id: str) -> None:
        self._stale[camera_id] += 1

    def handle(self, frame: Frame, detections: Detections, timings_ms: Dict[str, float], model: str = "default") -> None:
        now_mono_s = self._clock()
        latency_ms = max(0.0, (now_mono_s - frame.mono_ts) * 1000.0)
        image = masked(frame.image, self.privacy.masks(frame.camera_id))
        analysed = AnalysedFrame(frame.camera_id, frame.frame_id, frame.ts, image, detections, latency_ms, model)
        camera_id, stages = frame.camera_id, self.stage_times
        for stage, ms in timings_ms.items():
            stages.add(camera_id, stage, ms / 1000.0)
        if self._analyse is not None:
            analysed = self._analyse(analysed)
        start_s = time.perf_counter()
        self._sink(analysed)
        sent_s = time.perf_counter()
        with self._cond:
            self._frames[frame.camera_id] = analysed
            self._analysed[frame.camera_id] += 1
            self._stage_ms = {k: round(0.9 * self._stage_ms.get(k, v) + 0.1 * v, 3) for k, v in timings_ms.items()}
            # Made under the lock: the pipeline's lanes hand in several cameras' frames at once.
            camera_rate, model_rate, model_latency = (self._camera_rates[frame.camera_id], self._model_rates[model],
                                                      self._model_latency[model])
            self._cond.notify_all()
        camera_rate.tick(now_mono_s)
        self.rate.tick(now_mono_s)
        self.latency.add(latency_ms)
        model_rate.tick(now_mono_s)
        model_latency.add(latency_ms)
        done_s = time.perf_counter()
        stages.add(camera_id, "mqtt", sent_s - start_s)
        stages.add(camera_id, "status", done_s - sent_s)

    def forget(self, camera_id: str) -> None:
        with self._cond:
            self._frames.pop(camera_id, None)

    def latest_frame(self, camera_id: str) -> Optional[AnalysedFrame]:
        with self._cond:
            return self._frames.get(camera_id)

    def wait_frame(self, camera_id: str, after_frame_id: int, timeout_s: float) -> Optional[AnalysedFrame]:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                current = self._frames.get(camera_id)
                if current is not None and current.frame_id != after_frame_id:
                    return current
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def camera_figures(self, camera_id: str) -> CameraFigures:
        meter = self._camera_rates.get(camera_id)
        return CameraFigures(
            frames_analyzed=self._analysed.get(camera_id, 0),
            frames_stale=self._stale.get(camera_id, 0),
            analyzed_fps=round(meter.rate(self._clock()), 2) if meter is not None else 0.0,
        )

    def model_figures(self, model: str) -> Tuple[float, LatencyReport]:
        """(frames per second, latency) of the frames ``model`` analysed."""
        meter, window = self._model_rates.get(model), self._model_latency.get(model)
        fps = round(meter.rate(self._clock()), 2) if meter is not None else 0.0
        latency = window.percentiles() if window is not None else {"p50": None, "p99": None}
        return fps, LatencyReport(latency["p50"], latency["p99"])

    def pipeline_figures(self) -> PipelineFigures:
        with self._cond:
            stage_ms = dict(self._stage_ms)
        latency = self.latency.percentiles()
        return PipelineFigures(round(self.rate.rate(self._clock()), 2), LatencyReport(latency["p50"], latency["p99"]), stage_ms)
