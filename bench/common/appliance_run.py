"""The real Appliance configured for the benchmark: N cameras of one clip, read as fast as possible."""
from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Callable, Dict, Iterator, Optional, Sequence, Union

from bench.common.detectors import model_config
from edge_app.appliance.appliance import Appliance
from edge_app.detect import Detector
from edge_app.config import AppConfig, CameraConfig, MQTTConfig
from edge_app.config.schema import APIConfig, CaptureConfig, TrackingConfig
from edge_app.config.schema_cameras import LineConfig, ZoneConfig

log = logging.getLogger(__name__)


def bench_config(clip: Path, cameras: int, model_path: Path, max_batch: int, batch_timeout_ms: float,
                 mqtt_host: str, mqtt_port: int, topic_prefix: str = "edge_app_bench", realtime: bool = False,
                 analysis: bool = True, sources: Optional[Sequence[str]] = None, decoder: str = "auto",
                 nvdec_processes: bool = True, mqtt_qos: int = 1, counting: bool = False,
                 tracker_processes: Union[str, int] = "auto") -> AppConfig:
    """Every analysed frame is published (``publish_empty``), so MQTT messages = analysed frames.

    ``realtime`` False reads the clip as fast as the pipeline takes frames (no frame lost);
    True paces it at its own frame rate and drops what the pipeline cannot take, like a live camera.
    ``analysis`` switches tracking (and with it zones, lines and events, published on MQTT) on or off.
    ``sources`` replaces the clip with one source per camera (RTSP URLs, say; ``loop`` applies to
    files only); ``decoder`` is every camera's ``decoder`` setting, ``nvdec_processes`` the
    ``capture`` setting of that name, ``mqtt_qos`` the appliance's ``mqtt.qos``. ``counting``
    gives every camera a zone (its left half) and a vertical line through the middle, as a
    counting setup has: every tracked object then goes through zone and line checks.
    ``tracker_processes`` is ``tracking.processes`` (its default, ``auto``, unless a run compares).
    """
    camera_sources = list(sources) if sources is not None else [str(clip)] * cameras

    def areas(i: int) -> dict:
        if not counting:
            return {}
        return {"zones": [ZoneConfig(name=f"cam{i}_left", polygon=[[0, 0], [0.5, 0], [0.5, 1], [0, 1]])],
                "lines": [LineConfig(name=f"cam{i}_middle", points=[[0.5, 0], [0.5, 1]])]}

    return AppConfig(
        device_id=f"bench-{os.getpid()}",
        cameras=[CameraConfig(id=f"cam{i}", source=camera_sources[i], loop=True, realtime=realtime, decoder=decoder,
                              **areas(i))
                 for i in range(cameras)],
        model=model_config(model_path, max_batch, batch_timeout_ms),
        mqtt=MQTTConfig(host=mqtt_host, port=mqtt_port, topic_prefix=topic_prefix, publish_empty=True,
                        stats_interval_s=3600, max_queue=100000, qos=mqtt_qos),
        api=APIConfig(enabled=False),
        tracking=TrackingConfig(enabled=analysis, processes=tracker_processes),
        capture=CaptureConfig(nvdec_processes=nvdec_processes),
    )


@contextlib.contextmanager
def running(config: AppConfig, detector_factory: Optional[Callable[..., Detector]] = None) -> Iterator[Appliance]:
    appliance = Appliance(config) if detector_factory is None else Appliance(config, detector_factory=detector_factory)
    appliance.start()
    try:
        yield appliance
    finally:
        appliance.stop()


def analysed_counts(appliance: Appliance) -> Dict[str, int]:
    return {cam.id: cam.frames_analyzed for cam in appliance.reads.cameras()}


def published_count(appliance: Appliance) -> int:
    return appliance.reads.status().mqtt.published
