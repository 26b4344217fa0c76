"""``GET /metrics``: Prometheus exposition of the appliance's figures.

The figures already live in the appliance (``service.status()``); a custom collector turns them
into metric families at scrape time, so nothing on the frame path updates Prometheus objects.
Each app gets its own registry: two apps in one process (tests, say) never share series.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Iterator, List, Optional

from flask import Blueprint, Response, request
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from edge_app.api.service import ApplianceService
from edge_app.mqtt.payloads import CAMERA_STATES

logger = logging.getLogger(__name__)

PREFIX = "edge_app"


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None


class ApplianceCollector:
    """Builds metric families from ``service.status()`` on every scrape."""

    def __init__(self, service: ApplianceService):
        self._service = service

    def describe(self) -> List[Metric]:
        # Without describe() the registry would call collect() at registration time, i.e. ask
        # the appliance for its status before it may be ready to answer.
        return []

    def collect(self) -> Iterator[Metric]:
        status = self._service.status()
        yield from self._device(status)
        yield from self._cameras(status.get("cameras") or [])
        yield from self._mqtt(status.get("mqtt") or {})
        yield from self._pipeline(status.get("pipeline") or {})

    @staticmethod
    def _device(status: Dict[str, Any]) -> Iterator[Metric]:
        info = InfoMetricFamily(PREFIX, "Device id, software version and inference backend")
        info.add_metric([], {
            "device_id": str(status.get("device_id", "")),
            "version": str(status.get("version", "")),
            "backend": str(status.get("backend") or ""),
        })
        yield info
        uptime_s = _number(status.get("uptime_s"))
        if uptime_s is not None:
            yield GaugeMetricFamily(f"{PREFIX}_uptime_seconds", "Seconds since the appliance started", value=uptime_s)

    @staticmethod
    def _cameras(cameras: List[Dict[str, Any]]) -> Iterator[Metric]:
        labels = ["camera"]
        fps = GaugeMetricFamily(f"{PREFIX}_camera_fps", "Frames per second of the camera, as in /api/v1/status", labels=labels)
        analysed_fps = GaugeMetricFamily(f"{PREFIX}_camera_analyzed_fps", "Frames per second run through the detector", labels=labels)
        captured = CounterMetricFamily(f"{PREFIX}_camera_frames_captured", "Frames delivered by the camera", labels=labels)
        analysed = CounterMetricFamily(f"{PREFIX}_camera_frames_analyzed", "Frames run through the detector", labels=labels)
        dropped = CounterMetricFamily(
            f"{PREFIX}_camera_frames_dropped",
            "Frames captured but not analysed (fps_limit, or the detector was busy)",
            labels=labels,
        )
        reconnects = CounterMetricFamily(f"{PREFIX}_camera_reconnects", "Times the camera stream was reopened", labels=labels)
        state = GaugeMetricFamily(
            f"{PREFIX}_camera_state", "1 for the camera's current state, 0 for the others", labels=["camera", "state"]
        )
        plain = (
            (fps, "fps"),
            (analysed_fps, "analysed_fps"),
            (captured, "frames_captured"),
            (analysed, "frames_analyzed"),
            (reconnects, "reconnects"),
        )
        for camera in cameras:
            camera_id = [str(camera.get("id", ""))]
            for family, key in plain:
                value = _number(camera.get(key))
                if value is not None:
                    family.add_metric(camera_id, value)
            n_dropped = _number(camera.get("frames_dropped"))
            if n_dropped is None:
                n_captured, n_analysed = _number(camera.get("frames_captured")), _number(camera.get("frames_analyzed"))
                if n_captured is not None and n_analysed is not None:
                    n_dropped = max(0.0, n_captured - n_analysed)
            if n_dropped is not None:
                dropped.add_metric(camera_id, n_dropped)
            current = camera.get("state")
            for name in CAMERA_STATES:
                state.add_metric(camera_id + [name], 1.0 if current == name else 0.0)
        yield from (family for family in (fps, analysed_fps, captured, analysed, dropped, reconnects, state) if family.samples)

    @staticmethod
    def _mqtt(mqtt: Dict[str, Any]) -> Iterator[Metric]:
        connected = _number(mqtt.get("connected"))
        if connected is not None:
            yield GaugeMetricFamily(f"{PREFIX}_mqtt_connected", "1 while connected to the broker", value=connected)
        for key, family_type, name, doc in (
            ("published", CounterMetricFamily, "mqtt_messages_published", "Messages handed to the broker"),
            ("queued", GaugeMetricFamily, "mqtt_messages_queued", "Messages waiting for the broker"),
            ("dropped", CounterMetricFamily, "mqtt_messages_dropped", "Messages dropped because the offline queue was full"),
        ):
            value = _number(mqtt.get(key))
            if value is not None:
                yield family_type(f"{PREFIX}_{name}", doc, value=value)

    @staticmethod
    def _pipeline(pipeline: Dict[str, Any]) -> Iterator[Metric]:
        fps = _number(pipeline.get("fps"))
        if fps is not None:
            yield GaugeMetricFamily(f"{PREFIX}_pipeline_fps", "Frames analysed per second, all cameras", value=fps)
        latency_ms = pipeline.get("latency_ms") or {}
        latency = GaugeMetricFamily(f"{PREFIX}_pipeline_latency_seconds", "Capture-to-publish latency quantiles", labels=["quantile"])
        for key, quantile in (("p50", "0.5"), ("p99", "0.99")):
            value_ms = _number(latency_ms.get(key))
            if value_ms is not None:
                latency.add_metric([quantile], value_ms / 1000.0)
        if latency.samples:
            yield latency
        stalled = _number(pipeline.get("stalled"))
        if stalled is not None:
            yield GaugeMetricFamily(f"{PREFIX}_pipeline_stalled",
                                    "1 while work has waited too long for a completed batch (see /readyz)", value=stalled)
        age_s = _number(pipeline.get("last_batch_age_s"))
        if age_s is not None:
            yield GaugeMetricFamily(f"{PREFIX}_pipeline_last_batch_age_seconds", "Seconds since the last completed batch",
                                    value=age_s)
        errors = _number(pipeline.get("errors"))
        if errors is not None:
            yield CounterMetricFamily(f"{PREFIX}_pipeline_errors", "Failures in the pipeline's stages", value=errors)


def metrics_blueprint(service: ApplianceService) -> Blueprint:
    bp = Blueprint("metrics", __name__)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ApplianceCollector(service))
    ProcessCollector(registry=registry)  # CPU, memory and open files of the appliance process

    @bp.get("/metrics")
    def metrics() -> Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        return Response(encoder(registry), content_type=content_type)

    return bp
