"""Section c: the full appliance, H.264 decode to MQTT publish on the local broker."""
from __future__ import annotations

import contextlib
import logging
import time
from unittest import mock
from dataclasses import asdict
from pathlib import Path
from typing import Callable, ContextManager, Dict, Optional, Sequence, Union

from bench.common.appliance_run import analysed_counts, bench_config, published_count, running
from bench.common.mqtt_watch import WATCHER_SUFFIX, WatcherProcess
from bench.common.resources import ResourceMeter
from bench.common.windows import count_deltas
from testkit.net import port_accepts
from testkit.waiting import poll_until
from edge_app.appliance.analysis import tracker_processes as tracker_process_count
from edge_app.detect import Detector
from edge_app.mqtt import Topics
from edge_app.pipeline.runner import default_lanes
from edge_app.reporting.stage_times import STAGES, StageTotal

log = logging.getLogger(__name__)


def stage_means_ms(before: Sequence[StageTotal], after: Sequence[StageTotal]) -> Dict[str, float]:
    """Mean ms per analysed frame of each stage between two readings, every camera together."""
    seconds: Dict[str, float] = {}
    frames: Dict[str, int] = {}
    sign_totals = [(-1, t) for t in before] + [(1, t) for t in after]
    for sign, total in sign_totals:
        seconds[total.stage] = seconds.get(total.stage, 0.0) + sign * total.seconds
        frames[total.stage] = frames.get(total.stage, 0) + sign * total.frames
    return {stage: round(seconds[stage] * 1000.0 / frames[stage], 4) for stage in STAGES if frames.get(stage, 0) > 0}


def _lanes_rule(lanes: Optional[int]) -> ContextManager[object]:
    """The appliance's own rule for its result lanes, or ``lanes`` whatever the rule says."""
    if lanes is None:
        return contextlib.nullcontext()
    return mock.patch("edge_app.pipeline.runner.default_lanes", lambda: lanes)


def measure_full(clip: Path, cameras: int, model_path: Path, batch: int, window_s: float, warmup_s: float,
                 batch_timeout_ms: float, mqtt_host: str, mqtt_port: int, analysis: bool = True, *,
                 detector_factory: Optional[Callable[..., Detector]] = None, decoder: str = "auto",
                 sources: Optional[Sequence[str]] = None, warm_timeout_s: Optional[float] = None,
                 nvdec_processes: bool = True, mqtt_qos: int = 1, counting: bool = False,
                 on_window_start: Optional[Callable[[], None]] = None,
                 tracker_processes: Union[str, int] = "auto", lanes: Optional[int] = None) -> dict:
    """One window of the real Appliance; ``detector_factory``, ``decoder`` and ``sources`` as in
    ``bench_config`` and ``running`` (defaults: the configured backend, the clip on every camera).
    ``lanes`` replaces the appliance's rule for its result lanes (experiments)."""
    base = {"cameras": cameras, "model": model_path.name, "batch": batch, "analysis": analysis, "counting": counting}
    if not port_accepts(mqtt_host, mqtt_port, timeout_s=1.0):
        return {**base, "status": "skipped", "reason": f"no MQTT broker at {mqtt_host}:{mqtt_port}"}
    config = bench_config(clip, cameras, model_path, batch, batch_timeout_ms, mqtt_host, mqtt_port, analysis=analysis,
                          sources=sources, decoder=decoder, nvdec_processes=nvdec_processes, mqtt_qos=mqtt_qos,
                          counting=counting, tracker_processes=tracker_processes)
    # what tracking.processes comes to on this host, and the pipeline's result lanes
    base["tracker_processes_used"] = tracker_process_count(config)
    base["lanes"] = lanes if lanes is not None else default_lanes()
    topics = Topics(config.mqtt.topic_prefix, config.device_id)
    # in a process of its own: receiving every message here would compete with the appliance for the interpreter lock
    watcher = WatcherProcess(mqtt_host, mqtt_port, topics.all_detections, f"{config.device_id}{WATCHER_SUFFIX}")
    if not watcher.start():
        watcher.stop()
        return {**base, "status": "skipped", "reason": "could not subscribe on the broker"}
    meter = ResourceMeter()
    meter.reset_peak()
    try:
        with _lanes_rule(lanes), running(config, detector_factory) as appliance:
            warm = poll_until(lambda: min(analysed_counts(appliance).values() or [0]) >= 2,
                            timeout_s=warm_timeout_s or max(60.0, 10 * warmup_s))
            time.sleep(warmup_s)
            analysed_before, published_before, received_before = analysed_counts(appliance), published_count(appliance), watcher.counts()
            stages_before = appliance.reads.stage_times()
            watcher.recording = True
            if on_window_start is not None:
                on_window_start()  # a profiler, say: it sees the window, not the start
            meter.start()
            time.sleep(window_s)
            analysed_after, published_after, received_after = analysed_counts(appliance), published_count(appliance), watcher.counts()
            stages_after = appliance.reads.stage_times()
            usage = meter.stop()
            watcher.recording = False
            latencies_ms, delivered_ms = watcher.latencies_ms(), watcher.delivered_ms()
            status = appliance.reads.status()
            latest = [appliance.reads.latest_frame(cam.id) for cam in status.cameras]
    finally:
        watcher.stop()
    per_camera = count_deltas(analysed_before, analysed_after)
    log.info("full %d camera(s), batch %d: %.2f frames/s", cameras, batch, sum(per_camera.values()) / usage.wall_s)
    return {
        **base,
        "status": "ok",
        "warmed_up": warm,
        "frames": sum(per_camera.values()),
        "published": published_after - published_before,
        "received": sum(count_deltas(received_before, received_after).values()),
        "per_camera_frames": per_camera,
        "latencies_ms": latencies_ms,
        "delivered_ms": delivered_ms,
        # what the cameras delivered (a numpy BGR array, or a GPU decoder's device image)
        "image_types": sorted({type(frame.image).__name__ for frame in latest if frame is not None}),
        "camera_errors": {cam.id: cam.last_error for cam in status.cameras if cam.last_error},
        "stage_wall_ms": status.pipeline.stage_ms,
        # mean ms per analysed frame of each stage in the window (edge_app_stage_seconds)
        "stage_ms": stage_means_ms(stages_before, stages_after),
        "errors": status.pipeline.errors,
        "mqtt": asdict(status.mqtt),
        "usage": usage,
    }
