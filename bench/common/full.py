"""Section c: the full appliance, H.264 decode to MQTT publish on the local broker."""
from __future__ import annotations

import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Optional, Sequence

from bench.common.appliance_run import analysed_counts, bench_config, published_count, running
from bench.common.mqtt_watch import WATCHER_SUFFIX, WatcherProcess, broker_reachable
from bench.common.resources import ResourceMeter
from bench.common.windows import count_deltas, wait_for
from edge_app.detect import Detector
from edge_app.mqtt import Topics

log = logging.getLogger(__name__)


def measure_full(clip: Path, cameras: int, model_path: Path, batch: int, window_s: float, warmup_s: float,
                 batch_timeout_ms: float, mqtt_host: str, mqtt_port: int, analysis: bool = True, *,
                 detector_factory: Optional[Callable[..., Detector]] = None, decoder: str = "auto",
                 sources: Optional[Sequence[str]] = None, warm_timeout_s: Optional[float] = None,
                 nvdec_processes: bool = True, mqtt_qos: int = 1) -> dict:
    """One window of the real Appliance; ``detector_factory``, ``decoder`` and ``sources`` as in
    ``bench_config`` and ``running`` (defaults: the configured backend, the clip on every camera)."""
    base = {"cameras": cameras, "model": model_path.name, "batch": batch, "analysis": analysis}
    if not broker_reachable(mqtt_host, mqtt_port):
        return {**base, "status": "skipped", "reason": f"no MQTT broker at {mqtt_host}:{mqtt_port}"}
    config = bench_config(clip, cameras, model_path, batch, batch_timeout_ms, mqtt_host, mqtt_port, analysis=analysis,
                          sources=sources, decoder=decoder, nvdec_processes=nvdec_processes, mqtt_qos=mqtt_qos)
    topics = Topics(config.mqtt.topic_prefix, config.device_id)
    # in a process of its own: receiving every message here would compete with the appliance for the interpreter lock
    watcher = WatcherProcess(mqtt_host, mqtt_port, topics.all_detections, f"{config.device_id}{WATCHER_SUFFIX}")
    if not watcher.start():
        watcher.stop()
        return {**base, "status": "skipped", "reason": "could not subscribe on the broker"}
    meter = ResourceMeter()
    meter.reset_peak()
    try:
        with running(config, detector_factory) as appliance:
            warm = wait_for(lambda: min(analysed_counts(appliance).values() or [0]) >= 2,
                            timeout_s=warm_timeout_s or max(60.0, 10 * warmup_s))
            time.sleep(warmup_s)
            analysed_before, published_before, received_before = analysed_counts(appliance), published_count(appliance), watcher.counts()
            watcher.recording = True
            meter.start()
            time.sleep(window_s)
            analysed_after, published_after, received_after = analysed_counts(appliance), published_count(appliance), watcher.counts()
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
        "errors": status.pipeline.errors,
        "mqtt": asdict(status.mqtt),
        "usage": usage,
    }
