"""``GET /api/v1/status`` (device, model, MQTT, cameras, pipeline, health), ``GET /api/v1/health/device``
and the probes ``/healthz`` and ``/readyz`` (:mod:`edge_app.http_server.probes`) of the appliance."""
from __future__ import annotations

from typing import Tuple

from flask import Blueprint, Response, jsonify

from edge_app.api.answers import Alive, NotReady, Ready
from edge_app.api.routing import ResponseSpec, Route, register_routes
from edge_app.http_server import probes
from edge_app.reporting.protocol import ApplianceReads, HealthReport, StatusReport


def status(reads: ApplianceReads) -> Response:
    return jsonify(reads.status().to_dict())


def device_health(reads: ApplianceReads) -> Response:
    # The latest sample: a hung sensor delays the sampler's thread, never this answer.
    return jsonify(reads.device_health().to_dict())


def healthz(reads: ApplianceReads) -> Response:
    return probes.healthz()


def readyz(reads: ApplianceReads) -> Response:
    return probes.readyz(reads)


#: the endpoint is ``status.<view name>``
ROUTES: Tuple[Route, ...] = (
    Route("GET", "/api/v1/status", status, "Device, model, MQTT, cameras, pipeline and device health figures", "status",
          {200: ResponseSpec("Status", StatusReport)}),
    Route("GET", "/api/v1/health/device", device_health,
          "Device health: temperatures, throttling, power, GPU, memory, disk and problems (as R/health); a figure "
          "that is unavailable is a string saying why", "status",
          {200: ResponseSpec("The latest sample", HealthReport)}),
)

#: the endpoint is ``health.<view name>``, as the fleet service's probes
PROBE_ROUTES: Tuple[Route, ...] = (
    Route("GET", "/healthz", healthz, "Liveness", "health", {200: ResponseSpec("Alive", Alive)}, secured=False),
    Route("GET", "/readyz", readyz, "Readiness: model loaded and a camera streams", "health",
          {200: ResponseSpec("Ready", Ready), 503: ResponseSpec("Not ready", NotReady)}, secured=False),
)


def status_blueprint(reads: ApplianceReads) -> Blueprint:
    return register_routes(Blueprint("status", __name__), ROUTES, reads)


def probes_blueprint(reads: ApplianceReads) -> Blueprint:
    return register_routes(Blueprint("health", __name__), PROBE_ROUTES, reads)
