"""Section b: edge_app's real Pipeline (BatchScheduler + ResultStore) on pre-decoded frames."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from bench.common.detectors import load_detector
from bench.common.resources import ResourceMeter
from bench.common.windows import count_deltas
from testkit.waiting import poll_until
from bench.cpu.sources import CountingPublisher, PreDecodedSource
from edge_app.mqtt.payloads import detections_payload_for
from edge_app.pipeline.results import ResultStore
from edge_app.pipeline.runner import Pipeline
from edge_app.pipeline.scheduler import BatchScheduler

log = logging.getLogger(__name__)


def measure_predecoded(model_path: Path, cameras: int, batch: int, frames: Sequence[np.ndarray],
                       window_s: float, warmup_s: float, batch_timeout_ms: float) -> dict:
    meter = ResourceMeter()
    meter.reset_peak()
    detector = load_detector(model_path, batch)
    sources = {f"cam{i}": PreDecodedSource(f"cam{i}", frames, offset=i) for i in range(cameras)}
    publisher = CountingPublisher()
    # Building the MQTT payload is part of the measured work, as in the appliance.
    store = ResultStore(lambda frame: publisher.publish(frame.camera_id, detections_payload_for("bench", frame)))
    pipeline = Pipeline(
        detector_getter=lambda: detector,
        sources_getter=lambda: sources,
        sink=store,
        scheduler=BatchScheduler(batch, batch_timeout_ms / 1000.0),
    )
    pipeline.reconfigure({cid: 0.0 for cid in sources}, batch, batch_timeout_ms / 1000.0)
    pipeline.start()
    try:
        warm = poll_until(lambda: publisher.total() >= 2 * batch, timeout_s=max(30.0, 10 * warmup_s))
        time.sleep(warmup_s)
        before = publisher.counts()
        stale_before = {cid: store.camera_figures(cid).frames_stale for cid in sources}
        publisher.recording = True
        meter.start()
        time.sleep(window_s)
        after = publisher.counts()
        usage = meter.stop()
        publisher.recording = False
        stale_after = {cid: store.camera_figures(cid).frames_stale for cid in sources}
        figures = store.pipeline_figures()
    finally:
        pipeline.stop()
        detector.close()
    per_camera = count_deltas(before, after)
    log.info("pre-decoded %d camera(s), batch %d: %.2f frames/s", cameras, batch, sum(per_camera.values()) / usage.wall_s)
    return {
        "cameras": cameras,
        "model": model_path.name,
        "batch": batch,
        "warmed_up": warm,
        "frames": sum(per_camera.values()),
        "per_camera_frames": per_camera,
        "replaced_frames": sum(count_deltas(stale_before, stale_after).values()),
        "latencies_ms": publisher.latencies_ms(),
        "stage_wall_ms": figures.stage_ms,
        "errors": pipeline.errors,
        "usage": usage,
    }
