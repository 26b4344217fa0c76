"""The per-model series of ``GET /metrics``: one ``model`` label per model of ``models`` (the
single ``model`` is ``default``), from the ``models`` of ``/api/v1/status``."""
from __future__ import annotations

from typing import Iterator, List

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from edge_app.reporting.protocol import ModelStatusReport

PREFIX = "edge_app"
MODEL_STATES = ("loading", "running", "failed")


def model_metrics(models: List[ModelStatusReport]) -> Iterator[Metric]:
    state = GaugeMetricFamily(f"{PREFIX}_model_state", "1 for the model's current state, 0 for the others",
                              labels=["model", "state"])
    batches = GaugeMetricFamily(f"{PREFIX}_model_batches_per_second", "Batches the model completes per second",
                                labels=["model"])
    fps = GaugeMetricFamily(f"{PREFIX}_model_fps", "Frames the model analyses per second, its cameras together",
                            labels=["model"])
    latency = GaugeMetricFamily(f"{PREFIX}_model_latency_seconds",
                                "Capture-to-publish latency quantiles of the model's frames", labels=["model", "quantile"])
    cameras = GaugeMetricFamily(f"{PREFIX}_camera_model", "1 for the model that analyses the camera",
                                labels=["camera", "model"])
    for model in models:
        for name in MODEL_STATES:
            state.add_metric([model.name, name], 1.0 if model.state == name else 0.0)
        batches.add_metric([model.name], model.batches_per_s)
        fps.add_metric([model.name], model.fps)
        for value_ms, quantile in ((model.latency_ms.p50, "0.5"), (model.latency_ms.p99, "0.99")):
            if value_ms is not None:
                latency.add_metric([model.name, quantile], value_ms / 1000.0)
        for camera in model.cameras:
            cameras.add_metric([camera, model.name], 1.0)
    yield from (family for family in (state, batches, fps, latency, cameras) if family.samples)
